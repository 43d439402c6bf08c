"""The HNSW graph of large agents: recall, persistence, rebuilds, isolation, filters."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memvault.backends.sqlite import SQLiteBackend, _ann
from memvault.backends.sqlite._ann import AnnSettings
from memvault.backends.sqlite.vector_index import NEVER, AgentIndex, IndexRow
from memvault.embeddings import HashingEmbedder
from memvault.models import MemoryCategory, MemoryQuery, MemoryStoreRequest

DIM = 32


@pytest.fixture
def ann() -> AnnSettings:
    """The settings a test's indexes and stores get (each test its own, to change as it likes):
    ANN for every index of 200+ rows, synchronously (deterministic tests), with small chunks so
    builds, reconciles and catch-ups cross chunk boundaries."""
    return AnnSettings(min_rows=200, background=False, build_threads=1, chunk=128)


def rows(start: int, n: int, *, category: int = 0) -> list[IndexRow]:
    return [
        IndexRow(start + i, category, 1000 + i, 1000 + i, NEVER, NEVER, False) for i in range(n)
    ]


def clustered(rng: np.random.Generator, n: int) -> np.ndarray:
    centres = rng.normal(size=(20, DIM))
    v = centres[rng.integers(0, 20, n)] + rng.normal(scale=0.5, size=(n, DIM))
    v = v.astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def mask(index: AgentIndex, categories: list[int] | None = None) -> np.ndarray:
    return index.mask(
        now_us=0,
        categories=categories,
        since_us=None,
        until_us=None,
        as_of_us=None,
        include_superseded=False,
        allowed_rowids=None,
    )


def exact(index: AgentIndex, q: np.ndarray, m: np.ndarray, k: int) -> list[int]:
    graph, index.ann = index.ann, None
    try:
        return [r for r, _ in index.search(q, m, k)]
    finally:
        index.ann = graph


def build(
    ann: AnnSettings, db: Path, vecs: np.ndarray, key: str = "a", start: int = 1
) -> AgentIndex:
    index = AgentIndex(DIM, ann=ann)
    index.add(rows(start, len(vecs)), vecs)
    index.enable_ann(db, key)
    return index


def recall(index: AgentIndex, queries: np.ndarray, k: int = 10) -> float:
    hits = 0
    for q in queries:
        m = mask(index)
        got = {r for r, _ in index.search(q, m, k)}
        hits += len(got & set(exact(index, q, m, k)))
    return hits / (k * len(queries))


def test_graph_is_built_saved_and_recalls(tmp_path: Path, ann: AnnSettings) -> None:
    rng = np.random.default_rng(1)
    db = tmp_path / "m.db"
    index = build(ann, db, clustered(rng, 2000))
    assert index.ann is not None and len(index.ann) == 2000
    graph_file, sidecar = _ann.index_paths(db, "a")
    assert graph_file.exists() and sidecar.exists()
    assert recall(index, clustered(rng, 50)) >= 0.97
    # Scores are exact cosines, best first.
    q = clustered(rng, 1)[0]
    got = index.search(q, mask(index), 10)
    assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
    vec = index.vector(got[0][0])
    assert vec is not None and abs(float(vec @ q) - got[0][1]) < 1e-5


def test_small_agents_stay_exact(tmp_path: Path, ann: AnnSettings) -> None:
    index = build(ann, tmp_path / "m.db", clustered(np.random.default_rng(2), 150))
    assert index.ann is None
    assert not (tmp_path / "m.db.ann").exists()


def test_incremental_adds_and_deletes_reach_the_graph(tmp_path: Path, ann: AnnSettings) -> None:
    rng = np.random.default_rng(3)
    index = build(ann, tmp_path / "m.db", clustered(rng, 1000))
    fresh = clustered(rng, 5)
    index.add(rows(5000, 5), fresh)
    assert index.ann is not None and len(index.ann) == 1005
    assert index.search(fresh[2], mask(index), 1)[0][0] == 5002
    index.remove([5002, 1, 2, 3])
    got = [r for r, _ in index.search(fresh[2], mask(index), 10)]
    assert 5002 not in got and not {1, 2, 3} & set(got)


def test_agent_crossing_the_threshold_gets_a_graph(tmp_path: Path, ann: AnnSettings) -> None:
    rng = np.random.default_rng(4)
    index = build(ann, tmp_path / "m.db", clustered(rng, 150))
    assert index.ann is None
    index.add(rows(1000, 60), clustered(rng, 60))
    index.search(clustered(rng, 1)[0], mask(index), 5)
    assert index.ann is not None and len(index.ann) == 210


def test_missing_file_is_rebuilt(tmp_path: Path, ann: AnnSettings) -> None:
    rng = np.random.default_rng(5)
    db = tmp_path / "m.db"
    vecs = clustered(rng, 1000)
    build(ann, db, vecs)
    graph_file, sidecar = _ann.index_paths(db, "a")
    graph_file.unlink()
    again = build(ann, db, vecs)
    assert again.ann is not None and len(again.ann) == 1000
    assert graph_file.exists() and sidecar.exists()


def test_stale_file_is_reconciled_with_the_rows(tmp_path: Path, ann: AnnSettings) -> None:
    rng = np.random.default_rng(6)
    db = tmp_path / "m.db"
    vecs = clustered(rng, 1000)
    build(ann, db, vecs)
    # Meanwhile (another process, a crash before the save): rows 1..50 deleted, 50 added, and
    # rowid 100 reused for another vector.
    changed = vecs.copy()
    other = clustered(rng, 1)[0]
    changed[99] = other
    index = AgentIndex(DIM, ann=ann)
    index.add(rows(51, 950), changed[50:])
    index.add(rows(2000, 50), clustered(rng, 50))
    loaded = _ann.AnnGraph.load(*_ann.index_paths(db, "a"), DIM, conf=ann)
    assert loaded is not None and len(loaded) == 1000
    index.enable_ann(db, "a")
    graph = index.ann
    assert graph is not None and len(graph) == 1000
    keys = set(np.asarray(graph.index.keys).tolist())
    assert keys == set(range(51, 1001)) | set(range(2000, 2050))
    assert index.search(other, mask(index), 1)[0][0] == 100
    assert recall(index, clustered(rng, 30)) >= 0.97


@pytest.mark.parametrize("damage", ["truncate", "flip", "sidecar", "foreign-dim"])
def test_corrupt_file_is_rebuilt_not_fatal(tmp_path: Path, damage: str, ann: AnnSettings) -> None:
    rng = np.random.default_rng(7)
    db = tmp_path / "m.db"
    vecs = clustered(rng, 1000)
    build(ann, db, vecs)
    graph_file, sidecar = _ann.index_paths(db, "a")
    data = graph_file.read_bytes()
    if damage == "truncate":
        graph_file.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        mid = len(data) // 2
        graph_file.write_bytes(data[:mid] + bytes(64) + data[mid + 64 :])
    elif damage == "sidecar":
        sidecar.write_text("{not json")
    else:
        sidecar.write_text(sidecar.read_text().replace(f'"dim": {DIM}', '"dim": 7'))
    assert _ann.AnnGraph.load(graph_file, sidecar, DIM, conf=ann) is None
    index = build(ann, db, vecs)
    assert index.ann is not None and len(index.ann) == 1000
    assert recall(index, clustered(rng, 20)) >= 0.97
    assert _ann.AnnGraph.load(graph_file, sidecar, DIM, conf=ann) is not None


def test_load_failure_inside_the_library_means_exact_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ann: AnnSettings
) -> None:
    def boom(*args: object) -> _ann.AnnGraph:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(_ann, "load_or_build", boom)
    rng = np.random.default_rng(8)
    index = build(ann, tmp_path / "m.db", clustered(rng, 500))
    q = clustered(rng, 1)[0]
    assert [r for r, _ in index.search(q, mask(index), 5)] == exact(index, q, mask(index), 5)
    assert index.ann is None


def test_filters_post_filter_or_fall_back_to_exact(tmp_path: Path, ann: AnnSettings) -> None:
    rng = np.random.default_rng(9)
    index = AgentIndex(DIM, ann=ann)
    vecs = clustered(rng, 2000)
    # Category 1 for 90% of rows (mild filter), category 2 for 2% (selective filter).
    cats = np.where(np.arange(2000) % 50 == 0, 2, np.where(np.arange(2000) % 10 == 0, 3, 1))
    for i in range(2000):
        index.add(rows(i + 1, 1, category=int(cats[i])), vecs[i : i + 1])
    index.enable_ann(tmp_path / "m.db", "a")
    assert index.ann is not None
    for cat in (1, 2):
        hits = 0
        for q in clustered(rng, 20):
            m = mask(index, [cat])
            got = [r for r, _ in index.search(q, m, 10)]
            assert all(cats[r - 1] == cat for r in got)
            assert len(got) == 10
            hits += len(set(got) & set(exact(index, q, m, 10)))
        assert hits / 200 >= 0.97, cat


def test_kill_during_save_leaves_a_loadable_store(tmp_path: Path, ann: AnnSettings) -> None:
    """SIGKILL between writing the graph and its sidecar: the pair never validates."""
    rng = np.random.default_rng(10)
    db = tmp_path / "m.db"
    vecs = clustered(rng, 500)
    np.save(tmp_path / "v.npy", vecs)
    build(ann, db, vecs)
    script = textwrap.dedent(
        f"""
        import os, signal, sys
        import numpy as np
        from memvault.backends.sqlite import _ann
        real_replace = os.replace
        def replace(src, dst):
            real_replace(src, dst)
            if str(dst).endswith(".usearch"):
                os.kill(os.getpid(), signal.SIGKILL)
        os.replace = replace
        vecs = np.load({str(tmp_path / "v.npy")!r})[:300]
        graph = _ann.AnnGraph.build({DIM}, np.arange(1, 301), lambda a, b: vecs[a:b])
        graph.save(*_ann.index_paths(__import__("pathlib").Path({str(db)!r}), "a"))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, env=os.environ)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    graph_file, sidecar = _ann.index_paths(db, "a")
    assert graph_file.exists() and not sidecar.exists()
    assert _ann.AnnGraph.load(graph_file, sidecar, DIM, conf=ann) is None
    index = build(ann, db, vecs)
    assert index.ann is not None and len(index.ann) == 500
    assert recall(index, clustered(rng, 10)) >= 0.97


