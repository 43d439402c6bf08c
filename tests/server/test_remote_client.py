"""The remote client: ``Memory(url)`` / ``AsyncMemory(url)`` over a real server, real keys.

The contract test runs one scenario against an embedded store and against a server and compares
what a caller observes; the other tests cover the sync facade, the error mapping, tenant
isolation, the strategies built on the facade and the CLI pointed at a server.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import socket
import textwrap
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from memvault import (
    AsyncMemory,
    Memory,
    MemoryCapabilityError,
    MemoryCategory,
    MemoryConnectionError,
    MemoryNotFoundError,
    MemoryStoreRequest,
    MemoryValidationError,
)
from memvault.agent.working import WorkingMemory
from memvault.api.operations import get_operation
from memvault.cli.app import main
from memvault.errors import (
    MemoryAuthenticationError,
    MemoryConfigError,
    MemoryPermissionError,
    MemoryRetrievalError,
    MemoryStoreError,
)
from memvault.learning.models import (
    AgentProfile,
    EvolverReport,
    LearnReport,
    PruneReport,
    Seniority,
)
from memvault.protocols import Embedder
from memvault.remote import API_KEY_ENV, RemoteAsyncMemory
from memvault.retrieval.filters import NonInferableFilter
from memvault.retrieval.presets import get_preset
from memvault.validation import model_error
from memvault.write.pipeline import WriteKind

from .conftest import LiveServer

PAST = datetime.now(UTC) - timedelta(days=30)
OLD_NOTES = [
    "The API gateway listens on port 8443.",
    "Deploys to production need two approvals.",
    "Staging uses the eu-west-1 region.",
    "The billing service is written in Go.",
]


@pytest.fixture(autouse=True)
def _no_ambient_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No API key of the machine leaks into a test."""
    monkeypatch.delenv(API_KEY_ENV, raising=False)


def _remote(server: LiveServer, key: str = "admin") -> AsyncMemory:
    return AsyncMemory(server.url, api_key=server.secrets[key])


# -- the facade contract ----------------------------------------------------------------------


