"""The configured LLM (``llm:`` in the config file) reaches what ``memvault serve`` builds.

The LLM is a local stub of an OpenAI-compatible endpoint (``/v1/chat/completions`` on
127.0.0.1), so the real HTTP client runs; the server is the app ``serve`` builds
(:func:`memvault.cli.serve.build_app`) on uvicorn over a real SQLite file. Without an LLM the
requests that need one answer 422 ``llm_not_configured``, never a 500.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from memvault.cli.serve import build_app
from memvault.config.llm import LLM_URL_ENV

from .conftest import run_app

SYNTHESIS = "The deploy pipeline pushes images one at a time and retries on HTTP 429."


class Stub:
    """Answers every chat completion with ``SYNTHESIS``; records the requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, **body})
                payload = {
                    "id": "c1",
                    "object": "chat.completion",
                    "model": body.get("model", "stub"),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": SYNTHESIS},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 12},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def stub() -> Iterator[Stub]:
    found = Stub()
    yield found
    found.server.shutdown()
    found.server.server_close()


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
