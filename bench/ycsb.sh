#!/usr/bin/env bash
# YCSB's workloads on redis:// beside redis-benchmark's GET and SET on the same server, in the
# same run, so the harness's own cost per operation is visible. redis-server (no persistence) on
# core 1, the generators on core 0, one after the other in each of ROUNDS rounds (default 3):
#   - dyno run --suite ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-f (e needs an ordered scan: n/a on
#     Redis) with -c 50, RECORDS records (default 10000), OPERATIONS per workload (default
#     100000): per workload, operations/s and p99 of the whole workload;
#   - redis-benchmark -t get,set -c 50 -P 1 -d 1000 -r RECORDS -n OPERATIONS: requests/s and p99.
# The generator's CPU per operation (user + system of the process, from /proc) is printed for
# each: dyno's includes the check of every record it reads (1,000 bytes regenerated and compared)
# and YCSB's key choice; redis-benchmark's is a bare loop. Traffic stays on 127.0.0.1.
# Usage: bench/ycsb.sh [RECORDS] [OPERATIONS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
records=${1:-10000}
operations=${2:-100000}
rounds=${3:-3}
command -v redis-server >/dev/null 2>&1 || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server
}
cargo build --release -q
dyno=$PWD/target/release/dyno
work=$(mktemp -d)
pid=
cleanup() {
  set +e
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 1 redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$work" >/dev/null &
pid=$!
for _ in $(seq 50); do
  redis-cli -p "$port" ping >/dev/null 2>&1 && break
  sleep 0.1
done
echo "redis $(redis-server --version | awk '{print $3}'), $($dyno --version); redis-server on core 1, generators on core 0"
echo "records $records, operations $operations per workload, 50 clients, rounds $rounds"
[ -x /usr/bin/time ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time; }
# Runs a command with its standard output into FILE; prints its CPU (user + system) in seconds,
# as GNU time reports it.
cpu_of() {
  local file=$1
  shift
  /usr/bin/time -f "%U %S" -o "$work/cpu" "$@" >"$file" 2>"$work/err" || { cat "$work/err"; exit 1; }
  awk '{ print $1 + $2 }' "$work/cpu"
}
printf "%-6s %-22s %12s %10s %14s\n" round what "ops/s" p99 "CPU/op (µs)"
for round in $(seq 1 "$rounds"); do
  out="$work/r$round"
  cpu=$(cpu_of /dev/null taskset -c 0 "$dyno" run --suite ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-f \
    "redis://127.0.0.1:$port" -c 50 -n "$records" --operations "$operations" --quiet -o "$out")
  python3 - "$out/run.json" "$cpu" "$round" "$records" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
cpu, rnd = float(sys.argv[2]), sys.argv[3]
ops_all = sum(c["reps"][0]["ops"] for c in rec["cases"] if c["reps"])
for c in rec["cases"]:
    if not c["reps"] or c["test"] == "load":
        continue
    rep = c["reps"][0]
    p99 = rep["latency_ns"]["p99"] / 1e3
    print(f"{rnd:<6} {'dyno ycsb ' + c['test']:<22} {rep['ops_per_s']:>12,.0f} {p99:>8.0f}µs {'':>14}")
print(f"{rnd:<6} {'dyno, whole run':<22} {'':>12} {'':>10} {cpu * 1e6 / ops_all:>14.2f}")
PY
  for t in get set; do
    cpu=$(cpu_of "$work/rb.csv" taskset -c 0 redis-benchmark -p "$port" -t "$t" -c 50 -P 1 -d 1000 \
      -r "$records" -n "$operations" --csv)
    python3 - "$work/rb.csv" "$cpu" "$round" "$t" "$operations" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
cpu, rnd, t, n = float(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
r = rows[0]
print(f"{rnd:<6} {'redis-benchmark ' + t:<22} {float(r['rps']):>12,.0f} {float(r['p99_latency_ms']) * 1e3:>8.0f}µs {cpu * 1e6 / n:>14.2f}")
PY
  done
done
