"""Core organisation policies in every injection strategy's messages.

Org memory's core policies (5-10 critical rules) reach every agent whatever the injection
strategy: each strategy takes an optional :data:`PolicySource` and puts the policies first, as a
system message of their own, before what it injects itself. They are never dropped for the
token budget (the design: "core rules are always present"); what the strategy injects gets the
rest of the budget.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from memvault.models import ChatMessage
from memvault.retrieval.packing import MESSAGE_OVERHEAD_TOKENS, estimate_tokens

__all__ = ["PolicySource", "policy_message", "with_policies"]

PolicySource = Callable[[], Awaitable[Sequence[str]]]
"""``async policies()``: the core policies' texts, in order."""

_HEADER = "Organisation policies (always apply):"


def policy_message(policies: Sequence[str]) -> ChatMessage | None:
    """The system message listing ``policies``; None when there are none."""
    lines = [" ".join(p.split()) for p in policies if p and p.strip()]
    if not lines:
        return None
    return ChatMessage(role="system", content="\n".join([_HEADER, *(f"- {p}" for p in lines)]))


def message_tokens(message: ChatMessage | None) -> int:
    """The estimated prompt cost of ``message`` (0 for None)."""
    return 0 if message is None else estimate_tokens(message.content) + MESSAGE_OVERHEAD_TOKENS


async def with_policies(
    source: PolicySource | None, messages: Sequence[ChatMessage]
) -> tuple[ChatMessage, ...]:
    """``messages`` with the policy message (if any) in front."""
    if source is None:
        return tuple(messages)
    first = policy_message(await source())
    return tuple(messages) if first is None else (first, *messages)
