"""``benchmarks/bench_persistence.py`` at 300 rows on SQLite: every query timed (sanity)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
EXPECTED = {
    "tasks by status",
    "tasks by assignee",
    "tasks by project",
    "costs by agent",
    "cost aggregate by agent",
    "cost summary by model (30 d)",
    "cost summary by day (30 d)",
    "message history (50)",
    "audit by agent + 7 d",
    "audit high risk newest (100)",
    "heartbeats stale",
    "agent states active",
    "setting get",
}


def test_bench_persistence_smoke(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    path = BENCHMARKS / "bench_persistence.py"
    spec = importlib.util.spec_from_file_location("bench_persistence", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_persistence", module)
    spec.loader.exec_module(module)

    out = tmp_path / "persistence-sqlite-300.json"
    args = ["--backend", "sqlite", "--rows", "300", "--reps", "5", "--out", str(out)]
    result = module.main(args)
    saved = json.loads(out.read_text())
    assert saved["rows"] == result["rows"] == 300
    queries = saved["queries"]
    assert set(queries) == EXPECTED, sorted(queries)
    for name, timing in queries.items():
        assert timing["p50_ms"] > 0, name
    assert set(saved["bulk_records_per_s"]) == {
        "cost_records",
        "messages",
        "audit_entries",
        "tasks",
    }
    assert saved["single_save_per_s"] > 0
    assert saved["disk_bytes"] > 0
