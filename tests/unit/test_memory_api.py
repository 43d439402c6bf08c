"""The Memory / AsyncMemory front door on the embedded default (SQLite + bundled model)."""

from __future__ import annotations

import inspect
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault import (
    AsyncMemory,
    Memory,
    MemoryCapabilityError,
    MemoryCategory,
    MemoryConfigError,
    MemoryConnectionError,
    MemoryNotFoundError,
    MemoryStoreRequest,
    MemoryValidationError,
    MemvaultConfig,
)
from memvault.config import MemoryOptionsConfig
from memvault.embeddings import create_embedder
from memvault.protocols import Embedder

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def mem(tmp_path: Path, minilm: Embedder) -> Iterator[Memory]:
    with Memory(str(tmp_path / "m.db"), embedder=minilm) as m:
        yield m


def test_sync_and_async_expose_the_same_methods_and_signatures() -> None:
    def public(cls: type) -> dict[str, inspect.Signature]:
        # The sync facade is generated over a hand-written base: both count.
        members: dict[str, object] = {}
        for klass in reversed(cls.__mro__[:-1]):
            members.update(vars(klass))
        return {
            name: inspect.signature(fn)
            for name, fn in members.items()
            if not name.startswith("_") and callable(fn)
        }

    sync, aio = public(Memory), public(AsyncMemory)
    assert set(sync) == set(aio)
    for name in sync:
        assert sync[name].parameters.keys() == aio[name].parameters.keys(), name
        for p in sync[name].parameters:
            assert sync[name].parameters[p].default == aio[name].parameters[p].default, (name, p)
            assert sync[name].parameters[p].kind == aio[name].parameters[p].kind, (name, p)


def test_add_search_get_round_trip(tmp_path: Path) -> None:
    # all-MiniLM-L6-v2 named: "which web framework?" -> "Prefers Litestar over Flask" needs a
    # model that knows Litestar and Flask are frameworks; paraphrase-MiniLM-L3-v2 (the default
    # now) scores both stored texts alike (cosine 0.024 vs 0.027).
    with Memory(str(tmp_path / "l6.db"), embedder=create_embedder("minilm")) as mem:
        _round_trip(mem)


def _round_trip(mem: Memory) -> None:
    mid = mem.add(
        "Prefers Litestar over Flask",
        agent_id="dev-1",
        tags=["non-inferable"],
        metadata={"source_task": "T-1"},
        label="preferences",
    )
    mem.add("Deployed v2.1, rolled back: memory leak", agent_id="dev-1", category="episodic")
    hits = mem.search("which web framework?", agent_id="dev-1", limit=5)
    assert hits[0].id == mid
    assert hits[0].relevance_score is not None and hits[0].score is None
    got = mem.get(mid, agent_id="dev-1")
    assert got.tags == ("non-inferable",)
    assert got.metadata.extra == {"source_task": "T-1"}
    assert got.metadata.label == "preferences"


def test_search_explain_gives_breakdown(mem: Memory) -> None:
    mem.add_many(
        [{"content": "The cache leaks memory under load"}, {"content": "Lunch is at noon"}],
        agent_id="a",
    )
    hits = mem.search("memory leak in cache", agent_id="a", explain=True)
    top = hits[0].score
    assert top is not None
    assert top.dense is not None and top.bm25 is not None
    assert top.final == pytest.approx(hits[0].relevance_score)
    assert 0.0 <= top.fused <= 1.0


def test_search_records_access(mem: Memory) -> None:
    mid = mem.add("Berlin office opens at nine", agent_id="a")
    mem.search("when does the office open?", agent_id="a")
    assert mem.get(mid, agent_id="a").access_count == 1


def test_agents_are_isolated(mem: Memory) -> None:
    mid = mem.add("secret launch codename is Bluebird", agent_id="alice")
    assert mem.search("launch codename", agent_id="bob") == []
    assert mem.list(agent_id="bob") == []
    assert mem.count(agent_id="bob") == 0
    with pytest.raises(MemoryNotFoundError):
        mem.get(mid, agent_id="bob")
    assert not mem.delete(mid, agent_id="bob")
    assert mem.count(agent_id="alice") == 1


