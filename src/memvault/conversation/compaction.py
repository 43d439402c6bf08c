"""Compaction: keep a conversation's agent view within a token budget without losing what it said.

Seed 004's deferred summaries, in three steps that :meth:`Compactor.prepare` runs before each
LLM call:

1. **Context pressure**: the agent view's tokens (:func:`~memvault.conversation.models.
   estimate_tokens` per message) over ``token_budget``.
2. **Soft threshold** (default 60%): the tool call/result pairs of the view (an assistant
   message followed by its ``tool`` results) are marked ``pending_summary``: cheap, nothing is
   summarised yet, so a conversation that never reaches the hard threshold never pays for it.
3. **Hard threshold** (default 90%): the marked pairs are summarised and the summaries applied;
   if the view is still above ``target_ratio``, the oldest unpinned turns (all but the last
   ``keep_recent``) are summarised as one block until it is not.

Summaries are *anchored*: a fixed structure (:class:`AnchoredSummary`: goal, decisions,
identifiers, open questions, facts) rather than free prose, so the things a later turn needs
verbatim (a file path, a ticket id, an unanswered question) survive. The **compaction probe**
then asks questions about the replaced messages and answers them from the summary alone; a
summary scoring below ``probe_min_score`` is repaired by adding the failed question/answer pairs
to its facts before it is applied, so what the probe found missing is kept.

With an :class:`~memvault.protocols.LLMProvider` (any OpenAI-compatible endpoint, or the
scripted LLM in tests) summaries and probe questions come from the model via
:func:`~memvault.llm.complete_json`; without one, or when the model fails, a deterministic
extractor builds the summary (identifiers by pattern, decisions and questions by cue words) and
the probe checks that every identifier of the originals is in the summary. Compaction never
deletes a message: replaced messages get ``compacted_at`` and stay in the store.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from memvault.config.conversation import CompactionConfig
from memvault.conversation.models import StoredMessage, estimate_tokens
from memvault.conversation.store import SQLConversationStore
from memvault.llm import complete_json
from memvault.llm.errors import LLMOutputError, ProviderError
from memvault.models import ChatMessage
from memvault.protocols import LLMProvider

__all__ = [
    "AnchoredSummary",
    "CompactionReport",
    "Compactor",
    "ContextPressure",
    "ProbeResult",
    "extract_summary",
    "tool_pairs",
]

logger = logging.getLogger(__name__)

PressureLevel = Literal["ok", "soft", "hard"]

# Identifiers worth keeping verbatim: paths, URLs, ticket/issue ids, versions, emails, hashes,
# snake/camel-case names and numbers with units.
_IDENTIFIER = re.compile(
    r"(?:https?://\S+)"
    r"|(?:[\w.-]+@[\w-]+\.[\w.]+)"
    r"|(?:(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+)"
    r"|(?:\b[A-Z][A-Z0-9]+-\d+\b)"
    r"|(?:#\d+\b)"
    r"|(?:\bv?\d+\.\d+(?:\.\d+)*\b)"
    r"|(?:\b[0-9a-f]{7,40}\b)"
    r"|(?:\b[a-z]+(?:_[a-z0-9]+)+\b)"
    r"|(?:\b[a-z]+(?:[A-Z][a-z0-9]+)+\b)"
    r"|(?:\b\w+\.(?:py|rs|ts|js|md|toml|yaml|yml|json|sql|txt|cfg)\b)"
)
_DECISION = re.compile(
    r"\b(decid\w*|agreed|we will|we'll|let's|going with|chose|choose|use|switch(?:ed)? to|"
    r"plan is|will)\b",
    re.IGNORECASE,
)
# Sentences end at ., ! or ? followed by whitespace (so "v3.2" or "main.py" stay whole).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


class AnchoredSummary(BaseModel):
    """A structured summary of compacted messages (Factory.ai's anchored summarisation).

    ``goal``: what the replaced turns were about; ``decisions``: what was settled;
    ``identifiers``: names, paths, ids and numbers to keep verbatim; ``open_questions``: what
    is still unanswered; ``facts``: anything else a later turn may need.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    goal: str = ""
    decisions: list[str] = Field(default_factory=list)
    identifiers: list[str] = Field(default_factory=list)
    open_questions: list[str] = Field(default_factory=list)
    facts: list[str] = Field(default_factory=list)

    def render(self, replaced: int) -> str:
        """The summary as the text of the summary message."""
        lines = [f"[Summary of {replaced} earlier message(s)]"]
        if self.goal:
            lines.append(f"Goal: {self.goal}")
        for title, items in (
            ("Decisions", self.decisions),
            ("Identifiers", self.identifiers),
            ("Open questions", self.open_questions),
            ("Facts", self.facts),
        ):
            if items:
                lines.append(f"{title}:")
                lines.extend(f"- {item}" for item in items)
        return "\n".join(lines)


class ContextPressure(BaseModel):
    """The agent view's size against the token budget."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokens: int
    budget: int
    ratio: float
    level: PressureLevel


class ProbeItem(BaseModel):
    """One probe question about replaced messages, with the answer they give."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    question: str
    answer: str


class _ProbeQuestions(BaseModel):
    model_config = ConfigDict(extra="ignore")

    items: list[ProbeItem] = Field(default_factory=list)


class _ProbeAnswers(BaseModel):
    model_config = ConfigDict(extra="ignore")

    answers: list[str] = Field(default_factory=list)


class ProbeResult(BaseModel):
    """How well a summary answers questions about what it replaced (score in [0, 1])."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float
    passed: bool
    failed: tuple[ProbeItem, ...] = ()
    method: Literal["llm", "identifiers"] = "identifiers"


class CompactionReport(BaseModel):
    """What one :meth:`Compactor.prepare` did."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    before: ContextPressure
    after: ContextPressure
    marked: int = 0
    summaries: tuple[int, ...] = ()
    compacted: int = 0
    probes: tuple[ProbeResult, ...] = ()
    repaired: int = 0


def tool_pairs(view: Sequence[StoredMessage]) -> list[list[StoredMessage]]:
    """The tool call/result groups of a view: an assistant message and the ``tool`` messages
    right after it (a ``tool`` message without a preceding assistant message stands alone)."""
    groups: list[list[StoredMessage]] = []
    i = 0
    while i < len(view):
        m = view[i]
        if m.kind == "message" and m.role == "assistant" and i + 1 < len(view):
            j = i + 1
            while j < len(view) and view[j].role == "tool" and view[j].kind == "message":
                j += 1
            if j > i + 1:
                groups.append(list(view[i:j]))
                i = j
                continue
        if m.kind == "message" and m.role == "tool":
            groups.append([m])
        i += 1
    return groups


def _dedup(items: Sequence[str], limit: int) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        text = item.strip()
        if text and text.lower() not in {k.lower() for k in seen}:
            seen[text] = None
    return list(seen)[:limit]


def identifiers_of(text: str) -> list[str]:
    """The identifiers of ``text`` a summary must keep verbatim (see ``_IDENTIFIER``)."""
    return _dedup([m.group(0).rstrip(".,;:)") for m in _IDENTIFIER.finditer(text)], 50)


def extract_summary(messages: Sequence[StoredMessage | ChatMessage]) -> AnchoredSummary:
    """A deterministic anchored summary (no LLM): identifiers by pattern, decisions and open
    questions by cue, the first user request as the goal."""
    goal = ""
    decisions: list[str] = []
    questions: list[str] = []
    facts: list[str] = []
    identifiers: list[str] = []
    for m in messages:
        text = m.content
        identifiers += identifiers_of(text)
        for sentence in (s.strip() for s in _SENTENCE_END.split(text)):
            if not sentence:
                continue
            if sentence.endswith("?"):
                questions.append(sentence)
            elif _DECISION.search(sentence):
                decisions.append(sentence)
        if not goal and m.role == "user":
            goal = text.strip().splitlines()[0][:200] if text.strip() else ""
        if m.role == "tool":
            facts.append(f"tool result: {text.strip()[:200]}")
    answered = " ".join(m.content.lower() for m in messages if m.role == "assistant")
    # A question counts as open unless a later assistant message repeats its key words.
    open_q = [
        q
        for q in questions
        if not all(w in answered for w in re.findall(r"\w{5,}", q.lower())[:3])
        or not re.findall(r"\w{5,}", q.lower())
    ]
    return AnchoredSummary(
        goal=goal,
        decisions=_dedup(decisions, 10),
        identifiers=_dedup(identifiers, 50),
        open_questions=_dedup(open_q, 10),
        facts=_dedup(facts, 10),
    )


def _overlap(expected: str, given: str) -> float:
    want = set(re.findall(r"\w+", expected.lower()))
    if not want:
        return 1.0
    return len(want & set(re.findall(r"\w+", given.lower()))) / len(want)


def _transcript(messages: Sequence[StoredMessage]) -> str:
    return "\n".join(f"{m.role}: {m.content}" for m in messages)


class Compactor:
    """Measures and relieves context pressure of conversations in ``store``.

    ``llm`` (optional) writes summaries and probe questions; without it (or when it fails)
    the deterministic extractor and the identifier probe are used, so compaction always works.
    """

    def __init__(
        self,
        store: SQLConversationStore,
        config: CompactionConfig | None = None,
        *,
        llm: LLMProvider | None = None,
    ) -> None:
        self._store = store
        self._config = config or CompactionConfig()
        self._llm = llm

    @property
    def config(self) -> CompactionConfig:
        """The thresholds and budget."""
        return self._config

    def pressure_of(self, view: Sequence[StoredMessage]) -> ContextPressure:
        """The pressure of an agent view."""
        tokens = sum(m.tokens for m in view)
        ratio = tokens / self._config.token_budget
        level: PressureLevel = (
            "hard"
            if ratio >= self._config.hard_threshold
            else "soft"
            if ratio >= self._config.soft_threshold
            else "ok"
        )
        return ContextPressure(
            tokens=tokens, budget=self._config.token_budget, ratio=ratio, level=level
        )

    async def pressure(self, agent_id: str, session_id: str) -> ContextPressure:
        """The current pressure of the session's agent view."""
        return self.pressure_of(await self._store.messages(agent_id, session_id))

    async def mark_tool_pairs(self, agent_id: str, session_id: str) -> int:
        """Mark the view's tool call/result pairs for a deferred summary (the soft step)."""
        view = await self._store.messages(agent_id, session_id)
        recent = {m.message_id for m in view[len(view) - self._config.keep_recent :]}
        ids = [
            m.message_id
            for group in tool_pairs(view)
            if not any(m.message_id in recent or m.metadata.focus_pinned for m in group)
            for m in group
            if not m.pending_summary
        ]
        return await self._store.mark_pending(agent_id, session_id, ids) if ids else 0

    async def prepare(self, agent_id: str, session_id: str) -> CompactionReport:
        """Run before each LLM call: soft step at the soft threshold, summaries at the hard one.

        Returns what was done; the agent view read afterwards is what to send to the model.
        """
        view = await self._store.messages(agent_id, session_id)
        before = self.pressure_of(view)
        if before.level == "ok":
            return CompactionReport(before=before, after=before)
        marked = await self.mark_tool_pairs(agent_id, session_id)
        if before.level == "soft":
            return CompactionReport(before=before, after=before, marked=marked)
        summaries: list[int] = []
        probes: list[ProbeResult] = []
        compacted = 0
        repaired = 0
        view = await self._store.messages(agent_id, session_id)
        # 1. The deferred tool pairs, one summary per consecutive run of marked messages.
        for run in self._runs([m for m in view if m.pending_summary], view):
            made = await self._summarise(agent_id, session_id, run)
            if made is None:
                continue
            stored, probe, fixed = made
            summaries.append(stored)
            probes.append(probe)
            compacted += len(run)
            repaired += fixed
        # 2. Still too full: the oldest turns, as one block, until under the target.
        view = await self._store.messages(agent_id, session_id)
        pressure = self.pressure_of(view)
        target = self._config.target_ratio * self._config.token_budget
        if pressure.ratio > self._config.target_ratio:
            candidates = view[: max(0, len(view) - self._config.keep_recent)]
            block: list[StoredMessage] = []
            excess = pressure.tokens - target
            freed = 0
            for m in candidates:
                if m.metadata.focus_pinned or m.kind == "summary":
                    if block:
                        break  # a summary replaces a contiguous run only
                    continue
                block.append(m)
                freed += m.tokens
                if freed - self._config.max_summary_tokens >= excess:
                    break
            if len(block) >= 2 or (block and freed > self._config.max_summary_tokens):
                made = await self._summarise(agent_id, session_id, block)
                if made is not None:
                    stored, probe, fixed = made
                    summaries.append(stored)
                    probes.append(probe)
                    compacted += len(block)
                    repaired += fixed
        after = self.pressure_of(await self._store.messages(agent_id, session_id))
        logger.info(
            "conversation.compacted agent=%s session=%s before=%.2f after=%.2f summaries=%d",
            agent_id,
            session_id,
            before.ratio,
            after.ratio,
            len(summaries),
            extra={"event": "conversation.compacted", "agent_id": agent_id},
        )
        return CompactionReport(
            before=before,
            after=after,
            marked=marked,
            summaries=tuple(summaries),
            compacted=compacted,
            probes=tuple(probes),
            repaired=repaired,
        )

    @staticmethod
    def _runs(
        marked: Sequence[StoredMessage], view: Sequence[StoredMessage]
    ) -> list[list[StoredMessage]]:
        index = {m.message_id: i for i, m in enumerate(view)}
        runs: list[list[StoredMessage]] = []
        for m in marked:
            if runs and index[m.message_id] == index[runs[-1][-1].message_id] + 1:
                runs[-1].append(m)
            else:
                runs.append([m])
        return runs

    async def _summarise(
        self, agent_id: str, session_id: str, block: Sequence[StoredMessage]
    ) -> tuple[int, ProbeResult, int] | None:
        """Summarise ``block`` and apply the summary; None (nothing applied) when the summary
        would not be shorter than what it replaces (short turns: compacting them would only
        grow the context)."""
        summary = await self.summarize(block)
        probe = await self.probe(block, summary)
        fixed = 0
        if not probe.passed and probe.failed:
            summary = summary.model_copy(
                update={
                    "facts": [
                        *summary.facts,
                        *(f"{item.question} {item.answer}" for item in probe.failed),
                    ]
                }
            )
            fixed = 1
        text = summary.render(len(block))
        if estimate_tokens(text) >= sum(m.tokens for m in block):
            logger.info(
                "conversation.summary.skipped: %d message(s) are shorter than their summary",
                len(block),
                extra={"event": "conversation.summary.skipped", "agent_id": agent_id},
            )
            return None
        stored = await self._store.apply_summary(
            agent_id, session_id, [m.message_id for m in block], text
        )
        return stored.message_id, probe, fixed

    async def summarize(self, messages: Sequence[StoredMessage]) -> AnchoredSummary:
        """An anchored summary of ``messages`` (the LLM's, else the deterministic one).

        The identifiers of the originals are always merged in: a model that paraphrases a path
        or an id away would make the summary useless for the turn that needs it.
        """
        fallback = extract_summary(messages)
        if self._llm is None:
            return fallback
        prompt = [
            ChatMessage(
                role="system",
                content=(
                    "You compact an agent's conversation. Summarise the messages below into "
                    "the goal, the decisions taken, the identifiers (file paths, ids, names, "
                    "numbers; copied verbatim), the open questions and any other facts a later "
                    "turn may need. Be brief; never invent anything."
                ),
            ),
            ChatMessage(role="user", content=_transcript(messages)),
        ]
        try:
            made = await complete_json(
                self._llm,
                prompt,
                schema=AnchoredSummary,
                max_tokens=self._config.max_summary_tokens,
            )
        except (ProviderError, LLMOutputError) as exc:
            logger.warning(
                "conversation.summary.fallback: %s",
                exc,
                extra={"event": "conversation.summary.fallback"},
            )
            return fallback
        return made.model_copy(
            update={"identifiers": _dedup([*made.identifiers, *fallback.identifiers], 50)}
        )

    async def probe(
        self, messages: Sequence[StoredMessage], summary: AnchoredSummary
    ) -> ProbeResult:
        """Check that ``summary`` still answers questions about ``messages``.

        With an LLM: it writes ``probe_questions`` question/answer pairs from the originals,
        then answers the questions from the summary alone; an answer counts when it holds at
        least half the words of the expected one. Without an LLM (or when it fails): every
        identifier of the originals must appear in the summary. The score is the share
        answered; ``passed`` when it reaches ``probe_min_score``.
        """
        text = summary.render(len(messages))
        if not self._config.probe:
            return ProbeResult(score=1.0, passed=True)
        if self._llm is not None:
            try:
                return await self._llm_probe(messages, text)
            except (ProviderError, LLMOutputError) as exc:
                logger.warning(
                    "conversation.probe.fallback: %s",
                    exc,
                    extra={"event": "conversation.probe.fallback"},
                )
        wanted = identifiers_of(" ".join(m.content for m in messages))
        if not wanted:
            return ProbeResult(score=1.0, passed=True)
        missing = [w for w in wanted if w not in text]
        score = 1.0 - len(missing) / len(wanted)
        failed = tuple(
            ProbeItem(question="Which identifier was mentioned?", answer=w) for w in missing
        )
        return ProbeResult(score=score, passed=score >= self._config.probe_min_score, failed=failed)

    async def _llm_probe(self, messages: Sequence[StoredMessage], summary: str) -> ProbeResult:
        assert self._llm is not None
        asked = await complete_json(
            self._llm,
            [
                ChatMessage(
                    role="system",
                    content=(
                        f"Write {self._config.probe_questions} short factual questions that the "
                        "conversation below answers, each with its answer taken from the text."
                    ),
                ),
                ChatMessage(role="user", content=_transcript(messages)),
            ],
            schema=_ProbeQuestions,
        )
        items = asked.items[: self._config.probe_questions]
        if not items:
            return ProbeResult(score=1.0, passed=True, method="llm")
        answered = await complete_json(
            self._llm,
            [
                ChatMessage(
                    role="system",
                    content=(
                        "Answer each question using only the summary below; answer 'unknown' "
                        "when the summary does not say.\n\n" + summary
                    ),
                ),
                ChatMessage(
                    role="user",
                    content="\n".join(f"{i + 1}. {item.question}" for i, item in enumerate(items)),
                ),
            ],
            schema=_ProbeAnswers,
        )
        answers = [*answered.answers, *[""] * len(items)][: len(items)]
        failed = tuple(
            item
            for item, given in zip(items, answers, strict=True)
            if _overlap(item.answer, given) < 0.5
        )
        score = 1.0 - len(failed) / len(items)
        return ProbeResult(
            score=score,
            passed=score >= self._config.probe_min_score,
            failed=failed,
            method="llm",
        )


def summary_tokens(summary: AnchoredSummary, replaced: int) -> int:
    """The token estimate of a rendered summary."""
    return estimate_tokens(summary.render(replaced))
