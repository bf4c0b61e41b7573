#!/usr/bin/env bash
# dyno against ghz, in turn, on one gRPC server: grpc-go echoing dyno.example.Echo/Say
# (bench/grpc-echo, built with go; the message passed through as bytes, so the server's cost is
# grpc-go's own) with examples/grpc/echo.proto's request {"key":"dyno","n":7}. For each shape
# CONNECTIONSxSTREAMS (4x1, 4x10, 50x10 by default) both tools keep that many calls in flight
# on that many connections (ghz --connections C -c C×M; dyno -c C --streams M) for DURATION
# (default 10 s), in ROUNDS rounds (default 3), ghz first in odd rounds and dyno first in even
# ones, each generator pinned to core 0 (ghz with --cpus 1, dyno with --threads 1) and the
# server to core 1. Prints each run's calls/s and CPU per call (user + system of the generator
# process, divided by its calls), then dyno's ratios to ghz within each round and their median.
# ghz is built from the Go module proxy (github.com/bojand/ghz/cmd/ghz@$GHZ, default v0.120.0).
# Needs go, taskset and python3. Traffic stays on 127.0.0.1.
# Usage: bench/grpc-vs-ghz.sh [DURATION] [ROUNDS] [SHAPES...]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10s}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(4x1 4x10 50x10)
. bench/lib.sh
cargo build --release -q
dyno=$PWD/target/release/dyno
mkdir -p target/go
(cd bench/grpc-echo && go build -o ../../target/go/grpc-echo .)
[ -x target/go/ghz ] || GOBIN=$PWD/target/go go install "github.com/bojand/ghz/cmd/ghz@${GHZ:-v0.120.0}"
proto=examples/grpc/echo.proto
data='{"key":"dyno","n":7}'

work=$(mktemp -d)
port=$(free_port)
taskset -c 1 target/go/grpc-echo -listen "127.0.0.1:$port" >"$work/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
wait_port "$port"

ghz_run() { # C M ROUND -> "OK RATE CPU_PER_CALL_US"
  # influx-summary: one line of totals (its json format would print every call's details).
  local out
  out=$(measure target/go/ghz --insecure --cpus 1 --proto "$proto" --call dyno.example.Echo.Say \
    -d "$data" --connections "$1" -c $(($1 * $2)) -z "$duration" --format influx-summary \
    "127.0.0.1:$port")
  python3 - "$out" <<'PY'
import re, sys
t = sys.argv[1]
totals = t.splitlines()[0].split(" ")[1]
count = int(re.search(r"\bcount=(\d+)", totals).group(1))
errors = int(re.search(r"\berrors=(\d+)", totals).group(1))
rate = float(re.search(r"\brps=([\d.]+)", totals).group(1))
cpu = int(re.search(r"cpu_ns=(\d+)", t).group(1))
print(count - errors, rate, cpu / count / 1000)
PY
}

dyno_run() { # C M ROUND -> "OK RATE CPU_PER_CALL_US"
  local out
  out=$(measure "$dyno" run "grpc://127.0.0.1:$port/dyno.example.Echo/Say" --proto "$proto" \
    --data "$data" -c "$1" --streams "$2" -d "$duration" -r 1 --threads 1 -f json \
    -o "$work/d$1x$2-$3")
  dyno_load_figures "$out"
}

echo "grpc-go echo (bench/grpc-echo), ghz ${GHZ:-v0.120.0}, $($dyno --version)"
alternate ghz call "$rounds" shapes
ratios "$work/rounds" ghz call
