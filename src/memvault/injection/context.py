"""Context injection: memories are retrieved before the agent runs and injected as a message.

The agent receives its memories passively, as one chat message placed between the system prompt
and the task. Pipeline (design documents, "Memory Injection Strategies"):

1. search (over-fetching ``max_memories * candidate_pool_multiplier`` when MMR or a filter will
   thin the candidates out),
2. filter strategy (fails closed: a failing filter injects nothing),
3. optional MMR diversity re-ranking, after the filter so excluded entries never act as anchors,
4. greedy token-budget packing,
5. formatting as one delimited message with the configured role.

Shared knowledge (entries other agents published, scope ``shared``) takes part when the search
callable returns it, as :meth:`memvault.AsyncMemory.context_strategy`'s does unless
``options.shared_knowledge_base`` is off. It competes on relevance without the personal boost
(the search leaves shared entries out of it) and is rendered with a ``(shared knowledge)``
mark, so the model can tell the organisation's facts from its own memories.

The strategy depends on a search callable rather than a backend, so :class:`memvault.AsyncMemory`
can hand it its own (hybrid, ranked) search.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict, Field

from memvault.errors import MemoryConfigError, MemoryValidationError
from memvault.injection.dispatch import ToolRegistry
from memvault.injection.policies import PolicySource, message_tokens, policy_message
from memvault.injection.tools import ToolDefinition
from memvault.models import ChatMessage, MemoryEntry, MemoryScope
from memvault.protocols import Embedder
from memvault.retrieval.diversity import SimilarityFn, mmr
from memvault.retrieval.filters import MemoryFilterStrategy, apply_filter
from memvault.retrieval.packing import CONTEXT_MIN_RELEVANCE, MemoryContext, build_context

__all__ = [
    "CONTEXT_MIN_RELEVANCE",
    "SHARED_MARK",
    "ContextInjectionConfig",
    "ContextInjectionStrategy",
    "InjectedFn",
    "SearchFn",
]

logger = logging.getLogger(__name__)

SearchFn = Callable[[str, str, int], Awaitable[Sequence[MemoryEntry]]]
"""``async search(agent_id, query_text, limit)``: the agent's memories for a query, best first."""

InjectedFn = Callable[[str, Sequence[MemoryEntry]], None]
"""``on_injected(agent_id, entries)``: what a prepared context put in front of the agent."""


SHARED_MARK = "(shared knowledge) "
"""What precedes a shared entry's content in a rendered context."""


class ContextInjectionConfig(BaseModel):
    """Settings of :class:`ContextInjectionStrategy`.

    ``min_relevance`` is the bar each memory's own ``relevance_score`` must reach to be
    injected (the same meaning as in ``search``); when none does, nothing is injected.
    ``similarity`` is what MMR measures redundancy with: ``"bigram"`` (word-bigram Jaccard, no
    model needed), ``"cosine"`` (of embeddings; the strategy then needs an ``embedder``), or a
    function of two entries returning a value in [0, 1].
    """

    model_config = ConfigDict(
        frozen=True, extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True
    )

    role: Literal["system", "user"] = "system"
    max_memories: int = Field(default=20, ge=1, le=1000)
    filter_strategy: MemoryFilterStrategy | None = None
    mmr_enabled: bool = False
    mmr_lambda: float = Field(default=0.7, ge=0.0, le=1.0)
    similarity: Literal["bigram", "cosine"] | SimilarityFn = "bigram"
    candidate_pool_multiplier: int = Field(default=3, ge=1, le=10)
    # Inject only memories whose own relevance reaches this. Relevance is the calibrated
    # probability of the default preset (one threshold fits every query; the preset "absolute"
    # also every store size); presets with per-query rescaled scores give the best hit 1.0, so
    # it always passes.
    min_relevance: float = Field(default=CONTEXT_MIN_RELEVANCE, ge=0.0, le=1.0)


