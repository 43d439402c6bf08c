"""Adapters that put memvault into the agent frameworks people already use.

Each adapter is a thin layer over memvault's public API in a module of its own, and imports its
framework only when that module is imported, so ``import memvault`` never pulls a framework in:

* :mod:`memvault.integrations.langgraph`: ``MemvaultStore``, a LangGraph ``BaseStore``
  (extra ``memvault[langgraph]``);
* :mod:`memvault.integrations.pydantic_ai`: ``memvault_toolset`` and ``memvault_instructions``
  for a pydantic-ai ``Agent`` (extra ``memvault[pydantic-ai]``);
* :mod:`memvault.integrations.openai_agents`: ``memvault_function_tools`` and
  ``MemvaultSession`` for the OpenAI Agents SDK (extra ``memvault[openai-agents]``);
* :mod:`memvault.integrations.langchain`: ``MemvaultRetriever`` and
  ``MemvaultChatMessageHistory`` over ``langchain-core`` (extra ``memvault[langchain]``).

A module whose framework is missing raises :class:`~memvault.errors.MemoryConfigError` naming
the extra to install.
"""

from __future__ import annotations

__all__: list[str] = []
