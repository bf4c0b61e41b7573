#!/usr/bin/env bash
# Two dyno builds side by side, in alternating rounds on one machine: is the new one slower?
# For each round: `dyno run --quick` (the embedded shootout) wall time, and a closed loop of 50
# connections for DURATION against nginx serving a 13-byte file (generator on core 0, nginx on
# core 1): requests/s and the generator's CPU per request. Prints each run, then NEW / OLD per
# round with the median. OLD is a dyno binary (e.g. built from an earlier commit with
# `git worktree add /tmp/old COMMIT && CARGO_TARGET_DIR=/tmp/oldtarget cargo build --release`);
# NEW defaults to this tree's release build. Traffic stays on 127.0.0.1.
# Usage: bench/before-after.sh OLD_DYNO [NEW_DYNO] [DURATION] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: bench/before-after.sh OLD_DYNO [NEW_DYNO] [DURATION] [ROUNDS]}
new=${2:-}
duration=${3:-5s}
rounds=${4:-3}
if [ -z "$new" ]; then
  cargo build --release -q
  new=$PWD/target/release/dyno
fi
# The runs happen in a scratch directory: name both binaries absolutely.
old=$(realpath "$old")
new=$(realpath "$new")
[ -x /usr/sbin/nginx ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx; }
. bench/nginx.sh
work=$(mktemp -d)
cleanup() {
  stop_nginx
  rm -rf "$work"
}
trap cleanup EXIT
start_nginx "$work"
cd "$work"
for round in $(seq "$rounds"); do
  for which in old new; do
    bin=$old; [ $which = new ] && bin=$new
    start=$(date +%s.%N)
    "$bin" run --quick -o "q$which$round" >/dev/null 2>&1
    end=$(date +%s.%N)
    quick=$(echo "$end - $start" | bc)
    python3 - "$bin" "$url" "$duration" "$work/l$which$round" "$which" "$round" "$quick" >> "$work/rounds" <<'PY'
import json, resource, subprocess, sys
bin, url, duration, out, which, rnd, quick = sys.argv[1:]
subprocess.run(["taskset", "-c", "0", bin, "run", url, "-c", "50", "-d", duration, "--threads", "1",
                "-r", "1", "--no-warmup", "-o", out], capture_output=True, check=True)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
rep = json.load(open(out + "/run.json"))["cases"][0]["reps"][0]
# dyno.run/1 records keep the load figures in the repetition, dyno.run/2 in its detail.
load = rep["load"] if "load" in rep else rep["detail"]["load"]
cpu_us = (ru.ru_utime + ru.ru_stime) * 1e6 / load["requests"]
print(which, rnd, quick, load["responses_per_s"], cpu_us)
PY
    tail -1 "$work/rounds" | awk '{printf "%-4s round %s: run --quick %.2f s; closed loop %.0f req/s, %.2f µs CPU/request\n", $1, $2, $3, $4, $5}'
  done
done
python3 - "$work/rounds" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    which, rnd, quick, rate, cpu = line.split()
    runs[(which, rnd)] = (float(quick), float(rate), float(cpu))
rounds = sorted({r for _, r in runs}, key=int)
for i, name in enumerate(("run --quick time", "closed-loop req/s", "CPU per request")):
    ratios = [runs[("new", r)][i] / runs[("old", r)][i] for r in rounds]
    print("new / old, %-18s per round: %s (median %.3f)" % (
        name, " ".join("%.3f" % x for x in ratios), statistics.median(ratios)))
PY
