"""InitRunner's memory tools over a real SQLite store and the real embedding model."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.agent import PROCEDURES_HEADING, MemoryTools, MemoryToolsConfig, sanitize_category
from memvault.protocols import Embedder

AGENT = "helper-bot"


@pytest.fixture
async def mem(tmp_path: Path, minilm: Embedder) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory(str(tmp_path / "tools.db"), embedder=minilm) as memory:
        yield memory


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Preferences", "preferences"),
        ("Code Review!", "code_review_"),
        ("", "general"),
        ("deploy-2024", "deploy_2024"),
    ],
)
def test_sanitize_category(raw: str, clean: str) -> None:
    assert sanitize_category(raw) == clean


def test_tools_registered_only_for_enabled_types(mem: AsyncMemory) -> None:
    every = {d.name for d in MemoryTools(mem).get_tool_definitions()}
    assert every == {"remember", "recall", "list_memories", "learn_procedure", "record_episode"}
    only = MemoryTools(mem, MemoryToolsConfig(episodic_enabled=False, procedural_enabled=False))
    assert {d.name for d in only.get_tool_definitions()} == {"remember", "recall", "list_memories"}


async def test_remember_recall_and_list_through_tool_calls(mem: AsyncMemory) -> None:
    tools = MemoryTools(mem)
    stored = await tools.handle_tool_call(
        AGENT,
        "remember",
        json.dumps(
            {
                "content": "The user prefers dark mode and vim keybindings.",
                "category": "UI Preferences",
            }
        ),
    )
    assert re.match(r"Stored semantic memory \S+ \(category: ui_preferences\)\.", stored)
    await tools.handle_tool_call(
        AGENT,
        "record_episode",
        {
            "content": "Deployed v2.1 to staging; rollback needed due to a memory leak.",
            "category": "deploys",
        },
    )
    out = await tools.handle_tool_call(AGENT, "recall", {"query": "editor theme", "top_k": 2})
    first = out.split("\n\n---\n\n")[0]
    assert re.match(
        r"\[Type: semantic \| Category: ui_preferences \| Score: \d\.\d{3} \| \d{4}-\d\d-\d\dT",
        first,
    )
    assert "dark mode" in first
    only_episodes = await tools.handle_tool_call(
        AGENT, "recall", {"query": "editor theme", "memory_types": ["episodic"]}
    )
    assert "Type: semantic" not in only_episodes and "Type: episodic" in only_episodes
    listed = await tools.handle_tool_call(AGENT, "list_memories", {"memory_type": "episodic"})
    assert re.match(r"\[episodic:deploys\] \(\d{4}-.*\) Deployed v2\.1", listed)
    by_category = await tools.list_memories(AGENT, category="UI preferences")
    assert by_category.startswith("[semantic:ui_preferences]")
    assert await tools.recall("someone-else", "editor theme") == "No relevant memories found."
    assert tools.invocations == {
        "remember": 1,
        "record_episode": 1,
        "recall": 2,
        "list_memories": 1,
    }


async def test_bad_arguments_come_back_as_error_strings(mem: AsyncMemory) -> None:
    tools = MemoryTools(mem, MemoryToolsConfig(episodic_enabled=False))
    for name, args in (
        ("remember", {}),
        ("remember", "{not json"),
        ("recall", {"query": "x", "top_k": "five"}),
        ("recall", {"query": "x", "memory_types": ["dreams"]}),
        ("record_episode", {"content": "disabled type"}),
        ("remember", {"content": "   "}),
    ):
        result = await tools.handle_tool_call(AGENT, name, args)
        assert result.startswith("error:"), (name, args, result)
    assert await mem.count(agent_id=AGENT) == 0


async def test_caps_prune_oldest_into_the_archive(mem: AsyncMemory) -> None:
    tools = MemoryTools(mem, MemoryToolsConfig(max_procedures=2))
    texts = [
        "Always run the test suite before deploying to production.",
        "Check every SQL query for injection before merging.",
        "Summarise changes for the user as bullet points.",
    ]
    for i, text in enumerate(texts):
        await tools.learn_procedure(AGENT, text, ["deployment", "code review", "communication"][i])
    live = [e.content for e in await mem.list(agent_id=AGENT, category="procedural")]
    assert live == texts[:0:-1]  # the two newest
    archived = await mem.archived(agent_id=AGENT)
    assert [a.entry.content for a in archived] == [texts[0]]

    section = await tools.procedures_section(AGENT)
    assert section.splitlines()[0] == PROCEDURES_HEADING
    assert "- [communication] Summarise changes for the user as bullet points." in section
    assert "- [code_review] Check every SQL query" in section
    assert await tools.procedures_section("nobody") == ""
    off = MemoryTools(mem, MemoryToolsConfig(procedural_enabled=False))
    assert await off.procedures_section(AGENT) == ""
