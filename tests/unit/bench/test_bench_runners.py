"""The LoCoMo and LongMemEval runners end to end, with the real bundled embedding model."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memvault.bench import (
    LocomoReport,
    LongMemEvalReport,
    load_locomo,
    run_locomo,
    run_longmemeval,
)
from memvault.bench.locomo import turn_content
from memvault.errors import MemoryValidationError
from memvault.memory import AsyncMemory
from memvault.models import MemoryCategory
from memvault.protocols import Embedder

LOCOMO_DATA = Path("/work/shared/bench/locomo10.json")


def _in_unit_interval(report: LocomoReport | LongMemEvalReport) -> None:
    for row in (*report.rows, report.overall):
        for name, value in row.metrics.items():
            assert value is None or 0.0 <= value <= 1.0, (row.label, name, value)


class TestLocomo:
    async def test_end_to_end_on_sqlite(
        self,
        locomo_file: Path,
        minilm: Embedder,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        scratch = tmp_path / "scratch"
        scratch.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(scratch))
        calls: list[tuple[int, int]] = []

        report = await run_locomo(
            locomo_file, embedder=minilm, progress=lambda d, t: calls.append((d, t))
        )

        assert report.backend == "sqlite"
        assert report.preset == "default"
        assert report.embedder == minilm.model_id
        assert (report.conversations, report.turns) == (1, 8)
        # Category 5 is ignored; the no-evidence and only-malformed-evidence questions skipped.
        assert report.questions == 4
        assert report.skipped_questions == 2
        assert report.dropped_evidence_ids == 2  # "D9:9" (absent) and "D" (malformed)
        assert [r.label for r in report.rows] == [
            "multi-hop",
            "temporal",
            "open-domain",
            "single-hop",
        ]
        assert [r.questions for r in report.rows] == [1, 1, 1, 1]
        single_hop = report.rows[3]
        # "greyhound puppy" is only in D1:2: it must come first.
        assert single_hop.metrics["recall@1"] == 1.0
        assert single_hop.metrics["mrr"] == 1.0
        # With 8 turns and limit 50, every gold turn is retrieved.
        assert report.overall.metrics["recall@50"] == 1.0
        _in_unit_interval(report)
        assert report.metric_names == (
            "recall@1",
            "recall@5",
            "recall@10",
            "recall@50",
            "ndcg@10",
            "mrr",
        )
        assert report.timing.ingested == 8
        assert report.timing.searches == 4
        assert report.timing.ingest_seconds > 0
        assert report.timing.search_p50_ms is not None
        assert report.timing.search_p95_ms is not None
        assert 0 < report.timing.search_p50_ms <= report.timing.search_p95_ms
        assert calls == [(0, 1), (1, 1)]
        assert list(scratch.iterdir()) == []  # the temporary stores are gone

    async def test_the_stored_memories_follow_the_protocol(
        self, locomo_file: Path, minilm: Embedder, tmp_path: Path
    ) -> None:
        urls: dict[str, str] = {}

        def factory(name: str) -> str:
            urls[name] = str(tmp_path / f"{name}.db")
            return urls[name]

        report = await run_locomo(locomo_file, embedder=minilm, store_url_factory=factory)
        assert report.backend == "custom"
        assert list(urls) == ["conv-a"]
        turns = load_locomo(locomo_file).conversations[0].turns
        async with AsyncMemory(urls["conv-a"], embedder=minilm) as mem:
            entries = await mem.list(agent_id="bench", limit=100)
        entries.sort(key=lambda e: e.id)  # ids are sortable and follow turn order
        assert [e.metadata.extra for e in entries] == [
            {"dia_id": t.dia_id, "session": t.session} for t in turns
        ]
        assert entries[1].content == (
            "Bob: Great! I adopted a greyhound puppy named Biscuit at the shelter."
        )
        assert entries[3].content == (
            "Bob: Look at this picture from our hike. [shares a photo of a mountain lake at sunset]"
        )
        assert [e.content for e in entries] == [turn_content(t) for t in turns]
        assert {e.category for e in entries} == {MemoryCategory.EPISODIC}
        assert entries[0].created_at == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
        assert entries[7].created_at == datetime(2023, 6, 19, 10, 4, tzinfo=UTC)
        # Benchmark searches do not write: no access was recorded.
        assert all(e.access_count == 0 for e in entries)

    async def test_options(
        self, locomo_file: Path, minilm: Embedder, locomo_raw: list[dict[str, Any]], write: Any
    ) -> None:
        second = {**locomo_raw[0], "sample_id": "conv-b"}
        path = write([locomo_raw[0], second], "two.json")
        report = await run_locomo(
            path,
            embedder=minilm,
            backend="memory",
            preset="bm25",
            limit=5,
            categories=(4,),
            max_conversations=1,
        )
        assert (report.backend, report.preset, report.limit) == ("memory", "bm25", 5)
        assert report.conversations == 1
        assert [r.key for r in report.rows] == ["4"]
        assert report.questions == 1 and report.skipped_questions == 1
        # recall@10 and recall@50 would only repeat recall@5 with 5 results.
        assert report.metric_names == ("recall@1", "recall@5", "ndcg@10", "mrr")
        assert report.rows[0].metrics["recall@1"] == 1.0

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"preset": "nope"}, "unknown retrieval preset 'nope'"),
            ({"backend": "postgres"}, "unknown benchmark backend 'postgres'"),
            ({"limit": 0}, "limit must be >= 1"),
            ({"categories": ()}, "at least one LoCoMo category"),
            ({"categories": (9,)}, r"unknown LoCoMo categories \[9\]"),
            ({"max_conversations": 0}, "max_conversations must be >= 1"),
        ],
    )
    async def test_bad_options(
        self, locomo_file: Path, kwargs: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(MemoryValidationError, match=message):
            await run_locomo(locomo_file, **kwargs)

    async def test_missing_file(self, tmp_path: Path) -> None:
        with pytest.raises(MemoryValidationError, match="cannot read LoCoMo file"):
            await run_locomo(tmp_path / "absent.json")

    # A whole benchmark conversation end to end (419 turns embedded, 152 questions): ~13 s,
    # out of `make check`.
    @pytest.mark.slow
    @pytest.mark.skipif(not LOCOMO_DATA.is_file(), reason="the LoCoMo dataset is not here")
    async def test_first_real_conversation(self, minilm: Embedder) -> None:
        report = await run_locomo(
            LOCOMO_DATA, embedder=minilm, backend="memory", max_conversations=1
        )
        assert (report.conversations, report.turns) == (1, 419)
        assert report.questions + report.skipped_questions == 152
        _in_unit_interval(report)
        recall10 = report.overall.metrics["recall@10"]
        assert recall10 is not None and recall10 > 0.3


class TestLongMemEval:
    async def test_end_to_end(self, longmemeval_file: Path, minilm: Embedder) -> None:
        calls: list[tuple[int, int]] = []
        report = await run_longmemeval(
            longmemeval_file, embedder=minilm, progress=lambda d, t: calls.append((d, t))
        )
        assert report.backend == "sqlite"
        assert report.questions == 2
        assert report.skipped_abstention == 1
        assert report.skipped_no_evidence == 0
        assert report.skipped_blank_turns == 2  # one blank turn in each evaluated haystack
        assert report.turns == 28
        assert [r.label for r in report.rows] == ["single-session-user", "multi-session"]
        ssu, multi = report.rows
        assert ssu.metrics["session_any@5"] == 1.0  # "Ducati motorcycle" is distinctive
        assert ssu.metrics["session_all@5"] == 1.0
        assert ssu.metrics["turn_recall@10"] == 1.0
        assert ssu.metrics["ndcg@10"] is not None and 0.0 < ssu.metrics["ndcg@10"] <= 1.0
        assert ssu.counts["turn_recall@10"] == 1
        # No has_answer turns in the multi-session question: turn recall is not defined there.
        assert multi.metrics["turn_recall@10"] is None
        assert multi.metrics["ndcg@10"] is None
        assert multi.counts == {
            "turn_recall@10": 0,
            "session_any@5": 1,
            "session_all@5": 1,
            "session_recall@10": 1,
            "ndcg@10": 0,
        }
        assert report.overall.counts["turn_recall@10"] == 1
        assert report.overall.questions == 2
        _in_unit_interval(report)
        assert report.timing.searches == 2
        assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]

    async def test_options(self, longmemeval_file: Path, minilm: Embedder) -> None:
        report = await run_longmemeval(
            longmemeval_file,
            embedder=minilm,
            backend="memory",
            preset="dense",
            max_questions=1,
        )
        assert (report.backend, report.preset, report.questions) == ("memory", "dense", 1)
        assert report.skipped_abstention == 0

    async def test_abstention_questions_on_request(
        self, longmemeval_file: Path, minilm: Embedder
    ) -> None:
        report = await run_longmemeval(
            longmemeval_file, embedder=minilm, backend="memory", include_abstention=True
        )
        assert report.questions == 3 and report.skipped_abstention == 0

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"limit": 5}, "limit must be >= 10"),
            ({"max_questions": 0}, "max_questions must be >= 1"),
            ({"preset": "nope"}, "unknown retrieval preset"),
        ],
    )
    async def test_bad_options(
        self, longmemeval_file: Path, kwargs: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(MemoryValidationError, match=message):
            await run_longmemeval(longmemeval_file, **kwargs)