def test_add_many_accepts_dicts_and_requests_in_order(mem: Memory) -> None:
    ids = mem.add_many(
        [
            {"content": "first", "category": "episodic", "created_at": T0},
            MemoryStoreRequest(content="second", category=MemoryCategory.PROCEDURAL),
            {"content": "third", "tags": ["x"]},
        ],
        agent_id="a",
    )
    got = [mem.get(i, agent_id="a") for i in ids]
    assert [g.content for g in got] == ["first", "second", "third"]
    assert got[0].created_at == T0
    assert got[1].category is MemoryCategory.PROCEDURAL


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([{"content": "ok"}, {"content": "   "}], "item 1"),
        ([{"content": "ok"}, {"text": "wrong key"}], "unknown keys"),
        ([{"content": "ok"}, {"content": "bad", "category": "nope"}], "unknown category"),
        ([{"content": "ok"}, {"content": "x", "created_at": datetime(2026, 1, 1)}], "naive"),
        ([{"content": "ok"}, "just a string"], "expected a dict"),
    ],
)
def test_add_many_validates_everything_before_writing(
    mem: Memory, items: list[object], message: str
) -> None:
    with pytest.raises(MemoryValidationError, match=message):
        mem.add_many(items, agent_id="a")  # type: ignore[arg-type]
    assert mem.count(agent_id="a") == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": ""}, "empty"),
        ({"content": " \n\t "}, "empty"),
        ({"content": "a\x00b"}, "NUL"),
        ({"content": "x" * 320_001}, "maximum"),  # past what even chunking takes
        ({"content": "ok", "category": "feelings"}, "unknown category"),
        ({"content": "ok", "created_at": datetime(2026, 1, 1)}, "naive"),
        ({"content": "ok", "tags": "single-string"}, "list of strings"),
        ({"content": "ok", "tags": [""]}, "invalid tag"),
        ({"content": "ok", "supersedes": "not/an id"}, "malformed"),
        ({"content": "ok", "importance": 3.0}, "importance"),
    ],
)
def test_bad_input_raises_typed_errors_and_stores_nothing(
    mem: Memory, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(MemoryValidationError, match=message):
        mem.add(agent_id="a", **kwargs)  # type: ignore[arg-type]
    assert mem.count(agent_id="a") == 0


def test_bad_ids_agents_and_queries(mem: Memory) -> None:
    with pytest.raises(MemoryValidationError, match="malformed"):
        mem.get("../../etc/passwd", agent_id="a")
    with pytest.raises(MemoryValidationError, match="agent_id"):
        mem.add("x", agent_id="")
    with pytest.raises(MemoryValidationError, match="empty"):
        mem.search("  ", agent_id="a")
    with pytest.raises(MemoryValidationError, match="limit"):
        mem.search("x", agent_id="a", limit=0)
    with pytest.raises(MemoryValidationError, match="naive"):
        mem.search("x", agent_id="a", since=datetime(2026, 1, 1))
    with pytest.raises(MemoryValidationError, match="unknown retrieval preset"):
        mem.search("x", agent_id="a", preset="nope")


def test_content_limit_is_configurable(tmp_path: Path, minilm: Embedder) -> None:
    cfg = MemvaultConfig.model_validate({"options": {"max_content_chars": 10}})
    with Memory(str(tmp_path / "m.db"), config=cfg, embedder=minilm) as m:
        m.add("short", agent_id="a")
        # Over the limit: stored as linked chunks within it, not refused.
        head = m.add("this is much too long", agent_id="a")
        chunks = [e for e in m.list(agent_id="a") if "chunk_group" in e.metadata.extra]
        assert len(chunks) > 1 and all(len(e.content) <= 10 for e in chunks)
        assert head in {e.id for e in chunks}


def test_supersedes_hides_old_entry_unless_as_of(mem: Memory) -> None:
    old = mem.add("Prefers dark mode", agent_id="a", created_at=T0)
    new = mem.add(
        "Now prefers light mode", agent_id="a", created_at=T0 + timedelta(days=5), supersedes=old
    )
    assert [h.id for h in mem.search("display mode", agent_id="a")] == [new]
    assert [
        h.id for h in mem.search("display mode", agent_id="a", as_of=T0 + timedelta(days=1))
    ] == [old]
    assert {h.id for h in mem.search("mode", agent_id="a", include_superseded=True)} == {old, new}
    with pytest.raises(MemoryNotFoundError):
        mem.add("x", agent_id="a", supersedes="01900000-0000-7000-8000-000000000000")


def test_list_filters_and_order(mem: Memory) -> None:
    ids = mem.add_many(
        [
            {"content": f"event {i}", "category": "episodic", "created_at": T0 + timedelta(hours=i)}
            for i in range(5)
        ]
        + [{"content": "a fact", "label": "facts"}],
        agent_id="a",
    )
    episodic = mem.list(agent_id="a", category="episodic", limit=3)
    assert [e.id for e in episodic] == [ids[4], ids[3], ids[2]]
    assert [e.id for e in mem.list(agent_id="a", label="facts")] == [ids[5]]
    assert [e.id for e in mem.list(agent_id="a", category="episodic", offset=4)] == [ids[0]]


def test_clear_all_and_by_category(mem: Memory) -> None:
    mem.add_many([{"content": "e", "category": "episodic"}, {"content": "s"}], agent_id="a")
    assert mem.clear(agent_id="a", category="episodic") == 1
    assert mem.count(agent_id="a") == 1
    assert mem.clear(agent_id="a") == 1
    assert mem.count(agent_id="a") == 0


def test_export_import_file_round_trip(tmp_path: Path, mem: Memory, minilm: Embedder) -> None:
    mem.add_many(
        [
            {"content": "alpha", "tags": ["t"], "metadata": {"k": 1}, "created_at": T0},
            {"content": "beta", "category": "social", "label": "people"},
        ],
        agent_id="a",
    )
    mem.add("gamma", agent_id="b", expires_at=datetime.now(UTC) + timedelta(days=1))
    out = tmp_path / "export.json"
    data = mem.export(out)
    assert json.loads(out.read_text()) == data
    with Memory(str(tmp_path / "copy.db"), embedder=minilm) as copy:
        seen: list[tuple[int, int]] = []
        assert copy.import_(out, batch_size=2, on_progress=lambda d, t: seen.append((d, t))) == 3
        assert seen == [(2, 3), (3, 3)]
        assert copy.export() == data
        assert copy.import_(out) == 0
        assert copy.search("alpha", agent_id="a")[0].content == "alpha"


def test_import_reassigns_agent(tmp_path: Path, mem: Memory) -> None:
    mem.add("portable fact", agent_id="a")
    data = mem.export()
    mem.clear(agent_id="a")
    assert mem.import_(data, agent_id="z") == 1
    assert mem.list(agent_id="z")[0].content == "portable fact"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"an": "object"}', "JSON array"),
        ('[{"content": "no id"}]', "import item 0"),
        (
            '[{"id": "x1", "agent_id": "a", "content": "", "created_at": "2026-01-01T00:00:00Z"}]',
            "empty",
        ),
        (
            '[{"id": "x1", "agent_id": "a", "content": "c", "created_at": "2026-01-01T00:00:00"}]',
            "naive",
        ),
    ],
)
def test_import_rejects_bad_files_without_writing(
    tmp_path: Path, mem: Memory, payload: str, message: str
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(payload)
    with pytest.raises(MemoryValidationError, match=message):
        mem.import_(path)
    assert mem.stats().total == 0


def test_import_missing_file(mem: Memory, tmp_path: Path) -> None:
    with pytest.raises(MemoryValidationError, match="cannot read"):
        mem.import_(tmp_path / "absent.json")


def test_context_packs_within_budget(mem: Memory) -> None:
    mem.add_many(
        [{"content": f"Auth note {i}: tokens expire after {i + 1} hours " * 3} for i in range(20)],
        agent_id="a",
    )
    ctx = mem.context("auth tokens", agent_id="a", token_budget=150)
    assert 0 < ctx.tokens <= 150
    assert ctx.entries
    assert "BEGIN MEMORIES" in ctx.text and "END MEMORIES" in ctx.text
    assert ctx.messages == ({"role": "system", "content": ctx.text},)
    with pytest.raises(MemoryValidationError):
        mem.context("x", agent_id="a", token_budget=0)


def test_include_shared_when_shared_knowledge_is_disabled_is_a_capability_error(
    tmp_path: Path, minilm: Embedder
) -> None:
    cfg = MemvaultConfig(options=MemoryOptionsConfig(shared_knowledge_base=False))
    with Memory(str(tmp_path / "m.db"), config=cfg, embedder=minilm) as m:
        m.add("x", agent_id="a")
        with pytest.raises(MemoryCapabilityError):
            m.search("x", agent_id="a", include_shared=True)


def test_closed_memory_refuses_work(tmp_path: Path, minilm: Embedder) -> None:
    m = Memory(str(tmp_path / "m.db"), embedder=minilm)
    m.add("x", agent_id="a")
    m.close()
    m.close()
    with pytest.raises(MemoryConnectionError, match="closed"):
        m.add("y", agent_id="a")


async def test_async_memory_context_manager(tmp_path: Path, minilm: Embedder) -> None:
    async with AsyncMemory(f"sqlite:///{tmp_path}/a.db", embedder=minilm) as mem:
        mid = await mem.add("async works", agent_id="a")
        assert (await mem.get(mid, agent_id="a")).content == "async works"
        assert await mem.agents() == ["a"]
    assert (tmp_path / "a.db").exists()


def test_unknown_url_scheme_is_a_config_error(minilm: Embedder) -> None:
    with pytest.raises(MemoryConfigError, match="unsupported storage URL"):
        Memory("ftp://example/x", embedder=minilm)


def test_memory_url_is_in_process(minilm: Embedder) -> None:
    with Memory("memory://", embedder=minilm) as m:
        m.add("volatile", agent_id="a")
        assert m.location == "memory://"
        assert m.count(agent_id="a") == 1


def test_sync_memory_tools_return_results_not_coroutines(mem: Memory) -> None:
    tools = mem.memory_tools()
    stored = tools.remember("dev-1", "The staging database is PostgreSQL 16.", "infra")
    assert isinstance(stored, str) and "infra" in stored
    found = tools.recall("dev-1", "which database runs staging?")
    assert isinstance(found, str) and "PostgreSQL 16" in found
    listed = tools.handle_tool_call("dev-1", "list_memories", {"limit": 5})
    assert isinstance(listed, str) and "PostgreSQL 16" in listed
    names = {d.name for d in tools.get_tool_definitions()}
    assert "recall" in names
