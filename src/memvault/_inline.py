"""Blocking work done on the event loop's own thread while one caller is all it serves.

Stores do their blocking work (SQLite calls, embedding a query) on worker threads so that an
event loop stays free for its other tasks. Each hand-over is a round trip that wakes a sleeping
thread and then the loop; a search makes two or three of them, and on a 2-core machine a search
through the sync ``Memory`` took 0.7-1.8 ms longer for them, of 6-10 (``benchmarks/results/
serving.md``, section 4).

The sync ``Memory`` runs a private loop that serves only its own callers. While a single caller
is waiting on it, there is nothing else for that loop to do, so the work may as well be done
right there. ``allow_inline(alone)`` marks the current task, and the tasks it starts, as such a
caller (``alone()`` says, job by job, whether it is still the only one); stores ask
:func:`may_run_inline`, or call :func:`run_blocking`. Anything else (an ``AsyncMemory`` on the
application's loop, the server) keeps its worker threads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import ContextVar
from typing import ParamSpec, TypeVar

__all__ = ["allow_inline", "may_run_inline", "run_blocking"]

P = ParamSpec("P")
T = TypeVar("T")

_ALONE: ContextVar[Callable[[], bool] | None] = ContextVar("memvault_inline", default=None)


def allow_inline(alone: Callable[[], bool]) -> None:
    """Let blocking work started from the current context run inline while ``alone()`` holds."""
    _ALONE.set(alone)


def may_run_inline() -> bool:
    """Whether blocking work may run on the current (event-loop) thread now."""
    alone = _ALONE.get()
    return alone is not None and alone()


async def run_blocking(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)``: inline when :func:`may_run_inline`, else on a worker thread."""
    if may_run_inline():
        return fn(*args, **kwargs)
    return await asyncio.to_thread(fn, *args, **kwargs)
