"""OpenAICompatibleLLM against a real local HTTP server that speaks the OpenAI chat API.

The stub runs ``http.server.ThreadingHTTPServer`` on 127.0.0.1 (port 0) in a thread and replays
scripted replies, recording every request, so the tests exercise real sockets, real timeouts and
real HTTP parsing without touching the network.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from memvault.errors import MemoryConfigError, MemvaultError
from memvault.llm import (
    ChatMessage,
    LLMOutputError,
    LLMProvider,
    OpenAICompatibleLLM,
    ProviderAuthError,
    ProviderError,
    RetryExhaustedError,
    complete_json,
)

# ---------------------------------------------------------------------------------------------
# The stub server
# ---------------------------------------------------------------------------------------------


@dataclass
class StubReply:
    """One scripted HTTP reply; ``body`` is JSON-encoded unless it is already str/bytes."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class RecordedRequest:
    """What the client sent."""

    path: str
    headers: dict[str, str]
    body: Any


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A handler writing to a socket the client already abandoned (timeout tests) is expected;
        # the default implementation would print a traceback to stderr.
        pass


class StubOpenAIServer:
    """A minimal OpenAI-compatible server replaying scripted replies in order."""

    def __init__(self) -> None:
        self.replies: deque[StubReply] = deque()
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        # Set at shutdown so handlers sleeping to provoke client timeouts return immediately.
        self._stop = threading.Event()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Buffer the response so headers and body leave in one segment; separate small writes
            # run into Nagle's algorithm plus delayed ACKs and cost ~40 ms per request.
            wbufsize = 1 << 16

            def do_POST(self) -> None:
                stub._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = _QuietServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        """The URL to pass as ``base_url`` (with the ``/v1`` prefix real servers use)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def enqueue(self, *replies: StubReply) -> None:
        """Append replies to the script."""
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread.start()

    def stop(self) -> None:
        """Stop serving and release the listening socket."""
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length", "0"))
        raw = handler.rfile.read(length)
        with self._lock:
            self.requests.append(
                RecordedRequest(
                    path=handler.path,
                    headers={k.lower(): v for k, v in handler.headers.items()},
                    body=json.loads(raw),
                )
            )
            if handler.path != "/v1/chat/completions":
                reply = StubReply(404, {"error": {"message": f"no route {handler.path}"}})
            elif self.replies:
                reply = self.replies.popleft()
            else:
                reply = StubReply(500, {"error": {"message": "stub: script exhausted"}})
        if reply.delay:
            self._stop.wait(reply.delay)
        if isinstance(reply.body, bytes):
            payload = reply.body
        elif isinstance(reply.body, str):
            payload = reply.body.encode()
        else:
            payload = json.dumps(reply.body).encode()
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(payload)


def chat_body(
    content: str | None,
    *,
    model: str = "stub-model",
    usage: dict[str, int] | None = None,
    finish_reason: str = "stop",
) -> dict[str, Any]:
    """Return an OpenAI chat.completion response body."""
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def ok(content: str | None, **kwargs: Any) -> StubReply:
    """Return a 200 reply whose first choice says ``content``."""
    return StubReply(200, chat_body(content, **kwargs))


def error(status: int, message: str, **kwargs: Any) -> StubReply:
    """Return an OpenAI-style error reply."""
    return StubReply(status, {"error": {"message": message, "type": "error"}}, **kwargs)


USER = [ChatMessage(role="user", content="hello")]


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's real key or proxy settings must never leak into (or reroute) these tests.
    for name in ("OPENAI_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def stub() -> Iterator[StubOpenAIServer]:
    server = StubOpenAIServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def waits() -> list[float]:
    """The delays the clients of ``make_llm`` waited between retries (recorded, not slept)."""
    return []


@pytest.fixture
async def make_llm(
    stub: StubOpenAIServer, waits: list[float]
) -> AsyncIterator[Callable[..., OpenAICompatibleLLM]]:
    created: list[OpenAICompatibleLLM] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    def factory(**kwargs: Any) -> OpenAICompatibleLLM:
        options: dict[str, Any] = {
            "timeout": 5.0,
            "max_retries": 2,
            "backoff_base": 0.01,
            "sleep": sleep,
        }
        options.update(kwargs)
        llm = OpenAICompatibleLLM(stub.base_url, "stub-model", **options)
        created.append(llm)
        return llm

    yield factory
    for llm in created:
        await llm.aclose()


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    """Return the log records of one event."""
    return [r for r in caplog.records if getattr(r, "event", None) == name]


# ---------------------------------------------------------------------------------------------
# Success paths
# ---------------------------------------------------------------------------------------------


async def test_success_posts_openai_chat_request(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(ok("hi there"))
    llm = make_llm()
    messages = [
        ChatMessage(role="system", content="be brief"),
        ChatMessage(role="user", content="hello", name="alice"),
    ]

    response = await llm.complete(messages, temperature=0.3, max_tokens=50)

    assert response.text == "hi there"
    assert response.model == "stub-model"
    assert response.finish_reason == "stop"
    [request] = stub.requests
    assert request.path == "/v1/chat/completions"
    assert request.body == {
        "model": "stub-model",
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hello", "name": "alice"},
        ],
        "temperature": 0.3,
        "max_tokens": 50,
        "stream": False,
    }
    assert "authorization" not in request.headers  # no key configured: local-server mode


async def test_usage_tokens_and_finish_reason_are_parsed(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(
        ok(
            "partial",
            model="served-model-2024",
            usage={"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
            finish_reason="length",
        )
    )

    response = await make_llm().complete(USER)

    assert (response.prompt_tokens, response.completion_tokens) == (12, 5)
    assert response.finish_reason == "length"
    assert response.model == "served-model-2024"


async def test_missing_usage_and_null_content_are_tolerated(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    # A refusal comes back with content null; that is an (empty) answer, not a broken response.
    stub.enqueue(ok(None, finish_reason="content_filter"))

    response = await make_llm().complete(USER)

    assert response.text == ""
    assert (response.prompt_tokens, response.completion_tokens) == (0, 0)
    assert len(stub.requests) == 1


async def test_json_schema_is_sent_as_response_format(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
    stub.enqueue(ok('{"x": 1}'))

    await make_llm().complete(USER, json_schema=schema)

    assert stub.requests[0].body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema, "strict": False},
    }


async def test_api_key_from_env_and_extra_headers_are_sent(
    stub: StubOpenAIServer,
    make_llm: Callable[..., OpenAICompatibleLLM],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMVAULT_TEST_KEY", "sk-from-env")
    stub.enqueue(ok("fine"))

    await make_llm(api_key_env="MEMVAULT_TEST_KEY", extra_headers={"X-Org": "acme"}).complete(USER)

    headers = stub.requests[0].headers
    assert headers["authorization"] == "Bearer sk-from-env"
    assert headers["x-org"] == "acme"


async def test_async_context_manager_closes_and_provider_can_reconnect(
    stub: StubOpenAIServer,
) -> None:
    stub.enqueue(ok("one"), ok("two"))
    async with OpenAICompatibleLLM(stub.base_url, "stub-model", backoff_base=0.01) as llm:
        assert (await llm.complete(USER)).text == "one"
    await llm.aclose()  # idempotent
    try:
        assert (await llm.complete(USER)).text == "two"
    finally:
        await llm.aclose()


# ---------------------------------------------------------------------------------------------
# Retries
# ---------------------------------------------------------------------------------------------


async def test_503_then_success_is_retried(
    stub: StubOpenAIServer,
    make_llm: Callable[..., OpenAICompatibleLLM],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="memvault.llm")
    stub.enqueue(error(503, "overloaded"), ok("recovered"))

    response = await make_llm().complete(USER)

    assert response.text == "recovered"
    assert len(stub.requests) == 2
    [retry] = events(caplog, "llm.retry")
    assert retry.status_code == 503  # type: ignore[attr-defined]
    assert len(events(caplog, "llm.request")) == 2
    assert not events(caplog, "llm.failed")


async def test_5xx_until_budget_is_spent_raises_retry_exhausted(
    stub: StubOpenAIServer,
    make_llm: Callable[..., OpenAICompatibleLLM],
    caplog: pytest.LogCaptureFixture,
) -> None:
    stub.enqueue(*[error(500, "boom")] * 3)

    with pytest.raises(RetryExhaustedError) as info:
        await make_llm(max_retries=2).complete(USER)

    assert info.value.retryable is True
    assert info.value.attempts == 3
    assert info.value.status_code == 500
    assert "boom" in str(info.value)
    assert isinstance(info.value, MemvaultError)
    assert len(stub.requests) == 3
    assert len(events(caplog, "llm.failed")) == 1


async def test_429_honours_retry_after(
    stub: StubOpenAIServer,
    make_llm: Callable[..., OpenAICompatibleLLM],
    waits: list[float],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="memvault.llm")
    stub.enqueue(error(429, "slow down", headers={"Retry-After": "1"}), ok("done"))

    response = await make_llm().complete(USER)

    assert response.text == "done"
    # It waited the server's second; the tiny backoff_base alone would have waited ~10 ms.
    assert waits == [pytest.approx(1.0)]
    [retry] = events(caplog, "llm.retry")
    assert retry.delay == pytest.approx(1.0)  # type: ignore[attr-defined]


async def test_429_retry_after_is_capped(
    stub: StubOpenAIServer,
    make_llm: Callable[..., OpenAICompatibleLLM],
    waits: list[float],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="memvault.llm")
    stub.enqueue(error(429, "quota", headers={"Retry-After": "3600"}), ok("done"))

    await make_llm(max_backoff=0.05).complete(USER)

    assert waits == [pytest.approx(0.05)]  # not the hour the server asked for
    [retry] = events(caplog, "llm.retry")
    assert retry.delay == pytest.approx(0.05)  # type: ignore[attr-defined]


async def test_timeouts_raise_retry_exhausted(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(*[StubReply(200, chat_body("late"), delay=3.0)] * 2)

    # Had the timeout not applied, the 3 s replies would have answered "late" without an error.
    with pytest.raises(RetryExhaustedError) as info:
        await make_llm(timeout=0.2, max_retries=1).complete(USER)

    assert info.value.attempts == 2
    assert "timed out" in str(info.value)
    assert isinstance(info.value.__cause__, httpx.TimeoutException)
    assert len(stub.requests) == 2


async def test_timeout_then_success(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(StubReply(200, chat_body("late"), delay=3.0), ok("on time"))

    response = await make_llm(timeout=0.2).complete(USER)

    assert response.text == "on time"


async def test_connection_refused_raises_retry_exhausted() -> None:
    # Bind and release a port so that nothing listens on it.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = OpenAICompatibleLLM(f"http://127.0.0.1:{port}/v1", "m", max_retries=1, backoff_base=0.01)
    try:
        with pytest.raises(RetryExhaustedError, match="connection failed") as info:
            await llm.complete(USER)
    finally:
        await llm.aclose()
    assert info.value.attempts == 2
    assert info.value.status_code is None


async def test_malformed_body_is_retried(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(StubReply(200, "<html>502 Bad Gateway</html>"), ok("good"))

    response = await make_llm().complete(USER)

    assert response.text == "good"
    assert len(stub.requests) == 2


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("{not json", id="not-json"),
        pytest.param({"object": "chat.completion"}, id="no-choices"),
        pytest.param({"choices": []}, id="empty-choices"),
        pytest.param({"choices": [{"message": {"content": 42}}]}, id="bad-content"),
    ],
)
async def test_persistently_malformed_bodies_exhaust_retries(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM], body: Any
) -> None:
    stub.enqueue(*[StubReply(200, body)] * 2)

    with pytest.raises(RetryExhaustedError) as info:
        await make_llm(max_retries=1).complete(USER)

    assert info.value.retryable is True
    assert len(stub.requests) == 2


# ---------------------------------------------------------------------------------------------
# Non-retryable errors
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403])
async def test_auth_failures_raise_provider_auth_error_without_retry(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM], status: int
) -> None:
    stub.enqueue(error(status, "Invalid API key"))

    with pytest.raises(ProviderAuthError, match="Invalid API key") as info:
        await make_llm().complete(USER)

    assert info.value.retryable is False
    assert info.value.status_code == status
    assert len(stub.requests) == 1


async def test_api_key_is_never_logged_or_raised(
    stub: StubOpenAIServer,
    make_llm: Callable[..., OpenAICompatibleLLM],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = "sk-super-secret-0123456789"
    # Some servers echo the rejected key back in the error message.
    stub.enqueue(error(503, f"busy for {secret}"), error(401, f"Incorrect API key: {secret}"))
    llm = make_llm(api_key=secret)

    with pytest.raises(ProviderAuthError) as info:
        await llm.complete(USER)

    assert stub.requests[0].headers["authorization"] == f"Bearer {secret}"
    assert secret not in str(info.value)
    assert secret not in repr(llm)
    assert events(caplog, "llm.request")
    assert events(caplog, "llm.failed")
    assert secret not in caplog.text


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"error": {"message": "model 'nope' not found"}}, id="openai"),
        pytest.param({"error": "model 'nope' not found"}, id="ollama"),
        pytest.param({"detail": "model 'nope' not found"}, id="fastapi"),
    ],
)
async def test_other_4xx_raise_non_retryable_error_with_server_message(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM], body: Any
) -> None:
    stub.enqueue(StubReply(404, body))

    with pytest.raises(ProviderError, match="model 'nope' not found") as info:
        await make_llm().complete(USER)

    assert type(info.value) is ProviderError
    assert info.value.retryable is False
    assert info.value.status_code == 404
    assert len(stub.requests) == 1


async def test_400_about_response_format_without_schema_is_a_plain_error(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(error(400, "response_format is weird"))

    with pytest.raises(ProviderError, match="response_format"):
        await make_llm().complete(USER)

    assert len(stub.requests) == 1


# ---------------------------------------------------------------------------------------------
# response_format downgrade
# ---------------------------------------------------------------------------------------------

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}}


async def test_response_format_downgrades_to_none_and_is_remembered(
    stub: StubOpenAIServer,
    make_llm: Callable[..., OpenAICompatibleLLM],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="memvault.llm")
    stub.enqueue(
        error(400, "response_format type json_schema is not supported"),
        error(400, "Unsupported response_format type: json_object"),
        ok('{"x": 1}'),
        ok('{"x": 2}'),
    )
    # max_retries=0: a downgrade is not a transient failure and must not consume the budget.
    llm = make_llm(max_retries=0)

    first = await llm.complete(USER, json_schema=SCHEMA)
    second = await llm.complete(USER, json_schema=SCHEMA)

    assert (first.text, second.text) == ('{"x": 1}', '{"x": 2}')
    sent = [r.body.get("response_format", {}).get("type") for r in stub.requests]
    assert sent == ["json_schema", "json_object", None, None]
    assert llm.response_format_mode == "none"
    assert len(events(caplog, "llm.downgrade")) == 2


async def test_response_format_downgrade_stops_at_json_object(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(
        error(400, "'response_format.json_schema' is not supported by this model"),
        ok('{"x": 1}'),
        ok('{"x": 2}'),
    )
    llm = make_llm()

    await llm.complete(USER, json_schema=SCHEMA)
    await llm.complete(USER, json_schema=SCHEMA)

    sent = [r.body["response_format"] for r in stub.requests]
    assert sent == [sent[0], {"type": "json_object"}, {"type": "json_object"}]
    assert sent[0]["type"] == "json_schema"
    assert llm.response_format_mode == "json_object"


async def test_requests_without_schema_never_send_response_format_after_downgrade(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(error(400, "bad response_format"), ok("{}"), ok("plain"))
    llm = make_llm()

    await llm.complete(USER, json_schema=SCHEMA)
    await llm.complete(USER)

    assert "response_format" not in stub.requests[-1].body


# ---------------------------------------------------------------------------------------------
# complete_json end to end
# ---------------------------------------------------------------------------------------------


class Fact(BaseModel):
    subject: str
    confidence: float


async def test_complete_json_parses_fenced_json(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(ok('```json\n{"subject": "tea", "confidence": 0.9}\n```'))

    fact = await complete_json(make_llm(), USER, schema=Fact)

    assert fact == Fact(subject="tea", confidence=0.9)
    response_format = stub.requests[0].body["response_format"]
    assert response_format["json_schema"]["schema"] == Fact.model_json_schema()


async def test_complete_json_takes_json_out_of_prose(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(
        ok('Sure! Here it is: {"subject": "a {braced} topic", "confidence": 1} Hope this helps.')
    )

    fact = await complete_json(make_llm(), USER, schema=Fact)

    assert fact == Fact(subject="a {braced} topic", confidence=1.0)


async def test_complete_json_repairs_invalid_output(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(
        ok('{"subject": "tea", "confidence": "very"}'),
        ok('{"subject": "tea", "confidence": 0.7}'),
    )

    fact = await complete_json(make_llm(), USER, schema=Fact)

    assert fact.confidence == 0.7
    assert len(stub.requests) == 2
    repair_messages = stub.requests[1].body["messages"]
    assert repair_messages[-2] == {
        "role": "assistant",
        "content": '{"subject": "tea", "confidence": "very"}',
    }
    assert repair_messages[-1]["role"] == "user"
    assert "confidence" in repair_messages[-1]["content"]
    assert "response_format" in stub.requests[1].body


async def test_complete_json_invalid_twice_raises_llm_output_error(
    stub: StubOpenAIServer, make_llm: Callable[..., OpenAICompatibleLLM]
) -> None:
    stub.enqueue(ok("I cannot do that."), ok('{"subject": "tea"}'))

    with pytest.raises(LLMOutputError, match="confidence") as info:
        await complete_json(make_llm(), USER, schema=Fact)

    assert info.value.retryable is False
    assert info.value.output == '{"subject": "tea"}'
    assert len(stub.requests) == 2


# ---------------------------------------------------------------------------------------------
# Construction
# ---------------------------------------------------------------------------------------------


def test_is_an_llm_provider_and_repr_hides_key() -> None:
    llm = OpenAICompatibleLLM("http://127.0.0.1:1/v1/", "m", api_key="sk-hidden")
    assert isinstance(llm, LLMProvider)
    assert llm.model_id == "m"
    assert repr(llm) == "OpenAICompatibleLLM(base_url='http://127.0.0.1:1/v1', model='m')"


@pytest.mark.parametrize(
    "kwargs",
    [{"max_retries": -1}, {"timeout": 0}, {"backoff_base": -1.0}, {"max_backoff": -1.0}],
)
def test_invalid_configuration_is_rejected(kwargs: dict[str, Any]) -> None:
    with pytest.raises(MemoryConfigError):
        OpenAICompatibleLLM("http://127.0.0.1:1/v1", "m", **kwargs)
