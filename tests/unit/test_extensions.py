"""Features attach to a memory through one mechanism: opened once on first use, closed with it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.memory._extensions import Extensions
from memvault.protocols import Embedder


class _Feature:
    def __init__(self, name: str, log: list[str], fail: bool = False) -> None:
        self.name, self.log, self.fail = name, log, fail

    async def close(self) -> None:
        self.log.append(self.name)
        if self.fail:
            raise RuntimeError(f"{self.name} failed to close")


async def test_a_feature_is_opened_once_and_features_close_last_opened_first() -> None:
    log: list[str] = []
    opened: list[str] = []
    ext = Extensions()

    def opener(name: str) -> _Feature:
        opened.append(name)
        return _Feature(name, log)

    first = ext.get("learning", lambda: opener("learning"))
    assert ext.get("learning", lambda: opener("learning")) is first
    ext.get("graph", lambda: opener("graph"))
    assert opened == ["learning", "graph"]
    assert ext.opened("graph") and not ext.opened("conversations")
    await ext.close()
    assert log == ["graph", "learning"]
    assert not ext.opened("learning")


async def test_one_failing_close_does_not_keep_the_others_open() -> None:
    log: list[str] = []
    ext = Extensions()
    ext.get("a", lambda: _Feature("a", log))
    ext.get("b", lambda: _Feature("b", log, fail=True))
    ext.get("c", lambda: _Feature("c", log))
    with pytest.raises(RuntimeError, match="b failed"):
        await ext.close()
    assert log == ["c", "b", "a"]


async def test_the_memory_keeps_one_of_each_feature_and_closes_them(
    tmp_path: Path, minilm: Embedder
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    mem = AsyncMemory(url, embedder=minilm)
    learning = mem.learning
    assert mem.learning is learning
    conversations = mem.conversations
    assert mem.conversations is conversations
    await conversations.append("s1", [{"role": "user", "content": "hello"}], agent_id="dev-1")
    await mem.close()
    # Closed with the memory, and what it wrote is in the file the memory uses.
    again = AsyncMemory(url, embedder=minilm)
    try:
        turns = await again.conversations.history("s1", agent_id="dev-1")
        assert [m.content for m in turns] == ["hello"]
        assert again.conversations is not conversations
    finally:
        await again.close()


def test_a_memory_that_never_asks_for_a_feature_never_imports_it(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys\n"
        "from memvault import AsyncMemory\n"
        "async def main():\n"
        f"    mem = AsyncMemory('sqlite:///{tmp_path / 'm.db'}')\n"
        "    await mem.add('Prefers dark mode', agent_id='dev-1')\n"
        "    await mem.search('theme', agent_id='dev-1')\n"
        "    await mem.close()\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in ('memvault.learning.engine', 'memvault.graph.memory',"
        " 'memvault.conversation.memory') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
