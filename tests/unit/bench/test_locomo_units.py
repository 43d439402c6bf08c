"""LoCoMo with observation facts / session summaries as memories, on tiny synthetic files."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memvault.bench import (
    LocomoUnitsReport,
    load_locomo_units,
    run_locomo_facts,
    run_locomo_summaries,
)
from memvault.bench.locomo_units import (
    UNIT_METRICS,
    parse_conversations,
    relevance_auc,
    select_conversations,
    unit_items,
)
from memvault.cli.app import main
from memvault.errors import MemoryValidationError
from memvault.memory import AsyncMemory
from memvault.models import MemoryCategory
from memvault.protocols import Embedder


def _turn(speaker: str, dia_id: str, text: str) -> dict[str, str]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text}


def conv_a() -> dict[str, Any]:
    """Alice and Bob: seven facts over two sessions, questions with known gold facts."""
    return {
        "sample_id": "conv-a",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                _turn("Alice", "D1:1", "Hi Bob, how was your week?"),
                _turn("Bob", "D1:2", "I adopted a greyhound puppy named Biscuit."),
                _turn("Alice", "D1:3", "I started learning to play the cello last month."),
                _turn("Bob", "D1:4", "We hiked to a mountain lake."),
            ],
            "session_2_date_time": "10:04 am on 19 June, 2023",
            "session_2": [
                _turn("Alice", "D2:1", "I performed my first cello recital yesterday."),
                _turn("Bob", "D2:2", "Biscuit learned to fetch frisbees at the beach."),
                _turn("Alice", "D2:3", "My sister Clara is moving to Lisbon in September."),
                _turn("Bob", "D2:4", "I went to Lisbon for a conference once."),
            ],
        },
        "observation": {
            "session_1_observation": {
                "Bob": [
                    ["Bob adopted a greyhound puppy named Biscuit from the shelter.", "D1:2"],
                    ["Bob hiked to a mountain lake with friends.", "D1:4"],
                ],
                "Alice": [["Alice started learning to play the cello last month.", "D1:03"]],
            },
            "session_2_observation": {
                "Alice": [
                    ["Alice performed her first cello recital at the conservatory.", "D2:1"],
                    ["Alice's sister Clara is moving to Lisbon in September.", ["D2:3"]],
                ],
                "Bob": [
                    ["Biscuit the greyhound learned to fetch frisbees at the beach.", "D2:2"],
                    # A list given as one string, and an id naming no turn (dropped).
                    ["Bob went to Lisbon for a conference once.", "D2:4, D9:9"],
                ],
            },
        },
        "session_summary": {
            "session_1_summary": "Bob adopted a greyhound puppy named Biscuit and hiked to a "
            "mountain lake; Alice started learning the cello.",
            "session_2_summary": "Alice performed her first cello recital; Biscuit learned to "
            "fetch frisbees; Alice's sister Clara is moving to Lisbon.",
        },
        "qa": [
            {
                "question": "What is the name of Bob's greyhound puppy?",
                "answer": "Biscuit",
                "evidence": ["D1:2"],
                "category": 4,
            },
            {
                "question": "Which instrument has Alice been learning and performing?",
                "answer": "cello",
                "evidence": ["D1:3; D2:1"],
                "category": 1,
            },
            {
                "question": "When did Alice perform her cello recital?",
                "answer": "18 June 2023",
                "evidence": ["D2:1"],
                "category": 2,
            },
            {
                # No fact covers D1:1: no gold fact (but session 1's summary is gold).
                "question": "How did Alice greet Bob?",
                "answer": "She asked about his week",
                "evidence": ["D1:1"],
                "category": 3,
            },
            {
                "question": "What is the name of Alice's puppy?",
                "adversarial_answer": "Biscuit",
                "evidence": ["D1:2"],
                "category": 5,
            },
            {"question": "Would Bob enjoy the mountains?", "evidence": [], "category": 3},
        ],
    }


def conv_b() -> dict[str, Any]:
    """Carl and Dana: two facts; its questions are off-topic for conv-a and the other way."""
    return {
        "sample_id": "conv-b",
        "conversation": {
            "speaker_a": "Carl",
            "speaker_b": "Dana",
            "session_1_date_time": "9:00 am on 2 March, 2022",
            "session_1": [
                _turn("Carl", "D1:1", "My old diesel van needs a new gearbox."),
                _turn("Dana", "D1:2", "I planted tomatoes and basil on my balcony."),
            ],
        },
        "observation": {
            "session_1_observation": {
                "Carl": [["Carl's diesel van needs a new gearbox.", "D1:1"]],
                "Dana": [["Dana planted tomatoes and basil on her balcony.", "D1:2"]],
            }
        },
        "session_summary": {"session_1_summary": "Carl's van needs a gearbox; Dana gardens."},
        "qa": [
            {
                "question": "What part does Carl's van need?",
                "answer": "a gearbox",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {
                "question": "What did Dana plant?",
                "answer": "tomatoes and basil",
                "evidence": ["D1:2"],
                "category": 1,
            },
            {"question": "What did Dana sell?", "evidence": ["D1:2"], "category": 5},
        ],
    }


@pytest.fixture
def units_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo_units.json"
    path.write_text(json.dumps([conv_a(), conv_b()]), encoding="utf-8")
    return path


def _row(report: LocomoUnitsReport, label: str) -> dict[str, float | None]:
    (row,) = [r for r in report.rows if r.label == label]
    return row.metrics


class TestLoad:
    def test_facts(self, units_file: Path) -> None:
        data = load_locomo_units(units_file, "facts")
        assert data.unit == "facts"
        assert [len(u) for u in data.units] == [7, 2]
        facts = data.units[0]
        assert facts[0].content == "Bob adopted a greyhound puppy named Biscuit from the shelter."
        assert (facts[0].speaker, facts[0].session, facts[0].evidence) == ("Bob", 1, ("D1:2",))
        assert facts[2].evidence == ("D1:3",)  # normalised
        assert facts[4].evidence == ("D2:3",)  # a list
        assert facts[6].evidence == ("D2:4",)  # "D2:4, D9:9": the absent id dropped
        assert data.dropped_evidence_ids == 1
        assert facts[3].created_at == datetime(2023, 6, 19, 10, 4, tzinfo=UTC)

    def test_summaries(self, units_file: Path) -> None:
        data = load_locomo_units(units_file, "summaries")
        s1, s2 = data.units[0]
        assert (s1.session, s2.session) == (1, 2)
        assert s1.evidence == ("D1:1", "D1:2", "D1:3", "D1:4")
        assert s2.created_at == datetime(2023, 6, 19, 10, 4, tzinfo=UTC)
        assert s1.speaker is None

    def test_missing_observation_is_a_clear_error(self, tmp_path: Path) -> None:
        raw = conv_b()
        del raw["observation"]
        path = tmp_path / "x.json"
        path.write_text(json.dumps([raw]), encoding="utf-8")
        with pytest.raises(MemoryValidationError, match=r"conv-b.*'observation'"):
            load_locomo_units(path, "facts")
        assert len(load_locomo_units(path, "summaries").units[0]) == 1

    def test_items(self, units_file: Path) -> None:
        facts = load_locomo_units(units_file, "facts").units[0]
        item = unit_items(facts)[6]
        assert item["category"] is MemoryCategory.SEMANTIC
        assert item["metadata"] == {"speaker": "Bob", "session": 2, "dia_ids": ["D2:4"]}
        summary = unit_items(load_locomo_units(units_file, "summaries").units[0])[0]
        assert summary["metadata"] == {"session": 1}


class TestSelection:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("0-4", (0, 1, 2, 3, 4)),
            ("5-9", (5, 6, 7, 8, 9)),
            ("3", (3,)),
            ("7,0,2-3", (0, 2, 3, 7)),
        ],
    )
    def test_parse(self, text: str, expected: tuple[int, ...]) -> None:
        assert parse_conversations(text) == expected

    @pytest.mark.parametrize("text", ["", "a", "4-2", "1-", ","])
    def test_bad(self, text: str) -> None:
        with pytest.raises(MemoryValidationError):
            parse_conversations(text)

    def test_range_is_checked_against_the_file(self) -> None:
        assert select_conversations(None, 3) == (0, 1, 2)
        assert select_conversations([2, 0], 3) == (0, 2)
        with pytest.raises(MemoryValidationError, match=r"out of range.*0-2"):
            select_conversations("2-3", 3)


def test_auc_by_hand() -> None:
    # Pairs: 0.9>0.1, 0.9>0.8, 0.8>0.1, 0.8=0.8 (one half): 3.5 of 4.
    assert relevance_auc([0.9, 0.8], [0.1, 0.8]) == pytest.approx(0.875)
    assert relevance_auc([1.0], [0.0, 0.5]) == 1.0
    assert relevance_auc([0.0], [0.5]) == 0.0
    assert relevance_auc([0.3, 0.3], [0.3]) == 0.5
    assert relevance_auc([], [0.5]) is None


class TestRunFacts:
    async def test_known_gold(self, units_file: Path, minilm: Embedder) -> None:
        report = await run_locomo_facts(
            units_file, embedder=minilm, backend="memory", conversations="0"
        )
        assert report.unit_kind == "facts"
        assert report.conversation_ids == ("conv-a",)
        assert report.memories == 7
        # Three questions with gold facts; "How did Alice greet Bob?" has none; the question
        # without evidence is skipped; category 5 is not asked.
        assert (report.questions, report.no_gold_questions, report.skipped_questions) == (3, 1, 1)
        assert report.metric_names == UNIT_METRICS
        assert [r.questions for r in report.rows] == [1, 1, 0, 1]
        assert _row(report, "open-domain")["recall@5"] is None
        # Seven memories and a top 20: every gold fact is retrieved.
        assert report.overall.metrics["recall@10"] == 1.0
        # Gold: {greyhound}, {cello learning, recital}, {recital}: 4 gold hits of 3 x 7.
        assert (report.auc_gold_hits, report.auc_other_hits) == (4, 17)
        assert report.relevance_auc is not None and 0.5 < report.relevance_auc <= 1.0
        # The one fact naming the greyhound puppy comes first and is injected.
        single = _row(report, "single-hop")
        assert single["recall@5"] == 1.0
        assert single["context_hit"] == 1.0
        # Each category holds one question: precision x injected is its count of gold injected.
        gold_injected = 0.0
        for label, n_gold in (("multi-hop", 2), ("temporal", 1), ("single-hop", 1)):
            m = _row(report, label)
            assert m["injected"] is not None and 1 <= m["injected"] <= 7
            assert m["context_precision"] is not None
            hits = m["context_precision"] * m["injected"]
            assert hits == pytest.approx(round(hits)) and 0 <= round(hits) <= n_gold
            assert m["context_hit"] == (1.0 if hits > 0 else 0.0)
            gold_injected += hits
        assert report.injected_total == sum(
            _row(report, label)["injected"] or 0
            for label in ("multi-hop", "temporal", "single-hop")
        )
        assert report.context_precision_micro == pytest.approx(
            gold_injected / report.injected_total
        )
        # Off-topic: conv-b's two questions of categories 1-4, asked of conv-a's store.
        assert report.off_topic_questions == 2
        assert report.off_topic_empty is not None and 0.0 <= report.off_topic_empty <= 1.0
        assert report.timing.searches == 3
        assert report.dropped_evidence_ids == 1

    async def test_one_fact_store(self, units_file: Path, minilm: Embedder) -> None:
        # conv-b alone: two facts, each question's gold is one of them; off-topic questions
        # come from conv-a (the file wraps around).
        report = await run_locomo_facts(
            units_file, embedder=minilm, backend="memory", conversations=[1]
        )
        assert (report.memories, report.questions) == (2, 2)
        assert report.overall.metrics["recall@5"] == 1.0
        assert (report.auc_gold_hits, report.auc_other_hits) == (2, 2)
        # Five of conv-a's questions have categories 1-4 and a text.
        assert report.off_topic_questions == 5

    async def test_stored_memories(
        self, units_file: Path, minilm: Embedder, tmp_path: Path
    ) -> None:
        urls: dict[str, str] = {}

        def factory(name: str) -> str:
            urls[name] = str(tmp_path / f"{name}.db")
            return urls[name]

        await run_locomo_facts(
            units_file,
            embedder=minilm,
            store_url_factory=factory,
            conversations="0",
            off_topic=False,
        )
        async with AsyncMemory(urls["conv-a"], embedder=minilm) as mem:
            entries = await mem.list(agent_id="bench", limit=100)
        entries.sort(key=lambda e: e.id)
        assert len(entries) == 7
        assert {e.category for e in entries} == {MemoryCategory.SEMANTIC}
        assert entries[0].metadata.extra == {"speaker": "Bob", "session": 1, "dia_ids": ["D1:2"]}
        assert entries[0].created_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        assert entries[3].created_at == datetime(2023, 6, 19, 10, 4, tzinfo=UTC)

    async def test_bad_selection(self, units_file: Path, minilm: Embedder) -> None:
        with pytest.raises(MemoryValidationError, match="out of range"):
            await run_locomo_facts(units_file, embedder=minilm, conversations="5")


async def test_summaries_known_gold(units_file: Path, minilm: Embedder) -> None:
    report = await run_locomo_summaries(
        units_file, embedder=minilm, backend="memory", conversations="0-0", preset="bm25"
    )
    assert report.unit_kind == "summaries"
    assert report.preset == "bm25"
    assert report.memories == 2
    # Summaries cover every turn: all four questions with evidence have gold.
    assert (report.questions, report.no_gold_questions, report.skipped_questions) == (4, 0, 1)
    assert report.overall.metrics["recall@5"] == 1.0
    # Gold: {S1}, {S1, S2}, {S2}, {S1}: five gold hits (BM25 returns only matching summaries,
    # so at most 3 others of 4 x 2).
    assert report.auc_gold_hits == 5
    assert report.auc_other_hits <= 3
    multi = _row(report, "multi-hop")
    # Both summaries are gold for the multi-hop question: whatever is injected is gold.
    assert multi["context_precision"] in (None, 1.0)
    data = report.to_json()
    assert data["benchmark"] == "locomo-units"
    assert data["unit_kind"] == "summaries"
    assert data["conversation_indexes"] == (0,)
    json.dumps(data)


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_units(
    units_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(units_file.parent)
    data = str(units_file)
    code, out, err = _cli(
        capsys, "bench", "locomo", "--data", data, "--unit", "facts", "--conversations", "0",
        "--backend", "memory", "--json",
    )  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert (report["benchmark"], report["unit_kind"]) == ("locomo-units", "facts")
    assert report["conversation_ids"] == ["conv-a"]
    assert report["metrics"] == list(UNIT_METRICS)

    code, out, err = _cli(
        capsys, "bench", "locomo", "--data", data, "--unit", "summaries", "--backend", "memory",
    )  # fmt: skip
    assert code == 0, err
    assert "locomo summaries · conversations 0-1 · preset default" in out
    assert "relevance AUC" in out and "off-topic" in out

    # The turn unit takes the selection too.
    code, out, err = _cli(
        capsys, "bench", "locomo", "--data", data, "--conversations", "1", "--json",
        "--backend", "memory",
    )  # fmt: skip
    assert code == 0, err
    turns = json.loads(out)
    assert (turns["benchmark"], turns["conversations"], turns["turns"]) == ("locomo", 1, 2)

    code, out, err = _cli(
        capsys, "bench", "locomo", "--data", data, "--unit", "facts", "--conversations", "4"
    )
    assert code != 0
    assert "out of range" in err
