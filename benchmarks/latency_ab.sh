#!/usr/bin/env bash
# Side-by-side search latency of two checkouts on the LoCoMo benchmark (SQLite, limit 10),
# alternating A B A B in one run so both see the same machine load.
#   benchmarks/latency_ab.sh OLD_SRC_DIR NEW_SRC_DIR path/to/locomo10.json
set -euo pipefail
old_src=$1 new_src=$2 data=$3
py=${PYTHON:-.venv/bin/python}
for round in 1 2; do
  for side in old new; do
    src=$old_src; [[ $side == new ]] && src=$new_src
    PYTHONPATH=$src "$py" -m memvault bench locomo --data "$data" --limit 10 --json \
      | "$py" -c "import json,sys; r=json.load(sys.stdin); t=r['timing']; \
print('$side round $round: search p50 %.2f ms p95 %.2f ms, R@10 %.4f' % (t['search_p50_ms'], \
t['search_p95_ms'], r['overall']['metrics']['recall@10']))"
  done
done
