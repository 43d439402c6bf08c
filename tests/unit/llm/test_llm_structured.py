"""complete_json: defensive parsing, the schema instruction and the repair pass (ScriptedLLM)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from pydantic import BaseModel, RootModel

from memvault.llm import (
    ChatMessage,
    LLMOutputError,
    RetryExhaustedError,
    ScriptedLLM,
    complete_json,
)


class Fact(BaseModel):
    subject: str
    confidence: float


class Facts(RootModel[list[Fact]]):
    pass


USER = [ChatMessage(role="user", content="extract the fact")]
EXPECTED = Fact(subject="tea", confidence=0.5)


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param('{"subject": "tea", "confidence": 0.5}', id="bare"),
        pytest.param('  \n{"subject": "tea", "confidence": 0.5}\n', id="whitespace"),
        pytest.param('```json\n{"subject": "tea", "confidence": 0.5}\n```', id="fenced-json"),
        pytest.param('```\n{"subject": "tea", "confidence": 0.5}\n```', id="fenced-untagged"),
        pytest.param('```JSON {"subject": "tea", "confidence": 0.5}```', id="fenced-inline"),
        pytest.param(
            'Here you go:\n```json\n{"subject": "tea", "confidence": 0.5}\n```\nAnything else?',
            id="fenced-in-prose",
        ),
        pytest.param('```json\n{"subject": "tea", "confidence": 0.5}\n', id="unterminated-fence"),
        pytest.param(
            'The answer is {"subject": "tea", "confidence": 0.5}. Hope it helps!', id="prose"
        ),
        pytest.param(
            'See note [1] and {"oops": true}. Answer: {"subject": "tea", "confidence": 0.5}',
            id="stray-values-before",
        ),
        pytest.param(
            '<think>maybe {"subject": "coffee"}?</think>{"subject": "tea", "confidence": 0.5}',
            id="think-block",
        ),
    ],
)
async def test_parses_json_defensively(reply: str) -> None:
    llm = ScriptedLLM([reply])

    assert await complete_json(llm, USER, schema=Fact) == EXPECTED
    assert len(llm.calls) == 1


async def test_braces_inside_strings_do_not_confuse_extraction() -> None:
    llm = ScriptedLLM(['Result: {"subject": "set {a, b} and \\"}\\"", "confidence": 1} done'])

    fact = await complete_json(llm, USER, schema=Fact)

    assert fact.subject == 'set {a, b} and "}"'


async def test_array_schemas_are_supported() -> None:
    llm = ScriptedLLM(
        ['Facts:\n[{"subject": "a", "confidence": 1}, {"subject": "b", "confidence": 0}]']
    )

    facts = await complete_json(llm, USER, schema=Facts)

    assert [f.subject for f in facts.root] == ["a", "b"]


async def test_schema_is_passed_and_stated_in_a_new_system_message() -> None:
    llm = ScriptedLLM(['{"subject": "tea", "confidence": 0.5}'])

    await complete_json(llm, USER, schema=Fact, temperature=0.2, max_tokens=64)

    [messages] = llm.calls
    assert messages[0].role == "system"
    assert '"confidence"' in messages[0].content
    assert messages[1:] == USER
    assert llm.call_kwargs[0] == {
        "temperature": 0.2,
        "max_tokens": 64,
        "json_schema": Fact.model_json_schema(),
    }


async def test_schema_instruction_joins_an_existing_system_message() -> None:
    llm = ScriptedLLM(['{"subject": "tea", "confidence": 0.5}'])
    messages = [ChatMessage(role="system", content="You extract facts."), *USER]

    await complete_json(llm, messages, schema=Fact)

    [sent] = llm.calls
    assert len(sent) == 2
    assert sent[0].content.startswith("You extract facts.\n\n")
    assert "JSON schema" in sent[0].content
    assert messages[0].content == "You extract facts."  # the caller's message is unchanged


async def test_invalid_output_is_repaired_with_error_feedback() -> None:
    bad = '{"subject": "tea", "confidence": "high"}'
    llm = ScriptedLLM([bad, '{"subject": "tea", "confidence": 0.5}'])

    assert await complete_json(llm, USER, schema=Fact) == EXPECTED

    repair = llm.calls[1]
    assert repair[:-2] == llm.calls[0]
    assert repair[-2] == ChatMessage(role="assistant", content=bad)
    assert repair[-1].role == "user"
    assert "confidence" in repair[-1].content
    assert "https://errors.pydantic.dev" not in repair[-1].content
    assert llm.call_kwargs[1]["json_schema"] == Fact.model_json_schema()


async def test_reply_without_any_json_is_repaired() -> None:
    llm = ScriptedLLM(["Sorry, I am not sure.", '{"subject": "tea", "confidence": 0.5}'])

    assert await complete_json(llm, USER, schema=Fact) == EXPECTED
    assert "no JSON object or array" in llm.calls[1][-1].content


async def test_invalid_twice_raises_llm_output_error() -> None:
    llm = ScriptedLLM(["nope", "[1, 2]"])

    with pytest.raises(LLMOutputError) as info:
        await complete_json(llm, USER, schema=Fact)

    assert info.value.retryable is False
    assert info.value.output == "[1, 2]"
    assert "Fact" in str(info.value)
    assert "scripted" in str(info.value)
    assert len(llm.calls) == 2


async def test_repair_attempts_bound_the_number_of_calls() -> None:
    no_repair = ScriptedLLM(["nope"])
    with pytest.raises(LLMOutputError):
        await complete_json(no_repair, USER, schema=Fact, repair_attempts=0)
    assert len(no_repair.calls) == 1

    two_repairs = ScriptedLLM(["nope", "still nope", '{"subject": "tea", "confidence": 0.5}'])
    assert await complete_json(two_repairs, USER, schema=Fact, repair_attempts=2) == EXPECTED
    # Each repair shows only the latest bad reply, so prompts do not grow with every attempt.
    assert len(two_repairs.calls[2]) == len(two_repairs.calls[1])
    assert two_repairs.calls[2][-2].content == "still nope"


async def test_negative_repair_attempts_are_rejected() -> None:
    with pytest.raises(ValueError, match="repair_attempts"):
        await complete_json(ScriptedLLM([]), USER, schema=Fact, repair_attempts=-1)


async def test_provider_errors_propagate_unchanged() -> None:
    failure = RetryExhaustedError("server down", attempts=4)
    llm = ScriptedLLM([failure])

    with pytest.raises(RetryExhaustedError) as info:
        await complete_json(llm, USER, schema=Fact)

    assert info.value is failure


async def test_callable_step_can_inspect_the_prompt() -> None:
    def answer(messages: Sequence[ChatMessage]) -> str:
        assert "JSON schema" in messages[0].content
        subject = messages[-1].content.split()[-1]
        return json.dumps({"subject": subject, "confidence": 0.5})

    assert (await complete_json(ScriptedLLM([answer]), USER, schema=Fact)).subject == "fact"
