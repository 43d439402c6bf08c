"""Choosing an embedder for the hardware and provider at hand (``embedder: auto``).

The design notes recommend three deployment tiers for memory retrieval (LMEB): full-resource
(7-12B parameter embedders), mid-resource (1-4B) and CPU-only (under 1B). Which tier fits is
inferred from two operator-declared inputs, never probed:

* ``provider_preset_name`` - the name of the embedding provider preset in use (``ollama``,
  ``vllm``, ``openai``, ...). Local/self-hosted presets run on the operator's hardware; cloud
  presets do not depend on it. Unknown names fall back to the heuristic defaults.
* ``has_gpu`` - whether the operator says the machine has a GPU: ``True``, ``False`` or
  ``None`` (not declared, or unparseable: see :func:`parse_has_gpu`).

The tier collapses to CPU-only when a local preset is selected and ``has_gpu`` is explicitly
False, and (memvault's addition, since it can always run its bundled model) when no preset is
named and ``has_gpu`` is False. Otherwise a GPU tier is chosen: full for cloud presets and
server-class local runtimes (vLLM, TEI), mid (consumer GPU) for desktop runtimes and unknowns.

A GPU tier names a model served over the OpenAI-compatible ``/embeddings`` API, so it needs a
server: without ``$MEMVAULT_EMBEDDINGS_BASE_URL`` (or a cloud preset, which implies its public
endpoint) the selection degrades to the bundled CPU model with the reason recorded. Inputs never
make selection fail.

The inputs come from the environment in :func:`auto_select_from_env`:
``MEMVAULT_EMBEDDINGS_PRESET``, ``MEMVAULT_SETUP_HAS_GPU`` (the design's ``api.setup.has_gpu``)
and ``MEMVAULT_EMBEDDINGS_MODEL`` (overrides the tier's suggested model name).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "CLOUD_PRESETS",
    "LOCAL_PRESETS",
    "EmbedderSelection",
    "EmbedderTier",
    "auto_select_embedder",
    "auto_select_from_env",
    "infer_tier",
    "parse_has_gpu",
]

logger = logging.getLogger(__name__)

HAS_GPU_ENV = "MEMVAULT_SETUP_HAS_GPU"
PRESET_ENV = "MEMVAULT_EMBEDDINGS_PRESET"
MODEL_ENV = "MEMVAULT_EMBEDDINGS_MODEL"
BASE_URL_ENV = "MEMVAULT_EMBEDDINGS_BASE_URL"


class EmbedderTier(StrEnum):
    """The deployment tiers of the design notes."""

    CPU_ONLY = "cpu_only"
    GPU_CONSUMER = "gpu_consumer"
    GPU_FULL = "gpu_full"


LOCAL_PRESETS = frozenset(
    {"ollama", "lmstudio", "lm-studio", "llamacpp", "llama.cpp", "localai", "vllm", "tei", "local"}
)
"""Provider presets that run on the operator's own hardware."""

CLOUD_PRESETS = frozenset(
    {"openai", "azure", "azure-openai", "cohere", "voyage", "mistral", "together", "jina", "gemini"}
)
"""Provider presets served by a hosted API (the operator's hardware does not matter)."""

# Server-class local runtimes: whoever runs these usually has a data-centre GPU.
_SERVER_RUNTIMES = frozenset({"vllm", "tei"})

# Suggested model per tier. Local runtimes serve open weights under their Hugging Face names
# (Ollama under its own tags); cloud presets get the provider's hosted models.
_LOCAL_MODELS = {
    EmbedderTier.GPU_FULL: "Qwen/Qwen3-Embedding-8B",
    EmbedderTier.GPU_CONSUMER: "Qwen/Qwen3-Embedding-4B",
}
_OLLAMA_MODELS = {
    EmbedderTier.GPU_FULL: "qwen3-embedding:8b",
    EmbedderTier.GPU_CONSUMER: "qwen3-embedding:4b",
}
_CLOUD_MODELS = {
    "openai": "text-embedding-3-large",
    "azure": "text-embedding-3-large",
    "azure-openai": "text-embedding-3-large",
}
_CPU_SPEC = "minilm"

_TRUE = frozenset({"true", "1", "yes"})
_FALSE = frozenset({"false", "0", "no", ""})


