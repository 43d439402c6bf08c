"""Memory injection strategies: how an agent's memories reach its prompt.

Every strategy implements :class:`memvault.protocols.MemoryInjectionStrategy`:

* ``ContextInjectionStrategy`` injects relevant memories as a delimited chat message before the
  agent runs;
* ``ToolBasedInjectionStrategy`` gives the agent ``search_memory`` and ``recall_memory`` tools,
  optionally with the Search-and-Ask reformulation loop;
* ``SelfEditingMemoryStrategy`` (MemGPT style) keeps a core block in the system prompt and gives
  six tools to read and write core, archival and recall memory.

They work over a :class:`MemoryAPI` (the slice of ``AsyncMemory`` they call), so this package
never imports ``memvault.memory``. ``ToolRegistry`` renders tools for OpenAI and Anthropic and
dispatches a model's tool calls.
"""

from memvault.injection.context import (
    ContextInjectionConfig,
    ContextInjectionStrategy,
    SearchFn,
)
from memvault.injection.dispatch import (
    ToolArgumentError,
    ToolHandler,
    ToolRegistry,
    validate_arguments,
)
from memvault.injection.memory_api import MemoryAPI
from memvault.injection.reformulation import (
    LLMQueryReformulator,
    LLMSufficiencyChecker,
    QueryReformulator,
    SufficiencyChecker,
)
from memvault.injection.self_editing import (
    CORE_TAG,
    SelfEditingMemoryConfig,
    SelfEditingMemoryStrategy,
)
from memvault.injection.tool_based import (
    ToolBasedInjectionConfig,
    ToolBasedInjectionStrategy,
    merge_by_id,
)
from memvault.injection.tools import (
    ToolDefinition,
    format_tool_result,
    to_anthropic_tool,
    to_openai_tool,
)

__all__ = [
    "CORE_TAG",
    "ContextInjectionConfig",
    "ContextInjectionStrategy",
    "LLMQueryReformulator",
    "LLMSufficiencyChecker",
    "MemoryAPI",
    "QueryReformulator",
    "SearchFn",
    "SelfEditingMemoryConfig",
    "SelfEditingMemoryStrategy",
    "SufficiencyChecker",
    "ToolArgumentError",
    "ToolBasedInjectionConfig",
    "ToolBasedInjectionStrategy",
    "ToolDefinition",
    "ToolHandler",
    "ToolRegistry",
    "format_tool_result",
    "merge_by_id",
    "to_anthropic_tool",
    "to_openai_tool",
    "validate_arguments",
]
