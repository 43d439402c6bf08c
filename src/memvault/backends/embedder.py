"""The embedder a configuration names, for the store it opens.

:func:`build_embedder` turns the ``embeddings``/``embedder``/``fine_tune`` keys into an embedder;
given the store's URL and a configuration that names none, it follows the model the store was
built with (:mod:`memvault.backends.recorded_model`), so changing the default model never locks
existing stores out. It lives with the stores because it reads them.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from memvault.config import DEFAULT_OPENAI_EMBEDDING_MODEL, MemvaultConfig
from memvault.errors import MemoryConnectionError
from memvault.protocols import Embedder

__all__ = ["build_embedder", "names_embedder"]

logger = logging.getLogger(__name__)


def names_embedder(config: MemvaultConfig) -> bool:
    """True if ``config`` names an embedder: an ``embedder`` spec other than ``default`` (from
    a file, a ``MEMVAULT_*`` variable or an argument), a remote ``embeddings`` endpoint, or a
    deployed fine-tuned checkpoint. False means "whatever the default is"."""
    if config.embedder.strip().lower() not in ("", "default"):
        return True
    if config.embeddings.remote:
        return True
    fine_tuned = config.fine_tune.embedder_spec
    if fine_tuned is not None and config.fine_tune.checkpoint_path is not None:
        from memvault.embeddings.adapter import read_active

        return bool(read_active(Path(config.fine_tune.checkpoint_path).expanduser()))
    return False


def build_embedder(config: MemvaultConfig, *, url: str | None = None) -> Embedder:
    """The embedder ``config`` names: the fine-tuned checkpoint when ``fine_tune`` is enabled and
    one is deployed, else ``embeddings`` for an OpenAI-compatible endpoint, else the ``embedder``
    spec (:func:`memvault.embeddings.create_embedder`).

    With ``url`` (the store it is for) and a ``config`` that names no embedder
    (:func:`names_embedder`), the model the store was built with
    (:func:`memvault.backends.recorded_model.recorded_model`) wins over the default when memvault
    can build it (:func:`memvault.embeddings.spec_for_model_id`): changing the default model
    never locks existing stores out. A store on another model than the one ``config`` names
    still raises :class:`~memvault.errors.EmbeddingModelChangedError` when opened.

    The API key is read here, from the variable ``embeddings.api_key_env`` (default
    ``OPENAI_API_KEY``), when the store is opened; the configuration never holds it.

    Raises:
        MemoryConfigError: an unknown spec or an invalid endpoint.
    """
    from memvault.embeddings import (
        BASE_URL_ENV,
        DEFAULT_OPENAI_BASE_URL,
        OpenAICompatibleEmbedder,
        create_embedder,
    )

    if url is not None and not names_embedder(config):
        followed = _store_embedder(config, url)
        if followed is not None:
            return followed
    fine_tuned = config.fine_tune.embedder_spec
    if fine_tuned is not None and config.fine_tune.checkpoint_path is not None:
        from memvault.embeddings.adapter import read_active

        # Only once a checkpoint is deployed: before that, the registry would serve its base
        # model, which need not be the configured embedder the store was built with.
        if read_active(Path(config.fine_tune.checkpoint_path).expanduser()):
            return create_embedder(fine_tuned)
    emb = config.embeddings
    explicit = config.embedder != "default" and config.embedder != emb.spec()
    if emb.remote and not explicit:
        base = emb.base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_OPENAI_BASE_URL
        return OpenAICompatibleEmbedder(
            base,
            emb.model.strip() or DEFAULT_OPENAI_EMBEDDING_MODEL,
            api_key_env=emb.api_key_env or "OPENAI_API_KEY",
            dimension=emb.dims,
        )
    return create_embedder(config.embedder)


def _store_embedder(config: MemvaultConfig, url: str) -> Embedder | None:
    """The embedder of the model the store at ``url`` records, if memvault can build it."""
    from memvault.backends.recorded_model import recorded_model
    from memvault.embeddings import create_embedder, spec_for_model_id

    try:
        model = recorded_model(url, config=config)
    except MemoryConnectionError:
        # Unreadable now (a damaged file, a server down): opening the store reports that, in
        # its own words; until then the configured default stands.
        return None
    spec = spec_for_model_id(model) if model is not None else None
    if spec is None:
        return None
    embedder = create_embedder(spec)
    logger.info(
        "store %s was built with %s: using that model (no embedder configured)",
        _shown(url),
        model,
        extra={"event": "embedder.follow_store", "model": model},
    )
    return embedder


def _shown(url: str) -> str:
    """``url`` without a password, for the log."""
    if url.strip().startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        from memvault.backends.postgres._dsn import parse_dsn

        return parse_dsn(url).location
    return url
