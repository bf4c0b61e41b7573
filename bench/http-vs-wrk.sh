#!/usr/bin/env bash
# dyno against wrk, in turn, on the same nginx serving a static 13-byte file: 50 connections,
# DURATION (default 10 s) each, ROUNDS rounds (default 3), generator pinned to core 0 and nginx to
# core 1. Prints each tool's requests/s and CPU per request (user + system of the generator,
# divided by its requests), for dyno both as it runs by default and with --coalesce off; then
# dyno's open loop at 90% of the best closed-loop rate seen, with its corrected p99, and one run
# each at 80%, 70%, 60% and 50% of it. Needs nginx and wrk (installed from the distribution's
# packages if missing), taskset and python3. Traffic stays on 127.0.0.1.
# Usage: bench/http-vs-wrk.sh [DURATION] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10s}
rounds=${2:-3}
missing=()
[ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
cargo build --release -q
dyno=$PWD/target/release/dyno

work=$(mktemp -d)
nginx_pid=""
cleanup() {
  set +e   # nginx's exit status must not end the cleanup early
  if [ -n "$nginx_pid" ]; then kill "$nginx_pid" 2>/dev/null; wait "$nginx_pid" 2>/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/www"
printf 'Hello, dyno!\n' > "$work/www/hello.txt"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$work/nginx.conf" <<CONF
daemon off;
user root;
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  keepalive_requests 100000000;
  client_body_temp_path $work/body; proxy_temp_path $work/proxy; fastcgi_temp_path $work/fastcgi;
  uwsgi_temp_path $work/uwsgi; scgi_temp_path $work/scgi;
  server { listen 127.0.0.1:$port; root $work/www; }
}
CONF
taskset -c 1 /usr/sbin/nginx -p "$work" -c "$work/nginx.conf" &
nginx_pid=$!
for _ in $(seq 50); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1',$port))" 2>/dev/null && break
  sleep 0.1
done
url="http://127.0.0.1:$port/hello.txt"

# Runs a command pinned to core 0; prints its stdout, then "cpu_ns=N" for its user + system time.
measure() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
out = subprocess.run(["taskset", "-c", "0", *sys.argv[1:]], capture_output=True, text=True, check=True).stdout
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(out)
print("cpu_ns=%d" % int((ru.ru_utime + ru.ru_stime) * 1e9))
PY
}

best=0
echo "nginx $(/usr/sbin/nginx -v 2>&1 | sed 's/.*\///'), wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'), $($dyno --version)"
printf '%-8s %-3s %12s %12s %14s\n' tool round requests req/s "CPU/request"
for round in $(seq "$rounds"); do
  # wrk: one thread, 50 connections.
  out=$(measure wrk -t1 -c50 -d"$duration" "$url")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  rate=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  cpu=$(echo "$out" | sed -n 's/^cpu_ns=//p')
  printf '%-8s %-3s %12s %12.0f %12.2fµs\n' wrk "$round" "$reqs" "$rate" "$(echo "$cpu / $reqs / 1000" | bc -l)"
  best=$(python3 -c "print(max($best, $rate))")
  # dyno: one load thread, 50 connections; as it runs by default, then without coalescing.
  for coalesce in auto off; do
    out=$(measure "$dyno" run "$url" -c 50 -d "$duration" --threads 1 --coalesce $coalesce -f json -o "$work/r$round$coalesce")
    reqs=$(echo "$out" | python3 -c 'import json,sys; r=json.loads(sys.stdin.readline()); print(r["cases"][0]["reps"][0]["load"]["requests"])')
    rate=$(echo "$out" | python3 -c 'import json,sys; r=json.loads(sys.stdin.readline()); print(r["cases"][0]["reps"][0]["load"]["responses_per_s"])')
    cpu=$(echo "$out" | sed -n 's/^cpu_ns=//p')
    label=dyno; [ $coalesce = off ] && label=dyno-off
    printf '%-8s %-3s %12s %12.0f %12.2fµs\n' $label "$round" "$reqs" "$rate" "$(echo "$cpu / $reqs / 1000" | bc -l)"
    best=$(python3 -c "print(max($best, $rate))")
  done
done

# One open-loop run at SHARE of the best rate seen; prints its row.
open_loop() {
  local share=$1 run=$2
  local rate
  rate=$(python3 -c "print(int($best * $share))")
  taskset -c 0 "$dyno" run "$url" --rate "$rate" -c 50 -d "$duration" --threads 1 --warmup -f json \
      -o "$work/open$share-$run" 2>/dev/null | python3 -c '
import json, sys
r = json.loads(sys.stdin.readline()); c = r["cases"][0]; s = c["summary"]; g = c["reps"][0]["load"]["generator"]
ms = lambda ns: "%.2f ms" % (ns / 1e6)
cpu = (g["cpu_user_ns"] + g["cpu_sys_ns"]) / (c["reps"][0]["wall_ns"] or 1)
print("%-4s %-4s %8s %10s %14s %16s %10s %6.0f%% %8s" % (sys.argv[1], sys.argv[2], sys.argv[3], ms(s["latency_ns"]["p50"]),
      ms(s["latency_ns"]["p99"]), ms(s["service_ns"]["p99"]), ms(g["lag_ns"]["p99"]), cpu * 100,
      "valid" if g["valid"] else "INVALID"))' "$(python3 -c "print(int($share * 100))")%" "$run" "$rate"
}

echo
echo "dyno open loop at a share of the best closed-loop rate seen ($(printf '%.0f' "$best") req/s), 50"
echo "connections, $duration after an unmeasured warm-up of the same length, generator pinned to core 0:"
printf '%-4s %-4s %8s %10s %14s %16s %10s %7s %8s\n' share run req/s p50 "p99 corrected" "p99 uncorrected" "lag p99" "dyno CPU" verdict
for run in $(seq "$rounds"); do open_loop 0.9 "$run"; done
for share in 0.8 0.7 0.6 0.5; do open_loop "$share" 1; done
