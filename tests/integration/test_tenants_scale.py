"""Many tenants on one service: idle tenants are closed past ``max_open_tenants`` (their stores
hold connections) and reopen on their next request; ``drop_tenant`` removes a tenant's storage.

On SQLite (files) and PostgreSQL (schemas); the scaling figures at 10, 100 and 1,000 tenants
are measured by ``benchmarks/bench_tenants.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from memvault import service as service_module
from memvault.api.auth import Actor
from memvault.config import load_config
from memvault.errors import MemoryPermissionError
from memvault.protocols import Embedder
from memvault.service import MemoryService


def _url(request: pytest.FixtureRequest, tmp_path: Path, schemas: Callable[[], str]) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "main.db")
    url = request.getfixturevalue("postgres_url")
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}schema={schemas()}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path, schemas: Callable[[], str]) -> str:
    return _url(request, tmp_path, schemas)


def _agent(tenant: str) -> Actor:
    return Actor.agent("bot", tenant=tenant, scopes=["read", "write"])


async def test_idle_tenants_close_past_the_cap_and_reopen_with_their_data(
    store_url: str, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service_module, "TENANT_IDLE_SECONDS", 0.0)
    service = MemoryService(load_config(url=store_url), embedder=minilm, max_open_tenants=3)
    try:
        for n in range(6):
            await service.call(_agent(f"co-{n}"), "store", {"agent_id": "bot", "content": f"n{n}"})
            assert len(service.open_tenants) <= 3
        # The first tenant was closed to make room; its next request opens it again.
        assert "co-0" not in service.open_tenants
        found = await service.call(_agent("co-0"), "list", {"agent_id": "bot"})
        assert [e.content for e in found] == ["n0"]
        assert "co-0" in service.open_tenants
    finally:
        await service.close()


async def test_a_busy_tenant_is_never_closed(store_url: str, minilm: Embedder) -> None:
    # Nobody is idle for two minutes here: the cap is exceeded rather than a store closed under
    # a caller that may still hold it.
    service = MemoryService(load_config(url=store_url), embedder=minilm, max_open_tenants=2)
    try:
        for n in range(4):
            await service.call(_agent(f"busy-{n}"), "store", {"agent_id": "bot", "content": "x"})
        assert len(service.open_tenants) == 4
    finally:
        await service.close()


async def test_drop_tenant_removes_its_storage_and_nothing_else(
    store_url: str, minilm: Embedder
) -> None:
    service = MemoryService(load_config(url=store_url), embedder=minilm)
    try:
        for tenant in ("keep", "gone"):
            await service.call(_agent(tenant), "store", {"agent_id": "bot", "content": tenant})
        removed = await service.drop_tenant("gone")
        assert removed, "nothing was removed"
        assert "gone" not in service.open_tenants
        # The dropped tenant starts empty if it comes back; the other keeps its memory.
        assert await service.call(_agent("gone"), "list", {"agent_id": "bot"}) == []
        kept = await service.call(_agent("keep"), "list", {"agent_id": "bot"})
        assert [e.content for e in kept] == ["keep"]
        with pytest.raises(MemoryPermissionError):
            await service.drop_tenant("default")
    finally:
        await service.close()
