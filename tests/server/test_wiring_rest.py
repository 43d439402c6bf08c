"""Issue 17 item 6 over real HTTP: shared knowledge in ``/v1/context`` (and its MCP tool), the
non-inferable advisory in write answers, Search-and-Ask, capture and working memory through
REST, MCP and the remote client. The server is the real app on uvicorn over a real SQLite
file; only the LLM is scripted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from memvault import AsyncMemory
from memvault.config import load_config
from memvault.injection.context import SHARED_MARK
from memvault.llm.scripted import ScriptedLLM
from memvault.protocols import Embedder
from memvault.remote import RemoteAsyncMemory
from memvault.server.rest import create_app
from memvault.service import LLM_URL_ENV, MemoryService

from .conftest import LiveServer, run_app

INSUFFICIENT = '{"sufficient": false, "missing": "the name"}'
SUFFICIENT = '{"sufficient": true}'


@pytest.fixture(autouse=True)
def _no_ambient_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LLM_URL_ENV, raising=False)
    monkeypatch.delenv("MEMVAULT_API_KEY", raising=False)


@pytest.fixture
def llm_server(tmp_path: Path, minilm: Embedder) -> Iterator[tuple[str, ScriptedLLM]]:
    """An open (no keys) server whose service has a scripted LLM."""
    llm = ScriptedLLM([INSUFFICIENT, '{"query": "name of the cat"}', SUFFICIENT])
    service = MemoryService(load_config(url=str(tmp_path / "llm.db")), embedder=minilm, llm=llm)
    url, stop = run_app(create_app(service, keys=None))
    try:
        yield url, llm
    finally:
        stop()


def _ok(resp: httpx.Response, status: int = 200) -> Any:
    assert resp.status_code == status, resp.text
    return resp.json()


def _add(client: httpx.Client, path: str, agent: str, content: str) -> str:
    return str(_ok(client.post(path, json={"agent_id": agent, "content": content}), 201)["id"])


def test_context_over_rest_includes_shared_knowledge_but_no_private_leak(
    server: LiveServer,
) -> None:
    with server.client("dev1") as dev1, server.client("dev2") as dev2:
        mine = _add(dev1, "/v1/memories", "dev-1", "dev-1 deploys the API with Helm")
        shared = _add(dev2, "/v1/shared", "dev-2", "Production deploys need two approvals")
        secret = _add(dev2, "/v1/memories", "dev-2", "dev-2 deploy token lives at kv/dev2")
        ctx = _ok(dev1.post("/v1/context", json={
            "agent_id": "dev-1", "query": "how do production deploys work?"}))  # fmt: skip
    ids = {e["id"] for e in ctx["entries"]}
    assert {mine, shared} <= ids and secret not in ids
    assert f"{SHARED_MARK}Production deploys need two approvals" in ctx["text"]
    assert "kv/dev2" not in ctx["text"]


def test_store_answer_carries_the_non_inferable_advisory(server: LiveServer) -> None:
    with server.client("dev1") as dev1:
        plain = _ok(dev1.post("/v1/memories", json={
            "agent_id": "dev-1", "content": "We picked Litestar for its typing"}), 201)  # fmt: skip
        tagged = _ok(dev1.post("/v1/memories", json={
            "agent_id": "dev-1", "content": "Never call the v1 billing API",
            "tags": ["non-inferable"]}), 201)  # fmt: skip
    assert plain["decision"] == "add" and "non-inferable" in plain["warnings"][0]
    assert tagged["decision"] == "add" and tagged["warnings"] == []


def test_search_and_ask_over_rest_and_the_remote_client(
    llm_server: tuple[str, ScriptedLLM],
) -> None:
    url, llm = llm_server
    with httpx.Client(base_url=url, timeout=30) as http:
        _ok(http.post("/v1/memories", json={"agent_id": "u", "content": "Deployed invoicing"}), 201)
        miso = _ok(http.post("/v1/memories", json={
            "agent_id": "u", "content": "The cat at home is called Miso"}), 201)["id"]  # fmt: skip
        found = _ok(http.post("/v1/search/ask", json={
            "agent_id": "u", "query": "what is my pet called?", "limit": 2}))  # fmt: skip
        assert miso in {e["id"] for e in found["results"]}
        assert len(llm.calls) == 3
        bad = http.post("/v1/search/ask", json={"agent_id": "u", "query": "x", "max_rounds": 9})
        assert bad.status_code == 422 and bad.json()["error"]["code"] == "validation_error"


def test_search_and_ask_without_any_llm_falls_back_to_one_search(server: LiveServer) -> None:
    with server.client("dev1") as dev1:
        _add(dev1, "/v1/memories", "dev-1", "The cat at home is called Miso")
        body = {"agent_id": "dev-1", "query": "what is my cat called?", "limit": 3}
        asked = _ok(dev1.post("/v1/search/ask", json=body))
        searched = _ok(dev1.post("/v1/search", json=body))
    assert [e["id"] for e in asked["results"]] == [e["id"] for e in searched["results"]]
    assert asked["results"]


def test_capture_and_working_memory_over_rest(server: LiveServer) -> None:
    with server.client("dev1") as dev1, server.client("dev2") as dev2:
        ep = _ok(dev1.post("/v1/episodes", json={
            "agent_id": "dev-1", "summary": "ok", "trigger_type": "cron"}))  # fmt: skip
        assert ep["captured"] and ep["id"]
        entry = _ok(dev1.get(f"/v1/memories/{ep['id']}", params={"agent_id": "dev-1"}))
        assert entry["metadata"] == {"trigger_type": "cron"}
        assert entry["label"] == "autonomous_run" and entry["source"] == "auto_capture"
        # An agent key captures for its own agent only.
        other = dev1.post("/v1/episodes", json={"agent_id": "dev-2", "summary": "x"})
        assert other.status_code == 403
        dist = _ok(dev1.post("/v1/distillations", json={
            "agent_id": "dev-1", "task_id": "T-1", "outcome": "completed",
            "turns": [{"tokens": 10, "tool_calls": ["search_memory"]}]}))  # fmt: skip
        assert dist["captured"]
        turns = [{"tokens": -1}]
        bad = dev1.post(
            "/v1/distillations",
            json={"agent_id": "dev-1", "task_id": "T-2", "outcome": "x", "turns": turns},
        )
        assert bad.status_code == 422

        note = _ok(dev1.post("/v1/working/T-1/notes", json={
            "agent_id": "dev-1", "content": "Plan: reconcile March first"}), 201)  # fmt: skip
        assert note["task_id"] == "T-1"
        pad = _ok(dev1.get("/v1/working/T-1", params={"agent_id": "dev-1"}))
        assert [n["id"] for n in pad["notes"]] == [note["id"]]
        assert pad["text"].startswith("## Working memory (task T-1)")
        assert dev2.get("/v1/working/T-1", params={"agent_id": "dev-1"}).status_code == 403
        assert _ok(dev2.get("/v1/working/T-1", params={"agent_id": "dev-2"}))["notes"] == []
        assert _ok(dev1.delete("/v1/working/T-1", params={"agent_id": "dev-1"}))["cleared"] == 1
        assert _ok(dev1.get("/v1/working/T-1", params={"agent_id": "dev-1"}))["notes"] == []
        blank = dev1.post("/v1/working/T-1/notes", json={"agent_id": "dev-1", "content": ""})
        assert blank.status_code == 422


async def test_remote_client_offers_capture_working_and_warnings(server: LiveServer) -> None:
    mem = AsyncMemory(server.url, api_key=server.secrets["dev1"])
    assert isinstance(mem, RemoteAsyncMemory)
    async with mem:
        result = await mem.write("The build uses uv", agent_id="dev-1")
        assert result.stored and result.warnings and "non-inferable" in result.warnings[0]
        mid = await mem.capture_episode("Nightly run done", agent_id="dev-1", trigger_type="cron")
        assert mid is not None
        assert (await mem.get(mid, agent_id="dev-1")).metadata.extra["trigger_type"] == "cron"
        assert await mem.capture_episode("x", agent_id="dev-2") is None  # refused, never raised
        did = await mem.capture_distillation(agent_id="dev-1", task_id="T-9", outcome="timeout")
        assert did is not None
        note = await mem.working_note("T-5", "Check the flaky test first", agent_id="dev-1")
        pad = await mem.working("T-5", agent_id="dev-1")
        assert [n.id for n in pad.notes] == [note]
        assert await mem.clear_working("T-5", agent_id="dev-1") == 1


async def test_mcp_tools_for_context_capture_and_working_memory(server: LiveServer) -> None:
    with server.client("dev2") as dev2:
        _ok(dev2.post("/v1/shared", json={
            "agent_id": "dev-2", "content": "Releases are cut on Thursdays"}), 201)  # fmt: skip
    dev1 = {"Authorization": f"Bearer {server.secrets['dev1']}"}
    async with (
        httpx2.AsyncClient(headers=dev1, timeout=30) as http,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http)) as client,
    ):

        async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(tool, args)
            text = "".join(getattr(c, "text", "") for c in result.content)
            assert not (getattr(result, "is_error", None) or getattr(result, "isError", False)), (
                text
            )
            data: dict[str, Any] = json.loads(text)
            return data

        ctx = await call("memory_context", {"query": "when are releases cut?"})
        assert f"{SHARED_MARK}Releases are cut on Thursdays" in ctx["text"]
        ep = await call("capture_episode", {"summary": "Webhook run ok", "trigger_type": "webhook"})
        assert ep["captured"]
        note = await call("working_memory_note", {"task_id": "T-3", "content": "Step 1 done"})
        pad = await call("working_memory", {"task_id": "T-3"})
        assert [n["id"] for n in pad["notes"]] == [note["id"]]
