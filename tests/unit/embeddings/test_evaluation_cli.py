"""``memvault embedders eval|select`` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memvault.cli.app import main
from memvault.memory import Memory

LOCOMO = [
    {
        "sample_id": "c1",
        "conversation": {
            "speaker_a": "Ana",
            "speaker_b": "Ben",
            "session_1_date_time": "3:15 pm on 2 March, 2023",
            "session_1": [
                {"speaker": "Ana", "dia_id": "D1:1", "text": "I repaired an antique harpsichord."},
                {"speaker": "Ben", "dia_id": "D1:2", "text": "My cat Pepper hates thunderstorms."},
            ],
        },
        "qa": [
            {"question": "What did Ana repair?", "answer": "x", "evidence": ["D1:1"], "category": 4}
        ],
    }
]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("MEMVAULT_URL", "MEMVAULT_CONFIG", "MEMVAULT_EMBEDDINGS_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_eval_locomo_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "locomo.json"
    data.write_text(json.dumps(LOCOMO), encoding="utf-8")
    code = main(
        ["embedders", "eval", "--source", "locomo", "--data", str(data), "-e", "hashing", "--json"]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["source"] == "locomo:locomo.json"
    (hashing,) = report["embedders"]
    assert hashing["spec"] == "hashing"
    assert hashing["categories"]["social"]["recall@10"] == 1.0
    assert hashing["categories"]["social"]["passages"] == 2


def test_eval_store_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "store.db")
    with Memory(db) as mem:
        mem.add(
            "Deploys go through the blue-green pipeline. Always drain the old pool before "
            "switching the router over.",
            agent_id="a",
            category="procedural",
        )
        mem.add("Bob likes green tea in the mornings.", agent_id="a", category="social")
    code = main(["--db", db, "embedders", "eval", "-e", "hashing", "-e", "minilm"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "source: store" in captured.out
    assert "procedural nDCG/R@10" in captured.out
    assert "minilm" in captured.out


def test_eval_dataset_without_data_is_one_line_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["embedders", "eval", "--source", "longmemeval"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.strip().splitlines() == [
        "error: --source longmemeval needs --data PATH (the dataset file)"
    ]


def test_select_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MEMVAULT_EMBEDDINGS_PRESET", "ollama")
    monkeypatch.setenv("MEMVAULT_SETUP_HAS_GPU", "no")
    assert main(["embedders", "select", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "tier": "cpu_only",
        "spec": "minilm",
        "reason": "no GPU declared: the bundled CPU model",
    }