async def test_backend_agents_are_isolated_and_graphs_persist(
    tmp_path: Path, ann: AnnSettings
) -> None:
    path = tmp_path / "m.db"
    emb = HashingEmbedder(dimension=64)
    b = SQLiteBackend(path, emb, ann=ann)
    await b.connect()
    try:
        for agent in ("alice", "bob"):
            await b.store_many(
                agent,
                [
                    MemoryStoreRequest(content=f"{agent} note {i} about topic {i % 17} and colour")
                    for i in range(260)
                ],
            )
        for agent, other in (("alice", "bob"), ("bob", "alice")):
            cands = await b.search_candidates(
                agent, MemoryQuery(text="note about topic 3 and colour"), pool=40
            )
            assert len(cands.dense) == 40
            assert all(cands.entries[i].agent_id == agent for i, _ in cands.dense)
            assert all(other not in cands.entries[i].content for i, _ in cands.dense)
        assert b._indexes["alice"].ann is not None
        await b.store("alice", MemoryStoreRequest(content="a brand new zebra fact"))
        q = MemoryQuery(text="brand new zebra fact", categories=[MemoryCategory.SEMANTIC])
        await b.search_candidates("alice", q, pool=5)
    finally:
        await b.disconnect()
    # The changed graph was saved on disconnect; a reopened store loads it and stays isolated.
    assert len(list((tmp_path / "m.db.ann").glob("*.usearch"))) == 2
    b = SQLiteBackend(path, emb, ann=ann)
    await b.connect()
    try:
        cands = await b.search_candidates("alice", MemoryQuery(text="brand new zebra"), pool=10)
        top = cands.entries[cands.dense[0][0]]
        assert top.content == "a brand new zebra fact"
        assert all(cands.entries[i].agent_id == "alice" for i, _ in cands.dense)
        graph = b._indexes["alice"].ann
        assert graph is not None and len(graph) == 261
    finally:
        await b.disconnect()


