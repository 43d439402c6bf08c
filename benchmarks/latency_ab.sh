#!/usr/bin/env bash
# Side-by-side search latency of two builds on the LoCoMo benchmark (SQLite, limit 10),
# alternating A B B A in one run so both see the same machine load.
#   benchmarks/latency_ab.sh OLD NEW path/to/locomo10.json
# OLD and NEW are source directories (holding the memvault package) or git refs; a ref is
# exported with `git archive` to a temporary directory. Give both sides the same kind: the
# working tree's src/ against an exported one measured up to 1 ms apart with identical code.
# RUNNER=sync times the sync Memory instead (benchmarks/sync_search_latency.py, 3 conversations,
# 3 rounds; SYNC_ARGS passes it more options, e.g. "--track-access").
set -euo pipefail
old=$1 new=$2 data=$3
py=${PYTHON:-.venv/bin/python}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
resolve() {  # $1: directory or git ref, $2: name of the export directory
  if [[ -d $1 ]]; then
    echo "$1"
  else
    mkdir -p "$tmp/$2"
    git archive "$1" src | tar -x -C "$tmp/$2"
    echo "$tmp/$2/src"
  fi
}
old_src=$(resolve "$old" old)
new_src=$(resolve "$new" new)
here=$(cd "$(dirname "$0")" && pwd)
for side in old new new old old new; do
  src=$old_src
  [[ $side == new ]] && src=$new_src
  if [[ ${RUNNER:-async} == sync ]]; then
    echo "$side: $(PYTHONPATH=$src "$py" "$here/sync_search_latency.py" "$data" ${SYNC_ARGS:-})"
    continue
  fi
  PYTHONPATH=$src "$py" -m memvault bench locomo --data "$data" --limit 10 --json \
    | "$py" -c "import json,sys; r=json.load(sys.stdin); t=r['timing']; \
print('$side: search p50 %.2f ms p95 %.2f ms, R@10 %.4f' % (t['search_p50_ms'], \
t['search_p95_ms'], r['overall']['metrics']['recall@10']))"
done
