"""The configured LLM (``llm:`` in the config file) reaches what ``memvault serve`` builds.

The LLM is a local stub of an OpenAI-compatible endpoint (``/v1/chat/completions`` on
127.0.0.1), so the real HTTP client runs; the server is the app ``serve`` builds
(:func:`memvault.cli.serve.build_app`) on uvicorn over a real SQLite file. Without an LLM the
requests that need one answer 422 ``llm_not_configured``, never a 500.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from llm_stub import Stub, completion
from memvault.cli.serve import build_app
from memvault.config.llm import LLM_URL_ENV

from .conftest import run_app

SYNTHESIS = "The deploy pipeline pushes images one at a time and retries on HTTP 429."


@pytest.fixture
def stub() -> Iterator[Stub]:
    found = Stub(default=lambda body: (200, completion(SYNTHESIS)))
    yield found
    found.close()


@pytest.fixture(autouse=True)
def _no_ambient_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LLM_URL_ENV, raising=False)


def _serve(tmp_path: Path, config: str) -> tuple[str, Any]:
    path = tmp_path / "memvault.yaml"
    path.write_text(config)
    app = build_app({"db": str(tmp_path / "served.db"), "config": str(path), "no_auth": True})
    return run_app(app)


def _episodes(c: httpx.Client) -> None:
    for text in (
        "The deploy pushed images in parallel and hit HTTP 429 from the registry",
        "The deploy pushed images in parallel and hit HTTP 429 again from the registry",
        "Pushing images in parallel hit the registry's HTTP 429 rate limit",
    ):
        r = c.post(
            "/v1/memories",
            json={"agent_id": "ops", "content": text, "category": "episodic", "dedup": False},
        )
        assert r.status_code == 201, r.text


def test_serve_consolidates_with_the_configured_llm(stub: Stub, tmp_path: Path) -> None:
    config = (
        "memory:\n"
        "  maintenance: {enabled: false}\n"
        f"  llm: {{base_url: '{stub.url}', model: stub-model}}\n"
    )
    url, stop = _serve(tmp_path, config)
    try:
        with httpx.Client(base_url=url, timeout=60) as c:
            _episodes(c)
            r = c.post(
                "/v1/consolidate",
                json={"agent_id": "ops", "strategy": "llm", "min_age_days": 0},
            )
            assert r.status_code == 200, r.text
            assert stub.requests, "the configured LLM was never called"
            assert {q["model"] for q in stub.requests} == {"stub-model"}
            found = c.get("/v1/memories", params={"agent_id": "ops", "limit": 50}).json()
            assert any(m["content"] == SYNTHESIS for m in found["memories"]), found
    finally:
        stop()


def test_without_an_llm_the_requests_that_need_one_are_422(tmp_path: Path) -> None:
    url, stop = _serve(tmp_path, "memory:\n  maintenance: {enabled: false}\n")
    try:
        with httpx.Client(base_url=url, timeout=60) as c:
            _episodes(c)
            for strategy in ("llm", "dual_mode"):
                r = c.post(
                    "/v1/consolidate",
                    json={"agent_id": "ops", "strategy": strategy, "min_age_days": 0},
                )
                assert r.status_code == 422, r.text
                error = r.json()["error"]
                assert error["code"] == "llm_not_configured"
                assert "needs an LLM" in error["message"] and "llm.base_url" in error["message"]
            # Nothing was merged by the refused requests.
            assert c.get("/v1/count", params={"agent_id": "ops"}).json() == {"count": 3}
    finally:
        stop()
