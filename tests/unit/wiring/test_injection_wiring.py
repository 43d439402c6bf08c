"""Issue 17 item 6: shared knowledge in injected contexts, the non-inferable advisory on writes,
and ``injection_strategy(..., llm=)`` reaching the Search-and-Ask loop.

Real SQLite files and the real embedding model; the LLM is a scripted one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from memvault import Memory, MemvaultConfig
from memvault.config import MemoryOptionsConfig, MemoryStorageConfig
from memvault.errors import MemoryConfigError
from memvault.injection.context import SHARED_MARK
from memvault.injection.tool_based import ToolBasedInjectionStrategy
from memvault.llm.scripted import ScriptedLLM
from memvault.models import MemoryLevel, MemoryScope
from memvault.protocols import Embedder
from memvault.retrieval.presets import get_preset

INSUFFICIENT = '{"sufficient": false, "missing": "the name"}'
SUFFICIENT = '{"sufficient": true}'


def _config(db: Path, *, shared: bool = True) -> MemvaultConfig:
    return MemvaultConfig(
        level=MemoryLevel.PERSISTENT,
        storage=MemoryStorageConfig(url=str(db)),
        options=MemoryOptionsConfig(shared_knowledge_base=shared),
    )


@pytest.fixture
def mem(tmp_path: Path, minilm: Embedder) -> Iterator[Memory]:
    with Memory(config=_config(tmp_path / "s.db"), embedder=minilm) as m:
        yield m


# -- shared knowledge in every context ----------------------------------------------------------


def test_context_includes_shared_knowledge_marked_and_no_private_leak(mem: Memory) -> None:
    mine = mem.add("The deploy pipeline for dev-1 runs on GitHub Actions", agent_id="dev-1")
    shared = mem.publish("Production deploys need two approvals on the release PR", agent_id="lead")
    secret = mem.add("The deploy token of dev-2 is in vault path kv/dev2", agent_id="dev-2")
    ctx = mem.context("how do production deploys work?", agent_id="dev-1", token_budget=800)
    ids = {e.id for e in ctx.entries}
    assert {mine, shared} <= ids
    assert secret not in ids and "kv/dev2" not in ctx.text
    assert f"{SHARED_MARK}Production deploys need two approvals" in ctx.text
    assert f"{SHARED_MARK}The deploy pipeline" not in ctx.text
    # The entries are the stored ones (the mark lives only in the rendering).
    [pub] = [e for e in ctx.entries if e.id == shared]
    assert pub.scope is MemoryScope.SHARED and not pub.content.startswith(SHARED_MARK)
    # The context strategy (what agent frameworks use) goes the same way.
    strategy = mem.context_strategy()
    again = mem._run(strategy.prepare_context("dev-1", "how do production deploys work?", 800))
    assert shared in {e.id for e in again.entries}


def test_shared_entries_get_no_personal_boost(tmp_path: Path, minilm: Embedder) -> None:
    # The default preset gives no personal boost at all; one that does shows the difference.
    preset = get_preset("default").model_copy(update={"personal_boost": 0.2})
    with Memory(config=_config(tmp_path / "b.db"), embedder=minilm, preset=preset) as mem:
        text = "The staging database lives in eu-west-1"
        own = mem.add(text, agent_id="dev-1", dedup=False)
        pub = mem.publish(text, agent_id="dev-2")
        hits = mem.search(
            "where is the staging database?", agent_id="dev-1", include_shared=True, explain=True
        )
        by_id = {h.id: h for h in hits}
        own_score, pub_score = by_id[own].score, by_id[pub].score
        assert own_score is not None and pub_score is not None
        assert own_score.boost > 0.0 and pub_score.boost == 0.0
        ctx = mem.context("where is the staging database?", agent_id="dev-1")
        assert {own, pub} <= {e.id for e in ctx.entries}


def test_context_leaves_shared_knowledge_out_when_disabled(
    tmp_path: Path, minilm: Embedder
) -> None:
    db = tmp_path / "off.db"
    with Memory(config=_config(db), embedder=minilm) as on:
        on.publish("All services log in JSON to Loki", agent_id="lead")
        on.add("The billing service logs to stdout", agent_id="dev-1")
        assert any(
            e.scope is MemoryScope.SHARED for e in on.context("logging", agent_id="dev-1").entries
        )
    with Memory(config=_config(db, shared=False), embedder=minilm) as off:
        ctx = off.context("how do services log?", agent_id="dev-1")
        assert ctx.entries and all(e.scope is MemoryScope.PRIVATE for e in ctx.entries)
        assert SHARED_MARK not in ctx.text


# -- the non-inferable advisory ----------------------------------------------------------------


def test_untagged_write_is_stored_with_a_warning(
    mem: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="memvault.memory"):
        plain = mem.write("We chose Litestar over Flask for its typing", agent_id="dev-1")
    assert plain.stored and plain.id is not None
    assert len(plain.warnings) == 1 and "non-inferable" in plain.warnings[0]
    assert any(r.getMessage() == "memory.non_inferable.advisory" for r in caplog.records)
    tagged = mem.write(
        "Never use the v1 billing API: it double-charges", agent_id="dev-1", tags=["non-inferable"]
    )
    assert tagged.stored and tagged.warnings == ()
    working = mem.write("Currently on step 2 of 5", agent_id="dev-1", category="working")
    assert working.stored and working.warnings == ()
    # Nothing stored, nothing to advise on.
    again = mem.write("We chose Litestar over Flask for its typing", agent_id="dev-1")
    assert again.id == plain.id and again.warnings == ()


# -- Search-and-Ask from the Python API ----------------------------------------------------------


def _pets(mem: Memory) -> str:
    mem.add("Deployed the invoicing service on Monday", agent_id="u")
    return mem.add("The cat at home is called Miso", agent_id="u")


def test_injection_strategy_with_llm_runs_search_and_ask(mem: Memory) -> None:
    miso = _pets(mem)
    llm = ScriptedLLM([INSUFFICIENT, '{"query": "name of the cat"}', SUFFICIENT])
    strategy = mem.injection_strategy("tool_based", llm=llm)
    assert isinstance(strategy, ToolBasedInjectionStrategy)
    assert strategy.config.query_reformulation_enabled
    found = mem._run(strategy.search("u", "what is my pet called?", limit=2))
    assert miso in {e.id for e in found}
    assert len(llm.calls) == 3  # checked, reformulated, checked again
    # Without an LLM the tool searches once.
    plain = mem.injection_strategy("tool_based")
    assert isinstance(plain, ToolBasedInjectionStrategy)
    assert not plain.config.query_reformulation_enabled


def test_search_and_ask_uses_the_memorys_llm_else_searches_once(
    tmp_path: Path, minilm: Embedder
) -> None:
    llm = ScriptedLLM([INSUFFICIENT, '{"query": "name of the cat"}', SUFFICIENT])
    with Memory(config=_config(tmp_path / "a.db"), embedder=minilm, llm=llm) as mem:
        miso = _pets(mem)
        found = mem.search_and_ask("what is my pet called?", agent_id="u", limit=2)
        assert miso in {e.id for e in found} and len(llm.calls) == 3
    with Memory(config=_config(tmp_path / "b.db"), embedder=minilm) as bare:
        _pets(bare)
        # No LLM anywhere: the deterministic fallback is the first search alone.
        fallback = bare.search_and_ask("what is my pet called?", agent_id="u", limit=2)
        plain = bare.search("what is my pet called?", agent_id="u", limit=2)
        assert [e.id for e in fallback] == [e.id for e in plain]
        with pytest.raises(MemoryConfigError):
            bare.injection_strategy("tool_based", llm=llm, max_rounds=9)
        with pytest.raises(MemoryConfigError):
            bare.search_and_ask("anything", agent_id="u", max_rounds=0)
