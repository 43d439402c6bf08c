"""``memvault config show`` and ``memvault init``: see the resolved configuration, scaffold one.

``config show`` prints every key of the configuration the other commands would use (``--db``,
``--config``, ``MEMVAULT_*``, ``./memvault.yaml``) with where its value came from; it opens no
store. ``init`` writes a commented ``memvault.yaml`` from a template; every template loads with
:func:`memvault.config.load_config` as written.
"""

from __future__ import annotations

import json
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from memvault.cli._common import JsonOption, emit_json, out, state
from memvault.config.sources import ConfigSources, config_sources
from memvault.errors import MemoryConfigError
from memvault.models import MemoryLevel

__all__ = ["TEMPLATES", "Template", "config_app", "register", "render_yaml"]

config_app = typer.Typer(
    name="config",
    help="The resolved configuration and where each value came from.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)


# -- config show ----------------------------------------------------------------------------------

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def _scalar(value: Any) -> str:
    # JSON scalars and flow collections are valid YAML, and unambiguous (quoted strings).
    return json.dumps(value, ensure_ascii=False)


def _key(name: str) -> str:
    return name if _PLAIN_KEY.match(name) else json.dumps(name, ensure_ascii=False)


def render_yaml(shown: ConfigSources) -> str:
    """The resolved configuration as YAML under ``memory:``, each value's source in a comment."""
    lines = [
        f"# store: {shown.url}",
        f"# file: {shown.file or '(none)'}",
        "memory:",
    ]

    def walk(node: dict[str, Any], path: tuple[str, ...], depth: int) -> None:
        pad = "  " * depth
        for name, value in node.items():
            key = (*path, str(name))
            if isinstance(value, dict) and value:
                lines.append(f"{pad}{_key(str(name))}:")
                walk(value, key, depth + 1)
                continue
            source = shown.sources.get(".".join(key))
            label = source.label() if source is not None else "default"
            lines.append(f"{pad}{_key(str(name))}: {_scalar(value)}  # {label}")

    walk(shown.config.model_dump(mode="json"), (), 1)
    return "\n".join(lines) + "\n"


@config_app.command("show")
def show(json_out: bool = JsonOption) -> None:
    """Print the resolved configuration with the source of each value (default, file, env)."""
    shown = config_sources(state.config, url=state.db, default_level=MemoryLevel.PERSISTENT)
    if json_out:
        emit_json(
            {
                "url": shown.url,
                "file": shown.file,
                "config": shown.config.model_dump(mode="json"),
                "sources": {key: s.to_json() for key, s in shown.sources.items()},
            }
        )
        return
    out.print(render_yaml(shown), end="", markup=False)


# -- init -----------------------------------------------------------------------------------------


class Template(StrEnum):
    """The starting points of ``memvault init``."""

    LOCAL = "local"
    POSTGRES = "postgres"
    SYNTHORG = "synthorg"
    INITRUNNER = "initrunner"


_LOCAL = """\
# memvault.yaml: one SQLite file on this machine (memvault's embedded default).
# Every key may be overridden by MEMVAULT_<SECTION>__<KEY> variables; see `memvault config show`.
memory:
  # none | session | project | persistent. A storage location below already means persistent;
  # without one the library keeps memories in the process (session).
  level: persistent
  backend: sqlite
  storage:
    url: ~/.memvault/memvault.db    # a path or sqlite:///path.db
    # process: survives a crash of the process; power: also a power cut (fsync on every commit,
    # about 4 ms a write instead of 0.4 ms). storage.synchronous: normal | full overrides it.
    durability: process
  options:
    retention_days: null            # null = keep forever
    max_memories_per_agent: 10000   # the weakest are evicted beyond this
    consolidation_interval: daily   # hourly | daily | weekly | after_session | manual | never
    shared_knowledge_base: true     # agents may publish to and search shared knowledge
  embedder: default                 # bundled offline MiniLM; or openai:<model>, hashing:<dim>
  retrieval:
    preset: default
    strategy: context               # context | tool_based | self_editing
  consolidation:
    strategy: simple                # simple (no LLM) | llm | dual_mode | extract
"""

_POSTGRES = """\
# memvault.yaml: a PostgreSQL database with pgvector (pip install 'memvault[postgres]').
memory:
  level: persistent
  backend: postgresql
  storage:
    # The password is better kept out of this file: libpq reads PGPASSWORD or ~/.pgpass.
    url: postgresql://memvault@localhost:5432/memvault
  options:
    retention_days: null            # null = keep forever
    max_memories_per_agent: 10000
    consolidation_interval: daily
    shared_knowledge_base: true
  embedder: default
  retrieval:
    preset: default
    strategy: context
  maintenance:
    enabled: true                   # `memvault serve` runs consolidation and sweeps on schedule
"""

_SYNTHORG = """\
# memvault.yaml in the shape of SynthOrg's memory configuration.
memory:
  # Persistence per agent: none | session | project | persistent (default: session).
  level: persistent
  # mem0 (the seed's default) needs `pip install 'memvault[mem0]'`; qdrant needs
  # 'memvault[qdrant]'; sqlite and postgresql are built in; inmemory and composite also work.
  backend: mem0
  # Where the store lives. mem0 keeps its own embedded Qdrant and SQLite history here.
  storage:
    data_dir: ~/.memvault/mem0      # in Docker: the mounted volume, e.g. /data/memory
    vector_store: qdrant            # fixed by the mem0 backend; recorded only
    history_store: sqlite           # fixed by the mem0 backend; recorded only
  # Behaviour tuning.
  options:
    retention_days: null            # null = forever
    max_memories_per_agent: 10000
    consolidation_interval: daily   # hourly | daily | weekly | never
    shared_knowledge_base: true     # agents can access shared facts
  # Consolidation (ConsolidationConfig): strategy, retention, archival, LLM synthesis.
  consolidation:
    strategy: simple                # simple | llm | dual_mode (llm and dual_mode need an LLM)
    max_memories_per_agent: 10000   # same as options.max_memories_per_agent (options wins)
    # RetentionConfig: per-category rules and a default for the rest.
    retention:
      rules:
        - {category: episodic, retention_days: 90}
        - {category: working, retention_days: 1}
      default_retention_days: null  # same as options.retention_days (options wins)
    # ArchivalConfig: consolidated entries always go to the archive (restorable by id).
    archival:
      enabled: true
      # DualModeConfig: dense content (code, ids, numbers) is kept verbatim, prose summarised.
      dual_mode:
        enabled: false              # true makes dual_mode the default strategy
        threshold: 0.3
        summarization_model: null
        max_facts: 10
        anchor_chars: 300
    # LLMConsolidationConfig: tuning of the llm strategy.
    llm:
      group_threshold: 3            # minimum 3
      temperature: 0.3
      max_summary_tokens: 500
      include_distillation_context: true
      max_entry_input_chars: 2000
      max_total_user_content_chars: 20000
  # Per-agent retention (MemoryConfig.retention_overrides and retention_days).
  retention_overrides:
    example-agent:
      retention_days: 30
      retention_overrides:
        - {category: episodic, retention_days: 7}
  # Embedding provider (Mem0EmbedderConfig). An empty provider keeps the bundled offline model;
  # openai or a base_url use an OpenAI-compatible endpoint with the key from $OPENAI_API_KEY.
  embedder:
    provider: ""
    model: ""
    dims: null
  retrieval:
    preset: default
    strategy: context               # context | tool_based | self_editing
  # Procedural memory auto-generation from task outcomes.
  procedural:
    enabled: true
    min_confidence: 0.5
    capture: {type: failure}        # failure | success | hybrid
    pruning: {strategy: hybrid, max_age_days: 90}
    propagation: {strategy: none, max_propagation_targets: 10}
    evolver: {enabled: false, min_agents_seen_pattern: 3}
  # Shared organisational memory: core policies in every prompt, the rest retrieved.
  org_memory:
    backend: hybrid_prompt_retrieval
    core_policies: []
    extended_store: {max_retrieved_per_query: 5}
"""

_INITRUNNER = """\
# An InitRunner role file: memvault reads spec.memory (load it with --config role.yaml).
apiVersion: initrunner/v1
kind: Agent
metadata:
  name: assistant
  description: Agent with rich memory
spec:
  memory:
    max_sessions: 10              # sessions kept per agent
    max_resume_messages: 20       # messages loaded on resume
    store_backend: sqlite-vec     # memvault stores it in SQLite
    # null: memvault's default store ~/.memvault/memvault.db (not InitRunner's
    # ~/.initrunner/memory/<agent-name>.db); give a path to use another file.
    store_path: null
    embeddings:
      provider: ""                # "": memvault's bundled offline model; openai: OpenAI
      model: ""
      base_url: ""                # any OpenAI-compatible endpoint
      api_key_env: ""             # variable holding the key (default OPENAI_API_KEY)
    episodic:
      enabled: true
      max_episodes: 500
    semantic:
      enabled: true
      max_memories: 1000
    procedural:
      enabled: true
      max_procedures: 100
    consolidation:
      enabled: true
      interval: after_session     # after_session | after_autonomous | manual
      max_episodes_per_run: 20
      model_override: null        # model of the consolidation LLM calls
"""

TEMPLATES: dict[Template, str] = {
    Template.LOCAL: _LOCAL,
    Template.POSTGRES: _POSTGRES,
    Template.SYNTHORG: _SYNTHORG,
    Template.INITRUNNER: _INITRUNNER,
}
"""The text ``memvault init`` writes for each template."""


def init(
    template: Annotated[
        Template, typer.Option("--template", "-t", help="Which configuration to start from.")
    ] = Template.LOCAL,
    output: Annotated[
        Path, typer.Option("--output", "-o", help="File to write.", dir_okay=False)
    ] = Path("memvault.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented memvault.yaml (templates: local, postgres, synthorg, initrunner)."""
    if output.exists() and not force:
        msg = f"{output} already exists; pass --force to overwrite it"
        raise MemoryConfigError(msg)
    try:
        output.write_text(TEMPLATES[template], encoding="utf-8")
    except OSError as exc:
        msg = f"cannot write {output}: {exc.strerror or exc}"
        raise MemoryConfigError(msg) from exc
    out.print(f"wrote {output} (template {template.value})", markup=False)


def register(app: typer.Typer) -> None:
    """Attach ``memvault config show`` and ``memvault init`` to ``app``."""
    app.add_typer(config_app, name="config")
    app.command("init")(init)
