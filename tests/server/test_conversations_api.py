"""Seed 004's conversation store over real HTTP: append, views, paging, context window, compaction,
queue status and backfill, with the standard API keys (agents, humans, admins, two tenants).

A real server (uvicorn) runs the real app over a real SQLite file or a real PostgreSQL schema with
the bundled MiniLM; only the LLM is scripted (``memvault.llm.scripted``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from memvault.cli import _common
from memvault.cli.api import build_api_app
from memvault.config import MemvaultConfig, load_config
from memvault.config.conversation import CompactionConfig, EmbeddingQueueConfig
from memvault.llm.scripted import ScriptedLLM
from memvault.models import ChatMessage
from memvault.protocols import Embedder, LLMProvider
from memvault.remote import RemoteAsyncMemory
from memvault.server.keys import open_key_store
from memvault.server.rest import create_app
from memvault.service import LLM_URL_ENV, MemoryService
from postgres_server import SchemaFactory

from .conftest import STANDARD_KEYS, LiveServer, run_app

Start = Callable[..., LiveServer]

# A budget the busy conversation below (two long tool outputs) is past the hard threshold of.
TIGHT = CompactionConfig(token_budget=400, keep_recent=1)
LOG = " ".join(f"step {i}: ok, 0 warnings, cache warm, artefact stored." for i in range(30))


def _with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


@pytest.fixture(autouse=True)
def _no_env_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    # The "no LLM" cases must not pick one up from the environment.
    monkeypatch.delenv(LLM_URL_ENV, raising=False)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def start(request: pytest.FixtureRequest, tmp_path: Path, minilm: Embedder) -> Iterator[Start]:
    """Starts servers on a fresh SQLite file or PostgreSQL schema, with the standard keys."""
    stops: list[Callable[[], None]] = []
    services: list[MemoryService] = []
    schemas: SchemaFactory | None = None
    if request.param == "postgres":
        schemas = SchemaFactory(request.getfixturevalue("postgres_url"))

    def make(
        *,
        compaction: CompactionConfig | None = None,
        queue: EmbeddingQueueConfig | None = None,
        session_storage: str = "snapshot",
        llm: LLMProvider | None = None,
    ) -> LiveServer:
        n = len(stops)
        if schemas is None:
            url = str(tmp_path / f"conv{n}.db")
        else:
            url = _with_schema(request.getfixturevalue("postgres_url"), schemas())
        base = load_config(url=url)
        conv = base.conversation.model_copy(
            update={
                "compaction": compaction or base.conversation.compaction,
                "embedding_queue": queue or base.conversation.embedding_queue,
                "session_storage": session_storage,
            }
        )
        config: MemvaultConfig = base.model_copy(update={"conversation": conv})
        service = MemoryService(config, embedder=minilm, llm=llm)
        keys = open_key_store(str(tmp_path / f"keys{n}.db"))
        secrets = {name: keys.create(name=name, **spec)[1] for name, spec in STANDARD_KEYS.items()}
        app_url, stop = run_app(create_app(service, keys=keys))
        stops.append(stop)
        services.append(service)
        return LiveServer(
            url=app_url, db=tmp_path / f"keys{n}.db", service=service, keys=keys, secrets=secrets
        )

    yield make
    for stop in reversed(stops):
        stop()
    if schemas is not None:
        schemas.drop_all()


def _path(session: str, what: str = "messages") -> str:
    return f"/v1/conversations/{session}/{what}"


def _ok(resp: httpx.Response, status: int = 200) -> Any:
    assert resp.status_code == status, resp.text
    return resp.json()


def _error(resp: httpx.Response, status: int, code: str) -> str:
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert error["code"] == code, error
    message: str = error["message"]
    return message


TURNS: list[dict[str, Any]] = [
    {"role": "user", "content": "Deploy v2.3 of billing-api to staging."},
    {"role": "assistant", "content": "Starting the deploy of billing-api v2.3."},
    # A notice for the person only: the model must never see it.
    {"role": "assistant", "content": "(UI) deploy button pressed", "agent_visible": False},
    # A raw tool result for the model only.
    {"role": "tool", "name": "deploy", "content": "exit 0, 3 pods ready", "user_visible": False},
]


def test_turns_are_appended_and_each_reader_gets_its_view(start: Start) -> None:
    server = start()
    with server.client("dev1") as dev1:
        made = _ok(dev1.post(_path("t-1"), json={"agent_id": "dev-1", "messages": TURNS}), 201)
        assert [m["position"] for m in made["messages"]] == [1, 2, 3, 4]
        assert made["messages"][2]["metadata"]["agent_visible"] is False
        assert made["total"] == 3  # the agent view: the UI notice is not in it
        page = _ok(dev1.get(_path("t-1"), params={"agent_id": "dev-1"}))
        assert [m["content"] for m in page["messages"]] == [
            TURNS[0]["content"],
            TURNS[1]["content"],
            TURNS[3]["content"],
        ]
        assert page["view"] == "agent" and page["total"] == 3
        assert page["conversation_id"] == made["conversation_id"]
        # Agents never read a view with messages hidden from them.
        for view in ("user", "all"):
            denied = dev1.get(_path("t-1"), params={"agent_id": "dev-1", "view": view})
            _error(denied, 403, "permission_denied")
        # Paging: a page and the next.
        first = _ok(dev1.get(_path("t-1"), params={"agent_id": "dev-1", "limit": 2}))
        rest = _ok(dev1.get(_path("t-1"), params={"agent_id": "dev-1", "offset": 2}))
        assert [m["position"] for m in first["messages"]] == [1, 2]
        assert [m["position"] for m in rest["messages"]] == [4]
        for bad in ({"limit": 0}, {"limit": 1001}, {"offset": -1}, {"view": "everything"}):
            resp = dev1.get(_path("t-1"), params={"agent_id": "dev-1", **bad})
            _error(resp, 422, "validation_error")
        more = {"agent_id": "dev-1", "messages": [{"role": "user", "content": "Thanks!"}]}
        again = _ok(dev1.post(_path("t-1"), json=more), 201)
        assert [m["position"] for m in again["messages"]] == [5]
    with server.client("operator") as human:
        user = _ok(human.get(_path("t-1"), params={"agent_id": "dev-1", "view": "user"}))
        # The person sees the notice, not the raw tool result.
        assert [m["position"] for m in user["messages"]] == [1, 2, 3, 5]
        denied = human.get(_path("t-1"), params={"agent_id": "dev-1", "view": "all"})
        assert "admin" in _error(denied, 403, "permission_denied")
    with server.client("admin") as admin:
        every = _ok(admin.get(_path("t-1"), params={"agent_id": "dev-1", "view": "all"}))
        assert [m["position"] for m in every["messages"]] == [1, 2, 3, 4, 5]


def test_agents_and_tenants_only_reach_their_own_conversations(start: Start) -> None:
    server = start()
    body = {"agent_id": "dev-1", "messages": TURNS[:2]}
    with server.client("dev1") as dev1:
        _ok(dev1.post(_path("t-1"), json=body), 201)
        _ok(dev1.post(_path("t-2"), json=body), 201)
        listed = _ok(dev1.get("/v1/conversations", params={"agent_id": "dev-1"}))
        # Latest append first, with the size of each agent view.
        assert [c["session_id"] for c in listed["conversations"]] == ["t-2", "t-1"]
        assert [c["message_count"] for c in listed["conversations"]] == [2, 2]
        page = _ok(dev1.get("/v1/conversations", params={"agent_id": "dev-1", "offset": 1}))
        assert [c["session_id"] for c in page["conversations"]] == ["t-1"]
        assert _error(
            dev1.get("/v1/conversations", params={"agent_id": "dev-1", "limit": 5000}),
            422,
            "validation_error",
        )
    with server.client("dev2") as dev2:
        other = dev2.get(_path("t-1"), params={"agent_id": "dev-1"})
        _error(other, 403, "permission_denied")
        _error(dev2.post(_path("t-1"), json=body), 403, "permission_denied")
        _error(dev2.get(_path("t-1"), params={"agent_id": "dev-2"}), 404, "not_found")
        mine = _ok(dev2.get("/v1/conversations", params={"agent_id": "dev-2"}))
        assert mine == {"conversations": []}
        _error(dev2.get("/v1/stats/conversations"), 403, "permission_denied")
    with server.client("reader") as reader:
        _error(reader.post(_path("t-1"), json=body), 403, "permission_denied")
        seen = _ok(reader.get("/v1/conversations", params={"agent_id": "dev-1"}))
        assert len(seen["conversations"]) == 2
    with server.client("acme-dev1") as elsewhere:
        # The same agent id in another tenant has nothing of the default tenant's.
        assert _ok(elsewhere.get("/v1/conversations", params={"agent_id": "dev-1"})) == {
            "conversations": []
        }
        _error(elsewhere.get(_path("t-1"), params={"agent_id": "dev-1"}), 404, "not_found")
    with server.client("dev1") as dev1:
        bad = {"agent_id": "dev-1", "messages": [{"role": "robot", "content": "beep"}]}
        _error(dev1.post(_path("t-3"), json=bad), 422, "validation_error")
        empty = {"agent_id": "dev-1", "messages": []}
        _error(dev1.post(_path("t-3"), json=empty), 422, "validation_error")
        extra = {"agent_id": "dev-1", "messages": [{"role": "user", "content": "x", "mood": 1}]}
        _error(dev1.post(_path("t-3"), json=extra), 422, "validation_error")
        _error(dev1.post(_path("latest"), json=body), 422, "validation_error")


def _busy_conversation(client: httpx.Client, session: str) -> None:
    """Enough turns (with tool call/result pairs) to pass TIGHT's hard threshold."""
    turns: list[dict[str, Any]] = [
        {"role": "user", "content": "Fix the crash in src/app/main.py (ticket PROJ-42)."},
        {"role": "assistant", "content": "Reading src/app/main.py first."},
        {
            "role": "tool",
            "name": "read",
            "content": "line 10 raises KeyError 'retry_policy'. " + LOG,
        },
        {"role": "assistant", "content": "We will switch to the v3.2 parser."},
        {"role": "tool", "name": "edit", "content": "patched src/app/parser.py. " + LOG},
        {"role": "user", "content": "Pin this: never touch prod."},
        {"role": "assistant", "content": "Understood, staging only. Running the tests now."},
    ]
    turns[5]["focus_pinned"] = True
    _ok(client.post(_path(session), json={"agent_id": "dev-1", "messages": turns}), 201)


