"""Lessons, capture, pruning, propagation, the evolver's rules, org memory, SKILL.md, config.

Real SQLite files and the real embedding model; the proposer is a scripted LLM.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.config import MemvaultConfig, load_config
from memvault.errors import MemoryConfigError, MemoryPermissionError, MemoryValidationError
from memvault.learning.evolver import check_supersession
from memvault.learning.models import (
    ApprovalKind,
    OrgFactAuthor,
    OrgFactKind,
    OrgFactWriteRequest,
    OrgMemoryQuery,
    ProceduralMemoryProposal,
    Seniority,
    SupersessionVerdict,
)
from memvault.learning.pruning import ParetoPruningStrategy, TtlPruningStrategy
from memvault.learning.sanitize import error_category, sanitize_error
from memvault.learning.skill_md import write_skill_md
from memvault.llm.scripted import ScriptedLLM
from memvault.models import MemoryEntry, MemoryMetadata
from memvault.protocols import Embedder

from .conftest import LESSONS, LOW_CONFIDENCE, scripted_proposer

FAIL = {"success": False, "task_type": "deploy", "error": "RegistryRateLimitError: 429"}


def _config(tmp_path: Path, text: str) -> MemvaultConfig:
    path = tmp_path / "memvault.yaml"
    path.write_text(text, encoding="utf-8")
    return load_config(path, env={}, url=str(tmp_path / "m.db"))


async def _memory(
    tmp_path: Path, minilm: Embedder, llm: ScriptedLLM | None, yaml: str = "memory: {}\n"
) -> AsyncMemory:
    cfg = _config(tmp_path, yaml)
    return AsyncMemory(str(tmp_path / "m.db"), config=cfg, embedder=minilm, llm=llm)


@pytest.fixture
async def mem(tmp_path: Path, minilm: Embedder) -> AsyncIterator[AsyncMemory]:
    async with await _memory(tmp_path, minilm, scripted_proposer()) as m:
        yield m


# -- config -------------------------------------------------------------------------------------


def test_every_learning_key_loads_from_yaml_with_the_seed_defaults(tmp_path: Path) -> None:
    defaults = MemvaultConfig().procedural
    assert (
        defaults.enabled,
        defaults.model,
        defaults.temperature,
        defaults.max_tokens,
        defaults.min_confidence,
    ) == (True, "example-small-001", 0.3, 1500, 0.5)
    assert defaults.capture.min_quality_score == 8.0
    assert defaults.capture.success_quality_percentile == 75.0
    assert defaults.pruning.max_age_days == 90
    assert defaults.propagation.max_propagation_targets == 10
    ev = defaults.evolver
    assert (
        ev.enabled,
        ev.requires_human_approval,
        ev.min_confidence_for_org_promotion,
        ev.min_agents_seen_pattern,
        ev.max_proposals_per_cycle,
        ev.max_org_entries,
    ) == (False, True, 0.8, 3, 10, 10_000)
    cfg = _config(
        tmp_path,
        """\
memory:
  procedural:
    min_confidence: 0.7
    skill_md_directory: skills
    capture: {type: hybrid, min_quality_score: 9}
    pruning: {strategy: pareto, max_entries: 5}
    propagation: {strategy: department, max_propagation_targets: 3}
    evolver: {enabled: true, min_agents_for_pattern: 2, max_proposals_per_cycle: 4}
  org_memory:
    core_policies: ["PRs require 2 approvals"]
    extended_store: {backend: sqlite, max_retrieved_per_query: 3}
    write_access: {adrs: [human, lead]}
