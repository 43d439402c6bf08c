"""Shared fixtures: the real bundled embedding model, loaded once per test session."""

from __future__ import annotations

import pytest

from memvault.embeddings import default_embedder
from memvault.protocols import Embedder


@pytest.fixture(scope="session")
def minilm() -> Embedder:
    """The bundled all-MiniLM-L6-v2 model (onnxruntime int8), shared by every test."""
    return default_embedder()