def test_usearch_then_onnxruntime_imports_do_not_crash() -> None:
    """usearch 2.25+ (numkong) segfaults when onnxruntime is imported after it."""
    proc = subprocess.run(
        [sys.executable, "-c", "import usearch.index, onnxruntime"], capture_output=True
    )
    assert proc.returncode == 0, proc.stderr[-500:]


def test_background_build_replays_writes_made_meanwhile(tmp_path: Path, ann: AnnSettings) -> None:
    ann.background = True
    rng = np.random.default_rng(11)
    index = build(ann, tmp_path / "m.db", clustered(rng, 1000))
    pending = index._ann_pending
    assert pending is not None and index.ann is None
    # Searches while the graph is pending are exact.
    q = clustered(rng, 1)[0]
    fresh = clustered(rng, 3)
    index.add(rows(3000, 3), fresh)
    index.remove([3001, 5, 6, 7])
    index.add(rows(3001, 1), fresh[1:2] * -1)  # rowid reused for another vector
    pending.result(timeout=60)
    got = index.search(q, mask(index), 10)
    graph = index.ann
    assert graph is not None
    live = set(index.rowids[: index.n][index.alive[: index.n]].tolist())
    assert set(np.asarray(graph.index.keys).tolist()) == live
    assert [r for r, _ in got] == exact(index, q, mask(index), 10)
    assert index.search(-fresh[1], mask(index), 1)[0][0] == 3001