class ContextInjectionStrategy:
    """Inject relevant memories as one delimited chat message (``MemoryInjectionStrategy``).

    Args:
        search: ``async search(agent_id, query_text, limit)`` returning entries best first with
            ``relevance_score`` set (e.g. a wrapper around :meth:`memvault.AsyncMemory.search`).
        config: the strategy's settings; defaults when omitted.
        embedder: embeds candidates for ``similarity="cosine"``; unused otherwise.
        policies: the organisation's core policies, injected first, whatever the budget.
        on_injected: called with the agent id and the entries actually injected (after the
            gate, filter, MMR and packing) each time a context is prepared; the learning layer
            uses it to count skill applications.

    Raises:
        MemoryConfigError: ``similarity="cosine"`` with MMR enabled but no ``embedder``.
    """

    def __init__(
        self,
        search: SearchFn,
        config: ContextInjectionConfig | None = None,
        *,
        embedder: Embedder | None = None,
        policies: PolicySource | None = None,
        on_injected: InjectedFn | None = None,
    ) -> None:
        self._search = search
        self._policies = policies
        self._on_injected = on_injected
        self._config = config if config is not None else ContextInjectionConfig()
        if self._config.mmr_enabled and self._config.similarity == "cosine" and embedder is None:
            msg = "context injection with MMR similarity 'cosine' needs an embedder"
            raise MemoryConfigError(msg)
        self._embedder = embedder
        # No tools; kept so every strategy offers the same ``registry``/``handle_tool_call``.
        self._registry = ToolRegistry()

    @property
    def strategy_name(self) -> str:
        """Short name of the strategy: ``context``."""
        return "context"

    @property
    def registry(self) -> ToolRegistry:
        """The strategy's tools: none (the same interface as the tool-offering strategies)."""
        return self._registry

    @property
    def config(self) -> ContextInjectionConfig:
        """The strategy's settings."""
        return self._config

    def get_tool_definitions(self) -> tuple[ToolDefinition, ...]:
        """No tools: the agent receives its memories without asking for them."""
        return ()

    async def handle_tool_call(
        self, agent_id: str, name: str, arguments: str | Mapping[str, Any] | None
    ) -> str:
        """Answer a tool call the way every strategy does; this one has no tools, so any call
        comes back as an ``error: unknown tool ...`` string for the model (never raised).

        Agent loops can route tool calls to whichever strategy ``retrieval.strategy`` names.

        Raises:
            MemoryValidationError: ``agent_id`` is blank.
        """
        return await self._registry.dispatch(name, arguments, agent_id=agent_id)

    async def prepare_messages(
        self, agent_id: str, query_text: str, token_budget: int
    ) -> tuple[ChatMessage, ...]:
        """The memory message for this query within ``token_budget`` tokens; () when none.

        Raises:
            MemoryValidationError: blank ``agent_id`` or ``query_text``, or ``token_budget`` < 1.
        """
        context = await self.prepare_context(agent_id, query_text, token_budget)
        return context.chat_messages

    async def prepare_context(
        self, agent_id: str, query_text: str, token_budget: int
    ) -> MemoryContext:
        """Run the whole pipeline and return the chosen entries with their rendering.

        Raises:
            MemoryValidationError: blank ``agent_id`` or ``query_text``, or ``token_budget`` < 1.
        """
        _check_request(agent_id, query_text, token_budget)
        policy = None if self._policies is None else policy_message(await self._policies())
        if policy is not None:
            # Policies always go in; the memories get what is left of the budget.
            inner = await self._memory_context(
                agent_id, query_text, token_budget - message_tokens(policy)
            )
            self._injected(agent_id, inner)
            return MemoryContext(
                entries=inner.entries,
                text=policy.content + ("\n\n" + inner.text if inner.text else ""),
                tokens=message_tokens(policy) + inner.tokens,
                role=inner.role,
                messages=({"role": policy.role, "content": policy.content}, *inner.messages),
            )
        context = await self._memory_context(agent_id, query_text, token_budget)
        self._injected(agent_id, context)
        return context

    def _injected(self, agent_id: str, context: MemoryContext) -> None:
        if self._on_injected is not None and context.entries:
            self._on_injected(agent_id, context.entries)

    async def _memory_context(
        self, agent_id: str, query_text: str, token_budget: int
    ) -> MemoryContext:
        cfg = self._config
        if token_budget < 1:
            return MemoryContext(entries=(), text="", tokens=0, role=cfg.role, messages=())
        thinned = cfg.mmr_enabled or cfg.filter_strategy is not None
        # MMR needs a pool to choose diverse entries from, and a filter may drop most of the top
        # hits; both would otherwise leave the budget half used.
        fetch = cfg.max_memories * cfg.candidate_pool_multiplier if thinned else cfg.max_memories
        hits = list(await self._search(agent_id, query_text, fetch))
        # Each memory on its own score: one that does not bear on the query would only mislead
        # the model, however good the best hit is (and an off-topic query injects nothing).
        hits = [
            h for h in hits if h.relevance_score is None or h.relevance_score >= cfg.min_relevance
        ]
        visible = apply_filter(cfg.filter_strategy, hits, query_text=query_text)
        if cfg.mmr_enabled and visible:
            ranked = await self._diversify(visible)
        else:
            ranked = visible[: cfg.max_memories]
        context = _render(ranked, token_budget=token_budget, role=cfg.role)
        logger.debug(
            "memory.inject.context",
            extra={
                "agent_id": agent_id,
                "candidates": len(hits),
                "visible": len(visible),
                "injected": len(context.entries),
                "tokens": context.tokens,
            },
        )
        return context

    async def _diversify(self, entries: list[MemoryEntry]) -> list[MemoryEntry]:
        cfg = self._config
        if cfg.similarity != "cosine":
            return mmr(
                entries, lambda_=cfg.mmr_lambda, k=cfg.max_memories, similarity=cfg.similarity
            )
        embedder = self._embedder
        if embedder is None:  # guarded in __init__; kept for the type checker
            msg = "context injection with MMR similarity 'cosine' needs an embedder"
            raise MemoryConfigError(msg)
        # Embedding is CPU-bound model work: keep it off the event loop.
        matrix: NDArray[np.float32] = await asyncio.to_thread(
            embedder.embed_documents, [e.content for e in entries]
        )
        vectors = {e.id: matrix[i] for i, e in enumerate(entries)}
        return mmr(
            entries,
            lambda_=cfg.mmr_lambda,
            k=cfg.max_memories,
            similarity="cosine",
            vectors=vectors,
        )