async def _scenario(mem: AsyncMemory, tmp: Path) -> dict[str, Any]:
    """One session of a caller; returns what it observed (no store-specific ids)."""
    seen: dict[str, Any] = {}
    content: dict[str, str] = {}

    async def add(text: str, **kwargs: Any) -> str:
        mid = await mem.add(text, agent_id="dev-1", **kwargs)
        content.setdefault(mid, text)
        return mid

    litestar = await add(
        "Prefers Litestar over Flask for web services",
        tags=["preference", "non-inferable"],
        label="preferences",
        metadata={"task": "T-1"},
    )
    leak = await add(
        "Deployed v2.1 on Friday and rolled back because of a memory leak", category="episodic"
    )
    seen["dedup_returns_existing"] = (
        await add("Prefers Litestar over Flask for web services") == litestar
    )
    outcome = await mem.write("The staging database runs PostgreSQL 16", agent_id="dev-1")
    assert outcome.id is not None
    content[outcome.id] = "The staging database runs PostgreSQL 16"
    again = await mem.write("The staging database runs PostgreSQL 16", agent_id="dev-1")
    seen["write"] = [
        (outcome.decision.kind, outcome.stored),
        (again.decision.kind, again.id == outcome.id, again.decision.duplicate_of == outcome.id),
    ]
    ids = await mem.add_many(
        [
            {"content": "Lunch is at noon", "tags": ["office"]},
            MemoryStoreRequest(
                content="Run the linter before every commit", category=MemoryCategory.PROCEDURAL
            ),
            {"content": "Lunch is at noon"},
        ],
        agent_id="dev-1",
    )
    content.update(
        zip(ids, ["Lunch is at noon", "Run the linter before every commit"], strict=False)
    )
    seen["add_many"] = [content[i] for i in ids]
    seen["add_many_dedup"] = ids[0] == ids[2]
    seen["add_many_empty"] = await mem.add_many([], agent_id="dev-1")
    for i, text in enumerate(OLD_NOTES):
        await add(text, category="episodic", created_at=PAST + timedelta(days=i))

    hits = await mem.search("which web framework does the developer like?", agent_id="dev-1")
    seen["search_top"] = hits[0].content
    seen["search_scored"] = all(h.relevance_score is not None and h.score is None for h in hits)
    explained = await mem.search("memory leak rollback", agent_id="dev-1", limit=2, explain=True)
    seen["explain_top"] = explained[0].content
    seen["explain_scores"] = all(h.score is not None for h in explained)
    # Asked two weeks after the second old note (a replayed conversation): "two weeks ago"
    # counts back from then, over HTTP as in process.
    asked = await mem.search(
        "which rule did we note two weeks ago?",
        agent_id="dev-1",
        limit=2,
        asked_at=PAST + timedelta(days=15),
    )
    seen["search_asked_at"] = [h.content for h in asked]
    asked_ctx = await mem.context(
        "Which region does staging use? We noted it two weeks ago.",
        agent_id="dev-1",
        token_budget=200,
        asked_at=PAST + timedelta(days=16),
    )
    seen["context_asked_at"] = [e.content for e in asked_ctx.entries]
    seen["search_filtered"] = [
        h.content
        for h in await mem.search(
            "lunch", agent_id="dev-1", categories=["semantic"], tags=["office"], limit=5
        )
    ]
    seen["count"] = await mem.count(agent_id="dev-1")
    seen["count_episodic"] = await mem.count(agent_id="dev-1", category="episodic")
    seen["list"] = [e.content for e in await mem.list(agent_id="dev-1", limit=50)]
    seen["list_page"] = [e.content for e in await mem.list(agent_id="dev-1", limit=2, offset=1)]
    seen["list_label"] = [e.content for e in await mem.list(agent_id="dev-1", label="preferences")]
    got = await mem.get(litestar, agent_id="dev-1")
    seen["get"] = (got.content, got.tags, got.metadata.label, got.metadata.extra, got.category)

    ctx = await mem.context("which web framework?", agent_id="dev-1", token_budget=300)
    seen["context"] = (
        "Litestar" in ctx.text,
        ctx.role,
        len(ctx.messages),
        ctx.tokens > 0,
        ctx.entries[0].content,
    )
    filtered = await mem.context(
        "which web framework?", agent_id="dev-1", filter_strategy=NonInferableFilter()
    )
    seen["context_filtered"] = sorted(e.content for e in filtered.entries)[:3]

    seen["delete"] = [
        await mem.delete(leak, agent_id="dev-1"),
        await mem.delete(leak, agent_id="dev-1"),
    ]
    try:
        await mem.get(leak, agent_id="dev-1")
    except MemoryNotFoundError as exc:
        seen["get_deleted"] = str(exc).replace(leak, "<id>")

    shared = await mem.publish("All services log in JSON lines", agent_id="dev-1", tags=["ops"])
    seen["search_shared"] = [e.content for e in await mem.search_shared("log format")]
    seen["search_shared_excluded"] = await mem.search_shared("log format", exclude_agent="dev-1")
    seen["include_shared"] = "All services log in JSON lines" in [
        e.content for e in await mem.search("log format", agent_id="dev-2", include_shared=True)
    ]
    seen["retract"] = [
        await mem.retract(shared, agent_id="dev-1"),
        await mem.retract(shared, agent_id="dev-1"),
    ]
    seen["search_shared_after"] = await mem.search_shared("log format")

    dry = await mem.consolidate(agent_id="dev-1", dry_run=True)
    seen["consolidate_dry"] = (dry.dry_run, dry.created_ids, dry.removed_ids, len(dry.groups))
    # The memories were written moments ago: the default minimum age (30 days) keeps them all.
    young = await mem.consolidate(agent_id="dev-1")
    seen["consolidate_young"] = (young.created_ids, young.removed_ids, young.too_young > 0)
    merged = await mem.consolidate(agent_id="dev-1", min_age_days=0)
    seen["consolidate"] = (len(merged.created_ids), sorted(content[i] for i in merged.removed_ids))
    answers = [await mem.get(i, agent_id="dev-1") for i in merged.removed_ids]
    seen["consolidated_get"] = sorted(
        (e.content, e.consolidated_into in merged.created_ids) for e in answers
    )
    archived = await mem.archived(agent_id="dev-1")
    seen["archived"] = sorted((a.entry.content, a.reason) for a in archived)
    if archived:
        back = await mem.restore(archived[0].memory_id, agent_id="dev-1")
        seen["restore"] = (back.id == archived[0].memory_id, back.content)
    seen["sweep"] = (await mem.sweep(agent_id="dev-1")).total
    seen["audit"] = [r.action for r in await mem.audit(agent_id="dev-1", limit=5)]
    seen["agents"] = await mem.agents()
    stats = await mem.stats()
    seen["stats"] = (stats.total, stats.by_category, stats.agents)

    file = tmp / "export.json"
    exported = await mem.export(file, agent_id="dev-1")
    seen["export"] = sorted(e["content"] for e in exported)
    seen["export_file"] = json.loads(file.read_text(encoding="utf-8")) == exported
    before = await mem.count(agent_id="dev-1")
    seen["clear"] = await mem.clear(agent_id="dev-1") == before
    seen["count_after_clear"] = await mem.count(agent_id="dev-1")
    progress: list[tuple[int, int]] = []
    seen["import"] = await mem.import_(
        file, batch_size=3, on_progress=lambda done, total: progress.append((done, total))
    )
    seen["progress"] = progress
    seen["import_again"] = await mem.import_(exported)
    seen["import_to_agent"] = await mem.import_(exported[:2], agent_id="dev-3")
    seen["round_trip"] = sorted(e.content for e in await mem.list(agent_id="dev-1", limit=100))
    seen["same_ids"] = {e["id"] for e in await mem.export(agent_id="dev-1")} == {
        e["id"] for e in exported
    }
    return seen


