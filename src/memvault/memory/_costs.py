"""The cost meter of one memory: cost records of its own LLM calls, and per-agent budgets.

Every call through the memory's :class:`~memvault.llm.metered.MeteredLLM` becomes a
:class:`~memvault.persistence.models.CostRecord` in the memory's operational store (best
effort: a failed write is logged, never raised into the memory operation). With
``persistence.costs.agent_budget`` or ``agent_token_budget`` set, the meter keeps each agent's
spend for the current UTC day in memory (read from the store, then added to per call: no
query per call) and refuses calls once it reaches the budget, with one warning per agent and
day; the refused call takes its offline path. The spend is read again from the store every
:data:`REFRESH_SECONDS`, so several processes or servers over one store enforce one budget:
together they overshoot it by at most what they spend in that time.
"""

from __future__ import annotations

import logging
import time as clock
import warnings
from collections.abc import Callable
from datetime import UTC, datetime, time

from memvault.config.persistence import CostsConfig
from memvault.llm.metered import CostScope, LLMCall
from memvault.persistence import PersistenceBackend
from memvault.persistence.models import CostKind, CostRecord

__all__ = ["REFRESH_SECONDS", "SYSTEM_AGENT", "CostMeter"]

logger = logging.getLogger("memvault.costs")

REFRESH_SECONDS = 10.0
"""How long an agent's spend read from the store is trusted before it is read again."""

SYSTEM_AGENT = "memvault"
"""The agent of cost records made outside any agent's operation (a tenant-wide consolidation)."""


class CostMeter:
    """Records and gates one memory's LLM calls (see the module docstring)."""

    def __init__(
        self,
        operations: Callable[[], PersistenceBackend],
        costs: CostsConfig,
        *,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self._operations = operations
        self._costs = costs
        self._clock = clock or (lambda: datetime.now(UTC))
        self._day = self._clock().date()
        # agent -> (tokens, cost, when read from the store: time.monotonic())
        self._spent: dict[str, tuple[int, float, float]] = {}
        self._warned: set[str] = set()

    @property
    def budgeted(self) -> bool:
        """True if a per-agent budget is configured."""
        return self._costs.agent_budget is not None or self._costs.agent_token_budget is not None

    def _roll(self) -> None:
        today = self._clock().date()
        if today != self._day:  # a new UTC day: every budget starts again
            self._day = today
            self._spent.clear()
            self._warned.clear()

    async def spent(self, agent: str) -> tuple[int, float]:
        """The agent's ``(tokens, cost)`` for the current UTC day."""
        self._roll()
        found = self._spent.get(agent)
        now = clock.monotonic()
        # Without cost records (record: false) the store knows nothing: count here only.
        stale = found is not None and self._costs.record and now - found[2] > REFRESH_SECONDS
        if found is None or stale:
            since = datetime.combine(self._day, time(), tzinfo=UTC)
            try:
                totals = await self._operations().cost_records.totals(agent_id=agent, since=since)
            except Exception as exc:  # the budget must not take the memory down with the store
                logger.warning("cost totals of %s unreadable (%s): counting from here", agent, exc)
                totals = (0, 0.0) if found is None else (found[0], found[1])
            found = (totals[0], totals[1], now)
            self._spent[agent] = found
        return found[0], found[1]

    async def allow(self, scope: CostScope) -> bool:
        """False once the agent's budget for today is spent (warned once per agent and day)."""
        if not self.budgeted:
            return True
        agent = scope.agent_id or SYSTEM_AGENT
        tokens, cost = await self.spent(agent)
        over = (self._costs.agent_budget is not None and cost >= self._costs.agent_budget) or (
            self._costs.agent_token_budget is not None and tokens >= self._costs.agent_token_budget
        )
        if over and agent not in self._warned:
            self._warned.add(agent)
            msg = (
                f"agent {agent!r} has spent its model budget for today ({tokens} tokens, cost "
                f"{cost:.4f}): memvault's LLM-backed work for it takes the offline path until "
                "the next UTC day"
            )
            logger.warning(msg)
            warnings.warn(msg, RuntimeWarning, stacklevel=2)
        return not over

    async def record(self, call: LLMCall) -> None:
        """Add the call to the agent's spend and write its cost record (best effort)."""
        agent = call.scope.agent_id or SYSTEM_AGENT
        cost = self._costs.price(call.model, call.input_tokens, call.output_tokens)
        if self.budgeted:
            tokens, spent = await self.spent(agent)
            self._spent[agent] = (
                tokens + call.input_tokens + call.output_tokens,
                spent + (cost or 0.0),
                self._spent[agent][2],
            )
        if not self._costs.record:
            return
        try:
            await self._operations().cost_records.save(
                CostRecord(
                    agent_id=agent,
                    task_id=call.scope.task_id,
                    model=call.model,
                    kind=CostKind.LLM,
                    operation=call.scope.operation,
                    input_tokens=call.input_tokens,
                    output_tokens=call.output_tokens,
                    latency_ms=call.latency_ms,
                    cost=cost,
                )
            )
        except Exception as exc:  # a cost record never fails the memory operation it measures
            logger.warning("cost record of %s for %s not written: %s", call.model, agent, exc)
