#!/usr/bin/env bash
# NorduGrid's A-Hash tables (../shared/seeds/004), reproduced for Redis with Sentinel and for etcd
# side by side: examples/ahash.toml, every level (centralized, stable, unstable-clients,
# all-unstable, kill-master) on each system, each test (get, then set) for DURATION (default
# 30 s) with a disturbance every EVERY (default 10 s; the seed's was 60 s, the plan's default).
# dyno runs on core 0 and every server it starts on core 1 (`taskset`). Prints the two tables
# (get and set, one row per system and level) and leaves the record, the report and the plots
# (series-rate-SYSTEM-LEVEL.png: rate per 100 ms with the faults shaded) in OUT.
# Needs redis-server, redis-cli, etcd and etcdctl (Debian's redis-server, etcd-server and
# etcd-client: installed if missing) and taskset. Traffic stays on 127.0.0.1.
# Usage: bench/failover.sh [EVERY] [DURATION] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
every=${1:-10s}
duration=${2:-30s}
out=${3:-bench-results/failover-$(date -u +%Y%m%dT%H%M%SZ)}
missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
cargo build --release -q
plan=$(mktemp --suffix .toml)
trap 'rm -f "$plan"' EXIT
# The example at this run's period and duration, each server pinned to core 1.
sed -e "s/^level_every = .*/level_every = \"$every\"/" \
    -e "s/^duration = .*/duration = \"$duration\"/" \
    -e 's/^cmd = "/cmd = "taskset -c 1 /' \
    examples/ahash.toml > "$plan"
taskset -c 0 ./target/release/dyno run "$plan" -o "$out" --format markdown
echo "record, report and plots: $out"
