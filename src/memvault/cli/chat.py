"""``memvault chat``: a small agent with memory, against any OpenAI-compatible endpoint.

The loop InitRunner runs with ``run -i --resume``: read a line, send the conversation to the
model with memvault's memory tools (``remember``, ``recall``, ``list_memories``,
``learn_procedure``, ``record_episode``), run the tool calls it makes, print its answer, and save
the session after every turn. ``--resume`` continues the agent's latest session; the session
ends (and ``after_session`` consolidation runs) on ``/exit`` or end of input.

Every request carries a system prompt built afresh: the agent's instruction, its learned
procedures (the ``## Learned Procedures and Policies`` section) and the memories relevant to the
user's message (context injection). The system prompt is never saved, so a resumed session runs
under the current one. What is saved is the conversation: the user's messages and the model's
answers; tool round trips stay inside their turn.

The endpoint is any server that speaks OpenAI's ``POST /chat/completions`` with ``tools``
(OpenAI, vLLM, Ollama, llama.cpp, LiteLLM ...): ``--base-url`` and ``--model``; the API key is
read from the environment variable ``--api-key-env`` names (``OPENAI_API_KEY`` by default; none
is sent when it is unset).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Annotated, Any, TextIO

import httpx
import typer

from memvault.cli._common import load_cli_config, open_memory, out, state
from memvault.config import COMPOSITE_URL
from memvault.errors import MemoryConnectionError, MemoryValidationError
from memvault.memory import Memory
from memvault.models import ChatMessage
from memvault.sessions import SessionConfig, SessionManager, open_session_store

__all__ = ["ChatAgent", "OpenAIChatClient", "register"]

DEFAULT_INSTRUCTION = (
    "You are a helpful assistant with long-term memory. Use the memory tools: remember facts "
    "the user tells you, recall before answering questions about the past, learn_procedure for "
    "rules to follow in every future session, record_episode for what happened."
)
EXIT_COMMANDS = frozenset({"/exit", "/quit"})


class OpenAIChatClient:
    """``POST {base_url}/chat/completions`` with tools; one synchronous request per call.

    Raises (from :meth:`complete`):
        MemoryConnectionError: the endpoint cannot be reached, or answers with an error status
            or a body that is not a chat completion (one line, with the status and reason).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            msg = f"--base-url must be an http(s) URL, got {base_url!r}"
            raise MemoryValidationError(msg)
        if not model.strip():
            msg = "--model is empty"
            raise MemoryValidationError(msg)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.model = model
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )

    def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> dict[str, Any]:
        """The first choice's ``message`` of the model's reply."""
        body: dict[str, Any] = {"model": self.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        try:
            response = self._http.post("/chat/completions", json=body)
        except httpx.HTTPError as exc:
            msg = f"chat endpoint {self._http.base_url} unreachable: {exc}"
            raise MemoryConnectionError(msg) from None
        if response.status_code >= 400:
            detail = " ".join(response.text.split())[:200]
            msg = f"chat endpoint answered {response.status_code}: {detail}"
            raise MemoryConnectionError(msg)
        try:
            message = response.json()["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            msg = "chat endpoint answered with something that is not a chat completion"
            raise MemoryConnectionError(msg) from None
        if not isinstance(message, dict):
            msg = "chat endpoint answered with something that is not a chat completion"
            raise MemoryConnectionError(msg)
        return message

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()


class ChatAgent:
    """One agent's conversation: memory tools, per-turn system prompt, session saving.

    Args:
        memory: the store the tools write to and recall from.
        client: the model endpoint.
        manager: the agent's sessions (saves after every turn).
        instruction: the first part of the system prompt.
        max_tool_rounds: tool-call rounds allowed per turn before the model must answer.
    """

    def __init__(
        self,
        memory: Memory,
        client: OpenAIChatClient,
        manager: SessionManager,
        *,
        instruction: str = DEFAULT_INSTRUCTION,
        max_tool_rounds: int = 5,
        token_budget: int = 800,
    ) -> None:
        self.memory = memory
        self.client = client
        self.manager = manager
        self.agent_id = manager.agent_id
        self.instruction = instruction
        self.max_tool_rounds = max_tool_rounds
        self.token_budget = token_budget
        self.tools = memory.memory_tools()
        self.openai_tools = self.tools.tools.registry.openai_tools()
        self.history: list[ChatMessage] = []
        self.session_id = manager.new_session_id()
        self._runner = asyncio.Runner()

    def resume(self) -> bool:
        """Continue the agent's latest session; False when it has none."""
        found = self._runner.run(self.manager.resume())
        if found is None:
            return False
        self.session_id, self.history = found[0], list(found[1])
        return True

    def system_prompt(self, user_text: str) -> str:
        """Instruction, learned procedures, and the memories relevant to ``user_text``."""
        parts = [self.instruction]
        procedures = self.tools.procedures_section(self.agent_id)
        if procedures:
            parts.append(procedures)
        context = self.memory.context(
            user_text, agent_id=self.agent_id, token_budget=self.token_budget
        )
        if context.text:
            parts.append(context.text)
        return "\n\n".join(parts)

    def turn(self, user_text: str) -> str:
        """Answer one user message (running the model's tool calls); saves the session."""
        user = ChatMessage(role="user", content=user_text)
        request: list[dict[str, Any]] = [
            {"role": "system", "content": self.system_prompt(user_text)},
            *({"role": m.role, "content": m.content} for m in [*self.history, user]),
        ]
        answer = ""
        for _ in range(self.max_tool_rounds + 1):
            message = self.client.complete(request, self.openai_tools)
            calls = message.get("tool_calls") or []
            if not calls:
                answer = str(message.get("content") or "")
                break
            request.append(
                {"role": "assistant", "content": message.get("content"), "tool_calls": calls}
            )
            for call in calls:
                function = call.get("function") or {}
                result = self.tools.handle_tool_call(
                    self.agent_id, str(function.get("name", "")), function.get("arguments")
                )
                request.append({"role": "tool", "tool_call_id": call.get("id"), "content": result})
        else:
            answer = "(no answer: the model kept calling tools)"
        self.history = self.manager.trim(
            [*self.history, user, ChatMessage(role="assistant", content=answer)]
        )
        self._runner.run(self.manager.save_turn(self.session_id, self.history))
        return answer

    def close(self) -> None:
        """End the session (its last save, ``after_session`` consolidation) and the client."""
        try:
            if self.history:
                self._runner.run(self.manager.end_session(self.session_id, self.history))
                # The after_session trigger, on the sync memory (the manager holds none: its
                # memory would have to live on this runner's loop).
                self.memory.consolidate_if_due(agent_id=self.agent_id, session_ended=True)
            self._runner.run(self.manager.store.close())
        finally:
            self._runner.close()
            self.client.close()


def _session_url() -> str:
    cfg = load_cli_config()
    url = state.db or cfg.resolved_url()
    # Sessions are not routed by category: they live in the composite store's default child.
    return cfg.composite_default_url() if url.strip() == COMPOSITE_URL else url


def run_chat(agent: ChatAgent, lines: TextIO, *, echo: bool) -> int:
    """The REPL: one turn per line of ``lines`` until ``/exit`` or end of input."""
    while True:
        if echo:
            out.print("you> ", end="")
        line = lines.readline()
        if not line:
            break
        text = line.strip()
        if not text:
            continue
        if text in EXIT_COMMANDS:
            break
        answer = agent.turn(text)
        out.print(f"assistant> {answer}", markup=False)
    return 0


def chat(
    base_url: Annotated[
        str,
        typer.Option(
            "--base-url",
            envvar="MEMVAULT_CHAT_BASE_URL",
            help="OpenAI-compatible API root, e.g. http://localhost:11434/v1.",
        ),
    ],
    model: Annotated[
        str, typer.Option("--model", envvar="MEMVAULT_CHAT_MODEL", help="Model name to ask.")
    ],
    agent: Annotated[
        str, typer.Option("--agent", "-a", envvar="MEMVAULT_AGENT", help="Agent id.")
    ] = "default",
    resume: Annotated[
        bool, typer.Option("--resume", help="Continue the agent's latest session.")
    ] = False,
    api_key_env: Annotated[
        str,
        typer.Option("--api-key-env", help="Environment variable holding the API key."),
    ] = "OPENAI_API_KEY",
    instruction: Annotated[
        str, typer.Option("--system", help="The agent's instruction (system prompt).")
    ] = DEFAULT_INSTRUCTION,
    max_tool_rounds: Annotated[
        int, typer.Option("--max-tool-rounds", min=0, max=20, help="Tool rounds per turn.")
    ] = 5,
) -> None:
    """Chat with an agent that has memory tools; the session is saved after every turn."""
    client = OpenAIChatClient(base_url, model, api_key=os.environ.get(api_key_env) or None)
    cfg = load_cli_config()
    manager = SessionManager(
        open_session_store(_session_url()),
        agent,
        SessionConfig(**cfg.sessions.model_dump()),
    )
    bot = ChatAgent(
        open_memory(), client, manager, instruction=instruction, max_tool_rounds=max_tool_rounds
    )
    try:
        if resume:
            if bot.resume():
                out.print(f"resumed session {bot.session_id} ({len(bot.history)} messages)")
            else:
                out.print("no session to resume: starting a new one")
        out.print(f"session {bot.session_id} of agent {agent}; /exit to leave", markup=False)
        code = run_chat(bot, sys.stdin, echo=sys.stdin.isatty())
    finally:
        bot.close()
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add ``memvault chat`` to the CLI."""
    app.command("chat")(chat)
