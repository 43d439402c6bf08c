"""What the dashboard's charts and overview compute from public service calls.

Every memory the charts count is read through :meth:`MemoryService.call` under the logged-in
actor (the ``list`` operation, a page at a time), so a chart never shows what the same key
could not read over REST. Search latency comes from the server's own Prometheus metrics
(:class:`~memvault.server.metrics.Metrics`), sampled into a short in-process history.
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from memvault.models import AuditRecord, MemoryEntry
from memvault.write.retention import retention_score, select_evictions

if TYPE_CHECKING:
    from memvault.api.auth import Actor
    from memvault.server.metrics import Metrics
    from memvault.service import MemoryService
    from memvault.write.retention import RetentionPolicy

__all__ = [
    "CHART_SCAN_LIMIT",
    "LatencyHistory",
    "RetentionView",
    "all_entries",
    "decisions_per_day",
    "memories_over_time",
    "retention_view",
]

#: Most memories one chart reads (newest first); the page says when it stopped there.
CHART_SCAN_LIMIT = 20_000
_PAGE = 1000


async def all_entries(
    service: MemoryService,
    actor: Actor,
    agent_id: str,
    *,
    include_superseded: bool,
    limit: int = CHART_SCAN_LIMIT,
) -> list[MemoryEntry]:
    """The agent's memories, newest first, at most ``limit`` (through the ``list`` operation)."""
    out: list[MemoryEntry] = []
    while len(out) < limit:
        page: list[MemoryEntry] = await service.call(
            actor,
            "list",
            {
                "agent_id": agent_id,
                "limit": min(_PAGE, limit - len(out)),
                "offset": len(out),
                "include_superseded": include_superseded,
            },
        )
        out.extend(page)
        if len(page) < _PAGE:
            break
    return out


