"""A served store's own maintenance never rewrites what was just written (issue 41).

The reported bug: five memories posted to a fresh ``memvault serve``; 75 s later four of them
were one "Consolidated semantic memories: ..." text and their ids answered 404. Here a real
app over a real SQLite file runs the maintenance task ``memvault serve`` attaches (defaults,
but a clock the test moves and passes it asks for instead of waiting ``poll_seconds``); clients
talk to it over real HTTP with the real embedding model.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from live_server import run_app
from memvault import AsyncMemory
from memvault.config import load_config
from memvault.maintenance import MaintenanceReport, ServiceMaintenance
from memvault.protocols import Embedder
from memvault.server.keys import open_key_store
from memvault.server.rest import create_app
from memvault.service import MemoryService

AGENT = "dev-1"
NOTES = [
    "The API gateway runs on port 8443.",
    "Deploys need two approvals on the release PR.",
    "The on-call rotation changes every Monday at 09:00.",
    "Staging uses the eu-west-1 region.",
    "Grafana dashboards live in the ops folder.",
]


class Clock:
    """The maintenance clock: moved by hand, so a day passes without waiting for it."""

    def __init__(self) -> None:
        self.at = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.at


@dataclass
class Served:
    url: str
    secret: str
    maintenance: ServiceMaintenance
    clock: Clock

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.secret}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60.0)

    def started(self) -> None:
        """Wait for the pass the server runs by itself at startup."""
        deadline = time.monotonic() + 60
        while self.maintenance.passes < 1:
            assert time.monotonic() < deadline, "no maintenance pass at startup"
            time.sleep(0.05)

    def run_pass(self, *, days: float = 2) -> list[MaintenanceReport]:
        """Move the clock ``days`` on and have the server's own task run a pass now."""
        self.clock.at += timedelta(days=days)
        return self.maintenance.submit_pass().result(timeout=120)


@pytest.fixture
def serve(tmp_path: Path, minilm: Embedder) -> Iterator[Callable[[], Served]]:
    stops: list[Callable[[], None]] = []
    db = tmp_path / "served.db"

    def start() -> Served:
        # What `memvault serve` builds, with the default configuration (maintenance enabled,
        # daily consolidation, a pass every 60 s), over this test's file.
        config = load_config(url=str(db))
        assert config.maintenance.enabled and config.consolidation.min_age_days == 30
        service = MemoryService(config, embedder=minilm)
        keys = open_key_store(str(db))
        _, secret = keys.create(name="admin", scopes=["admin"])
        app = create_app(service, keys=keys)
        clock = Clock()
        maintenance = ServiceMaintenance(service, now=clock)
        app.state.memvault_maintenance = maintenance
        url, stop = run_app(app)
        stops.append(stop)
        return Served(url=url, secret=secret, maintenance=maintenance, clock=clock)

    yield start
    for stop in reversed(stops):
        stop()


def _post(c: httpx.Client, content: str, **extra: object) -> str:
    resp = c.post("/v1/memories", json={"agent_id": AGENT, "content": content, **extra})
    assert resp.status_code == 201, resp.text
    memory_id: str = resp.json()["id"]
    return memory_id


def _get(c: httpx.Client, memory_id: str) -> dict[str, object]:
    resp = c.get(f"/v1/memories/{memory_id}", params={"agent_id": AGENT})
    assert resp.status_code == 200, resp.text
    body: dict[str, object] = resp.json()
    return body


def test_five_memories_posted_to_a_fresh_server_all_read_back_unchanged(serve) -> None:
    served = serve()
    served.started()
    with served.client() as c:
        ids = [_post(c, text) for text in NOTES]
        before = {i: _get(c, i) for i in ids}
        # Two days on: consolidation is due, and runs; every memory is minutes old.
        (report,) = served.run_pass()
        assert report.ran and report.errors == ()
        (run,) = report.consolidated
        assert run.agent_id == AGENT and run.created == 0 and run.archived == 0
        assert run.too_young == 5
        (forced,) = served.maintenance.submit_pass(force=True).result(timeout=120)
        assert forced.consolidated[0].archived == 0
        for memory_id in ids:
            after = _get(c, memory_id)
            assert after == before[memory_id] and after["consolidated_into"] is None
        listed = c.get("/v1/memories", params={"agent_id": AGENT}).json()
        assert sorted(m["id"] for m in listed["memories"]) == sorted(ids)
        assert c.get("/v1/archive", params={"agent_id": AGENT}).json()["archived"] == []


def test_old_memories_wait_for_the_second_pass_and_keep_answering(serve, tmp_path) -> None:
    # Two-month-old memories already in the store when the server starts.
    async def seed() -> list[str]:
        old = datetime.now(UTC) - timedelta(days=60)
        async with AsyncMemory(str(tmp_path / "served.db")) as mem:
            return [
                await mem.add(t, agent_id=AGENT, dedup=False, created_at=old + timedelta(hours=i))
                for i, t in enumerate(NOTES)
            ]

    ids = asyncio.run(seed())
    served = serve()
    served.started()
    with served.client() as c:
        # The startup pass consolidated nothing, though it was due and the memories are old.
        for memory_id, text in zip(ids, NOTES, strict=True):
            shown = _get(c, memory_id)
            assert shown["content"] == text and shown["consolidated_into"] is None
        (report,) = served.run_pass()
        (run,) = report.consolidated
        assert run.created == 1 and run.archived == 4
        (group,) = run.groups
        summary_id = group.into
        assert summary_id is not None
        for memory_id, text in zip(ids, NOTES, strict=True):
            shown = _get(c, memory_id)  # every original id still answers
            assert shown["content"] == text
            if memory_id in group.merged_ids:
                assert shown["consolidated_into"] == summary_id
                hits = c.post(
                    "/v1/search", json={"agent_id": AGENT, "query": text, "limit": 3}
                ).json()["results"]
                assert summary_id in [h["id"] for h in hits]
            else:
                assert shown["consolidated_into"] is None  # the one kept
