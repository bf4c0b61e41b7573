#!/usr/bin/env bash
# YCSB's workloads by one generator and by N shards met at a rendezvous, on one redis-server,
# side by side in one run: the merged table in the README's "Beyond one machine". redis-server
# (no persistence) on core 1; the single generator, then the N shards, all on core 0. Both
# drive the same plan: RECORDS records (each shard loads its slice), OPERATIONS per workload,
# CLIENTS clients in all (each shard its part). Prints the single run's table, the merged one,
# and the ratio of their rates per workload.
# Usage: bench/ycsb-shards.sh [SHARDS] [RECORDS] [OPERATIONS] [CLIENTS] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
shards=${1:-4}
records=${2:-20000}
operations=${3:-100000}
clients=${4:-8}
out=${5:-bench-results/ycsb-shards-$(date -u +%Y%m%dT%H%M%SZ)}
command -v redis-server >/dev/null 2>&1 || install redis-server
cargo build --release -q
dyno=./target/release/dyno
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
port=$(free_port)
taskset -c 1 redis-server --bind 127.0.0.1 --port "$port" --save "" --appendonly no --dir "$work" >/dev/null &
pids+=($!)
for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
plan=(--suite ycsb-a,ycsb-b,ycsb-c,ycsb-d,ycsb-f "redis://127.0.0.1:$port" -n "$records"
  --operations "$operations" -c "$clients")
echo "redis $(redis-server --version | awk '{print $3}'); redis-server on core 1, every generator on core 0"
taskset -c 0 "$dyno" run "${plan[@]}" -o "$out/single" -q >/dev/null
rendezvous=127.0.0.1:$(free_port)
shard_pids=()
for i in $(seq 0 $((shards - 1))); do
  taskset -c 0 "$dyno" run "${plan[@]}" --shard "$i/$shards" --rendezvous "$rendezvous" \
    -o "$out/shards" -q >/dev/null &
  shard_pids+=($!)
done
for p in "${shard_pids[@]}"; do wait "$p"; done
"$dyno" merge "$out/shards" -o "$out/merged" -f markdown
echo "keys left on the server: $(redis-cli -p "$port" dbsize)"
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
one = json.load(open(f"{out}/single/run.json"))
merged = json.load(open(f"{out}/merged/run.json"))
def rates(r):
    return {c["test"]: (c["summary"]["ops_per_s"]["median"], sum(x["ops"] for x in c["reps"])) for c in r["cases"]}
a, b = rates(one), rates(merged)
print(f"{'test':6} {'single ops/s':>14} {'merged ops/s':>14} {'ratio':>7} {'ops (single / merged)':>24}")
for t in a:
    print(f"{t:6} {a[t][0]:14,.0f} {b[t][0]:14,.0f} {b[t][0] / a[t][0]:7.2f} {a[t][1]:>11,} / {b[t][1]:<11,}")
PY
echo "records: $out"
