#!/usr/bin/env bash
# dyno's sql suite beside sysbench itself, on a private PostgreSQL and a private MariaDB, in one
# run: the same OLTP workload (oltp_read_write, oltp_point_select), its defaults (one table of
# 10,000 rows) but --rand-type RAND_TYPE (default uniform), the same clients and duration, tools
# in turn within each round (sysbench first in odd rounds, dyno first in even ones). Servers on core 1, both
# generators on core 0. Per round, database and workload: transactions per second, the
# generator's CPU per transaction (user + system of the whole process, GNU time; dyno's making
# of its tables included, sysbench's `prepare` not), and the median latency (dyno's p50;
# sysbench's from its --histogram, below). Then the ratios dyno / sysbench per
# round and their median. Each tool works on its own tables (sysbench's in `public` or database
# sbtest, dyno's in its own schema or database), made afresh before each run (`sysbench cleanup`
# and `prepare` before sysbench's, not in its CPU; dyno makes its own in each run, in its CPU)
# and dropped after it (`sysbench cleanup`; dyno drops its own): the same server state for both.
# Left behind, sysbench's tables had their dead rows purged or vacuumed on the server's core
# while dyno ran next (2026-11-28). Without that, sysbench's table aged over the rounds (its
# updates, deletes and inserts) and PostgreSQL took up to twice as long over its range selects as
# over dyno's fresh table (a packet capture, 2026-11-28). sysbench restarts a transaction that hits a
# deadlock, and so do dyno's sysbench built-ins (their default --max-tries). Why uniform: sysbench's default,
# special, puts three quarters of the ids on 76 rows, and under 8 clients oltp_read_write then
# deadlocks about ten times a second on PostgreSQL, each found only after its deadlock_timeout
# (1 s) — the rate becomes a draw of how many deadlocks a run had, for either tool (81 and 93 in
# 8 s, 2026-11-26), not a measure of the tool. Then, per database and workload, the same pair
# twice more at fixed rates, a tenth and a half of sysbench's closed-loop rate in that round
# (sysbench --rate, dyno --rate): a closed loop's latency follows its rate (the same 8 clients at
# a higher rate wait less), so only at one rate do the two latencies measure the same thing.
# sysbench times a transaction from when its timer thread queued it (so without that thread's
# lateness, but with the wake-up of the worker thread it hands the transaction to), dyno from when
# it was due (with its own lateness, the schedule lag); dyno's service time (from each
# transaction's actual start) is shown beside. At a tenth of the server's capacity nothing
# queues and the two figures measure the same round trip; at half, sysbench's late timer thread
# sends bunched transactions that wait at the server (a packet capture, 2026-11-28:
# docs/src/measurements/sql.md). Last, the pair once more with one client each, in a closed
# loop: neither tool's clients wait for one another at the server, nor for a timer thread, so
# both time the same lone round trip from its start (the client's wake-up at each reply in it).
# sysbench prints its percentile in milliseconds with two decimals: a point select's median of
# 60-90 µs comes out as 0.07, 0.08 or 0.09, steps of 11-14%. Its histogram (--histogram) prints
# the same buckets with three: 1,024 of them, each 1.8% wider than the one before, from 1 µs to
# 100 s. The script reads sysbench's p50 from there by sysbench's own rule (the first bucket
# whose running count reaches half the transactions, rounded) and checks that it rounds to the
# two-decimal figure sysbench printed.
# Traffic stays on 127.0.0.1.
# Usage: bench/sql-vs-sysbench.sh [ROUNDS] [SECONDS] [CLIENTS] [RAND_TYPE]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3}
secs=${2:-10}
clients=${3:-8}
rand=${4:-uniform}
[ -x /usr/bin/time ] || install time
command -v sysbench >/dev/null || install sysbench
find_postgres
cargo build --release -q
dyno=$PWD/target/release/dyno
scratch
cleanup() {
  set +e
  stop_postgres
  stop_mariadb
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

start_postgres
start_mariadb
declare -A sb_args dyno_url
sb_args[postgres]="--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port=$pgport --pgsql-user=dyno --pgsql-db=postgres"
sb_args[mariadb]="--db-driver=mysql --mysql-host=127.0.0.1 --mysql-port=$myport --mysql-user=dyno --mysql-password=secret --mysql-db=sbtest"
dyno_url[postgres]="postgres://dyno@127.0.0.1:$pgport/postgres"
dyno_url[mariadb]="mysql://dyno:secret@127.0.0.1:$myport"
echo "$($dyno --version); $(sysbench --version)"
echo "servers on core 1, generators on core 0; $rounds rounds of ${secs}s, -c $clients, --rand-type $rand"

sysbench_run() { # DB WORKLOAD ROUND [RATE|0] [CLIENTS] -> "TPS CPU_PER_TX_US P50_MS -" (no service time)
  local cpu
  # Fresh tables for each run, as dyno makes its own in each (outside the timed part of both).
  # shellcheck disable=SC2086
  sysbench ${sb_args[$1]} oltp_read_write cleanup >/dev/null
  # shellcheck disable=SC2086
  sysbench ${sb_args[$1]} oltp_read_write prepare >/dev/null
  # shellcheck disable=SC2086
  cpu=$(timed "$work/sysbench.out" taskset -c 0 sysbench ${sb_args[$1]} --threads="${5:-$clients}" \
    --time="$secs" --percentile=50 --histogram=on --rand-type="$rand" --rate="${4:-0}" "$2" run)
  # And gone after it, as dyno drops its own: left behind, its dead rows were purged (MariaDB)
  # or vacuumed (PostgreSQL) on the server's core while dyno ran next.
  # shellcheck disable=SC2086
  sysbench ${sb_args[$1]} oltp_read_write cleanup >/dev/null
  python3 - "$work/sysbench.out" "$cpu" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
tx, tps = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", t).groups()
printed = re.search(r"50th percentile:\s+([\d.]+)", t).group(1)
# sysbench's rule (sb_histogram_snapshot_get_pct) over its printed buckets: the first whose
# running count reaches floor(n * 50 / 100 + 0.5), n the histogram's whole count.
buckets = [(float(v), int(c)) for v, c in re.findall(r"^\s*([\d.]+) \|\**\s+(\d+)$", t, re.M)]
n = sum(c for _, c in buckets)
need, seen = int(n * 0.5 + 0.5), 0
for value, count in buckets:
    seen += count
    if seen >= need:
        break
assert abs(value - float(printed)) <= 0.0051, f"histogram's p50 {value} against the printed {printed}"
print(tps, float(sys.argv[2]) * 1e6 / int(tx), value, "-")
PY
}

dyno_run() { # DB WORKLOAD ROUND [RATE|0] [CLIENTS] -> "TPS CPU_PER_TX_US P50_MS SERVICE_P50_MS"
  local cpu out="$work/dyno-$1-$2-$3-${4:-0}-${5:-$clients}" rate=()
  [ "${4:-0}" != 0 ] && rate=(--rate "$4")
  cpu=$(timed /dev/null taskset -c 0 "$dyno" run --suite sql -b "$2" -c "${5:-$clients}" -d "${secs}s" \
    --rand-type "$rand" --quiet "${rate[@]}" -o "$out" "${dyno_url[$1]}")
  python3 - "$out/run.json" "$cpu" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["cases"][0]
assert c["status"] == "ok", c["reason"]
r = c["reps"][0]
tx = r["ops"] - r["errors"]
# In an open loop, also the service time: from each transaction's actual start, the lag left out.
service = r["by_op"].get("service time", r)["latency_ns"]["p50"]
print(r["ops_per_s"], float(sys.argv[2]) * 1e6 / tx, r["latency_ns"]["p50"] / 1e6, f"{service / 1e6:.3f}")
PY
}

results=$work/results
: >"$results"
printf "%-6s %-9s %-18s %-9s %10s %12s %9s %11s\n" round db workload tool tps "CPU/tx µs" "p50 ms" "service p50"
for round in $(seq 1 "$rounds"); do
  for db in postgres mariadb; do
    for workload in oltp_read_write oltp_point_select; do
      order="sysbench dyno"
      [ $((round % 2)) -eq 0 ] && order="dyno sysbench"
      for tool in $order; do
        read -r tps cpu p50 svc <<<"$("${tool}_run" "$db" "$workload" "$round")"
        printf "%-6s %-9s %-18s %-9s %10.0f %12.1f %9.3f %11s\n" "$round" "$db" "$workload" "$tool" "$tps" "$cpu" "$p50" "$svc"
        echo "$round $db $workload $tool $tps $cpu $p50 $svc" >>"$results"
        [ "$tool" = sysbench ] && closed=$tps
      done
      for part in 10 2; do
        fixed=$(python3 -c "print(max(1, round($closed / $part)))")
        for tool in $order; do
          read -r tps cpu p50 svc <<<"$("${tool}_run" "$db" "$workload" "$round" "$fixed")"
          printf "%-6s %-9s %-18s %-9s %10.0f %12.1f %9.3f %11s  at --rate %s\n" "$round" "$db" "$workload" "$tool" "$tps" "$cpu" "$p50" "$svc" "$fixed"
          echo "$round $db $workload $tool@$part $tps $cpu $p50 $svc" >>"$results"
        done
      done
      for tool in $order; do
        read -r tps cpu p50 svc <<<"$("${tool}_run" "$db" "$workload" "$round" 0 1)"
        printf "%-6s %-9s %-18s %-9s %10.0f %12.1f %9.3f %11s  one client\n" "$round" "$db" "$workload" "$tool" "$tps" "$cpu" "$p50" "$svc"
        echo "$round $db $workload $tool@1c $tps $cpu $p50 $svc" >>"$results"
      done
    done
  done
done

python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print()
print("dyno / sysbench, per round (median):")
for db in ("postgres", "mariadb"):
    for w in ("oltp_read_write", "oltp_point_select"):
        by = {}
        for r in rows:
            if r[1] == db and r[2] == w:
                by.setdefault(r[0], {})[r[3]] = [float(x) if x != "-" else None for x in r[4:]]
        # (figure of dyno's, of sysbench's): dyno's service time against sysbench's one p50.
        for (i, j), what, a, b in (((0, 0), "rate", "dyno", "sysbench"),
                                   ((1, 1), "CPU per transaction", "dyno", "sysbench"),
                                   ((2, 2), "p50 latency", "dyno", "sysbench"),
                                   ((2, 2), "p50 at 1/10 the rate", "dyno@10", "sysbench@10"),
                                   ((3, 2), "  service time p50", "dyno@10", "sysbench@10"),
                                   ((2, 2), "p50 at 1/2 the rate", "dyno@2", "sysbench@2"),
                                   ((3, 2), "  service time p50", "dyno@2", "sysbench@2"),
                                   ((0, 0), "rate, one client", "dyno@1c", "sysbench@1c"),
                                   ((2, 2), "p50, one client", "dyno@1c", "sysbench@1c")):
            v = [d[a][i] / d[b][j] for d in by.values()]
            print(f"  {db:9} {w:18} {what:20} {', '.join(f'{x:.2f}' for x in v)} ({statistics.median(v):.2f}x)")
PY
