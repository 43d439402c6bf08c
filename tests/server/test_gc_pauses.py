"""The server's garbage-collection hook: survivors of full collections are frozen, and every
FULL_EVERY-th full collection walks the whole heap again."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from memvault.server import gc_pauses


@pytest.fixture
def hook() -> Iterator[None]:
    gc_pauses.uninstall()
    gc_pauses.install()
    gc_pauses.install()  # idempotent: one hook
    try:
        yield
    finally:
        gc_pauses.uninstall()


def test_full_collection_freezes_survivors_and_a_later_one_thaws_them(hook: None) -> None:
    assert gc_pauses.installed()
    assert sum(1 for cb in gc.callbacks if type(cb).__name__ == "_Freezer") == 1
    keep = [[i] for i in range(1000)]  # long-lived objects
    gc.collect()
    frozen = gc.get_freeze_count()
    assert frozen >= len(keep)
    # Young collections leave the frozen heap alone.
    gc.collect(0)
    assert gc.get_freeze_count() >= frozen

    # A cycle made garbage after it was frozen is found by the periodic whole-heap walk.
    class Node:
        def __init__(self) -> None:
            self.me = self

    node = Node()
    gc.collect()  # node is frozen now
    import weakref

    gone = weakref.ref(node)
    del node
    for _ in range(gc_pauses.FULL_EVERY):
        gc.collect()
        if gone() is None:
            break
    assert gone() is None
    assert gc.get_freeze_count() > 0  # frozen again after that walk
    assert keep[-1] == [999]


def test_uninstall_returns_everything_to_the_collector() -> None:
    gc_pauses.install()
    gc.collect()
    assert gc.get_freeze_count() > 0
    gc_pauses.uninstall()
    assert not gc_pauses.installed()
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert gc.get_freeze_count() == 0
