"""Prometheus metrics for the REST server, kept in process and rendered as exposition text.

Counted per request: method, route template (``/v1/memories/{memory_id}``, never the raw path, so
ids do not explode the label space) and status; latency goes into a fixed-bucket histogram.
A hand-written registry keeps the server free of another dependency; the format is Prometheus'
text exposition format 0.0.4.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = ["BUCKETS", "Metrics", "MetricsMiddleware"]

#: Latency histogram bucket bounds in seconds.
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Request counters and a latency histogram per (method, route)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: dict[tuple[str, str, int], int] = defaultdict(int)
        self._buckets: dict[tuple[str, str], list[int]] = {}
        self._sums: dict[tuple[str, str], float] = defaultdict(float)
        self._in_flight = 0
        self._started = time.time()

    def start(self) -> None:
        """A request began."""
        with self._lock:
            self._in_flight += 1

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        """A request ended with ``status`` after ``seconds``."""
        with self._lock:
            self._in_flight -= 1
            self._requests[(method, route, status)] += 1
            key = (method, route)
            counts = self._buckets.setdefault(key, [0] * (len(BUCKETS) + 1))
            counts[bisect.bisect_left(BUCKETS, seconds)] += 1
            self._sums[key] += seconds

    def render(self) -> str:
        """The metrics in Prometheus text exposition format."""
        lines = [
            "# HELP memvault_http_requests_total HTTP requests by method, route and status.",
            "# TYPE memvault_http_requests_total counter",
        ]
        with self._lock:
            requests = sorted(self._requests.items())
            buckets = sorted((k, list(v)) for k, v in self._buckets.items())
            sums = dict(self._sums)
            in_flight = self._in_flight
        for (method, route, status), n in requests:
            labels = f'method="{method}",route="{_escape(route)}",status="{status}"'
            lines.append(f"memvault_http_requests_total{{{labels}}} {n}")
        lines += [
            "# HELP memvault_http_request_duration_seconds HTTP request latency.",
            "# TYPE memvault_http_request_duration_seconds histogram",
        ]
        for (method, route), counts in buckets:
            base = f'method="{method}",route="{_escape(route)}"'
            running = 0
            for bound, n in zip((*BUCKETS, float("inf")), counts, strict=True):
                running += n
                le = "+Inf" if bound == float("inf") else repr(bound)
                lines.append(
                    f'memvault_http_request_duration_seconds_bucket{{{base},le="{le}"}} {running}'
                )
            lines.append(
                f"memvault_http_request_duration_seconds_sum{{{base}}} {sums[(method, route)]}"
            )
            lines.append(f"memvault_http_request_duration_seconds_count{{{base}}} {running}")
        lines += [
            "# HELP memvault_http_requests_in_flight Requests being served now.",
            "# TYPE memvault_http_requests_in_flight gauge",
            f"memvault_http_requests_in_flight {in_flight}",
            "# HELP memvault_process_start_time_seconds Start time of the server process.",
            "# TYPE memvault_process_start_time_seconds gauge",
            f"memvault_process_start_time_seconds {self._started}",
        ]
        return "\n".join(lines) + "\n"


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
