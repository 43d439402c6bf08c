"""Per-category embedder evaluation: suites from datasets and stores, metrics, the report."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memvault.bench.embedders import (
    CategoryTask,
    EvalQuery,
    EvalSuite,
    available_embedder_specs,
    evaluate_embedder,
    evaluate_embedders,
    rank_passages,
    render_reports,
    suite_from_entries,
    suite_from_locomo,
    suite_from_longmemeval,
)
from memvault.embeddings import HashingEmbedder
from memvault.errors import MemoryValidationError
from memvault.models import MemoryCategory
from memvault.protocols import Embedder

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
                {"speaker": "Ana", "dia_id": "D1:3", "text": "We went hiking in Norway last May."},
            ],
        },
        "qa": [
            {
                "question": "What did Ana repair?",
                "answer": "x",
                "evidence": ["D1:1"],
                "category": 4,
            },
            {"question": "When did they hike?", "answer": "x", "evidence": ["D1:3"], "category": 2},
            {"question": "Adversarial?", "answer": "x", "evidence": ["D1:2"], "category": 5},
        ],
    }
]


def _lme_item(qid: str, qtype: str, question: str, gold: str, other: str) -> dict[str, Any]:
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": question,
        "answer": "x",
        "question_date": "2023/06/01 (Thu) 09:00",
        "haystack_session_ids": [f"s-{qid}"],
        "haystack_dates": ["2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [
            [
                {"role": "user", "content": gold, "has_answer": True},
                {"role": "assistant", "content": other},
            ]
        ],
        "answer_session_ids": [f"s-{qid}"],
    }


LONGMEMEVAL = [
    _lme_item(
        "a", "temporal-reasoning", "When did I adopt the dog?", "I adopted Rex in May.", "ok"
    ),
    _lme_item("b", "single-session-user", "What is my job?", "I work as a nurse.", "Nice."),
    _lme_item(
        "c", "single-session-assistant", "How do I descale?", "How to descale?", "Use vinegar."
    ),
    _lme_item("d", "single-session-preference", "What music?", "I love jazz.", "Cool."),
    _lme_item("e_abs", "single-session-user", "Abstain?", "Nothing here.", "No."),
]


def _write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_locomo_suite_maps_categories(tmp_path: Path) -> None:
    suite = suite_from_locomo(_write(tmp_path, "l.json", LOCOMO))
    assert set(suite.tasks) == {MemoryCategory.SOCIAL, MemoryCategory.EPISODIC}
    social = suite.tasks[MemoryCategory.SOCIAL]
    assert [q.text for q in social.queries] == ["What did Ana repair?"]
    assert social.queries[0].gold == frozenset({"c1:D1:1"})
    # The pool holds every turn of the conversation (gold plus distractors), once.
    assert sorted(social.passage_ids) == ["c1:D1:1", "c1:D1:2", "c1:D1:3"]
    assert "Ana: I repaired an antique harpsichord." in social.passages
    assert suite.tasks[MemoryCategory.EPISODIC].queries[0].gold == frozenset({"c1:D1:3"})
    assert suite.query_count == 2  # the adversarial question is not a retrieval task


def test_longmemeval_suite_maps_all_four_categories(tmp_path: Path) -> None:
    suite = suite_from_longmemeval(_write(tmp_path, "m.json", LONGMEMEVAL))
    assert set(suite.tasks) == {
        MemoryCategory.EPISODIC,
        MemoryCategory.SEMANTIC,
        MemoryCategory.PROCEDURAL,
        MemoryCategory.SOCIAL,
    }
    semantic = suite.tasks[MemoryCategory.SEMANTIC]
    assert [q.text for q in semantic.queries] == ["What is my job?"]  # abstention skipped
    assert semantic.queries[0].gold == frozenset({"s-b:0"})


def test_pool_is_capped_and_keeps_gold(tmp_path: Path) -> None:
    items = [
        _lme_item(f"q{i}", "single-session-user", f"question {i}?", f"fact {i}", f"filler {i}")
        for i in range(30)
    ]
    suite = suite_from_longmemeval(_write(tmp_path, "m.json", items), max_queries=5, max_passages=8)
    task = suite.tasks[MemoryCategory.SEMANTIC]
    assert len(task.queries) == 5
    assert len(task.passages) == 8
    gold = {g for q in task.queries for g in q.gold}
    assert gold <= set(task.passage_ids)
    again = suite_from_longmemeval(_write(tmp_path, "m.json", items), max_queries=5, max_passages=8)
    assert again.tasks[MemoryCategory.SEMANTIC].passage_ids == task.passage_ids  # seeded


def test_entries_suite_is_inverse_cloze() -> None:
    entries = [
        {
            "id": "m1",
            "category": "procedural",
            "content": "Deploys go through the blue-green pipeline. Always drain the old pool "
            "before switching the router over.",
        },
        {"id": "m2", "category": "procedural", "content": "Too short."},
        {"id": "m3", "category": "working", "content": "Scratch one. Scratch two is longer."},
    ]
    suite = suite_from_entries(entries)
    task = suite.tasks[MemoryCategory.PROCEDURAL]
    assert [q.text for q in task.queries] == [
        "Always drain the old pool before switching the router over."
    ]
    assert task.queries[0].gold == frozenset({"m1#rest"})
    assert dict(zip(task.passage_ids, task.passages, strict=True))["m1#rest"] == (
        "Deploys go through the blue-green pipeline."
    )
    assert MemoryCategory.WORKING not in suite.tasks


def test_empty_source_is_a_validation_error() -> None:
    with pytest.raises(MemoryValidationError, match="no category"):
        suite_from_entries([{"id": "x", "category": "semantic", "content": "One sentence."}])


def test_rank_passages_orders_by_cosine() -> None:
    q = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    p = np.array([[0.6, 0.8], [1.0, 0.0], [0.0, 1.0]], np.float32)
    assert rank_passages(q, p, 2) == [[1, 0], [2, 0]]
    assert rank_passages(q, p, 10) == [[1, 0, 2], [2, 0, 1]]


def _suite() -> EvalSuite:
    passages = (
        "The invoice approval limit is ten thousand euros.",
        "Pepper the cat hates thunderstorms.",
        "Rotate the TLS certificates every ninety days.",
    )
    task = CategoryTask(
        MemoryCategory.SEMANTIC,
        (
            EvalQuery("invoice approval limit euros", frozenset({"p0"})),
            EvalQuery("cat thunderstorms", frozenset({"p1"})),
        ),
        ("p0", "p1", "p2"),
        passages,
    )
    return EvalSuite("test", {MemoryCategory.SEMANTIC: task})


def test_evaluate_embedder_scores_perfect_lexical_matches() -> None:
    report = evaluate_embedder(HashingEmbedder(), _suite(), spec="hashing")
    (result,) = report.categories
    assert (result.queries, result.passages) == (2, 3)
    assert result.ndcg_at_10 == pytest.approx(1.0)
    assert result.recall_at_10 == pytest.approx(1.0)
    assert report.embeddings_per_second > 0
    assert report.model_id == "hashing-v1-256"


def test_evaluate_embedders_reports_a_broken_embedder_and_continues(minilm: Embedder) -> None:
    def factory(spec: str) -> Embedder:
        if spec == "broken":
            raise RuntimeError("no such model")
        return minilm

    reports = evaluate_embedders(["broken", "minilm"], _suite(), factory=factory)
    assert reports[0].error == "no such model"
    assert reports[1].error is None
    assert reports[1].categories[0].recall_at_10 == pytest.approx(1.0)
    table = render_reports(reports, _suite())
    assert re.search(r"^broken +error: no such model$", table, re.MULTILINE)
    assert "semantic nDCG/R@10" in table
    assert "1.000/1.000" in table


def test_available_specs_include_bundled_models() -> None:
    specs = available_embedder_specs({})
    assert specs[:2] == ["minilm", "minilm-numpy"]
    assert "hashing" in specs
    assert not any(s.startswith("openai:") for s in specs)
    remote = available_embedder_specs(
        {"MEMVAULT_EMBEDDINGS_BASE_URL": "http://x", "MEMVAULT_EMBEDDINGS_MODEL": "m"}
    )
    assert remote[-1] == "openai:m"
