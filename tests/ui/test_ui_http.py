"""The dashboard over real HTTP (httpx): login, cookies, CSRF, headers, authorization, escaping."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from markupsafe import escape

from memvault.server.ui import BENCH_REPORT_ENV

from .conftest import XSS, UiServer, csrf_of


def test_pages_need_a_login(ui_server: UiServer) -> None:
    with httpx.Client(base_url=ui_server.url) as client:
        for path in ("/ui/", "/ui/agents/dev-1", "/ui/approvals", "/ui/metrics"):
            page = client.get(path)
            assert page.status_code == 303, path
            assert page.headers["location"] == "/ui/login"
        assert client.get("/ui").status_code == 307


def test_login_keeps_the_key_server_side(ui_server: UiServer) -> None:
    with httpx.Client(base_url=ui_server.url) as client:
        form = client.get("/ui/login")
        assert form.status_code == 200
        # Before a login there is no session: only the login form's double-submit token.
        assert "memvault_ui" not in form.cookies
        token = form.cookies["memvault_ui_login"]
        assert token == csrf_of(form.text)
        done = client.post(
            "/ui/login", data={"csrf": csrf_of(form.text), "key": ui_server.secrets["admin"]}
        )
        assert done.status_code == 303 and done.headers["location"] == "/ui/"
        cookie = next(
            v for v in done.headers.get_list("set-cookie") if v.startswith("memvault_ui=")
        )
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
        # A session id nobody saw before the login (no fixation); the key is not in the cookie.
        assert client.cookies["memvault_ui"] not in (token, "")
        assert ui_server.secrets["admin"] not in cookie
        page = client.get("/ui/")
        assert page.status_code == 200
        assert ui_server.secrets["admin"] not in page.text
        assert "admin:admin" in page.text and "dev-1" in page.text


def test_bad_key_and_missing_csrf_are_refused(ui_server: UiServer) -> None:
    with httpx.Client(base_url=ui_server.url) as client:
        form = client.get("/ui/login")
        bad = client.post("/ui/login", data={"csrf": csrf_of(form.text), "key": "mvk_nope"})
        assert bad.status_code == 401 and "Invalid or revoked API key" in bad.text
        no_token = client.post("/ui/login", data={"key": ui_server.secrets["admin"]})
        assert no_token.status_code == 403
        assert client.get("/ui/").status_code == 303


def test_security_headers(ui_server: UiServer) -> None:
    with ui_server.login("admin") as client:
        for path in ("/ui/", "/ui/login", "/ui/agents/dev-1", "/ui/nope-agent-page"):
            headers = client.get(path).headers
            csp = headers["content-security-policy"]
            assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
            assert "unsafe-inline" not in csp
            assert headers["x-frame-options"] == "DENY"
            assert headers["x-content-type-options"] == "nosniff"
        js = client.get("/ui/static/htmx.min.js")
        assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
        assert client.get("/ui/static/../app.py").status_code == 404
        assert client.get("/ui/static/nope.js").status_code == 404


def test_posts_without_the_csrf_token_are_refused(ui_server: UiServer) -> None:
    with ui_server.login("admin") as client:
        target = f"/ui/agents/dev-1/memories/{ui_server.ids['semantic']}/delete"
        refused = client.post(target, data={"reason": "no token"})
        assert refused.status_code == 403
        wrong = client.post(target, data={"reason": "x", "csrf": "forged"})
        assert wrong.status_code == 403
        page = client.get(f"/ui/agents/dev-1/memories/{ui_server.ids['semantic']}")
        assert page.status_code == 200  # still there
        foreign = client.post(
            target,
            data={"reason": "x", "csrf": csrf_of(page.text)},
            headers={"Origin": "http://evil.example"},
        )
        assert foreign.status_code == 403


def test_memory_content_renders_inert(ui_server: UiServer) -> None:
    with ui_server.login("admin") as client:
        for path in (
            f"/ui/agents/dev-1/memories/{ui_server.ids['xss']}",
            "/ui/agents/dev-1?tags=xss",
            "/ui/agents/dev-1/search?q=payload+onmouseover",
            "/ui/agents/dev-1/sessions/s-1",
            "/ui/approvals",
        ):
            text = client.get(path).text
            assert "<script>window.__xss" not in text, path
            assert '"onmouseover="' not in text, path
            # Template syntax stays text: never evaluated (49, a bare JINJA-RAN, the config).
            assert text.count("JINJA-RAN") == text.count("{% if true %}JINJA-RAN{% endif %}")
            assert " 49 " not in text and "{{ 7*7 }}" in text, path
            assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in text, path
        detail = client.get(f"/ui/agents/dev-1/memories/{ui_server.ids['xss']}").text
        # The whole content, every markup character escaped (markupsafe's entities).
        assert str(escape(XSS)) in detail


def test_a_read_key_sees_but_cannot_change(ui_server: UiServer) -> None:
    with ui_server.login("reader") as client:
        page = client.get(f"/ui/agents/dev-1/memories/{ui_server.ids['procedural']}")
        assert page.status_code == 200 and "Delete memory" not in page.text
        archive = client.get("/ui/agents/dev-1/archive")
        assert "Restore" not in archive.text and ui_server.ids["archived"][:12] in archive.text
        approvals = client.get("/ui/approvals")
        assert "Approve</button>" not in approvals.text
        token = csrf_of(page.text)
        deleted = client.post(
            f"/ui/agents/dev-1/memories/{ui_server.ids['procedural']}/delete",
            data={"csrf": token, "reason": "try"},
        )
        assert deleted.status_code == 403 and "lacks the &#39;write&#39; scope" in deleted.text
        approved = client.post(f"/ui/approvals/{ui_server.ids['approval0']}/approve",
                               data={"csrf": token})  # fmt: skip
        assert approved.status_code == 403
        restored = client.post(
            f"/ui/agents/dev-1/archive/{ui_server.ids['archived']}/restore", data={"csrf": token}
        )
        assert restored.status_code == 403
        assert client.get(f"/ui/agents/dev-1/memories/{ui_server.ids['procedural']}").is_success


def test_an_agent_key_sees_only_its_agent_and_cannot_approve(ui_server: UiServer) -> None:
    with ui_server.login("dev1") as client:
        overview = client.get("/ui/")
        assert overview.status_code == 200
        assert "dev-2" not in overview.text and "agent:dev-1" in overview.text
        assert client.get("/ui/agents/dev-1").status_code == 200
        assert client.get("/ui/agents/dev-2").status_code == 403
        assert client.get(f"/ui/agents/dev-2/memories/{ui_server.ids['dev2']}").status_code == 403
        assert client.get("/ui/agents/dev-2/archive").status_code == 403
        approvals = client.get("/ui/approvals")
        assert approvals.status_code == 200 and "Approve</button>" not in approvals.text
        refused = client.post(
            f"/ui/approvals/{ui_server.ids['approval1']}/approve",
            data={"csrf": csrf_of(approvals.text), "reason": "me"},
        )
        assert refused.status_code == 403 and "may not approve" in refused.text


def test_tenants_are_isolated(ui_server: UiServer) -> None:
    with ui_server.login("acme") as client:
        page = client.get("/ui/agents/dev-1")
        assert "acme secret roadmap" in page.text and "deploy pipeline" not in page.text
    with ui_server.login("admin") as client:
        assert "acme secret roadmap" not in client.get("/ui/agents/dev-1").text
        assert client.get(f"/ui/agents/dev-1/memories/{ui_server.ids['acme']}").status_code == 404


def test_a_revoked_key_loses_its_session(ui_server: UiServer) -> None:
    key, secret = ui_server.keys.create(name="temp", scopes=["read"])
    ui_server.secrets["temp"] = secret
    with ui_server.login("temp") as client:
        assert client.get("/ui/").status_code == 200
        ui_server.keys.revoke(key.id)
        # The authenticator trusts a key for up to KEY_CACHE_SECONDS: the server's clock is
        # moved past that instead of waiting it out.
        from memvault.server.rest import KEY_CACHE_SECONDS

        ui_server.clock.advance(KEY_CACHE_SECONDS)
        assert client.get("/ui/").status_code == 303


def test_overview_search_detail_and_filters(ui_server: UiServer) -> None:
    with ui_server.login("admin") as client:
        overview = client.get("/ui/").text
        assert "Embedding model" in overview and "procedural" in overview
        assert client.get("/ui/fragments/maintenance").text == "none recorded"
        assert "none recorded" in client.get("/ui/?maintenance=1").text
        listing = client.get("/ui/agents/dev-1?category=procedural").text
        assert "rotate secrets" in listing and "Globex" not in listing
        ranged = client.get("/ui/agents/dev-1?since=2026-01-05&until=2026-01-06").text
        assert "(note 0)" in ranged and "(note 11)" not in ranged
        superseded = client.get("/ui/agents/dev-1?superseded=1").text
        assert "every Monday" in superseded
        assert "every Monday" not in client.get("/ui/agents/dev-1").text
        bad = client.get("/ui/agents/dev-1?since=yesterday")
        assert bad.status_code == 422 and "since must be a date" in bad.text
        found = client.get("/ui/agents/dev-1/search?q=which+database+runs+production").text
        assert "PostgreSQL 16" in found and "calibrated score" in found and "BM25" in found
        detail = client.get(f"/ui/agents/dev-1/memories/{ui_server.ids['chain_new']}").text
        assert "every Monday" in detail and "every Tuesday" in detail
        assert "memory.supersede" in detail or "memory.update" in detail
        shared = client.get("/ui/shared?q=logging").text
        assert "log in JSON" in shared and "customer card numbers" in shared
        assert "s-1" in client.get("/ui/agents/dev-1/sessions").text
        charts = client.get("/ui/agents/dev-1/charts").text
        assert charts.count("<svg") == 3 and 'data-series="semantic"' in charts
        metrics = client.get("/ui/metrics").text
        assert "Search latency over time" in metrics


def test_metrics_page_charts_search_latency_and_a_bench_report(
    ui_server: UiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = {
        "benchmark": "locomo",
        "dataset": "sample.json",
        "preset": "balanced",
        "limit": 10,
        "backend": "sqlite",
        "embedder": "minilm",
        "metrics": ["recall@10", "mrr"],
        "categories": [
            {"key": "1", "label": "single-hop", "questions": 3, "metrics": {"recall@10": 0.8}},
            {"key": "2", "label": "<b>multi-hop</b>", "metrics": {"recall@10": 0.5}},
        ],
        "overall": {"key": "all", "label": "overall", "metrics": {"recall@10": 0.7}},
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    monkeypatch.setenv(BENCH_REPORT_ENV, str(path))
    with ui_server.login("admin") as client:
        client.get("/ui/metrics")  # a first sample of the latency totals
        api = {"Authorization": f"Bearer {ui_server.secrets['admin']}"}
        for query in ("deploy pipeline", "billing refactor"):
            found = client.post(
                "/v1/search", json={"agent_id": "dev-1", "query": query}, headers=api
            )
            assert found.status_code == 200
        page = client.get("/ui/metrics").text
        assert 'data-series="POST /v1/search"' in page
        assert "POST /v1/search: 2 searches since start" in page
        assert 'id="chart-bench"' in page and "single-hop" in page
        assert "&lt;b&gt;multi-hop&lt;/b&gt;" in page and "<b>multi-hop" not in page
        fragment = client.get("/ui/metrics", headers={"HX-Request": "true",
                                                      "HX-Target": "chart-latency"})  # fmt: skip
        assert fragment.text.startswith('<figure id="chart-latency"')
        path.write_text("{not json", encoding="utf-8")
        assert "cannot read the benchmark report" in client.get("/ui/metrics").text
