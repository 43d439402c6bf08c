"""ScriptedLLM, the message models and the error tree."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import ValidationError

import memvault.llm
from memvault.errors import MemvaultError
from memvault.llm import (
    ChatMessage,
    LLMOutputError,
    LLMProvider,
    LLMResponse,
    ProviderAuthError,
    ProviderError,
    RetryExhaustedError,
    ScriptedLLM,
)

HELLO = [ChatMessage(role="user", content="hello there")]


async def test_returns_scripted_texts_in_order() -> None:
    llm = ScriptedLLM(["first", "second answer"], model_id="fake-1")

    one = await llm.complete(HELLO)
    two = await llm.complete(HELLO)

    assert (one.text, two.text) == ("first", "second answer")
    assert two == LLMResponse(
        text="second answer",
        model="fake-1",
        prompt_tokens=2,
        completion_tokens=2,
        finish_reason="stop",
    )
    assert llm.model_id == "fake-1"
    assert llm.remaining == 0


async def test_records_every_call_with_kwargs() -> None:
    llm = ScriptedLLM(["a", "b"])
    schema = {"type": "object"}

    await llm.complete(HELLO)
    await llm.complete(HELLO, temperature=0.7, max_tokens=10, json_schema=schema)

    assert llm.calls == [HELLO, HELLO]
    assert llm.call_kwargs == [
        {"temperature": 0.0, "max_tokens": None, "json_schema": None},
        {"temperature": 0.7, "max_tokens": 10, "json_schema": schema},
    ]


async def test_raises_scripted_exceptions_and_still_records_the_call() -> None:
    failure = RetryExhaustedError("down", attempts=3)
    llm = ScriptedLLM([failure, "after"])

    with pytest.raises(RetryExhaustedError) as info:
        await llm.complete(HELLO)

    assert info.value is failure
    assert len(llm.calls) == 1
    assert (await llm.complete(HELLO)).text == "after"


async def test_callable_steps_receive_the_messages() -> None:
    def echo(messages: Sequence[ChatMessage]) -> str:
        return messages[-1].content.upper()

    assert (await ScriptedLLM([echo]).complete(HELLO)).text == "HELLO THERE"


async def test_exhausted_script_raises_non_retryable_provider_error() -> None:
    llm = ScriptedLLM(["only"])
    await llm.complete(HELLO)

    with pytest.raises(ProviderError, match="script exhausted") as info:
        await llm.complete(HELLO)

    assert not isinstance(info.value, AssertionError)
    assert info.value.retryable is False
    assert len(llm.calls) == 2


async def test_repeat_last_reuses_the_final_step() -> None:
    llm = ScriptedLLM(["a", "b"], repeat_last=True)

    texts = [(await llm.complete(HELLO)).text for _ in range(4)]

    assert texts == ["a", "b", "b", "b"]


async def test_repeat_last_with_an_empty_script_is_still_exhausted() -> None:
    with pytest.raises(ProviderError, match="script exhausted"):
        await ScriptedLLM([], repeat_last=True).complete(HELLO)


def test_scripted_llm_is_an_llm_provider() -> None:
    llm = ScriptedLLM(["x"])
    assert isinstance(llm, LLMProvider)
    assert "scripted" in repr(llm)


def test_chat_message_is_frozen_and_validated() -> None:
    message = ChatMessage(role="assistant", content="hi")
    assert message.name is None
    with pytest.raises(ValidationError):
        message.content = "changed"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        ChatMessage(role="robot", content="hi")


def test_llm_response_defaults_and_frozen() -> None:
    response = LLMResponse(text="t", model="m")
    assert (response.prompt_tokens, response.completion_tokens, response.finish_reason) == (
        0,
        0,
        None,
    )
    with pytest.raises(ValidationError):
        response.text = "u"  # type: ignore[misc]


def test_error_tree() -> None:
    for cls in (ProviderError, RetryExhaustedError, LLMOutputError, ProviderAuthError):
        assert issubclass(cls, MemvaultError)
        assert issubclass(cls, ProviderError)
    assert RetryExhaustedError("x").retryable is True
    assert LLMOutputError("x", output="raw").output == "raw"
    assert LLMOutputError("x").retryable is False
    assert ProviderAuthError("x", status_code=401).retryable is False
    assert ProviderError("x", retryable=True, status_code=502).status_code == 502


def test_public_names_are_exported() -> None:
    for name in memvault.llm.__all__:
        assert getattr(memvault.llm, name).__doc__