def test_context_window_and_extractive_compaction_over_http(start: Start) -> None:
    server = start(compaction=TIGHT)
    with server.client("dev1") as dev1:
        _busy_conversation(dev1, "c-1")
        window = _ok(dev1.get(_path("c-1", "context"), params={"agent_id": "dev-1"}))
        assert window["pressure"]["level"] == "hard"
        assert window["pressure"]["budget"] == 400
        assert (window["soft_threshold"], window["hard_threshold"]) == (0.6, 0.9)
        assert window["in_view"] == 7 and window["compacted"] == 0 and window["summaries"] == 0
        assert window["messages"][0]["content"].startswith("Fix the crash")
        bare = dev1.get(
            _path("c-1", "context"), params={"agent_id": "dev-1", "include_messages": "false"}
        )
        assert _ok(bare)["messages"] == []
        # No LLM on this server: the default summariser is refused, clearly, and nothing moved.
        refused = dev1.post(_path("c-1", "compact"), json={"agent_id": "dev-1"})
        assert "LLM" in _error(refused, 422, "llm_not_configured")
        report = _ok(
            dev1.post(
                _path("c-1", "compact"), json={"agent_id": "dev-1", "summariser": "extractive"}
            )
        )
        assert report["summaries"] and report["compacted"] >= 2
        assert report["after"]["tokens"] < report["before"]["tokens"]
        assert all(p["method"] == "identifiers" for p in report["probes"])
        after = _ok(dev1.get(_path("c-1", "context"), params={"agent_id": "dev-1"}))
        assert after["compacted"] == report["compacted"]
        assert after["summaries"] == len(report["summaries"])
        view = _ok(dev1.get(_path("c-1"), params={"agent_id": "dev-1"}))["messages"]
        summaries = [m for m in view if m["kind"] == "summary"]
        assert summaries and "src/app/parser.py" in " ".join(m["content"] for m in summaries)
        # The pinned turn is never compacted.
        assert any(m["content"] == "Pin this: never touch prod." for m in view)
        _error(
            dev1.post(
                _path("nope", "compact"), json={"agent_id": "dev-1", "summariser": "extractive"}
            ),
            404,
            "not_found",
        )
        _error(dev1.get(_path("nope", "context"), params={"agent_id": "dev-1"}), 404, "not_found")
    with server.client("admin") as admin:
        every = _ok(admin.get(_path("c-1"), params={"agent_id": "dev-1", "view": "all"}))
        originals = [m for m in every["messages"] if m["kind"] == "message"]
        # Compaction marks, never deletes: all seven turns are still stored.
        assert len(originals) == 7
        assert sum(1 for m in originals if m["compacted_at"] is not None) == report["compacted"]
    with server.client("operator") as human:
        user = _ok(human.get(_path("c-1"), params={"agent_id": "dev-1", "view": "user"}))
        # The transcript a person reads is unchanged by compaction and shows no summary.
        assert len(user["messages"]) == 7
        assert all(m["kind"] == "message" for m in user["messages"])
    with server.client("reader") as reader:
        denied = reader.post(
            _path("c-1", "compact"), json={"agent_id": "dev-1", "summariser": "extractive"}
        )
        _error(denied, 403, "permission_denied")


