#!/usr/bin/env bash
# dyno's database clients beside the native benchmarks, on the same servers, in one run: what a
# client costs the generator (CPU per operation, user + system) and the rate it reaches. The
# servers run on core 1, every generator on core 0 (so dyno carries all its clients on one
# thread: --threads defaults to the cores it may use). ROUNDS rounds (default 5), one after the
# other within each round; the ratios dyno / native per round, then their median. dyno runs twice
# a round, on io_uring (--io uring) and on epoll (--io epoll), so the ring's gain shows apart from
# the day's noise:
#   - postgres:// shootout, hot reads, -c 8 -n N_PG (default 20000)  vs  pgbench -S -M prepared
#     -c 8 -j 1 (8 × N_PG selects): CPU per read, reads per second;
#   - redis:// shootout, warm and hot reads, -c 50 -n 1000 (300 B)  vs  redis-benchmark -t get
#     -c 50 -P 1 -d 300 (as many GETs): CPU per read, reads per second;
#   - dyno's peak RSS (GNU time) for that redis:// shootout, against the client object cache's
#     payload (50 × 1000 × 300 B = 15 MB).
# dyno's CPU for a test is its process's (every thread) from the start to the end of the test,
# as the record keeps it (cases[].reps[].detail.store.client_cpu_ns); pgbench's and
# redis-benchmark's are their processes' whole runs (GNU time), setup included — which favours
# them. With OLD_DYNO=PATH (another dyno build), that build's postgres:// runs beside this one's
# in every round, on both backends (first in odd rounds, last in even ones), and the summary
# gives this build's CPU per read over its.
# Traffic stays on 127.0.0.1.
# Usage: [OLD_DYNO=PATH] bench/db-clients.sh [ROUNDS] [N_PG]
set -euo pipefail
old_dyno=${OLD_DYNO:+$(realpath "$OLD_DYNO")}
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
npg=${2:-20000}
need() { command -v "$1" >/dev/null 2>&1 || [ -x "$2" ]; }
need redis-server /usr/bin/redis-server || install redis-server redis-tools
[ -x /usr/bin/time ] || install time
find_postgres postgresql-contrib
[ -x "$pgbin/pgbench" ] || install postgresql-contrib
cargo build --release -q
dyno=$PWD/target/release/dyno
scratch
cleanup() {
  set +e
  # The postmaster by its own PID file (runuser does not pass a signal on); redis by its PID.
  stop_postgres
  stop_pids INT
  rm -rf "$work"
}
trap cleanup EXIT

start_postgres
"$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U dyno -i -s 1 -q postgres >/dev/null 2>&1
pg="postgres://dyno@127.0.0.1:$pgport/postgres"

rport=$(free_port)
taskset -c 1 redis-server --bind 127.0.0.1 --port "$rport" --save "" --appendonly no --dir "$work" >/dev/null &
pids+=($!)
for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done

echo "$($dyno --version); PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}'), redis $(redis-server --version | awk '{print $3}')"
echo "servers on core 1, generators on core 0; $rounds rounds"

# Runs a command (its output into FILE); prints "CPU_SECONDS MAX_RSS_KB" as GNU time reports them.
timed() {
  local file=$1
  shift
  /usr/bin/time -f "%U %S %M" -o "$work/time" "$@" >"$file" 2>"$work/err" || { cat "$work/err" "$file"; exit 1; }
  awk '{ print $1 + $2, $3 }' "$work/time"
}

# dyno's figures for the read tests of a shootout record: "READS CPU_NS RATE".
reads_of() {
  python3 - "$1" "$2" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
tests = sys.argv[2].split(",")
ops = cpu = wall = 0
for c in rec["cases"]:
    if c["test"] in tests:
        for r in c["reps"]:
            ops += r["ops"]
            cpu += r["detail"]["store"]["client_cpu_ns"]
            wall += r["wall_ns"]
print(ops, cpu, ops / wall * 1e9)
PY
}

# One postgres:// shootout by the dyno at $1 on backend $2 ($3 names an older build): sets
# d_cpu (µs per hot read) and rate, and prints them.
pg_reads() {
  local out="$work/pg-$2-$round$3"
  timed /dev/null taskset -c 0 "$1" run "$pg" -c 8 -n "$npg" --reps 1 --io "$2" --quiet -o "$out" >/dev/null
  read -r ops cpu rate < <(reads_of "$out/run.json" hot)
  d_cpu=$(python3 -c "print($cpu / $ops / 1e3)")
  printf "%-6s %-42s %12.0f %14.2f\n" "$round" "dyno${3:+ ($3)} postgres:// hot -c 8 ($2)" "$rate" "$d_cpu"
}

# OLD_DYNO's postgres:// on both backends: a row "pgold ROUND CPU RATE (epoll) CPU RATE (io_uring)".
pg_old() {
  local row="pgold $round" io
  for io in epoll uring; do
    pg_reads "$old_dyno" "$io" old
    row="$row $d_cpu $rate"
  done
  echo "$row" >>"$results"
}

