"""The SQLite store's in-process lexical index against FTS5's own ``bm25()``, the oracle.

The index replaced an FTS5 ``MATCH ... ORDER BY bm25()`` query; it must return the same rows in
the same order with the same scores, under every filter, for every scope, after deletes,
supersession, compaction and writes from another process.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memvault.backends._base import SHARED_KEY
from memvault.backends.sqlite import SQLiteBackend
from memvault.backends.sqlite._rows import _fts_scope_key, _scope_sql, _where, to_us
from memvault.backends.sqlite.lexical_index import LexicalIndex, parse_fts_averages
from memvault.models import MemoryCategory, MemoryQuery, MemoryStoreRequest
from memvault.protocols import Embedder
from memvault.retrieval.text import query_terms

VOCAB = (
    "apple pear rust compiler python typing coffee deploy cache leak login token database "
    "index query latency budget sprint review meeting berlin office garden bicycle concert "
    "painting novel hiking camping kitchen recipe café naïve résumé zürich"
).split()


def fts5_oracle(
    path: Path, agent_id: str, query: MemoryQuery, terms: list[str], pool: int, now: datetime
) -> list[tuple[int, float]]:
    """The lexical candidates as the store computed them before: FTS5 MATCH and bm25()."""
    conn = sqlite3.connect(path)
    try:
        where, params = _where(query, to_us(now))
        scope, scope_params = _scope_sql(agent_id)
        key = "shared" if agent_id == SHARED_KEY else _fts_scope_key(agent_id)
        match = " OR ".join(f'"{t}"' for t in terms)
        rows = conn.execute(
            "SELECT m.rowid, bm25(memories_fts, 1.0, 0.0) AS s FROM memories_fts"
            " JOIN memories m ON m.rowid = memories_fts.rowid"
            f" WHERE memories_fts MATCH ? AND {scope} AND {where}"
            " ORDER BY s, m.rowid DESC LIMIT ?",
            [f'scope_key : "{key}" AND body : ({match})', *scope_params, *params, pool],
        ).fetchall()
    finally:
        conn.close()
    return [(int(r[0]), -float(r[1])) for r in rows]


def texts(rng: random.Random, n: int) -> list[str]:
    # Zipf-like choice, so some terms are in most rows and others in a few.
    weights = [1.0 / (i + 1) for i in range(len(VOCAB))]
    return [" ".join(rng.choices(VOCAB, weights, k=rng.randint(1, 16))) for _ in range(n)]


async def test_lexical_candidates_equal_fts5_bm25(tmp_path: Path, minilm: Embedder) -> None:
    rng = random.Random(7)
    path = tmp_path / "lex.db"
    # Indexes load in chunks of 7 rows here, so chunk boundaries are crossed.
    backend = SQLiteBackend(path, minilm, load_chunk=7)
    await backend.connect()
    try:
        for agent in ("alice", "bob"):
            await backend.store_many(
                agent, [MemoryStoreRequest(content=t) for t in texts(rng, 150)]
            )
        await backend.store_many(
            "carol",
            [
                MemoryStoreRequest(content=t, category=MemoryCategory.SEMANTIC)
                for t in texts(rng, 40)
            ],
        )
        queries = [" ".join(rng.sample(VOCAB, rng.randint(1, 5))) for _ in range(40)]
        queries += ["apple apple pear", "cafe resume zurich", "nothing matches this xyzzy"]
        now = datetime.now(UTC)

        async def check(agent: str, query: MemoryQuery, pool: int = 12) -> int:
            terms = query_terms(query.text or "")
            got = await backend._run(backend._candidates_sync, agent, query, None, terms, pool, now)
            oracle = fts5_oracle(path, agent, query, terms, pool, now)
            by_id = {e.id: e for e in got.entries.values()}
            rowid_of = _rowids(path, list(by_id))
            mine = [(rowid_of[i], s) for i, s in got.lexical]
            assert [r for r, _ in mine] == [r for r, _ in oracle], query.text
            assert [s for _, s in mine] == pytest.approx([s for _, s in oracle], rel=1e-12)
            return len(mine)

        found = 0
        for q in queries:
            found += await check("alice", MemoryQuery(text=q))
            found += await check("carol", MemoryQuery(text=q, categories=[MemoryCategory.SEMANTIC]))
        assert found > 200  # the queries really match things

        # Inserts by this store keep its cached document frequencies exact.
        for _ in range(3):
            await backend.store_many("bob", [MemoryStoreRequest(content=t) for t in texts(rng, 20)])
            for q in queries[:15]:
                await check("alice", MemoryQuery(text=q))

        # Deletes (enough to compact the index), a write from another process, then again.
        rows = [e async for e in backend.export_entries("alice")]
        for e in rows[: len(rows) // 2]:
            await backend.delete("alice", e.id)
        other = SQLiteBackend(path, minilm, load_chunk=7)
        await other.connect()
        await other.store_many("alice", [MemoryStoreRequest(content=t) for t in texts(rng, 30)])
        await other.disconnect()
        await backend.store_many("alice", [MemoryStoreRequest(content=t) for t in texts(rng, 30)])
        since = now - timedelta(days=1)
        for q in queries:
            await check("alice", MemoryQuery(text=q))
            await check("alice", MemoryQuery(text=q, since=since), pool=5)
    finally:
        await backend.disconnect()


def _rowids(path: Path, ids: list[str]) -> dict[str, int]:
    if not ids:
        return {}
    conn = sqlite3.connect(path)
    try:
        marks = ",".join("?" * len(ids))
        return dict(conn.execute(f"SELECT id, rowid FROM memories WHERE id IN ({marks})", ids))
    finally:
        conn.close()


async def test_the_averages_record_is_fts5s_row_and_token_count(
    tmp_path: Path, minilm: Embedder
) -> None:
    path = tmp_path / "avg.db"
    backend = SQLiteBackend(path, minilm)
    await backend.connect()
    try:
        await backend.store_many(
            "a", [MemoryStoreRequest(content=t) for t in texts(random.Random(3), 300)]
        )
        conn = sqlite3.connect(path)
        block = conn.execute("SELECT block FROM memories_fts_data WHERE id = 1").fetchone()[0]
        bodies = [r[0] for r in conn.execute("SELECT body FROM memories_fts")]
        conn.close()
    finally:
        await backend.disconnect()
    # Each row holds its analysed text plus a one-token scope key.
    assert parse_fts_averages(block) == (300, sum(len(b.split()) + 1 for b in bodies))


def test_varints_of_every_width_parse() -> None:
    def varint(v: int) -> bytes:  # SQLite's encoding: big-endian 7-bit groups
        out = [v & 0x7F]
        v >>= 7
        while v:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        return bytes(reversed(out))

    for rows, *columns in [(0, 0, 0), (127, 128, 1), (300_000, 16_383, 16_384), (2**40, 2**35, 5)]:
        block = b"".join(varint(v) for v in (rows, *columns))
        assert parse_fts_averages(block) == (rows, sum(columns))
    assert parse_fts_averages(b"") == (0, 0)


def test_bulk_and_row_by_row_loads_build_the_same_index() -> None:
    rng = random.Random(11)
    bodies = [" ".join(rng.choices(VOCAB[:12], k=rng.randint(0, 9))) for _ in range(3000)]
    bulk, single = LexicalIndex(), LexicalIndex()
    bulk.add(bodies)  # over the bulk threshold
    for start in range(0, len(bodies), 100):
        single.add(bodies[start : start + 100])
    rowids = np.arange(1, len(bodies) + 1, dtype=np.int64)
    mask = np.ones(len(bodies), dtype=np.bool_)
    terms = ["appl", "pear", "rust", "coffe", "cache"]
    idfs = [1.5, 0.7, 2.0, 0.1, 3.0]
    a = bulk.search(terms, idfs, 6.0, mask, rowids, 50)
    b = single.search(terms, idfs, 6.0, mask, rowids, 50)
    assert a == b and len(a) == 50
    assert bulk.postings == single.postings
    np.testing.assert_array_equal(bulk.lengths[: bulk.n], single.lengths[: single.n])


def test_compaction_keeps_the_survivors_postings() -> None:
    index = LexicalIndex()
    index.add(["apple pear", "pear", "apple apple", "rust"])
    index.compact(np.array([1, 2], dtype=np.int64))  # rows 0 and 3 are gone
    assert index.n == 2
    rowids = np.array([20, 30], dtype=np.int64)
    mask = np.ones(2, dtype=np.bool_)
    got = index.search(["apple", "pear"], [1.0, 1.0], 2.0, mask, rowids, 10)
    assert [r for r, _ in got] == [30, 20]  # "apple apple" (tf 2) beats "pear"
    assert index.search(["rust"], [1.0], 2.0, mask, rowids, 10) == []
    index.add(["rust rust"])
    got = index.search(["rust"], [1.0], 2.0, np.ones(3, dtype=np.bool_), np.array([20, 30, 40]), 5)
    assert [r for r, _ in got] == [40]


def test_ties_go_to_the_newest_row_and_the_mask_is_honoured() -> None:
    index = LexicalIndex()
    index.add(["same words"] * 6)
    rowids = np.array([5, 9, 2, 7, 1, 8], dtype=np.int64)
    mask = np.array([True, True, True, False, True, True])
    got = index.search(["same"], [1.0], 3.0, mask, rowids, 3)
    assert [r for r, _ in got] == [9, 8, 5]  # 7 is masked out
    assert len({s for _, s in got}) == 1


def test_compaction_of_base_and_tail_equals_a_fresh_index_of_the_survivors() -> None:
    rng = random.Random(5)
    bodies = [" ".join(rng.choices(VOCAB[:15], k=rng.randint(1, 8))) for _ in range(2600)]
    index = LexicalIndex()
    index.add(bodies[:2100])  # the base, in one sort
    for start in range(2100, 2600, 50):  # then the tail, 50 rows at a time
        index.add(bodies[start : start + 50])
    keep = np.arange(0, 2600, 3, dtype=np.int64)
    index.compact(keep)
    fresh = LexicalIndex()
    fresh.add([bodies[i] for i in keep])
    rowids = np.arange(len(keep), dtype=np.int64) * 7
    mask = np.ones(len(keep), dtype=np.bool_)
    terms, idfs = ["appl", "rust", "index", "token"], [1.0, 2.0, 0.5, 1.5]
    assert index.search(terms, idfs, 5.0, mask, rowids, 40) == fresh.search(
        terms, idfs, 5.0, mask, rowids, 40
    )
    assert index.postings == fresh.postings