def _scripted_compaction() -> ScriptedLLM:
    summary = {
        "goal": "fix the PROJ-42 crash in src/app/main.py",
        "decisions": ["switch to the v3.2 parser"],
        "identifiers": ["src/app/main.py", "PROJ-42"],
        "open_questions": [],
        "facts": ["line 10 raised KeyError retry_policy"],
    }
    questions = {"items": [{"question": "Which ticket?", "answer": "PROJ-42"}]}
    answers = {"answers": ["PROJ-42"]}

    def reply(messages: Sequence[ChatMessage]) -> str:
        system = messages[0].content
        if "compact an agent's conversation" in system:
            return json.dumps(summary)
        if "short factual questions" in system:
            return json.dumps(questions)
        return json.dumps(answers)

    return ScriptedLLM([reply], repeat_last=True)


def test_compaction_uses_the_servers_llm(start: Start) -> None:
    llm = _scripted_compaction()
    server = start(compaction=TIGHT, llm=llm)
    with server.client("dev1") as dev1:
        _busy_conversation(dev1, "c-1")
        report = _ok(dev1.post(_path("c-1", "compact"), json={"agent_id": "dev-1"}))
    assert report["summaries"]
    assert report["probes"] and all(p["method"] == "llm" for p in report["probes"])
    assert llm.calls  # the model wrote the summaries
    with server.client("dev1") as dev1:
        view = _ok(dev1.get(_path("c-1"), params={"agent_id": "dev-1"}))["messages"]
    assert any("fix the PROJ-42 crash" in m["content"] for m in view if m["kind"] == "summary")


