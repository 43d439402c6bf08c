"""A caller who names no embedder gets the model the store was built with.

Every entry point that builds an embedder for a store (``Memory(url)``, the CLI, ``memvault
check``, ``MemoryService`` per tenant, ``migrate_urls``) reads the store's recorded model first;
naming a different model still raises ``EmbeddingModelChangedError``. Real SQLite files; the
stores are built with small hashing embedders (models memvault can build from their id) so the
module runs in seconds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from memvault import AsyncMemory, Memory
from memvault.backends.factory import tenant_url
from memvault.backends.recorded_model import recorded_model
from memvault.cli.app import main
from memvault.config import MemvaultConfig, load_config
from memvault.embeddings import HashingEmbedder, spec_for_model_id
from memvault.errors import EmbeddingModelChangedError
from memvault.migrate import migrate_urls
from memvault.service import Actor, MemoryService

FACT = "The build server runs Debian 12 with 64 GB of RAM."


def _build(url: str, dim: int, text: str = FACT) -> str:
    with Memory(url, embedder=HashingEmbedder(dim), config=MemvaultConfig()) as mem:
        return mem.add(text, agent_id="a")


@pytest.fixture
def store(isolated_env: Path) -> Callable[[int], tuple[str, str]]:
    def make(dim: int) -> tuple[str, str]:
        url = str(isolated_env / f"h{dim}.db")
        return url, _build(url, dim)

    return make


def test_spec_for_model_id_maps_local_models_only() -> None:
    assert spec_for_model_id("sentence-transformers/all-MiniLM-L6-v2") == "minilm"
    assert spec_for_model_id("sentence-transformers/paraphrase-MiniLM-L3-v2") == "minilm-l3"
    assert spec_for_model_id("hashing-v1-48") == "hashing:48"
    assert spec_for_model_id("openai-compat:text-embedding-3-small") is None
    assert spec_for_model_id("sentence-transformers/all-MiniLM-L6-v2+ft-abc") is None
    assert spec_for_model_id("hashing-v1-x") is None


def test_memory_url_follows_the_store_and_logs_it(
    store: Callable[[int], tuple[str, str]], caplog: pytest.LogCaptureFixture
) -> None:
    url, mid = store(48)
    with caplog.at_level(logging.INFO, logger="memvault.backends.embedder"):
        mem = Memory(url)
    with mem:
        assert mem.backend.embedder.model_id == "hashing-v1-48"
        assert [e.id for e in mem.search("which OS does the build server run?", agent_id="a")] == [
            mid
        ]
    assert any("hashing-v1-48" in r.getMessage() for r in caplog.records)


async def test_async_memory_follows_the_store(store: Callable[[int], tuple[str, str]]) -> None:
    url, mid = store(40)
    async with AsyncMemory(url) as mem:
        assert mem.backend.embedder.model_id == "hashing-v1-40"
        assert [e.id for e in await mem.search("build server", agent_id="a")] == [mid]


def test_a_named_model_that_differs_still_raises(
    store: Callable[[int], tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = store(48)
    with (
        pytest.raises(EmbeddingModelChangedError),
        Memory(url, config=load_config(url=url, env={"MEMVAULT_EMBEDDER": "hashing:32"})) as mem,
    ):
        mem.search("build server", agent_id="a")
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing:32")
    with pytest.raises(EmbeddingModelChangedError), Memory(url) as mem:
        mem.search("build server", agent_id="a")
    with pytest.raises(EmbeddingModelChangedError), Memory(url, embedder=HashingEmbedder(32)) as m:
        m.search("build server", agent_id="a")


def test_the_cli_follows_the_store(
    store: Callable[[int], tuple[str, str]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, mid = store(48)
    capsys.readouterr()
    assert main(["--db", url, "search", "build server", "-a", "a", "--json"]) == 0
    assert [hit["id"] for hit in json.loads(capsys.readouterr().out)] == [mid]
    assert main(["--db", url, "check", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    monkeypatch.setenv("MEMVAULT_EMBEDDER", "hashing:32")
    assert main(["--db", url, "search", "build server", "-a", "a"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "hashing-v1-48" in err[0], err


async def test_the_service_follows_each_tenant_store(isolated_env: Path) -> None:
    base = str(isolated_env / "svc.db")
    acme_id = _build(tenant_url(base, "acme"), 48)
    globex_id = _build(tenant_url(base, "globex"), 40)
    svc = MemoryService(load_config(url=base, env={}))
    try:
        acme = Actor.admin("root", tenant="acme")
        globex = Actor.admin("root", tenant="globex")
        query = {"query": "build server", "agent_id": "a"}
        assert [e.id for e in await svc.call(acme, "search", query)] == [acme_id]
        assert [e.id for e in await svc.call(globex, "search", query)] == [globex_id]
        assert (await svc.memory("acme")).backend.embedder.model_id == "hashing-v1-48"
        assert (await svc.memory("globex")).backend.embedder.model_id == "hashing-v1-40"
    finally:
        await svc.close()


async def test_migrate_follows_the_source(store: Callable[[int], tuple[str, str]]) -> None:
    url, mid = store(48)
    dest = str(Path(url).with_name("copy.db"))
    report = await migrate_urls(url, dest, config=MemvaultConfig())
    assert report.copied == 1
    assert recorded_model(dest) == "hashing-v1-48"
    with Memory(dest) as mem:
        assert [e.id for e in mem.search("build server", agent_id="a")] == [mid]
