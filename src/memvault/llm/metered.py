"""Metering memvault's own LLM calls: who each call was for, what it used, and a budget gate.

:class:`MeteredLLM` wraps any :class:`~memvault.protocols.LLMProvider`. Before a call it asks
its meter whether the current agent may still spend (:meth:`Meter.allow`); a refused call
raises :class:`BudgetExhaustedError`, a :class:`~memvault.llm.errors.ProviderError`, so every
LLM-backed path of memvault takes the offline fallback it already has for a failing provider.
After a call it hands the meter an :class:`LLMCall` (tokens, latency, model) to record.

Who a call is for comes from :func:`cost_scope`, a context variable the memory's entry points
set (``add(infer=True)`` sets the agent and ``extraction``, ``consolidate`` sets
``consolidation``...), so the subsystems that call the LLM need no extra arguments. Token
counts are the provider's usage when it reports any; otherwise an estimate of one token per four
characters of the messages and the reply (``LLMCall.estimated`` says which).

This module imports nothing of memvault's persistence: the meter is a protocol, implemented
above (:mod:`memvault.memory._costs`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any, Protocol

from memvault.llm.errors import ProviderError
from memvault.models import ChatMessage, LLMResponse
from memvault.protocols import LLMProvider

__all__ = [
    "BudgetExhaustedError",
    "CostScope",
    "LLMCall",
    "Meter",
    "MeteredLLM",
    "cost_scope",
    "current_scope",
    "estimate_tokens",
]


@dataclass(frozen=True, slots=True)
class CostScope:
    """Whom the LLM calls made now are for: an agent, a task, what the call does."""

    agent_id: str | None = None
    task_id: str | None = None
    operation: str | None = None


_NO_SCOPE = CostScope()
_SCOPE: ContextVar[CostScope | None] = ContextVar("memvault_cost_scope", default=None)


def current_scope() -> CostScope:
    """The scope of the calls made in this context."""
    return _SCOPE.get() or _NO_SCOPE


@contextlib.contextmanager
def cost_scope(
    agent_id: str | None = None, *, task_id: str | None = None, operation: str | None = None
) -> Iterator[CostScope]:
    """Attribute the LLM calls made inside to ``agent_id`` (and a task, an operation).

    What is not given is kept from the enclosing scope (an ``extraction`` inside ``add`` keeps
    the agent of the ``add``).
    """
    outer = current_scope()
    scope = replace(
        outer,
        agent_id=agent_id or outer.agent_id,
        task_id=task_id or outer.task_id,
        operation=operation or outer.operation,
    )
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def estimate_tokens(text: str) -> int:
    """About one token per four characters (the usual English average), at least one."""
    return max(1, len(text) // 4)


@dataclass(frozen=True, slots=True)
class LLMCall:
    """One completed LLM call, as the meter records it."""

    scope: CostScope
    model: str
    input_tokens: int
    output_tokens: int
    latency_ms: float
    estimated: bool
    """True when the provider reported no usage and the counts are estimates."""


class Meter(Protocol):
    """What a :class:`MeteredLLM` reports to."""

    async def allow(self, scope: CostScope) -> bool:
        """False once the scope's agent has spent its budget (the call is then refused)."""
        ...

    async def record(self, call: LLMCall) -> None:
        """Record a completed call (never raises: a failed record must not fail the work)."""
        ...


class BudgetExhaustedError(ProviderError):
    """The agent's model budget is spent: memvault takes the offline path instead."""


class MeteredLLM:
    """An :class:`~memvault.protocols.LLMProvider` whose calls a :class:`Meter` gates, records."""

    def __init__(self, inner: LLMProvider, meter: Meter) -> None:
        self.inner = inner
        self._meter = meter

    @property
    def model_id(self) -> str:
        """The wrapped provider's model."""
        return self.inner.model_id

    def with_model(self, model: str) -> MeteredLLM:
        """The wrapped provider asking ``model``, metered by the same meter."""
        from memvault.llm._protocol import with_model

        return MeteredLLM(with_model(self.inner, model, key="model"), self._meter)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> LLMResponse:
        """The wrapped provider's reply, once the meter allows it; the call is recorded."""
        scope = current_scope()
        if not await self._meter.allow(scope):
            who = scope.agent_id or "memvault"
            msg = f"the model budget of {who} is spent for today: the offline path is used"
            raise BudgetExhaustedError(msg)
        start = time.perf_counter()
        response = await self.inner.complete(
            messages, temperature=temperature, max_tokens=max_tokens, json_schema=json_schema
        )
        latency = (time.perf_counter() - start) * 1000
        reported = response.prompt_tokens > 0 or response.completion_tokens > 0
        await self._meter.record(
            LLMCall(
                scope=scope,
                model=response.model or self.inner.model_id,
                input_tokens=(
                    response.prompt_tokens
                    if reported
                    else estimate_tokens("".join(m.content for m in messages))
                ),
                output_tokens=(
                    response.completion_tokens if reported else estimate_tokens(response.text)
                ),
                latency_ms=latency,
                estimated=not reported,
            )
        )
        return response
