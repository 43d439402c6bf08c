"""Event triggers of consolidation: ``after_session`` and ``after_autonomous``.

The seed's ``consolidation.interval`` can name an event instead of a period: ``after_session``
consolidates when an interactive session ends (:meth:`SessionManager.end_session`),
``after_autonomous`` when an autonomous run finishes (:func:`~memvault.agent.capture.
capture_episode` with a trigger). :func:`consolidate_on` is the one call both make: it
consolidates the agent only when the configured interval is that event, and it never raises
into the agent's flow: a failure is logged and None returned.
"""

from __future__ import annotations

import builtins
import logging
from typing import Any

from memvault.consolidation.schedule import EVENT_INTERVALS
from memvault.models import ConsolidationInterval

__all__ = ["consolidate_on"]

logger = logging.getLogger("memvault.maintenance")

_FATAL = (builtins.MemoryError, RecursionError)


def _interval(memory: Any) -> ConsolidationInterval | None:
    config = getattr(memory, "config", None)
    options = getattr(config, "options", None)
    value = getattr(options, "consolidation_interval", None)
    return value if isinstance(value, ConsolidationInterval) else None


def _strategy(memory: Any) -> str:
    maintenance = getattr(getattr(memory, "config", None), "maintenance", None)
    strategy = getattr(maintenance, "consolidation_strategy", "simple")
    return strategy if isinstance(strategy, str) else "simple"


async def consolidate_on(
    memory: Any, event: ConsolidationInterval | str, *, agent_id: str
) -> Any | None:
    """Consolidate ``agent_id`` if ``memory``'s consolidation interval is ``event``.

    ``event`` is :attr:`ConsolidationInterval.AFTER_SESSION` or ``AFTER_AUTONOMOUS``. Returns
    the :class:`~memvault.consolidation.ConsolidationResult`, or None when the interval is
    something else, the memory cannot consolidate (a remote one without the operation), or it
    failed (logged as a warning). Interpreter failures (``MemoryError``, ``RecursionError``)
    still propagate.
    """
    try:
        kind = ConsolidationInterval(event)
        # Only the event the interval names triggers: a periodic interval is the maintenance
        # scheduler's business, and never/manual never run on their own.
        if _interval(memory) is not kind or kind not in EVENT_INTERVALS:
            return None
        consolidate = getattr(memory, "consolidate", None)
        if consolidate is None:
            return None
        result = await consolidate(agent_id=agent_id, strategy=_strategy(memory))
    except _FATAL:
        raise
    except Exception as exc:
        logger.warning("%s consolidation failed for agent %s: %s", event, agent_id, exc)
        return None
    logger.info(
        "%s consolidation for agent %s: %d new, %d merged",
        kind.value,
        agent_id,
        len(getattr(result, "created_ids", ())),
        len(getattr(result, "removed_ids", ())) + len(getattr(result, "marked_ids", ())),
    )
    return result