def test_queue_status_and_backfill_over_http(start: Start) -> None:
    server = start()
    with server.client("dev1") as dev1:
        _ok(dev1.post(_path("q-1"), json={"agent_id": "dev-1", "messages": TURNS}), 201)
    with server.client("operator") as human:
        status = _ok(human.get("/v1/stats/conversations"))
        assert status["queue_enabled"] is False and status["queue"] is None
        assert status["stats"]["messages"] == 4
        assert status["stats"]["unembedded"] == 4  # no queue: the backfill's work
        _error(human.post("/v1/admin/conversations/backfill", json={}), 403, "permission_denied")
    with server.client("admin") as admin:
        done = _ok(admin.post("/v1/admin/conversations/backfill", json={}))
        assert done == {"embedded": 4, "remaining": 0}
        assert _ok(admin.post("/v1/admin/conversations/backfill", json={})) == {
            "embedded": 0,
            "remaining": 0,
        }
        assert _ok(admin.get("/v1/stats/conversations"))["stats"]["unembedded"] == 0
    with server.client("acme") as other:
        # Another tenant's store: nothing of the default tenant's counts.
        assert _ok(other.get("/v1/stats/conversations"))["stats"]["messages"] == 0


def test_the_embedding_queue_reports_over_http(start: Start) -> None:
    server = start(queue=EmbeddingQueueConfig(enabled=True, batch_size=2, batch_timeout_ms=10))
    with server.client("dev1") as dev1:
        _ok(dev1.post(_path("q-1"), json={"agent_id": "dev-1", "messages": TURNS}), 201)
    with server.client("operator") as human:
        # Polls as an operator would; the deadline only bounds a hung queue.
        deadline = time.monotonic() + 60
        while True:
            status = _ok(human.get("/v1/stats/conversations"))
            if status["stats"]["unembedded"] == 0:
                break
            assert time.monotonic() < deadline, status
            time.sleep(0.05)
    assert status["queue_enabled"] is True
    assert status["queue"]["embedded"] == 4 and status["queue"]["failures"] == 0