@dataclass(frozen=True, slots=True)
class EmbedderSelection:
    """What :func:`auto_select_embedder` chose and why."""

    tier: EmbedderTier
    spec: str
    reason: str


def parse_has_gpu(value: object) -> bool | None:
    """Read the operator's ``has_gpu`` setting: ``true``/``1``/``yes`` give True,
    ``false``/``0``/``no``/empty False (case-insensitive), anything else None (unknown)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    return None


def _norm_preset(name: str | None) -> str | None:
    if name is None:
        return None
    text = name.strip().lower().replace("_", "-")
    return text or None


def infer_tier(provider_preset_name: str | None, has_gpu: bool | None) -> EmbedderTier:
    """The deployment tier for a preset name and a ``has_gpu`` declaration (module docstring)."""
    preset = _norm_preset(provider_preset_name)
    if preset in CLOUD_PRESETS:
        return EmbedderTier.GPU_FULL
    if preset in LOCAL_PRESETS:
        if has_gpu is False:
            return EmbedderTier.CPU_ONLY
        return EmbedderTier.GPU_FULL if preset in _SERVER_RUNTIMES else EmbedderTier.GPU_CONSUMER
    if has_gpu is False and preset is None:
        return EmbedderTier.CPU_ONLY
    # An unknown preset name, or no preset and a GPU that is present or undeclared.
    return EmbedderTier.GPU_CONSUMER


def auto_select_embedder(
    *,
    provider_preset_name: str | None = None,
    has_gpu: bool | None = None,
    base_url: str | None = None,
    model: str | None = None,
) -> EmbedderSelection:
    """Choose the embedder spec for ``embedder: auto``.

    ``base_url`` is the OpenAI-compatible server a GPU tier's model would be served by and
    ``model`` overrides the tier's suggested model. Never raises: unusable inputs fall back to
    the bundled CPU model, with the reason in the result.
    """
    tier = infer_tier(provider_preset_name, has_gpu)
    preset = _norm_preset(provider_preset_name)
    if tier is EmbedderTier.CPU_ONLY:
        return EmbedderSelection(tier, _CPU_SPEC, "no GPU declared: the bundled CPU model")
    if preset in CLOUD_PRESETS:
        name = model or _CLOUD_MODELS.get(preset or "")
        if name is None:
            return EmbedderSelection(
                EmbedderTier.CPU_ONLY,
                _CPU_SPEC,
                f"preset {preset!r} has no default embedding model: set {MODEL_ENV}",
            )
        if preset != "openai" and not base_url:
            # Only OpenAI's own endpoint is the default base URL of ``openai:`` specs.
            return EmbedderSelection(
                EmbedderTier.CPU_ONLY,
                _CPU_SPEC,
                f"preset {preset!r} needs {BASE_URL_ENV}: the bundled CPU model",
            )
        return EmbedderSelection(tier, f"openai:{name}", f"cloud preset {preset!r}")
    if not base_url:
        return EmbedderSelection(
            EmbedderTier.CPU_ONLY,
            _CPU_SPEC,
            f"tier {tier.value} needs an embeddings server ({BASE_URL_ENV} is not set): "
            "the bundled CPU model",
        )
    suggested = _OLLAMA_MODELS if preset == "ollama" else _LOCAL_MODELS
    name = model or suggested[tier]
    why = f"preset {preset!r}" if preset else "no preset named"
    return EmbedderSelection(tier, f"openai:{name}", f"{why}, has_gpu={has_gpu}")


def auto_select_from_env(env: Mapping[str, str] | None = None) -> EmbedderSelection:
    """:func:`auto_select_embedder` with its inputs read from the environment (module docstring)."""
    env = os.environ if env is None else env
    selection = auto_select_embedder(
        provider_preset_name=env.get(PRESET_ENV),
        has_gpu=parse_has_gpu(env.get(HAS_GPU_ENV)),
        base_url=env.get(BASE_URL_ENV),
        model=env.get(MODEL_ENV) or None,
    )
    logger.info(
        "embedder.auto_selected tier=%s spec=%s reason=%s",
        selection.tier.value,
        selection.spec,
        selection.reason,
        extra={
            "event": "embedder.auto_selected",
            "tier": selection.tier.value,
            "spec": selection.spec,
        },
    )
    return selection
