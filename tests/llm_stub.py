"""A local OpenAI-compatible chat-completions endpoint for tests (the one remote thing faked).

:class:`Stub` listens on 127.0.0.1, answers each request with the next of ``replies`` (or, when
they are used up, ``default``) and records every request body and its headers, so a test sees
exactly what memvault's real HTTP client sent. Shared by the ``memvault chat`` tests and the
server's LLM wiring tests.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Reply", "Stub", "completion"]

Reply = Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]


class Stub:
    """A chat-completions endpoint on 127.0.0.1 answering from ``replies``, in order."""

    def __init__(self, default: Reply | None = None) -> None:
        self.replies: list[Reply] = []
        self.default = default
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                stub.requests.append({"path": self.path, **body})
                stub.headers.append(dict(self.headers))
                reply = stub.replies.pop(0) if stub.replies else stub.default
                # Unscripted: the handler fails and the client sees the connection drop.
                assert reply is not None, "no reply scripted for this request"
                status, payload = reply(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self.server.shutdown()
        self.server.server_close()


def completion(content: str | None = None, tool_calls: list[Any] | None = None) -> dict[str, Any]:
    """A chat-completion answer with ``content`` (or ``tool_calls``)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    finish = "tool_calls" if tool_calls else "stop"
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "stub",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
