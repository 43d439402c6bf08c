"""The habits users bring from mem0: a user id alone as the scope, ``get_all``, a scoped
``delete_all``, AND/OR/NOT filters through the public API, and the history of a deleted id."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from live_server import run_app
from memvault import AsyncMemory, Memory
from memvault.config import load_config
from memvault.errors import MemoryNotFoundError, MemoryValidationError
from memvault.protocols import Embedder
from memvault.server.rest import create_app
from memvault.service import MemoryService
from memvault.validation import DEFAULT_AGENT_ID


@pytest.fixture
def mem(tmp_path: Path, minilm: Embedder) -> Iterator[Memory]:
    with Memory(str(tmp_path / "habits.db"), embedder=minilm) as m:
        yield m


def test_a_user_id_alone_scopes_every_call(mem: Memory) -> None:
    tea = mem.add("Alice drinks green tea every morning", user_id="alice")
    mem.add("Bob drinks black coffee, two cups a day", user_id="bob")
    mem.add("Alice's manager drinks coffee", agent_id="office-bot", user_id="alice")

    hits = mem.search("what does she drink?", user_id="alice")
    assert [h.content for h in hits] == ["Alice drinks green tea every morning"]
    assert mem.count(user_id="bob") == 1
    assert [e.id for e in mem.list(user_id="alice")] == [tea]
    context = mem.context("a hot drink for the morning", user_id="alice", min_relevance=0.0)
    assert "green tea" in context.text and "coffee" not in context.text
    # Memories of a user alone live under the default agent, and ids answer without an agent.
    assert mem.get(tea).metadata.extra == {"user_id": "alice"}
    assert mem.count(agent_id=DEFAULT_AGENT_ID) == 2
    assert mem.count(agent_id="office-bot", user_id="alice") == 1
    updated = mem.update(tea, content="Alice drinks jasmine tea every morning")
    assert mem.get(updated.id).content == "Alice drinks jasmine tea every morning"


def test_a_call_without_any_scope_is_refused_not_pooled(mem: Memory) -> None:
    for call in (
        lambda: mem.add("no owner"),
        lambda: mem.search("anything"),
        lambda: mem.get_all(),
        lambda: mem.delete_all(),
        lambda: mem.context("anything"),
    ):
        with pytest.raises(MemoryValidationError, match="give agent_id or user_id"):
            call()
    assert mem.stats().total == 0


def test_get_all_pages_through_a_scope(mem: Memory) -> None:
    ids = mem.add_many(
        [{"content": f"Alice's note number {i} about the garden", "metadata": {"user_id": "alice"}}
         for i in range(620)],
        agent_id=DEFAULT_AGENT_ID,
        dedup=False,
    )  # fmt: skip
    mem.add("Bob's note about the garden", user_id="bob")
    assert len(mem.get_all(user_id="alice")) == 100  # mem0's default page
    everything = mem.get_all(user_id="alice", limit=None)
    assert len(everything) == 620 and {e.id for e in everything} == set(ids)
    assert len(mem.get_all(user_id="alice", limit=7)) == 7
    with pytest.raises(MemoryValidationError, match="limit"):
        mem.get_all(user_id="alice", limit=0)


def test_delete_all_deletes_one_scope_with_its_old_versions_and_nothing_else(
    mem: Memory,
) -> None:
    first = mem.add("Alice lives in Lisbon", user_id="alice")
    moved = mem.update(first, content="Alice lives in Porto")
    mem.add("Alice's cat is called Miso", user_id="alice", session_id="s1")
    bob = mem.add("Bob lives in Lisbon", user_id="bob")
    other = mem.add("Alice is a customer of the office bot", agent_id="office-bot", user_id="alice")

    assert mem.delete_all(user_id="alice", session_id="s1") == 1
    assert mem.delete_all(user_id="alice") == 2  # the current version and the old one
    for gone in (first, moved.id):
        with pytest.raises(MemoryNotFoundError):
            mem.get(gone)
    assert mem.get(bob).content == "Bob lives in Lisbon"
    assert mem.get(other, agent_id="office-bot").content.startswith("Alice is a customer")
    actions = [r.action for r in mem.audit(agent_id=DEFAULT_AGENT_ID, limit=50)]
    assert actions.count("memory.delete") == 3


def test_logical_filters_reach_search_list_count_and_delete_all(mem: Memory) -> None:
    for project, status in (
        ("alpha", "open"),
        ("alpha", "done"),
        ("beta", "open"),
        ("gamma", "wip"),
    ):
        mem.add(
            f"Task of project {project} is {status}",
            user_id="pm",
            metadata={"project": project, "status": status},
        )
    open_or_beta = {"OR": [{"status": "open"}, {"project": "beta"}]}
    assert mem.count(user_id="pm", filters=open_or_beta) == 2
    not_alpha = {"NOT": [{"project": "alpha"}]}
    assert {e.metadata.extra["project"] for e in mem.list(user_id="pm", filters=not_alpha)} == {
        "beta",
        "gamma",
    }
    hits = mem.search(
        "which tasks are open?",
        user_id="pm",
        filters={"AND": [{"project": "alpha"}, {"NOT": {"status": "done"}}]},
    )
    assert [h.content for h in hits] == ["Task of project alpha is open"]
    assert (
        mem.delete_all(user_id="pm", filters={"OR": [{"status": "done"}, {"status": "wip"}]}) == 2
    )
    assert mem.count(user_id="pm") == 2


def test_the_history_of_a_deleted_memory_comes_from_the_audit_log(mem: Memory) -> None:
    first = mem.add("The deploy window is Tuesday", user_id="ops")
    second = mem.update(first, content="The deploy window is Thursday")
    assert mem.delete(second.id)

    history = mem.history(second.id)
    assert history.deleted
    # The old version remains (superseded); the audit tells the whole story of both ids.
    assert [v.id for v in history.versions] == [first]
    actions = [(r.memory_id, r.action) for r in history.audit]
    assert (first, "memory.store") in actions and (second.id, "memory.delete") in actions
    assert "Thursday" not in str([r.details for r in history.audit])  # the text stays deleted
    assert mem.history(first).deleted
    mem.delete(first)
    gone = mem.history(first)
    assert gone.versions == () and gone.deleted
    with pytest.raises(MemoryNotFoundError, match="was deleted"):
        _ = gone.current
    with pytest.raises(MemoryNotFoundError, match="no audit record"):
        mem.history("0" * 26)


async def test_the_remote_client_takes_a_user_id_alone(tmp_path: Path, minilm: Embedder) -> None:
    service = MemoryService(load_config(url=str(tmp_path / "served.db")), embedder=minilm)
    url, stop = run_app(create_app(service, keys=None))
    remote = AsyncMemory(url)
    try:
        stored = await remote.add("Carol prefers the night train", user_id="carol")
        found = await remote.search("how does carol travel?", user_id="carol")
        assert [h.id for h in found] == [stored]
        assert (await remote.get(stored)).metadata.extra == {"user_id": "carol"}
        assert len(await remote.get_all(user_id="carol")) == 1
        with pytest.raises(MemoryValidationError, match="give agent_id or user_id"):
            await remote.search("anything")
        assert await remote.delete_all(user_id="carol") == 1
        assert await remote.count(user_id="carol") == 0
    finally:
        await remote.close()
        stop()
