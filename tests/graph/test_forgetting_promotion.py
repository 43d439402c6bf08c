"""Optical forgetting and skill promotion through the public API, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from memvault._ids import utc_now
from memvault.config.graph import ForgettingConfig, GraphConfig, SkillPromotionConfig
from memvault.learning.forgetting import ContentFidelity, compress_text
from memvault.learning.models import ApprovalStatus
from memvault.llm.scripted import ScriptedLLM

from .conftest import OpenMemory

LONG = (
    "Dana: We finally chose the venue for the offsite. It is the old brewery by the river, "
    "booked for the second week of October. Catering comes from the Thai place on Main Street. "
    "Everyone has to confirm attendance by Friday, and Erik handles the bus from the office. "
    "Budget stays under twelve thousand euros including the workshop materials."
)
FORGET = ForgettingConfig(enabled=True, compress_after_days=30, summary_after_days=90)


def test_compress_text_keeps_the_speaker_and_whole_sentences() -> None:
    out = compress_text(LONG, 120)
    assert out.startswith("Dana: We finally chose the venue") and len(out) <= 120
    assert out.endswith(".")
    cut = compress_text("Dana: " + "word " * 80, 60)
    assert cut.startswith("Dana: ") and cut.endswith("…") and len(cut) <= 60


async def test_forgetting_is_off_by_default(open_memory: OpenMemory) -> None:
    mem = open_memory()
    await mem.add(LONG, agent_id="a", dedup=False, created_at=utc_now() - timedelta(days=200))
    assert await mem.forget() == []
    assert (await mem.list(agent_id="a"))[0].content == LONG


async def test_unaccessed_memories_decay_and_originals_stay_in_the_archive(
    open_memory: OpenMemory,
) -> None:
    mem = open_memory(forgetting=FORGET)
    now = utc_now()
    month = await mem.add(LONG, agent_id="a", dedup=False, created_at=now - timedelta(days=40))
    season = await mem.add(
        LONG.replace("Dana", "Erik"),
        agent_id="a",
        dedup=False,
        created_at=now - timedelta(days=120),
    )
    fresh = await mem.add(LONG.replace("Dana", "Fay"), agent_id="a", dedup=False, created_at=now)
    important = await mem.add(
        LONG.replace("Dana", "Gus"),
        agent_id="a",
        dedup=False,
        created_at=now - timedelta(days=120),
        importance=0.9,
    )
    [report] = await mem.forget(agent_id="a")
    assert (report.compressed, report.summarized) == (1, 1)
    assert set(report.archived) == {month, season}
    live = {e.id: e for e in await mem.list(agent_id="a", limit=100)}
    assert fresh in live and important in live and month not in live and season not in live
    compressed = live[report.archived[month]]
    assert compressed.metadata.extra["fidelity"] == ContentFidelity.COMPRESSED
    assert compressed.metadata.extra["original_id"] == month
    assert len(compressed.content) <= FORGET.compressed_chars < len(LONG)
    assert compressed.created_at == (await mem.archived(agent_id="a"))[-1].entry.created_at
    summary = live[report.archived[season]]
    assert summary.metadata.extra["fidelity"] == ContentFidelity.SUMMARY_ONLY
    assert len(summary.content) <= FORGET.summary_chars
    # Decay state is in the memories: a second pass does not decay them again.
    [again] = await mem.forget(agent_id="a")
    assert again.archived == {}
    # Nothing is lost: the original comes back from the archive.
    restored = await mem.restore(month, agent_id="a")
    assert restored.content == LONG


async def test_recently_accessed_memories_do_not_decay(open_memory: OpenMemory) -> None:
    mem = open_memory(forgetting=FORGET)
    old = await mem.add(LONG, agent_id="a", dedup=False, created_at=utc_now() - timedelta(days=45))
    assert [h.id for h in await mem.search("offsite venue brewery", agent_id="a")] == [old]
    [report] = await mem.forget(agent_id="a")
    assert report.archived == {}


async def test_forgetting_summarises_with_the_llm_when_asked(open_memory: OpenMemory) -> None:
    llm = ScriptedLLM(["Offsite at the river brewery in October."])
    cfg = FORGET.model_copy(update={"use_llm": True})
    mem = open_memory(forgetting=cfg, llm=llm)
    old = await mem.add(LONG, agent_id="a", dedup=False, created_at=utc_now() - timedelta(days=45))
    [report] = await mem.forget(agent_id="a")
    new = await mem.get(report.archived[old], agent_id="a")
    assert new.content == "Offsite at the river brewery in October."


PROMOTE = GraphConfig(
    enabled=True,
    promotion=SkillPromotionConfig(consolidation_threshold=2.0, min_accesses=2, min_memories=2),
)


async def test_dense_accessed_graph_regions_are_proposed_as_skills(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=PROMOTE)
    for text in (
        "Deploys of Kafka need the Zookeeper quorum checked first.",
        "Kafka upgrades go through Staging before Production.",
        "Kafka consumer lag alerts page the Platform team.",
        "Lunch today was pasta.",
    ):
        await mem.add(text, agent_id="ops")
    assert await mem.promote_skills(agent_id="ops") == []  # dense, but never used yet
    for _ in range(2):
        await mem.search("Kafka deploy upgrade Staging", agent_id="ops")
    items = await mem.promote_skills(agent_id="ops")
    assert items and items[0].status is ApprovalStatus.PENDING
    assert items[0].evidence["entity"] == "kafka"
    assert "Kafka" in items[0].proposal.condition
    queued = await mem.learning.approvals(status=ApprovalStatus.PENDING)
    assert {i.id for i in items} <= {i.id for i in queued}
    assert await mem.promote_skills(agent_id="ops") == []  # already proposed
    assert await mem.promote_skills(agent_id="someone-else") == []


async def test_the_maintenance_pass_runs_forgetting(open_memory: OpenMemory) -> None:
    from memvault.maintenance.scheduler import MaintenanceScheduler

    mem = open_memory(forgetting=FORGET)
    old = await mem.add(LONG, agent_id="a", dedup=False, created_at=utc_now() - timedelta(days=45))
    scheduler = MaintenanceScheduler(mem)
    try:
        report = await scheduler.run_pass(force=True)
    finally:
        await scheduler.state.close()
    assert not report.errors
    assert "forgetting a: 1 decayed" in report.summary()
    assert [e.id for e in await mem.list(agent_id="a")] != [old]
    assert (await mem.archived(agent_id="a"))[0].entry.id == old
