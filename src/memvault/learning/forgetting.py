"""Optical forgetting (ScrapMem, seed 004): memories not accessed for long lose fidelity.

``Full`` -> ``Compressed`` after ``forgetting.compress_after_days`` without an access,
-> ``SummaryOnly`` after ``summary_after_days``. A step stores the shorter text as a new memory
(same category, tags, label, creation time, with ``fidelity``, ``original_id`` and
``decayed_at`` in its metadata) and then moves the decayed one to the archive, so nothing is
lost: ``restore(original_id)`` brings the full text back. Decay only moves forward, and the
state is in the memories themselves, so it survives restarts.

It runs off the hot path: the maintenance job ``forgetting`` or :meth:`AsyncMemory.forget`;
never a search or a write. Often-retrieved and important memories, procedural skills and
working notes do not decay.
"""

from __future__ import annotations

import contextlib
import logging
import re
from datetime import datetime, timedelta
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from memvault.config.graph import ForgettingConfig
from memvault.errors import MemoryError
from memvault.injection.memory_api import MemoryAPI
from memvault.models import ChatMessage, MemoryCategory, MemoryEntry
from memvault.protocols import LLMProvider

__all__ = [
    "ContentFidelity",
    "ForgettingReport",
    "compress_text",
    "decay_target",
    "fidelity_of",
    "optical_forgetting",
]

logger = logging.getLogger(__name__)

_PAGE = 500
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_SPEAKER = re.compile(r"^\s*([^:\n]{1,40}):\s")
_SPARED = frozenset({MemoryCategory.PROCEDURAL, MemoryCategory.WORKING})


class ContentFidelity(StrEnum):
    """How much of a memory's original text it still holds."""

    FULL = "full"
    COMPRESSED = "compressed"
    SUMMARY_ONLY = "summary_only"


_ORDER = {ContentFidelity.FULL: 0, ContentFidelity.COMPRESSED: 1, ContentFidelity.SUMMARY_ONLY: 2}


class ForgettingReport(BaseModel):
    """One forgetting pass over an agent's memories."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent_id: str
    scanned: int = 0
    compressed: int = 0
    summarized: int = 0
    archived: dict[str, str] = {}
    """Decayed memory id -> the id of the memory that replaced it."""


def fidelity_of(entry: MemoryEntry) -> ContentFidelity:
    """The fidelity recorded in a memory's metadata (``full`` when none is)."""
    try:
        return ContentFidelity(str(entry.metadata.extra.get("fidelity", "full")))
    except ValueError:
        return ContentFidelity.FULL


def _last_seen(entry: MemoryEntry) -> datetime:
    seen = [entry.created_at]
    if entry.last_accessed_at is not None:
        seen.append(entry.last_accessed_at)
    carried = entry.metadata.extra.get("last_accessed_at")
    if isinstance(carried, str):
        with contextlib.suppress(ValueError):
            seen.append(datetime.fromisoformat(carried))
    return max(seen)


def decay_target(
    entry: MemoryEntry, cfg: ForgettingConfig, now: datetime
) -> ContentFidelity | None:
    """The fidelity ``entry`` should drop to now, or None if it keeps its own."""
    if entry.category in _SPARED or entry.superseded_by is not None:
        return None
    if entry.access_count > cfg.max_access_count:
        return None
    if entry.metadata.importance >= cfg.min_importance_kept:
        return None
    idle = now - _last_seen(entry)
    if idle >= timedelta(days=cfg.summary_after_days):
        target = ContentFidelity.SUMMARY_ONLY
    elif idle >= timedelta(days=cfg.compress_after_days):
        target = ContentFidelity.COMPRESSED
    else:
        return None
    limit = cfg.summary_chars if target is ContentFidelity.SUMMARY_ONLY else cfg.compressed_chars
    if _ORDER[target] <= _ORDER[fidelity_of(entry)] or len(entry.content) <= limit:
        return None
    return target


