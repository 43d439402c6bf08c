"""benchmarks/bench_server.py --compare REF: two real servers, one from a git worktree of REF."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench_worktrees() -> list[str]:
    listing = subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "list"], capture_output=True, text=True, check=True
    ).stdout
    return [line for line in listing.splitlines() if "memvault-bench-ref-" in line]


def test_compare_searches_both_builds_in_turns(bench_server: ModuleType, tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    bench = bench_server
    out = tmp_path / "compare.json"
    before = _bench_worktrees()
    bench.main(
        [
            "--compare", "HEAD", "--memories", "40", "--agents", "2", "--adds", "0",
            "--concurrency", "2", "--duration", "1", "--rounds", "2", "--warmup", "2",
            "--out", str(out),
        ]
    )  # fmt: skip
    data = json.loads(out.read_text())
    assert data["compare"]["ref"] == "HEAD"
    (row,) = data["compare"]["levels"]
    assert row["concurrency"] == 2
    for name in ("ref", "this"):
        assert row[name]["requests"] > 0
        assert row[name]["errors"] == 0
        assert row[name]["server_cpu_ms_per_search"] > 0
    ratio = row["ratio_this_over_ref"]
    assert ratio["req_per_s"] == pytest.approx(
        row["this"]["req_per_s"] / row["ref"]["req_per_s"], abs=1e-3
    )
    assert len(data["machine"]["loadavg_end"]) == 3
    assert _bench_worktrees() == before  # the temporary worktree is gone


def test_compare_refuses_an_unknown_ref(bench_server: ModuleType) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    bench = bench_server
    with pytest.raises(subprocess.CalledProcessError):
        bench.main(["--compare", "no-such-ref-anywhere", "--memories", "10"])


def test_compare_does_not_go_with_server(bench_server: ModuleType) -> None:
    bench = bench_server
    with pytest.raises(SystemExit):
        bench.parse_args(["--compare", "HEAD", "--server", "http://127.0.0.1:1"])
