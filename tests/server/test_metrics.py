"""``memvault.server.metrics``: prometheus_client counters, one registry per app, workers merged."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memvault.server.metrics import BUCKETS, MULTIPROC_ENV, Metrics, prepare_multiprocess

LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def samples(text: str) -> dict[str, float]:
    """``name{labels}`` (labels sorted by name) -> value, for every sample of an exposition."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            name, _, labels = series.partition("{")
            pairs = sorted(LABEL.findall(labels))
            key = name + ("{" + ",".join(f'{k}="{v}"' for k, v in pairs) + "}" if pairs else "")
            out[key] = float(value)
    return out


def test_render_counts_requests_and_latency_by_route_template() -> None:
    metrics = Metrics()
    for status, seconds in ((200, 0.003), (200, 0.3), (404, 0.02)):
        metrics.start()
        metrics.observe("GET", "/v1/memories/{memory_id}", status, seconds)
    metrics.start()  # still in flight
    text = metrics.render()
    assert "# TYPE memvault_http_requests_total counter" in text
    assert "# TYPE memvault_http_request_duration_seconds histogram" in text
    got = samples(text)
    route = 'method="GET",route="/v1/memories/{memory_id}"'
    assert got[f'memvault_http_requests_total{{{route},status="200"}}'] == 2
    assert got[f'memvault_http_requests_total{{{route},status="404"}}'] == 1
    assert got[f"memvault_http_request_duration_seconds_count{{{route}}}"] == 3
    assert got[f"memvault_http_request_duration_seconds_sum{{{route}}}"] == pytest.approx(0.323)
    cumulative = [
        got[f'memvault_http_request_duration_seconds_bucket{{le="{bound}",{route}}}']
        for bound in (*(repr(b) for b in BUCKETS), "+Inf")
    ]
    assert cumulative == [1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3]  # <= 5 ms, <= 25 ms, <= 0.5 s
    assert got["memvault_http_requests_in_flight"] == 1
    assert got["memvault_process_start_time_seconds"] > 1.7e9


def test_each_metrics_object_has_its_own_registry() -> None:
    first, second = Metrics(), Metrics()
    first.start()
    first.observe("POST", "/v1/memories", 201, 0.01)
    assert 'status="201"} 1.0' in first.render()
    assert "memvault_http_requests_total{" not in second.render()


def test_prepare_multiprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(MULTIPROC_ENV, "")  # restored (unset) after the test
    monkeypatch.delenv(MULTIPROC_ENV)
    assert prepare_multiprocess(1) is None
    assert MULTIPROC_ENV not in os.environ
    path = prepare_multiprocess(4)
    assert path is not None and Path(path).is_dir() and not any(Path(path).iterdir())
    assert os.environ[MULTIPROC_ENV] == path
    assert prepare_multiprocess(4) == path  # one already set is kept
    os.rmdir(path)


WORKER = """
import sys
from memvault.server.metrics import Metrics
m = Metrics()
for _ in range(int(sys.argv[1])):
    m.start()
    m.observe("GET", "/v1/search", 200, 0.002)
m.start()
m.observe("POST", "/v1/memories", 422, 0.2)
"""


def test_render_merges_the_counts_of_worker_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MULTIPROC_ENV, str(tmp_path))
    workers = [
        subprocess.Popen([sys.executable, "-c", WORKER, str(n)], env=dict(os.environ))
        for n in (5, 7)
    ]
    assert [w.wait(timeout=60) for w in workers] == [0, 0]
    got = samples(Metrics().render())  # any process renders every worker's counts
    search = 'method="GET",route="/v1/search"'
    assert got[f'memvault_http_requests_total{{{search},status="200"}}'] == 12
    assert got[f"memvault_http_request_duration_seconds_count{{{search}}}"] == 12
    assert got[f'memvault_http_request_duration_seconds_bucket{{le="0.005",{search}}}'] == 12
    post = 'method="POST",route="/v1/memories"'
    assert got[f'memvault_http_requests_total{{{post},status="422"}}'] == 2
    assert got[f"memvault_http_request_duration_seconds_sum{{{post}}}"] == pytest.approx(0.4)
    assert got["memvault_http_requests_in_flight"] == 0
