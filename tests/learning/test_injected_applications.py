"""Skill applications counted from injection: a skill in the task's context whose outcome is
reported without naming skills counts once (real SQLite file, the bundled embedder, a scripted
proposer)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.learning import engine as engine_module
from memvault.learning.models import (
    SKILL_TAG,
    OrgFactAuthor,
    OrgFactKind,
    OrgFactWriteRequest,
)
from memvault.models import MemoryCategory, MemoryEntry, MemoryMetadata
from memvault.protocols import Embedder

from .conftest import scripted_proposer

FAIL = {"success": False, "task_type": "deploy", "error": "RegistryRateLimitError: 429"}
QUERY = "push the container images for the payments deploy"
SKILL = "When pushing container images to the registry, push one at a time with backoff on 429"


async def _org_skill(mem: AsyncMemory) -> str:
    request = OrgFactWriteRequest(kind=OrgFactKind.PROCEDURE, content=SKILL, tags=(SKILL_TAG,))
    return await mem.learning.org.write(request, author=OrgFactAuthor(kind="human", name="ops"))


async def test_injected_skills_count_when_the_outcome_names_none(
    tmp_path: Path, minilm: Embedder
) -> None:
    async with AsyncMemory(str(tmp_path / "m.db"), embedder=minilm, llm=scripted_proposer()) as mem:
        skill_id = await _org_skill(mem)
        lesson = await mem.learn_from(FAIL, agent_id="dev-1")  # dev-1's own lesson
        assert lesson.captured and lesson.lesson_id and lesson.applied_skills == ()

        context = await mem.context(QUERY, agent_id="dev-1")
        shown = {e.id for e in context.entries}
        assert {skill_id, lesson.lesson_id} <= shown
        report = await mem.learn_from({"success": True, "task_type": "deploy"}, agent_id="dev-1")
        assert set(report.applied_skills) == {skill_id, lesson.lesson_id}
        assert report.applications_recorded == 2
        count, last = await mem.learning.usage.get(skill_id)
        assert count == 1 and last is not None and last <= datetime.now(UTC)
        assert (await mem.learning.usage.get(lesson.lesson_id))[0] == 1

        # Consumed: a second outcome without a new context counts nothing.
        again = await mem.learn_from({"success": True}, agent_id="dev-1")
        assert again.applications_recorded == 0
        # Another agent's outcome never counts dev-1's injections.
        await mem.context(QUERY, agent_id="dev-1")
        other = await mem.learn_from({"success": True}, agent_id="dev-2")
        assert other.applications_recorded == 0
        # Naming skills wins over what was injected (and still consumes the injections).
        named = await mem.learn_from(
            {"success": True, "applied_skills": [lesson.lesson_id]}, agent_id="dev-1"
        )
        assert named.applied_skills == (lesson.lesson_id,)
        assert (await mem.learning.usage.get(skill_id))[0] == 1
        assert (await mem.learn_from({"success": True}, agent_id="dev-1")).applied_skills == ()


async def test_stale_injections_are_not_counted(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with AsyncMemory(str(tmp_path / "m.db"), embedder=minilm) as mem:
        skill_id = await _org_skill(mem)
        assert skill_id in {e.id for e in (await mem.context(QUERY, agent_id="dev-1")).entries}
        monkeypatch.setattr(engine_module, "_INJECTED_TTL_SECONDS", -1.0)  # already too old
        report = await mem.learn_from({"success": True}, agent_id="dev-1")
        assert report.applications_recorded == 0 and report.error is None


async def test_an_outcome_reported_to_another_process_counts_the_injection_once(
    tmp_path: Path, minilm: Embedder
) -> None:
    # Two memories over one file stand in for two servers: the context is prepared by one,
    # the outcome reported to the other (as a load balancer would send them).
    path = str(tmp_path / "shared.db")
    async with (
        AsyncMemory(path, embedder=minilm) as first,
        AsyncMemory(path, embedder=minilm) as second,
    ):
        skill_id = await _org_skill(first)
        assert skill_id in {e.id for e in (await first.context(QUERY, agent_id="dev-1")).entries}
        report = await second.learn_from({"success": True}, agent_id="dev-1")
        assert report.applied_skills == (skill_id,) and report.applications_recorded == 1
        # Claimed once: the first process's own outcome finds nothing left to count.
        assert (await first.learn_from({"success": True}, agent_id="dev-1")).applied_skills == ()
        assert (await first.learning.usage.get(skill_id))[0] == 1


def _entry(n: int, *tags: str) -> MemoryEntry:
    now = datetime.now(UTC)
    return MemoryEntry(
        id=f"m{n}",
        agent_id="_org",
        category=MemoryCategory.PROCEDURAL,
        content=f"skill {n}",
        metadata=MemoryMetadata(tags=tags),
        created_at=now,
        updated_at=now,
    )


async def test_the_injection_record_is_bounded(
    tmp_path: Path, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine_module, "_INJECTED_PER_AGENT", 3)
    monkeypatch.setattr(engine_module, "_INJECTED_AGENTS", 2)
    async with AsyncMemory("memory://", embedder=minilm) as mem:
        engine = mem.learning
        # Only skills and lessons are remembered, never for a pool id.
        assert engine.note_injected("a", [_entry(0, "org"), _entry(1)]) == 0
        assert engine.note_injected("_org", [_entry(2, SKILL_TAG)]) == 0
        engine.note_injected("a", [_entry(n, SKILL_TAG) for n in range(5)])
        engine.note_injected("b", [_entry(9, "procedural-lesson")])
        engine.note_injected("c", [_entry(8, SKILL_TAG)])  # "a" is the least recent: dropped
        assert (await mem.learn_from({"success": True}, agent_id="a")).applied_skills == ()
        assert (await mem.learn_from({"success": True}, agent_id="b")).applied_skills == ("m9",)
        engine.note_injected("a", [_entry(n, SKILL_TAG) for n in range(5)])
        kept = (await mem.learn_from({"success": True}, agent_id="a")).applied_skills
        assert kept == ("m2", "m3", "m4")  # the newest three
