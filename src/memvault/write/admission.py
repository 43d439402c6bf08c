"""Admission control: should a candidate memory be stored at all? (A-MAC style, six factors.)

Automatic capture sees every turn of a conversation, and most turns ("ok thanks", "sounds good")
are not worth remembering. The controller scores a candidate from six interpretable factors, each
in [0, 1], and admits it when the weighted mean reaches ``threshold``:

``recency``
    How fresh the event is: ``0.5 ** (age / recency_half_life)`` with ``age = now - created_at``
    (1.0 for an event happening now or without a timestamp). Back-filled old chatter scores low;
    an old fact still passes on its content.
``relevance``
    Cosine similarity, clipped to [0, 1], of the candidate's vector to the agent's current
    context or goal vector. Optional: without both vectors the factor is left out and the
    remaining weights are renormalised (it never counts as 0).
``tool_use``
    1.0 when metadata says the content came from a tool call (``source`` "tool"/"tool_call"/
    "tool_result"/"function", or an ``extra`` key such as ``tool_name`` or ``tool_call_id``);
    0.7 when the text carries tool-output markers (a code fence, a traceback, ``exit code``,
    ``stdout``/``stderr``, a ``$`` prompt line, a JSON object); else 0. Tool results are
    observations of the world, worth more than chatter about them.
``entity_density``
    Share of tokens that name something: capitalised words that do not open a sentence,
    all-caps acronyms, numbers, identifiers (``snake_case``, ``camelCase``, ``dotted.names``,
    paths, ``T-12``), e-mail addresses and URLs; ``min(1, share / 0.3)`` so a text in which
    three tokens in ten are entities already scores 1.
``length``
    Informative words (stop words and conversational fillers such as "thanks", "ok", "lol"
    removed): 0 for one or none, rising linearly to 1 at ``min_useful_words``, 1 up to
    ``max_useful_words``, then down to a floor of 0.7 at twice that (a huge dump is still
    admitted, a little less eagerly).
``frequency``
    How often the candidate's entities were mentioned recently: each earlier admitted mention
    counts ``0.5 ** (age / frequency_half_life)`` (:class:`EntityMemory`); with ``c`` the mean
    decayed count per entity, the factor is ``c / (c + 1)`` (0.5 for one fresh mention each).
    Texts without entities score 0.

Scoring never blocks a write: any exception while scoring admits the candidate
(reason ``"scoring failed: ..."``) and logs WARNING ``memory.admission.failed`` (fail-open).

Run summaries are always admitted. Automatic capture (``capture_episode``: an autonomous run's
or a trigger's result summary; ``capture_distillation``: a task's trajectory) records that a run
happened, and the design documents promise that every run leaves one. Such a summary is often
short and entity-poor ("Done.", "No new files."), exactly what the factors score low, so
before this rule a controller could drop it silently. A candidate whose metadata ``source`` is
one of :data:`RUN_SUMMARY_SOURCES` is still scored (the score is reported) but admitted with
reason ``"run summary: always admitted ..."``.
Admission is off for explicit ``add`` calls by default (``apply_to_explicit_add``) and meant for
automatic capture, where the caller passes the controller to
:func:`memvault.write.pipeline.plan_write`.
"""

from __future__ import annotations

import logging
import math
import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict, Field, model_validator

from memvault.models import MemoryMetadata
from memvault.retrieval.text import STOP_WORDS
from memvault.write.dedup import Vector, cosine

__all__ = [
    "RUN_SUMMARY_SOURCES",
    "AdmissionConfig",
    "AdmissionContext",
    "AdmissionController",
    "AdmissionDecision",
    "AdmissionScore",
    "EntityMemory",
    "extract_entities",
    "is_run_summary",
]

logger = logging.getLogger(__name__)

FACTORS = ("recency", "relevance", "tool_use", "entity_density", "length", "frequency")

RUN_SUMMARY_SOURCES = frozenset({"auto_capture", "distillation"})
"""Metadata ``source`` values of run summaries, which admission control never rejects."""

_ENTITY_SATURATION = 0.3
_LONG_FLOOR = 0.7
_TOOL_MARKER_SCORE = 0.7


