"""Fixtures of the learning tests: a scripted proposer LLM and stores of each kind."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence

import pytest

from memvault.llm.scripted import ScriptedLLM
from memvault.models import ChatMessage
from postgres_server import SchemaFactory

# What the scripted proposer answers, by the error category in the payload it is shown.
LESSONS: dict[str, dict[str, object]] = {
    "registryratelimiterror": {
        "name": "registry-rate-limit",
        "discovery": "Parallel image pushes to the container registry hit its rate limit (429).",
        "condition": "pushing container images to the registry during a deploy",
        "action": "push images one at a time with exponential backoff on 429 responses",
        "rationale": "the registry throttles parallel pushes per account",
        "execution_steps": ["push one image", "on 429 wait 2^n seconds", "retry the push"],
        "confidence": 0.9,
    },
    "schemadrifterror": {
        "name": "schema-drift",
        "discovery": "Database migrations fail when the schema drifted from the migration history.",
        "condition": "running database migrations on a shared environment",
        "action": "diff the live schema against the migration head before migrating",
        "rationale": "manual hotfixes leave the schema out of step with the history",
        "execution_steps": ["dump the live schema", "diff with the head", "reconcile", "migrate"],
        "confidence": 0.85,
    },
}
LOW_CONFIDENCE = {**LESSONS["schemadrifterror"], "confidence": 0.2}


def _category(messages: Sequence[ChatMessage]) -> str | None:
    match = re.search(r'"error_category": "([^"]+)"', messages[-1].content)
    return match.group(1) if match else None


def scripted_proposer(*, malformed_first: bool = False) -> ScriptedLLM:
    """A proposer LLM that answers with the lesson of the payload's error category."""
    state = {"malformed": malformed_first}

    def answer(messages: Sequence[ChatMessage]) -> str:
        if state["malformed"]:
            state["malformed"] = False
            return "Sure! Here is the lesson: {not json"
        lesson = LESSONS.get(_category(messages) or "", LESSONS["schemadrifterror"])
        return json.dumps(lesson)

    return ScriptedLLM([answer], repeat_last=True)


@pytest.fixture
def proposer() -> ScriptedLLM:
    """The scripted proposer LLM."""
    return scripted_proposer()


@pytest.fixture
def pg_schemas(postgres_url: str) -> Iterator[SchemaFactory]:
    """Fresh PostgreSQL schema names, dropped at the end of the test."""
    factory = SchemaFactory(postgres_url)
    yield factory
    factory.drop_all()


def pg_url(base: str, schema: str) -> str:
    """``base`` with ``schema=`` set."""
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}schema={schema}"
