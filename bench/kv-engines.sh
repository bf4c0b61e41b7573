#!/usr/bin/env bash
# The measurement behind the choice of embedded ordered KV engine: redb against LMDB on the
# shootout, side by side in one run, in both column orders, with fsync at commit and without.
# Usage: bench/kv-engines.sh [REPS]   (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5}
cargo build --release -q --features redb
dyno=target/release/dyno
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for targets in "redb: lmdb:" "lmdb: redb:" "redb:?durability=none lmdb:?sync=false"; do
  echo "== dyno run $targets -r $reps"
  # shellcheck disable=SC2086
  "$dyno" run $targets -r "$reps" -o "$out/$RANDOM" 2>/dev/null
done
