"""Storage URLs split into backend kind and target (no backend imported).

Kept apart from :mod:`memvault.backends.factory` so that modules the factory depends on (the
embedder choice in :mod:`memvault.backends.embedder`, through
:mod:`memvault.backends.recorded_model`) can parse URLs without importing it.
"""

from __future__ import annotations

from urllib.parse import unquote

from memvault.config import COMPOSITE_URL
from memvault.errors import MemoryConfigError

__all__ = ["parse_url"]


def parse_url(url: str) -> tuple[str, str]:
    """Split a storage URL into ``(kind, target)``: sqlite, memory, postgresql, composite,
    qdrant or mem0.

    The target of ``qdrant`` is a directory or an ``http(s)://host:port`` server URL, that of
    ``mem0`` a directory; either may end in ``?collection=NAME``.

    Raises:
        MemoryConfigError: an unknown scheme (http URLs are for the remote client).
    """
    text = url.strip()
    if not text:
        msg = "empty storage URL"
        raise MemoryConfigError(msg)
    if text in ("memory://", "memory:", ":memory:") or text.startswith("memory://"):
        return "memory", ""
    if text == COMPOSITE_URL:
        return "composite", ""
    if text.startswith("sqlite:///"):
        # sqlite:///rel.db is relative, sqlite:////abs/path.db absolute (as in SQLAlchemy).
        return "sqlite", text[len("sqlite:///") :]
    if text.startswith("sqlite://"):
        return "sqlite", text[len("sqlite://") :]
    if text.startswith(("postgresql://", "postgres://", "postgresql+psycopg://")):
        return "postgresql", text
    if text.startswith(("qdrant+http://", "qdrant+https://")):
        return "qdrant", _adapter_target(url, text[len("qdrant+") :])
    for scheme in ("qdrant", "mem0"):
        if text.startswith(f"{scheme}://"):
            return scheme, _adapter_target(url, text[len(scheme) + 3 :])
    if "://" in text:
        scheme = text.split("://", 1)[0]
        msg = (
            f"unsupported storage URL scheme {scheme!r} in {url!r}: use a file path, "
            "sqlite:///path.db, memory://, postgresql://..., qdrant:///dir, "
            "qdrant+http://host:port or mem0:///dir"
        )
        raise MemoryConfigError(msg)
    return "sqlite", text


def _adapter_target(url: str, target: str) -> str:
    """The target of a qdrant/mem0 URL, checked: a directory or server, with an optional
    ``?collection=NAME`` (the only query parameter)."""
    where, _, query = target.partition("?")
    if not where.strip("/"):
        msg = f"storage URL {url!r} names no directory or server"
        raise MemoryConfigError(msg)
    if query:
        params = [p.partition("=") for p in query.split("&") if p]
        unknown = sorted({unquote(k) for k, _, _ in params} - {"collection"})
        if unknown:
            msg = f"unknown parameter {unknown[0]!r} in storage URL {url!r}: only collection="
            raise MemoryConfigError(msg)
    return target


def _split_collection(target: str) -> tuple[str, dict[str, str]]:
    """``(directory or server, {"collection": NAME} if given)`` of a qdrant/mem0 target."""
    where, _, query = target.partition("?")
    extra: dict[str, str] = {}
    for key, _, value in (p.partition("=") for p in query.split("&") if p):
        extra[unquote(key)] = unquote(value)
    return where, extra