def _day(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d")


def _days(first: datetime, last: datetime) -> list[str]:
    day = first.astimezone(UTC).date()
    end = last.astimezone(UTC).date()
    out: list[str] = []
    while day <= end and len(out) < 3660:
        out.append(day.isoformat())
        day += timedelta(days=1)
    return out


def memories_over_time(entries: Iterable[MemoryEntry]) -> dict[str, list[tuple[float, float]]]:
    """Cumulative count of memories per category at the end of each day they were created.

    Points are ``(epoch seconds of the day, count)``, one series per category present.
    """
    rows = sorted(entries, key=lambda e: e.created_at)
    if not rows:
        return {}
    days = _days(rows[0].created_at, rows[-1].created_at)
    per: dict[str, dict[str, int]] = {}
    for e in rows:
        per.setdefault(e.category.value, {}).setdefault(_day(e.created_at), 0)
        per[e.category.value][_day(e.created_at)] += 1
    series: dict[str, list[tuple[float, float]]] = {}
    for category in sorted(per):
        total = 0
        points = []
        for day in days:
            total += per[category].get(day, 0)
            stamp = datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()
            points.append((stamp, float(total)))
        series[category] = points
    return series


#: The write decisions the chart shows.
DECISIONS = ("stored", "superseded", "duplicate", "rejected")

_UNSTORED = {"memory.duplicate": "duplicate", "memory.reject": "rejected"}


def decisions_per_day(
    entries: Sequence[MemoryEntry], audit: Sequence[AuditRecord] = (), *, days: int = 30
) -> tuple[list[str], dict[str, list[float]]]:
    """Writes per day by decision, over the last ``days`` days that saw writes.

    ``entries`` must include superseded versions. A version counts as *stored* on the day it was
    created; a write that replaced an older version counts as *superseded* on the day the older
    one was closed. Duplicate and rejected writes leave no row, only an audit record
    (``memory.duplicate``, ``memory.reject``): they are counted from ``audit``.
    """
    counts: dict[str, dict[str, int]] = {name: {} for name in DECISIONS}

    def bump(name: str, day: str) -> None:
        counts[name][day] = counts[name].get(day, 0) + 1

    for e in entries:
        bump("stored", _day(e.created_at))
        if e.superseded_by is not None:
            bump("superseded", _day(e.valid_to or e.updated_at))
    for record in audit:
        name = _UNSTORED.get(record.action)
        if name is not None:
            bump(name, _day(record.at))
    labels = sorted(set().union(*(set(c) for c in counts.values())))[-days:]
    return labels, {name: [float(counts[name].get(d, 0)) for d in labels] for name in DECISIONS}


@dataclass(frozen=True, slots=True)
class RetentionView:
    """Retention scores of the live memories and where a cap would cut."""

    scores: list[float]
    threshold: float | None
    """The highest score an eviction would archive now (None: no cap, or under every cap)."""
    evicted: int
    cap: str
    """The caps in words (``"none"`` when the policy sets none)."""


def retention_view(
    entries: Sequence[MemoryEntry], policy: RetentionPolicy, now: datetime | None = None
) -> RetentionView:
    """Scores of ``entries`` (live ones) and the eviction line of ``policy``'s caps."""
    at = now or datetime.now(UTC)
    scores = {e.id: retention_score(e, at, stability_hours=policy.stability_hours) for e in entries}
    caps = []
    if policy.max_memories_per_agent is not None:
        caps.append(f"{policy.max_memories_per_agent:,} per agent")
    caps.extend(f"{n:,} {c.value}" for c, n in policy.max_per_category.items())
    evicted = select_evictions(entries, policy, at) if caps else []
    threshold = max((scores[i] for i in evicted), default=None)
    return RetentionView(
        scores=list(scores.values()),
        threshold=threshold,
        evicted=len(evicted),
        cap=", ".join(caps) or "none",
    )


# -- search latency --------------------------------------------------------------------------------

_HISTOGRAM = "memvault_http_request_duration_seconds"


@dataclass(frozen=True, slots=True)
class _Sample:
    at: float
    counts: dict[str, tuple[float, float]]
    """route -> (requests so far, seconds so far)."""


class LatencyHistory:
    """Search latency over time, sampled from the server's own latency histogram.

    The Prometheus histogram holds totals since the server started; this keeps a snapshot of
    the totals of the search routes at most every ``every`` seconds (taken when a dashboard
    page is served, and the metrics page refreshes itself while it is open) and turns
    consecutive snapshots into the mean latency of the searches between them.
    """

    def __init__(
        self,
        metrics: Metrics | None,
        routes: Sequence[tuple[str, str]],
        *,
        every: float = 5.0,
        keep: int = 720,
    ) -> None:
        self._metrics = metrics
        self._routes = tuple(routes)
        self._every = every
        self._samples: deque[_Sample] = deque(maxlen=keep)
        self._lock = threading.Lock()

    def _registry(self) -> Any:
        assert self._metrics is not None
        directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
        if not directory:
            return self._metrics.registry
        from prometheus_client import CollectorRegistry
        from prometheus_client.multiprocess import MultiProcessCollector

        registry = CollectorRegistry(auto_describe=True)
        MultiProcessCollector(registry, path=directory)  # type: ignore[no-untyped-call]
        return registry

    def sample(self, *, force: bool = False) -> None:
        """Record the current totals (at most once per ``every`` seconds unless ``force``)."""
        if self._metrics is None:
            return
        now = time.time()
        with self._lock:
            if not force and self._samples and now - self._samples[-1].at < self._every:
                return
        registry = self._registry()
        counts: dict[str, tuple[float, float]] = {}
        for method, route in self._routes:
            labels = {"method": method, "route": route}
            count = registry.get_sample_value(f"{_HISTOGRAM}_count", labels) or 0.0
            total = registry.get_sample_value(f"{_HISTOGRAM}_sum", labels) or 0.0
            counts[f"{method} {route}"] = (float(count), float(total))
        with self._lock:
            self._samples.append(_Sample(now, counts))

    def series(self) -> dict[str, list[tuple[float, float]]]:
        """Mean latency in milliseconds per interval with searches, per route."""
        with self._lock:
            samples = list(self._samples)
        out: dict[str, list[tuple[float, float]]] = {}
        for before, after in itertools.pairwise(samples):
            for route, (count, total) in after.counts.items():
                prev_count, prev_total = before.counts.get(route, (0.0, 0.0))
                n = count - prev_count
                if n > 0:
                    ms = (total - prev_total) / n * 1000.0
                    out.setdefault(route, []).append((after.at, ms))
        return out

    def totals(self) -> dict[str, tuple[int, float]]:
        """Per route: searches since the server started, and their mean latency in ms."""
        with self._lock:
            last = self._samples[-1] if self._samples else None
        if last is None:
            return {}
        return {
            route: (int(count), (total / count * 1000.0) if count else 0.0)
            for route, (count, total) in last.counts.items()
        }
