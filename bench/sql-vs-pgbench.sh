#!/usr/bin/env bash
# dyno's sql suite beside pgbench itself, on one private PostgreSQL, in one run: the same
# built-in script, the same clients and duration, tools in turn within each round (pgbench
# first in odd rounds, dyno first in even ones). The server runs on core 1, both generators on
# core 0 (pgbench with -j 1: one thread, as dyno carries its clients on one thread there).
# Per round and workload (tpcb-like, select-only): transactions per second, the generator's
# CPU per transaction (user + system of the whole process, GNU time: pgbench's connection setup
# and dyno's table making, report and plots included), and the mean latency (pgbench reports no
# percentile; dyno's p50 beside). Then the ratios dyno / pgbench per round, their median, and
# the median's 95% interval (a bootstrap over the rounds: how far the median moves with them).
# The scale is the clients' count unless given, as pgbench's documentation advises: below it
# every transaction of tpcb-like queues for the few branch rows, and the rate measures the queue.
# At scale 1 a client holds the one branch row's lock across two of its own reactions (34 µs
# each here, mostly the wake-up of a sleeping thread) and its commit's flush; dyno's rate was
# 0.88-1.11x pgbench's from round to round, 0.97x over 25 (2026-11-28).
# Each tool works on its own tables (pgbench's in `public`, dyno's in its schema),
# made afresh before each run (`pgbench -i` before pgbench's, not in its CPU; dyno makes its own in
# each run, in its CPU) and dropped after it (`pgbench -i -I d`; dyno drops its own): the same
# server state for both, rather than pgbench's tables growing older over the rounds, or
# autovacuum cleaning them on the server's core while dyno ran (2026-11-28).
# With CONNECT=1 both tools open a new connection for each transaction (-C); pgbench's rate
# then counts its reconnections as dyno's does. MODE (prepared unless given) is both tools' -M.
# With NAP=DURATION a third generator takes its turn in each round: dyno with --nap DURATION
# (its generator thread sleeps that long, when no reply is in, before it waits for one), its
# ratios to pgbench's printed apart.
# Traffic stays on 127.0.0.1.
# Usage: [CONNECT=1] [MODE=simple|extended|prepared] [NAP=65us] bench/sql-vs-pgbench.sh [ROUNDS] [SECONDS] [CLIENTS] [SCALE]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3}
secs=${2:-10}
clients=${3:-8}
scale=${4:-$clients}
mode=${MODE:-prepared}
flags=(-M "$mode")
[ -n "${CONNECT:-}" ] && flags+=(-C)
[ -x /usr/bin/time ] || install time
pgbench_beside_postgres
echo "$($dyno --version); pgbench $("$pgbin/pgbench" --version | awk '{print $3}')"
echo "server on core 1, generators on core 0; $rounds rounds of ${secs}s, -c $clients, scale $scale, -M $mode${CONNECT:+, -C}${NAP:+; dyno-nap: --nap $NAP}"

pgbench_run() { # SCRIPT ROUND -> "TPS CPU_PER_TX_US MEAN_MS"
  local cpu
  # Fresh tables for each run, as dyno makes its own in each (outside the timed part of both).
  "$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U dyno -i -s "$scale" -q postgres >/dev/null 2>&1
  cpu=$(timed "$work/pgbench.out" taskset -c 0 "$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U dyno \
    -b "$1" "${flags[@]}" -c "$clients" -j 1 -T "$secs" -n postgres)
  # And gone after it, as dyno drops its own: left behind after tpcb-like, autovacuum cleaned
  # them on the server's core while dyno ran next.
  "$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U dyno -i -I d -q postgres >/dev/null 2>&1
  python3 - "$work/pgbench.out" "$cpu" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
tx = int(re.search(r"number of transactions actually processed: (\d+)", t).group(1))
tps = float(re.search(r"tps = ([\d.]+)", t).group(1))
mean = float(re.search(r"latency average = ([\d.]+) ms", t).group(1))
print(tps, float(sys.argv[2]) * 1e6 / tx, mean, "-")
PY
}

dyno_run() { # SCRIPT ROUND [DYNO FLAGS…] -> "TPS CPU_PER_TX_US MEAN_MS P50_MS"
  local cpu out="$work/dyno-$1-$2${3:+-nap}"
  cpu=$(timed /dev/null taskset -c 0 "$dyno" run --suite sql -b "$1" "${flags[@]}" --scale "$scale" -c "$clients" -d "${secs}s" \
    "${@:3}" --quiet -o "$out" "$pg")
  python3 - "$out/run.json" "$cpu" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["cases"][0]
assert c["status"] == "ok", c["reason"]
r = c["reps"][0]
tx = r["ops"] - r["errors"]
lat = r["latency_ns"]
print(r["ops_per_s"], float(sys.argv[2]) * 1e6 / tx, lat["mean"] / 1e6, lat["p50"] / 1e6)
PY
}

results=$work/results
: >"$results"
printf "%-6s %-12s %-8s %10s %12s %10s %9s\n" round script tool tps "CPU/tx µs" "mean ms" "p50 ms"
for round in $(seq 1 "$rounds"); do
  for script in tpcb-like select-only; do
    order="pgbench dyno${NAP:+ dyno-nap}"
    [ $((round % 2)) -eq 0 ] && order="${NAP:+dyno-nap }dyno pgbench"
    for tool in $order; do
      case $tool in
        dyno-nap) got=$(dyno_run "$script" "$round" --nap "$NAP") ;;
        *) got=$("${tool}_run" "$script" "$round") ;;
      esac
      read -r tps cpu mean p50 <<<"$got"
      printf "%-6s %-12s %-8s %10.0f %12.1f %10.3f %9s\n" "$round" "$script" "$tool" "$tps" "$cpu" "$mean" "$p50"
      echo "$round $script $tool $tps $cpu $mean" >>"$results"
    done
  done
done

python3 - "$results" <<'PY'
import random, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print()
print("dyno / pgbench, per round (median; 95% interval of the median, bootstrap over the rounds):")
draw = random.Random(1)
def interval(v):
    meds = sorted(statistics.median(draw.choices(v, k=len(v))) for _ in range(10000))
    return meds[249], meds[9749]
for script in ("tpcb-like", "select-only"):
    by = {}
    for r in rows:
        if r[1] == script:
            by.setdefault(r[0], {})[r[2]] = [float(x) for x in r[3:]]
    for tool in [t for t in ("dyno", "dyno-nap") if all(t in d for d in by.values())]:
        for i, what in ((0, "rate"), (1, "CPU per transaction"), (2, "mean latency")):
            v = [d[tool][i] / d["pgbench"][i] for d in by.values()]
            lo, hi = interval(v)
            print(f"  {script:12} {tool:8} {what:20} {', '.join(f'{x:.2f}' for x in v)} ({statistics.median(v):.2f}x; {lo:.2f}-{hi:.2f})")
PY
