"""A semantic response cache in front of any :class:`~memvault.protocols.LLMProvider`.

:class:`CachingLLM` is itself an ``LLMProvider``: wrap a provider once and every caller
(memvault's consolidation, extraction and proposals, or an application) shares the cache.

* **Key**: the normalised prompt (roles and contents, whitespace collapsed, case folded) plus
  what changes the answer: the model, ``max_tokens``, ``json_schema`` and the temperature.
  Identical requests are deduplicated: concurrent identical calls wait for the one in flight.
* **Semantic hits**: with an ``embedder`` and ``similarity_threshold < 1``, a request whose
  prompt embedding is at least that similar (cosine) to a cached prompt's, with the same
  parameters and the same system messages, is answered from the cache.
* **TTL and size**: entries live ``ttl_seconds``; beyond ``max_entries`` the least recently
  used go.
* **Invalidation**: a response may name the memories it used (``memory_ids=`` of
  :meth:`CachingLLM.cached`, or :meth:`CachingLLM.using` around the call); when a memory
  changes, :meth:`CachingLLM.invalidate_memories` drops every response built on it.
* **Metrics**: :meth:`CachingLLM.stats` (hits, semantic hits, misses, hit rate, size), and
  :func:`live_caches` for ``/metrics``.

Requests with a temperature above ``max_temperature`` bypass the cache (counted as bypassed):
their caller asked for variety.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import re
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from memvault.errors import MemoryConfigError
from memvault.models import ChatMessage, LLMResponse
from memvault.protocols import Embedder, LLMProvider

__all__ = ["CacheStats", "CachingLLM", "live_caches", "normalise_prompt"]

_SPACE = re.compile(r"\s+")
_LIVE: weakref.WeakSet[CachingLLM] = weakref.WeakSet()
_USING: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar(
    "memvault_cache_memory_ids", default=frozenset()
)


def live_caches() -> list[CachingLLM]:
    """The response caches of this process (for ``/metrics``)."""
    return list(_LIVE)


def normalise_prompt(messages: Sequence[ChatMessage]) -> str:
    """The prompt as cache-key text: ``role: content`` lines, whitespace collapsed, casefolded."""
    return "\n".join(
        f"{m.role}{'/' + m.name if m.name else ''}: {_SPACE.sub(' ', m.content).strip().casefold()}"
        for m in messages
    )


class CacheStats(BaseModel):
    """Counters of a response cache (``hit_rate`` = hits / lookups, 0 without lookups)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hits: int
    semantic_hits: int
    misses: int
    bypassed: int
    expired: int
    invalidated: int
    evicted: int
    size: int
    hit_rate: float


@dataclass(slots=True)
class _Entry:
    response: LLMResponse
    expires: float
    params: str
    system: str
    vector: np.ndarray[Any, Any] | None
    memory_ids: frozenset[str] = field(default_factory=frozenset)


