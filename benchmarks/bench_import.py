"""Import cost of memvault: wall time (median of N fresh interpreters) and modules loaded.

    python benchmarks/bench_import.py [--runs 10]

Times, each in a fresh ``python -c``: ``import memvault``, the front door
(``from memvault import Memory, AsyncMemory``), and the ``memvault --help`` command (through
``python -m memvault``, which is what the console script runs). Targets of issue 42 on an idle
machine: ``import memvault`` <= 0.35 s and <= 60 memvault modules; ``memvault --help`` <= 0.6 s.
Module counts are deterministic (``tests/unit/test_import_cost.py`` bounds them); times depend on
the machine and its load, so they belong here, not in a test.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

_MEASURE = (
    "import sys, time\n"
    "t = time.perf_counter()\n"
    "{stmt}\n"
    "dt = time.perf_counter() - t\n"
    "n = sum(m == 'memvault' or m.startswith('memvault.') for m in sys.modules)\n"
    "print(dt, n, len(sys.modules))"
)

_CASES = {
    "import memvault": "import memvault",
    "front door": "from memvault import Memory, AsyncMemory",
    "from memvault import *": "from memvault import *",
}


def _in_process(stmt: str, runs: int) -> tuple[float, int, int]:
    """Median seconds of ``stmt`` in fresh interpreters, memvault modules, all modules."""
    times, mods, total = [], 0, 0
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _MEASURE.format(stmt=stmt)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        times.append(float(out[0]))
        mods, total = int(out[1]), int(out[2])
    return statistics.median(times), mods, total


def _help_wall(runs: int) -> float:
    """Median wall seconds of ``memvault --help`` (interpreter start included)."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "memvault", "--help"],
            capture_output=True,
            check=True,
        )
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _bare_wall(runs: int) -> float:
    """Median wall seconds of ``python -c pass`` (the interpreter's own start)."""
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    for label, stmt in _CASES.items():
        secs, mods, total = _in_process(stmt, args.runs)
        print(f"{label:24s} {secs * 1000:8.1f} ms  {mods:4d} memvault modules  {total:4d} in all")
    print(f"{'memvault --help':24s} {_help_wall(args.runs) * 1000:8.1f} ms  (wall, with start)")
    print(f"{'python -c pass':24s} {_bare_wall(args.runs) * 1000:8.1f} ms  (wall)")


if __name__ == "__main__":
    main()
