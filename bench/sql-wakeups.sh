#!/usr/bin/env bash
# What a select-only transaction costs the server's core beyond the server's own work: waking
# the generator. On loopback the server's send runs the client's receive path on the server's
# core, and when the client's thread sleeps that path wakes it, with an inter-processor
# interrupt (IPI) when the client's core is idle. pgbench and dyno (on epoll and on io_uring)
# run the same built-in select-only script in turn, in alternating rounds, on one private
# PostgreSQL on core 1, the generators on core 0 (pgbench with -j 1). In a window in the middle
# of each run (from 5 s to 10 s of 12) the script reads, per transaction:
#   - the IPIs delivered to the generator's core (/proc/interrupts: function-call and
#     rescheduling interrupts), each one a wake-up of a sleeping generator paid by the sender;
#   - the generator's own CPU (user + system, /proc/PID/stat) per transaction;
#   - the server core's time per transaction (/proc/stat for core 1): user and system (the
#     server's own work) and softirq, where on loopback the receive path of every reply the
#     server sends runs, the generator's wake-up included;
# and, with perf, the share of the server core's samples spent waking the generator
# (`sock_def_readable` under the server's send). The rate is the tool's own, over its run.
# Traffic stays on 127.0.0.1.
# TOOLS (default "pgbench epoll uring") picks the generators: pgbench, dyno on epoll or on
# uring, `nap`, dyno on epoll with --nap ${NAP:-50us}, or `old`, the dyno at OLD_DYNO on epoll
# (a build to set beside this one). PERF=0 leaves
# perf out: its sampling of the server's core costs the server some of its rate.
# Usage: [TOOLS=...] [OLD_DYNO=path] [PERF=0] bench/sql-wakeups.sh [ROUNDS] [CLIENTS] [SCALE]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3}
clients=${2:-8}
scale=${3:-$clients}
read -r -a tools <<<"${TOOLS:-pgbench epoll uring}"
for t in "${tools[@]}"; do
  case $t in
    pgbench | epoll | uring | nap) ;;
    old) [ -x "${OLD_DYNO:-}" ] || { echo "TOOLS has old: set OLD_DYNO to a dyno binary" >&2; exit 2; } ;;
    *) echo "TOOLS: unknown generator $t (pgbench, epoll, uring, nap, old)" >&2; exit 2 ;;
  esac
done
pgbench_beside_postgres
perf=$(command -v perf || true)
[ "${PERF:-1}" = 0 ] && perf=
echo "$($dyno --version); pgbench $("$pgbin/pgbench" --version | awk '{print $3}'); perf: ${perf:-none}"
echo "server on core 1, generators on core 0; $rounds rounds, -c $clients, scale $scale, window 5-10 s of 12"

ipis() { awk '/^ *(CAL|RES):/ { n += $2 } END { print n }' /proc/interrupts; } # to core 0
cpu_of() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }                       # a process's ticks
core1() { awk '/^cpu1 / { print $2, $4, $8 }' /proc/stat; }                   # user, system, softirq