class AdmissionConfig(BaseModel):
    """Settings of the admission controller (see the module docstring for each factor).

    Weights need not sum to 1: the total is their weighted mean over the factors available.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    enabled: bool = True
    apply_to_explicit_add: bool = False
    threshold: float = Field(default=0.35, ge=0.0, le=1.0)
    recency_weight: float = Field(default=0.10, ge=0.0)
    relevance_weight: float = Field(default=0.20, ge=0.0)
    tool_use_weight: float = Field(default=0.15, ge=0.0)
    entity_density_weight: float = Field(default=0.25, ge=0.0)
    length_weight: float = Field(default=0.20, ge=0.0)
    frequency_weight: float = Field(default=0.10, ge=0.0)
    recency_half_life: timedelta = timedelta(days=7)
    frequency_half_life: timedelta = timedelta(days=3)
    min_useful_words: int = Field(default=3, ge=1)
    max_useful_words: int = Field(default=300, ge=1)

    @model_validator(mode="after")
    def _check(self) -> AdmissionConfig:
        if self.max_useful_words < self.min_useful_words:
            msg = "max_useful_words must be >= min_useful_words"
            raise ValueError(msg)
        if self.recency_half_life <= timedelta(0) or self.frequency_half_life <= timedelta(0):
            msg = "half-lives must be positive"
            raise ValueError(msg)
        if sum(self.weights().values()) <= 0.0:
            msg = "at least one admission weight must be positive"
            raise ValueError(msg)
        return self

    def weights(self) -> dict[str, float]:
        """The six factor weights by factor name."""
        return {
            "recency": self.recency_weight,
            "relevance": self.relevance_weight,
            "tool_use": self.tool_use_weight,
            "entity_density": self.entity_density_weight,
            "length": self.length_weight,
            "frequency": self.frequency_weight,
        }


@dataclass(frozen=True, slots=True)
class AdmissionContext:
    """What the controller may know about a candidate beyond its text.

    ``agent_id`` selects the agent's :class:`EntityMemory`; ``vector`` is the candidate's
    embedding and ``context_vector`` the agent's current goal/context embedding (both needed for
    the relevance factor); ``created_at`` is when the event happened (default: now);
    ``metadata`` feeds the tool-use factor.
    """

    agent_id: str | None = None
    vector: Vector | None = None
    context_vector: Vector | None = None
    created_at: datetime | None = None
    metadata: MemoryMetadata | None = None


class AdmissionScore(BaseModel):
    """Per-factor scores of one candidate and their weighted total, all in [0, 1].

    ``relevance`` is None when it could not be computed (no vectors); it then took no part in
    ``total``. ``entities`` are the entity keys found (lower-case).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    recency: float
    relevance: float | None
    tool_use: float
    entity_density: float
    length: float
    frequency: float
    total: float
    entities: tuple[str, ...] = ()

    def factors(self) -> dict[str, float | None]:
        """The six factor scores by name."""
        return {name: getattr(self, name) for name in FACTORS}


