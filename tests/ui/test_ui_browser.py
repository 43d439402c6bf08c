"""The dashboard in a real browser: Debian's chromium driven by Playwright for Python.

The browser is the system's ``/usr/bin/chromium`` (never a Playwright download). Without it, or
without the ``playwright`` package, these tests skip with a loud reason; ``make test`` installs
both where it can. A screenshot of every page is written to ``$MEMVAULT_SCREENSHOTS``
(``make screenshots`` sets it to ``build/screenshots``), else to the test's temporary folder.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from memvault.protocols import Embedder

from .conftest import UiServer, start_server

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _browser_problem() -> str | None:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        return f"{CHROMIUM} is missing (apt-get install -y chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install playwright; no browser download)"
    return None


_PROBLEM = _browser_problem()
if _PROBLEM is not None:
    warnings.warn(  # noqa: B028 - shown at collection, where the skip happens
        f"BROWSER TESTS OF THE DASHBOARD SKIPPED: {_PROBLEM}", pytest.PytestWarning
    )
pytestmark = pytest.mark.skipif(_PROBLEM is not None, reason=f"BROWSER TESTS SKIPPED: {_PROBLEM}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, minilm: Embedder) -> Iterator[UiServer]:
    """This module's own server: its tests delete, restore and approve."""
    found, stop = start_server(tmp_path_factory.mktemp("browser") / "ui.db", minilm)
    yield found
    stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        launched = p.chromium.launch(
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            headless=True,
            args=FLAGS,
        )
        yield launched
        launched.close()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    where = Path(os.environ.get("MEMVAULT_SCREENSHOTS") or tmp_path / "screenshots")
    where.mkdir(parents=True, exist_ok=True)
    return where


