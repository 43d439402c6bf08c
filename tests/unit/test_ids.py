"""``memvault._ids``: UUIDv7 strings, ordered by creation, and a UTC clock."""

from __future__ import annotations

import re
import threading
import time
import uuid
from datetime import UTC

from memvault._ids import new_id, utc_now

UUID7 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_ids_are_uuid7_strings_carrying_the_time() -> None:
    before = time.time_ns() // 1_000_000
    value = new_id()
    after = time.time_ns() // 1_000_000
    assert UUID7.match(value)
    parsed = uuid.UUID(value)
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122
    assert before <= parsed.int >> 80 <= after  # the 48-bit Unix time in milliseconds


def test_ids_sort_in_creation_order_and_never_repeat() -> None:
    ids = [new_id() for _ in range(50_000)]  # thousands per millisecond
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_ids_from_threads_are_unique() -> None:
    made: list[list[str]] = [[] for _ in range(4)]

    def work(out: list[str]) -> None:
        out.extend(new_id() for _ in range(5_000))

    threads = [threading.Thread(target=work, args=(out,)) for out in made]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i for out in made for i in out]
    assert len(set(every)) == len(every)
    assert all(out == sorted(out) for out in made)


def test_utc_now_is_aware() -> None:
    assert utc_now().tzinfo is UTC