def hold_builds(monkeypatch: pytest.MonkeyPatch, ann: AnnSettings) -> threading.Event:
    """Build ``ann``'s graphs in the background, each waiting for the returned event before it
    starts."""
    ann.background = True
    gate = threading.Event()
    real_build = _ann.load_or_build

    def gated(*args: Any, **kwargs: Any) -> _ann.AnnGraph:
        gate.wait(30)
        return real_build(*args, **kwargs)

    monkeypatch.setattr(_ann, "load_or_build", gated)
    return gate


def test_a_long_backlog_is_caught_up_in_the_background_not_on_a_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ann: AnnSettings
) -> None:
    """Rows written while the graph builds are added later in one background batch; a search
    that finds the build done with a long backlog stays exact instead of replaying it."""
    gate = hold_builds(monkeypatch, ann)
    # The catch-up is held too: 303 rows are added in a few milliseconds, and on a loaded
    # machine it could finish before the search below looks, attaching the graph at once.
    release = threading.Event()
    real_catch_up = _ann.catch_up

    def held_catch_up(*args: Any) -> Future[_ann.AnnGraph]:
        out: Future[_ann.AnnGraph] = Future()

        def run() -> None:
            release.wait(30)
            try:
                out.set_result(real_catch_up(*args).result())
            except Exception as exc:  # handed to the waiting search, as the real one does
                out.set_exception(exc)

        threading.Thread(target=run, daemon=True).start()
        return out

    monkeypatch.setattr(_ann, "catch_up", held_catch_up)
    rng = np.random.default_rng(21)
    index = build(ann, tmp_path / "m.db", clustered(rng, 400))
    index.add(rows(5000, 300), clustered(rng, 300))  # during the build
    index.remove([1, 2, 3])
    gate.set()
    pending = index._ann_pending
    assert pending is not None
    pending.result(timeout=30)
    q = clustered(rng, 1)[0]
    # The build is done but 303 writes wait: this search attaches nothing and is exact.
    assert [r for r, _ in index.search(q, mask(index), 5)] == exact(index, q, mask(index), 5)
    catching_up = index._ann_pending
    assert index.ann is None and catching_up is not None
    release.set()
    catching_up.result(timeout=30)
    index.search(q, mask(index), 5)
    graph = index.ann
    assert graph is not None
    keys = set(np.asarray(graph.index.keys).tolist())
    assert keys == set(range(4, 401)) | set(range(5000, 5300))
    assert recall(index, clustered(rng, 20)) >= 0.97


@pytest.fixture
def large_from_600(ann: AnnSettings) -> None:
    """Agents of 600+ rows count as large (the denser graph shape)."""
    ann.large_rows = 600


@pytest.mark.usefixtures("large_from_600")
def test_large_agents_get_a_denser_graph_and_a_wider_beam(tmp_path: Path, ann: AnnSettings) -> None:
    rng = np.random.default_rng(11)
    small = build(ann, tmp_path / "s.db", clustered(rng, 400))
    large = build(ann, tmp_path / "l.db", clustered(rng, 800))
    assert small.ann is not None and large.ann is not None
    assert small.ann.index.connectivity == ann.connectivity
    assert large.ann.index.connectivity == ann.large_connectivity
    q = clustered(rng, 1)[0]
    small.search(q, mask(small), 10)
    large.search(q, mask(large), 10)
    assert small.ann.index.expansion_search < large.ann.index.expansion_search
    assert recall(large, clustered(rng, 30)) >= 0.97


@pytest.mark.usefixtures("large_from_600")
def test_a_graph_saved_small_is_rebuilt_denser_once_the_agent_is_large(
    tmp_path: Path, ann: AnnSettings
) -> None:
    rng = np.random.default_rng(12)
    db = tmp_path / "m.db"
    vecs = clustered(rng, 700)
    first = build(ann, db, vecs[:500])
    assert first.ann is not None
    assert first.ann.index.connectivity == ann.connectivity
    # Reopened with 700 rows: reconciling would patch the sparse graph; it is rebuilt instead.
    again = build(ann, db, vecs)
    assert again.ann is not None and len(again.ann) == 700
    assert again.ann.index.connectivity == ann.large_connectivity
    # Shrinking back below the bar keeps the denser graph (no rebuild back and forth).
    third = build(ann, db, vecs[:550])
    assert third.ann is not None and len(third.ann) == 550
    assert third.ann.index.connectivity == ann.large_connectivity
    # Loaded from disk, it still adds rows with the denser graph's build beam.
    assert third.ann.index.expansion_add == ann.large_expansion_add


