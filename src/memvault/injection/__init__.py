"""Memory injection strategies: how an agent's memories reach its prompt.

``ContextInjectionStrategy`` injects relevant memories as a delimited chat message before the
agent runs; every strategy implements :class:`memvault.protocols.MemoryInjectionStrategy`.
"""

from memvault.injection.context import (
    ContextInjectionConfig,
    ContextInjectionStrategy,
    SearchFn,
)
from memvault.injection.tools import ToolDefinition

__all__ = [
    "ContextInjectionConfig",
    "ContextInjectionStrategy",
    "SearchFn",
    "ToolDefinition",
]
