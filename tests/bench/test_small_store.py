"""``benchmarks/small_store.py`` on its suite at sizes 1, 5, 20 and 50: sanity, not targets."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from memvault.protocols import Embedder

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SIZES = (1, 5, 20, 50)


@pytest.fixture
def small_store(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The script loaded as a module."""
    spec = importlib.util.spec_from_file_location("small_store", BENCHMARKS / "small_store.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "small_store", module)
    spec.loader.exec_module(module)
    return module


def test_the_suite_file(small_store: ModuleType) -> None:
    suite = small_store.load_suite()
    assert len(suite.pairs) >= 40
    assert len(suite.pool) >= 50
    assert all(p.question.strip() and p.answer.strip() for p in suite.pairs)
    # Every store of size 50 can be filled without repeating a memory.
    assert len(suite.pool) + len(suite.pairs) - 1 >= max(SIZES) - 1


def test_distractors_are_nested_and_seeded(small_store: ModuleType) -> None:
    suite = small_store.load_suite()
    first, _ = small_store.distractor_order(suite, 3, 0)
    again, _ = small_store.distractor_order(suite, 3, 0)
    other, _ = small_store.distractor_order(suite, 3, 1)
    assert first == again and first != other
    assert suite.pairs[3].answer not in first
    assert len(set(first)) == len(first)


async def test_runs_at_every_size(
    small_store: ModuleType, minilm: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = small_store.load_suite()
    report = await small_store.run_suite(suite, sizes=SIZES, embedder=minilm)
    with capsys.disabled():
        print("\n" + small_store.render(report))
    n = len(suite.pairs)
    assert [r["size"] for r in report["rows"]] == list(SIZES)
    for row in report["rows"]:
        assert row["questions"] == n
        for key in ("top_hit", "in_context"):
            assert 0.0 <= row[key] <= 1.0
        assert 0.0 <= row["others_injected"] <= row["size"] - 1
        assert row["relevance_mean"] is None or 0.0 <= row["relevance_mean"] <= 1.0
    # A store holding only the answer returns it first and injects nothing else.
    one = report["rows"][0]
    assert one["top_hit"] == 1.0
    assert one["others_injected"] == 0.0
    assert one["answer_not_returned"] == 0
    spread = report["relevance_spread"]
    assert spread["questions"] <= n
    assert spread["max"] is None or 0.0 <= spread["mean"] <= spread["max"] <= 1.0
    assert len(report["per_question"]) == n
    json.dumps(report)


async def test_sqlite_backend(small_store: ModuleType, minilm: Embedder) -> None:
    suite = small_store.load_suite()
    few = small_store.Suite(suite.pairs[:2], suite.pool[:3])
    report = await small_store.run_suite(few, sizes=(1, 3), embedder=minilm, backend="sqlite")
    assert report["backend"] == "sqlite"
    assert [r["questions"] for r in report["rows"]] == [2, 2]
    with pytest.raises(ValueError, match="distractors"):
        await small_store.run_suite(few, sizes=(10,), embedder=minilm)


def test_main_prints_the_table_and_writes_json(
    small_store: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = json.loads(small_store.SUITE.read_text(encoding="utf-8"))
    data = tmp_path / "suite.json"
    data.write_text(json.dumps({"pairs": raw["pairs"][:2], "pool": raw["pool"][:2]}))
    out = tmp_path / "report.json"
    assert small_store.main(["--data", str(data), "--sizes", "1,2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "small-store suite · 2 questions · pool 2" in printed
    assert "relevance spread" in printed
    assert json.loads(out.read_text())["sizes"] == [1, 2]
