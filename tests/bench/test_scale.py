"""The pieces of ``memvault bench scale`` that need no worker: options, corpus, table."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from memvault.bench.scale import (
    METRICS,
    ScaleOptions,
    build_corpus,
    parse_backend,
    parse_sizes,
    render_scale,
)
from memvault.errors import MemoryValidationError


def test_parse_sizes() -> None:
    assert parse_sizes("1000,10000") == (1000, 10000)
    assert parse_sizes(" 10k, 1m ,2_000") == (10_000, 1_000_000, 2000)
    for bad in ("", "10,", "-5", "1.5k", "ten", "0"):
        with pytest.raises(MemoryValidationError, match="--sizes"):
            parse_sizes(bad)


def test_parse_backend() -> None:
    assert parse_backend("SQLite") == "sqlite"
    assert parse_backend("memory") == "memory"
    url = "postgresql://u:pw@host/db?schema=x"
    assert parse_backend(url) == url
    with pytest.raises(MemoryValidationError, match="--backend"):
        parse_backend("mysql://host/db")


def test_synthetic_corpus_is_distinct_and_deterministic() -> None:
    options = ScaleOptions(sizes=(100, 300), queries=40, adds=20)
    corpus = build_corpus(options)
    assert len(corpus["texts"]) == 300
    assert len(corpus["queries"]) == (40 + 1) * 2  # one warm-up query per size
    assert len(corpus["adds"]) == 20 * 2
    assert len(set(corpus["texts"])) == 300
    assert len(set(corpus["queries"])) == len(corpus["queries"])  # never a cached query
    assert not set(corpus["adds"]) & set(corpus["texts"])
    assert build_corpus(options) == corpus


def test_dataset_corpus_uses_turns_and_questions_then_tops_up(tmp_path: Path) -> None:
    locomo = [
        {
            "sample_id": "c1",
            "conversation": {
                "speaker_a": "Ana",
                "speaker_b": "Ben",
                "session_1_date_time": "3:15 pm on 2 March, 2023",
                "session_1": [
                    {"speaker": "Ana", "dia_id": f"D1:{i}", "text": f"turn number {i}"}
                    for i in range(1, 6)
                ],
            },
            "qa": [{"question": "Who spoke?", "answer": "Ana", "evidence": [], "category": 1}],
        }
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(locomo))
    corpus = build_corpus(ScaleOptions(sizes=(8,), queries=3, adds=1, corpus=str(path)))
    assert corpus["texts"][:5] == [f"turn number {i}" for i in range(1, 6)]
    assert len(set(corpus["texts"])) == 8
    assert corpus["queries"][0] == "Who spoke?" and len(corpus["queries"]) == 4
    assert corpus["description"].startswith("locomo locomo.json: 5 turns and 1 questions used")
    assert "synthetic top-up" in corpus["description"]


def _row(size: int, scale: float) -> dict[str, object]:
    return {"size": size} | {key: 10.0 * scale for key, _, _ in METRICS}


def test_render_compare_table() -> None:
    report = {
        "settings": {"backend": "sqlite", "queries": 5, "adds": 5, "corpus": "synthetic"},
        "machine": {"cpu_count": 2},
        "builds": {"this": {"commit": "a" * 40, "dirty": True}, "ref": {"commit": "b" * 40}},
        "results": {"this": [_row(1000, 2.0)], "ref": [_row(1000, 1.0)]},
        "ratios": [{"size": 1000} | {key: 2.0 for key, _, _ in METRICS}],
    }
    screen = io.StringIO()
    Console(file=screen, width=160).print(render_scale(report))
    text = screen.getvalue()
    assert "1,000" in text and "ratio" in text and "2.00x" in text
    assert "aaaaaaaaaa+dirty" in text and "ref: bbbbbbbbbb" in text
