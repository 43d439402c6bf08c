"""benchmarks/bench_server.py --models: one app under several process models, and --kill."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest


def test_models_search_each_in_turns_and_survive_a_killed_worker(
    bench_server: ModuleType, tmp_path: Path
) -> None:
    bench = bench_server
    out = tmp_path / "models.json"
    # 12 s after a kill at a quarter: uvicorn's supervisor notices a dead worker only after
    # pinging the others one by one (0.5 s loop, up to 5 s per busy worker), so a 6 s run on a
    # loaded 2-core machine sometimes ended before the replacement appeared.
    bench.main(
        [
            "--models", "serve,uvicorn", "--workers", "2", "--memories", "40", "--agents", "2",
            "--adds", "0", "--concurrency", "2", "--duration", "1", "--rounds", "2",
            "--warmup", "2", "--kill", "--kill-duration", "12", "--kill-concurrency", "2",
            "--out", str(out),
        ]
    )  # fmt: skip
    data = json.loads(out.read_text())
    assert data["models"]["names"] == ["serve", "uvicorn"]
    (row,) = data["models"]["levels"]
    for name in ("serve", "uvicorn"):
        assert row[name]["requests"] > 0 and row[name]["errors"] == 0
        assert len(row[name]["rounds"]["req_per_s"]) == 2
        kill = data["models"]["kill"][name]
        assert kill["workers_before"] == 2
        # Both run uvicorn's supervisor: the server outlives its worker and still answers.
        assert kill["server_alive"] and kill["answers_at_end"], kill
        assert kill["worker_back_s"] is not None


@pytest.mark.parametrize(
    "argv",
    [
        ["--models", "nginx"],
        ["--models", "uvicorn@HEAD"],
        ["--models", "serve,serve"],
        ["--kill"],
        ["--models", "serve", "--compare", "HEAD"],
    ],
)
def test_models_refuses_what_it_cannot_run(bench_server: ModuleType, argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        bench_server.parse_args(argv)
