"""The package version, in a module of its own so any layer can name it without a cycle."""

__version__ = "0.1.0"
