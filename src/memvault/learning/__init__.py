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
