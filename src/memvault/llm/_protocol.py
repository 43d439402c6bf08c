"""Defensive structured output over any :class:`~memvault.protocols.LLMProvider`.

The protocol and its message types live in ``memvault.protocols`` and ``memvault.models``;
they are re-exported here for convenience.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memvault.errors import MemoryConfigError
from memvault.llm.errors import LLMOutputError
from memvault.models import ChatMessage, LLMResponse
from memvault.protocols import LLMProvider

__all__ = ["ChatMessage", "LLMProvider", "LLMResponse", "complete_json"]

logger = logging.getLogger(__name__)

ModelT = TypeVar("ModelT", bound=BaseModel)


# ---------------------------------------------------------------------------------------------
# Defensive JSON extraction
# ---------------------------------------------------------------------------------------------

# Models wrap JSON in Markdown fences (with or without a language tag) despite being told not to.
_FENCE_RE = re.compile(r"```[ \t]*[A-Za-z0-9_+-]*[ \t]*\r?\n?(.*?)```", re.DOTALL)
# Reasoning models served through OpenAI-compatible APIs (e.g. DeepSeek-R1 on Ollama) put their
# chain of thought, which often contains braces, in front of the answer.
_THINK_RE = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_OPENING_RE = re.compile(r"[\[{]")
_DECODER = json.JSONDecoder()
_MAX_REPORTED_ERRORS = 20


def _scan_json_values(text: str) -> Iterator[Any]:
    """Yield every top-level JSON object or array embedded in ``text``, left to right.

    ``raw_decode`` parses one value starting at an index and ignores what follows, so it finds a
    balanced object inside prose while honouring braces inside strings. After a success the scan
    resumes behind the value, so nested objects are never offered on their own.
    """
    position = 0
    while (match := _OPENING_RE.search(text, position)) is not None:
        start = match.start()
        try:
            value, end = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            position = start + 1
            continue
        yield value
        position = end


def _json_candidates(text: str) -> list[Any]:
    """Return the JSON values ``text`` plausibly means, most likely first, without duplicates."""
    cleaned = _THINK_RE.sub("", text).strip()
    candidates: list[Any] = []

    def add(value: Any) -> None:
        if value not in candidates:
            candidates.append(value)

    # The well-behaved case: the whole reply is JSON.
    with contextlib.suppress(json.JSONDecodeError):
        add(json.loads(cleaned))
    # Fenced blocks are what the model itself marked as the answer, so they beat loose prose.
    for fenced in _FENCE_RE.finditer(cleaned):
        block = fenced.group(1).strip()
        try:
            add(json.loads(block))
        except json.JSONDecodeError:
            for value in _scan_json_values(block):
                add(value)
    for value in _scan_json_values(cleaned):
        add(value)
    return candidates


def _describe_validation_error(error: ValidationError) -> str:
    """Format a pydantic error compactly (no documentation URLs) for logs and the repair prompt."""
    lines = []
    for detail in error.errors(include_url=False)[:_MAX_REPORTED_ERRORS]:
        location = ".".join(str(part) for part in detail["loc"]) or "(root)"
        lines.append(f"- {location}: {detail['msg']}")
    if error.error_count() > _MAX_REPORTED_ERRORS:
        lines.append(f"- ... and {error.error_count() - _MAX_REPORTED_ERRORS} more errors")
    return "\n".join(lines)


def _parse_structured(text: str, schema: type[ModelT]) -> tuple[ModelT | None, str]:
    """Return ``(instance, "")`` for the first candidate that validates, else ``(None, problem)``.

    Every candidate is tried because prose may contain a stray ``[1]`` or ``{}`` before the real
    answer; the problem reported is the first candidate's, as that is most likely the intended one.
    """
    candidates = _json_candidates(text)
    if not candidates:
        return None, "the reply contains no JSON object or array."
    first_problem = ""
    for value in candidates:
        try:
            return schema.model_validate(value), ""
        except ValidationError as exc:
            if not first_problem:
                first_problem = (
                    "the JSON does not match the schema:\n" + _describe_validation_error(exc)
                )
    return None, first_problem


def _with_schema_instruction(
    messages: Sequence[ChatMessage], schema_json: dict[str, Any]
) -> list[ChatMessage]:
    """Tell the model the expected JSON shape in the prompt itself.

    Servers that ignore ``response_format`` (or that we had to downgrade to plain JSON mode) only
    learn the schema this way, and OpenAI's JSON mode insists that the prompt mentions JSON. The
    instruction joins an existing leading system message because several chat templates of local
    models reject a second system message or one that is not first.
    """
    instruction = (
        "Respond with a single JSON value that conforms to this JSON schema, with no prose and "
        "no code fences:\n" + json.dumps(schema_json, ensure_ascii=False, separators=(",", ":"))
    )
    if messages and messages[0].role == "system":
        first = messages[0]
        merged = first.model_copy(update={"content": f"{first.content}\n\n{instruction}"})
        return [merged, *messages[1:]]
    return [ChatMessage(role="system", content=instruction), *messages]


async def complete_json(
    provider: LLMProvider,
    messages: Sequence[ChatMessage],
    *,
    schema: type[ModelT],
    temperature: float = 0.0,
    max_tokens: int | None = None,
    repair_attempts: int = 1,
) -> ModelT:
    """Ask ``provider`` for JSON matching ``schema`` and return it as a validated instance.

    The schema is sent both as ``json_schema`` (for servers that enforce it) and in the prompt.
    The reply is parsed defensively: Markdown fences and ``<think>`` blocks are stripped and the
    first balanced JSON object or array is taken from surrounding prose. If that still fails, up
    to ``repair_attempts`` repair passes send the bad output and the exact problem back, asking
    for corrected JSON only.

    Raises:
        LLMOutputError: the output is still unusable after every repair pass.
        ProviderError: the provider itself failed (propagated unchanged).
    """
    if repair_attempts < 0:
        raise ValueError("repair_attempts must be >= 0")
    schema_json = schema.model_json_schema()
    prompt = _with_schema_instruction(messages, schema_json)

    response = await provider.complete(
        prompt, temperature=temperature, max_tokens=max_tokens, json_schema=schema_json
    )
    parsed, problem = _parse_structured(response.text, schema)
    for attempt in range(1, repair_attempts + 1):
        if parsed is not None:
            return parsed
        logger.info(
            "llm.repair model=%s attempt=%d schema=%s",
            provider.model_id,
            attempt,
            schema.__name__,
            extra={"event": "llm.repair", "model": provider.model_id, "attempt": attempt},
        )
        # The conversation so far plus the faulty reply gives the model full context; only the
        # latest bad reply is kept so repeated repairs do not grow the prompt without bound.
        repair_prompt = [
            *prompt,
            ChatMessage(role="assistant", content=response.text),
            ChatMessage(
                role="user",
                content=(
                    f"Your previous reply could not be used because {problem}\n"
                    "Reply again with only the corrected JSON value matching the schema: no "
                    "explanations and no code fences."
                ),
            ),
        ]
        response = await provider.complete(
            repair_prompt, temperature=temperature, max_tokens=max_tokens, json_schema=schema_json
        )
        parsed, problem = _parse_structured(response.text, schema)
    if parsed is not None:
        return parsed
    raise LLMOutputError(
        f"{provider.model_id} did not return valid {schema.__name__} JSON after "
        f"{repair_attempts} repair attempt(s): {problem}",
        output=response.text,
    )


def with_model(llm: LLMProvider, model: str | None, *, key: str) -> LLMProvider:
    """``llm`` asking ``model`` instead (None: ``llm`` itself).

    For the config keys that name a model for one kind of call (``key`` is the key's name,
    for the error): the provider's ``with_model`` derives it (the OpenAI-compatible client,
    the response cache and the cost meter wrap it; the scripted LLM of tests records it).

    Raises:
        MemoryConfigError: the provider cannot ask another model.
    """
    if model is None or model == llm.model_id:
        return llm
    switch = getattr(llm, "with_model", None)
    if switch is None:
        msg = (
            f"{key}: {model!r} needs an LLM that can ask another model (an OpenAI-compatible "
            f"endpoint: the llm: config section); {type(llm).__name__} cannot"
        )
        raise MemoryConfigError(msg)
    derived: LLMProvider = switch(model)
    return derived