async def test_remote_and_embedded_memories_behave_the_same(
    server: LiveServer, tmp_path: Path, minilm: Embedder
) -> None:
    (tmp_path / "embedded").mkdir()
    (tmp_path / "remote").mkdir()
    async with AsyncMemory(str(tmp_path / "embedded.db"), embedder=minilm) as embedded:
        local = await _scenario(embedded, tmp_path / "embedded")
    async with _remote(server) as remote:
        assert isinstance(remote, RemoteAsyncMemory)
        over_http = await _scenario(remote, tmp_path / "remote")
    assert over_http == local
    # The scenario saw the interesting outcomes (not only the same failures on both sides).
    assert local["search_top"].startswith("Prefers Litestar")
    assert local["write"][0] == (WriteKind.ADD, True)
    assert local["write"][1] == (WriteKind.NOOP, True, True)
    assert local["delete"] == [True, False] and local["retract"] == [True, False]
    assert local["search_shared"] == ["All services log in JSON lines"]
    assert set(local["search_asked_at"]) <= set(OLD_NOTES)
    assert local["context_asked_at"][0] == "Staging uses the eu-west-1 region."
    assert local["context"][0] and local["import"] > 0 and local["import_again"] == 0
    assert local["consolidate"][0] >= 1 and local["restore"][0]
    assert local["consolidate_young"] == ((), (), True)
    assert local["consolidated_get"] and all(found for _, found in local["consolidated_get"])


def _own(cls: type) -> dict[str, Any]:
    """The members the remote client defines itself: the generated class and its hand-written
    base (memvault._remote.RemoteBase), not what it inherits from AsyncMemory."""
    members: dict[str, Any] = {}
    for klass in reversed(cls.__mro__[: cls.__mro__.index(AsyncMemory)]):
        members.update(vars(klass))
    return members


def _plain(annotation: object) -> str:
    return str(annotation).replace("builtins.", "")


def test_remote_overrides_every_method_with_the_same_signature() -> None:
    # These work unchanged because they only call overridden methods (add calls write;
    # get_all pages through list; delete_all through list, delete and clear).
    inherited = {
        "add",
        "context_strategy",
        "injection_strategy",
        "memory_tools",
        "get_all",
        "delete_all",
    }
    for name, fn in vars(AsyncMemory).items():
        if name.startswith("_") or not callable(fn) or name in inherited:
            continue
        mine = _own(RemoteAsyncMemory).get(name)
        assert mine is not None, f"RemoteAsyncMemory does not override {name}"
        theirs, ours = inspect.signature(fn), inspect.signature(mine)
        assert list(ours.parameters) == list(theirs.parameters), name
        for p, param in theirs.parameters.items():
            assert ours.parameters[p].default == param.default, (name, p)
            assert ours.parameters[p].kind == param.kind, (name, p)
        assert _plain(ours.return_annotation) == _plain(theirs.return_annotation), name
    for prop in ("backend", "location", "config", "retention"):
        assert isinstance(_own(RemoteAsyncMemory)[prop], property), prop


# -- construction and the sync facade -----------------------------------------------------------


def test_a_server_url_gives_a_remote_memory(server: LiveServer) -> None:
    mem = AsyncMemory(server.url + "/", api_key=server.secrets["admin"])
    assert type(mem) is RemoteAsyncMemory
    assert mem.location == server.url
    assert mem.config.retrieval.strategy  # the defaults
    with pytest.raises(MemoryCapabilityError, match="no local backend"):
        _ = mem.backend
    with pytest.raises(MemoryCapabilityError):
        _ = mem.retention
    assert type(RemoteAsyncMemory(server.url)) is RemoteAsyncMemory
    for bad in ("http://", "http://host:8765/?x=1"):
        with pytest.raises(MemoryConfigError):
            AsyncMemory(bad)
    with pytest.raises(MemoryConfigError, match="backend"):
        AsyncMemory(server.url, backend=object())  # type: ignore[arg-type]
    with pytest.raises(MemoryConfigError):
        AsyncMemory(server.url, preset="no-such-preset")
    with pytest.raises(MemoryConfigError):
        RemoteAsyncMemory(server.url, timeout=0)
    with pytest.raises(MemoryConfigError):
        RemoteAsyncMemory(server.url, api_key="two words")


