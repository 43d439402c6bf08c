"""The Mem0 backend (extra ``memvault[mem0]``): ``mem0:///data/dir``, mem0's local mode."""

from memvault.backends.mem0.backend import Mem0Backend

__all__ = ["Mem0Backend"]
