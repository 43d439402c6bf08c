"""Agents that learn: procedural lessons from failures and successes, a cross-agent skill pool,
organisational memory and a human approval queue (issue 16; design seeds 001 and 003).

* :class:`LearningEngine` (``engine``) is what :class:`memvault.AsyncMemory` uses:
  ``learn_from(outcome)`` after every task, pooled skills and core policies for injection,
  the evolver, approvals, pruning;
* ``proposer`` / ``capture``: :class:`ProceduralMemoryProposer`, :class:`SuccessMemoryProposer`
  and the failure / success / hybrid capture strategies;
* ``pruning`` (TTL, Pareto, hybrid) and ``propagation`` (none, role, department) are pure;
* ``evolver``: :class:`AutonomousSkillEvolver` and :class:`TrajectoryAggregator`;
* ``org``: :class:`OrgMemoryBackend` and its default implementation;
* ``store`` (+ ``sqlite``, ``postgres``, ``factory``): the records the layer keeps (approvals,
  agent profiles, trajectories, skill applications) on every store kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memvault._lazy import lazy_attributes

if TYPE_CHECKING:
    from memvault.learning.capture import (
        CaptureStrategy,
        FailureCaptureStrategy,
        HybridCaptureStrategy,
        SuccessCaptureStrategy,
        capture_strategy,
    )
    from memvault.learning.engine import LearningEngine, PooledSkill
    from memvault.learning.evolver import (
        AutonomousSkillEvolver,
        TrajectoryAggregator,
        check_supersession,
    )
    from memvault.learning.factory import open_learning_store
    from memvault.learning.models import (
        ORG_POOL,
        AgentProfile,
        ApprovalItem,
        ApprovalStatus,
        EvolverReport,
        FailureAnalysisPayload,
        LearnReport,
        OrgFact,
        OrgFactAuthor,
        OrgFactKind,
        OrgFactWriteRequest,
        OrgMemoryQuery,
        ProceduralMemoryProposal,
        ProceduralMemoryScope,
        PruneReport,
        Seniority,
        SupersessionVerdict,
        TaskOutcome,
        ToolCallRecord,
        Trajectory,
        is_pool_id,
    )
    from memvault.learning.org import HybridPromptRetrievalOrgMemory, OrgMemoryBackend
    from memvault.learning.propagation import (
        DepartmentScopedPropagation,
        NoPropagation,
        PropagationStrategy,
        RoleScopedPropagation,
    )
    from memvault.learning.proposer import ProceduralMemoryProposer, SuccessMemoryProposer
    from memvault.learning.pruning import (
        HybridPruningStrategy,
        ParetoPruningStrategy,
        PruningStrategy,
        TtlPruningStrategy,
    )
    from memvault.learning.store import InMemoryLearningStore, LearningStore

__all__ = [
    "ORG_POOL",
    "AgentProfile",
    "ApprovalItem",
    "ApprovalStatus",
    "AutonomousSkillEvolver",
    "CaptureStrategy",
    "DepartmentScopedPropagation",
    "EvolverReport",
    "FailureAnalysisPayload",
    "FailureCaptureStrategy",
    "HybridCaptureStrategy",
    "HybridPromptRetrievalOrgMemory",
    "HybridPruningStrategy",
    "InMemoryLearningStore",
    "LearnReport",
    "LearningEngine",
    "LearningStore",
    "NoPropagation",
    "OrgFact",
    "OrgFactAuthor",
    "OrgFactKind",
    "OrgFactWriteRequest",
    "OrgMemoryBackend",
    "OrgMemoryQuery",
    "ParetoPruningStrategy",
    "PooledSkill",
    "ProceduralMemoryProposal",
    "ProceduralMemoryProposer",
    "ProceduralMemoryScope",
    "PropagationStrategy",
    "PruneReport",
    "PruningStrategy",
    "RoleScopedPropagation",
    "Seniority",
    "SuccessCaptureStrategy",
    "SuccessMemoryProposer",
    "SupersessionVerdict",
    "TaskOutcome",
    "ToolCallRecord",
    "Trajectory",
    "TrajectoryAggregator",
    "TtlPruningStrategy",
    "capture_strategy",
    "check_supersession",
    "is_pool_id",
    "open_learning_store",
]


_WHERE = {
    "AgentProfile": "memvault.learning.models",
    "ApprovalItem": "memvault.learning.models",
    "ApprovalStatus": "memvault.learning.models",
    "AutonomousSkillEvolver": "memvault.learning.evolver",
    "CaptureStrategy": "memvault.learning.capture",
    "DepartmentScopedPropagation": "memvault.learning.propagation",
    "EvolverReport": "memvault.learning.models",
    "FailureAnalysisPayload": "memvault.learning.models",
    "FailureCaptureStrategy": "memvault.learning.capture",
    "HybridCaptureStrategy": "memvault.learning.capture",
    "HybridPromptRetrievalOrgMemory": "memvault.learning.org",
    "HybridPruningStrategy": "memvault.learning.pruning",
    "InMemoryLearningStore": "memvault.learning.store",
    "LearnReport": "memvault.learning.models",
    "LearningEngine": "memvault.learning.engine",
    "LearningStore": "memvault.learning.store",
    "NoPropagation": "memvault.learning.propagation",
    "ORG_POOL": "memvault.learning.models",
    "OrgFact": "memvault.learning.models",
    "OrgFactAuthor": "memvault.learning.models",
    "OrgFactKind": "memvault.learning.models",
    "OrgFactWriteRequest": "memvault.learning.models",
    "OrgMemoryBackend": "memvault.learning.org",
    "OrgMemoryQuery": "memvault.learning.models",
    "ParetoPruningStrategy": "memvault.learning.pruning",
    "PooledSkill": "memvault.learning.engine",
    "ProceduralMemoryProposal": "memvault.learning.models",
    "ProceduralMemoryProposer": "memvault.learning.proposer",
    "ProceduralMemoryScope": "memvault.learning.models",
    "PropagationStrategy": "memvault.learning.propagation",
    "PruneReport": "memvault.learning.models",
    "PruningStrategy": "memvault.learning.pruning",
    "RoleScopedPropagation": "memvault.learning.propagation",
    "Seniority": "memvault.learning.models",
    "SuccessCaptureStrategy": "memvault.learning.capture",
    "SuccessMemoryProposer": "memvault.learning.proposer",
    "SupersessionVerdict": "memvault.learning.models",
    "TaskOutcome": "memvault.learning.models",
    "ToolCallRecord": "memvault.learning.models",
    "Trajectory": "memvault.learning.models",
    "TrajectoryAggregator": "memvault.learning.evolver",
    "TtlPruningStrategy": "memvault.learning.pruning",
    "capture_strategy": "memvault.learning.capture",
    "check_supersession": "memvault.learning.evolver",
    "is_pool_id": "memvault.learning.models",
    "open_learning_store": "memvault.learning.factory",
}


__getattr__ = lazy_attributes(__name__, _WHERE)