def test_sync_memory_over_http(server: LiveServer) -> None:
    with Memory(server.url, api_key=server.secrets["dev1"]) as mem:
        assert mem.location == server.url
        mid = mem.add("Prefers dark mode in every editor", agent_id="dev-1", tags=["ui"])
        mem.add("The build server is called hopper", agent_id="dev-1")
        hits = mem.search("ui preferences", agent_id="dev-1", limit=1)
        assert [h.id for h in hits] == [mid]
        assert mem.get(mid, agent_id="dev-1").tags == ("ui",)
        assert mem.count(agent_id="dev-1") == 2
        assert mem.delete(mid, agent_id="dev-1") is True
        assert mem.delete(mid, agent_id="dev-1") is False
        with pytest.raises(MemoryNotFoundError):
            mem.get(mid, agent_id="dev-1")
    with pytest.raises(MemoryConnectionError, match="closed"):
        mem.add("after close", agent_id="dev-1")
    mem.close()  # idempotent


def test_sync_memory_takes_the_key_from_the_environment(
    server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(API_KEY_ENV, server.secrets["dev2"])
    with Memory(server.url) as mem:
        mem.add("Uses vim keybindings", agent_id="dev-2")
        assert mem.agents() == ["dev-2"]


async def test_close_is_idempotent_and_final(server: LiveServer) -> None:
    mem = _remote(server)
    await mem.close()  # never used: nothing to close
    with pytest.raises(MemoryConnectionError, match="closed"):
        await mem.count(agent_id="dev-1")
    mem = _remote(server)
    assert await mem.count(agent_id="dev-1") == 0
    await mem.close()
    await mem.close()
    with pytest.raises(MemoryConnectionError, match="closed"):
        await mem.add("late", agent_id="dev-1")
    with pytest.raises(MemoryConnectionError, match="closed"):
        async with mem:
            pass


# -- errors ------------------------------------------------------------------------------------


async def test_server_errors_map_to_memvault_errors(server: LiveServer) -> None:
    async with AsyncMemory(server.url, api_key="mvk_not_a_real_key") as wrong:
        with pytest.raises(MemoryAuthenticationError, match="invalid or revoked"):
            await wrong.count(agent_id="dev-1")
    async with AsyncMemory(server.url) as anonymous:
        with pytest.raises(MemoryAuthenticationError, match="missing API key"):
            await anonymous.add("hello", agent_id="dev-1")
    async with _remote(server, "dev1") as dev1:
        with pytest.raises(MemoryPermissionError, match="dev-2"):
            await dev1.add("not mine", agent_id="dev-2")
        with pytest.raises(MemoryPermissionError):
            await dev1.search("anything", agent_id="dev-2")
        with pytest.raises(MemoryPermissionError):
            await dev1.clear(agent_id="dev-1")  # admin only
        with pytest.raises(MemoryNotFoundError, match="not found"):
            await dev1.get("01a204f6-3f8c-7000-97c6-5989b26e79e2", agent_id="dev-1")
        with pytest.raises(MemoryNotFoundError):
            await dev1.add("Now prefers tabs", agent_id="dev-1", supersedes="no-such-id")
        with pytest.raises(MemoryNotFoundError):
            await dev1.restore("no-such-id", agent_id="dev-1")
    async with _remote(server, "reader") as reader:
        with pytest.raises(MemoryPermissionError, match="write"):
            await reader.add("read only", agent_id="dev-1")


async def test_invalid_input_fails_like_the_embedded_memory(
    server: LiveServer, tmp_path: Path, minilm: Embedder
) -> None:
    naive = datetime(2026, 3, 1, 12, 0)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("add", {"content": "   ", "agent_id": "dev-1"}),
        ("add", {"content": "x", "agent_id": "  "}),
        ("add", {"content": "x", "agent_id": "dev-1", "category": "nope"}),
        ("add", {"content": "x", "agent_id": "dev-1", "tags": "one-string"}),
        ("add", {"content": "x", "agent_id": "dev-1", "created_at": naive}),
        ("add_many", {"items": [{"content": "ok"}, {"text": "x"}], "agent_id": "dev-1"}),
        ("search", {"query": "  ", "agent_id": "dev-1"}),
        ("search", {"query": "q", "agent_id": "dev-1", "since": naive}),
        ("search", {"query": "q", "agent_id": "dev-1", "limit": 0}),
        ("get", {"memory_id": "bad id!", "agent_id": "dev-1"}),
        ("list", {"agent_id": "dev-1", "offset": -1}),
        ("context", {"query": "", "agent_id": "dev-1"}),
        ("search_shared", {"query": ""}),
        ("consolidate", {"agent_id": "dev-1", "strategy": "magic"}),
        ("import_", {"source": [{"id": "x"}]}),
        ("import_", {"source": [], "batch_size": 0}),
    ]
    embedded = AsyncMemory(str(tmp_path / "e.db"), embedder=minilm)
    async with embedded, _remote(server) as remote:
        for name, kwargs in calls:
            errors = []
            for mem in (embedded, remote):
                with pytest.raises(MemoryValidationError) as info:
                    await getattr(mem, name)(**kwargs)
                errors.append(str(info.value))
            assert errors[0] == errors[1], (name, kwargs)
        # Checked by the server: the same class, the server's message.
        with pytest.raises(MemoryValidationError):
            await remote.search("q" * 20_000, agent_id="dev-1")


