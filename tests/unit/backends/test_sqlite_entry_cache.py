"""The SQLite backend's entry cache is bounded by count and by the bytes its entries hold."""

from __future__ import annotations

from datetime import UTC, datetime

from memvault.backends.sqlite._rows import ENTRY_OVERHEAD_BYTES, _EntryCache
from memvault.models import MemoryCategory, MemoryEntry

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def entry(i: int, chars: int) -> MemoryEntry:
    return MemoryEntry(
        id=f"m{i}",
        agent_id="a",
        category=MemoryCategory.EPISODIC,
        content="x" * chars,
        created_at=NOW,
        updated_at=NOW,
    )


def test_long_entries_are_held_up_to_the_byte_budget_short_ones_up_to_the_count() -> None:
    budget = 10 * (ENTRY_OVERHEAD_BYTES + 10_000)
    cache = _EntryCache(40, max_bytes=budget)
    for i in range(50):
        cache.put(i, entry(i, 10_000))
    # Only the ten newest long entries fit the budget; the oldest went first.
    assert [cache.get(i) is not None for i in (39, 40, 49)] == [False, True, True]
    assert cache.held_bytes <= budget
    for i in range(50, 300):
        cache.put(i, entry(i, 10))
    assert cache.get(40) is None and cache.get(299) is not None
    assert sum(cache.get(i) is not None for i in range(300)) == 40  # the count binds now
    assert cache.held_bytes == 40 * (ENTRY_OVERHEAD_BYTES + 10) < budget


def test_replacing_dropping_and_clearing_keep_the_byte_count_exact() -> None:
    cache = _EntryCache(10)
    cache.put(1, entry(1, 100))
    cache.put(1, entry(1, 300))  # the same row again (e.g. after an update)
    cache.put(2, entry(2, 50))
    assert cache.held_bytes == 2 * ENTRY_OVERHEAD_BYTES + 350
    cache.touch("a", ["m1"], NOW)  # an access bump keeps the text
    assert cache.held_bytes == 2 * ENTRY_OVERHEAD_BYTES + 350
    cache.drop_ids(["m1"])
    assert cache.held_bytes == ENTRY_OVERHEAD_BYTES + 50
    cache.drop_rowids([2])
    assert cache.held_bytes == 0
    cache.put(3, entry(3, 10))
    cache.clear()
    assert cache.held_bytes == 0 and cache.get(3) is None


def test_an_entry_larger_than_the_budget_is_still_cached_alone() -> None:
    cache = _EntryCache(10, max_bytes=1_000)
    cache.put(1, entry(1, 5_000))
    assert cache.get(1) is not None
    cache.put(2, entry(2, 5_000))
    assert cache.get(1) is None and cache.get(2) is not None


def test_analysed_content_lives_and_goes_with_its_entry() -> None:
    cache = _EntryCache(2)
    cache.put_analysed(1, "not cached yet")  # no entry: nothing kept
    assert cache.analysed(1) is None and cache.held_bytes == 0
    cache.put(1, entry(1, 100))
    cache.put_analysed(1, "abc def")
    assert cache.analysed(1) == "abc def"
    assert cache.held_bytes == ENTRY_OVERHEAD_BYTES + 100 + 7
    cache.touch("a", ["m1"], NOW)  # the text did not change: the analysis stays
    assert cache.analysed(1) == "abc def"
    cache.put(1, entry(1, 100))  # the row read again: its analysis is read again too
    assert cache.analysed(1) is None and cache.held_bytes == ENTRY_OVERHEAD_BYTES + 100
    cache.put_analysed(1, "abc def")
    cache.put(2, entry(2, 10))
    cache.put(3, entry(3, 10))  # evicts row 1, and its analysis with it
    assert cache.analysed(1) is None
    assert cache.held_bytes == 2 * (ENTRY_OVERHEAD_BYTES + 10)
    cache.put_analysed(3, "x")
    cache.drop_rowids([3])
    assert cache.analysed(3) is None and cache.held_bytes == ENTRY_OVERHEAD_BYTES + 10