def compress_text(text: str, chars: int) -> str:
    """An extractive compression of ``text`` to at most ``chars`` characters.

    The speaker prefix (``Name: ``) is kept; whole sentences are taken in order while they fit,
    else the first one is cut at a word boundary and marked with an ellipsis.
    """
    text = " ".join(text.split())
    if len(text) <= chars:
        return text
    prefix = ""
    match = _SPEAKER.match(text)
    if match:
        prefix, text = match.group(0), text[match.end() :]
    room = max(10, chars - len(prefix))
    out = ""
    for sentence in _SENTENCE.split(text):
        candidate = f"{out} {sentence}".strip()
        if len(candidate) > room:
            break
        out = candidate
    if not out:
        cut = text[: room - 1].rsplit(" ", 1)[0] or text[: room - 1]
        out = cut.rstrip(",;:") + "…"
    return prefix + out


async def _summarise(text: str, chars: int, llm: LLMProvider | None) -> str:
    if llm is not None:
        try:
            reply = await llm.complete(
                [
                    ChatMessage(
                        role="system",
                        content=(
                            f"Summarise the memory in at most {chars} characters. Keep names, "
                            "dates, numbers and decisions. Answer with the summary only."
                        ),
                    ),
                    ChatMessage(role="user", content=text[:8000]),
                ],
                max_tokens=max(16, chars // 3),
            )
            summary = " ".join(reply.text.split())
            if 0 < len(summary) <= chars:
                return summary
        except MemoryError as exc:
            logger.warning("memory.forgetting.summary_failed", extra={"error": str(exc)})
    return compress_text(text, chars)


async def optical_forgetting(
    memory: MemoryAPI,
    agent_id: str,
    cfg: ForgettingConfig,
    *,
    now: datetime,
    llm: LLMProvider | None = None,
) -> ForgettingReport:
    """Run one forgetting pass over ``agent_id``'s memories (at most ``cfg.batch`` steps)."""
    scanned = 0
    steps: list[tuple[MemoryEntry, ContentFidelity]] = []
    offset = 0
    while len(steps) < cfg.batch:
        page = await memory.list(agent_id=agent_id, limit=_PAGE, offset=offset)
        scanned += len(page)
        for entry in page:
            target = decay_target(entry, cfg, now)
            if target is not None and len(steps) < cfg.batch:
                steps.append((entry, target))
        if len(page) < _PAGE:
            break
        offset += _PAGE
    done: dict[str, str] = {}
    counts = {ContentFidelity.COMPRESSED: 0, ContentFidelity.SUMMARY_ONLY: 0}
    source_llm = llm if cfg.use_llm else None
    for entry, target in steps:
        summary = target is ContentFidelity.SUMMARY_ONLY
        chars = cfg.summary_chars if summary else cfg.compressed_chars
        text = await _summarise(entry.content, chars, source_llm)
        extra = dict(entry.metadata.extra)
        extra.update(
            fidelity=target.value,
            original_id=str(extra.get("original_id", entry.id)),
            decayed_at=now.isoformat(),
            last_accessed_at=_last_seen(entry).isoformat(),
        )
        # The shorter version first, then the archive move: a crash between the two leaves a
        # duplicate, never a loss.
        outcome = await memory.write(
            text,
            agent_id=agent_id,
            category=entry.category,
            tags=entry.metadata.tags,
            metadata=extra,
            created_at=entry.created_at,
            expires_at=entry.expires_at,
            label=entry.metadata.label,
            source=entry.metadata.source,
            importance=entry.metadata.importance,
            dedup=False,
        )
        if outcome.id is None:
            continue
        await memory.archive([entry.id], agent_id=agent_id, reason=f"forgetting:{target.value}")
        done[entry.id] = outcome.id
        counts[target] += 1
    logger.info(
        "memory.forgetting.pass",
        extra={"agent_id": agent_id, "scanned": scanned, "decayed": len(done)},
    )
    return ForgettingReport(
        agent_id=agent_id,
        scanned=scanned,
        compressed=counts[ContentFidelity.COMPRESSED],
        summarized=counts[ContentFidelity.SUMMARY_ONLY],
        archived=done,
    )
