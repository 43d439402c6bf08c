"""Organisational memory: core policies in every prompt, extended knowledge on demand.

:class:`OrgMemoryBackend` is the protocol of the design (``query``, ``write``,
``list_policies`` and a lifecycle); :class:`HybridPromptRetrievalOrgMemory` is the default
("hybrid prompt + retrieval"): core policies (from ``org_memory.core_policies`` and the policies
written through the API, at most ``max_core_policies``) are injected into every agent's
context, and ADRs, procedures, conventions and org skills are searched on demand.

The extended store is the memory store itself: org facts are the memories of the reserved
pseudo-agent :data:`~memvault.learning.models.ORG_POOL`, so they get the same hybrid search,
supersession, archive and audit as everything else. Writes are append-only (a new fact may
supersede an old one, nothing is edited or deleted) and checked against ``write_access``:
policies are human-only, ADRs and procedures need a senior agent or above.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from memvault._actor import acting_as
from memvault.config import OrgMemoryConfig
from memvault.errors import (
    MemoryNotFoundError,
    MemoryPermissionError,
    MemoryValidationError,
)
from memvault.injection.memory_api import MemoryAPI
from memvault.learning.models import (
    NON_INFERABLE,
    ORG_POOL,
    OrgFact,
    OrgFactAuthor,
    OrgFactKind,
    OrgFactWriteRequest,
    OrgMemoryQuery,
)
from memvault.models import MemoryCategory, MemoryEntry

__all__ = ["ORG_TAG", "HybridPromptRetrievalOrgMemory", "OrgMemoryBackend", "org_fact"]

ORG_TAG = "org"
_KIND_KEY = "org_kind"
_AUTHOR_KEY = "org_author"
_ACCESS_FIELD = {
    OrgFactKind.POLICY: "policies",
    OrgFactKind.ADR: "adrs",
    OrgFactKind.PROCEDURE: "procedures",
    OrgFactKind.CONVENTION: "conventions",
}


def kind_tag(kind: OrgFactKind) -> str:
    """The tag every org fact of ``kind`` carries (``org:policy``...)."""
    return f"org:{kind.value}"


@runtime_checkable
class OrgMemoryBackend(Protocol):
    """Shared organisational memory: policies, ADRs, procedures, conventions."""

    async def connect(self) -> None:
        """Open the backend."""
        ...

    async def disconnect(self) -> None:
        """Close the backend."""
        ...

    async def health_check(self) -> bool:
        """True if the backend answers."""
        ...

    @property
    def is_connected(self) -> bool:
        """True between connect and disconnect."""
        ...

    @property
    def backend_name(self) -> str:
        """The backend's name."""
        ...

    async def query(self, query: OrgMemoryQuery) -> tuple[OrgFact, ...]:
        """Org facts relevant to ``query``, best first."""
        ...

    async def write(self, request: OrgFactWriteRequest, *, author: OrgFactAuthor) -> str:
        """Append one org fact (write access checked, audited); returns its id."""
        ...

    async def list_policies(self) -> tuple[OrgFact, ...]:
        """The core policies, every one of which is injected into every agent's context."""
        ...


def org_fact(entry: MemoryEntry) -> OrgFact:
    """The org fact stored as ``entry``."""
    extra = entry.metadata.extra
    try:
        kind = OrgFactKind(extra.get(_KIND_KEY, OrgFactKind.PROCEDURE.value))
    except ValueError:
        kind = OrgFactKind.PROCEDURE
    return OrgFact(
        id=entry.id,
        kind=kind,
        content=entry.content,
        author=str(extra.get(_AUTHOR_KEY, "unknown")),
        created_at=entry.created_at,
        tags=entry.metadata.tags,
        superseded_by=entry.superseded_by,
        relevance_score=entry.relevance_score,
    )


