"""EM-Graph causal links through the public API, on SQLite and PostgreSQL: a new memory is linked
to the event before it (``caused`` / ``preceded``), graph recall crosses the links, the
``five_signal`` preset's causal signal reads them, and they follow the memories' lifecycle."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memvault import AsyncMemory
from memvault.config.graph import GraphConfig
from memvault.graph.causal import is_causal, link_for, propagate
from memvault.graph.models import CAUSED, PRECEDED, EpisodeLink

from .conftest import OpenMemory

T0 = datetime(2024, 3, 4, 9, tzinfo=UTC)
CAUSAL = GraphConfig(enabled=True, causal_links=True)
PLAIN = GraphConfig(enabled=True)


def test_cues_and_link_rules() -> None:
    assert is_causal("The deploy was rolled back because the migration failed.")
    assert is_causal("It led to a two-hour outage.")
    assert not is_causal("Priya likes green tea.")
    window = timedelta(days=7)
    sharing = [("old", T0 - timedelta(days=30)), ("a", T0 - timedelta(hours=2))]
    sharing.append(("b", T0 - timedelta(hours=1)))
    link = link_for("new", T0, "So we paused it.", sharing=sharing, latest=None, window=window)
    assert link is not None and (link.cause, link.relation, link.weight) == ("b", CAUSED, 1.0)
    quiet = link_for("new", T0, "Kestrel is fine.", sharing=sharing, latest=None, window=window)
    assert quiet is not None and (quiet.cause, quiet.relation) == ("b", PRECEDED)
    # Outside the window, or nothing earlier: no link.
    stale = [("old", T0 - timedelta(days=30))]
    assert link_for("new", T0, "So what.", sharing=stale, latest=None, window=window) is None
    latest = ("prev", T0 - timedelta(minutes=5))
    plain = link_for("new", T0, "Priya agreed.", sharing=[], latest=latest, window=window)
    assert plain is None  # no shared entity and no cause stated
    fallback = link_for("new", T0, "Because of that, we waited.", sharing=[], latest=latest,
                        window=window)  # fmt: skip
    assert fallback is not None and fallback.cause == "prev"
    links = [EpisodeLink(cause="c", effect="e", relation=CAUSED, weight=1.0, at=T0)]
    assert propagate({"e": 0.8}, links, decay=0.5, limit=10) == {"e": 0.8, "c": 0.4}
    assert propagate({"c": 1.0, "e": 0.9}, links, decay=0.5, limit=1) == {"c": 1.0}


async def _incident(mem: AsyncMemory) -> dict[str, str]:
    texts = [
        ("crash", "The Zephyr backup job crashed at 2am on Monday.", 0),
        ("tea", "Priya likes green tea.", -10 * 24 * 60),  # outside the 7-day window
        ("restore", "Because of that, Priya restored the wiki from a snapshot.", 30),
        ("disk", "The Kestrel cluster ran out of disk.", 60),
        ("drain", "So the Kestrel cluster was drained by Omar.", 90),
        ("later", "Omar rebalanced the Kestrel shards.", 120),
    ]
    ids: dict[str, str] = {}
    for name, text, minutes in texts:
        ids[name] = await mem.add(text, agent_id="a", created_at=T0 + timedelta(minutes=minutes))
    return ids


async def test_new_memories_are_linked_to_the_event_before_them(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=CAUSAL)
    ids = await _incident(mem)
    links = {
        (k.cause, k.effect): k.relation
        for k in await mem.graph.episode_links("a", list(ids.values()))
    }
    assert links == {
        # No shared entity, but a stated cause: the event just before.
        (ids["crash"], ids["restore"]): CAUSED,
        # A shared entity (Kestrel) wins over the latest memory, and "so" states the effect.
        (ids["disk"], ids["drain"]): CAUSED,
        # Same cluster, no cause stated: one event after the other.
        (ids["drain"], ids["later"]): PRECEDED,
    }
    other = open_memory(graph=PLAIN)
    await _incident(other)
    assert await other.graph.episode_links("a", list(ids.values())) == []


async def test_recall_crosses_causal_links(open_memory: OpenMemory) -> None:
    on = open_memory(graph=CAUSAL)
    ids = await _incident(on)
    off = open_memory(graph=PLAIN)
    off_ids = await _incident(off)
    # "Priya" names only the restore and the tea; the crash shares no entity with either.
    found = {h.id: h.relevance_score for h in await on.graph_recall("Priya", agent_id="a")}
    assert ids["crash"] in found
    assert found[ids["crash"]] < found[ids["restore"]]
    plain = {h.id for h in await off.graph_recall("Priya", agent_id="a")}
    assert off_ids["crash"] not in plain and off_ids["restore"] in plain
    # The five_signal preset's causal distance reads the same activation.
    query = "What did Priya do?"
    with_links = {
        e.id: e.relevance_score
        for e in await on.search(query, agent_id="a", preset="five_signal", limit=10)
    }
    without = {
        e.id: e.relevance_score
        for e in await off.search(query, agent_id="a", preset="five_signal", limit=10)
    }
    assert (with_links[ids["crash"]] or 0.0) > (without[off_ids["crash"]] or 0.0)
    # Before the effect was written, the link did not exist.
    early = await on.graph_recall("Priya", agent_id="a", as_of=T0 + timedelta(minutes=10))
    assert ids["crash"] not in {h.id for h in early}


async def test_links_follow_deletion_archive_and_restore(open_memory: OpenMemory) -> None:
    mem = open_memory(graph=CAUSAL)
    ids = await _incident(mem)
    await mem.archive([ids["restore"]], agent_id="a", reason="archive")
    assert await mem.graph.episode_links("a", [ids["crash"]]) == []
    assert ids["crash"] not in {h.id for h in await mem.graph_recall("Priya", agent_id="a")}
    await mem.restore(ids["restore"], agent_id="a")
    assert len(await mem.graph.episode_links("a", [ids["crash"]])) == 1
    assert await mem.delete(ids["crash"], agent_id="a")
    assert await mem.graph.episode_links("a", [ids["restore"]]) == []
