"""Graph memory and the other Zeph memory features of seed 004.

* :mod:`memvault.config.graph`: the ``graph``, ``tiered_recall``, ``forgetting`` and
  ``importance`` sections (with the other section models of :mod:`memvault.config`);
* :mod:`memvault.graph.extract`: entity and typed-edge extraction (rules, or an LLM);
* :mod:`memvault.graph.store`: the side tables (SQLite, PostgreSQL, in process);
* :mod:`memvault.graph.recall`: BFS and spreading activation;
* :mod:`memvault.graph.causal`: EM-Graph causal and temporal links between memories;
* :mod:`memvault.graph.memory`: :class:`GraphMemory`, the graph of one store;

Optical forgetting (:mod:`memvault.learning.forgetting`) and the promotion of dense regions to
skills (:mod:`memvault.learning.promotion`) drive the approval queue, so they live in
:mod:`memvault.learning`, above the graph.

This module imports nothing itself, so the configuration can import the settings without the
rest; the public names resolve on first access.
"""

from __future__ import annotations

from memvault._lazy import lazy_attributes

__all__ = [
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
    "EpisodeLink": "memvault.graph.models",
    "GraphConfig": "memvault.config.graph",
    "GraphEdge": "memvault.graph.models",
    "GraphEntity": "memvault.graph.models",
    "GraphMemory": "memvault.graph.memory",
    "GraphRecall": "memvault.graph.models",
    "LLMExtractor": "memvault.graph.extract",
    "RecallMode": "memvault.graph.models",
    "RuleExtractor": "memvault.graph.extract",
}


__getattr__ = lazy_attributes(__name__, _WHERE)
