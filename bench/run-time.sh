#!/usr/bin/env bash
# Wall time of `dyno run` with defaults and with --quick, on the embedded targets.
# Usage: bench/run-time.sh [RUNS]   (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
cargo build --release -q
dyno=$PWD/target/release/dyno
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
for args in "run" "run --quick"; do
  for i in $(seq "$runs"); do
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    "$dyno" $args -o "r$i$RANDOM" >/dev/null 2>&1
    end=$(date +%s.%N)
    printf 'dyno %-12s run %d: %.2f s\n' "$args" "$i" "$(echo "$end - $start" | bc)"
  done
done
