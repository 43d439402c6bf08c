"""Smoke test of benchmarks/bench_server.py: tiny sizes against a real spawned server."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest


def test_corpus_and_queries_are_varied(bench_server: ModuleType) -> None:
    bench = bench_server
    assert len(bench.CORES) * len(bench.TAILS) >= 200
    texts = bench.memory_texts(2000)
    assert len(set(texts)) > 1900
    queries = bench.query_pool(400)
    assert len(queries) == len(set(queries)) == 400


def test_bench_server_smoke(
    bench_server: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = bench_server
    out = tmp_path / "result.json"
    returned = bench.main(
        [
            "--memories", "60", "--agents", "3", "--adds", "10", "--concurrency", "1,2",
            "--requests", "10", "--warmup", "2", "--out", str(out),
        ]
    )  # fmt: skip
    data = json.loads(out.read_text())
    assert data == json.loads(json.dumps(returned))

    for key in ("command", "machine", "config", "target", "ingest", "adds", "search", "server"):
        assert key in data
    assert len(data["machine"]["loadavg_start"]) == 3

    assert data["ingest"]["memories"] == 60
    assert data["ingest"]["errors"] == 0
    assert data["ingest"]["memories_per_s"] > 0

    assert data["adds"]["requests"] == 10
    assert data["adds"]["errors"] == 0
    assert data["adds"]["adds_per_s"] > 0
    assert sum(data["adds"]["decisions"].values()) == 10

    assert [row["concurrency"] for row in data["search"]] == [1, 2]
    for row in data["search"]:
        for key in ("requests", "req_per_s", "p50_ms", "p95_ms", "p99_ms", "max_ms", "errors"):
            assert key in row
        assert row["requests"] == 10
        assert row["errors"] == 0
        assert row["req_per_s"] > 0
        assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["max_ms"]
        assert row["mean_results"] > 0
        assert isinstance(row["pass"], bool)
    assert data["pass"] == all(row["pass"] for row in data["search"])

    server = data["server"]
    assert server["spawned"] is True and server["auth"] is True
    assert server["rss_mb_end"] > 0
    # The server was stopped and its temporary store removed.
    assert _not_our_server(server["pid"])
    assert not Path(server["store_dir"]).exists()

    printed = capsys.readouterr().out
    assert "| concurrency | requests | req/s | p50 ms |" in printed
    assert bench.TARGET_LINE in printed


def _not_our_server(pid: int) -> bool:
    """The pid is gone, or (reused) belongs to another process now."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return True
    return b"memvault" not in cmdline
