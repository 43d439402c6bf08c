"""Consolidation never destroys (issue 41): it merges only old memories, every merged original
keeps answering by its id (its archived copy, ``consolidated_into`` naming the new memory), each
original's own text finds the memory that replaced it, and a dry run names exactly the memories
a real run then merges.

Real SQLite files, a real PostgreSQL schema and the in-memory store, the real embedding model.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memvault import AsyncMemory
from memvault.errors import MemoryNotFoundError
from memvault.maintenance import MaintenanceScheduler
from memvault.protocols import Embedder, MemoryStore

AGENT = "dev-1"


@pytest.fixture
async def mem(any_backend: MemoryStore) -> AsyncIterator[AsyncMemory]:
    async with AsyncMemory(backend=any_backend) as memory:
        yield memory


async def _facts(mem: AsyncMemory, texts: list[str], *, age_days: float) -> list[str]:
    # Oldest first, one second apart, the last one ``age_days`` old.
    end = datetime.now(UTC) - timedelta(days=age_days)
    return [
        await mem.add(
            text,
            agent_id=AGENT,
            dedup=False,
            created_at=end - timedelta(seconds=len(texts) - i),
        )
        for i, text in enumerate(texts)
    ]


FACTS = [f"Service {i} of the billing stack listens on port {8000 + i}." for i in range(26)]


async def test_memories_written_now_are_never_merged(mem: AsyncMemory) -> None:
    ids = await _facts(mem, FACTS, age_days=0)
    before = {i: (await mem.get(i, agent_id=AGENT)).to_json() for i in ids}
    result = await mem.consolidate(agent_id=AGENT)
    assert result.groups == () and result.created_ids == () and result.removed_ids == ()
    assert result.too_young == 26
    # A maintenance pass (what `memvault maintain` runs), forced: consolidation runs, nothing
    # is young enough to merge.
    scheduler = MaintenanceScheduler(mem)
    report = await scheduler.run_pass(force=True)
    await scheduler.close()
    (run,) = report.consolidated
    assert run.created == 0 and run.archived == 0 and run.too_young == 26
    assert await mem.count(agent_id=AGENT) == 26
    assert await mem.archived(agent_id=AGENT) == []
    for memory_id in ids:
        assert (await mem.get(memory_id, agent_id=AGENT)).to_json() == before[memory_id]


async def test_merged_originals_answer_by_id_naming_their_new_memory(mem: AsyncMemory) -> None:
    ids = await _facts(mem, FACTS, age_days=45)
    young = await _facts(mem, ["The staging cluster was rebuilt this morning."] * 1, age_days=0)
    text = dict(zip(ids, FACTS, strict=True))
    result = await mem.consolidate(agent_id=AGENT)
    assert result.created_ids and all(2 <= len(g.consolidated_ids) <= 5 for g in result.groups)
    merged = {o: g.created_ids[0] for g in result.groups for o in g.consolidated_ids}
    assert set(merged) == set(result.removed_ids) and len(merged) == 25  # one kept
    for original, into in merged.items():
        answer = await mem.get(original, agent_id=AGENT)
        assert answer.id == original and answer.content == text[original]
        assert answer.consolidated_into == into
        summary = await mem.get(into, agent_id=AGENT)
        assert text[original] in summary.content and summary.consolidated_into is None
    # The young memory and the kept one are untouched.
    (kept,) = set(ids) - set(merged)
    assert (await mem.get(kept, agent_id=AGENT)).consolidated_into is None
    assert (await mem.get(young[0], agent_id=AGENT)).consolidated_into is None
    # An archived original is read-only: change the memory it went into.
    first = next(iter(merged))
    with pytest.raises(MemoryNotFoundError, match="consolidated into"):
        await mem.update(first, agent_id=AGENT, content="changed")
    # Restored, it is live again and no longer names a new memory.
    back = await mem.restore(first, agent_id=AGENT)
    assert back.consolidated_into is None
    assert (await mem.get(first, agent_id=AGENT)).consolidated_into is None
    # Deleted memories stay gone: only consolidation keeps an id answering.
    assert await mem.delete(kept, agent_id=AGENT)
    with pytest.raises(MemoryNotFoundError):
        await mem.get(kept, agent_id=AGENT)


async def test_dry_run_names_exactly_what_the_run_merges(mem: AsyncMemory) -> None:
    await _facts(mem, FACTS[:14], age_days=40)
    await _facts(mem, FACTS[14:], age_days=2)
    count = await mem.count(agent_id=AGENT)
    dry = await mem.consolidate(agent_id=AGENT, dry_run=True)
    assert dry.dry_run and dry.created_ids == () and dry.removed_ids == ()
    assert await mem.count(agent_id=AGENT) == count and await mem.archived(agent_id=AGENT) == []
    planned = [(g.category, g.consolidated_ids) for g in dry.groups]
    assert planned and dry.too_young == 12
    real = await mem.consolidate(agent_id=AGENT)
    assert [(g.category, g.consolidated_ids) for g in real.groups] == planned
    assert set(real.removed_ids) == {i for _, group in planned for i in group}


async def test_min_age_zero_merges_memories_of_any_age(mem: AsyncMemory) -> None:
    await _facts(mem, FACTS[:6], age_days=0.01)  # a quarter of an hour old
    result = await mem.consolidate(agent_id=AGENT, min_age_days=0)
    assert len(result.removed_ids) == 5 and result.too_young == 0


# -- each original's own text finds the memory it went into -------------------------------------

_PEOPLE = ["Priya", "Marco", "Chen", "Amara", "Lukas", "Sofia", "Kenji", "Fatima", "Diego", "Ines"]
_TEAMS = ["billing", "auth", "search", "checkout", "ingest", "reporting", "payments", "mobile"]
_TOOLS = ["PostgreSQL", "Redis", "Kafka", "Terraform", "Kubernetes", "React", "Airflow", "Sentry"]
_CITIES = ["Lisbon", "Osaka", "Nairobi", "Toronto", "Krakow", "Austin", "Lyon", "Pune"]
_FOODS = ["ramen", "tacos", "falafel", "sushi", "pho", "dumplings", "paella", "curry"]
_HOBBIES = ["bouldering", "chess", "sailing", "pottery", "running", "birdwatching", "jazz piano"]
_TEMPLATES = [
    "{p} moved to {c} in {y} and works remotely for the {t} team.",
    "The {t} service stores its data in {tool}; {p} owns the schema.",
    "{p} is allergic to peanuts and always orders {f} at team lunches.",
    "Incident {n}: the {t} pipeline stalled because {tool} ran out of disk.",
    "{p} spends weekends on {h} and ran a club for it in {c}.",
    "Deploys of the {t} service need two approvals and a green {tool} check.",
    "{p}'s manager is {q}; their one-on-one is every other {d}.",
    "Customer ticket {n} reports the {t} dashboard loading slowly in {c}.",
    "The {t} team decided in {y} to replace {tool} with a managed service.",
    "{p} prefers written status updates over meetings and hates {h} small talk.",
    "The on-call rotation for {t} changes every {d} at nine in the morning.",
    "{p} booked flights to {c} for the {t} offsite on the {n}th.",
    "Budget for the {t} team in {y} is {n} thousand euros, approved by {q}.",
    "{p} wrote the runbook for restarting {tool} after a failed upgrade.",
    "The {t} API rate limit is {n} requests per minute per customer key.",
    "{p} and {q} pair on the {t} migration every {d} afternoon.",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]


def _corpus(n: int, seed: int = 41) -> list[str]:
    rng = random.Random(seed)
    out: dict[str, None] = {}
    while len(out) < n:
        people = rng.sample(_PEOPLE, 2)
        text = rng.choice(_TEMPLATES).format(
            p=people[0], q=people[1], t=rng.choice(_TEAMS), tool=rng.choice(_TOOLS),
            c=rng.choice(_CITIES), f=rng.choice(_FOODS), h=rng.choice(_HOBBIES),
            d=rng.choice(_DAYS), y=rng.randint(2015, 2025), n=rng.randint(2, 999),
        )  # fmt: skip
        out[text] = None
    return list(out)


async def test_each_original_finds_its_new_memory(tmp_path: Path, minilm: Embedder) -> None:
    # The reported bug: one 16,000-character blob per category, which its originals' own words
    # no longer found in the top 20. New memories of at most five similar originals are found:
    # every one in the top 10, all but a few near-twins ("The <team> API rate limit is <n>
    # requests per minute": 19 of them in this store) in the top 3.
    texts = _corpus(300)
    async with AsyncMemory(str(tmp_path / "store.db"), embedder=minilm) as mem:
        ids = await _facts(mem, texts, age_days=90)
        text = dict(zip(ids, texts, strict=True))
        result = await mem.consolidate(agent_id=AGENT)
        merged = {o: g.created_ids[0] for g in result.groups for o in g.consolidated_ids}
        assert len(merged) == 299 and await mem.count(agent_id=AGENT) == 61  # 60 new + 1 kept
        ranks = []
        for original, into in merged.items():
            hits = [h.id for h in await mem.search(text[original], agent_id=AGENT, limit=10)]
            ranks.append(hits.index(into) + 1 if into in hits else None)
        assert None not in ranks
        top3 = sum(1 for r in ranks if r is not None and r <= 3)
        # Measured: 295 of 299 (the misses: near-twins ranked 4th to 7th).
        assert top3 >= 0.97 * len(ranks), f"{top3}/{len(ranks)} in the top 3"
