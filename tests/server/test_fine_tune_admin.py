"""The embedder fine-tune lifecycle through memvault's public surface (issue 19).

A real server (uvicorn, a SQLite file, the bundled MiniLM) with ``memory.fine_tune`` enabled runs
a real fine-tune with the lightweight adapter trainer on a small query/passage file; clients use
real HTTP with real API keys. The MCP tools run in-process against a real ``MemoryService``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.client import Client

from memvault.backends.embedder import build_embedder
from memvault.config import MemvaultConfig, load_config
from memvault.embeddings import MINILM_MODEL_ID
from memvault.errors import FineTuneCancelledError, FineTuneDependencyError, MemoryConfigError
from memvault.finetune.config import EmbeddingFineTuneConfig
from memvault.protocols import Embedder
from memvault.server.errors import error_code, error_status, public_message
from memvault.server.keys import open_key_store
from memvault.server.mcp import create_mcp_server
from memvault.server.rest import create_app
from memvault.service import Actor, MemoryService

from .conftest import STANDARD_KEYS, LiveServer, ServerFactory, run_app

FINE_TUNE = "/v1/admin/memory/fine-tune"
FINE_TUNE_TOOLS = {
    "memory_fine_tune_start",
    "memory_fine_tune_preflight",
    "memory_fine_tune_resume",
    "memory_fine_tune_status",
    "memory_fine_tune_runs",
    "memory_fine_tune_cancel",
    "memory_fine_tune_checkpoints",
    "memory_active_embedder",
    "memory_checkpoint_rollback",
}

# Invented jargon the base model cannot know; two plain-word queries per passage.
_SERVICES = ["zeta", "orca", "kiln", "brine", "quill", "moss", "ember", "flint"]
_TOPICS = [
    ("{s} rotates its kelp token every {n} cycles.", "how often are {s} credentials changed"),
    ("{s} runs its frobnicator quorum at {n}.", "how many replicas must agree for {s}"),
    ("The {s} lease lasts {n} blips.", "how long does {s} hold its lock"),
]


def _write_pairs(path: Path) -> Path:
    rows = []
    for i, service in enumerate(_SERVICES):
        for passage, query in _TOPICS:
            text = passage.format(s=service, n=i + 3)
            rows.append({"query": query.format(s=service), "passage": text})
            rows.append({"query": f"{service}: {query.format(s='it')}", "passage": text})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def _config(tmp_path: Path, *, enabled: bool = True) -> MemvaultConfig:
    base = load_config(url=str(tmp_path / "server.db"))
    section = EmbeddingFineTuneConfig(
        enabled=enabled,
        checkpoint_path=str(tmp_path / "registry") if enabled else None,
        base_model="minilm" if enabled else None,
    )
    return base.model_copy(update={"fine_tune": section})


@pytest.fixture
def fine_tune_server(tmp_path: Path, minilm: Embedder) -> Iterator[LiveServer]:
    """A server with fine-tuning enabled (registry under tmp_path) and the standard keys."""
    config = _config(tmp_path)
    service = MemoryService(config, embedder=minilm)
    store = open_key_store(str(tmp_path / "server.db"))
    secrets = {name: store.create(name=name, **spec)[1] for name, spec in STANDARD_KEYS.items()}
    url, stop = run_app(create_app(service, keys=store))
    try:
        yield LiveServer(
            url=url, db=tmp_path / "server.db", service=service, keys=store, secrets=secrets
        )
    finally:
        stop()


def _plan(tmp_path: Path) -> dict[str, Any]:
    pairs = _write_pairs(tmp_path / "pairs.jsonl")
    return {
        "pairs_file": str(pairs),
        "trainer": "adapter",
        "epochs": 2,
        "require_improvement": False,  # a tiny corpus: deploy whatever the held-out score is
    }


def _wait_for(client: httpx.Client, run_id: str) -> dict[str, Any]:
    # Polls the status endpoint as an operator would; the deadline only bounds a hung run.
    deadline = time.monotonic() + 300
    while True:
        resp = client.get(f"{FINE_TUNE}/status", params={"run_id": run_id})
        assert resp.status_code == 200, resp.text
        status: dict[str, Any] = resp.json()
        if status["run"]["status"] in ("completed", "failed", "cancelled"):
            return status
        assert time.monotonic() < deadline, status
        time.sleep(0.2)


def test_an_admin_fine_tunes_deploys_and_rolls_back_over_http(
    fine_tune_server: LiveServer, tmp_path: Path
) -> None:
    registry = tmp_path / "registry"
    with fine_tune_server.client("admin") as admin:
        before = admin.get("/v1/admin/memory/embedder")
        assert before.status_code == 200, before.text
        assert before.json()["checkpoint_id"] is None
        assert before.json()["spec"] == "minilm"

        checked = admin.post(f"{FINE_TUNE}/preflight", json=_plan(tmp_path))
        assert checked.status_code == 200, checked.text
        assert checked.json()["ok"] is True
        assert checked.json()["trainer"] == "adapter"

        started = admin.post(FINE_TUNE, json=_plan(tmp_path))
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        assert started.json()["status"] in ("pending", "running")

        final = _wait_for(admin, run_id)
        run = final["run"]
        assert run["status"] == "completed", run["error"]
        assert run["deployed"] is True
        assert [s["status"] for s in run["stages"]][-1] == "completed"
        checkpoint = run["checkpoint_id"]
        assert checkpoint

        runs = admin.get(f"{FINE_TUNE}/runs", params={"limit": 5})
        assert runs.status_code == 200, runs.text
        assert runs.json()["total"] == 1
        assert [r["run_id"] for r in runs.json()["runs"]] == [run_id]

        listed = admin.get(f"{FINE_TUNE}/checkpoints")
        assert listed.status_code == 200, listed.text
        rows = listed.json()["checkpoints"]
        assert [(c["checkpoint_id"], c["active"]) for c in rows] == [(checkpoint, True)]
        active = admin.get("/v1/admin/memory/embedder").json()
        assert active["checkpoint_id"] == checkpoint
        assert active["spec"] == f"finetuned:{registry}"

        # The configured embedder of a store now follows the deployed checkpoint.
        config = _config(tmp_path)
        assert build_embedder(config).model_id.endswith(checkpoint)
        assert build_embedder(_config(tmp_path, enabled=False)).model_id == MINILM_MODEL_ID

        # Rollback is destructive: confirm and a reason, else 4xx and nothing changes.
        rollback = f"{FINE_TUNE}/checkpoints/base/rollback"
        for body in (
            {"reason": "regressed"},
            {"confirm": False, "reason": "regressed"},
            {"confirm": True, "reason": "   "},
            {"confirm": True},
        ):
            refused = admin.post(rollback, json=body)
            assert refused.status_code == 422, (body, refused.text)
        assert admin.get("/v1/admin/memory/embedder").json()["checkpoint_id"] == checkpoint
        missing = admin.post(
            f"{FINE_TUNE}/checkpoints/no-such-checkpoint/rollback",
            json={"confirm": True, "reason": "typo"},
        )
        assert missing.status_code == 404, missing.text

        done = admin.post(rollback, json={"confirm": True, "reason": "recall regressed"})
        assert done.status_code == 200, done.text
        assert done.json()["checkpoint_id"] == "base"
        assert admin.get("/v1/admin/memory/embedder").json()["checkpoint_id"] is None
        assert build_embedder(config).model_id == MINILM_MODEL_ID

        # No run is active: cancel says so (and still needs the guardrail).
        cancelled = admin.post(f"{FINE_TUNE}/cancel", json={"confirm": True, "reason": "done"})
        assert cancelled.status_code == 200, cancelled.text
        assert cancelled.json() == {"run_id": None, "cancelled": False}
        assert admin.post(f"{FINE_TUNE}/cancel", json={"reason": "x"}).status_code == 422

        # Resuming a completed run is a conflict; an unknown run is not found.
        assert admin.post(f"{FINE_TUNE}/{run_id}/resume", json={}).status_code == 409
        assert admin.post(f"{FINE_TUNE}/nope/resume", json={}).status_code == 404

        # A plan without data, or with an escaping path, is a 422 before anything runs.
        assert admin.post(FINE_TUNE, json={"trainer": "adapter"}).status_code == 422
        bad = admin.post(FINE_TUNE, json={"pairs_file": "../etc/passwd"})
        assert bad.status_code == 422
        assert admin.get(f"{FINE_TUNE}/runs").json()["total"] == 1

    audit = [
        json.loads(line)
        for line in (registry / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    rollbacks = [a for a in audit if a.get("operation") == "rollback"]
    assert len(rollbacks) == 1, audit
    assert rollbacks[0]["reason"] == "recall regressed"
    assert "admin" in rollbacks[0]["actor"]


@pytest.mark.parametrize("key", ["dev1", "reader", "operator", "acme-dev1"])
def test_only_admin_keys_reach_the_fine_tune_endpoints(
    fine_tune_server: LiveServer, tmp_path: Path, key: str
) -> None:
    with fine_tune_server.client(key) as client:
        for method, path, body in (
            ("POST", FINE_TUNE, _plan(tmp_path)),
            ("POST", f"{FINE_TUNE}/preflight", _plan(tmp_path)),
            ("GET", f"{FINE_TUNE}/status", None),
            ("GET", f"{FINE_TUNE}/runs", None),
            ("GET", f"{FINE_TUNE}/checkpoints", None),
            ("GET", "/v1/admin/memory/embedder", None),
            ("POST", f"{FINE_TUNE}/cancel", {"confirm": True, "reason": "x"}),
            ("POST", f"{FINE_TUNE}/checkpoints/base/rollback", {"confirm": True, "reason": "x"}),
        ):
            resp = client.request(method, path, json=body)
            assert resp.status_code == 403, (key, path, resp.text)
            assert resp.json()["error"]["code"] == "permission_denied"
    assert not (tmp_path / "registry" / "runs").exists()


def test_fine_tuning_disabled_is_not_supported(live_server: ServerFactory) -> None:
    server = live_server(keys={"admin": {"scopes": ["admin"]}})
    with server.client("admin") as admin:
        resp = admin.get("/v1/admin/memory/embedder")
        assert resp.status_code == 501, resp.text
        assert resp.json()["error"]["code"] == "not_supported"
        assert "memory.fine_tune" in resp.json()["error"]["message"]


def test_fine_tune_errors_have_their_wire_codes() -> None:
    missing = FineTuneDependencyError(
        "the biencoder trainer needs torch: pip install 'memvault[finetune]'",
        missing="torch",
        install_command="pip install 'memvault[finetune]'",
    )
    # A MemoryConfigError is a 500 with a generic message; this one is the caller's to fix.
    assert isinstance(missing, MemoryConfigError)
    assert (error_code(missing), error_status(missing)) == ("fine_tune_dependency_missing", 501)
    assert "pip install" in public_message(missing)
    cancelled = FineTuneCancelledError("run r1 was cancelled", run_id="r1")
    assert (error_code(cancelled), error_status(cancelled)) == ("cancelled", 409)


async def test_mcp_offers_the_fine_tune_tools(tmp_path: Path, minilm: Embedder) -> None:
    service = MemoryService(_config(tmp_path), embedder=minilm)
    try:
        async with Client(create_mcp_server(service, lambda _ctx: Actor.admin())) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) >= FINE_TUNE_TOOLS
            result = await client.call_tool("memory_active_embedder", {})
            assert not result.is_error
            assert isinstance(result.content[0], types.TextContent)
            assert json.loads(result.content[0].text)["checkpoint_id"] is None
            refused = await client.call_tool(
                "memory_checkpoint_rollback", {"checkpoint_id": "base", "reason": "x"}
            )
            assert refused.is_error
        agent = Actor.agent("dev-1")
        async with Client(create_mcp_server(service, lambda _ctx: agent)) as client:
            denied = await client.call_tool("memory_fine_tune_status", {})
            assert denied.is_error
            assert isinstance(denied.content[0], types.TextContent)
            assert "permission_denied" in denied.content[0].text
    finally:
        await service.close()
