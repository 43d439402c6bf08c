"""OpenAICompatibleEmbedder against a real HTTP server on 127.0.0.1 (no mocked client)."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from memvault.embeddings import OpenAICompatibleEmbedder
from memvault.errors import EmbedderUnavailableError, MemoryConfigError, MemoryConnectionError
from memvault.protocols import Embedder

DIM = 8


@dataclass
class Reply:
    """What the stub answers to one request."""

    status: int = 200
    body: bytes | None = None  # None: a valid embeddings response for the request
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    reverse: bool = True  # list "data" in reverse index order, as some servers do
    dimension: int = DIM


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    payload: dict[str, Any]


def one_hot_response(payload: dict[str, Any], reply: Reply) -> bytes:
    """Input i gets a vector pointing along axis i % dimension, scaled by 3 (not unit length)."""
    items = []
    for i, _ in enumerate(payload["input"]):
        vec = [0.0] * reply.dimension
        vec[i % reply.dimension] = 3.0
        items.append({"object": "embedding", "index": i, "embedding": vec})
    if reply.reverse:
        items.reverse()
    return json.dumps({"object": "list", "data": items, "model": payload["model"]}).encode()


class Stub:
    """A scripted OpenAI-compatible server; replies are consumed in order, then defaults."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[Recorded] = []
        self.released = threading.Event()
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                payload = json.loads(self.rfile.read(length))
                with stub.lock:
                    stub.requests.append(Recorded(self.path, dict(self.headers), payload))
                    reply = stub.replies.pop(0) if stub.replies else Reply()
                if reply.delay:
                    stub.released.wait(reply.delay)
                body = reply.body if reply.body is not None else one_hot_response(payload, reply)
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # the client gave up (timeout test): nothing to answer
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # A short poll interval keeps shutdown() (and so each test's teardown) fast.
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def make(self, **kwargs: Any) -> OpenAICompatibleEmbedder:
        kwargs.setdefault("backoff", 0.01)
        kwargs.setdefault("api_key_env", "MEMVAULT_TEST_NO_SUCH_KEY")
        return OpenAICompatibleEmbedder(self.base_url, "test-model", **kwargs)


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub()
    server.thread.start()
    try:
        yield server
    finally:
        server.released.set()
        server.server.shutdown()
        server.server.server_close()
        server.thread.join(5)


@pytest.fixture
def make(stub: Stub) -> Iterator[Callable[..., OpenAICompatibleEmbedder]]:
    created: list[OpenAICompatibleEmbedder] = []

    def factory(**kwargs: Any) -> OpenAICompatibleEmbedder:
        embedder = stub.make(**kwargs)
        created.append(embedder)
        return embedder

    yield factory
    for embedder in created:
        embedder.close()


def test_success_orders_by_index_and_normalises(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder]
) -> None:
    embedder = make()
    assert embedder.model_id == "openai-compat:test-model"
    texts = ["zero", "one", "two", "three", "four"]
    vectors = embedder.embed_documents(texts)
    assert vectors.shape == (5, DIM)
    assert vectors.dtype == np.float32
    np.testing.assert_array_equal(np.argmax(vectors, axis=1), np.arange(5))
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert embedder.dimension == DIM  # learned from the response, no extra request
    assert len(stub.requests) == 1
    request = stub.requests[0]
    assert request.path == "/v1/embeddings"
    assert request.payload == {"model": "test-model", "input": texts}
    assert "authorization" not in {k.lower() for k in request.headers}
    # Checked last: on Python 3.11 isinstance() reads the dimension property, which would send
    # a probe request while the dimension is still unknown.
    assert isinstance(embedder, Embedder)


def test_batches_requests_and_keeps_input_order(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder]
) -> None:
    embedder = make(batch_size=2)
    vectors = embedder.embed_documents([f"t{i}" for i in range(5)])
    assert [len(r.payload["input"]) for r in stub.requests] == [2, 2, 1]
    # Within each batch the stub points input i along axis i: rows 0,1 | 0,1 | 0.
    np.testing.assert_array_equal(np.argmax(vectors, axis=1), [0, 1, 0, 1, 0])


def test_api_key_sent_as_bearer_token(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder], monkeypatch: pytest.MonkeyPatch
) -> None:
    make(api_key="sk-explicit").embed_query("a")
    monkeypatch.setenv("MEMVAULT_TEST_KEY", "sk-from-env")
    make(api_key_env="MEMVAULT_TEST_KEY").embed_query("b")
    auth = [{k.lower(): v for k, v in r.headers.items()}["authorization"] for r in stub.requests]
    assert auth == ["Bearer sk-explicit", "Bearer sk-from-env"]
    assert "sk-explicit" not in repr(make(api_key="sk-explicit"))


def test_retries_after_503_then_succeeds(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder], caplog: pytest.LogCaptureFixture
) -> None:
    stub.replies = [Reply(status=503, body=b'{"error": {"message": "overloaded"}}')]
    with caplog.at_level(logging.WARNING, logger="memvault.embeddings"):
        vector = make().embed_query("hello")
    assert vector.shape == (DIM,)
    assert len(stub.requests) == 2
    retries = [r for r in caplog.records if r.getMessage().startswith("embedder.retry")]
    assert len(retries) == 1 and "503" in retries[0].getMessage()


