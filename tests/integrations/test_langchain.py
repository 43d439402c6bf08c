"""MemvaultRetriever and MemvaultChatMessageHistory against real langchain-core."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.runnables.history import RunnableWithMessageHistory

from memvault import AsyncMemory, Memory, MemoryConfigError
from memvault.integrations.langchain import MemvaultChatMessageHistory, MemvaultRetriever
from memvault.sessions import SQLiteSessionStore


def _fill(memory: Memory) -> None:
    memory.add("the user's favourite language is Rust", agent_id="a", tags=["prefs"])
    memory.add("the office is in Berlin", agent_id="a", metadata={"source": "hr"})
    memory.add("the user's favourite language is Go", agent_id="b")


def test_retriever_returns_documents_best_first(memory: Memory) -> None:
    _fill(memory)
    retriever = MemvaultRetriever(memory=memory, agent_id="a", k=2)
    docs = retriever.invoke("which programming language does the user like?")
    assert docs[0].page_content == "the user's favourite language is Rust"
    assert docs[0].metadata["tags"] == ["prefs"] and docs[0].metadata["category"] == "semantic"
    assert docs[0].id == docs[0].metadata["id"]
    assert all("Go" not in d.page_content for d in docs)  # agent b's memory never leaks


async def test_retriever_async_with_both_memories(memory: Memory, amemory: AsyncMemory) -> None:
    _fill(memory)
    filtered = MemvaultRetriever(
        memory=memory, agent_id="a", search_kwargs={"filters": {"source": "hr"}}
    )
    docs = await filtered.ainvoke("where is the office?")
    assert [d.page_content for d in docs] == ["the office is in Berlin"]
    await amemory.add("deploys happen on Tuesdays", agent_id="a")
    native = MemvaultRetriever(memory=amemory, agent_id="a")
    assert (await native.ainvoke("when do we deploy?"))[0].page_content.startswith("deploys")
    with pytest.raises(MemoryConfigError, match="ainvoke"):
        native.invoke("when do we deploy?")


def test_chat_history_round_trips_every_message_kind(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    history = MemvaultChatMessageHistory("thread-1", agent_id="a", store=db)
    messages = [
        SystemMessage("be brief"),
        HumanMessage("what's 2+2?"),
        AIMessage("", tool_calls=[{"name": "add", "args": {"a": 2, "b": 2}, "id": "c1"}]),
        ToolMessage("4", tool_call_id="c1"),
        AIMessage("4"),
    ]
    history.add_messages(messages)
    again = MemvaultChatMessageHistory("thread-1", agent_id="a", store=db)
    got = again.messages
    assert [type(m) for m in got] == [type(m) for m in messages]
    assert got[2].tool_calls == messages[2].tool_calls  # type: ignore[attr-defined]
    assert got[3].tool_call_id == "c1"  # type: ignore[attr-defined]
    record = SQLiteSessionStore(db)
    import asyncio

    saved = asyncio.run(record.get("a", "thread-1"))
    assert saved is not None
    plain = [(m.role, m.content) for m in saved.messages if m.name is None]
    assert plain == [("system", "be brief"), ("user", "what's 2+2?"), ("assistant", "4")]
    again.clear()
    assert history.messages == []


async def test_chat_history_async_and_runnable_with_history(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")

    def reply(messages: list[object]) -> AIMessage:
        return AIMessage(
            f"you have said {sum(isinstance(m, HumanMessage) for m in messages)} things"
        )

    chain = RunnableWithMessageHistory(
        RunnableLambda(reply),
        lambda session_id: MemvaultChatMessageHistory(session_id, agent_id="a", store=db),
    )
    config = {"configurable": {"session_id": "s-1"}}
    await chain.ainvoke([HumanMessage("hi")], config=config)  # type: ignore[arg-type]
    out = await chain.ainvoke([HumanMessage("again")], config=config)  # type: ignore[arg-type]
    assert out.content == "you have said 2 things"
    history = MemvaultChatMessageHistory("s-1", agent_id="a", store=db)
    assert len(await history.aget_messages()) == 4
    await history.aclear()
    assert await history.aget_messages() == []
