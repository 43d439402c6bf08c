"""The dashboard's Operations page: model costs per agent and model, active agents, tasks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from markupsafe import escape

from memvault.persistence import create_persistence
from memvault.persistence import models as pm
from memvault.protocols import Embedder

from .conftest import XSS, UiServer, start_server


@pytest.fixture(scope="module")
def ops_server(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[UiServer]:
    db = tmp_path_factory.mktemp("ui-ops") / "ui.db"
    server, stop = start_server(db, minilm)

    async def seed() -> None:
        now = datetime.now(UTC)
        async with create_persistence(url=str(db)) as ops:
            await ops.cost_records.save_many(
                [
                    pm.CostRecord(agent_id="dev-1", model="small-llm", input_tokens=1200,
                                  output_tokens=300, cost=0.0125, latency_ms=420, timestamp=now),
                    pm.CostRecord(agent_id="dev-2", model="small-llm", input_tokens=100,
                                  output_tokens=10, cost=0.5, timestamp=now - timedelta(days=1)),
                    # Outside the default 30-day window.
                    pm.CostRecord(agent_id="dev-2", model="old-llm", input_tokens=5,
                                  cost=9.0, timestamp=now - timedelta(days=60)),
                ]
            )  # fmt: skip
            await ops.tasks.save(pm.Task(title=XSS, assigned_to="dev-1"))
            await ops.tasks.save(pm.Task(title="dev-2 private task", assigned_to="dev-2"))
            await ops.agent_states.save(
                pm.AgentRuntimeState(agent_id="dev-1", status=pm.AgentStatus.RUNNING)
            )

    asyncio.run(seed())
    yield server
    stop()


def test_operations_page_shows_costs_tasks_and_active_agents(ops_server: UiServer) -> None:
    with ops_server.login("admin") as client:
        page = client.get("/ui/operations")
        assert page.status_code == 200, page.text
        html = page.text
        assert "2 model calls, cost 0.5125" in html
        assert "old-llm" not in html  # 60 days old
        assert "<svg" in html  # the tokens-per-day chart
        assert str(escape(XSS)) in html and XSS not in html
        assert "dev-2 private task" in html
        wider = client.get("/ui/operations", params={"days": "90"}).text
        assert "old-llm" in wider and "3 model calls" in wider
        assert client.get("/ui/operations", params={"days": "nope"}).status_code == 200


def test_an_agent_key_sees_only_its_own_operations(ops_server: UiServer) -> None:
    with ops_server.login("dev1") as client:
        html = client.get("/ui/operations").text
    assert "1 model calls, cost 0.0125" in html
    assert "dev-2 private task" not in html
    assert "0.5000" not in html


def test_operations_page_needs_a_login(ops_server: UiServer, tmp_path: Path) -> None:
    import httpx

    with httpx.Client(base_url=ops_server.url) as anon:
        assert anon.get("/ui/operations").status_code == 303