def test_retries_429_honouring_retry_after(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder]
) -> None:
    stub.replies = [Reply(status=429, headers={"Retry-After": "0"}), Reply(status=500)]
    assert make(max_retries=2).embed_documents(["x"]).shape == (1, DIM)
    assert len(stub.requests) == 3


def test_gives_up_after_max_retries(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder]
) -> None:
    stub.replies = [Reply(status=502) for _ in range(10)]
    with pytest.raises(MemoryConnectionError, match=r"3 attempt\(s\).*HTTP 502"):
        make(max_retries=2).embed_query("x")
    assert len(stub.requests) == 3


def test_timeout_raises_connection_error(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder]
) -> None:
    stub.replies = [Reply(delay=5.0), Reply(delay=5.0)]
    with pytest.raises(MemoryConnectionError, match="timed out"):
        make(timeout=0.2, max_retries=1).embed_query("slow")
    assert len(stub.requests) == 2


def test_connection_refused_raises_connection_error() -> None:
    with socket.socket() as sock:  # find a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    embedder = OpenAICompatibleEmbedder(
        f"http://127.0.0.1:{port}/v1", "m", max_retries=1, backoff=0.0, timeout=2.0
    )
    try:
        with pytest.raises(MemoryConnectionError, match="connection error"):
            embedder.embed_documents(["x"])
    finally:
        embedder.close()


@pytest.mark.parametrize("status", [401, 403])
def test_auth_errors_are_config_errors_without_retry(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder], status: int
) -> None:
    stub.replies = [
        Reply(status=status, body=b'{"error": {"message": "Incorrect API key provided"}}')
    ]
    with pytest.raises(MemoryConfigError, match="Incorrect API key") as info:
        make().embed_query("x")
    assert "MEMVAULT_TEST_NO_SUCH_KEY" in str(info.value)  # tells which variable to set
    assert not isinstance(info.value, MemoryConnectionError)
    assert len(stub.requests) == 1


def test_other_client_errors_are_config_errors(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder]
) -> None:
    stub.replies = [Reply(status=404, body=b"no such route")]
    with pytest.raises(MemoryConfigError, match="404"):
        make().embed_query("x")
    assert len(stub.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        b"this is not json",
        b'{"data": "nope"}',
        b'{"data": [{"index": 0}]}',
        b'{"data": [{"index": 5, "embedding": [1, 2]}]}',
        b'{"data": [{"index": 0, "embedding": ["a", "b"]}]}',
        b'{"unexpected": true}',
    ],
)
def test_malformed_responses_raise_connection_error(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder], body: bytes
) -> None:
    stub.replies = [Reply(body=body)]
    with pytest.raises(MemoryConnectionError, match="malformed"):
        make().embed_query("x")


def test_dimension_probe_and_mismatch(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder]
) -> None:
    embedder = make()
    assert embedder.embed_documents([]).shape == (0, DIM)  # probes to learn the dimension
    assert len(stub.requests) == 1
    stub.replies = [Reply(dimension=DIM * 2)]
    with pytest.raises(EmbedderUnavailableError, match="16-dimensional"):
        embedder.embed_query("other model now")


def test_configured_dimension_is_checked(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder]
) -> None:
    embedder = make(dimension=1536)
    assert embedder.dimension == 1536
    assert embedder.embed_documents([]).shape == (0, 1536)
    assert stub.requests == []  # known dimension: no probe
    with pytest.raises(MemoryConfigError, match="expected 1536"):
        embedder.embed_query("x")


def test_query_cache_and_empty_strings(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder]
) -> None:
    embedder = make()
    first = embedder.embed_query("")
    second = embedder.embed_query("")
    np.testing.assert_array_equal(first, second)
    assert not np.shares_memory(first, second)
    assert len(stub.requests) == 1
    assert stub.requests[0].payload["input"] == [" "]  # servers reject empty strings


def test_close_is_idempotent_and_reopens(
    stub: Stub, make: Callable[..., OpenAICompatibleEmbedder]
) -> None:
    embedder = make()
    embedder.embed_query("a")
    embedder.close()
    embedder.close()
    assert embedder.embed_query("b").shape == (DIM,)
    with make() as scoped:
        assert scoped.embed_query("c").shape == (DIM,)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"base_url": "ftp://example.com"},
        {"model": " "},
        {"dimension": 0},
        {"timeout": 0},
        {"max_retries": -1},
        {"batch_size": 0},
    ],
)
def test_invalid_settings(kwargs: dict[str, Any]) -> None:
    args: dict[str, Any] = {"base_url": "http://127.0.0.1:1/v1", "model": "m"}
    args.update(kwargs)
    with pytest.raises(MemoryConfigError):
        OpenAICompatibleEmbedder(args.pop("base_url"), args.pop("model"), **args)
