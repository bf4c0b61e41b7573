#!/usr/bin/env bash
# The same dyno kv workload against dyno's benchmark host and against redis-server: the shootout
# with 50 clients (one connection each, one round trip per operation, no pipelining), 300-byte
# objects, OBJECTS per client (default 1000), REPS repetitions (default 3). Each server is pinned
# to core 1, dyno to core 0; the two targets run one after the other in one run, one column each.
# Redis runs with no persistence (like the host, which keeps objects in memory).
# Usage: bench/host-vs-redis.sh [OBJECTS] [REPS]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
objects=${1:-1000}
reps=${2:-3}
command -v redis-server >/dev/null 2>&1 || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server
}
cargo build --release -q
dyno=$PWD/target/release/dyno
work=$(mktemp -d)
pids=()
cleanup() {
  set +e   # a stopped server's exit status must not end the cleanup early
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
hport=$(free_port)
rport=$(free_port)
taskset -c 1 "$dyno" serve --listen "127.0.0.1:$hport" > /dev/null &
pids+=($!)
taskset -c 1 redis-server --bind 127.0.0.1 --port "$rport" --save "" --appendonly no --dir "$work" > /dev/null &
pids+=($!)
for port in "$hport" "$rport"; do
  for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1',$port))" 2>/dev/null && break
    sleep 0.1
  done
done
echo "redis $(redis-server --version | awk '{print $3}'), $($dyno --version); server on core 1, dyno on core 0"
# Each server's CPU time (user + system, in clock ticks) over the run: the two serve the same
# operations, one target after the other, so the ratio is their ratio of CPU per operation.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
h0=$(ticks "${pids[0]}"); r0=$(ticks "${pids[1]}")
taskset -c 0 "$dyno" run "dyno://127.0.0.1:$hport" "redis://127.0.0.1:$rport" \
  -c 50 -n "$objects" -r "$reps" --no-warmup -o "$work/run" > "$work/table.txt" 2>/dev/null
h1=$(ticks "${pids[0]}"); r1=$(ticks "${pids[1]}")
sed -n '1,12p' "$work/table.txt"
hz=$(getconf CLK_TCK)
awk -v h=$((h1 - h0)) -v r=$((r1 - r0)) -v hz="$hz" 'BEGIN {
  printf "server CPU over the run: dyno serve %.2f s, redis-server %.2f s (dyno/redis %.2f)\n", h / hz, r / hz, h / r }'
# The rates side by side: dyno serve / redis-server per test.
awk 'NR <= 12 && $1 ~ /^(add|update|warm|hot)$/ { gsub(",", "", $2); gsub(",", "", $3);
  printf "%-8s dyno/redis %.2f\n", $1, $2 / $3 }' "$work/table.txt"