class AdmissionDecision(BaseModel):
    """Whether a candidate is admitted, its score (None when scoring failed or is off), and why."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    admitted: bool
    score: AdmissionScore | None
    reason: str


class EntityMemory:
    """Recent mentions of entities, with exponential decay, for the frequency factor.

    For each entity it keeps one decayed count and the time of the latest mention: a mention at
    ``t`` adds 1 at ``t``, and the count at ``now`` is the sum of ``0.5 ** ((now - t_i) /
    half_life)`` over mentions — exact for exponential decay in O(1) memory per entity. When more
    than ``max_entities`` are tracked, the faintest tenth is forgotten.
    """

    def __init__(self, *, half_life: timedelta, max_entities: int = 10_000) -> None:
        """Track up to ``max_entities`` entities; a mention's weight halves every ``half_life``."""
        if half_life <= timedelta(0):
            msg = "half_life must be positive"
            raise ValueError(msg)
        if max_entities < 1:
            msg = "max_entities must be >= 1"
            raise ValueError(msg)
        self._half_life_s = half_life.total_seconds()
        self._max = max_entities
        self._counts: dict[str, tuple[float, datetime]] = {}

    def __len__(self) -> int:
        """Number of entities tracked."""
        return len(self._counts)

    def _decay(self, seconds: float) -> float:
        return float(0.5 ** (seconds / self._half_life_s))

    def record(self, entities: Iterable[str], at: datetime) -> None:
        """Count one mention of each distinct entity at ``at``."""
        for key in dict.fromkeys(entities):
            current = self._counts.get(key)
            if current is None:
                self._counts[key] = (1.0, at)
                continue
            count, last = current
            if at >= last:
                self._counts[key] = (count * self._decay((at - last).total_seconds()) + 1.0, at)
            else:
                # An older mention arriving late (back-filled history) adds its decayed weight.
                self._counts[key] = (count + self._decay((last - at).total_seconds()), last)
        if len(self._counts) > self._max:
            self._forget(at)

    def _forget(self, now: datetime) -> None:
        ranked = sorted(self._counts, key=lambda k: self.weight(k, now))
        for key in ranked[: max(1, len(ranked) // 10)]:
            del self._counts[key]

    def weight(self, entity: str, now: datetime) -> float:
        """The decayed mention count of ``entity`` at ``now`` (0.0 if never mentioned)."""
        current = self._counts.get(entity)
        if current is None:
            return 0.0
        count, last = current
        if now <= last:
            return count
        return count * self._decay((now - last).total_seconds())

    def frequency(self, entities: Iterable[str], now: datetime) -> float:
        """The frequency factor for ``entities``: ``c / (c + 1)`` with ``c`` their mean count."""
        keys = list(dict.fromkeys(entities))
        if not keys:
            return 0.0
        mean = sum(self.weight(k, now) for k in keys) / len(keys)
        return mean / (mean + 1.0)


# -- entities ------------------------------------------------------------------------------------

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
_TOKEN = re.compile(r"[\w][\w.'’/+#-]*[\w+#]|[\w]")
_IDENTIFIER = re.compile(
    r"^(?:[A-Za-z]+_[\w]+|[a-z]+[A-Z]\w*|[\w-]+(?:\.[A-Za-z_][\w-]*)+|[\w.-]*/[\w./-]+"
    r"|[A-Za-z]+-\d[\w.-]*|[A-Za-z]+\d[\w.]*|#\d+)$"
)
_SENTENCE_END = re.compile(r"[.!?:]")
_POSSESSIVE = re.compile(r"['’]s$")


# Conversational words that carry no information of their own ("thanks", "ok", "lol").
_FILLER_WORDS = frozenset(
    """
    ok okay k kk yes yeah yep yup no nope sure thanks thank thx ty cheers please pls lol lmao
    haha hahaha hehe hmm hm uh um oh ah wow cool nice great awesome good fine alright right
    hello hi hey bye goodbye sorry welcome much lot glad sounds agreed indeed totally exactly
    perfect worries np sweet
    """.split()
)


def _casing_informative(text: str) -> bool:
    """True if capitals in ``text`` can mark names: not all-caps, not Title Case Throughout."""
    words = re.findall(r"[^\W\d_]+", text)
    if len(words) < 2:
        return True
    if all(w.isupper() for w in words if len(w) > 1):
        return False
    return not all(w[0].isupper() for w in words)


def extract_entities(text: str) -> tuple[list[str], float, int]:
    """Find entity tokens in ``text``.

    Returns ``(keys, entity_tokens, total_tokens)``: lower-case keys of names, identifiers,
    e-mails and URLs (for the frequency factor; numbers are left out because "3" or "2026" say
    nothing about which topic recurs), how many tokens are entities of any kind (numbers
    included), and the number of tokens. A capitalised word that opens a sentence counts half:
    it may be a name ("Kenji is engaged") or just grammar ("Prefers dark mode"); it gets no key.
    Capitals are ignored altogether in all-caps or Title Case text, where they mark nothing.
    """
    keys: list[str] = []
    entity_tokens = 0.0
    remainder = text
    for pattern in (_URL, _EMAIL):
        for found in pattern.findall(remainder):
            keys.append(found.lower().rstrip(".,;:!?)"))
            entity_tokens += 1
        # Keep the punctuation that closed the match: it may end a sentence.
        remainder = pattern.sub(
            lambda m: " " + m.group()[len(m.group().rstrip(".,;:!?)")) :], remainder
        )
    casing = _casing_informative(remainder)
    total = int(entity_tokens)
    previous_end = 0
    for match in _TOKEN.finditer(remainder):
        token = match.group()
        total += 1
        # A token opens a sentence when it is the first or follows sentence punctuation.
        starts = previous_end == 0 or bool(
            _SENTENCE_END.search(remainder[previous_end : match.start()])
        )
        previous_end = match.end()
        if any(ch.isdigit() for ch in token) and not any(ch.isalpha() for ch in token):
            entity_tokens += 1  # a number, a date, a version
            continue
        if _IDENTIFIER.match(token):
            keys.append(token.lower())
            entity_tokens += 1
            continue
        if not casing:
            continue
        letters = re.sub(r"[^\w]", "", token)
        if len(letters) >= 2 and letters.isupper() and letters.isalpha():
            keys.append(token.lower())  # an acronym: API, AWS
            entity_tokens += 1
            continue
        bare = _POSSESSIVE.sub("", token).lower()
        if not token[0].isupper() or bare in STOP_WORDS or bare in _FILLER_WORDS:
            continue
        if starts:
            entity_tokens += 0.5
        else:
            keys.append(bare)
            entity_tokens += 1
    return keys, entity_tokens, total


# -- the other factors ---------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+")

_TOOL_SOURCES = frozenset({"tool", "tool_call", "tool_result", "tool_output", "function"})
_TOOL_KEYS = frozenset(
    {"tool", "tool_name", "tool_call", "tool_call_id", "tool_output", "tool_result", "function"}
)
_TOOL_MARKERS = re.compile(
    r"```|Traceback \(most recent call last\)|\bexit (?:code|status)\b|\bstdout\b|\bstderr\b"
    r"|^\s*(?:\$|>>>)\s|<tool_(?:call|result)|<function_results>|\bHTTP/\d(?:\.\d)? \d{3}\b"
    r"|^\s*[\[{]\s*\"",
    re.IGNORECASE | re.MULTILINE,
)


def _informative_words(text: str) -> int:
    return sum(
        1
        for w in _WORD.findall(text.lower())
        if w not in STOP_WORDS and w not in _FILLER_WORDS and (len(w) > 1 or w.isdigit())
    )


def _length_score(n: int, cfg: AdmissionConfig) -> float:
    if n <= 1:
        return 0.0
    if n < cfg.min_useful_words:
        return (n - 1) / (cfg.min_useful_words - 1)
    if n <= cfg.max_useful_words:
        return 1.0
    over = min(1.0, (n - cfg.max_useful_words) / cfg.max_useful_words)
    return 1.0 - (1.0 - _LONG_FLOOR) * over


def _tool_score(text: str, metadata: MemoryMetadata | None) -> float:
    if metadata is not None:
        source = (metadata.source or "").strip().lower()
        if source in _TOOL_SOURCES or source.startswith("tool:"):
            return 1.0
        if _TOOL_KEYS & {str(k).lower() for k in metadata.extra}:
            return 1.0
    return _TOOL_MARKER_SCORE if _TOOL_MARKERS.search(text) else 0.0


def _recency_score(created_at: datetime | None, now: datetime, half_life: timedelta) -> float:
    if created_at is None or created_at >= now:
        return 1.0
    return float(0.5 ** ((now - created_at) / half_life))


def is_run_summary(metadata: MemoryMetadata | None) -> bool:
    """True if ``metadata`` marks a run summary (its ``source`` is a capture source)."""
    if metadata is None or metadata.source is None:
        return False
    return metadata.source.strip().lower() in RUN_SUMMARY_SOURCES


def _clip01(value: float) -> float:
    if not math.isfinite(value):
        msg = f"factor is not a finite number: {value!r}"
        raise ValueError(msg)
    return min(1.0, max(0.0, value))


class AdmissionController:
    """Scores candidate memories and admits those at or above the threshold (fail-open).

    One controller serves many agents: it keeps an :class:`EntityMemory` per agent (the most
    recently used ``max_agents``), updated with a candidate's entities when it is admitted.
    """

    def __init__(self, config: AdmissionConfig | None = None, *, max_agents: int = 1_000) -> None:
        """Create a controller with ``config`` (defaults: :class:`AdmissionConfig`)."""
        self._config = config or AdmissionConfig()
        self._max_agents = max(1, max_agents)
        self._entities: OrderedDict[str, EntityMemory] = OrderedDict()

    @property
    def config(self) -> AdmissionConfig:
        """The configuration in force."""
        return self._config

    def entity_memory(self, agent_id: str | None) -> EntityMemory:
        """The entity mentions tracked for ``agent_id`` (one shared memory for None)."""
        key = agent_id or ""
        memory = self._entities.get(key)
        if memory is None:
            memory = EntityMemory(half_life=self._config.frequency_half_life)
            self._entities[key] = memory
            if len(self._entities) > self._max_agents:
                self._entities.popitem(last=False)
        else:
            self._entities.move_to_end(key)
        return memory

    def score(
        self, content: str, *, now: datetime, context: AdmissionContext | None = None
    ) -> AdmissionScore:
        """Score ``content`` on the six factors; ``total`` is their weighted mean in [0, 1].

        Raises whatever a factor raises (e.g. ``ValueError`` for a NaN vector); :meth:`decide`
        turns that into an admission.
        """
        ctx = context or AdmissionContext()
        cfg = self._config
        keys, entity_tokens, total_tokens = extract_entities(content)
        relevance: float | None = None
        if ctx.vector is not None and ctx.context_vector is not None:
            relevance = _clip01(cosine(ctx.vector, ctx.context_vector))
        density = entity_tokens / total_tokens if total_tokens else 0.0
        factors: dict[str, float | None] = {
            "recency": _clip01(_recency_score(ctx.created_at, now, cfg.recency_half_life)),
            "relevance": relevance,
            "tool_use": _clip01(_tool_score(content, ctx.metadata)),
            "entity_density": _clip01(min(1.0, density / _ENTITY_SATURATION)),
            "length": _clip01(_length_score(_informative_words(content), cfg)),
            "frequency": _clip01(self.entity_memory(ctx.agent_id).frequency(keys, now)),
        }
        weights = cfg.weights()
        used = {name: w for name, w in weights.items() if factors[name] is not None and w > 0}
        denom = sum(used.values())
        total = (
            sum(w * float(factors[name] or 0.0) for name, w in used.items()) / denom
            if denom > 0
            else 1.0
        )
        return AdmissionScore(
            recency=float(factors["recency"] or 0.0),
            relevance=relevance,
            tool_use=float(factors["tool_use"] or 0.0),
            entity_density=float(factors["entity_density"] or 0.0),
            length=float(factors["length"] or 0.0),
            frequency=float(factors["frequency"] or 0.0),
            total=_clip01(total),
            entities=tuple(dict.fromkeys(keys)),
        )

    def decide(
        self, content: str, *, now: datetime, context: AdmissionContext | None = None
    ) -> AdmissionDecision:
        """Admit or reject ``content``; never raises for a scoring failure (fail-open).

        An admitted candidate's entities are recorded in the agent's :class:`EntityMemory` (at
        its ``created_at``, else ``now``), so later mentions of them score higher on frequency.
        """
        cfg = self._config
        if not cfg.enabled:
            return AdmissionDecision(admitted=True, score=None, reason="admission disabled")
        ctx = context or AdmissionContext()
        try:
            score = self.score(content, now=now, context=ctx)
        except Exception as exc:
            # Broad on purpose: a bug or odd input in a heuristic must never lose a memory.
            logger.warning(
                "memory.admission.failed",
                extra={"agent_id": ctx.agent_id, "error": repr(exc)},
                exc_info=True,
            )
            return AdmissionDecision(admitted=True, score=None, reason=f"scoring failed: {exc!r}")
        if score.total >= cfg.threshold:
            self.entity_memory(ctx.agent_id).record(score.entities, ctx.created_at or now)
            return AdmissionDecision(
                admitted=True,
                score=score,
                reason=f"score {score.total:.3f} >= threshold {cfg.threshold:.3f}",
            )
        if is_run_summary(ctx.metadata):
            # Every run leaves its summary (see the module docstring), however it scores.
            self.entity_memory(ctx.agent_id).record(score.entities, ctx.created_at or now)
            return AdmissionDecision(
                admitted=True,
                score=score,
                reason=(
                    f"run summary: always admitted (score {score.total:.3f} < threshold "
                    f"{cfg.threshold:.3f})"
                ),
            )
        weakest = sorted(
            ((v, k) for k, v in score.factors().items() if v is not None and cfg.weights()[k] > 0)
        )[:2]
        detail = ", ".join(f"{k} {v:.2f}" for v, k in weakest)
        return AdmissionDecision(
            admitted=False,
            score=score,
            reason=f"score {score.total:.3f} < threshold {cfg.threshold:.3f} (weakest: {detail})",
        )
