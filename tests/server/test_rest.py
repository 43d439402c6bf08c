"""The REST API through the real stack: uvicorn on loopback, real keys, a real SQLite store."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from memvault import Memory
from memvault.server.rest import ServerSettings

from .conftest import LiveServer, ServerFactory


def _add(client: httpx.Client, content: str, agent: str = "dev-1", **extra: object) -> str:
    resp = client.post("/v1/memories", json={"agent_id": agent, "content": content, **extra})
    assert resp.status_code == 201, resp.text
    mid = resp.json()["id"]
    assert isinstance(mid, str)
    return mid


def _error(resp: httpx.Response, status: int, code: str) -> str:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    message = body["error"]["message"]
    assert isinstance(message, str) and message
    assert "Traceback" not in message
    return message


# -- the core routes -------------------------------------------------------------------------


def test_store_get_search_list_delete_round_trip(server: LiveServer) -> None:
    with server.client("dev1") as c:
        mid = _add(c, "Prefers Litestar over Flask", tags=["preference"])
        _add(c, "Deployed v2.1 and rolled back because of a memory leak", category="episodic")

        got = c.get(f"/v1/memories/{mid}", params={"agent_id": "dev-1"})
        assert got.status_code == 200
        assert got.json()["content"] == "Prefers Litestar over Flask"
        assert got.json()["tags"] == ["preference"]

        hits = c.post("/v1/search", json={"agent_id": "dev-1", "query": "which web framework?"})
        assert hits.status_code == 200
        results = hits.json()["results"]
        assert results[0]["id"] == mid
        assert results[0]["relevance_score"] > 0

        listed = c.get("/v1/memories", params={"agent_id": "dev-1", "category": "episodic"})
        assert [m["category"] for m in listed.json()["memories"]] == ["episodic"]
        assert c.get("/v1/count", params={"agent_id": "dev-1"}).json() == {"count": 2}

        deleted = c.delete(f"/v1/memories/{mid}", params={"agent_id": "dev-1", "reason": "stale"})
        assert deleted.json() == {"deleted": 1}
        _error(c.get(f"/v1/memories/{mid}", params={"agent_id": "dev-1"}), 404, "not_found")
        _error(c.delete(f"/v1/memories/{mid}", params={"agent_id": "dev-1"}), 404, "not_found")

    # The delete is audited under the key's actor with the reason it gave.
    with server.client("admin") as admin:
        records = admin.get("/v1/audit", params={"agent_id": "dev-1", "memory_id": mid}).json()
    actions = {r["action"]: r for r in records["records"]}
    assert actions["memory.delete"]["actor"] == "agent:dev-1"
    assert actions["memory.delete"]["details"]["stated_reason"] == "stale"
    assert actions["memory.store"]["actor"] == "agent:dev-1"


def test_duplicate_write_returns_the_existing_id(server: LiveServer) -> None:
    with server.client("dev1") as c:
        first = _add(c, "The staging database runs PostgreSQL 16")
        resp = c.post(
            "/v1/memories",
            json={"agent_id": "dev-1", "content": "The staging database runs PostgreSQL 16"},
        )
        assert resp.status_code == 201
        assert resp.json()["id"] == first
        assert resp.json()["decision"] == "noop"


def test_batch_context_export_import_and_clear(server: LiveServer) -> None:
    items = [{"content": f"Service {n} is owned by team {n % 3}"} for n in range(5)]
    with server.client("operator") as c:
        ids = c.post("/v1/memories/batch", json={"agent_id": "ops", "items": items}).json()["ids"]
        assert len(ids) == 5 and len(set(ids)) == 5
        ctx = c.post(
            "/v1/context",
            json={"agent_id": "ops", "query": "who owns service 3?", "token_budget": 200},
        ).json()
        assert "Service 3 is owned by team 0" in ctx["text"]
        assert ctx["tokens"] <= 200 and ctx["messages"][0]["role"] == "system"
        exported = c.get("/v1/export", params={"agent_id": "ops"}).json()["memories"]
        assert sorted(m["id"] for m in exported) == sorted(ids)
        # Clearing needs the admin scope.
        _error(c.delete("/v1/memories", params={"agent_id": "ops"}), 403, "permission_denied")
    with server.client("admin") as admin:
        cleared = admin.delete("/v1/memories", params={"agent_id": "ops", "reason": "reset"})
        assert cleared.json() == {"deleted": 5}
        added = admin.post("/v1/import", json={"items": exported}).json()
        assert added == {"added": 5}
        again = admin.post("/v1/import", json={"items": exported}).json()
        assert again == {"added": 0}
        assert admin.get("/v1/count", params={"agent_id": "ops"}).json() == {"count": 5}
        assert "ops" in admin.get("/v1/agents").json()["agents"]
        assert admin.get("/v1/stats").json()["total"] == 5


def test_shared_knowledge_and_sessions(server: LiveServer) -> None:
    with server.client("dev1") as dev1, server.client("dev2") as dev2:
        sid = dev1.post(
            "/v1/shared",
            json={"agent_id": "dev-1", "content": "Deploys freeze on Fridays after 3pm"},
        )
        assert sid.status_code == 201
        found = dev2.post("/v1/shared/search", json={"query": "when are deploys frozen?"})
        assert found.json()["results"][0]["id"] == sid.json()["id"]
        # Only the author retracts; another agent's key cannot act as the author.
        refused = dev2.delete(f"/v1/shared/{sid.json()['id']}", params={"agent_id": "dev-1"})
        _error(refused, 403, "permission_denied")
        done = dev1.delete(f"/v1/shared/{sid.json()['id']}", params={"agent_id": "dev-1"})
        assert done.json() == {"retracted": True}
        assert dev2.post("/v1/shared/search", json={"query": "deploys"}).json()["results"] == []

        messages = [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello!"},
        ]
        saved = dev1.put(
            "/v1/sessions/0123456789ab", json={"agent_id": "dev-1", "messages": messages}
        )
        assert saved.status_code == 200 and saved.json()["message_count"] == 2
        latest = dev1.get("/v1/sessions/latest", params={"agent_id": "dev-1"}).json()
        assert [m["role"] for m in latest["messages"]] == ["user", "assistant"]
        listed = dev1.get("/v1/sessions", params={"agent_id": "dev-1"}).json()["sessions"]
        assert [s["session_id"] for s in listed] == ["0123456789ab"]
        # Any sane id names a session (a missing one is 404); one with control characters is
        # refused.
        _error(dev1.get("/v1/sessions/no-such", params={"agent_id": "dev-1"}), 404, "not_found")
        bad = dev1.get("/v1/sessions/bad%01id", params={"agent_id": "dev-1"})
        _error(bad, 422, "validation_error")
        gone = dev1.delete("/v1/sessions/0123456789ab", params={"agent_id": "dev-1"})
        assert gone.json() == {"deleted": 1}
        _error(dev1.get("/v1/sessions/latest", params={"agent_id": "dev-1"}), 404, "not_found")


# -- authentication, scopes, tenants ---------------------------------------------------------


def test_every_route_but_health_needs_a_valid_key(server: LiveServer) -> None:
    with server.client() as anon:
        assert anon.get("/health").json()["status"] == "ok"
        _error(anon.get("/v1/count", params={"agent_id": "dev-1"}), 401, "unauthenticated")
        _error(anon.get("/metrics"), 401, "unauthenticated")
        bad = anon.get(
            "/v1/count", params={"agent_id": "dev-1"}, headers={"Authorization": "Bearer nope"}
        )
        _error(bad, 401, "unauthenticated")
        basic = anon.get(
            "/v1/count", params={"agent_id": "dev-1"}, headers={"Authorization": "Basic eDp5"}
        )
        _error(basic, 401, "unauthenticated")


def test_revoked_key_is_refused(live_server: ServerFactory) -> None:
    srv = live_server(keys={"temp": {"scopes": ["read"]}})
    assert srv.keys is not None
    key = srv.keys.authenticate(srv.secrets["temp"])
    assert key is not None
    assert srv.keys.revoke(key.id)
    with srv.client("temp") as c:
        # The server caches a key it has not seen yet only after a successful check.
        _error(c.get("/v1/agents"), 401, "unauthenticated")


def test_agent_keys_reach_only_their_own_agent(server: LiveServer) -> None:
    with server.client("dev1") as dev1, server.client("dev2") as dev2:
        mid = _add(dev1, "dev-1's private note about the billing bug")
        _error(dev2.get(f"/v1/memories/{mid}", params={"agent_id": "dev-1"}), 403,
               "permission_denied")  # fmt: skip
        _error(
            dev2.post("/v1/search", json={"agent_id": "dev-1", "query": "billing"}),
            403,
            "permission_denied",
        )
        # Asking as itself for the other agent's id: indistinguishable from absent.
        _error(dev2.get(f"/v1/memories/{mid}", params={"agent_id": "dev-2"}), 404, "not_found")
        hits = dev2.post("/v1/search", json={"agent_id": "dev-2", "query": "billing bug"})
        assert hits.json()["results"] == []
        _error(dev1.get("/v1/stats"), 403, "permission_denied")
        assert dev1.get("/v1/agents").json() == {"agents": ["dev-1"]}


def test_scopes_gate_operations(server: LiveServer) -> None:
    with server.client("reader") as reader:
        _error(
            reader.post("/v1/memories", json={"agent_id": "dev-1", "content": "x"}),
            403,
            "permission_denied",
        )
        assert reader.get("/v1/count", params={"agent_id": "dev-1"}).status_code == 200
        _error(reader.get("/v1/audit"), 403, "permission_denied")
        _error(reader.get("/v1/export"), 403, "permission_denied")


def test_tenants_never_share_data(server: LiveServer) -> None:
    with server.client("dev1") as default, server.client("acme-dev1") as acme:
        mid = _add(default, "The default tenant's launch code is 7431")
        _error(acme.get(f"/v1/memories/{mid}", params={"agent_id": "dev-1"}), 404, "not_found")
        hits = acme.post("/v1/search", json={"agent_id": "dev-1", "query": "launch code"})
        assert hits.json()["results"] == []
        acme_id = _add(acme, "Acme's launch code is 1234")
        assert acme.get("/v1/count", params={"agent_id": "dev-1"}).json() == {"count": 1}
        assert default.get("/v1/count", params={"agent_id": "dev-1"}).json() == {"count": 1}
        assert acme_id != mid
    # Each tenant has its own file next to the server's store.
    assert server.db.exists()
    assert (server.db.parent / f"{server.db.stem}.acme.db").exists()
    with Memory(str(server.db)) as local:
        assert [e.content for e in local.list(agent_id="dev-1")] == [
            "The default tenant's launch code is 7431"
        ]


# -- errors, limits, ops ---------------------------------------------------------------------


def test_validation_errors_are_422_json(server: LiveServer) -> None:
    with server.client("dev1") as c:
        _error(c.post("/v1/memories", json={"agent_id": "dev-1"}), 422, "validation_error")
        _error(
            c.post("/v1/memories", json={"agent_id": "dev-1", "content": "   "}),
            422,
            "validation_error",
        )
        _error(
            c.post("/v1/memories", json={"agent_id": "dev-1", "content": "x", "colour": "red"}),
            422,
            "validation_error",
        )
        _error(
            c.post("/v1/search", json={"agent_id": "dev-1", "query": "x", "limit": 0}),
            422,
            "validation_error",
        )
        _error(
            c.post(
                "/v1/memories",
                json={"agent_id": "dev-1", "content": "x", "created_at": "2026-01-01T00:00:00"},
            ),
            422,
            "validation_error",
        )
        bad_json = c.post(
            "/v1/search", content=b"{not json", headers={"Content-Type": "application/json"}
        )
        _error(bad_json, 422, "validation_error")
        _error(c.get("/v1/nope"), 404, "not_found")
        _error(c.put("/v1/search"), 405, "method_not_allowed")


def test_bodies_over_the_limit_are_refused(live_server: ServerFactory) -> None:
    srv = live_server(auth=False, settings=ServerSettings(max_body_bytes=2048))
    with srv.client() as c:
        big = c.post("/v1/memories", json={"agent_id": "dev-1", "content": "x" * 5000})
        _error(big, 413, "payload_too_large")

        def chunks() -> object:
            yield b'{"agent_id": "dev-1", "content": "'
            for _ in range(10):
                yield b"y" * 1000
            yield b'"}'

        streamed = c.post(
            "/v1/memories", content=chunks(), headers={"Content-Type": "application/json"}
        )
        _error(streamed, 413, "payload_too_large")
        assert c.get("/v1/count", params={"agent_id": "dev-1"}).json() == {"count": 0}


def test_no_auth_mode_acts_as_local_admin(live_server: ServerFactory) -> None:
    srv = live_server(auth=False)
    with srv.client() as c:
        _add(c, "local note")
        assert c.get("/v1/audit").status_code == 200


def test_cors_is_off_by_default_and_on_when_asked(live_server: ServerFactory) -> None:
    plain = live_server(auth=False)
    preflight = {
        "Origin": "https://app.example",
        "Access-Control-Request-Method": "POST",
    }
    with plain.client() as c:
        resp = c.options("/v1/search", headers=preflight)
        assert "access-control-allow-origin" not in resp.headers
    cors = live_server(auth=False, settings=ServerSettings(cors_origins=("https://app.example",)))
    with cors.client() as c:
        resp = c.options("/v1/search", headers=preflight)
        assert resp.headers["access-control-allow-origin"] == "https://app.example"


def test_metrics_count_requests_by_route_template(server: LiveServer) -> None:
    with server.client("dev1") as c:
        mid = _add(c, "metrics probe")
        c.get(f"/v1/memories/{mid}", params={"agent_id": "dev-1"})
        c.get("/v1/memories/unknown-id", params={"agent_id": "dev-1"})
    with server.client("admin") as admin:
        text = admin.get("/metrics").text
    assert "# TYPE memvault_http_requests_total counter" in text
    assert (
        'memvault_http_requests_total{method="GET",route="/v1/memories/{memory_id}",status="200"} 1'
        in text
    )
    assert 'route="/v1/memories/{memory_id}",status="404"} 1' in text
    assert mid not in text
    buckets = [line for line in text.splitlines() if "_duration_seconds_bucket{" in line]
    assert any('method="POST",route="/v1/memories"' in line for line in buckets)


def test_openapi_documents_routes_examples_and_bearer_auth(server: LiveServer) -> None:
    with server.client() as c:
        spec = c.get("/openapi.json").json()
    paths = spec["paths"]
    for route in ("/v1/memories", "/v1/memories/{memory_id}", "/v1/search", "/v1/context"):
        assert route in paths
    assert paths["/v1/memories"]["post"]["responses"]["201"]
    schemas = spec["components"]["schemas"]
    assert schemas["AddBody"]["examples"][0]["content"] == "Prefers Litestar over Flask"
    assert any(s.get("scheme") == "bearer" for s in spec["components"]["securitySchemes"].values())


def test_server_store_is_the_embedded_store(server: LiveServer, tmp_path: Path) -> None:
    """What the server writes, the embedded API reads from the same file (and back)."""
    with server.client("dev1") as c:
        mid = _add(c, "Written over HTTP")
    with Memory(str(server.db)) as local:
        assert local.get(mid, agent_id="dev-1").content == "Written over HTTP"


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_loopback_detection(host: str) -> None:
    from memvault.cli.serve import is_loopback

    assert is_loopback(host)
    assert not is_loopback("0.0.0.0")
    assert not is_loopback("192.168.1.4")


def test_no_auth_server_answers_only_local_host_names(live_server: ServerFactory) -> None:
    srv = live_server(auth=False)
    with srv.client() as c:
        assert c.get("/v1/agents").status_code == 200
        # A page on another origin reaching the port through DNS rebinding sends its own Host.
        rebound = c.get("/v1/agents", headers={"Host": "attacker.example"})
        assert rebound.status_code == 400
        assert c.get("/v1/agents", headers={"Host": "localhost:1234"}).status_code == 200


def test_values_the_store_cannot_hold_are_422(server: LiveServer) -> None:
    with server.client("dev1") as c:
        edge = c.post(
            "/v1/memories",
            json={"agent_id": "dev-1", "content": "x", "created_at": "9999-12-31T23:59:59-23:59"},
        )
        _error(edge, 422, "validation_error")
        lone = c.put(
            "/v1/sessions/0123456789ab",
            content=b'{"agent_id": "dev-1", "messages": [{"role": "user", "content": "\\ud800"}]}',
            headers={"Content-Type": "application/json"},
        )
        _error(lone, 422, "validation_error")


def test_server_side_failures_do_not_leak_details() -> None:
    from memvault.errors import MemoryConnectionError, MemoryNotFoundError, MemoryStoreError
    from memvault.server.errors import public_message

    leak = MemoryStoreError("sqlite write to /srv/secret/x.db failed: database is locked")
    assert "/srv/secret" not in public_message(leak)
    assert "/srv" not in public_message(MemoryConnectionError("store /srv/x.db is unusable"))
    assert public_message(RuntimeError("boom at 0xdeadbeef")) == "internal server error"
    # Client errors keep their message: it tells the caller what to fix.
    assert public_message(MemoryNotFoundError("memory m1 not found")) == "memory m1 not found"