# One tool's run: TOOL ->
#   "TPS IPIS_PER_TX CPU_PER_TX_US SERVER_USER SERVER_SYSTEM SERVER_SOFTIRQ WAKE_SHARE"
run_one() {
  local out="$work/$1" pid i0 i1 b0 b1 c0 c1 t0 t1 tps share=- bin=$dyno io=$1
  rm -rf "$out" "$out.perf"
  if [ "$1" = pgbench ]; then
    "$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U dyno -i -s "$scale" -q postgres >/dev/null 2>&1
    taskset -c 0 "$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U dyno -S -M prepared \
      -c "$clients" -j 1 -T 12 -n postgres >"$out.txt" 2>&1 &
  else
    nap=()
    [ "$1" = old ] && bin=$OLD_DYNO io=epoll
    [ "$1" = nap ] && io=epoll nap=(--nap "${NAP:-50us}")
    # dyno makes its tables first (about a second at scale 8), then runs 12 s; --no-warmup so
    # the window falls in the measured part as pgbench's does.
    taskset -c 0 "$bin" run --suite sql -b select-only --scale "$scale" -c "$clients" -d 12s \
      --reps 1 --no-warmup --io "$io" "${nap[@]}" --quiet -o "$out" "$pg" >"$out.txt" 2>&1 &
  fi
  pid=$!
  sleep 5
  i0=$(ipis) b0=$(cpu_of "$pid") c0=$(core1) t0=$(date +%s%N)
  if [ -n "$perf" ]; then
    "$perf" record -q -C 1 -e cpu-clock -F 2000 -g -o "$out.perf" -- sleep 5 >/dev/null 2>&1 || sleep 5
  else
    sleep 5
  fi
  i1=$(ipis) b1=$(cpu_of "$pid") c1=$(core1) t1=$(date +%s%N)
  wait "$pid"
  if [ "$1" = pgbench ]; then
    tps=$(grep -oP 'tps = \K[\d.]+' "$out.txt")
    "$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U dyno -i -I d -q postgres >/dev/null 2>&1
  else
    tps=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['cases'][0]['reps'][0]['ops_per_s'])" "$out/run.json")
  fi
  if [ -s "$out.perf" ]; then
    # Of the server core's samples, those under the wake-up of the client socket's waiter.
    share=$("$perf" script -i "$out.perf" -F ip,sym 2>/dev/null | python3 -c "
import sys
blocks = sys.stdin.read().split('\n\n')
hit = sum('sock_def_readable' in b for b in blocks if b.strip())
print(f'{100 * hit / max(1, sum(1 for b in blocks if b.strip())):.1f}')")
    share=${share:--}
  fi
  python3 -c "
import sys
tps, di, db = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
tick = 1e6 / float(sys.argv[4])  # µs per clock tick
n = tps * int(sys.argv[6]) / 1e9  # the window's transactions (perf may end it early)
server = [(int(b) - int(a)) * tick / n for a, b in zip(sys.argv[7].split(), sys.argv[8].split())]
print(f'{tps:.0f} {di / n:.3f} {db * tick / n:.2f}', *(f'{x:.2f}' for x in server), sys.argv[5])" \
    "$tps" $((i1 - i0)) $((b1 - b0)) "$(getconf CLK_TCK)" "$share" $((t1 - t0)) "$c0" "$c1"
}

results=$work/results
: >"$results"
printf "%-6s %-8s %9s %8s %10s %13s %15s %16s %8s\n" round tool tps "IPIs/tx" "CPU µs/tx" \
  "server: user" "system µs/tx" "softirq µs/tx" "waking %"
for round in $(seq 1 "$rounds"); do
  order=("${tools[@]}")
  if [ $((round % 2)) -eq 0 ]; then
    order=()
    for ((i = ${#tools[@]} - 1; i >= 0; i--)); do order+=("${tools[i]}"); done
  fi
  for tool in "${order[@]}"; do
    read -r tps ipi cpu user sys soft share <<<"$(run_one "$tool")"
    printf "%-6s %-8s %9s %8s %10s %13s %15s %16s %8s\n" "$round" "$tool" "$tps" "$ipi" "$cpu" \
      "$user" "$sys" "$soft" "$share"
    echo "$tool $tps $ipi $cpu $user $sys $soft $share" >>"$results"
  done
done

python3 - "$results" "${tools[@]}" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print("\nmedians:")
for tool in sys.argv[2:]:
    r = [x for x in rows if x[0] == tool]
    med = lambda i: statistics.median(float(x[i]) for x in r if x[i] != "-") if any(x[i] != "-" for x in r) else float("nan")
    server = med(4) + med(5) + med(6)
    waking = "" if med(7) != med(7) else f", {med(7):.1f}% of its samples waking the generator"
    print(f"  {tool:8} {med(1):9.0f} tps  {med(2):.3f} IPIs/tx  {med(3):.2f} µs/tx of CPU;  the server's "
          f"core a transaction: user {med(4):.2f}, system {med(5):.2f}, softirq {med(6):.2f} µs "
          f"(the medians' sum {server:.2f}){waking}")
PY