""",
    )
    assert cfg.procedural.capture.type.value == "hybrid"
    assert cfg.procedural.evolver.min_agents_seen_pattern == 2
    assert cfg.org_memory.write_access.adrs == ("human", "lead")
    assert cfg.org_memory.extended_store.max_retrieved_per_query == 3


@pytest.mark.parametrize(
    ("yaml", "key"),
    [
        ("procedural: {evolver: {requires_human_approval: false}}", "procedural.evolver"),
        ("procedural: {capture: {type: always}}", "procedural.capture.type"),
        ("procedural: {min_confidence: 2}", "procedural.min_confidence"),
        ("procedural: {pruning: {max_age_days: 0}}", "procedural.pruning.max_age_days"),
        ("org_memory: {write_access: {policies: [robot]}}", "org_memory.write_access.policies"),
        ("org_memory: {core_policies: [a,b,c,d,e,f,g,h,i,j,k]}", "org_memory.core_policies"),
        ("procedural: {propagation: {strategy: everyone}}", "procedural.propagation.strategy"),
    ],
)
def test_bad_learning_config_names_the_key(tmp_path: Path, yaml: str, key: str) -> None:
    with pytest.raises(MemoryConfigError, match=f"memory\\.{key}"):
        _config(tmp_path, f"memory:\n  {yaml}\n")


# -- failure lessons ------------------------------------------------------------------------------


async def test_a_failure_becomes_a_non_inferable_procedural_lesson(mem: AsyncMemory) -> None:
    report = await mem.learn_from(FAIL, agent_id="dev-1")
    assert report.captured and report.lesson_id is not None
    entry = await mem.get(report.lesson_id, agent_id="dev-1")
    assert entry.category.value == "procedural"
    assert {"non-inferable", "procedural-lesson", "failure-derived"} <= set(entry.tags)
    tiers = entry.metadata.extra["procedural"]
    assert tiers["condition"] and tiers["action"] and tiers["execution_steps"]


async def test_malformed_json_is_repaired_once(tmp_path: Path, minilm: Embedder) -> None:
    llm = scripted_proposer(malformed_first=True)
    async with await _memory(tmp_path, minilm, llm) as mem:
        report = await mem.learn_from(FAIL, agent_id="dev-1")
    assert report.captured and len(llm.calls) == 2
    assert "could not be used" in llm.calls[1][-1].content


async def test_low_confidence_proposals_are_discarded(tmp_path: Path, minilm: Embedder) -> None:
    llm = ScriptedLLM([json.dumps(LOW_CONFIDENCE)])
    async with await _memory(tmp_path, minilm, llm) as mem:
        report = await mem.learn_from(FAIL, agent_id="dev-1")
        assert not report.captured and "min_confidence" in report.reason
        assert await mem.count(agent_id="dev-1") == 0
        assert report.trajectory_id is not None  # still recorded for the evolver


async def test_learn_from_never_raises(
    tmp_path: Path, minilm: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    llm = ScriptedLLM(["no json at all", "still no json"])
    async with await _memory(tmp_path, minilm, llm) as mem:
        with caplog.at_level(logging.WARNING):
            broken = await mem.learn_from(FAIL, agent_id="dev-1")
        assert broken.error is not None and "LLMOutputError" in broken.error
        assert any(r.message == "memory.learn.failed" for r in caplog.records)
        bad = await mem.learn_from({"success": "maybe", "messages": []}, agent_id="dev-1")
        assert bad.error is not None and not bad.captured
        pool = await mem.learn_from(FAIL, agent_id="_org")
        assert pool.error is not None and "reserved" in pool.error


def test_errors_are_sanitised_and_categorised() -> None:
    text = sanitize_error(
        "Traceback (most recent call last):\n  File x\nAuthError: bad password=hunter2 for "
        "bob@example.com at https://u:p@host/x in /home/bob/app"
    )
    assert "hunter2" not in text and "bob@example.com" not in text and "u:p@" not in text
    assert text.startswith("AuthError") and "/home/<user>" in text
    assert error_category("x RegistryRateLimitError: 429") == "registryratelimiterror"
    assert error_category("rate limit hit", "Quota") == "quota"
    assert error_category(None) is None


# -- success capture -------------------------------------------------------------------------------


async def test_success_capture_needs_quality_and_percentile(
    tmp_path: Path, minilm: Embedder
) -> None:
    yaml = "memory:\n  procedural: {capture: {type: hybrid}}\n"
    async with await _memory(tmp_path, minilm, scripted_proposer(), yaml) as mem:
        low = await mem.learn_from({"success": True, "quality_score": 7}, agent_id="a")
        assert not low.captured and "min_quality_score" in low.reason
        for score in (9.0, 9.5, 9.8, 9.9):
            await mem.learn_from({"success": True, "quality_score": score}, agent_id="a")
        below = await mem.learn_from({"success": True, "quality_score": 8.5}, agent_id="a")
        assert not below.captured and "percentile" in below.reason
        top = await mem.learn_from({"success": True, "quality_score": 10}, agent_id="a")
        assert top.captured and top.strategy == "hybrid"
        entry = await mem.get(top.lesson_id or "", agent_id="a")
        assert "success-derived" in entry.tags
        assert (await mem.learn_from(FAIL, agent_id="a")).captured  # hybrid: failures too


# -- propagation ---------------------------------------------------------------------------------


async def test_department_propagation_copies_to_peers_only(
    tmp_path: Path, minilm: Embedder
) -> None:
    yaml = (
        "memory:\n  procedural: {propagation: {strategy: department, max_propagation_targets: 2}}\n"
    )
    async with await _memory(tmp_path, minilm, scripted_proposer(), yaml) as mem:
        for agent, dept in (("a", "eng"), ("b", "eng"), ("c", "eng"), ("d", "eng"), ("x", "ops")):
            await mem.set_profile(agent, department=dept)
        report = await mem.learn_from(FAIL, agent_id="a")
        assert report.propagated_to == ("b", "c")  # source excluded, capped, stable order
        (copy,) = await mem.list(agent_id="b")
        assert "propagated:a" in copy.tags
        assert await mem.count(agent_id="x") == 0 and await mem.count(agent_id="d") == 0


# -- pruning ---------------------------------------------------------------------------------------


def _entry(n: int, *, age_days: float, importance: float, uses: int = 0) -> MemoryEntry:
    at = datetime(2026, 6, 1, tzinfo=UTC) - timedelta(days=age_days)
    return MemoryEntry(
        id=f"e{n}",
        agent_id="a",
        category="procedural",
        content=f"lesson {n}",
        metadata=MemoryMetadata(importance=importance),
        created_at=at,
        updated_at=at,
        access_count=uses,
    )


def test_ttl_and_pareto_pruning() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    entries = [
        _entry(0, age_days=100, importance=0.9),
        _entry(1, age_days=1, importance=0.9),  # newest and most relevant: dominates
        _entry(2, age_days=5, importance=0.5),  # dominated by e1
        _entry(3, age_days=10, importance=0.95),  # most relevant: on the frontier
    ]
    assert TtlPruningStrategy(90).select(entries, now=now).expired == ("e0",)
    kept = ParetoPruningStrategy(2).select(entries[1:], now=now)
    assert kept.dominated == ("e2",)
    assert ParetoPruningStrategy(10).select(entries, now=now).dominated == ()


async def test_pruned_lessons_go_to_the_archive(tmp_path: Path, minilm: Embedder) -> None:
    yaml = "memory:\n  procedural: {pruning: {strategy: ttl, max_age_days: 30}}\n"
    async with await _memory(tmp_path, minilm, scripted_proposer(), yaml) as mem:
        report = await mem.learn_from(FAIL, agent_id="a")
        later = datetime.now(UTC) + timedelta(days=31)
        pruned = await mem.learning.prune("a", now=later)
        assert pruned.expired == (report.lesson_id,)
        assert await mem.count(agent_id="a") == 0
        assert [a.memory_id for a in await mem.archived(agent_id="a")] == [report.lesson_id]


# -- the evolver's supersession rules ---------------------------------------------------------


def _p(
    condition: str, action: str, confidence: float, cat: str | None = None
) -> ProceduralMemoryProposal:
    return ProceduralMemoryProposal(
        discovery="d",
        condition=condition,
        action=action,
        confidence=confidence,
        error_category=cat,
    )


def test_conflict_is_checked_before_full_supersession() -> None:
    old = _p("deploying images to the registry", "push images one at a time with backoff", 0.8)
    contradicting = _p("deploying images to the registry", "raise parallelism to twenty", 0.95)
    assert check_supersession(contradicting, old) is SupersessionVerdict.CONFLICT
    better = _p(
        "deploying images to the registry under load",
        "push images one at a time with backoff and jitter",
        0.95,
    )
    assert check_supersession(better, old) is SupersessionVerdict.FULL
    weaker = better.model_copy(update={"confidence": 0.5})
    assert check_supersession(weaker, old) is SupersessionVerdict.PARTIAL
    unrelated = _p("writing release notes", "group by component", 0.9)
    assert check_supersession(unrelated, old) is SupersessionVerdict.PARTIAL


async def test_the_evolver_is_off_by_default_and_needs_enough_agents(
    mem: AsyncMemory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        off = await mem.evolve()
    assert not off.enabled and any(r.message == "SKILL_EVOLVER_DISABLED" for r in caplog.records)
    for agent in ("a", "b"):
        await mem.learn_from(FAIL, agent_id=agent)
    assert (await mem.evolve(force=True)).emitted == ()  # two agents < min_agents_seen_pattern
    await mem.learn_from(FAIL, agent_id="c")
    with caplog.at_level(logging.INFO):
        cycle = await mem.evolve(force=True)
    assert len(cycle.emitted) == 1
    events = {r.message for r in caplog.records}
    assert {
        "SKILL_EVOLVER_CYCLE_START",
        "SKILL_EVOLVER_PROPOSAL_EMITTED",
        "SKILL_EVOLVER_CYCLE_COMPLETE",
    } <= events
    assert await mem.count(agent_id="_org") == 0  # proposal only: nothing written to the org


async def _conflicting_skill(mem: AsyncMemory) -> str:
    lesson = LESSONS["registryratelimiterror"]
    contradicting = {**lesson, "action": "raise registry parallelism to twenty workers"}
    return await mem.learning.org.write(
        OrgFactWriteRequest(
            kind=OrgFactKind.PROCEDURE,
            content="skill",
            tags=("skill",),
            metadata={
                "procedural": _p(
                    str(lesson["condition"]),
                    str(contradicting["action"]),
                    0.9,
                    "registryratelimiterror",
                ).model_dump(mode="json")
            },
        ),
        author=OrgFactAuthor(kind="human", name="alice"),
    )


async def test_a_conflicting_proposal_is_escalated_to_a_human_not_proposed(
    mem: AsyncMemory,
) -> None:
    old_id = await _conflicting_skill(mem)
    for agent in ("a", "b", "c"):
        await mem.learn_from(FAIL, agent_id=agent)
    cycle = await mem.evolve(force=True)
    assert cycle.emitted == () and cycle.conflicts == ("error:registryratelimiterror",)
    (item_id,) = cycle.escalated
    item = await mem.learning.approval(item_id)
    assert item.kind is ApprovalKind.CONFLICT and item.verdict is SupersessionVerdict.CONFLICT
    assert item.status.value == "pending" and item.evidence["conflicts_with"] == old_id
    assert item.evidence["existing_action"] == "raise registry parallelism to twenty workers"
    assert "one at a time" in item.proposal.action and item.proposal.supersedes == (old_id,)
    assert [s.id for s in await mem.learning.skills()] == [old_id]  # nothing applied yet
    again = await mem.evolve(force=True)
    assert again.escalated == () and again.emitted == ()  # escalated once, not every cycle
    # Rejecting the escalation keeps the existing skill (the decision is kept, audited).
    kept = await mem.learning.reject(item_id, actor="human:alice", reason="the old one is right")
    assert kept.status.value == "rejected"
    assert [s.id for s in await mem.learning.skills()] == [old_id]


async def test_an_approved_conflict_replaces_the_contradicted_skill(mem: AsyncMemory) -> None:
    old_id = await _conflicting_skill(mem)
    for agent in ("a", "b", "c"):
        await mem.learn_from(FAIL, agent_id=agent)
    (item_id,) = (await mem.evolve(force=True)).escalated
    done = await mem.learning.approve(item_id, actor="human:alice", reason="backoff is right")
    by_id = {s.id: s for s in await mem.learning.skills(include_superseded=True)}
    assert by_id[old_id].proposal.superseded_by == done.applied_id
    (live,) = await mem.learning.skills()
    assert live.id == done.applied_id and "one at a time" in live.proposal.action


async def test_escalations_count_against_max_proposals_per_cycle(
    tmp_path: Path, minilm: Embedder
) -> None:
    yaml = "memory:\n  procedural:\n    evolver: {max_proposals_per_cycle: 1}\n"
    async with await _memory(tmp_path, minilm, scripted_proposer(), yaml) as mem:
        await _conflicting_skill(mem)
        for agent in ("a", "b", "c"):
            await mem.learn_from(FAIL, agent_id=agent)
            await mem.learn_from(
                {"success": False, "task_type": "migrate", "error": "SchemaDriftError: drift"},
                agent_id=agent,
            )
        cycle = await mem.evolve(force=True)
        assert len(cycle.emitted) + len(cycle.escalated) == 1
        follow_up = await mem.evolve(force=True)  # the other pattern waits for the next cycle
        assert len(follow_up.emitted) + len(follow_up.escalated) == 1


async def test_full_supersession_replaces_the_old_skill_on_approval(mem: AsyncMemory) -> None:
    lesson = LESSONS["registryratelimiterror"]
    old = _p(str(lesson["condition"]), str(lesson["action"]), 0.5, "registryratelimiterror")
    old_id = await mem.learning.org.write(
        OrgFactWriteRequest(
            kind=OrgFactKind.PROCEDURE,
            content=old.render(),
            tags=("skill",),
            metadata={"procedural": old.model_dump(mode="json")},
        ),
        author=OrgFactAuthor(kind="human", name="alice"),
    )
    for agent in ("a", "b", "c"):
        await mem.learn_from(FAIL, agent_id=agent)
    (item_id,) = (await mem.evolve(force=True)).emitted
    item = await mem.learning.approval(item_id)
    assert item.verdict is SupersessionVerdict.FULL and item.proposal.supersedes == (old_id,)
    done = await mem.learning.approve(item_id, actor="human:alice")
    skills = await mem.learning.skills(include_superseded=True)
    by_id = {s.id: s for s in skills}
    assert by_id[old_id].proposal.superseded_by == done.applied_id
    assert [s.id for s in await mem.learning.skills()] == [done.applied_id]


async def test_rejection_needs_a_reason_and_is_kept(mem: AsyncMemory) -> None:
    for agent in ("a", "b", "c"):
        await mem.learn_from(FAIL, agent_id=agent)
    (item_id,) = (await mem.evolve(force=True)).emitted
    with pytest.raises(MemoryValidationError):
        await mem.learning.reject(item_id, actor="human:bob", reason=" ")
    rejected = await mem.learning.reject(item_id, actor="human:bob", reason="too vague")
    assert rejected.status.value == "rejected" and rejected.reason == "too vague"
    assert (await mem.learning.approvals(status="rejected"))[0].id == item_id
    assert await mem.count(agent_id="_org") == 0
    assert (await mem.evolve(force=True)).emitted == ()  # a rejected pattern is not re-proposed


# -- org memory ------------------------------------------------------------------------------------


async def test_org_write_access_and_core_policies(tmp_path: Path, minilm: Embedder) -> None:
    yaml = (
        "memory:\n  org_memory: "
        '{core_policies: ["PRs require 2 approvals"], max_core_policies: 2}\n'
    )
    async with await _memory(tmp_path, minilm, None, yaml) as mem:
        org = mem.learning.org
        human = OrgFactAuthor(kind="human", name="alice")
        senior = OrgFactAuthor(kind="agent", name="dev-1", seniority=Seniority.SENIOR)
        junior = OrgFactAuthor(kind="agent", name="dev-2", seniority=Seniority.JUNIOR)
        policy = OrgFactWriteRequest(kind=OrgFactKind.POLICY, content="No commits to main")
        with pytest.raises(MemoryPermissionError):
            await org.write(policy, author=senior)  # policies are human-only
        await org.write(policy, author=human)
        with pytest.raises(MemoryValidationError, match="max_core_policies"):
            await org.write(policy.model_copy(update={"content": "third"}), author=human)
        adr = OrgFactWriteRequest(
            kind=OrgFactKind.ADR, content="ADR-7: Litestar, not Flask, for APIs"
        )
        with pytest.raises(MemoryPermissionError):
            await org.write(adr, author=junior)
        adr_id = await org.write(adr, author=senior)
        assert [p.content for p in await org.list_policies()] == [
            "PRs require 2 approvals",
            "No commits to main",
        ]
        found = await org.query(OrgMemoryQuery(text="which web framework for APIs?"))
        assert [f.id for f in found] == [adr_id] and found[0].author == "agent:dev-1"
        # Every injection strategy carries the core policies.
        for name in ("context", "tool_based", "self_editing"):
            messages = await mem.injection_strategy(name).prepare_messages("dev-9", "hello", 500)
            assert "No commits to main" in messages[0].content, name


# -- SKILL.md ---------------------------------------------------------------------------------


def test_skill_md_is_safe_and_atomic(tmp_path: Path) -> None:
    proposal = _p("when x", "do y", 0.9).model_copy(
        update={"name": "../../etc/passwd", "discovery": 'Say "hi"\n---\nname: evil'}
    )
    path = write_skill_md(tmp_path / "skills", proposal, "01abc-def")
    assert path.parent.parent == (tmp_path / "skills").resolve()
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\nname: etc-passwd-01abcdef\n")
    head = text.split("\n---\n", 1)[0]  # the front matter ends at the first --- line
    assert "\nname: evil" not in head and head.count("\nname:") == 1
    again = write_skill_md(tmp_path / "skills", proposal, "01abc-def")
    assert again == path and len(list((tmp_path / "skills").rglob("*"))) == 2


async def test_lessons_are_materialised_as_skill_md(tmp_path: Path, minilm: Embedder) -> None:
    yaml = f"memory:\n  procedural: {{skill_md_directory: '{tmp_path / 'skills'}'}}\n"
    async with await _memory(tmp_path, minilm, scripted_proposer(), yaml) as mem:
        report = await mem.learn_from(FAIL, agent_id="a")
    assert report.skill_file is not None
    assert "## Steps" in Path(report.skill_file).read_text(encoding="utf-8")
