"""A real memvault server with the dashboard, over a real SQLite store seeded with test data.

The store is seeded through a first :class:`MemoryService` (the real write path, real model),
which is closed before the server starts with a service of its own over the same file; the
server runs the real app with uvicorn on a free loopback port. Clients (httpx, or chromium
driven by Playwright) talk to it over real HTTP, logging in with real API keys.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from live_server import run_app
from memvault.api import requests as rq
from memvault.api.auth import Actor
from memvault.config import load_config
from memvault.learning.models import (
    ApprovalItem,
    ProceduralMemoryProposal,
    ProceduralMemoryScope,
)
from memvault.models import ChatMessage
from memvault.protocols import Embedder
from memvault.server.keys import KeyStore, open_key_store
from memvault.server.rest import ServerSettings, create_app
from memvault.service import MemoryService

#: Memory content that would run script, add an attribute or expand a template if the
#: dashboard did not escape it.
XSS = (
    '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'
    ' payload"onmouseover="window.__xss=3" x=\' {{ 7*7 }} {% if true %}JINJA-RAN{% endif %}'
    " {{ config }}"
)

KEYS: dict[str, dict[str, Any]] = {
    "admin": {"scopes": ["admin"]},
    "operator": {"scopes": ["read", "write"]},
    "reader": {"scopes": ["read"]},
    "dev1": {"scopes": ["read", "write"], "agent_id": "dev-1"},
    "acme": {"scopes": ["admin"], "tenant": "acme"},
}

CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')


class ShiftedClock:
    """The server's monotonic clock: :func:`time.monotonic` plus what a test advanced it by."""

    def __init__(self) -> None:
        self.shift = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.shift

    def advance(self, seconds: float) -> None:
        self.shift += seconds


@dataclass
class UiServer:
    """A running server with the dashboard: its URL, store file, keys and seeded ids."""

    url: str
    db: str
    """The storage URL (a SQLite path or a postgresql:// URL)."""
    keys: KeyStore
    secrets: dict[str, str]
    ids: dict[str, str] = field(default_factory=dict)
    clock: ShiftedClock = field(default_factory=ShiftedClock)
    """The clock the server's key cache (and rate limit) runs on."""

    @contextmanager
    def login(self, key: str) -> Iterator[httpx.Client]:
        """An httpx client logged in to the dashboard with the named key."""
        with httpx.Client(base_url=self.url, timeout=60.0) as client:
            form = client.get("/ui/login")
            done = client.post(
                "/ui/login", data={"csrf": csrf_of(form.text), "key": self.secrets[key]}
            )
            assert done.status_code == 303, done.text
            yield client


def csrf_of(html: str) -> str:
    """The CSRF token a page's forms carry."""
    found = CSRF_RE.search(html)
    assert found is not None, html[:2000]
    return found.group(1)


T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