class Session:
    """One logged-in browser tab that records console errors, CSP reports and dialogs."""

    def __init__(self, browser: Any, server: UiServer, key: str, shots: Path) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.page = self.context.new_page()
        self.server = server
        self.shots = shots
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.failed: list[str] = []
        self.page.on(
            "console",
            lambda m: (
                self.errors.append(m.text)
                if m.type == "error" and not m.text.startswith("Failed to load resource")
                else None
            ),
        )
        self.page.on(
            "response",
            lambda r: self.failed.append(f"{r.status} {r.url}") if r.status >= 400 else None,
        )
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def on_dialog(dialog: Any) -> None:
            self.dialogs.append(dialog.message)
            dialog.accept()

        self.page.on("dialog", on_dialog)
        self.page.goto(f"{server.url}/ui/")
        self.page.wait_for_url("**/ui/login")
        self.shot("login")
        self.page.fill("#key", server.secrets[key])
        self.page.click("button[type=submit]")
        self.page.wait_for_url("**/ui/")

    def go(self, path: str) -> Any:
        self.page.goto(f"{self.server.url}{path}")
        return self.page

    def shot(self, name: str) -> None:
        self.page.screenshot(path=str(self.shots / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()


def test_operator_walks_every_page_and_changes_things(
    browser: Any, server: UiServer, shots: Path
) -> None:
    s = Session(browser, server, "operator", shots)
    page = s.page
    try:
        assert page.evaluate("typeof window.htmx") == "object"  # the vendored htmx loaded
        assert page.locator("#agents").inner_text().count("dev-1") == 1
        assert "human:operator" in page.inner_text("header")
        # htmx (under the CSP) fetched the fragment after the page rendered.
        page.wait_for_selector("#maintenance:has-text('admin keys only')")
        s.shot("overview")

        # Agent view: filter by category, page through.
        page.click("#agents a[href='/ui/agents/dev-1']")
        page.wait_for_selector("#memories")
        assert "(note 0)" in page.inner_text("#memories")
        page.select_option("select[name=category]", "procedural")
        page.click("form.filters button[type=submit]")
        page.wait_for_url("**category=procedural**")
        listed = page.inner_text("#memories")
        assert "rotate secrets" in listed and "Globex" not in listed
        s.go("/ui/agents/dev-1")
        s.shot("agent")

        # Search with explanations (htmx swaps the results in place).
        s.go("/ui/agents/dev-1/search")
        page.fill("input[name=q]", "which database runs production")
        page.click("form.filters button[type=submit]")
        page.wait_for_selector("li.hit")
        first = page.locator("li.hit").first
        assert "PostgreSQL 16" in first.inner_text()
        assert first.locator("table.explain").count() == 1
        assert float(first.locator(".calibrated").inner_text()) > 0
        s.shot("search")

        # Open the hit: its detail with history, access count and audit records.
        first.locator("a.mid").click()
        page.wait_for_selector("#versions")
        assert "PostgreSQL 16" in page.inner_text("#content")
        assert int(page.inner_text("#access-count")) >= 0
        s.go(f"/ui/agents/dev-1/memories/{server.ids['chain_new']}")
        versions = page.inner_text("#versions")
        assert "every Monday" in versions and "every Tuesday" in versions
        page.fill("input[name=as_of]", "2000-01-01T00:00:00")
        page.click("text=Show version")
        page.wait_for_selector("#as-of")
        assert "No version was current" in page.inner_text("#as-of")
        s.shot("memory")

        # Delete with a reason: audited under the logged-in actor.
        victim = server.ids["episodic"]
        s.go(f"/ui/agents/dev-1/memories/{victim}")
        page.fill("form.danger input[name=reason]", "wrong customer")
        page.click("form.danger button[type=submit]")
        page.wait_for_url("**/ui/agents/dev-1?deleted=1")
        assert s.dialogs and "Delete this memory" in s.dialogs[-1]
        with httpx.Client(base_url=server.url, timeout=30) as api:
            records = api.get(
                "/v1/audit",
                params={"memory_id": victim},
                headers={"Authorization": f"Bearer {server.secrets['admin']}"},
            ).json()["records"]
        deleted = [r for r in records if r["action"] == "memory.delete"]
        assert deleted and deleted[-1]["actor"] == "human:operator"
        assert "wrong customer" in str(deleted[-1]["details"])

        # Restore from the archive.
        s.go("/ui/agents/dev-1/archive")
        assert "Legacy FTP" in page.inner_text("#archived")
        s.shot("archive")
        row = page.locator("#archived tr", has_text="Legacy FTP")
        row.locator("input[name=reason]").fill("still needed")
        row.locator("button").click()
        page.wait_for_selector("p.notice")
        assert server.ids["archived"] in page.inner_text("p.notice")
        assert "Legacy FTP" not in page.inner_text("#archived")
        s.go(f"/ui/agents/dev-1/memories/{server.ids['archived']}")
        assert "Legacy FTP" in page.inner_text("#content")

        # Approve a proposal with a reason.
        s.go("/ui/approvals")
        item = page.locator(f"li.approval[data-id='{server.ids['approval0']}']")
        assert item.locator(".status").inner_text() == "pending"
        s.shot("approvals")
        item.locator("form[action$='/approve'] input[name=reason]").fill("good advice")
        item.locator("form[action$='/approve'] button").click()
        page.wait_for_selector("p.notice")
        item = page.locator(f"li.approval[data-id='{server.ids['approval0']}']")
        assert item.locator(".status").inner_text() == "approved"
        assert "human:operator" in item.inner_text()

        # The remaining pages render, with their charts.
        s.go("/ui/agents/dev-1/sessions")
        page.click("text=s-1")
        page.wait_for_selector("#messages")
        assert "How do we deploy?" in page.inner_text("#messages")
        s.shot("session")
        s.go("/ui/agents/dev-1/sessions")
        s.shot("sessions")
        s.go("/ui/shared?q=logging")
        assert "log in JSON" in page.inner_text("body")
        assert "retry" in page.inner_text("#skills").lower()  # the approved skill is pooled
        s.shot("shared")
        s.go("/ui/agents/dev-1/charts")
        assert page.locator("svg.chart").count() == 3
        assert page.locator("#chart-over-time polyline").count() >= 3
        s.shot("charts")
        s.go("/ui/metrics")
        assert page.locator("#chart-latency svg").count() == 1
        s.shot("metrics")
        s.go("/ui/no-such-page")
        assert "Error 404" in page.inner_text("h1")

        assert not [e for e in s.errors if "Content Security Policy" in e], s.errors
        assert not s.errors, s.errors
        assert s.failed == [f"404 {server.url}/ui/no-such-page"], s.failed
    finally:
        s.close()


def test_attacker_content_stays_inert_in_the_browser(
    browser: Any, server: UiServer, shots: Path
) -> None:
    s = Session(browser, server, "admin", shots)
    page = s.page
    try:
        for path in (
            f"/ui/agents/dev-1/memories/{server.ids['xss']}",
            "/ui/agents/dev-1?tags=xss",
            "/ui/agents/dev-1/search?q=payload+onmouseover",
            "/ui/agents/dev-1/sessions/s-1",
            "/ui/approvals",
        ):
            s.go(path)
            page.hover("main")
            for cell in page.locator(".content").all()[:5]:
                cell.hover()
            assert page.evaluate("typeof window.__xss") == "undefined", path
            assert page.locator("main script, main img, [onmouseover], [onerror]").count() == 0
            assert page.locator("script").count() == 1, path  # only the vendored htmx
            body = page.inner_text("main")
            assert "<script>window.__xss = 1</script>" in body, path
        s.go(f"/ui/agents/dev-1/memories/{server.ids['xss']}")
        shown = page.inner_text("#content")
        assert "{{ 7*7 }}" in shown and "{% if true %}JINJA-RAN{% endif %}" in shown
        assert '"onmouseover="' in shown
        s.shot("memory-xss")
        assert not s.dialogs
        assert not s.errors, s.errors
        assert not s.failed, s.failed
    finally:
        s.close()


def test_agent_and_read_keys_in_the_browser(browser: Any, server: UiServer, shots: Path) -> None:
    s = Session(browser, server, "dev1", shots)
    try:
        assert "dev-2" not in s.page.inner_text("main")
        s.go("/ui/agents/dev-2")
        assert "Error 403" in s.page.inner_text("h1")
        s.go("/ui/approvals")
        assert s.page.locator("button", has_text="Approve").count() == 0
        s.shot("approvals-agent-key")
    finally:
        s.close()
    r = Session(browser, server, "reader", shots)
    try:
        r.go(f"/ui/agents/dev-1/memories/{server.ids['semantic']}")
        assert r.page.locator("form.danger").count() == 0
        assert "read-only" in r.page.inner_text("header")
        r.page.click("header button")  # log out
        r.page.wait_for_url("**/ui/login")
        r.go("/ui/")
        r.page.wait_for_url("**/ui/login")
    finally:
        r.close()
