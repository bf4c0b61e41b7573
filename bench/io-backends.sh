#!/usr/bin/env bash
# dyno on io_uring against dyno on epoll (`--io uring` / `--io epoll`), side by side on the same
# nginx serving a static 13-byte file: nginx on core 1, dyno on core 0. First ROUNDS rounds of a
# closed loop (50 connections, one load thread, DURATION each; which backend goes first
# alternates), printing each run's rate, CPU per request (user + system of dyno, from
# getrusage) and system calls per request (as the record counts them), then the ratios per
# round and their median; then an open loop at RATE requests/s on each backend twice, with
# dyno's CPU as a share of a core. Needs nginx (installed from the distribution's packages if
# missing), taskset and python3. Traffic stays on 127.0.0.1.
# Usage: bench/io-backends.sh [DURATION] [ROUNDS] [RATE]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-4s}
rounds=${2:-6}
open_rate=${3:-36000}
[ -x /usr/sbin/nginx ] || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx; }
cargo build --release -q
dyno=$PWD/target/release/dyno

. bench/lib.sh
. bench/nginx.sh
work=$(mktemp -d)
trap 'stop_nginx; rm -rf "$work"' EXIT
start_nginx "$work"

# The record's generator check of a results directory: "RATE SYSCALLS_PER_REQUEST BACKEND".
generator() {
  python3 - "$1" <<'PY'
import json, sys
l = json.load(open(sys.argv[1] + "/run.json"))["cases"][0]["reps"][0]["detail"]["load"]
g = l["generator"]
print(l["responses_per_s"], g.get("syscalls_per_request"), g.get("io"))
PY
}

echo "closed loop, 50 connections, $duration each, $($dyno --version)"
printf '%-6s %-5s %10s %12s %14s\n' io round req/s CPU/request syscalls/req
for round in $(seq "$rounds"); do
  order="epoll uring"; [ $((round % 2)) = 0 ] && order="uring epoll"
  for io in $order; do
    out=$(measure "$dyno" run "$url" -c 50 -d "$duration" -r 1 --threads 1 --io "$io" -f json -o "$work/c$round$io")
    set -- $(dyno_load_figures "$out")
    cpu=$3
    set -- $(generator "$work/c$round$io")
    printf '%-6s %-5s %10.0f %10.2fµs %14.2f\n' "$io" "$round" "$1" "$cpu" "$2"
    echo "$io $round $1 $cpu" >> "$work/rounds"
  done
done
python3 - "$work/rounds" <<'PY'
import statistics, sys
d = {}
for l in open(sys.argv[1]):
    io, r, rate, cpu = l.split()
    d[(io, r)] = (float(rate), float(cpu))
rs = sorted({r for _, r in d}, key=int)
for name, k in (("CPU per request", 1), ("rate", 0)):
    x = [d[("uring", r)][k] / d[("epoll", r)][k] for r in rs]
    print("io_uring / epoll, %-15s %s (median %.2fx)" % (name, " ".join("%.2f" % v for v in x), statistics.median(x)))
PY

echo
echo "open loop at $open_rate requests/s, 50 connections, $duration:"
for io in epoll uring epoll uring; do
  taskset -c 0 "$dyno" run "$url" --rate "$open_rate" -c 50 -d "$duration" -r 1 --threads 1 --io "$io" \
      -f json -o "$work/o$io$RANDOM" 2>/dev/null | python3 -c '
import json, sys
r = json.loads(sys.stdin.readline()); c = r["cases"][0]; s = c["summary"]; l = c["reps"][0]["detail"]["load"]; g = l["generator"]
cpu = (g["cpu_user_ns"] + g["cpu_sys_ns"]) / (c["reps"][0]["wall_ns"] or 1)
print("%-6s %8.0f/s  p50 %.2f ms  p99 %.2f ms  dyno CPU %3.0f%% of a core  syscalls/req %.2f  %s" % (sys.argv[1],
      l["responses_per_s"], s["latency_ns"]["p50"] / 1e6, s["latency_ns"]["p99"] / 1e6, cpu * 100,
      g.get("syscalls_per_request") or 0, "valid" if g["valid"] else "INVALID"))' "$io"
done
