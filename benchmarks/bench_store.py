"""Add throughput and search latency of the embedded default: now ``memvault bench scale``.

    python benchmarks/bench_store.py [--sizes 10000,100000] [--queries 200] [ARGS...]

Kept so ``make bench`` and older notes still work: it runs ``memvault bench scale`` with the
same sizes and query count (any further arguments, ``--compare REF`` or ``--json OUT`` for
example, are passed on). Targets (DESIGN section 9): >= 300 memories/s batched; search p50 <=
15 ms at 100k.
"""

from __future__ import annotations

import argparse
import sys

from memvault.cli.app import main as memvault_main


def main() -> int:
    """Parse the historical options and run ``memvault bench scale``."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--db-dir", default=None, help="ignored: every store is a temporary file")
    args, rest = ap.parse_known_args()
    command = ["bench", "scale", "--sizes", args.sizes, "--queries", str(args.queries), *rest]
    return memvault_main(command)


if __name__ == "__main__":
    sys.exit(main())
