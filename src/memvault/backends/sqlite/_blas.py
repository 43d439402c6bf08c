"""One BLAS thread for memvault's own matrix-vector products (:func:`single_threaded`).

numpy's bundled OpenBLAS splits every product of more than 9,216 elements over all cores, and
its worker threads then spin for a while waiting for more work. memvault's products are
matrix-vector ones over a few MB (an agent's vectors against one query): memory-bound, so a
second thread gains little, while the spinning threads take the cores the embedder (onnxruntime)
and the other requests need. Measured on a loaded 2-core machine, one 10k x 384 product took
2.9 ms with one thread and 26 ms with two, and a single ``add`` with dedup ran 4x faster.

The limit is scoped: :func:`single_threaded` sets OpenBLAS to one thread for the duration of a
``with`` block and restores the previous setting after the last overlapping block leaves, so
the application's own numpy work keeps its threads. Where no OpenBLAS can be found (numpy built
against Accelerate or MKL, an unusual platform) it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import glob
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

__all__ = ["BLAS_THREAD_ENV", "blas_threads", "limit_threads", "single_threaded"]

#: Environment variables OpenBLAS reads its thread count from (first set wins). A user who set
#: one has chosen; :func:`limit_threads` callers leave the count alone then.
BLAS_THREAD_ENV = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")

# (setter, getter) symbol names: numpy's wheels bundle scipy-openblas (ILP64, suffixed);
# a numpy built against a system OpenBLAS exports the plain names.
_SYMBOLS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)

_Api = tuple[Callable[[int], None], Callable[[], int]]


def _candidate_libraries() -> list[str]:
    """Paths of the OpenBLAS libraries numpy may have loaded, most likely first."""
    found: list[str] = []
    # Linux: the libraries this process has mapped (numpy is imported by now).
    maps_file = Path("/proc/self/maps")
    with contextlib.suppress(OSError):
        for line in maps_file.read_text(encoding="utf-8", errors="replace").splitlines():
            path = line.rsplit(" ", 1)[-1].strip()
            if "openblas" in Path(path).name.lower() and path not in found:
                found.append(path)
    import numpy

    root = Path(numpy.__file__).resolve().parent
    for pattern in ("../numpy.libs/*openblas*", ".dylibs/*openblas*", "../numpy.libs/*.dll"):
        for path in sorted(glob.glob(str(root / pattern))):
            if "openblas" in os.path.basename(path).lower() and path not in found:
                found.append(path)
    return found


@functools.cache
def _api() -> _Api | None:
    """The OpenBLAS thread setter and getter numpy uses, or None if there is none to find."""
    for path in _candidate_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _SYMBOLS:
            setter = getattr(lib, set_name, None)
            getter = getattr(lib, get_name, None)
            if setter is None or getter is None:
                continue
            setter.argtypes = [ctypes.c_int]
            setter.restype = None
            getter.argtypes = []
            getter.restype = ctypes.c_int
            return setter, getter
    return None


_lock = threading.Lock()
_depth = 0
_saved = 0


def blas_threads() -> int | None:
    """How many threads OpenBLAS uses now (None: no OpenBLAS found)."""
    api = _api()
    return None if api is None else int(api[1]())


def limit_threads(count: int) -> bool:
    """Run OpenBLAS on ``count`` threads for the rest of the process; False: no OpenBLAS found.

    For a process whose every BLAS product is small, a server worker for one: its searches rank
    a few hundred candidates, and a second BLAS thread only spins on the cores the embedder and
    the other requests need. Blocks of :func:`single_threaded` open now restore ``count``.
    """
    global _saved
    if count < 1:
        msg = f"count must be at least 1, got {count}"
        raise ValueError(msg)
    api = _api()
    if api is None:
        return False
    with _lock:
        if _depth > 0:
            _saved = count  # what the last open block restores
        else:
            api[0](count)
    return True


@contextlib.contextmanager
def single_threaded() -> Iterator[None]:
    """Run the block with OpenBLAS on one thread; the previous count is restored after.

    Safe to nest and to enter from several threads at once: the first block in saves the
    count, the last one out restores it.
    """
    global _depth, _saved
    api = _api()
    if api is None:
        yield
        return
    setter, getter = api
    with _lock:
        if _depth == 0:
            _saved = int(getter())
            if _saved > 1:
                setter(1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved > 1:
                setter(_saved)