class HybridPromptRetrievalOrgMemory:
    """The default org memory over a memvault memory (core policies + extended store).

    ``on_write`` is called after every fact written (the learning engine drops its cached
    view of the org pool there).
    """

    def __init__(
        self,
        memory: MemoryAPI,
        config: OrgMemoryConfig | None = None,
        *,
        on_write: Callable[[], None] | None = None,
    ) -> None:
        self._memory = memory
        self._config = config if config is not None else OrgMemoryConfig()
        self._connected = True
        self._on_write = on_write

    @property
    def config(self) -> OrgMemoryConfig:
        """The org memory settings."""
        return self._config

    # -- lifecycle (the memory opens and closes the store itself) -------------------------------

    async def connect(self) -> None:
        """Mark the backend usable (the memory opens its store on first use)."""
        self._connected = True

    async def disconnect(self) -> None:
        """Mark the backend closed (the memory's owner closes the store)."""
        self._connected = False

    async def health_check(self) -> bool:
        """True if the org store can be read."""
        try:
            await self._memory.count(agent_id=ORG_POOL)
        except Exception:  # a health check answers, it does not raise
            return False
        return True

    @property
    def is_connected(self) -> bool:
        """True until :meth:`disconnect`."""
        return self._connected

    @property
    def backend_name(self) -> str:
        """``hybrid_prompt_retrieval``."""
        return "hybrid_prompt_retrieval"

    # -- the protocol ---------------------------------------------------------------------------

    def may_write(self, kind: OrgFactKind, author: OrgFactAuthor) -> bool:
        """True if ``author`` may write org facts of ``kind`` (``org_memory.write_access``)."""
        allowed: tuple[str, ...] = getattr(self._config.write_access, _ACCESS_FIELD[kind])
        if author.kind == "human":
            return "human" in allowed
        return author.seniority is not None and author.seniority.value in allowed

    async def write(self, request: OrgFactWriteRequest, *, author: OrgFactAuthor) -> str:
        """Append one org fact; returns its id.

        Raises:
            MemoryPermissionError: ``author`` may not write this kind of fact.
            MemoryValidationError: a new policy beyond ``max_core_policies``.
            MemoryNotFoundError: ``supersedes`` names no live org fact.
        """
        if not self.may_write(request.kind, author):
            who = (
                author.kind
                if author.kind == "human"
                else f"a {author.seniority or 'unranked'} agent"
            )
            msg = f"{who} may not write org {request.kind.value} facts (org_memory.write_access)"
            raise MemoryPermissionError(msg)
        if request.supersedes is not None:
            old = await self._memory.get(request.supersedes, agent_id=ORG_POOL)
            if old.superseded_by is not None:
                msg = f"org fact {request.supersedes!r} is already superseded"
                raise MemoryNotFoundError(msg)
        elif request.kind is OrgFactKind.POLICY and (
            len(await self.list_policies()) >= self._config.max_core_policies
        ):
            msg = (
                f"org memory already holds {self._config.max_core_policies} core policies "
                "(org_memory.max_core_policies): supersede one instead"
            )
            raise MemoryValidationError(msg)
        category = (
            MemoryCategory.PROCEDURAL
            if request.kind is OrgFactKind.PROCEDURE
            else MemoryCategory.SEMANTIC
        )
        tags = tuple(dict.fromkeys((ORG_TAG, kind_tag(request.kind), NON_INFERABLE, *request.tags)))
        metadata = {**request.metadata, _KIND_KEY: request.kind.value, _AUTHOR_KEY: author.label}
        with acting_as(author.label):
            fact_id = await self._memory.add(
                request.content,
                agent_id=ORG_POOL,
                category=category,
                tags=tags,
                metadata=metadata,
                supersedes=request.supersedes,
                source=author.label,
                dedup=False,  # append-only: a repeated fact is a new, audited statement
            )
        if self._on_write is not None:
            self._on_write()
        return fact_id

    async def list_policies(self) -> tuple[OrgFact, ...]:
        """Configured policies first, then written ones (oldest first), at most the maximum."""
        configured = [
            OrgFact(
                id=f"config:{i}",
                kind=OrgFactKind.POLICY,
                content=text,
                author="config",
                from_config=True,
            )
            for i, text in enumerate(self._config.core_policies)
        ]
        stored = await self._memory.list(
            agent_id=ORG_POOL, tags=[kind_tag(OrgFactKind.POLICY)], limit=100
        )
        written = [org_fact(e) for e in reversed(stored)]
        return tuple([*configured, *written][: self._config.max_core_policies])

    async def query(self, query: OrgMemoryQuery) -> tuple[OrgFact, ...]:
        """Extended org knowledge for ``query`` (policies only when asked for), best first."""
        limit = query.limit or self._config.extended_store.max_retrieved_per_query
        if limit < 1:
            return ()
        kinds = set(query.kinds) if query.kinds else set(OrgFactKind) - {OrgFactKind.POLICY}
        found = await self._memory.search(
            query.text, agent_id=ORG_POOL, limit=min(limit * 3, 100), tags=[ORG_TAG]
        )
        facts = [org_fact(e) for e in found]
        return tuple(f for f in facts if f.kind in kinds)[:limit]

    async def facts(
        self, *, kind: OrgFactKind | None = None, limit: int = 100
    ) -> builtins.list[OrgFact]:
        """Live org facts (of one kind), newest first."""
        tags = [kind_tag(kind)] if kind is not None else [ORG_TAG]
        return [
            org_fact(e) for e in await self._memory.list(agent_id=ORG_POOL, tags=tags, limit=limit)
        ]
