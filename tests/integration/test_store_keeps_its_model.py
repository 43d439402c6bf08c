"""A store built with a model other than the default keeps opening and searching with its own
model when none is configured, so the default can change (or a user can pick
paraphrase-MiniLM-L3-v2 once) without locking any store out.

A store is built here with paraphrase-MiniLM-L3-v2 (not the default), its search results (ids
and scores) recorded with that model named explicitly; then it is opened without naming a model
through ``Memory(url)``, the CLI (``memvault --db``) and the REST server, and must answer
identically. New stores get the default (all-MiniLM-L6-v2) and record it; naming ``minilm-l3``
gives L3; naming a model other than the store's still raises. Real SQLite files, the real bundled
models, real HTTP.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from live_server import run_app
from memvault import Memory
from memvault.backends.recorded_model import recorded_model
from memvault.cli.app import main
from memvault.config import MemvaultConfig, load_config
from memvault.embeddings import (
    DEFAULT_MODEL_ID,
    MINILM_L3_MODEL_ID,
    MINILM_MODEL_ID,
    default_embedder,
    shared_minilm_embedder,
    shared_minilm_l3_embedder,
)
from memvault.errors import EmbeddingModelChangedError
from memvault.server.rest import create_app
from memvault.service import MemoryService

FACTS = (
    "Alice drinks a double espresso every morning before standup.",
    "The staging database runs PostgreSQL 16 with pgvector.",
    "Bob is allergic to peanuts, so order lunch accordingly.",
    "The nightly backup job runs at 02:00 UTC and keeps 14 days.",
    "Deploys are frozen on Fridays after 15:00.",
    "The design review for the billing service is on Thursday.",
    "Priya leads QA and wants a test plan on every pull request.",
    "Our Kubernetes cluster runs version 1.29 on three nodes.",
)
QUERIES = ("what coffee does Alice like?", "when do backups run?", "who leads QA?")


def _hits(mem: Memory, query: str) -> list[tuple[str, float | None]]:
    return [(e.id, e.relevance_score) for e in mem.search(query, agent_id="a", limit=5)]


@pytest.fixture
def l3_store(isolated_env: Path) -> tuple[str, dict[str, list[tuple[str, float | None]]]]:
    """A store built with paraphrase-MiniLM-L3-v2, and its answers with that model named."""
    url = str(isolated_env / "l3.db")
    with Memory(url, embedder=shared_minilm_l3_embedder(), config=MemvaultConfig()) as mem:
        for text in FACTS:
            mem.add(text, agent_id="a")
    with Memory(url, embedder=shared_minilm_l3_embedder(), config=MemvaultConfig()) as mem:
        expected = {q: _hits(mem, q) for q in QUERIES}
    assert recorded_model(url) == MINILM_L3_MODEL_ID
    return url, expected


def test_the_default_model_is_l6() -> None:
    assert DEFAULT_MODEL_ID == MINILM_MODEL_ID
    assert default_embedder() is shared_minilm_embedder()


def test_an_l3_store_searches_unchanged_through_memory(
    l3_store: tuple[str, dict[str, list[tuple[str, float | None]]]],
) -> None:
    url, expected = l3_store
    with Memory(url) as mem:
        assert mem.backend.embedder.model_id == MINILM_L3_MODEL_ID
        assert {q: _hits(mem, q) for q in QUERIES} == expected
    assert expected[QUERIES[0]][0][1] is not None


def test_an_l3_store_searches_unchanged_through_the_cli(
    l3_store: tuple[str, dict[str, list[tuple[str, float | None]]]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, expected = l3_store
    for query in QUERIES:
        capsys.readouterr()
        assert main(["--db", url, "search", query, "-a", "a", "--limit", "5", "--json"]) == 0
        hits = json.loads(capsys.readouterr().out)
        assert [(h["id"], h["relevance_score"]) for h in hits] == expected[query]


def test_an_l3_store_searches_unchanged_through_the_server(
    l3_store: tuple[str, dict[str, list[tuple[str, float | None]]]],
) -> None:
    url, expected = l3_store
    service = MemoryService(load_config(url=url))
    base, stop = run_app(create_app(service, keys=None))
    try:
        with httpx.Client(base_url=base, timeout=30.0) as client:
            for query in QUERIES:
                got = client.post("/v1/search", json={"agent_id": "a", "query": query, "limit": 5})
                assert got.status_code == 200, got.text
                results = got.json()["results"]
                assert [(r["id"], r["relevance_score"]) for r in results] == expected[query]
    finally:
        stop()


def test_a_new_store_gets_the_default_and_records_it(isolated_env: Path) -> None:
    url = str(isolated_env / "new.db")
    with Memory(url) as mem:
        assert mem.backend.embedder is default_embedder()
        mem.add(FACTS[0], agent_id="a")
        assert mem.search("coffee", agent_id="a")[0].content == FACTS[0]
    assert recorded_model(url) == MINILM_MODEL_ID
    with Memory(url) as again:  # and opens with it again
        assert again.backend.embedder.model_id == MINILM_MODEL_ID


def test_naming_minilm_l3_on_a_new_store_gives_l3(isolated_env: Path) -> None:
    url = str(isolated_env / "pinned.db")
    cfg = load_config(url=url, env={"MEMVAULT_EMBEDDER": "minilm-l3"})
    with Memory(url, config=cfg) as mem:
        assert mem.backend.embedder is shared_minilm_l3_embedder()
        mem.add(FACTS[1], agent_id="a")
    assert recorded_model(url) == MINILM_L3_MODEL_ID


def test_a_named_model_other_than_the_stores_still_raises(
    l3_store: tuple[str, dict[str, list[tuple[str, float | None]]]], isolated_env: Path
) -> None:
    url, _ = l3_store
    cfg = load_config(url=url, env={"MEMVAULT_EMBEDDER": "minilm"})
    with (
        pytest.raises(EmbeddingModelChangedError, match="memvault reindex"),
        Memory(url, config=cfg) as mem,
    ):
        mem.search("coffee", agent_id="a")
    l6 = str(isolated_env / "l6.db")
    with Memory(l6) as mem:
        mem.add(FACTS[2], agent_id="a")
    named = load_config(url=l6, env={"MEMVAULT_EMBEDDER": "minilm-l3"})
    with pytest.raises(EmbeddingModelChangedError), Memory(l6, config=named) as mem:
        mem.search("peanuts", agent_id="a")