def _render(
    entries: Sequence[MemoryEntry], *, token_budget: int, role: Literal["system", "user"]
) -> MemoryContext:
    """Pack and format ``entries``, shared ones marked as such in the text.

    The mark is part of what is packed (it costs tokens like the content), but the context's
    ``entries`` are the entries as stored.
    """
    if not any(e.scope is MemoryScope.SHARED for e in entries):
        return build_context(entries, token_budget=token_budget, role=role)
    originals = {e.id: e for e in entries}
    marked = [
        e.model_copy(update={"content": SHARED_MARK + e.content})
        if e.scope is MemoryScope.SHARED
        else e
        for e in entries
    ]
    context = build_context(marked, token_budget=token_budget, role=role)
    return dataclasses.replace(context, entries=tuple(originals[e.id] for e in context.entries))


def _check_request(agent_id: str, query_text: str, token_budget: int) -> None:
    if not isinstance(agent_id, str) or not agent_id.strip():
        msg = "agent_id is empty"
        raise MemoryValidationError(msg)
    if not isinstance(query_text, str) or not query_text.strip():
        msg = "query_text is empty"
        raise MemoryValidationError(msg)
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
        msg = f"token_budget must be an integer >= 1, got {token_budget!r}"
        raise MemoryValidationError(msg)
