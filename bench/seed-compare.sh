#!/usr/bin/env bash
# The founding document's experiment (seeds/003: one trivial endpoint in an old and a new server,
# 100 clients × N requests each, gobench's figures side by side), judged by `dyno compare`.
# "old" is `dyno serve --http`; "new" is the same server slowed with `--stall PAUSE/EVERY` (every
# response due inside a PAUSE window once per EVERY waits for its end). Both servers on core 1,
# the generator on core 0, one after the other (the old one three more times before: its history);
# REPS repetitions each. Prints the compare table
# as Markdown (rate, read and write throughput, test time, latency quantiles with 95% intervals
# and verdicts, and the request totals), and leaves both runs and compare.html in OUT.
# Traffic stays on 127.0.0.1.
# Usage: bench/seed-compare.sh [REQUESTS_PER_CLIENT] [REPS] [STALL] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
requests=${1:-500}
reps=${2:-5}
stall=${3:-2ms/20ms}
out=${4:-$(mktemp -d)}
cargo build --release -q
dyno=$PWD/target/release/dyno
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
mkdir -p "$out"
for side in old new; do
  port=$(free_port)
  extra=()
  [ "$side" = new ] && extra=(--stall "$stall")
  taskset -c 1 "$dyno" serve --http --listen "127.0.0.1:$port" "${extra[@]}" >"$out/$side-server.log" 2>&1 &
  pids+=($!)
  wait_port "$port"
  # The same target name on both sides: cases match by identity.
  cat >"$out/$side.toml" <<PLAN
[suite]
name = "load"
concurrency = 100
reps = $reps

[load]
requests = $requests

[targets.endpoint]
url = "http://127.0.0.1:$port/build/version"
PLAN
  # The old server's plan runs three times first: the verdicts need this machine's run-to-run
  # noise, which dyno measures over the earlier runs of the base's plan in the history.
  if [ "$side" = old ]; then
    for i in 1 2 3; do
      taskset -c 0 "$dyno" run "$out/$side.toml" --quiet -o "$out/old-earlier-$i" >/dev/null
    done
  fi
  taskset -c 0 "$dyno" run "$out/$side.toml" --quiet -o "$out/$side" >/dev/null
done
"$dyno" compare "$out/old" "$out/new" -f html -o "$out/compare.html" 2>/dev/null
"$dyno" compare "$out/old" "$out/new" -f markdown
echo
echo "runs, plans and compare.html: $out"
