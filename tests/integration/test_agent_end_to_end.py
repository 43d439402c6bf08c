"""End to end: a scripted LLM drives an agent loop that uses memory tools over a real SQLite
store, across two sessions with resume; the second session recalls what the first stored.

Only the model is scripted (a remote LLM cannot run here): the store, the embedding model, the
session store, the tool registry and its argument validation are the real ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from memvault import AsyncMemory
from memvault.agent import PROCEDURES_HEADING, MemoryTools
from memvault.llm import ScriptedLLM
from memvault.models import ChatMessage
from memvault.protocols import Embedder
from memvault.sessions import SessionConfig, SessionManager, SQLiteSessionStore

AGENT = "assistant-1"
CALL = re.compile(r"^CALL (\w+) (.*)$", re.S)


async def run_turn(
    mem: AsyncMemory,
    tools: MemoryTools,
    llm: ScriptedLLM,
    history: list[ChatMessage],
    user_text: str,
) -> tuple[str, list[ChatMessage]]:
    """One user turn of a minimal agent loop: the model may call tools until it answers."""
    strategy = mem.injection_strategy("tool_based")
    procedures = await tools.procedures_section(AGENT)
    system = "You are a helpful assistant with long-term memory.\n\n" + procedures
    messages = [ChatMessage(role="system", content=system.strip())]
    messages += await strategy.prepare_messages(AGENT, user_text, 500)
    messages += [*history, ChatMessage(role="user", content=user_text)]
    for _ in range(5):
        reply = (await llm.complete(messages)).text
        match = CALL.match(reply)
        if match is None:
            messages.append(ChatMessage(role="assistant", content=reply))
            return reply, messages
        name, arguments = match.group(1), match.group(2)
        messages.append(ChatMessage(role="assistant", content=reply))
        if name in {d.name for d in tools.get_tool_definitions()}:
            result = await tools.handle_tool_call(AGENT, name, arguments)
        else:
            result = await strategy.handle_tool_call(AGENT, name, arguments)
        messages.append(ChatMessage(role="tool", content=result, name=name))
    raise AssertionError("the agent loop did not finish")


def answer_from_last_tool_result(messages: Sequence[ChatMessage]) -> str:
    """A scripted model step that answers with the database named in the last tool result."""
    result = next(m.content for m in reversed(messages) if m.role == "tool")
    found = re.search(r"PostgreSQL \d+", result)
    return f"You like {found.group(0)}." if found else "I don't know."


async def test_second_session_recalls_what_the_first_stored(
    tmp_path: Path, minilm: Embedder
) -> None:
    db = tmp_path / "agent.db"
    config = SessionConfig(max_resume_messages=10, max_sessions=5)

    # -- session 1: the user tells the agent something; it remembers it and learns a policy.
    llm1 = ScriptedLLM(
        [
            "CALL remember "
            + json.dumps(
                {"content": "The user's favourite database is PostgreSQL 16.", "category": "Prefs"}
            ),
            "CALL learn_procedure "
            + json.dumps(
                {
                    "content": "Always answer database questions with the version number.",
                    "category": "answers",
                }
            ),
            "Noted: PostgreSQL 16 is your favourite.",
        ]
    )
    async with AsyncMemory(str(db), embedder=minilm) as mem:
        tools = mem.memory_tools()
        sessions = SessionManager(SQLiteSessionStore(db), AGENT, config)
        session_1 = sessions.new_session_id()
        answer, transcript = await run_turn(
            mem, tools, llm1, [], "Please remember that my favourite database is PostgreSQL 16."
        )
        assert answer == "Noted: PostgreSQL 16 is your favourite."
        assert await sessions.save_turn(session_1, transcript)
        await sessions.store.close()
    assert llm1.remaining == 0

    # -- session 2: a new process opens the same file, resumes, and recalls through a tool.
    llm2 = ScriptedLLM(
        [
            "CALL recall " + json.dumps({"query": "favourite database", "top_k": 3}),
            answer_from_last_tool_result,
        ]
    )
    async with AsyncMemory(str(db), embedder=minilm) as mem:
        tools = mem.memory_tools()
        sessions = SessionManager(SQLiteSessionStore(db), AGENT, config)
        resumed = await sessions.resume()
        assert resumed is not None
        session_id, history = resumed
        assert session_id == session_1
        assert history[0].role == "user" and "PostgreSQL 16" in history[0].content
        assert all(m.role != "system" for m in history)  # the prompt was stripped on save

        answer, transcript = await run_turn(mem, tools, llm2, history, "Which database do I like?")
        assert answer == "You like PostgreSQL 16."
        first_call = llm2.calls[0]
        system = first_call[0].content
        assert PROCEDURES_HEADING in system
        assert "- [answers] Always answer database questions with the version number." in system
        assert any("search_memory" in m.content for m in first_call if m.role == "system")
        recall_result = [m for m in transcript if m.role == "tool" and m.name == "recall"][-1]
        assert recall_result.content.startswith("[Type: semantic | Category: prefs | Score:")
        assert await sessions.save_turn(session_id, transcript)
        latest = await sessions.store.latest(AGENT)
        assert latest is not None and latest.message_count > len(history)
        await sessions.store.close()

    # Another agent resumes nothing and recalls nothing of this one.
    async with AsyncMemory(str(db), embedder=minilm) as mem:
        other = SessionManager(SQLiteSessionStore(db), "assistant-2", config)
        assert await other.resume() is None
        out = await mem.memory_tools().recall("assistant-2", "favourite database")
        assert out == "No relevant memories found."
        await other.store.close()
