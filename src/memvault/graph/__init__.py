"""Graph memory and the other Zeph memory features of seed 004.

* :mod:`memvault.graph.config`: the ``graph``, ``tiered_recall``, ``forgetting`` and
  ``importance`` sections (pure settings; imported by :mod:`memvault.config`);
* :mod:`memvault.graph.extract`: entity and typed-edge extraction (rules, or an LLM);
* :mod:`memvault.graph.store`: the side tables (SQLite, PostgreSQL, in process);
* :mod:`memvault.graph.recall`: BFS and spreading activation;
* :mod:`memvault.graph.causal`: EM-Graph causal and temporal links between memories;
* :mod:`memvault.graph.memory`: :class:`GraphMemory`, the graph of one store;
* :mod:`memvault.graph.forgetting`: optical forgetting (Full / Compressed / SummaryOnly);
* :mod:`memvault.graph.promotion`: dense graph regions proposed as skills.

This module imports nothing itself, so the configuration can import the settings without the
rest; the public names resolve on first access.
"""

from __future__ import annotations

from memvault._lazy import lazy_attributes

__all__ = [
    "ContentFidelity",
    "EpisodeLink",
    "GraphConfig",
    "GraphEdge",
    "GraphEntity",
    "GraphMemory",
    "GraphRecall",
    "LLMExtractor",
    "RecallMode",
    "RuleExtractor",
]

_WHERE = {
    "ContentFidelity": "memvault.graph.forgetting",
    "EpisodeLink": "memvault.graph.models",
    "GraphConfig": "memvault.graph.config",
    "GraphEdge": "memvault.graph.models",
    "GraphEntity": "memvault.graph.models",
    "GraphMemory": "memvault.graph.memory",
    "GraphRecall": "memvault.graph.models",
    "LLMExtractor": "memvault.graph.extract",
    "RecallMode": "memvault.graph.models",
    "RuleExtractor": "memvault.graph.extract",
}


__getattr__ = lazy_attributes(__name__, _WHERE)
