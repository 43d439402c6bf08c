"""Capture strategies: which finished tasks become lessons, and through which proposer.

``FailureCaptureStrategy`` fires on failed tasks (the proposer pipeline of the design),
``SuccessCaptureStrategy`` on successful ones of high quality (``success-derived`` lessons) and
``HybridCaptureStrategy`` delegates by outcome. :func:`capture_strategy` builds the one
``procedural.capture`` names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from memvault.config import CaptureConfig, CaptureType, ProceduralMemoryConfig
from memvault.learning.models import (
    FAILURE_TAG,
    SUCCESS_TAG,
    FailureAnalysisPayload,
    ProceduralMemoryProposal,
    TaskOutcome,
)
from memvault.learning.proposer import ProceduralMemoryProposer, SuccessMemoryProposer
from memvault.protocols import LLMProvider

__all__ = [
    "CaptureResult",
    "CaptureStrategy",
    "FailureCaptureStrategy",
    "HybridCaptureStrategy",
    "SuccessCaptureStrategy",
    "capture_strategy",
    "percentile",
]

_MIN_HISTORY = 4  # fewer recent scores than this say nothing about a percentile


@dataclass(frozen=True, slots=True)
class CaptureResult:
    """A strategy's answer: a proposal with its tag, or None and why not."""

    proposal: ProceduralMemoryProposal | None
    reason: str
    tag: str = FAILURE_TAG


class CaptureStrategy(Protocol):
    """Decides whether a task outcome becomes a lesson, and proposes it."""

    @property
    def name(self) -> str:
        """``failure``, ``success`` or ``hybrid``."""
        ...

    async def capture(
        self,
        outcome: TaskOutcome,
        payload: FailureAnalysisPayload,
        *,
        recent_scores: Sequence[float] = (),
    ) -> CaptureResult:
        """The lesson ``outcome`` teaches, or a result without one (and the reason)."""
        ...


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct`` percentile (0-100) of ``values`` by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = (len(ordered) - 1) * pct / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


class FailureCaptureStrategy:
    """Learns from failed tasks through :class:`ProceduralMemoryProposer`."""

    def __init__(self, proposer: ProceduralMemoryProposer) -> None:
        self._proposer = proposer

    @property
    def name(self) -> str:
        """``failure``."""
        return "failure"

    async def capture(
        self,
        outcome: TaskOutcome,
        payload: FailureAnalysisPayload,
        *,
        recent_scores: Sequence[float] = (),
    ) -> CaptureResult:
        """A failure lesson for a failed task; nothing for a successful one."""
        if outcome.success:
            return CaptureResult(None, "the task succeeded (failure capture)")
        return CaptureResult(await self._proposer.propose(payload), "failure", FAILURE_TAG)


class SuccessCaptureStrategy:
    """Learns from successful tasks whose quality reaches the threshold and the percentile."""

    def __init__(self, proposer: SuccessMemoryProposer, config: CaptureConfig) -> None:
        self._proposer = proposer
        self._config = config

    @property
    def name(self) -> str:
        """``success``."""
        return "success"

    async def capture(
        self,
        outcome: TaskOutcome,
        payload: FailureAnalysisPayload,
        *,
        recent_scores: Sequence[float] = (),
    ) -> CaptureResult:
        """A success lesson for a task good enough to learn from; else the reason why not."""
        if not outcome.success:
            return CaptureResult(None, "the task failed (success capture)")
        score = outcome.quality_score
        if score is None:
            return CaptureResult(None, "no quality_score reported")
        if score < self._config.min_quality_score:
            return CaptureResult(
                None, f"quality {score} below min_quality_score {self._config.min_quality_score}"
            )
        if len(recent_scores) >= _MIN_HISTORY:
            bar = percentile(recent_scores, self._config.success_quality_percentile)
            if score < bar:
                return CaptureResult(
                    None,
                    f"quality {score} below the {self._config.success_quality_percentile:g}th "
                    f"percentile of recent tasks ({bar:.2f})",
                )
        return CaptureResult(await self._proposer.propose(payload), "success", SUCCESS_TAG)


class HybridCaptureStrategy:
    """Failure lessons from failures, success lessons from good successes."""

    def __init__(self, failure: FailureCaptureStrategy, success: SuccessCaptureStrategy) -> None:
        self._failure = failure
        self._success = success

    @property
    def name(self) -> str:
        """``hybrid``."""
        return "hybrid"

    async def capture(
        self,
        outcome: TaskOutcome,
        payload: FailureAnalysisPayload,
        *,
        recent_scores: Sequence[float] = (),
    ) -> CaptureResult:
        """Delegates to the failure or the success strategy by the outcome."""
        chosen: CaptureStrategy = self._success if outcome.success else self._failure
        return await chosen.capture(outcome, payload, recent_scores=recent_scores)


def capture_strategy(llm: LLMProvider, config: ProceduralMemoryConfig) -> CaptureStrategy:
    """The capture strategy ``config.capture.type`` names, over ``llm``."""
    failure = FailureCaptureStrategy(ProceduralMemoryProposer(llm, config))
    success = SuccessCaptureStrategy(SuccessMemoryProposer(llm, config), config.capture)
    kind = config.capture.type
    if kind is CaptureType.SUCCESS:
        return success
    if kind is CaptureType.HYBRID:
        return HybridCaptureStrategy(failure, success)
    return failure