class CachingLLM:
    """``provider`` with a response cache (see the module docstring); an ``LLMProvider``."""

    def __init__(
        self,
        provider: LLMProvider,
        *,
        embedder: Embedder | None = None,
        ttl_seconds: float = 3_600.0,
        max_entries: int = 1_000,
        similarity_threshold: float = 0.97,
        max_temperature: float = 0.3,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if ttl_seconds <= 0 or max_entries < 1 or not 0 < similarity_threshold <= 1:
            msg = "cache needs ttl_seconds > 0, max_entries >= 1, 0 < similarity_threshold <= 1"
            raise MemoryConfigError(msg)
        self._provider = provider
        self._embedder = embedder
        self._ttl = ttl_seconds
        self._max = max_entries
        self._threshold = similarity_threshold
        self._max_temperature = max_temperature
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._flight: dict[str, asyncio.Future[LLMResponse]] = {}
        self._hits = self._semantic = self._misses = self._bypassed = 0
        self._expired = self._invalidated = self._evicted = 0
        _LIVE.add(self)

    @classmethod
    def from_config(
        cls, provider: LLMProvider, config: Any, *, embedder: Embedder | None = None
    ) -> CachingLLM:
        """A cache with the settings of a :class:`~memvault.config.conversation.
        ResponseCacheConfig` (``[response_cache]``)."""
        return cls(
            provider,
            embedder=embedder,
            ttl_seconds=config.ttl_seconds,
            max_entries=config.max_entries,
            similarity_threshold=config.similarity_threshold,
            max_temperature=config.max_temperature,
        )

    @property
    def provider(self) -> LLMProvider:
        """The wrapped provider."""
        return self._provider

    @property
    def model_id(self) -> str:
        """The wrapped provider's model id (the cache is transparent)."""
        return self._provider.model_id

    def with_model(self, model: str) -> LLMProvider:
        """The wrapped provider asking ``model`` (see :func:`memvault.llm.with_model`); its
        replies are not cached here (the cache is keyed on this provider's model)."""
        from memvault.llm._protocol import with_model

        return with_model(self._provider, model, key="model")

    def stats(self) -> CacheStats:
        """Hit, miss and eviction counters and the current size."""
        lookups = self._hits + self._misses
        return CacheStats(
            hits=self._hits,
            semantic_hits=self._semantic,
            misses=self._misses,
            bypassed=self._bypassed,
            expired=self._expired,
            invalidated=self._invalidated,
            evicted=self._evicted,
            size=len(self._entries),
            hit_rate=self._hits / lookups if lookups else 0.0,
        )

    def clear(self) -> int:
        """Drop every entry; returns how many went."""
        n = len(self._entries)
        self._entries.clear()
        return n

    @staticmethod
    @contextlib.contextmanager
    def using(memory_ids: Iterable[str]) -> Iterator[None]:
        """Inside the block, cached responses are recorded as built on ``memory_ids``."""
        token = _USING.set(_USING.get() | frozenset(memory_ids))
        try:
            yield
        finally:
            _USING.reset(token)

    def invalidate_memories(self, memory_ids: Iterable[str]) -> int:
        """Drop every response built on any of ``memory_ids`` (they changed); returns how many."""
        changed = frozenset(memory_ids)
        doomed = [k for k, e in self._entries.items() if e.memory_ids & changed]
        for key in doomed:
            del self._entries[key]
        self._invalidated += len(doomed)
        return len(doomed)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> LLMResponse:
        """The cached reply to this request, or the provider's (then cached)."""
        return await self.cached(
            messages, temperature=temperature, max_tokens=max_tokens, json_schema=json_schema
        )

    async def cached(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        json_schema: dict[str, Any] | None = None,
        memory_ids: Iterable[str] = (),
    ) -> LLMResponse:
        """:meth:`complete`, recording that the response used ``memory_ids``."""
        if temperature > self._max_temperature:
            self._bypassed += 1
            return await self._provider.complete(
                messages, temperature=temperature, max_tokens=max_tokens, json_schema=json_schema
            )
        used = frozenset(memory_ids) | _USING.get()
        params = json.dumps(
            [self._provider.model_id, temperature, max_tokens, json_schema],
            sort_keys=True,
            default=str,
        )
        text = normalise_prompt(messages)
        key = hashlib.sha256(f"{params}\n{text}".encode()).hexdigest()
        now = self._clock()
        entry = self._entries.get(key)
        if entry is not None:
            if entry.expires > now:
                self._entries.move_to_end(key)
                self._hits += 1
                return entry.response
            del self._entries[key]
            self._expired += 1
        flying = self._flight.get(key)
        if flying is not None:
            self._hits += 1
            return await asyncio.shield(flying)
        system = normalise_prompt([m for m in messages if m.role == "system"])
        vector: np.ndarray[Any, Any] | None = None
        if self._embedder is not None and self._threshold < 1.0:
            query = normalise_prompt([m for m in messages if m.role != "system"])
            vector = np.asarray(
                await asyncio.to_thread(self._embedder.embed_query, query), dtype=np.float32
            )
            found = self._semantic_hit(vector, params, system, now)
            if found is not None:
                self._hits += 1
                self._semantic += 1
                return found
        self._misses += 1
        future: asyncio.Future[LLMResponse] = asyncio.get_running_loop().create_future()
        self._flight[key] = future
        try:
            response = await self._provider.complete(
                messages, temperature=temperature, max_tokens=max_tokens, json_schema=json_schema
            )
        except BaseException as exc:
            if isinstance(exc, Exception):
                future.set_exception(exc)
                future.exception()  # retrieved: waiters re-raise it, nobody else must log it
            else:
                future.cancel()
            raise
        finally:
            self._flight.pop(key, None)
        future.set_result(response)
        self._entries[key] = _Entry(
            response, self._clock() + self._ttl, params, system, vector, used
        )
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
            self._evicted += 1
        return response

    def _semantic_hit(
        self, vector: np.ndarray[Any, Any], params: str, system: str, now: float
    ) -> LLMResponse | None:
        best: tuple[float, str] | None = None
        for key, entry in list(self._entries.items()):
            if entry.expires <= now:
                del self._entries[key]
                self._expired += 1
                continue
            if entry.vector is None or entry.params != params or entry.system != system:
                continue
            if entry.vector.shape != vector.shape:
                continue
            score = float(entry.vector @ vector)
            if score >= self._threshold and (best is None or score > best[0]):
                best = (score, key)
        if best is None:
            return None
        self._entries.move_to_end(best[1])
        return self._entries[best[1]].response
