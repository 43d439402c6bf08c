"""A memo for per-text derived values whose memory is bounded by text length, not count alone.

Ranking derives a few values from each candidate's text (its index terms, whether it asks, whether
it mentions a time) and memoises them, since the same texts come back query after query. A plain
``lru_cache`` of 65,536 entries keyed by text holds up to 65,536 texts and their values: for the
1,000-character turns of a conversational store that is about 270 MiB for the term sets alone
(measured: 191 MiB for 46,379 LongMemEval turns). Short texts (facts, chat lines) are cheap to
keep and recur most; long ones are few per store but heavy. So each length class gets its own
LRU: many short entries, few long ones.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, update_wrapper
from typing import Generic, TypeVar

__all__ = ["LONG_TEXT_CHARS", "TextMemo", "text_memo"]

T = TypeVar("T")

LONG_TEXT_CHARS = 512
"""Texts longer than this are memoised in the small cache."""


class TextMemo(Generic[T]):
    """``fn(text)`` memoised in two LRU caches by the text's length (see the module docstring)."""

    def __init__(self, fn: Callable[[str], T], *, short: int, long: int) -> None:
        self.uncached = fn
        """``fn`` itself: for a caller that memoises the value elsewhere (no second copy)."""
        self._short = lru_cache(maxsize=short)(fn)
        self._long = lru_cache(maxsize=long)(fn)
        update_wrapper(self, fn)

    def __call__(self, text: str) -> T:
        return (self._short if len(text) <= LONG_TEXT_CHARS else self._long)(text)

    def cache_clear(self) -> None:
        """Empty both caches."""
        self._short.cache_clear()
        self._long.cache_clear()

    def cache_sizes(self) -> tuple[int, int]:
        """How many short and long texts are memoised now."""
        return self._short.cache_info().currsize, self._long.cache_info().currsize


def text_memo(
    *, short: int = 65_536, long: int = 4_096
) -> Callable[[Callable[[str], T]], TextMemo[T]]:
    """Decorator form of :class:`TextMemo`."""

    def wrap(fn: Callable[[str], T]) -> TextMemo[T]:
        return TextMemo(fn, short=short, long=long)

    return wrap
