#!/usr/bin/env bash
# N shards on this machine against dyno's reference HTTP server, met at a rendezvous, then
# merged: the table in the README's "Beyond one machine". Each shard asks for RATE/N requests
# per second over 4 connections; the server runs on core 1, every shard on core 0.
# Usage: bench/shards.sh [SHARDS] [RATE] [DURATION] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
shards=${1:-4}
rate=${2:-20000}
duration=${3:-10s}
out=${4:-bench-results/shards-$(date -u +%Y%m%dT%H%M%SZ)}
cargo build --release -q
dyno=./target/release/dyno
port=$(free_port)
rendezvous=127.0.0.1:$(free_port)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
taskset -c 1 "$dyno" serve --http --listen "127.0.0.1:$port" >/dev/null 2>&1 &
server=$!
pids+=("$server")
wait_port "$port" 200
shard_pids=()
for i in $(seq 0 $((shards - 1))); do
  taskset -c 0 "$dyno" run "http://127.0.0.1:$port/" --rate "$rate" --duration "$duration" \
    -c $((shards * 4)) --shard "$i/$shards" --rendezvous "$rendezvous" -o "$out" -q >/dev/null &
  shard_pids+=($!)
done
for p in "${shard_pids[@]}"; do wait "$p"; done
"$dyno" merge "$out" -o "$out/merged" -f markdown
echo "shards' and merged records: $out"
