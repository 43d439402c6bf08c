"""``CountingEmbedder``: a real embedder that counts what it is asked to embed.

Shared by the tests that count the cost of a write or a search instead of timing it
(``tests/unit/write/``, ``tests/unit/backends/test_composite_vectors.py``). Pass it wherever an
embedder goes (``AsyncMemory(embedder=...)``, a backend's constructor); it answers like the
model it wraps.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from memvault.protocols import Embedder

__all__ = ["CountingEmbedder"]


class CountingEmbedder:
    """The ``inner`` embedder, counting its calls in :attr:`calls`.

    ``calls["query"]``: ``embed_query`` calls; ``calls["documents"]``: ``embed_documents``
    calls; ``calls["texts"]``: the passages those embedded. ``calls.clear()`` starts over.
    """

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def embed_query(self, text: str) -> Any:
        self.calls["query"] += 1
        return self.inner.embed_query(text)

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self.calls["documents"] += 1
        self.calls["texts"] += len(texts)
        return self.inner.embed_documents(texts)
