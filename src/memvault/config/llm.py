"""The ``llm:`` section: the OpenAI-compatible model memvault's own LLM-backed work uses.

One model for everything that can use one: lesson proposals, ``llm`` and ``dual_mode``
consolidation, fact extraction (``infer``), query reformulation, compaction summaries and
Search-and-Ask. Unset, ``MEMVAULT_LLM_BASE_URL`` / ``MEMVAULT_LLM_MODEL`` (the variables every
LLM option of the CLI reads) name it; naming neither, memvault runs without an LLM and every
request that needs one says so (``llm_not_configured``, HTTP 422).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_LLM_MODEL", "LLM_MODEL_ENV", "LLM_URL_ENV", "LLMConfig"]

LLM_URL_ENV = "MEMVAULT_LLM_BASE_URL"
LLM_MODEL_ENV = "MEMVAULT_LLM_MODEL"
DEFAULT_LLM_MODEL = "gpt-4o-mini"


class LLMConfig(BaseModel):
    """Where memvault's LLM is (an OpenAI-compatible ``/v1/chat/completions`` endpoint)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_url: str | None = None
    """The endpoint's base URL (``http://localhost:11434/v1``); unset: ``MEMVAULT_LLM_BASE_URL``."""
    model: str | None = None
    """The model name; unset: ``MEMVAULT_LLM_MODEL``, else ``gpt-4o-mini``."""
    api_key_env: str = "OPENAI_API_KEY"
    """The environment variable holding the API key (the key itself never goes in the file)."""
    timeout: float = Field(default=60.0, gt=0.0, le=3600.0)
    """Seconds to wait for one answer."""

    def resolved(self, env: Mapping[str, str] | None = None) -> tuple[str, str] | None:
        """``(base_url, model)`` from this section, else the environment; None: no LLM."""
        source = os.environ if env is None else env
        url = (self.base_url or source.get(LLM_URL_ENV, "")).strip()
        if not url:
            return None
        model = (self.model or source.get(LLM_MODEL_ENV, "") or DEFAULT_LLM_MODEL).strip()
        return url, model
