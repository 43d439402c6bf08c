"""``after_session`` and ``after_autonomous``: consolidation fired by the session manager and by
the autonomous capture calls, only under that interval, never raising into the agent's flow.

Real SQLite files and the real embedding model.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.agent.capture import capture_episode
from memvault.config import MemoryOptionsConfig, MemvaultConfig
from memvault.maintenance import MaintenanceConfig
from memvault.protocols import Embedder
from memvault.sessions import SessionManager, open_session_store

AGENT = "runner"
Opener = Callable[..., AbstractAsyncContextManager[AsyncMemory]]


@pytest.fixture
def opened(tmp_path: Path, minilm: Embedder) -> Opener:
    @asynccontextmanager
    async def open_(interval: str, strategy: str = "simple") -> AsyncIterator[AsyncMemory]:
        config = MemvaultConfig(
            options=MemoryOptionsConfig(consolidation_interval=interval),  # type: ignore[arg-type]
            maintenance=MaintenanceConfig(consolidation_strategy=strategy),  # type: ignore[arg-type]
        )
        async with AsyncMemory(str(tmp_path / "m.db"), config=config, embedder=minilm) as mem:
            yield mem

    return open_


async def _episodes(mem: AsyncMemory, n: int) -> None:
    # Past consolidation's minimum age (30 days): a trigger merges only memories that old.
    old = datetime.now(UTC) - timedelta(days=60)
    for i in range(n):
        await mem.add(
            f"Run {i}: synced the CRM export for region {i} and fixed {i + 2} bad rows.",
            agent_id=AGENT,
            category="episodic",
            dedup=False,
            created_at=old + timedelta(minutes=i),
        )


def _history() -> list[dict[str, str]]:
    return [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]


async def test_session_end_consolidates_under_after_session(opened: Opener, tmp_path: Path) -> None:
    async with opened("after_session") as mem:
        await _episodes(mem, 4)
        store = open_session_store(str(tmp_path / "m.db"))
        manager = SessionManager(store, AGENT, memory=mem)
        sid = manager.new_session_id()
        assert await manager.save_turn(sid, _history())
        result = await manager.end_session(sid, _history())
        assert result is not None and len(result.created_ids) == 1
        archived = await mem.archived(agent_id=AGENT)
        assert {a.reason for a in archived} == {"consolidate"}
        assert (await manager.resume()) is not None  # the session itself is kept
        await store.close()


async def test_session_end_does_nothing_under_another_interval(
    opened: Opener, tmp_path: Path
) -> None:
    async with opened("daily") as mem:
        await _episodes(mem, 4)
        store = open_session_store(str(tmp_path / "m.db"))
        manager = SessionManager(store, AGENT, memory=mem)
        assert await manager.end_session(manager.new_session_id(), _history()) is None
        assert await mem.archived(agent_id=AGENT) == []
        await store.close()


async def test_a_failed_session_consolidation_is_logged_not_raised(
    opened: Opener, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The llm strategy without an LLM is a configuration error: logged, the session goes on.
    async with opened("after_session", "llm") as mem:
        await _episodes(mem, 4)
        store = open_session_store(str(tmp_path / "m.db"))
        manager = SessionManager(store, AGENT, memory=mem)
        sid = manager.new_session_id()
        with caplog.at_level(logging.WARNING, logger="memvault.maintenance"):
            assert await manager.end_session(sid, _history()) is None
        assert any("after_session consolidation failed" in r.getMessage() for r in caplog.records)
        resumed = await manager.resume()  # the session was saved all the same
        assert resumed is not None and resumed[0] == sid
        assert len(await mem.list(agent_id=AGENT, limit=50)) == 4  # nothing lost
        await store.close()


async def test_autonomous_capture_consolidates_under_after_autonomous(opened: Opener) -> None:
    async with opened("after_autonomous") as mem:
        await _episodes(mem, 4)  # two months old
        ids = [
            await capture_episode(
                mem,
                agent_id=AGENT,
                summary=f"Nightly run {i}: deployed build {100 + i} to staging, all checks green.",
                trigger_type="cron",
            )
            for i in range(2)
        ]
        assert all(ids)
        archived = await mem.archived(agent_id=AGENT)
        assert archived and {a.reason for a in archived} == {"consolidate"}
        # The runs just captured are younger than the minimum age: untouched.
        assert not {a.memory_id for a in archived} & set(ids)
        for captured in ids:
            assert (await mem.get(str(captured), agent_id=AGENT)).consolidated_into is None


async def test_autonomous_capture_leaves_other_intervals_alone(opened: Opener) -> None:
    async with opened("after_session") as mem:
        for i in range(4):
            assert await capture_episode(
                mem,
                agent_id=AGENT,
                summary=f"Nightly run {i}: rotated log file {i}.",
                trigger_type="cron",
            )
        assert await mem.archived(agent_id=AGENT) == []
        assert len(await mem.list(agent_id=AGENT, limit=50)) == 4
