"""The data of the entity graph: entities, typed temporal edges, extractions and recalls."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

__all__ = [
    "CAUSED",
    "CO_OCCURS",
    "FUNCTIONAL_RELATIONS",
    "PRECEDED",
    "EpisodeLink",
    "ExtractedEdge",
    "ExtractedEntity",
    "Extraction",
    "GraphEdge",
    "GraphEntity",
    "GraphRecall",
    "RecallMode",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

CO_OCCURS = "co_occurs"
"""The untyped edge between two entities mentioned by one memory (its weight grows with use)."""

CAUSED = "caused"
"""An EM-Graph link: the earlier memory is the stated cause of the later one."""

PRECEDED = "preceded"
"""An EM-Graph link: the earlier memory is about the same thing shortly before the later one."""

FUNCTIONAL_RELATIONS = frozenset({"lives_in", "works_at", "married_to", "role", "age"})
"""Relations a subject holds with one object at a time: a newer fact closes the older edge."""


class ExtractedEntity(BaseModel):
    """An entity named in a text: ``key`` is its normalised name (lowercase, single spaces)."""

    model_config = _FROZEN

    key: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=200)
    kind: str = Field(default="thing", max_length=40)


class ExtractedEdge(BaseModel):
    """A typed fact ``source --relation--> target`` between two entity keys."""

    model_config = _FROZEN

    source: str = Field(min_length=1, max_length=200)
    relation: str = Field(min_length=1, max_length=60)
    target: str = Field(min_length=1, max_length=200)


class Extraction(BaseModel):
    """What an extractor found in one memory."""

    model_config = _FROZEN

    entities: tuple[ExtractedEntity, ...] = ()
    edges: tuple[ExtractedEdge, ...] = ()


class GraphEntity(BaseModel):
    """An entity of an agent's graph: how often it was mentioned and when first."""

    model_config = _FROZEN

    key: str
    name: str
    kind: str
    mentions: int = Field(ge=0)
    first_seen: AwareDatetime


class GraphEdge(BaseModel):
    """A typed, weighted edge valid from ``valid_from`` until ``valid_to`` (None: still valid).

    ``memory_id`` is the memory that asserted it; a newer fact of a functional relation
    (:data:`FUNCTIONAL_RELATIONS`) closes it (``valid_to`` = the newer fact's time).
    """

    model_config = _FROZEN

    id: str
    source: str
    relation: str
    target: str
    weight: float
    valid_from: AwareDatetime
    valid_to: AwareDatetime | None = None
    memory_id: str | None = None

    def valid_at(self, when: datetime | None) -> bool:
        """True if the edge holds at ``when`` (None: now, i.e. not closed)."""
        if when is None:
            return self.valid_to is None
        return self.valid_from <= when and (self.valid_to is None or self.valid_to > when)


class RecallMode(StrEnum):
    """How graph recall walks from the query's entities."""

    BFS = "bfs"
    SPREADING = "spreading"


class GraphRecall(BaseModel):
    """The result of graph recall: activated entities and the memories that mention them.

    ``memories`` maps memory id to its activation in [0, 1] (1: mentions a seed entity with
    full weight); ``entities`` maps entity key to activation (BFS: ``decay ** hops``).
    """

    model_config = _FROZEN

    seeds: tuple[str, ...] = ()
    entities: dict[str, float] = Field(default_factory=dict)
    memories: dict[str, float] = Field(default_factory=dict)
    mode: RecallMode = RecallMode.SPREADING


class EpisodeLink(BaseModel):
    """An EM-Graph link between two memories (events) of one agent: ``cause`` -> ``effect``.

    ``relation`` is :data:`CAUSED` (the later text states a cause or a consequence) or
    :data:`PRECEDED` (temporal proximity on a shared entity); ``at`` is the effect's time.
    """

    model_config = _FROZEN

    cause: str
    effect: str
    relation: str
    weight: float = Field(gt=0.0, le=1.0)
    at: AwareDatetime