async def test_what_the_server_decides_is_not_available_per_call(server: LiveServer) -> None:
    async with _remote(server) as mem:
        with pytest.raises(MemoryCapabilityError, match="not available over HTTP"):
            await mem.search("q", agent_id="dev-1", preset=get_preset("fast"))
        # A preset the server knows is named per search; an unknown one is the server's 422.
        assert await mem.search("q", agent_id="dev-1", preset="bm25") == []
        with pytest.raises(MemoryValidationError, match="preset"):
            await mem.search("q", agent_id="dev-1", preset="no-such-preset")
        # Admission control runs on the server: a rejection is an outcome, not an error.
        judged = await mem.write("ok", agent_id="dev-1", admission=True)
        assert judged.decision.admission is not None
        with pytest.raises(MemoryCapabilityError):
            await mem.consolidate(agent_id="dev-1", config=None, llm=object())  # type: ignore[arg-type]
        with pytest.raises(MemoryCapabilityError):
            await mem.consolidate_if_due(agent_id="dev-1")
        kept = await mem.add("archive me over HTTP", agent_id="dev-1")
        index = await mem.archive([kept], agent_id="dev-1")
        assert list(index) == [kept]
        assert (await mem.restore(kept, agent_id="dev-1")).id == kept
        [maybe] = await mem.add_many(
            [{"content": "maybe true", "confidence": 0.5}], agent_id="dev-1"
        )
        assert (await mem.get(maybe, agent_id="dev-1")).metadata.confidence == 0.5
        with pytest.raises(MemoryCapabilityError, match="valid_from"):
            await mem.add_many(
                [MemoryStoreRequest(content="x", valid_from=datetime(2026, 1, 1, tzinfo=UTC))],
                agent_id="dev-1",
            )


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_an_unreachable_server_is_a_connection_error() -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    async with AsyncMemory(url, api_key="mvk_whatever") as mem:
        with pytest.raises(
            MemoryConnectionError, match=f"cannot reach the memvault server at {url}"
        ):
            await mem.count(agent_id="dev-1")  # a read: retried, then given up
        with pytest.raises(MemoryConnectionError, match=url):
            await mem.add("hello", agent_id="dev-1")
    with Memory(url) as sync, pytest.raises(MemoryConnectionError, match=url):
        sync.search("anything", agent_id="dev-1")


def _error_reply(status: int, code: str, message: str) -> tuple[int, str, bytes]:
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
    return status, "application/json", body


class _NotMemvault(BaseHTTPRequestHandler):
    """A web server that is not memvault (or a failing proxy in front of it)."""

    hits: dict[str, int] = {}  # noqa: RUF012 - reset per test by the fixture

    def _answer(self) -> None:
        path = self.path.split("?")[0]
        self.hits[f"{self.command} {path}"] = self.hits.get(f"{self.command} {path}", 0) + 1
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        routes: dict[str, tuple[int, str, bytes]] = {
            "/v1/stats": (200, "text/html", b"<html>hello</html>"),
            "/v1/agents": (502, "text/plain", b"bad gateway"),
            "/v1/count": _error_reply(503, "backend_unavailable", "the store is unreachable"),
            "/v1/memories": (503, "text/plain", b"unavailable"),
            "/v1/search": _error_reply(500, "internal_error", "internal server error"),
            "/v1/memories/batch": _error_reply(500, "store_failed", "disk full"),
            "/v1/export": (200, "application/json", b'{"unexpected": true}'),
        }
        status, kind, body = routes.get(path, (404, "text/plain", b"nothing here"))
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def not_memvault() -> Iterator[tuple[str, dict[str, int]]]:
    _NotMemvault.hits = {}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _NotMemvault)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", _NotMemvault.hits
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


