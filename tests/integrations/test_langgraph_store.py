"""MemvaultStore against LangGraph's own InMemoryStore: the same operations, the same answers."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from memvault import Memory, MemoryCategory
from memvault.integrations.langgraph import MemvaultStore

ITEMS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    (("alice", "prefs"), "theme", {"text": "prefers dark mode", "score": 5, "kind": "ui"}),
    (("alice", "prefs"), "lang", {"text": "writes Python and Rust", "score": 3, "kind": "code"}),
    (("alice", "notes", "2024"), "trip", {"text": "went hiking in the Alps", "score": 1}),
    (("bob", "prefs"), "theme", {"text": "prefers light mode", "score": 4, "kind": "ui"}),
]


def _fill(store: BaseStore) -> None:
    for namespace, key, value in ITEMS:
        store.put(namespace, key, value)


def _keys(items: list[Any]) -> list[tuple[tuple[str, ...], str]]:
    return sorted((item.namespace, item.key) for item in items)


@pytest.fixture
def stores(memory: Memory) -> tuple[BaseStore, MemvaultStore]:
    reference, store = InMemoryStore(), MemvaultStore(memory)
    _fill(reference)
    _fill(store)
    return reference, store


def test_get_put_overwrite_delete_like_in_memory_store(
    stores: tuple[BaseStore, MemvaultStore],
) -> None:
    reference, store = stores
    for s in (reference, store):
        s.put(("alice", "prefs"), "theme", {"text": "prefers solarized", "score": 6})
        s.delete(("alice", "prefs"), "lang")
    for namespace, key, _ in ITEMS:
        want, got = reference.get(namespace, key), store.get(namespace, key)
        assert (want is None) == (got is None), (namespace, key)
        if want is not None and got is not None:
            assert (got.namespace, got.key, got.value) == (want.namespace, want.key, want.value)
    overwritten = store.get(("alice", "prefs"), "theme")
    assert overwritten is not None and overwritten.updated_at >= overwritten.created_at
    assert store.get(("nobody",), "theme") is None


def test_overwrite_keeps_the_old_version_in_memvault_history(
    stores: tuple[BaseStore, MemvaultStore], memory: Memory
) -> None:
    _, store = stores
    first = store.get(("alice", "prefs"), "theme")
    store.put(("alice", "prefs"), "theme", {"text": "prefers solarized"})
    current = memory.list(agent_id="alice", filters={"lg_key": "theme"}, limit=5)
    assert len(current) == 1
    history = memory.history(current[0].id, agent_id="alice")
    assert len(history.versions) == 2
    item = store.get(("alice", "prefs"), "theme")
    assert first is not None and item is not None and item.created_at == first.created_at


@pytest.mark.parametrize(
    ("prefix", "filter_"),
    [
        (("alice",), None),
        (("alice", "prefs"), None),
        (("alice",), {"kind": "ui"}),
        (("alice",), {"score": {"$gte": 3}}),
        (("alice",), {"score": {"$gt": 1, "$lt": 5}}),
        (("alice",), {"kind": {"$ne": "ui"}}),
        (("bob",), {"kind": "code"}),
        ((), {"kind": "ui"}),
    ],
)
def test_search_filters_like_in_memory_store(
    stores: tuple[BaseStore, MemvaultStore],
    prefix: tuple[str, ...],
    filter_: dict[str, Any] | None,
) -> None:
    reference, store = stores
    want = reference.search(prefix, filter=filter_, limit=50)
    got = store.search(prefix, filter=filter_, limit=50)
    assert _keys(got) == _keys(want)


def test_search_pages_with_limit_and_offset(stores: tuple[BaseStore, MemvaultStore]) -> None:
    _, store = stores
    everything = store.search(("alice",), limit=10)
    assert len(everything) == 3
    pages = store.search(("alice",), limit=2) + store.search(("alice",), limit=2, offset=2)
    assert _keys(pages) == _keys(everything)


def test_query_search_ranks_by_meaning(stores: tuple[BaseStore, MemvaultStore]) -> None:
    _, store = stores
    hits = store.search(("alice",), query="which colour scheme does she like?", limit=3)
    assert hits[0].key == "theme"
    assert hits[0].score is not None and hits[0].score > 0
    bob = store.search(("bob",), query="colour scheme", limit=3)
    assert [h.namespace for h in bob] == [("bob", "prefs")]


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"prefix": ("alice",)},
        {"suffix": ("prefs",)},
        {"prefix": ("*", "prefs")},
        {"max_depth": 1},
        {"max_depth": 2},
        {"limit": 2, "offset": 1},
    ],
)
def test_list_namespaces_like_in_memory_store(
    stores: tuple[BaseStore, MemvaultStore], kwargs: dict[str, Any]
) -> None:
    reference, store = stores
    assert store.list_namespaces(**kwargs) == reference.list_namespaces(**kwargs)


def test_batch_and_async_variants(memory: Memory) -> None:
    import asyncio

    store = MemvaultStore(memory, agent_id="assistant")
    results = store.batch(
        [
            PutOp(("memories",), "a", {"text": "the deploy runs on Fridays"}),
            GetOp(("memories",), "a"),
            SearchOp(("memories",), query="when do we deploy?"),
        ]
    )
    assert results[0] is None
    got = results[1]
    assert got is not None and not isinstance(got, list) and got.value["text"].startswith("the")
    assert isinstance(results[2], list) and results[2][0].key == "a"

    async def run() -> None:
        await store.aput(("memories",), "b", {"text": "staging is on port 8080"})
        item = await store.aget(("memories",), "b")
        assert item is not None and item.value == {"text": "staging is on port 8080"}
        assert await store.alist_namespaces() == [("memories",)]
        await store.adelete(("memories",), "b")
        assert await store.aget(("memories",), "b") is None

    asyncio.run(run())
    # With a fixed agent_id every namespace lives in that one memvault agent.
    assert memory.agents() == ["assistant"]


def test_categories_map_namespace_labels_to_memory_types(memory: Memory) -> None:
    store = MemvaultStore(memory, categories={"procedures": "procedural"})
    store.put(("alice", "procedures"), "deploy", {"text": "run the tests before deploying"})
    store.put(("alice", "facts"), "city", {"text": "lives in Lisbon"})
    (procedure,) = memory.list(agent_id="alice", category=MemoryCategory.PROCEDURAL)
    assert procedure.metadata.extra["lg_key"] == "deploy"
    (fact,) = memory.list(agent_id="alice", category=MemoryCategory.SEMANTIC)
    assert fact.metadata.extra["lg_key"] == "city"


def test_index_fields_choose_the_searched_text(memory: Memory) -> None:
    store = MemvaultStore(memory, agent_id="a")
    store.put(("docs",), "k", {"title": "Cooking pasta", "body": "boil water"}, index=["title"])
    (entry,) = memory.list(agent_id="a")
    assert entry.content == "Cooking pasta"


def test_ttl_is_refused_and_agentless_namespace_is_a_typed_error(memory: Memory) -> None:
    from memvault import MemoryValidationError

    store = MemvaultStore(memory)
    with pytest.raises(NotImplementedError):
        store.put(("alice",), "k", {"x": 1}, ttl=5)
    with pytest.raises(MemoryValidationError):
        store._split(())


class _State(TypedDict):
    fact: str
    recalled: str


def _save(state: _State, *, store: BaseStore) -> dict[str, str]:
    store.put(("user-1", "memories"), "fact", {"text": state["fact"]})
    return {}


def _recall(state: _State, *, store: BaseStore) -> dict[str, str]:
    hits = store.search(("user-1", "memories"), query="where does the user live?")
    return {"recalled": hits[0].value["text"]}


def test_works_as_the_store_of_a_compiled_graph(memory: Memory) -> None:
    builder = StateGraph(_State)
    builder.add_node("save", _save)
    builder.add_node("recall", _recall)
    builder.add_edge(START, "save")
    builder.add_edge("save", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=MemvaultStore(memory))
    out = graph.invoke({"fact": "the user lives in Lisbon", "recalled": ""})
    assert out["recalled"] == "the user lives in Lisbon"
