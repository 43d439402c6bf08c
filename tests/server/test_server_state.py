"""State shared by every server instance over one store: dashboard sessions, shared rate limits,
per-tenant limits.

Two real servers (uvicorn, real HTTP) over one SQLite file stand in for two hosts behind a load
balancer; the PostgreSQL variant of the same state runs in the multi-instance suite
(``tests/integration/test_multi_instance.py``) and in the contract below.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import httpx
import pytest

from memvault.server.rest import ServerSettings
from memvault.server.state import (
    InMemoryServerState,
    PostgresServerState,
    ServerState,
    SQLiteServerState,
)

from .conftest import STANDARD_KEYS, LiveServer, ServerFactory

CSRF_RE = re.compile(r'name="csrf" value="([^"]+)"')


def _csrf(html: str) -> str:
    found = CSRF_RE.search(html)
    assert found is not None, html[:500]
    return found.group(1)


def _login(server: LiveServer, client: httpx.Client, key: str = "admin") -> None:
    form = client.get(f"{server.url}/ui/login")
    done = client.post(
        f"{server.url}/ui/login", data={"csrf": _csrf(form.text), "key": server.secrets[key]}
    )
    assert done.status_code == 303, done.text


def _two(live_server: ServerFactory, tmp_path: Path, **kwargs: object) -> tuple[LiveServer, ...]:
    db = tmp_path / "shared.db"
    first = live_server(keys=STANDARD_KEYS, db=db, shared_state=True, **kwargs)
    second = live_server(db=db, shared_state=True, **kwargs)
    second.secrets.update(first.secrets)
    return first, second


# -- the contract of every engine -------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _engines(tmp_path: Path, request: pytest.FixtureRequest, clock: Clock) -> list[ServerState]:
    engine = request.param
    if engine == "memory":
        return [InMemoryServerState(clock=clock)]
    if engine == "sqlite":
        return [SQLiteServerState(tmp_path / "s.db", clock=clock) for _ in range(2)]
    url = request.getfixturevalue("postgres_url")
    schema = request.getfixturevalue("schemas")()
    sep = "&" if "?" in url else "?"
    return [PostgresServerState(f"{url}{sep}schema={schema}", clock=clock) for _ in range(2)]


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def states(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[list[ServerState], Clock]:
    clock = Clock()
    return _engines(tmp_path, request, clock), clock


async def test_a_session_opened_by_one_instance_is_known_to_every_other(states) -> None:
    found, clock = states
    first, last = found[0], found[-1]
    try:
        session = await first.open_session("k_0123456789ab")
        seen = await last.session(session.id)
        assert seen is not None and seen.key_id == "k_0123456789ab"
        assert seen.csrf == session.csrf and seen.csrf_ok(session.csrf)
        assert not seen.csrf_ok("forged") and not seen.csrf_ok(None)
        assert await last.session("not-a-session") is None
        # Idle for 8 hours and a minute: gone, on every instance.
        clock.now += 8 * 3600 + 60
        assert await first.session(session.id) is None
        assert await last.session(session.id) is None
        again = await first.open_session(None)
        await last.drop_session(again.id)
        assert await first.session(again.id) is None
    finally:
        for state in found:
            await state.close()


async def test_a_shared_bucket_holds_across_instances(states) -> None:
    found, clock = states
    try:
        # Burst 3, one token a second: three takes pass whichever instance takes them.
        waits = [await found[i % len(found)].take_token("key:x", 1.0, 3.0) for i in range(5)]
        assert waits[:3] == [0.0, 0.0, 0.0]
        assert all(0.0 < w <= 1.0 for w in waits[3:])
        assert await found[0].take_token("key:other", 1.0, 3.0) == 0.0  # buckets are per name
        clock.now += 1.0  # one token back
        assert await found[-1].take_token("key:x", 1.0, 3.0) == 0.0
        assert await found[0].take_token("key:x", 1.0, 3.0) > 0.0
    finally:
        for state in found:
            await state.close()


async def test_concurrent_takes_never_grant_more_than_the_burst(tmp_path: Path) -> None:
    clock = Clock()
    found = [SQLiteServerState(tmp_path / "c.db", clock=clock) for _ in range(3)]
    try:
        waits = await asyncio.gather(
            *(found[i % 3].take_token("key:y", 0.001, 10.0) for i in range(60))
        )
        assert sum(1 for w in waits if w == 0.0) == 10
    finally:
        for state in found:
            await state.close()


# -- through real servers ---------------------------------------------------------------------


def test_a_dashboard_login_on_one_server_works_on_the_other(
    live_server: ServerFactory, tmp_path: Path
) -> None:
    a, b = _two(live_server, tmp_path)
    with httpx.Client(timeout=30) as client:
        _login(a, client)
        # The same browser, its next request sent to the other instance.
        page = client.get(f"{b.url}/ui/")
        assert page.status_code == 200 and "admin:admin" in page.text
        # Logging out on the second ends the session on the first too.
        out = client.post(f"{b.url}/ui/logout", data={"csrf": _csrf(page.text)})
        assert out.status_code == 303
        assert client.get(f"{a.url}/ui/").status_code == 303


def test_a_revoked_key_ends_its_dashboard_sessions_on_every_server(
    live_server: ServerFactory, tmp_path: Path
) -> None:
    a, b = _two(live_server, tmp_path)
    assert a.keys is not None
    with httpx.Client(timeout=30) as client:
        _login(a, client, "dev1")
        assert client.get(f"{b.url}/ui/agents/dev-1").status_code == 200
        key_id = next(k.id for k in a.keys.list() if k.name == "dev1")
        assert a.keys.revoke(key_id)
        import time

        time.sleep(0.6)  # the authenticators' cache (KEY_CACHE_SECONDS) runs out
        for server in (a, b):
            assert client.get(f"{server.url}/ui/agents/dev-1").status_code == 303


def test_a_flood_of_anonymous_login_pages_stores_nothing_and_logs_nobody_out(
    live_server: ServerFactory, tmp_path: Path
) -> None:
    a, _ = _two(live_server, tmp_path)
    state = SQLiteServerState(a.db)
    with httpx.Client(timeout=30) as user:
        _login(a, user)
        with httpx.Client(base_url=a.url, timeout=30) as flood:
            for _ in range(300):
                assert flood.get("/ui/login").status_code == 200
        assert asyncio.run(state.count_sessions()) == 1
        assert user.get(f"{a.url}/ui/").status_code == 200
    asyncio.run(state.close())


def test_a_shared_rate_limit_holds_across_servers(
    live_server: ServerFactory, tmp_path: Path
) -> None:
    settings = ServerSettings(rate_limit=0.01, rate_burst=4, shared_rate_limit=True)
    a, b = _two(live_server, tmp_path, settings=settings)
    codes = []
    for n in range(8):
        server = (a, b)[n % 2]
        with server.client("dev1") as client:
            codes.append(client.get("/v1/count", params={"agent_id": "dev-1"}).status_code)
    # Per process each server would have let four through; shared, four in all.
    assert codes.count(200) == 4 and codes.count(429) == 4, codes


def test_a_noisy_tenant_is_limited_and_the_others_are_not(live_server: ServerFactory) -> None:
    keys = {
        "noisy": {"scopes": ["read", "write"], "agent_id": "bot", "tenant": "noisy"},
        "quiet": {"scopes": ["read", "write"], "agent_id": "bot", "tenant": "quiet"},
    }
    server = live_server(
        keys=keys, settings=ServerSettings(tenant_rate_limit=0.01, tenant_rate_burst=5)
    )
    with server.client("noisy") as noisy, server.client("quiet") as quiet:
        loud = [noisy.get("/v1/count", params={"agent_id": "bot"}) for _ in range(20)]
        assert [r.status_code for r in loud].count(200) == 5
        refused = next(r for r in loud if r.status_code == 429)
        assert refused.json()["error"]["code"] == "rate_limited"
        assert "noisy" in refused.json()["error"]["message"]
        assert int(refused.headers["Retry-After"]) >= 1
        calm = [quiet.get("/v1/count", params={"agent_id": "bot"}) for _ in range(5)]
        assert all(r.status_code == 200 for r in calm)


def test_a_shared_rate_limit_needs_a_state(minilm, tmp_path: Path) -> None:
    from memvault.config import load_config
    from memvault.errors import MemoryConfigError
    from memvault.server.rest import create_app
    from memvault.service import MemoryService

    service = MemoryService(load_config(url=str(tmp_path / "x.db")), embedder=minilm)
    with pytest.raises(MemoryConfigError, match="server state"):
        create_app(
            service,
            keys=None,
            settings=ServerSettings(rate_limit=1.0, shared_rate_limit=True),
        )
