"""The ``memvault`` command line (typer + rich)."""
