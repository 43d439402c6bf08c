"""An LLM settles the contested supersessions the rules cannot: does the new memory replace one?

:func:`~memvault.write.plan_write` supersedes an old memory only when its rules read both texts
as statements with different values for one slot (:mod:`memvault.write.supersession`). Some
plausible changes escape them ("Switched to the early rota" against "Works late at the depot").
With ``DedupConfig.mark_contested`` the planner lists, on a plain ADD, the few close neighbours
that may be replaced (``WriteDecision.contested``); :meth:`SupersessionArbiter.settle` asks the
LLM, once per such write, whether the new memory replaces one of them, and turns a yes into a
SUPERSEDE of that id (its reason starts with ``llm``).

The write is never lost or blocked: a "no", an answer that is not the expected JSON, an id that
is not one of the candidates or a provider error leave the decision an ADD (logged at debug).
:class:`memvault.AsyncMemory` uses it when it has an LLM and ``options.llm_supersession`` is on.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from memvault.llm._protocol import complete_json
from memvault.models import ChatMessage, MemoryEntry, MemoryStoreRequest
from memvault.protocols import LLMProvider
from memvault.write.dedup import Vector
from memvault.write.pipeline import WriteDecision, WriteKind

__all__ = ["SupersessionArbiter", "SupersessionVerdict"]

logger = logging.getLogger(__name__)

MAX_CHARS = 1_000
"""How much of each text the prompt quotes."""

_SYSTEM = """You maintain an agent's long-term memory. A new memory is being stored. Decide \
whether it replaces one of the existing memories listed: the new memory states a newer value \
of the same fact about the same person or thing, so the existing memory is no longer true \
(for example "Works the night shift" replaced by "Switched to day shifts").

It does NOT replace a memory when it only adds a detail or another fact, is about someone \
else, describes a one-off event, a visit, a plan, a wish, a question or something uncertain, \
or when both can be true at once. When in doubt, answer null.

Answer with the id of the replaced memory in "supersedes" (exactly as listed), or null, and a \
short "reason"."""


class SupersessionVerdict(BaseModel):
    """The LLM's answer: the id of the memory the new one replaces (None: none), and why."""

    model_config = ConfigDict(extra="ignore")

    supersedes: str | None
    reason: str = ""


def _stamp(entry: MemoryEntry) -> str:
    return (entry.valid_from or entry.created_at).date().isoformat()


def prompt(text: str, candidates: Sequence[MemoryEntry]) -> list[ChatMessage]:
    """The messages that ask whether ``text`` replaces one of ``candidates``."""
    listing = "\n".join(
        f"- id: {entry.id} (stored {_stamp(entry)}): {entry.content[:MAX_CHARS]}"
        for entry in candidates
    )
    user = f"New memory: {text[:MAX_CHARS]}\n\nExisting memories:\n{listing}"
    return [ChatMessage(role="system", content=_SYSTEM), ChatMessage(role="user", content=user)]


class SupersessionArbiter:
    """Asks ``llm`` whether a new memory replaces one of its contested neighbours (fail-open)."""

    def __init__(self, llm: LLMProvider, *, max_tokens: int = 200) -> None:
        self._llm = llm
        self._max_tokens = max_tokens

    async def choose(
        self, text: str, candidates: Sequence[MemoryEntry]
    ) -> SupersessionVerdict | None:
        """The verdict naming the candidate ``text`` replaces, or None (no, or no usable answer).

        Never raises for the LLM's sake: a provider error or an answer that is not the JSON
        asked for, or that names no candidate, is None.
        """
        if not candidates:
            return None
        try:
            verdict = await complete_json(
                self._llm,
                prompt(text, candidates),
                schema=SupersessionVerdict,
                max_tokens=self._max_tokens,
                repair_attempts=0,
            )
        except Exception as exc:  # fail-open: the write goes ahead as an ADD
            logger.debug(
                "memory.supersession.llm_failed",
                extra={"error": f"{type(exc).__name__}: {exc}"[:300]},
            )
            return None
        chosen = (verdict.supersedes or "").strip()
        if not chosen or chosen.lower() in {"null", "none"}:
            return None
        if chosen not in {entry.id for entry in candidates}:
            logger.debug("memory.supersession.llm_unknown_id", extra={"answer": chosen[:100]})
            return None
        return verdict.model_copy(update={"supersedes": chosen})

    async def settle(
        self,
        requests: Sequence[MemoryStoreRequest],
        decisions: Sequence[WriteDecision],
        neighbours: Sequence[Sequence[tuple[MemoryEntry, Vector | None]]],
    ) -> list[WriteDecision]:
        """``decisions`` with each contested ADD the LLM settles made a SUPERSEDE.

        One LLM call per decision with ``contested`` ids (looked up in its ``neighbours``). An
        entry another decision of the batch already supersedes or confirms, or one an earlier
        verdict took, is no candidate.
        """
        taken = {d.old_id for d in decisions if d.kind is WriteKind.SUPERSEDE}
        taken |= {d.duplicate_of for d in decisions if d.kind is WriteKind.NOOP}
        taken |= {d.outdated_by for d in decisions if d.outdated_by is not None}
        out: list[WriteDecision] = []
        for request, decision, near in zip(requests, decisions, neighbours, strict=True):
            if decision.kind is not WriteKind.ADD or decision.outdated_by or not decision.contested:
                out.append(decision)
                continue
            by_id = {entry.id: entry for entry, _ in near}
            candidates = [by_id[i] for i in decision.contested if i in by_id and i not in taken]
            verdict = await self.choose(request.content, candidates)
            if verdict is None or verdict.supersedes is None:
                out.append(decision)
                continue
            taken.add(verdict.supersedes)
            reason = verdict.reason.strip()[:200] or "the new memory replaces it"
            out.append(
                decision.model_copy(
                    update={
                        "kind": WriteKind.SUPERSEDE,
                        "old_id": verdict.supersedes,
                        "detected": True,
                        "reason": f"llm: replaces {verdict.supersedes} ({reason})",
                    }
                )
            )
        return out
