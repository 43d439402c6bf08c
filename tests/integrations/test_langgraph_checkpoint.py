"""The LangGraph checkpointer on memvault's store: a compiled graph interrupted and resumed.

The same scenario runs on LangGraph's own ``InMemorySaver`` and on memvault's saver (SQLite
file, PostgreSQL schema); the resumed run's final state and the state history must agree, and
the resume happens through a new saver and a new graph over the same store (as after a
restart).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from memvault.integrations.langgraph_checkpoint import MemvaultCheckpointSaver


class State(TypedDict):
    steps: Annotated[list[str], operator.add]
    approved: str


def _plan(state: State) -> dict[str, Any]:
    return {"steps": ["plan"]}


def _ask(state: State) -> dict[str, Any]:
    answer = interrupt({"question": "deploy?", "after": list(state["steps"])})
    return {"steps": ["asked"], "approved": answer}


def _act(state: State) -> dict[str, Any]:
    return {"steps": [f"act:{state['approved']}"]}


def _builder() -> StateGraph[State]:
    builder: StateGraph[State] = StateGraph(State)
    builder.add_node("plan", _plan)
    builder.add_node("ask", _ask)
    builder.add_node("act", _act)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "ask")
    builder.add_edge("ask", "act")
    builder.add_edge("act", END)
    return builder


CONFIG: Any = {"configurable": {"thread_id": "run-1"}}


def _scenario(make_saver: Callable[[], Any]) -> tuple[dict[str, Any], list[Any], Any]:
    """Run to the interrupt, then resume through a new saver and graph; (final, history, paused)."""
    first_saver = make_saver()
    graph = _builder().compile(checkpointer=first_saver)
    paused = graph.invoke({"steps": [], "approved": ""}, CONFIG)
    state = graph.get_state(CONFIG)
    assert state.next == ("ask",)
    second_saver = make_saver() if not isinstance(first_saver, InMemorySaver) else first_saver
    if isinstance(first_saver, MemvaultCheckpointSaver):
        first_saver.close()  # the first "process" is gone
    resumed = _builder().compile(checkpointer=second_saver)
    final = resumed.invoke(Command(resume="yes"), CONFIG)
    history = [
        (tuple(s.next), s.values.get("steps"), s.metadata.get("step") if s.metadata else None)
        for s in resumed.get_state_history(CONFIG)
    ]
    if isinstance(second_saver, MemvaultCheckpointSaver):
        second_saver.close()
    return final, history, paused["__interrupt__"][0].value


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "graph.db")
    url: str = request.getfixturevalue("postgres_url")
    return f"{url}{'&' if '?' in url else '?'}schema={request.getfixturevalue('schemas')()}"


def test_an_interrupted_graph_resumes_from_the_store_like_in_memory(store_url: str) -> None:
    expected = _scenario(InMemorySaver)
    got = _scenario(lambda: MemvaultCheckpointSaver.from_url(store_url))
    assert got[0] == expected[0] == {"steps": ["plan", "asked", "act:yes"], "approved": "yes"}
    assert got[2] == expected[2] == {"question": "deploy?", "after": ["plan"]}
    assert got[1] == expected[1]
    assert len(got[1]) >= 4


async def test_async_invoke_interrupt_and_resume(tmp_path: Path) -> None:
    url = str(tmp_path / "agraph.db")
    saver = MemvaultCheckpointSaver.from_url(url)
    graph = _builder().compile(checkpointer=saver)
    paused = await graph.ainvoke({"steps": [], "approved": ""}, CONFIG)
    assert "__interrupt__" in paused
    saver.close()
    again = MemvaultCheckpointSaver.from_url(url)
    try:
        final = await _builder().compile(checkpointer=again).ainvoke(Command(resume="no"), CONFIG)
        assert final["steps"] == ["plan", "asked", "act:no"]
        listed = [t async for t in again.alist(CONFIG, limit=2)]
        assert len(listed) == 2
        assert listed[0].checkpoint["id"] > listed[1].checkpoint["id"]
        only_loop = [t async for t in again.alist(CONFIG, filter={"source": "loop"})]
        assert only_loop and all(t.metadata["source"] == "loop" for t in only_loop)
        await again.adelete_thread("run-1")
        assert await again.aget_tuple(CONFIG) is None
    finally:
        again.close()


def test_pending_writes_survive_and_special_writes_replace(tmp_path: Path) -> None:
    with MemvaultCheckpointSaver.from_url(str(tmp_path / "w.db")) as saver:
        base = _builder().compile(checkpointer=saver)
        base.invoke({"steps": [], "approved": ""}, CONFIG)
        latest = saver.get_tuple(CONFIG)
        assert latest is not None
        # The interrupt is a pending write of the "ask" task on the latest checkpoint.
        channels = [c for _, c, _ in latest.pending_writes or []]
        assert "__interrupt__" in channels
        config = latest.config
        saver.put_writes(config, [("steps", ["x"])], task_id="t-extra")
        saver.put_writes(config, [("steps", ["y"])], task_id="t-extra")  # kept: first wins
        found = [v for t, c, v in saver.get_tuple(config).pending_writes if t == "t-extra"]  # type: ignore[union-attr]
        assert found == [["x"]]
        parent = latest.parent_config
        assert parent is not None and saver.get_tuple(parent) is not None