async def test_foreign_and_failing_servers(not_memvault: tuple[str, dict[str, int]]) -> None:
    url, hits = not_memvault
    async with AsyncMemory(url, api_key="mvk_whatever") as mem:
        with pytest.raises(MemoryConnectionError, match="not JSON"):
            await mem.stats()
        with pytest.raises(MemoryConnectionError, match="HTTP 502"):
            await mem.agents()
        with pytest.raises(MemoryConnectionError, match="the store is unreachable"):
            await mem.count(agent_id="dev-1")
        assert hits["GET /v1/count"] == 3  # a read is retried twice on 503
        with pytest.raises(MemoryConnectionError):
            await mem.add("hello", agent_id="dev-1")
        assert hits["POST /v1/memories"] == 1  # a write never is
        with pytest.raises(MemoryRetrievalError, match="internal server error") as info:
            await mem.search("q", agent_id="dev-1")
        assert not isinstance(info.value, MemoryStoreError)
        with pytest.raises(MemoryStoreError, match="disk full"):
            await mem.add_many([{"content": "x"}], agent_id="dev-1")
        with pytest.raises(MemoryRetrievalError, match="unexpected response"):
            await mem.export()
        with pytest.raises(MemoryNotFoundError):
            await mem.audit()


# -- tenants and keys ---------------------------------------------------------------------------


async def test_a_key_sees_only_its_tenant(server: LiveServer) -> None:
    async with _remote(server, "admin") as default, _remote(server, "acme") as acme:
        mid = await default.add("Default tenant secret: the vault code is 1234", agent_id="dev-1")
        assert await acme.count(agent_id="dev-1") == 0
        assert await acme.list(agent_id="dev-1") == []
        assert await acme.search("vault code", agent_id="dev-1") == []
        with pytest.raises(MemoryNotFoundError):
            await acme.get(mid, agent_id="dev-1")
        assert await acme.export() == []
        own = await acme.add("Acme deploys on Tuesdays", agent_id="dev-1")
        assert [e.id for e in await acme.list(agent_id="dev-1")] == [own]
        assert [e.id for e in await default.list(agent_id="dev-1")] == [mid]
    async with _remote(server, "acme-dev1") as acme_dev:
        assert [e.content for e in await acme_dev.search("deploy day", agent_id="dev-1")] == [
            "Acme deploys on Tuesdays"
        ]


# -- what is built on the facade ------------------------------------------------------------------


async def test_strategies_and_tools_work_over_http(server: LiveServer) -> None:
    async with _remote(server, "dev1") as mem:
        await mem.add("Prefers Litestar over Flask for web services", agent_id="dev-1")
        strategy = mem.context_strategy()
        ctx = await strategy.prepare_context("dev-1", "which web framework?", 500)
        assert "Litestar" in ctx.text
        for name in ("context", "tool_based", "self_editing"):
            assert mem.injection_strategy(name) is not None
        tool_based = mem.injection_strategy("tool_based")
        found = await tool_based.handle_tool_call(  # type: ignore[union-attr]
            "dev-1", "search_memory", {"query": "web framework"}
        )
        assert "Litestar" in found
        tools = mem.memory_tools()
        stored = await tools.remember("dev-1", "The release train leaves on Thursdays", "process")
        assert stored.startswith("Stored semantic memory")
        recalled = await tools.recall("dev-1", "when is the release?")
        assert "Thursdays" in recalled
        assert "Thursdays" in await tools.list_memories("dev-1", category="process")


# -- the CLI pointed at a server ------------------------------------------------------------------


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_over_http(
    server: LiveServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    for name in list(os.environ):
        if name.startswith("MEMVAULT_") and name != "MEMVAULT_CACHE_DIR":
            monkeypatch.delenv(name)
    workdir = tmp_path / "client"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setenv(API_KEY_ENV, server.secrets["dev1"])
    db = ["--db", server.url]

    code, out, err = _cli(
        capsys, *db, "add", "Prefers Litestar over Flask", "--agent", "dev-1", "--tag", "pref",
        "--json",
    )  # fmt: skip
    assert code == 0, err
    mid = json.loads(out)["id"]
    code, out, err = _cli(capsys, *db, "add", "Lunch is at noon", "-a", "dev-1")
    assert code == 0, err
    code, out, err = _cli(capsys, *db, "search", "web framework", "-a", "dev-1", "--json")
    assert code == 0, err
    hits = json.loads(out)
    assert hits[0]["id"] == mid and hits[0]["relevance_score"] is not None
    code, out, err = _cli(capsys, *db, "list", "-a", "dev-1", "--json")
    assert code == 0, err
    assert [e["content"] for e in json.loads(out)] == [
        "Lunch is at noon",
        "Prefers Litestar over Flask",
    ]
    # The memories are on the server, not in a local file.
    assert not list(workdir.iterdir())

    code, out, err = _cli(capsys, *db, "list", "-a", "dev-2", "--json")
    assert code == 2 and "dev-2" in err
    monkeypatch.setenv(API_KEY_ENV, "mvk_wrong")
    code, out, err = _cli(capsys, *db, "search", "web framework", "-a", "dev-1")
    assert code == 2 and "invalid or revoked API key" in err
    monkeypatch.delenv(API_KEY_ENV)
    # The key can also be given as an option.
    code, out, err = _cli(
        capsys, *db, "--api-key", server.secrets["dev1"], "list", "-a", "dev-1", "--json"
    )
    assert code == 0 and len(json.loads(out)) == 2, err
    code, out, err = _cli(capsys, "--db", f"http://127.0.0.1:{_closed_port()}", "list")
    assert code == 2 and "cannot reach the memvault server" in err


async def test_memvault_url_moves_unchanged_code_onto_the_server(
    server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMVAULT_URL", server.url)
    monkeypatch.setenv("MEMVAULT_API_KEY", server.secrets["dev1"])
    async with AsyncMemory() as mem:
        assert type(mem) is RemoteAsyncMemory
        mid = await mem.add("configured by the environment", agent_id="dev-1")
    with server.client("dev1") as c:
        assert c.get(f"/v1/memories/{mid}", params={"agent_id": "dev-1"}).status_code == 200


# -- the generic path: arguments -> request model -> route -> response model -> result ----------


def _op_calls() -> dict[str, tuple[str, set[str]]]:
    """Each method that calls ``self._op`` / ``self._capture``: (operation, keywords it passes)."""
    classes = RemoteAsyncMemory.__mro__[: RemoteAsyncMemory.__mro__.index(AsyncMemory)]
    source = "\n".join(textwrap.dedent(inspect.getsource(c)) for c in classes)
    tree = ast.parse(source)
    found: dict[str, tuple[str, set[str]]] = {}
    for method in ast.walk(tree):
        if not isinstance(method, ast.AsyncFunctionDef) or method.name.startswith("_"):
            continue
        for node in ast.walk(method):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"_op", "_capture"}
                and isinstance(node.args[0], ast.Constant)
            ):
                keywords = {k.arg for k in node.keywords if k.arg is not None}
                found[method.name] = (str(node.args[0].value), keywords)
    return found


