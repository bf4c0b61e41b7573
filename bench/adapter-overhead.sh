#!/usr/bin/env bash
# The adapter protocol's own cost per operation: the shootout's update test (one put of 300 bytes
# per object, a round trip to the adapter process each) through no-op adapters, beside mem: (the floor of the built-in
# drivers), timed by dyno on its side: the compiled no-op adapter (crates/targets/examples/
# noop_adapter.rs) with JSON lines and with the binary framing, and the Python one
# (adapters/python/noop.py, through the helper) with each. A no-op adapter keeps values only in
# its session's process, so the shootout's read tests after a new session fail (not_found, by
# design) and are not read here. One client, N objects (default
# 20000), 3 repetitions each, ROUNDS rounds (default 3). Two placements: dyno and its adapter
# processes on one core (taskset -c 0: each round trip two process switches on that core), and
# free on both cores (a wake-up across cores each way).
# Usage: bench/adapter-overhead.sh [N] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20000}
rounds=${2:-3}
cargo build --release -q
cargo build --release -q -p targets --example noop_adapter
dyno=$PWD/target/release/dyno
rust=$PWD/target/release/examples/noop_adapter
py=$PWD/adapters/python/noop.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "$($dyno --version); $(python3 --version); one client, $n puts of 300 B per test, 3 repetitions"
# The floor of any pipe round trip here: two processes (Python) passing a byte back and forth,
# on one core and across the two.
pingpong() {
  python3 - "$1" "$2" <<'PY'
import os, sys, time
n = 20000
r1, w1 = os.pipe(); r2, w2 = os.pipe()
a, b = int(sys.argv[1]), int(sys.argv[2])
pid = os.fork()
if pid == 0:
    os.sched_setaffinity(0, {b})
    for _ in range(n + 1):
        os.write(w2, os.read(r1, 64))
    os._exit(0)
os.sched_setaffinity(0, {a})
os.write(w1, b"x"); os.read(r2, 64)
t = time.perf_counter()
for _ in range(n):
    os.write(w1, b"x"); os.read(r2, 64)
dt = time.perf_counter() - t
os.waitpid(pid, 0)
print(f"{dt / n * 1e6:.2f}")
PY
}
echo "a bare pipe round trip (Python, 20,000): one core $(pingpong 0 0) µs, across two cores $(pingpong 0 1) µs"
printf "%-6s %-12s %-34s %12s %12s\n" round placement target "p50/op" "mean/op"
for round in $(seq 1 "$rounds"); do
  for placement in one-core two-cores; do
    pin=()
    [ "$placement" = one-core ] && pin=(taskset -c 0)
    for t in "mem:" "exec:$rust?framing=json" "exec:$rust?framing=binary" "exec:$py?framing=json" "exec:$py?framing=binary"; do
      out="$work/r$round-$placement-$(echo "$t" | md5sum | cut -c1-8)"
      # Exit 3 is expected (the read tests fail on a no-op adapter); anything else is not.
      rc=0
      "${pin[@]}" "$dyno" run "$t" -c 1 -n "$n" --reps 3 --no-warmup --quiet -o "$out" >/dev/null 2>"$work/err" || rc=$?
      [ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$work/err"; exit 1; }
      python3 - "$out/run.json" "$round" "$placement" "$t" "$PWD" <<'PY'
import json, sys
rec = json.load(open(sys.argv[1]))
rnd, placement, t, root = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
case = [c for c in rec["cases"] if c["test"] == "update"][0]
assert case["status"] == "ok", case
p50 = sorted(r["latency_ns"]["p50"] for r in case["reps"])[len(case["reps"]) // 2]
mean = sorted(r["wall_ns"] / r["ops"] for r in case["reps"])[len(case["reps"]) // 2]
name = t.replace(root + "/", "").replace("target/release/examples/", "")
print(f"{rnd:<6} {placement:<12} {name:<34} {p50 / 1e3:>10.2f}µs {mean / 1e3:>10.2f}µs")
PY
    done
  done
done
