"""LLM providers for memvault: the protocol, an OpenAI-compatible HTTP client, and a test double.

memvault uses an LLM only for optional work (consolidation, proposals, query reformulation);
every such path has a deterministic fallback, so callers catch :class:`ProviderError` and carry
on. :func:`complete_json` turns a provider's free text into a validated pydantic model.
"""

from __future__ import annotations

from memvault.llm._protocol import ChatMessage, LLMProvider, LLMResponse, complete_json
from memvault.llm.errors import (
    LLMOutputError,
    ProviderAuthError,
    ProviderError,
    RetryExhaustedError,
)
from memvault.llm.openai_compat import OpenAICompatibleLLM
from memvault.llm.scripted import ScriptedLLM, ScriptedResponse

__all__ = [
    "ChatMessage",
    "LLMOutputError",
    "LLMProvider",
    "LLMResponse",
    "OpenAICompatibleLLM",
    "ProviderAuthError",
    "ProviderError",
    "RetryExhaustedError",
    "ScriptedLLM",
    "ScriptedResponse",
    "complete_json",
]
