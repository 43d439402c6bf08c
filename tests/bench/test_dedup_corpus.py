"""The noisy-write corpus of ``benchmarks/_dedup_corpus.py``: generation, ground truth, replay
and evaluation."""

from __future__ import annotations

import importlib.util
import sys
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from types import ModuleType

import pytest

from memvault.embeddings.hashing import HashingEmbedder
from memvault.models import MemoryCategory
from memvault.protocols import Embedder
from memvault.write.dedup import normalise_text
from memvault.write.pipeline import WriteDecision, WriteKind

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def _load_sibling(name: str) -> ModuleType:
    """A module of ``benchmarks/`` (not a package), loaded from its file.

    Registered under the name the benchmark scripts import it by (``from _dedup_corpus import``),
    so the dataclasses resolve their module and a script loaded later shares it.
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


_dc = _load_sibling("_dedup_corpus")
Corpus = _dc.Corpus
CorpusWrite = _dc.CorpusWrite
TruthKind = _dc.TruthKind
corpus_id = _dc.corpus_id
evaluate_dedup = _dc.evaluate_dedup
generate_corpus = _dc.generate_corpus
run_corpus = _dc.run_corpus

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return generate_corpus(600, seed=7)


def test_generation_is_deterministic_and_sized(corpus: Corpus) -> None:
    again = generate_corpus(600, seed=7)
    assert again == corpus
    assert len(corpus) == 600
    assert generate_corpus(600, seed=8) != corpus
    counts = corpus.counts()
    assert set(counts) == {"base", "duplicate", "contradiction", "chatter"}
    assert counts["duplicate"] > 0.3 * len(corpus)
    assert counts["contradiction"] > 0.05 * len(corpus)
    assert counts["chatter"] > 0
    with pytest.raises(ValueError, match="n_writes"):
        generate_corpus(0)


def test_writes_are_in_time_order_with_consistent_truth(corpus: Corpus) -> None:
    writes = corpus.writes
    assert [w.index for w in writes] == list(range(len(writes)))
    assert all(a.created_at <= b.created_at for a, b in pairwise(writes))
    for w in writes:
        if w.kind is TruthKind.DUPLICATE:
            first = writes[w.duplicate_of or 0]
            assert w.duplicate_of is not None and w.duplicate_of < w.index
            assert (first.fact, first.version, first.value) == (w.fact, w.version, w.value)
            assert first.kind in (TruthKind.BASE, TruthKind.CONTRADICTION)
            assert w.noise, "a duplicate is always noisy"
            assert first.agent_id == w.agent_id and first.category is w.category
        elif w.kind is TruthKind.CONTRADICTION:
            assert w.supersedes is not None
            prev = writes[w.supersedes]
            assert prev.fact == w.fact and prev.version == w.version - 1
            assert prev.value != w.value
        elif w.kind is TruthKind.BASE:
            assert w.duplicate_of is None and w.version == 0
    # Requests carry the write's category and time.
    req = writes[0].request()
    assert req.category is writes[0].category and req.created_at == writes[0].created_at


def test_noise_kinds_all_occur() -> None:
    big = generate_corpus(1500, seed=3)
    ops = {op for w in big.writes if w.kind is TruthKind.DUPLICATE for op in w.noise}
    assert ops == {"case", "punctuation", "spaces", "filler", "typo", "reorder"}
    # Paraphrase-free: without typos a duplicate normalises to its original exactly, up to
    # clause order.
    for w in big.writes:
        if w.kind is TruthKind.DUPLICATE and not {"typo", "reorder"} & set(w.noise):
            original = big.writes[w.duplicate_of or 0].content
            assert normalise_text(w.content) == normalise_text(original), (w.content, original)


def test_recurring_episodes_are_days_apart() -> None:
    big = generate_corpus(1500, seed=3)
    firsts: dict[tuple[str, str], list[datetime]] = {}
    for w in big.writes:
        if w.category is MemoryCategory.EPISODIC and w.kind is TruthKind.BASE:
            firsts.setdefault((w.agent_id, w.content), []).append(w.created_at)
    recurring = [times for times in firsts.values() if len(times) > 1]
    assert recurring
    for times in recurring:
        times.sort()
        assert all(b - a >= timedelta(days=2) for a, b in pairwise(times))


def test_replay_with_hashing_embedder_meets_the_targets(corpus: Corpus) -> None:
    vectors = HashingEmbedder(256).embed_documents([w.content for w in corpus.writes])
    decisions = run_corpus(corpus, vectors)
    assert len(decisions) == len(corpus)
    report = evaluate_dedup(decisions, corpus)
    assert report["duplicates_left_pct"] <= 2.0
    assert report["duplicate_writes_missed_pct"] <= 2.0
    assert report["contradictions_resolved_pct"] >= 80.0
    assert report["false_supersessions"] == 0
    assert report["false_noops"] <= 0.005 * len(corpus)
    assert report["rejected"] == 0  # no admission controller


def test_replay_with_admission_rejects_chatter(corpus: Corpus) -> None:
    from memvault.write.admission import AdmissionController

    vectors = HashingEmbedder(256).embed_documents([w.content for w in corpus.writes])
    report = evaluate_dedup(run_corpus(corpus, vectors, admission=AdmissionController()), corpus)
    assert report["rejected_chatter"] >= 0.8 * report["chatter"]
    assert report["rejected_facts"] <= 0.05 * (report["writes"] - report["chatter"])


def test_replay_checks_lengths(corpus: Corpus) -> None:
    with pytest.raises(ValueError, match="vectors"):
        run_corpus(corpus, [])
    with pytest.raises(ValueError, match="decisions"):
        evaluate_dedup([], corpus)


def _w(index: int, kind: TruthKind, fact: str, version: int, value: str) -> CorpusWrite:
    return CorpusWrite(
        index=index,
        agent_id="a",
        category=MemoryCategory.SEMANTIC,
        content=f"{fact} {value}",
        created_at=T0 + timedelta(minutes=index),
        kind=kind,
        fact=fact,
        version=version,
        value=value,
    )


def test_evaluate_dedup_by_hand() -> None:
    truth = [
        _w(0, TruthKind.BASE, "mode", 0, "dark"),
        _w(1, TruthKind.DUPLICATE, "mode", 0, "dark"),
        _w(2, TruthKind.DUPLICATE, "mode", 0, "dark"),
        _w(3, TruthKind.BASE, "city", 0, "paris"),
        _w(4, TruthKind.CONTRADICTION, "mode", 1, "light"),
        _w(5, TruthKind.CONTRADICTION, "city", 1, "rome"),
        _w(6, TruthKind.BASE, "editor", 0, "vim"),
        _w(7, TruthKind.CHATTER, "chatter", 0, "ok"),
    ]
    add = WriteDecision(kind=WriteKind.ADD)
    decisions = [
        add,
        WriteDecision(kind=WriteKind.NOOP, duplicate_of=corpus_id(0)),  # caught
        add,  # missed: a duplicate left
        add,
        WriteDecision(kind=WriteKind.SUPERSEDE, old_id=corpus_id(0)),  # resolved
        add,  # missed contradiction: paris is stale
        WriteDecision(kind=WriteKind.SUPERSEDE, old_id=corpus_id(3)),  # false supersession
        WriteDecision(kind=WriteKind.REJECT, reason="chatter"),
    ]
    r = evaluate_dedup(decisions, truth)
    assert r["duplicates"] == 2 and r["contradictions"] == 2
    assert r["duplicates_caught"] == 1
    assert r["duplicate_writes_missed"] == 1
    assert r["duplicate_writes_missed_pct"] == 50.0
    assert r["contradictions_resolved"] == 1
    assert r["contradictions_resolved_pct"] == 50.0
    assert r["false_supersessions"] == 1
    assert r["false_noops"] == 0
    assert r["rejected_chatter"] == 1 and r["rejected_facts"] == 0
    # Live at the end: w2 (mode dark, stale), w4 (mode light), w5 (city rome), w6 (editor).
    assert r["live_entries"] == 4
    assert r["stale_left"] == 1
    assert r["duplicates_left"] == 0
    # Explicit ids: write i stored as "x<i>".
    ids = [f"x{i}" for i in range(len(truth))]
    renamed = [
        d.model_copy(
            update={
                "duplicate_of": d.duplicate_of and d.duplicate_of.replace("w00000", "x"),
                "old_id": d.old_id and d.old_id.replace("w00000", "x"),
            }
        )
        for d in decisions
    ]
    assert evaluate_dedup(renamed, truth, ids=ids) == r


def test_false_noop_counts_information_lost() -> None:
    truth = [
        _w(0, TruthKind.BASE, "budget", 0, "500"),
        _w(1, TruthKind.CONTRADICTION, "budget", 1, "600"),
    ]
    decisions = [
        WriteDecision(kind=WriteKind.ADD),
        WriteDecision(kind=WriteKind.NOOP, duplicate_of=corpus_id(0)),
    ]
    r = evaluate_dedup(decisions, truth)
    assert r["false_noops"] == 1
    assert r["contradictions_resolved"] == 0


def test_replay_with_the_real_model(minilm: Embedder) -> None:
    small = generate_corpus(200, seed=11)
    vectors = minilm.embed_documents([w.content for w in small.writes])
    report = evaluate_dedup(run_corpus(small, vectors), small)
    assert report["duplicates_left_pct"] <= 2.0
    assert report["false_supersessions"] == 0
    assert report["false_noops"] <= 1
    assert report["contradictions_resolved_pct"] >= 80.0
