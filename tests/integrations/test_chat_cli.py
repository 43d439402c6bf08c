"""``memvault chat`` against a real local HTTP endpoint that speaks OpenAI chat completions.

The endpoint is a stub started in the test (the one remote thing that may be faked): it answers
from a script and records every request, so the tests see exactly what the agent sent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from llm_stub import Reply, Stub, completion
from memvault import Memory, MemoryCategory


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.close()


def chat(db: Path, stub_url: str, stdin: str, *extra: str, key: str | None = None) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMVAULT_", "OPENAI_"))}
    if key is not None:
        env["OPENAI_API_KEY"] = key
    argv = ["--db", str(db), "chat", "--base-url", stub_url, "--model", "stub-model", *extra]
    return subprocess.run(
        [sys.executable, "-m", "memvault", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )


def test_tool_round_trip_saves_memory_and_session_then_resume(stub: Stub, tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    fact = "the user's dog is called Rex"
    stub.replies = [
        lambda body: (200, completion(tool_calls=[tool_call("remember", {"content": fact})])),
        lambda body: (200, completion("Saved: Rex.")),
    ]
    first = chat(db, stub.url, "my dog is called Rex\n/exit\n", "-a", "pet-bot", key="sk-test")
    assert first.returncode == 0, first.stderr
    assert "assistant> Saved: Rex." in first.stdout
    # The first request offered the memory tools; the second carried the tool result back.
    assert stub.requests[0]["path"] == "/v1/chat/completions"
    assert stub.requests[0]["model"] == "stub-model"
    offered = {t["function"]["name"] for t in stub.requests[0]["tools"]}
    assert {"remember", "recall", "learn_procedure", "record_episode"} <= offered
    assert stub.headers[0]["Authorization"] == "Bearer sk-test"
    answer = stub.requests[1]["messages"]
    assert answer[-2]["role"] == "assistant" and answer[-2]["tool_calls"][0]["id"] == "call_1"
    assert answer[-1]["role"] == "tool" and answer[-1]["tool_call_id"] == "call_1"
    assert answer[-1]["content"].startswith("Stored semantic memory")
    with Memory(str(db)) as memory:
        (stored,) = memory.list(agent_id="pet-bot")
        assert stored.content == fact and stored.category is MemoryCategory.SEMANTIC

    stub.replies = [lambda body: (200, completion("Your dog is Rex."))]
    second = chat(db, stub.url, "what is my dog called?\n", "-a", "pet-bot", "--resume")
    assert second.returncode == 0, second.stderr
    assert "resumed session" in second.stdout and "(2 messages)" in second.stdout
    assert "assistant> Your dog is Rex." in second.stdout
    sent = stub.requests[2]["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == "my dog is called Rex" and sent[2]["content"] == "Saved: Rex."
    # The remembered fact reached the prompt by context injection, without a tool call.
    assert fact in sent[0]["content"]
    assert "Authorization" not in stub.headers[2]  # no key in the environment, none sent


def test_learned_procedures_are_in_every_system_prompt(stub: Stub, tmp_path: Path) -> None:
    db = tmp_path / "chat.db"
    with Memory(str(db)) as memory:
        memory.memory_tools().learn_procedure("a", "answer in one sentence")
    stub.replies = [lambda body: (200, completion("ok"))]
    done = chat(db, stub.url, "hello\n", "-a", "a")
    assert done.returncode == 0, done.stderr
    system = stub.requests[0]["messages"][0]["content"]
    assert "## Learned Procedures and Policies" in system and "answer in one sentence" in system


def test_resume_without_a_session_starts_a_new_one(stub: Stub, tmp_path: Path) -> None:
    stub.replies = [lambda body: (200, completion("hi"))]
    done = chat(tmp_path / "c.db", stub.url, "hello\n", "--resume")
    assert done.returncode == 0, done.stderr
    assert "no session to resume" in done.stdout


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (lambda body: (401, {"error": {"message": "bad key"}}), "chat endpoint answered 401"),
        (lambda body: (200, {"nope": True}), "not a chat completion"),
    ],
)
def test_endpoint_failures_are_one_line_exit_2(
    stub: Stub, tmp_path: Path, reply: Reply, expected: str
) -> None:
    stub.replies = [reply]
    done = chat(tmp_path / "c.db", stub.url, "hello\n")
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]


def test_bad_base_url_is_exit_2(tmp_path: Path) -> None:
    done = chat(tmp_path / "c.db", "ftp://example", "hello\n")
    assert done.returncode == 2
    assert done.stderr.strip() == "error: --base-url must be an http(s) URL, got 'ftp://example'"
