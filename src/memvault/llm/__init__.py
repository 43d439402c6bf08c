"""LLM providers for memvault: the protocol, an OpenAI-compatible HTTP client, and a test double.

memvault uses an LLM only for optional work (consolidation, proposals, query reformulation);
every such path has a deterministic fallback, so callers catch :class:`ProviderError` and carry
on. :func:`complete_json` turns a provider's free text into a validated pydantic model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memvault._lazy import lazy_attributes

if TYPE_CHECKING:
    from memvault.llm._protocol import (
        ChatMessage,
        LLMProvider,
        LLMResponse,
        complete_json,
        with_model,
    )
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
    "with_model",
]


_WHERE = {
    "ChatMessage": "memvault.llm._protocol",
    "LLMOutputError": "memvault.llm.errors",
    "LLMProvider": "memvault.llm._protocol",
    "LLMResponse": "memvault.llm._protocol",
    "OpenAICompatibleLLM": "memvault.llm.openai_compat",
    "ProviderAuthError": "memvault.llm.errors",
    "ProviderError": "memvault.llm.errors",
    "RetryExhaustedError": "memvault.llm.errors",
    "ScriptedLLM": "memvault.llm.scripted",
    "ScriptedResponse": "memvault.llm.scripted",
    "complete_json": "memvault.llm._protocol",
    "with_model": "memvault.llm._protocol",
}


__getattr__ = lazy_attributes(__name__, _WHERE)
