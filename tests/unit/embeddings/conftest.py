"""Shared fixtures of the embeddings tests: real models, loaded once per session.

Every test here runs with ``MEMVAULT_CACHE_DIR`` pointing at a session temporary directory, so
no test reads or writes the developer's real model cache, and the ONNX graphs are built once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memvault.embeddings import NumpyMiniLMEmbedder, OnnxMiniLMEmbedder

# Varied, typical sentences: short and long, questions, names, numbers, code-ish text, other
# languages; the agreement thresholds are asserted on these.
SENTENCES = [
    "The user prefers dark mode and vim keybindings.",
    "What time does the pharmacy on Main Street close on Sundays?",
    "Alice moved from Berlin to Lisbon in March 2023 to join a fintech startup.",
    "Remind me to call the dentist tomorrow morning.",
    "The staging database ran out of disk space after the migration.",
    "Error: connection refused on port 5432 when starting the postgres container.",
    "He is allergic to peanuts and shellfish.",
    "Quarterly revenue grew 12% thanks to cloud subscriptions in EMEA.",
    "Our team uses pytest with the asyncio plugin for integration tests.",
    "The cat slept on the warm windowsill all afternoon.",
    "How do I reset my password if I no longer have access to my email?",
    "She finished the marathon in three hours and forty minutes.",
    "def add(a, b): return a + b",
    "La réunion est reportée à jeudi prochain.",
    "Invoices above ten thousand euros require a second approval from finance.",
    "The flight to Tokyo was delayed because of a typhoon warning.",
    "My daughter starts primary school next week, so mornings will be busy.",
    "Use exponential backoff when the API returns HTTP 429.",
    "The recipe calls for two cups of flour, one egg and a pinch of salt.",
    "Bob said the new laptop battery lasts about nine hours.",
]


@pytest.fixture(scope="session")
def model_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private cache directory for the ONNX graphs built during the session."""
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(autouse=True)
def _isolated_cache(model_cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point MEMVAULT_CACHE_DIR at the private cache for every test in this directory."""
    monkeypatch.setenv("MEMVAULT_CACHE_DIR", str(model_cache_dir))


@pytest.fixture(scope="session")
def numpy_embedder() -> NumpyMiniLMEmbedder:
    """The numpy reference embedder, loaded once."""
    embedder = NumpyMiniLMEmbedder()
    embedder.load()
    return embedder


@pytest.fixture(scope="session")
def onnx_int8(model_cache_dir: Path) -> OnnxMiniLMEmbedder:
    """The default (int8) ONNX embedder, built once into the session cache."""
    embedder = OnnxMiniLMEmbedder(cache_dir=model_cache_dir)
    embedder.load()
    return embedder


@pytest.fixture(scope="session")
def onnx_fp32(model_cache_dir: Path) -> OnnxMiniLMEmbedder:
    """The float32 ONNX embedder, built once into the session cache."""
    embedder = OnnxMiniLMEmbedder(quantize=False, cache_dir=model_cache_dir)
    embedder.load()
    return embedder


@pytest.fixture(scope="session")
def sentences() -> list[str]:
    """About twenty varied, typical sentences."""
    return list(SENTENCES)
