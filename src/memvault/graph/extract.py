"""Entity and typed-edge extraction at write time.

:class:`RuleExtractor` (the default) needs no model: capitalised names (outside a small list of
sentence words), quoted terms, dates and a few relation patterns ("works at", "lives in",
"married to", "is a") give entities and typed edges; "I"/"my" in a ``Speaker: text`` memory
resolve to the speaker. It is fast enough to run on every write.

:class:`LLMExtractor` asks an :class:`~memvault.protocols.LLMProvider` for the same structure
(JSON, validated); any provider failure or unusable output falls back to the rules, so a write
never fails because the extractor did.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from memvault.errors import MemoryError
from memvault.graph.models import ExtractedEdge, ExtractedEntity, Extraction
from memvault.llm import complete_json
from memvault.models import ChatMessage
from memvault.protocols import LLMProvider

__all__ = ["Extractor", "LLMExtractor", "RuleExtractor", "entity_key"]

logger = logging.getLogger(__name__)

_MAX_ENTITIES = 24
_SPEAKER = re.compile(r"^\s*([A-Z][\w.'-]{0,40}(?: [A-Z][\w.'-]{0,40})?):\s")
_NAME = re.compile(r"\b[A-Z][\w'&.-]*(?:\s+(?:of|the|de|van|von)?\s*[A-Z][\w'&.-]*)*")
_QUOTED = re.compile(r"[\"“]([^\"”]{2,60})[\"”]")
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_MONTHS = (
    "january february march april may june july august september october november december"
).split()
_DAYS = "monday tuesday wednesday thursday friday saturday sunday".split()
# Capitalised words that start sentences or questions rather than name things.
_STOP = frozenset(
    (
        "i i'm i've i'd i'll a an the this that these those it it's its he she they we you my your "
        "our their his her what when where who whom whose which why how is are was were do does "
        "did have has had can could would should will shall may might must yes no not oh hey hi "
        "hello thanks thank wow well so and but or if then also just really great good nice sure "
        "okay ok let let's there here maybe that's what's yeah yep sounds awesome congrats "
        "congratulations anyway btw by in on at for to from with about after before during since "
        "today tomorrow yesterday last next every all some any many much one two three"
    ).split()
)
_RELATIONS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        ("works_at", r"\b(?:works?|working|worked|employed)\s+(?:at|for)\s+"),
        ("lives_in", r"\b(?:lives?|living|lived|moved|moving|relocated)\s+(?:in|to)\s+"),
        ("married_to", r"\b(?:married|engaged)\s+to\s+"),
        ("likes", r"\b(?:likes?|loves?|enjoys?|into)\s+"),
        ("visited", r"\b(?:visited|went to|traveled to|travelled to|trip to)\s+"),
        ("member_of", r"\b(?:joined|member of|part of)\s+"),
        ("role", r"\b(?:is|am|was|became|become)\s+(?:a|an|the)\s+"),
    )
)


def entity_key(name: str) -> str:
    """The normalised key of an entity name (lowercase, single spaces, no edge punctuation)."""
    text = name.lower().replace("’", "'").strip(" .,:;!?'\"()[]")
    if text.endswith("'s"):  # possessive: "Alice's" names Alice
        text = text[:-2]
    return " ".join(text.split())[:200]


@runtime_checkable
class Extractor(Protocol):
    """Turns a memory's text into entities and typed edges."""

    async def extract(self, text: str) -> Extraction:
        """The entities and edges of ``text`` (empty when there are none)."""
        ...


def _kind(name: str) -> str:
    low = name.lower()
    if low in _MONTHS or low in _DAYS or _YEAR.fullmatch(low):
        return "time"
    return "name"


