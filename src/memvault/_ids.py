"""Sortable unique ids (UUIDv7, RFC 9562) and a UTC clock."""

from __future__ import annotations

import os
import threading
import time
import uuid
from datetime import UTC, datetime

__all__ = ["new_id", "utc_now"]

_lock = threading.Lock()
_last_ms = 0
_seq = 0


def new_id() -> str:
    """A new UUIDv7 string; ids made later in the same process sort after earlier ones."""
    global _last_ms, _seq
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            # Same (or an earlier, after a clock step) millisecond: keep order with a counter.
            ms = _last_ms
            _seq += 1
            if _seq > 0xFFF:
                ms += 1
                _seq = 0
        else:
            _seq = 0
        _last_ms = ms
        seq = _seq
    rand = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= seq << 64
    value |= 0b10 << 62
    value |= rand
    return str(uuid.UUID(int=value))


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)
