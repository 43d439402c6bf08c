"""The dashboard under ``memvault serve`` itself, and over a PostgreSQL store."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memvault.config import load_config
from memvault.embeddings.minilm_onnx import THREADS_ENV
from memvault.protocols import Embedder
from memvault.server.keys import open_key_store
from memvault.server.rest import create_app
from memvault.service import MemoryService
from postgres_server import SchemaFactory

from .conftest import UiServer, csrf_of, run_app, start_server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_memvault_serve_answers_the_dashboard(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    keys = open_key_store(str(db))
    _, secret = keys.create(name="alice", scopes=["read", "write"])
    keys.close()
    port = _free_port()
    cli = Path(sys.executable).with_name("memvault")
    proc = subprocess.Popen(
        [str(cli), "--db", str(db), "serve", "--port", str(port), "--log-level", "warning"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, THREADS_ENV: "1"},
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            assert time.monotonic() < deadline, "memvault serve did not start"
            time.sleep(0.2)
        auth = {"Authorization": f"Bearer {secret}"}
        stored = httpx.post(
            f"{url}/v1/memories",
            json={"agent_id": "bot", "content": "The office plant needs water on Fridays."},
            headers=auth,
            timeout=60,
        )
        assert stored.status_code == 201
        with httpx.Client(base_url=url, timeout=60) as client:
            form = client.get("/ui/login")
            assert "Content-Security-Policy" in form.headers
            done = client.post("/ui/login", data={"csrf": csrf_of(form.text), "key": secret})
            assert done.status_code == 303
            assert "office plant" in client.get("/ui/agents/bot").text
            hits = client.get("/ui/agents/bot/search", params={"q": "watering plants"}).text
            assert "office plant" in hits and "calibrated score" in hits
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture
def pg_server(postgres_url: str, minilm: Embedder) -> Iterator[UiServer]:
    schemas = SchemaFactory(postgres_url)
    url = f"{postgres_url}{'&' if '?' in postgres_url else '?'}schema={schemas()}"
    server, stop = start_server(url, minilm)
    try:
        yield server
    finally:
        stop()
        schemas.drop_all()


@pytest.mark.postgres
def test_the_dashboard_over_postgresql(pg_server: UiServer) -> None:
    with pg_server.login("operator") as client:
        overview = client.get("/ui/")
        assert overview.status_code == 200 and "postgres" in overview.text.lower()
        listing = client.get("/ui/agents/dev-1?category=procedural").text
        assert "rotate secrets" in listing
        found = client.get("/ui/agents/dev-1/search", params={"q": "production database"}).text
        assert "PostgreSQL 16" in found and "BM25" in found
        detail = client.get(f"/ui/agents/dev-1/memories/{pg_server.ids['chain_new']}").text
        assert "every Monday" in detail and "every Tuesday" in detail
        archive = client.get("/ui/agents/dev-1/archive")
        assert "Legacy FTP" in archive.text
        restored = client.post(
            f"/ui/agents/dev-1/archive/{pg_server.ids['archived']}/restore",
            data={"csrf": csrf_of(archive.text), "reason": "needed"},
        )
        assert restored.status_code == 303
        assert "Legacy FTP" in client.get("/ui/agents/dev-1").text
        approvals = client.get("/ui/approvals")
        decided = client.post(
            f"/ui/approvals/{pg_server.ids['approval0']}/approve",
            data={"csrf": csrf_of(approvals.text), "reason": "ok"},
        )
        assert decided.status_code == 303
        assert "approved" in client.get("/ui/approvals?status=approved").text
        charts = client.get("/ui/agents/dev-1/charts").text
        assert charts.count("<svg") == 3
        assert "s-1" in client.get("/ui/agents/dev-1/sessions").text
        assert "log in JSON" in client.get("/ui/shared", params={"q": "logging"}).text


def test_without_keys_the_login_only_opens_a_session(tmp_path: Path, minilm: Embedder) -> None:
    service = MemoryService(load_config(url=str(tmp_path / "open.db")), embedder=minilm)
    url, stop = run_app(create_app(service, keys=None))
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            assert client.get("/ui/").status_code == 303  # still a session (for CSRF) first
            form = client.get("/ui/login")
            assert 'name="key"' not in form.text and "--no-auth" in form.text
            done = client.post("/ui/login", data={"csrf": csrf_of(form.text)})
            assert done.status_code == 303
            page = client.get("/ui/")
            assert page.status_code == 200 and "admin:local" in page.text
            forged = client.post("/ui/login", data={"csrf": "forged"})
            assert forged.status_code == 403
    finally:
        stop()
