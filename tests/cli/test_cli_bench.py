"""``memvault bench locomo|longmemeval`` on tiny synthetic datasets."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import typer.main
from rich.console import Console
from typer.core import TyperArgument, TyperGroup, TyperOption

from memvault.cli.bench import bench_app

LOCOMO = [
    {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "3:15 pm on 2 March, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I repaired an antique harpsichord."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "My cat Pepper hates thunderstorms."},
                {"speaker": "Ana", "dia_id": "D1:3", "text": "We should go hiking in Norway."},
            ],
        },
        "qa": [
            {
                "question": "What instrument did Ana repair?",
                "answer": "harpsichord",
                "evidence": ["D1:01"],
                "category": 4,
            },
            {"question": "Is Ben nice?", "answer": "yes", "evidence": [], "category": 3},
        ],
    }
]

LONGMEMEVAL = [
    {
        "question_id": "q1",
        "question_type": "single-session-user",
        "question": "Which instrument did I repair?",
        "answer": "a harpsichord",
        "question_date": "2023/06/01 (Thu) 09:00",
        "haystack_session_ids": ["s1", "s2"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21", "2023/05/21 (Sun) 10:00"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "I repaired a harpsichord.", "has_answer": True},
                {"role": "assistant", "content": "Impressive work!"},
            ],
            [
                {"role": "user", "content": "What is the capital of Peru?"},
                {"role": "assistant", "content": "Lima."},
            ],
        ],
        "answer_session_ids": ["s1"],
    }
]


def _write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def test_locomo_json(run, tmp_path: Path) -> None:
    data = _write(tmp_path, "locomo.json", LOCOMO)
    result = run("bench", "locomo", "--data", data, "--json", "--backend", "memory")
    assert result.code == 0, result.err
    assert result.err == ""  # no terminal, so no progress bar
    report = result.json()
    assert report["benchmark"] == "locomo"
    assert (report["backend"], report["preset"], report["limit"]) == ("memory", "default", 50)
    assert report["metrics"] == ["recall@1", "recall@5", "recall@10", "recall@50", "ndcg@10", "mrr"]
    assert [c["label"] for c in report["categories"]] == [
        "multi-hop",
        "temporal",
        "open-domain",
        "single-hop",
    ]
    assert (report["questions"], report["skipped_questions"]) == (1, 1)
    assert report["categories"][3]["metrics"]["recall@1"] == 1.0
    assert set(report["overall"]) == {"key", "label", "questions", "metrics", "counts"}
    assert set(report["timing"]) == {
        "ingest_seconds",
        "ingested",
        "ingest_per_second",
        "searches",
        "search_p50_ms",
        "search_p95_ms",
    }


def test_locomo_table_on_sqlite(run, tmp_path: Path) -> None:
    data = _write(tmp_path, "locomo.json", LOCOMO)
    result = run("bench", "locomo", "--data", data, "--preset", "bm25", "--limit", "10")
    assert result.code == 0, result.err
    assert "preset bm25 · top 10 · sqlite" in result.out
    assert "single-hop" in result.out and "overall" in result.out
    assert "R@10" in result.out and "R@50" not in result.out
    assert "search: p50" in result.out


def test_longmemeval_without_dedup_stores_every_turn(run, tmp_path: Path) -> None:
    data = _write(tmp_path, "lme.json", LONGMEMEVAL)
    plain = run("bench", "longmemeval", "--data", data, "--json", "--max-questions", "1")
    raw = run(
        "bench", "longmemeval", "--data", data, "--json", "--max-questions", "1", "--no-dedup"
    )
    assert plain.code == 0 and raw.code == 0, raw.err
    # Dedup can only merge turns, never add them.
    assert raw.json()["turns"] >= plain.json()["turns"]
    assert raw.json()["overall"]["questions"] == 1


def test_longmemeval_json(run, tmp_path: Path) -> None:
    data = _write(tmp_path, "lme.json", LONGMEMEVAL)
    result = run("bench", "longmemeval", "--data", data, "--json", "--max-questions", "1")
    assert result.code == 0, result.err
    report = result.json()
    assert report["benchmark"] == "longmemeval"
    assert report["metrics"] == [
        "turn_recall@10",
        "session_any@5",
        "session_all@5",
        "session_recall@10",
        "ndcg@10",
    ]
    (qtype,) = report["question_types"]
    assert qtype["key"] == "single-session-user"
    assert qtype["metrics"]["session_any@5"] == 1.0
    assert report["overall"]["questions"] == 1


@pytest.mark.parametrize("command", ["locomo", "longmemeval"])
def test_missing_data_file_is_one_line_and_exit_2(run, tmp_path: Path, command: str) -> None:
    result = run("bench", command, "--data", str(tmp_path / "absent.json"), "--json")
    assert result.code == 2
    assert result.out == ""
    assert len(result.err_lines) == 1
    assert result.err_lines[0].startswith("error: cannot read ")
    assert "absent.json" in result.err_lines[0]


def test_malformed_data_file_exit_2(run, tmp_path: Path) -> None:
    data = _write(tmp_path, "lme.json", [{"question_id": "q1"}])
    result = run("bench", "longmemeval", "--data", data)
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert "question 0 (q1): missing key 'question_type'" in result.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--preset", "nope"], "unknown retrieval preset 'nope'"),
        (["--backend", "postgres"], "--backend"),
        (["--limit", "0"], "--limit"),
    ],
)
def test_bad_options_exit_2(run, tmp_path: Path, args: list[str], message: str) -> None:
    data = _write(tmp_path, "locomo.json", LOCOMO)
    result = run("bench", "locomo", "--data", data, *args)
    assert result.code == 2
    assert len(result.err_lines) == 1
    assert message in result.err


def test_data_is_required(run) -> None:
    result = run("bench", "locomo")
    assert result.code == 2
    assert "--data" in result.err


def test_every_bench_command_and_option_has_help() -> None:
    group = typer.main.get_command(bench_app)
    assert isinstance(group, TyperGroup)
    assert (group.help or "").strip()
    assert sorted(group.commands) == ["locomo", "longmemeval", "scale"]
    for name, command in group.commands.items():
        assert (command.help or "").strip(), name
        for param in command.params:
            assert isinstance(param, TyperOption | TyperArgument)
            assert (param.help or "").strip(), (name, param.name)


@pytest.mark.parametrize("command", ["locomo", "longmemeval"])
def test_help(run, command: str) -> None:
    result = run("bench", command, "--help")
    assert result.code == 0
    assert result.out.startswith(f"Usage: memvault bench {command} ")
    assert "--data" in result.out and "--json" in result.out


def test_progress_bar_on_a_terminal(run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100)
    monkeypatch.setattr("memvault.cli.bench.err_console", terminal)
    data = _write(tmp_path, "locomo.json", LOCOMO)
    result = run("bench", "locomo", "--data", data, "--json", "--backend", "memory")
    assert result.code == 0, result.err
    assert "conversations" in screen.getvalue()
    assert "1/1" in screen.getvalue()
    assert result.json()["benchmark"] == "locomo"  # stdout holds only the JSON


# --------------------------------------------------------------------------- bench scale

SCALE_ROW_KEYS = {
    "size",
    "add_many_per_s",
    "stored",
    "searches",
    "search_p50_ms",
    "search_p95_ms",
    "search_p99_ms",
    "add_dedup_per_s",
    "peak_rss_mib",
    "store_mib",
}


def test_scale_prints_a_table_and_writes_json(run, tmp_path: Path) -> None:
    out_file = tmp_path / "scale.json"
    args = ["--sizes", "50,200", "--queries", "20", "--adds", "10", "--json", str(out_file)]
    result = run("bench", "scale", *args)
    assert result.code == 0, result.err
    assert "memvault bench scale" in result.out
    assert "p99 ms" in result.out and "RSS MiB" in result.out
    assert "200" in result.out
    report = json.loads(out_file.read_text())
    assert report["benchmark"] == "scale"
    assert report["machine"]["cpu_count"] >= 1
    assert report["settings"]["sizes"] == [50, 200]
    assert report["settings"]["backend"] == "sqlite"
    assert set(report["builds"]) == {"this"}
    assert "ratios" not in report
    rows = report["results"]["this"]
    assert [r["size"] for r in rows] == [50, 200]
    for row in rows:
        assert set(row) >= SCALE_ROW_KEYS
        assert row["stored"] == row["size"]  # distinct texts: add_many merged nothing
        assert row["searches"] == 20
        assert 0 < row["search_p50_ms"] <= row["search_p95_ms"] <= row["search_p99_ms"]
        assert row["add_many_per_s"] > 0 and row["add_dedup_per_s"] > 0
        assert row["peak_rss_mib"] > 0 and row["store_mib"] > 0


def test_scale_json_to_stdout_on_the_memory_backend(run) -> None:
    args = ["--sizes", "30", "--queries", "5", "--adds", "0", "--backend", "memory"]
    result = run("bench", "scale", *args, "--json", "-")
    assert result.code == 0, result.err
    report = result.json()  # stdout holds only the JSON
    row = report["results"]["this"][0]
    assert report["settings"]["backend"] == "memory"
    assert row["size"] == 30 and row["searches"] == 5
    assert row["store_mib"] is None and row["add_dedup_per_s"] is None


def test_scale_help(run) -> None:
    result = run("bench", "scale", "--help")
    assert result.code == 0
    assert result.out.startswith("Usage: memvault bench scale ")
    for option in ("--sizes", "--backend", "--queries", "--corpus", "--json", "--compare"):
        assert option in result.out


def _in_git_checkout() -> bool:
    from memvault.bench.scale import _repo_root, _this_src

    return _repo_root(_this_src()) is not None


@pytest.mark.skipif(not _in_git_checkout(), reason="--compare needs a git checkout")
def test_scale_compare_runs_both_builds_and_prints_ratios(run, tmp_path: Path) -> None:
    out_file = tmp_path / "ab.json"
    args = ["--sizes", "40", "--queries", "10", "--adds", "5", "--backend", "memory"]
    result = run("bench", "scale", *args, "--compare", "HEAD", "--json", str(out_file))
    assert result.code == 0, result.err
    assert "ratio" in result.out and "ref" in result.out
    report = json.loads(out_file.read_text())
    assert set(report["builds"]) == {"this", "ref"}
    assert report["builds"]["ref"]["ref"] == "HEAD"
    assert "ref-tree" in report["builds"]["ref"]["module"]  # the worktree's code ran
    assert report["builds"]["this"]["module"] != report["builds"]["ref"]["module"]
    assert report["results"]["ref"][0]["searches"] == 10
    ratio = report["ratios"][0]
    assert ratio["size"] == 40
    assert ratio["search_p50_ms"] > 0 and ratio["add_many_per_s"] > 0
    # The temporary worktree is gone.
    from memvault.bench.scale import _git, _repo_root, _this_src

    root = _repo_root(_this_src())
    assert root is not None
    assert report["builds"]["ref"]["src"] not in (_git(root, "worktree", "list") or "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sizes", "10,abc"], "--sizes"),
        (["--sizes", "0"], "--sizes"),
        (["--backend", "mysql://x"], "--backend"),
        (["--queries", "0"], "--queries"),
        (["--compare", "no-such-ref-xyz"], "--compare: 'no-such-ref-xyz'"),
        (["--corpus", "absent.json"], "absent.json"),
    ],
)
def test_scale_bad_options_exit_2_with_one_line(run, args: list[str], message: str) -> None:
    result = run("bench", "scale", "--sizes", "10", *args)
    assert result.code == 2
    assert result.out == ""
    assert len(result.err_lines) == 1, result.err
    assert message in result.err


def test_scale_progress_bar_on_a_terminal(run, monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100)
    monkeypatch.setattr("memvault.cli.bench.err_console", terminal)
    args = ["--sizes", "300", "--queries", "30", "--adds", "0", "--backend", "memory"]
    result = run("bench", "scale", *args, "--json", "-")
    assert result.code == 0, result.err
    assert "300: add_many" in screen.getvalue()
    assert "300: search" in screen.getvalue()
    assert result.json()["benchmark"] == "scale"  # stdout holds only the JSON
