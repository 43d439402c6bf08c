"""Prometheus metrics for the REST server (prometheus_client, one registry per app).

Counted per request: method, route template (``/v1/memories/{memory_id}``, never the raw path, so
ids do not explode the label space) and status; latency goes into a fixed-bucket histogram.
prometheus_client also exports a ``*_created`` series per counter and histogram child, unless
``PROMETHEUS_DISABLE_CREATED_SERIES=true`` is set.

With several worker processes (``memvault serve --workers N``) each worker counts into files under
``$PROMETHEUS_MULTIPROC_DIR`` (prometheus_client's multiprocess mode, chosen when the variable is
set before the process starts: :func:`prepare_multiprocess` sets it before the workers start),
and ``/metrics`` on any worker renders the merged counts of all of them.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector

__all__ = ["BUCKETS", "MULTIPROC_ENV", "Metrics", "MetricsMiddleware", "prepare_multiprocess"]

#: Latency histogram bucket bounds in seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

#: prometheus_client's switch to multiprocess mode: the directory the processes count into.
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def prepare_multiprocess(workers: int) -> str | None:
    """Before starting ``workers`` server processes: make them count into one shared directory.

    Sets ``$PROMETHEUS_MULTIPROC_DIR`` (inherited by the workers) to a fresh temporary directory,
    removed when this process exits; one already set is kept (its owner cleans it). Returns the
    directory, or None for a single worker, which counts in memory.
    """
    if workers <= 1:
        return None
    if os.environ.get(MULTIPROC_ENV):
        return os.environ[MULTIPROC_ENV]
    path = tempfile.mkdtemp(prefix="memvault-metrics-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    os.environ[MULTIPROC_ENV] = path
    return path


class Metrics:
    """Request counters, a latency histogram per (method, route) and an in-flight gauge."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._multiproc_dir = os.environ.get(MULTIPROC_ENV) or None
        self._requests = Counter(
            "memvault_http_requests",
            "HTTP requests by method, route and status.",
            ("method", "route", "status"),
            registry=self.registry,
        )
        self._latency = Histogram(
            "memvault_http_request_duration_seconds",
            "HTTP request latency.",
            ("method", "route"),
            buckets=BUCKETS,
            registry=self.registry,
        )
        self._in_flight = Gauge(
            "memvault_http_requests_in_flight",
            "Requests being served now.",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        started = Gauge(
            "memvault_process_start_time_seconds",
            "Start time of the server process.",
            registry=self.registry,
            multiprocess_mode="min",
        )
        started.set(time.time())
        # Issue 18: embedding queues and response caches of this process, read at scrape time.
        self.registry.register(ConversationCollector())
        # Label children by key: a dict lookup per request instead of labels()' checks and lock.
        self._counters: dict[tuple[str, str, int], Any] = {}
        self._histograms: dict[tuple[str, str], Any] = {}

    def start(self) -> None:
        """A request began."""
        self._in_flight.inc()

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """A request ended with ``status`` after ``seconds``."""
        self._in_flight.dec()
        key = (method, route, status)
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = self._requests.labels(method, route, str(status))
        counter.inc()
        histogram = self._histograms.get(key[:2])
        if histogram is None:
            histogram = self._histograms[key[:2]] = self._latency.labels(method, route)
        histogram.observe(seconds)

    def render(self) -> str:
        """The metrics in Prometheus text exposition format (with several workers: all of them)."""
        registry = self.registry
        if self._multiproc_dir is not None:
            registry = CollectorRegistry(auto_describe=True)
            MultiProcessCollector(registry, path=self._multiproc_dir)  # type: ignore[no-untyped-call]
            registry.register(ConversationCollector())  # this worker's queues and caches
        return generate_latest(registry).decode()


class ConversationCollector:
    """Embedding queue depth and backfill progress, response cache hits (issue 18).

    Read from the live queues and caches of this process at every scrape, so nothing is
    counted twice and an idle process exports zeros. A process without any exports nothing.
    """

    def describe(self) -> list[Any]:
        """No fixed series: they exist only while a queue or cache does."""
        return []

    def collect(self) -> Iterator[Any]:
        """One sample per series, summed over this process's queues and caches."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        from memvault.conversation.queue import live_queues
        from memvault.llm.cache import live_caches

        queues = [q.stats() for q in live_queues()]
        if queues:
            for name, doc, value in (
                (
                    "memvault_embedding_queue_depth",
                    "Messages waiting to be embedded.",
                    sum(s.depth for s in queues),
                ),
                (
                    "memvault_embedding_queue_in_flight",
                    "Messages being embedded now.",
                    sum(s.in_flight for s in queues),
                ),
                (
                    "memvault_embedding_backfill_done",
                    "Rows the current backfill went through.",
                    sum(s.backfill_done for s in queues),
                ),
                (
                    "memvault_embedding_backfill_total",
                    "Rows the current backfill started with.",
                    sum(s.backfill_total for s in queues),
                ),
                (
                    "memvault_embedding_backfill_running",
                    "Backfills running now.",
                    sum(int(s.backfill_running) for s in queues),
                ),
            ):
                yield GaugeMetricFamily(name, doc, value=value)
            yield CounterMetricFamily(
                "memvault_embedding_queue_embedded",
                "Message vectors the embedding queues stored.",
                value=sum(s.embedded for s in queues),
            )
        caches = [c.stats() for c in live_caches()]
        if caches:
            for name, doc, value in (
                (
                    "memvault_response_cache_hits",
                    "Response cache hits.",
                    sum(c.hits for c in caches),
                ),
                (
                    "memvault_response_cache_semantic_hits",
                    "Hits by prompt similarity.",
                    sum(c.semantic_hits for c in caches),
                ),
                (
                    "memvault_response_cache_misses",
                    "Response cache misses.",
                    sum(c.misses for c in caches),
                ),
            ):
                yield CounterMetricFamily(name, doc, value=value)
            lookups = sum(c.hits + c.misses for c in caches)
            yield GaugeMetricFamily(
                "memvault_response_cache_hit_ratio",
                "Hits over lookups of the response caches.",
                value=sum(c.hits for c in caches) / lookups if lookups else 0.0,
            )
            yield GaugeMetricFamily(
                "memvault_response_cache_entries",
                "Cached responses.",
                value=sum(c.size for c in caches),
            )


class MetricsMiddleware:
    """ASGI middleware feeding :class:`Metrics` (route templates from the router's match)."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        started = time.perf_counter()
        self.metrics.start()

        async def record_status(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, record_status)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None)
            if template is None:
                path = str(scope.get("path", ""))
                template = "/mcp" if path.startswith("/mcp") else "unmatched"
            self.metrics.observe(
                str(scope.get("method", "")), template, status, time.perf_counter() - started
            )