async def seed(service: MemoryService) -> dict[str, str]:
    """Memories, a supersession chain, an archive, a session, shared knowledge, approvals."""
    admin = Actor.admin("seed")
    acme = Actor.admin("seed", tenant="acme")
    ids: dict[str, str] = {}
    topics = [
        ("semantic", "The deploy pipeline runs on GitHub Actions with three stages.", ["ci"]),
        ("semantic", "Production database is PostgreSQL 16 in eu-west-1.", ["infra"]),
        ("episodic", "On Monday the release was rolled back after a failed migration.", []),
        ("procedural", "To rotate secrets, run the vault rotate job, then restart workers.", []),
        ("semantic", "The customer Globex prefers weekly status reports by email.", ["crm"]),
        ("episodic", "Alice reviewed the billing refactor and asked for more tests.", []),
        ("semantic", "Staging uses a smaller replica of the production database.", ["infra"]),
        ("procedural", "When a flaky test fails twice, quarantine it and open an issue.", ["ci"]),
    ]
    for n, (category, text, tags) in enumerate(topics * 3):
        note = {
            "content": f"{text} (note {n})",
            "agent_id": "dev-1",
            "category": category,
            "tags": tags,
            "created_at": T0 + timedelta(days=n % 12, hours=n),
            "dedup": False,
        }
        out = await service.call(admin, "store", note)
        assert out.id is not None
        ids.setdefault(f"{category}", out.id)
    xss = await service.call(
        admin, "store", {"content": XSS, "agent_id": "dev-1", "tags": ["xss"], "dedup": False}
    )
    assert xss.id is not None
    ids["xss"] = xss.id
    first = await service.call(
        admin,
        "store",
        {
            "content": "The on-call rotation changes every Monday.",
            "agent_id": "dev-1",
            "dedup": False,
        },
    )
    assert first.id is not None
    change = {
        "memory_id": first.id,
        "agent_id": "dev-1",
        "content": "The on-call rotation changes every Tuesday.",
        "reason": "schedule moved",
    }
    newer = await service.call(admin, "update", change)
    ids["chain_old"], ids["chain_new"] = first.id, newer.id
    gone = await service.call(
        admin,
        "store",
        {"content": "Legacy FTP server credentials are kept in the old wiki.", "agent_id": "dev-1"},
    )
    assert gone.id is not None
    archived = {"ids": [gone.id], "agent_id": "dev-1", "reason": "outdated"}
    await service.call(admin, "archive", archived)
    ids["archived"] = gone.id
    other = await service.call(
        admin, "store", {"content": "dev-2 private note about payroll.", "agent_id": "dev-2"}
    )
    assert other.id is not None
    ids["dev2"] = other.id
    acme_note = await service.call(
        acme, "store", {"content": "acme secret roadmap for Q3.", "agent_id": "dev-1"}
    )
    assert acme_note.id is not None
    ids["acme"] = acme_note.id
    session = rq.SessionBody(
        session_id="s-1",
        agent_id="dev-1",
        messages=[
            ChatMessage(role="user", content="How do we deploy?"),
            ChatMessage(role="assistant", content=f"Through the pipeline. {XSS}"),
        ],
    )
    await service.call(admin, "save_session", session)
    shared = {"content": "All services log in JSON to stdout.", "agent_id": "dev-1"}
    await service.call(admin, "publish", {**shared, "tags": ["logging"]})
    policy = {"kind": "policy", "content": "Never store customer card numbers."}
    await service.call(admin, "org_write", policy)
    memory = await service.memory()
    for n, (name, discovery) in enumerate(
        [
            ("retry-backoff", "Retry flaky network calls with exponential backoff."),
            ("pin-deps", f"Pin dependency versions before a release. {XSS}"),
        ]
    ):
        item = ApprovalItem(
            id=f"appr-{n}",
            created_at=T0 + timedelta(minutes=n),
            proposal=ProceduralMemoryProposal(
                name=name,
                discovery=discovery,
                condition="a network call times out",
                action="retry with backoff",
                confidence=0.9,
                scope=ProceduralMemoryScope.ORG,
            ),
            pattern_key=f"error:e{n}",
        )
        await memory.learning.queue.add(item)
        ids[f"approval{n}"] = item.id
    return ids


def start_server(db: Path | str, minilm: Embedder) -> tuple[UiServer, Callable[[], None]]:
    """Seed the store ``db`` names, create the test keys, and serve it; returns the server
    and its stop function."""
    db = str(db)

    async def seeded() -> dict[str, str]:
        service = MemoryService(load_config(url=str(db)), embedder=minilm)
        try:
            return await seed(service)
        finally:
            await service.close()

    # In a thread of its own: Playwright's sync API keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        ids = pool.submit(asyncio.run, seeded()).result()
    keys = open_key_store(str(db))
    secrets = {name: keys.create(name=name, **spec)[1] for name, spec in KEYS.items()}
    service = MemoryService(load_config(url=str(db)), embedder=minilm)
    clock = ShiftedClock()
    url, stop = run_app(create_app(service, keys=keys, settings=ServerSettings(clock=clock)))
    return UiServer(url=url, db=db, keys=keys, secrets=secrets, ids=ids, clock=clock), stop


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[UiServer]:
    """A seeded server for one test module (modules that change data get their own)."""
    server, stop = start_server(tmp_path_factory.mktemp("ui") / "ui.db", minilm)
    yield server
    stop()