# What a method keeps for itself instead of sending (code cannot travel; files stay here).
_NOT_SENT: dict[str, set[str]] = {
    "consolidate": {"llm", "config"},
    "context": {"filter_strategy"},
    "search_and_ask": {"llm"},
    "export": {"path"},
    "import_": {"source", "batch_size", "on_progress"},
    "learn_from": {"outcome", "agent_id"},  # sent as the outcome's fields plus agent_id
}


def test_every_method_sends_all_its_arguments_as_fields_of_its_request_model() -> None:
    calls = _op_calls()
    assert {"write", "search", "context", "add_many", "capture_episode"} <= set(calls)
    for name, (operation, keywords) in calls.items():
        fields = set(get_operation(operation).request.model_fields)
        assert keywords <= fields, (name, keywords - fields)
        params = set(inspect.signature(getattr(RemoteAsyncMemory, name)).parameters) - {"self"}
        assert params - keywords == _NOT_SENT.get(name, set()), name


def _closed_memory() -> AsyncMemory:
    """A remote memory whose server does not exist: a request that went out would fail so."""
    return AsyncMemory(f"http://127.0.0.1:{_closed_port()}", api_key="mvk_whatever")


def _server_says(operation: str, fields: dict[str, Any]) -> str:
    """The message the server gives for ``fields`` its request model refuses."""
    with pytest.raises(ValidationError) as info:
        get_operation(operation).request.model_validate(fields)
    return str(model_error(info.value))


async def test_the_request_model_refuses_before_anything_is_sent() -> None:
    tags = [f"t{i}" for i in range(65)]
    async with _closed_memory() as mem:
        with pytest.raises(MemoryValidationError) as info:
            await mem.search("q", agent_id="dev-1", tags=tags)
        assert str(info.value) == _server_says(
            "search", {"query": "q", "agent_id": "dev-1", "tags": tags}
        )
        assert "tags" in str(info.value)
        with pytest.raises(MemoryValidationError) as info:
            await mem.working_note("t" * 201, "a note", agent_id="dev-1")
        assert str(info.value) == _server_says(
            "working_note", {"task_id": "t" * 201, "content": "a note", "agent_id": "dev-1"}
        )
        with pytest.raises(MemoryValidationError) as info:
            await mem.list(agent_id="dev-1", limit=5000)  # a page limit is refused, not capped
        assert str(info.value) == _server_says("list", {"agent_id": "dev-1", "limit": 5000})
        # Never raises, on any transport: the refusal becomes "nothing captured".
        assert await mem.capture_episode("", agent_id="dev-1") is None


class _Recording(BaseHTTPRequestHandler):
    """A fake memvault that records each request's JSON and answers from ``answers``."""

    answers: dict[str, Any] = {}  # noqa: RUF012 - set per test by the fixture
    seen: dict[str, Any] = {}  # noqa: RUF012

    def _answer(self) -> None:
        path = self.path.split("?")[0]
        length = int(self.headers.get("content-length") or 0)
        self.seen[f"{self.command} {path}"] = json.loads(self.rfile.read(length) or b"null")
        body = json.dumps(self.answers[f"{self.command} {path}"]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def recording() -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    _Recording.answers, _Recording.seen = {}, {}
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Recording)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", _Recording.answers, _Recording.seen
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=10)