def test_graph_stores_int8_and_an_unchanged_reopen_patches_nothing(
    tmp_path: Path, ann: AnnSettings
) -> None:
    from usearch.index import ScalarKind

    rng = np.random.default_rng(13)
    db = tmp_path / "m.db"
    vecs = clustered(rng, 1000)
    index = build(ann, db, vecs)
    assert index.ann is not None and index.ann.index.dtype == ScalarKind.I8
    # The graph's copies are truncated to 1/127: reconciling them with the exact vectors must
    # not count every row as changed (which would rebuild the graph at every open).
    loaded = _ann.AnnGraph.load(*_ann.index_paths(db, "a"), DIM, conf=ann)
    assert loaded is not None
    rowids = np.arange(1, 1001, dtype=np.int64)
    assert loaded.reconcile(rowids, lambda a, b: vecs[a:b])
    assert not loaded.dirty and len(loaded) == 1000
    assert recall(index, clustered(rng, 30)) >= 0.97


def test_a_graph_of_another_scalar_kind_is_rebuilt(tmp_path: Path, ann: AnnSettings) -> None:
    from usearch.index import ScalarKind

    rng = np.random.default_rng(14)
    db = tmp_path / "m.db"
    vecs = clustered(rng, 600)
    ann.scalar = "f32"
    first = build(ann, db, vecs)
    assert first.ann is not None and first.ann.index.dtype == ScalarKind.F32
    ann.scalar = "i8"
    assert _ann.AnnGraph.load(*_ann.index_paths(db, "a"), DIM, conf=ann) is None
    again = build(ann, db, vecs)
    assert again.ann is not None and again.ann.index.dtype == ScalarKind.I8
    assert len(again.ann) == 600
    assert _ann.AnnGraph.load(*_ann.index_paths(db, "a"), DIM, conf=ann) is not None


@pytest.mark.usefixtures("large_from_600")
def test_an_agent_growing_past_the_bar_gets_the_denser_graph_while_running(
    tmp_path: Path, ann: AnnSettings
) -> None:
    rng = np.random.default_rng(15)
    db = tmp_path / "m.db"
    index = build(ann, db, clustered(rng, 500))
    assert index.ann is not None
    assert index.ann.index.connectivity == ann.connectivity
    index.add(rows(1000, 50), clustered(rng, 50))  # 550: still below the bar
    assert index.ann.index.connectivity == ann.connectivity
    index.add(rows(2000, 100), clustered(rng, 100))  # 650: rebuilt denser (synchronously here)
    graph = index.ann
    assert graph is not None and graph.index.connectivity == ann.large_connectivity
    live = set(index.rowids[: index.n][index.alive[: index.n]].tolist())
    assert set(np.asarray(graph.index.keys).tolist()) == live
    assert recall(index, clustered(rng, 30)) >= 0.97
    # Saved in the denser shape: a reopen loads it instead of building again.
    loaded = _ann.AnnGraph.load(*_ann.index_paths(db, "a"), DIM, conf=ann)
    assert loaded is not None and loaded.index.connectivity == ann.large_connectivity


@pytest.mark.usefixtures("large_from_600")
def test_the_old_graph_answers_and_takes_writes_while_the_denser_one_builds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ann: AnnSettings
) -> None:
    rng = np.random.default_rng(16)
    index = build(ann, tmp_path / "m.db", clustered(rng, 590))
    old = index.ann
    assert old is not None
    gate = hold_builds(monkeypatch, ann)
    index.add(rows(1000, 20), clustered(rng, 20))  # 610 rows: the rebuild starts, held
    pending = index._ann_pending
    assert pending is not None and index.ann is old
    fresh = clustered(rng, 2)
    index.add(rows(3000, 2), fresh)  # during the rebuild: the old graph takes it ...
    index.remove([1, 2])
    assert {3000, 3001} <= set(np.asarray(old.index.keys).tolist())
    q = fresh[0]
    assert index.search(q, mask(index), 1)[0][0] == 3000  # ... and answers
    assert index.ann is old
    # Closing now leaves the file to the rebuild: the old graph is not written over it.
    graph_file, _ = _ann.index_paths(tmp_path / "m.db", "a")
    before = graph_file.read_bytes()
    assert old.dirty
    index.persist_ann()
    assert graph_file.read_bytes() == before
    gate.set()
    pending.result(timeout=60)
    index.search(q, mask(index), 1)
    graph = index.ann
    assert graph is not None and graph is not old
    assert graph.index.connectivity == ann.large_connectivity
    live = set(index.rowids[: index.n][index.alive[: index.n]].tolist())
    assert set(np.asarray(graph.index.keys).tolist()) == live  # the writes were replayed
    assert index.search(q, mask(index), 1)[0][0] == 3000
