"""Tier inference and ``embedder: auto``."""

from __future__ import annotations

import pytest

from memvault.embeddings import OnnxMiniLMEmbedder, OpenAICompatibleEmbedder, create_embedder
from memvault.embeddings.selection import (
    EmbedderTier,
    auto_select_embedder,
    auto_select_from_env,
    infer_tier,
    parse_has_gpu,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("YES", True),
        ("1", True),
        (" False ", False),
        ("no", False),
        ("0", False),
        ("", False),
        ("maybe", None),
        (None, None),
        (True, True),
    ],
)
def test_parse_has_gpu(raw: object, expected: bool | None) -> None:
    assert parse_has_gpu(raw) is expected


@pytest.mark.parametrize(
    ("preset", "has_gpu", "tier"),
    [
        ("ollama", False, EmbedderTier.CPU_ONLY),  # local preset + explicit no GPU: CPU
        ("ollama", None, EmbedderTier.GPU_CONSUMER),  # unknown GPU never collapses a local preset
        ("ollama", True, EmbedderTier.GPU_CONSUMER),
        ("vLLM", True, EmbedderTier.GPU_FULL),  # server-class runtime, case-insensitive
        ("openai", False, EmbedderTier.GPU_FULL),  # cloud: the local GPU does not matter
        ("my-provider", False, EmbedderTier.GPU_CONSUMER),  # unknown preset: heuristic default
        (None, None, EmbedderTier.GPU_CONSUMER),
        (None, False, EmbedderTier.CPU_ONLY),
        ("  ", False, EmbedderTier.CPU_ONLY),  # blank preset counts as none
    ],
)
def test_infer_tier(preset: str | None, has_gpu: bool | None, tier: EmbedderTier) -> None:
    assert infer_tier(preset, has_gpu) is tier


def test_gpu_tier_without_a_server_degrades_to_the_bundled_model() -> None:
    sel = auto_select_embedder(provider_preset_name="ollama", has_gpu=True)
    assert (sel.tier, sel.spec) == (EmbedderTier.CPU_ONLY, "minilm")
    assert "MEMVAULT_EMBEDDINGS_BASE_URL" in sel.reason


def test_gpu_tier_with_a_server_names_the_tier_model() -> None:
    sel = auto_select_embedder(
        provider_preset_name="ollama", has_gpu=True, base_url="http://127.0.0.1:11434/v1"
    )
    assert (sel.tier, sel.spec) == (EmbedderTier.GPU_CONSUMER, "openai:qwen3-embedding:4b")
    full = auto_select_embedder(provider_preset_name="vllm", has_gpu=None, base_url="http://h/v1")
    assert full.spec == "openai:Qwen/Qwen3-Embedding-8B"
    override = auto_select_embedder(
        provider_preset_name="vllm", has_gpu=True, base_url="http://h/v1", model="bge-m3"
    )
    assert override.spec == "openai:bge-m3"


def test_cloud_presets() -> None:
    assert auto_select_embedder(provider_preset_name="openai").spec == (
        "openai:text-embedding-3-large"
    )
    # A cloud preset without a known model or endpoint never fails: it falls back.
    cohere = auto_select_embedder(provider_preset_name="cohere")
    assert (cohere.tier, cohere.spec) == (EmbedderTier.CPU_ONLY, "minilm")


def test_from_env_reads_the_operator_settings() -> None:
    sel = auto_select_from_env(
        {"MEMVAULT_EMBEDDINGS_PRESET": "ollama", "MEMVAULT_SETUP_HAS_GPU": "no"}
    )
    assert (sel.tier, sel.spec) == (EmbedderTier.CPU_ONLY, "minilm")
    garbage = auto_select_from_env({"MEMVAULT_SETUP_HAS_GPU": "perhaps"})
    assert garbage.spec == "minilm"  # unknown has_gpu and no server: still the bundled model


def test_create_embedder_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("MEMVAULT_EMBEDDINGS_PRESET", "MEMVAULT_EMBEDDINGS_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMVAULT_SETUP_HAS_GPU", "false")
    assert isinstance(create_embedder("auto"), OnnxMiniLMEmbedder)
    assert isinstance(create_embedder(" AUTO "), OnnxMiniLMEmbedder)
    monkeypatch.setenv("MEMVAULT_EMBEDDINGS_PRESET", "vllm")
    monkeypatch.setenv("MEMVAULT_SETUP_HAS_GPU", "true")
    monkeypatch.setenv("MEMVAULT_EMBEDDINGS_BASE_URL", "http://127.0.0.1:9/v1")
    chosen = create_embedder("auto")
    assert isinstance(chosen, OpenAICompatibleEmbedder)
    assert chosen.model_id == "openai-compat:Qwen/Qwen3-Embedding-8B"