async def test_ranked_results_are_capped_at_the_server_maximum(
    recording: tuple[str, dict[str, Any], dict[str, Any]],
) -> None:
    url, answers, seen = recording
    answers["POST /v1/search"] = {"results": []}
    answers["POST /v1/context"] = {
        "text": "", "tokens": 0, "role": "system", "messages": [], "entries": []
    }  # fmt: skip
    async with AsyncMemory(url, api_key="mvk_whatever") as mem:
        assert await mem.search("q", agent_id="dev-1", limit=500, categories="episodic") == []
        ctx = await mem.context("q", agent_id="dev-1", token_budget=10**9, limit=500)
    search = get_operation("search").request.model_fields
    assert seen["POST /v1/search"]["limit"] == search["limit"].metadata[-1].le == 100
    assert seen["POST /v1/search"]["categories"] == ["episodic"]
    assert (seen["POST /v1/context"]["limit"], seen["POST /v1/context"]["token_budget"]) == (
        100,
        200_000,
    )
    assert ctx.entries == () and ctx.role == "system"


async def test_an_answer_of_another_shape_than_the_response_model_is_an_error(
    recording: tuple[str, dict[str, Any], dict[str, Any]],
) -> None:
    url, answers, _ = recording
    answers["GET /v1/count"] = {"count": "many"}
    answers["POST /v1/memories/batch"] = {"ids": ["a"]}  # one id for two items
    async with AsyncMemory(url, api_key="mvk_whatever") as mem:
        with pytest.raises(MemoryRetrievalError, match="unexpected response"):
            await mem.count(agent_id="dev-1")
        with pytest.raises(MemoryStoreError, match="1 ids for 2 items"):
            await mem.add_many([{"content": "x"}, {"content": "y"}], agent_id="dev-1")


async def test_learning_and_working_memory_answers_decode_to_the_declared_types(
    server: LiveServer,
) -> None:
    async with _remote(server) as mem:
        profile = await mem.set_profile("dev-1", role="backend", seniority="senior")
        assert isinstance(profile, AgentProfile) and profile.seniority is Seniority.SENIOR
        report = await mem.learn_from(
            {"success": False, "task_type": "deploy", "error": "db timeout"}, agent_id="dev-1"
        )
        assert isinstance(report, LearnReport) and report.agent_id == "dev-1"
        assert report.error is None
        refused = await mem.learn_from({"success": "maybe"}, agent_id="dev-1")  # never raises
        assert refused.error is not None and "success" in refused.error
        assert isinstance(await mem.evolve(force=True), EvolverReport)
        assert isinstance(await mem.prune_procedural(agent_id="dev-1"), PruneReport)
        assert await mem._policies() == []
        note = await mem.working_note("T-1", "Check the flaky test first", agent_id="dev-1")
        pad = await mem.working("T-1", agent_id="dev-1")
        assert isinstance(pad, WorkingMemory)
        assert [(n.id, n.content) for n in pad.notes] == [(note, "Check the flaky test first")]
        assert await mem.clear_working("T-1", agent_id="dev-1") == 1


async def test_mem0_habits_over_http(server: LiveServer) -> None:
    # user_id alone is a scope (the default agent), get_all pages, delete_all stays scoped,
    # an import keeps each entry's own agent: the same answers as the embedded memory.
    async with _remote(server) as mem:
        for i in range(3):
            await mem.add(f"alice likes tea number {i}", user_id="alice-h")
        await mem.add("bob likes coffee", user_id="bob-h")
        await mem.add("dev-9 keeps its own note", agent_id="dev-9")
        alice = await mem.get_all(user_id="alice-h", limit=None)
        assert sorted(e.content for e in alice) == [f"alice likes tea number {i}" for i in range(3)]
        assert {e.agent_id for e in alice} == {"default"}
        assert len(await mem.get_all(user_id="alice-h", limit=2)) == 2
        assert await mem.delete_all(user_id="alice-h") == 3
        assert await mem.get_all(user_id="alice-h") == []
        assert [e.content for e in await mem.get_all(user_id="bob-h")] == ["bob likes coffee"]
        exported = await mem.export(agent_id="dev-9")
        await mem.clear(agent_id="dev-9")
        assert await mem.import_(exported) == 1
        assert [e.content for e in await mem.get_all(agent_id="dev-9")] == [
            "dev-9 keeps its own note"
        ]
        with pytest.raises(MemoryValidationError, match="agent_id or user_id"):
            await mem.get_all()
