"""Retrieval: pure ranking stages over candidates (no I/O)."""

from memvault.retrieval.pipeline import rank
from memvault.retrieval.presets import PRESETS, RetrievalConfig, get_preset

__all__ = ["PRESETS", "RetrievalConfig", "get_preset", "rank"]
