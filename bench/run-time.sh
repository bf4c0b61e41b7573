#!/usr/bin/env bash
# Wall time of `dyno run` with defaults and with --quick, on the embedded targets. With OLD_DYNO
# (a dyno binary built from an earlier commit), each run is made by both builds in turn, and the
# ratios NEW / OLD per run are printed with their median.
# Usage: bench/run-time.sh [RUNS] [OLD_DYNO]   (default 3 runs)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
old=${2:+$(realpath "$2")}
cargo build --release -q
dyno=$PWD/target/release/dyno
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
time_of() {
  local start end
  start=$(date +%s.%N)
  # shellcheck disable=SC2086
  "$1" $2 -o "r$RANDOM$RANDOM" >/dev/null 2>&1
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
for args in "run" "run --quick"; do
  ratios=()
  for i in $(seq "$runs"); do
    new_s=$(time_of "$dyno" "$args")
    if [ -n "$old" ]; then
      old_s=$(time_of "$old" "$args")
      ratio=$(echo "scale=4; $new_s / $old_s" | bc)
      ratios+=("$ratio")
      printf 'dyno %-12s run %d: new %.2f s, old %.2f s, new / old %.3f\n' "$args" "$i" "$new_s" "$old_s" "$ratio"
    else
      printf 'dyno %-12s run %d: %.2f s\n' "$args" "$i" "$new_s"
    fi
  done
  if [ -n "$old" ]; then
    printf 'dyno %-12s new / old median: %s\n' "$args" \
      "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')"
  fi
done