printf "%-6s %-42s %12s %14s %10s\n" round what "reads/s" "CPU/read (µs)" "peak RSS"
results=$work/results
: >"$results"
for round in $(seq 1 "$rounds"); do
  # PostgreSQL
  [ -n "$old_dyno" ] && [ $((round % 2)) = 1 ] && pg_old
  for io in epoll uring; do
    pg_reads "$dyno" "$io" ""
    [ "$io" = epoll ] && { e_cpu=$d_cpu; e_rate=$rate; }
  done
  # pg_reads set d_cpu and rate: keep this build's (io_uring) for its row.
  n_cpu=$d_cpu n_rate=$rate
  [ -n "$old_dyno" ] && [ $((round % 2)) = 0 ] && pg_old
  d_cpu=$n_cpu rate=$n_rate
  n=$((npg))
  read -r cpu _ < <(timed "$work/pgbench.out" taskset -c 0 "$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U dyno \
    -S -M prepared -c 8 -j 1 -t "$n" postgres)
  tps=$(awk '/^tps = / { print $3; exit }' "$work/pgbench.out")
  done_tx=$(awk -F': ' '/number of transactions actually processed/ { split($2, a, "/"); print a[1] }' "$work/pgbench.out")
  p_cpu=$(python3 -c "print($cpu * 1e6 / $done_tx)")
  printf "%-6s %-42s %12.0f %14.2f\n" "$round" "pgbench -S -M prepared -c 8 -j 1" "$tps" "$p_cpu"
  echo "pg $round $d_cpu $p_cpu $rate $tps $e_cpu $e_rate" >>"$results"

  # Redis
  for io in epoll uring; do
    read -r _ rss < <(timed /dev/null taskset -c 0 "$dyno" run "redis://127.0.0.1:$rport" -c 50 -n 1000 --size 300 \
      --reps 1 --io "$io" --quiet -o "$work/redis-$io-$round")
    read -r ops cpu rate < <(reads_of "$work/redis-$io-$round/run.json" warm,hot)
    d_cpu=$(python3 -c "print($cpu / $ops / 1e3)")
    printf "%-6s %-42s %12.0f %14.2f %7.1f MiB\n" "$round" "dyno redis:// warm+hot -c 50 ($io)" "$rate" "$d_cpu" "$(python3 -c "print($rss / 1024)")"
    [ "$io" = epoll ] && { e_cpu=$d_cpu; e_rate=$rate; }
  done
  read -r cpu _ < <(timed "$work/rb.csv" taskset -c 0 redis-benchmark -p "$rport" -t get -c 50 -P 1 -d 300 \
    -n "$ops" --csv)
  rps=$(python3 -c "import csv; print(list(csv.DictReader(open('$work/rb.csv')))[0]['rps'])")
  r_cpu=$(python3 -c "print($cpu * 1e6 / $ops)")
  printf "%-6s %-42s %12.0f %14.2f\n" "$round" "redis-benchmark -t get -c 50 -d 300" "$rps" "$r_cpu"
  echo "redis $round $d_cpu $r_cpu $rate $rps $rss $e_cpu $e_rate" >>"$results"
done

python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
def line(what, cpu, rate):
    print(f"{what}: CPU per read {', '.join(f'{x:.2f}' for x in cpu)} (median {statistics.median(cpu):.2f}x); "
          f"rate {', '.join(f'{x:.2f}' for x in rate)} (median {statistics.median(rate):.2f}x)")
def show(kind, what):
    rs = [r for r in rows if r[0] == kind]
    line(f"{what} (io_uring)", [float(r[2]) / float(r[3]) for r in rs], [float(r[4]) / float(r[5]) for r in rs])
    line(f"{what} (epoll)", [float(r[-2]) / float(r[3]) for r in rs], [float(r[-1]) / float(r[5]) for r in rs])
    line(f"  dyno io_uring / epoll", [float(r[2]) / float(r[-2]) for r in rs], [float(r[4]) / float(r[-1]) for r in rs])
    return rs
print()
print("dyno / native, per round:")
pg = show("pg", "postgres:// vs pgbench")
old = {r[1]: r for r in rows if r[0] == "pgold"}
if old:
    both = [(r, old[r[1]]) for r in pg if r[1] in old]
    line("  this build / OLD_DYNO (epoll)", [float(r[-2]) / float(o[2]) for r, o in both],
         [float(r[-1]) / float(o[3]) for r, o in both])
    line("  this build / OLD_DYNO (io_uring)", [float(r[2]) / float(o[4]) for r, o in both],
         [float(r[4]) / float(o[5]) for r, o in both])
rs = show("redis", "redis:// vs redis-benchmark")
rss = [int(r[6]) / 1024 for r in rs]
payload = 50 * 1000 * 300 / 2**20
print(f"dyno peak RSS, redis:// shootout -c 50 -n 1000: {', '.join(f'{x:.1f}' for x in rss)} MiB "
      f"(median {statistics.median(rss):.1f} MiB; cache payload {payload:.1f} MiB + 16 MiB = {payload + 16:.1f} MiB)")
PY
