"""The one place the mem0 backend imports ``mem0ai`` (extra ``memvault[mem0]``).

mem0 reads ``MEM0_TELEMETRY`` once, when :mod:`mem0.memory.telemetry` is first imported, so it
is set to ``False`` before that import; if mem0 was already imported by the application (with
telemetry on), the module flags are switched off as well. memvault never lets mem0 send
anything.

mem0's own optional machinery that would download something at run time is never reached: the
embedder is memvault's (:class:`MemvaultEmbedding`), the LLM refuses to be called (memvault
stores verbatim, ``infer=False``), memvault writes its points without mem0's spaCy
lemmatisation, and the fastembed BM25 encoder of mem0's Qdrant store is marked unavailable.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from memvault.errors import MemoryCapabilityError, MemoryConfigError
from memvault.protocols import Embedder

os.environ["MEM0_TELEMETRY"] = "False"

try:
    import mem0.memory.main as _mem0_main
    import mem0.memory.telemetry as _mem0_telemetry
    from mem0 import Memory as Mem0Memory
    from mem0.embeddings.base import EmbeddingBase
    from mem0.llms.base import LLMBase
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    _msg = "the mem0 backend needs the mem0ai package: pip install 'memvault[mem0]'"
    raise MemoryConfigError(_msg) from exc

# Already imported with telemetry on (by the application): switch it off for this process.
_mem0_telemetry.MEM0_TELEMETRY = False
_mem0_main.MEM0_TELEMETRY = False

__all__ = ["EmbeddingBase", "Mem0Memory", "MemvaultEmbedding", "NoLLM"]


class MemvaultEmbedding(EmbeddingBase):  # type: ignore[misc]
    """mem0's embedder interface over memvault's embedder (offline, no API key).

    mem0 calls ``embed`` for what it searches or writes itself (``Memory.search``,
    ``Memory.add``); memvault's own writes pass their vectors directly.
    """

    def __init__(self, embedder: Embedder) -> None:
        super().__init__(None)
        self.memvault_embedder = embedder
        self.config.embedding_dims = embedder.dimension
        self.config.model = embedder.model_id

    def embed(self, text: str, memory_action: str | None = None) -> list[float]:
        """One vector: a query's embedding for searches, a document's otherwise."""
        if memory_action == "search":
            return [float(x) for x in self.memvault_embedder.embed_query(text)]
        return [float(x) for x in self.memvault_embedder.embed_documents([text])[0]]

    def embed_batch(self, texts: Sequence[str], memory_action: str = "add") -> list[list[float]]:
        """Document vectors of ``texts`` in one batch."""
        if memory_action == "search":
            return [self.embed(t, "search") for t in texts]
        matrix = self.memvault_embedder.embed_documents(list(texts))
        return [[float(x) for x in row] for row in matrix]


class NoLLM(LLMBase):  # type: ignore[misc]
    """The LLM slot of a memvault-managed mem0: memvault stores verbatim (``infer=False``)."""

    def __init__(self) -> None:
        super().__init__(None)

    def generate_response(self, *args: Any, **kwargs: Any) -> str:
        """Refuse: no LLM is configured for mem0 inside memvault."""
        msg = (
            "memvault's mem0 store has no LLM: memories are stored verbatim (infer=False); "
            "use memvault's consolidation for LLM work"
        )
        raise MemoryCapabilityError(msg)