class RuleExtractor:
    """Fast, model-free extraction (the default of ``graph.extractor``)."""

    def extract_sync(self, text: str) -> Extraction:
        """:meth:`extract` without the coroutine (it does no I/O)."""
        found: dict[str, ExtractedEntity] = {}
        speaker: str | None = None
        body = text
        match = _SPEAKER.match(text)
        if match:
            speaker = match.group(1)
            body = text[match.end() :]
            self._add(found, speaker, "person")
        for m in _NAME.finditer(body):
            words = m.group(0).split()
            # Strip leading sentence words ("The", "What") from a run of capitals.
            while words and words[0].lower().strip(".,!?'") in _STOP:
                words = words[1:]
            if words:
                self._add(found, " ".join(words), None)
        for m in _QUOTED.finditer(body):
            self._add(found, m.group(1), "title")
        for m in _YEAR.finditer(body):
            self._add(found, m.group(0), "time")
        entities = tuple(found.values())[:_MAX_ENTITIES]
        keys = [e.key for e in entities]
        edges: list[ExtractedEdge] = []
        subject = entity_key(speaker) if speaker else (keys[0] if keys else None)
        if subject is not None:
            for relation, pattern in _RELATIONS:
                for m in pattern.finditer(body):
                    target = _object_after(body, m.end(), found)
                    if target is not None and target != subject:
                        edges.append(
                            ExtractedEdge(source=subject, relation=relation, target=target)
                        )
        return Extraction(entities=entities, edges=tuple(dict.fromkeys(edges)))

    async def extract(self, text: str) -> Extraction:
        """The entities and edges of ``text``."""
        return self.extract_sync(text)

    @staticmethod
    def _add(found: dict[str, ExtractedEntity], name: str, kind: str | None) -> None:
        name = name.strip(" .,:;!?'\"()[]")
        key = entity_key(name)
        if len(key) < 2 or key in _STOP or key in found:
            return
        found[key] = ExtractedEntity(key=key, name=name[:200], kind=kind or _kind(name))


def _object_after(body: str, start: int, found: dict[str, ExtractedEntity]) -> str | None:
    """The key of the first known entity that starts within a few words after ``start``."""
    window = body[start : start + 60]
    best: tuple[int, str] | None = None
    low = window.lower()
    for key in found:
        pos = low.find(key)
        if 0 <= pos <= 25 and (best is None or pos < best[0]):
            best = (pos, key)
    return None if best is None else best[1]


class _LLMEntity(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str = Field(min_length=1, max_length=200)
    kind: str = Field(default="thing", max_length=40)


class _LLMEdge(BaseModel):
    model_config = ConfigDict(extra="ignore")
    source: str = Field(min_length=1, max_length=200)
    relation: str = Field(min_length=1, max_length=60)
    target: str = Field(min_length=1, max_length=200)


class _LLMGraph(BaseModel):
    model_config = ConfigDict(extra="ignore")
    entities: list[_LLMEntity] = Field(default_factory=list, max_length=64)
    edges: list[_LLMEdge] = Field(default_factory=list, max_length=64)


_PROMPT = (
    "Extract the named entities (people, places, organisations, things, dates) of the memory "
    "below and the facts between them as typed edges. Relations are short snake_case verbs "
    "such as works_at, lives_in, married_to, likes, visited, member_of, role. Answer with JSON "
    '{"entities": [{"name": ..., "kind": ...}], "edges": [{"source": ..., "relation": ..., '
    '"target": ...}]} and nothing else.'
)


class LLMExtractor:
    """Extraction by an LLM, falling back to :class:`RuleExtractor` on any failure."""

    def __init__(self, llm: LLMProvider, *, fallback: RuleExtractor | None = None) -> None:
        self._llm = llm
        self._fallback = fallback or RuleExtractor()

    async def extract(self, text: str) -> Extraction:
        """The LLM's entities and edges of ``text`` (the rules' when the LLM fails)."""
        messages: Sequence[ChatMessage] = (
            ChatMessage(role="system", content=_PROMPT),
            ChatMessage(role="user", content=text[:4000]),
        )
        try:
            graph = await complete_json(self._llm, messages, schema=_LLMGraph)
        except MemoryError as exc:
            logger.warning("memory.graph.extract.failed", extra={"error": str(exc)})
            return await self._fallback.extract(text)
        entities: dict[str, ExtractedEntity] = {}
        for e in graph.entities:
            key = entity_key(e.name)
            if len(key) >= 2:
                entities.setdefault(key, ExtractedEntity(key=key, name=e.name, kind=e.kind))
        edges = []
        for edge in graph.edges:
            src, dst = entity_key(edge.source), entity_key(edge.target)
            relation = "_".join(edge.relation.lower().split())[:60]
            if len(src) < 2 or len(dst) < 2 or src == dst or not relation:
                continue
            for key, name in ((src, edge.source), (dst, edge.target)):
                entities.setdefault(key, ExtractedEntity(key=key, name=name))
            edges.append(ExtractedEdge(source=src, relation=relation, target=dst))
        return Extraction(entities=tuple(entities.values())[:64], edges=tuple(dict.fromkeys(edges)))