def test_sessions_and_conversations_share_the_log_with_message_storage(start: Start) -> None:
    server = start(session_storage="messages")
    with server.client("dev1") as dev1:
        turns = [
            {"role": "user", "content": "Tabs or spaces?"},
            {"role": "assistant", "content": "Tabs."},
        ]
        saved = dev1.put("/v1/sessions/s-1", json={"agent_id": "dev-1", "messages": turns})
        _ok(saved)
        page = _ok(dev1.get(_path("s-1"), params={"agent_id": "dev-1"}))
        assert [m["content"] for m in page["messages"]] == ["Tabs or spaces?", "Tabs."]
        more = {"agent_id": "dev-1", "messages": [{"role": "user", "content": "Line length?"}]}
        _ok(dev1.post(_path("s-1"), json=more), 201)
        session = _ok(dev1.get("/v1/sessions/s-1", params={"agent_id": "dev-1"}))
        assert [m["content"] for m in session["messages"]][-1] == "Line length?"


# -- the remote client and the CLI ----------------------------------------------------------------


async def test_the_remote_client_reaches_the_conversation_operations(
    tmp_path: Path, minilm: Embedder
) -> None:
    # A service the server's own loop opens (nothing touched it on this test's loop).
    service = MemoryService(load_config(url=str(tmp_path / "remote.db")), embedder=minilm)
    keys = open_key_store(str(tmp_path / "keys.db"))
    _, secret = keys.create(name="dev1", scopes=["read", "write"], agent_id="dev-1")
    url, stop = run_app(create_app(service, keys=keys))
    remote = RemoteAsyncMemory(url, api_key=secret)
    try:
        made = await remote.call(
            "conversation_append",
            session_id="r-1",
            agent_id="dev-1",
            messages=[{"role": "user", "content": "Remind me about the retro."}],
        )
        assert made["messages"][0]["position"] == 1
        page = await remote.call("conversation_messages", session_id="r-1", agent_id="dev-1")
        assert [m["content"] for m in page["messages"]] == ["Remind me about the retro."]
        listed = await remote.call("conversations", agent_id="dev-1")
        assert [c["session_id"] for c in listed["conversations"]] == ["r-1"]
        from memvault.errors import MemoryPermissionError

        with pytest.raises(MemoryPermissionError):
            await remote.call(
                "conversation_messages", session_id="r-1", agent_id="dev-1", view="user"
            )
    finally:
        await remote.close()
        stop()


def test_memvault_api_appends_and_reads_a_conversation(cli_store: Path, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(
        json.dumps([{"role": "user", "content": "Standup moves to 9:30."}]), encoding="utf-8"
    )
    runner = CliRunner()
    app = build_api_app()
    made = runner.invoke(
        app,
        ["conversation-append", "--agent-id", "ops", "--session-id", "s", "--messages", f"@{chat}"],
    )
    assert made.exit_code == 0, made.output
    assert json.loads(made.output)["messages"][0]["content"] == "Standup moves to 9:30."
    read = runner.invoke(app, ["conversation-messages", "--agent-id", "ops", "--session-id", "s"])
    assert read.exit_code == 0, read.output
    assert json.loads(read.output)["total"] == 1
    # The CLI's store is the library's: Memory.conversations reads what the API appended.
    assert _common.state.memory is not None
    rows = _common.state.memory.conversations.messages("s", agent_id="ops")
    assert [m.content for m in rows] == ["Standup moves to 9:30."]
