#!/usr/bin/env bash
# dyno against h2load (nghttp2), in turn, on the same nginx speaking HTTP/2 in the clear (prior
# knowledge) and serving a static 13-byte file: for each shape CONNECTIONSxSTREAMS (4x1, 4x10,
# 50x10 by default) both tools offer a closed loop of that many connections with that many
# streams each (h2load -c C -m M; dyno -c C --streams M), DURATION (default 10 s), in ROUNDS
# rounds (default 3), h2load first in odd rounds and dyno first in even ones, each generator on
# one thread pinned to core 0 and nginx to core 1. Prints each run's requests/s and CPU per
# request (user + system of the generator process, divided by its requests), then dyno's ratios
# to h2load within each round and their median. nginx's keepalive_requests is raised so that no
# connection is closed mid-run (h2load stops a client at GOAWAY; dyno would reconnect).
# Needs nginx and nghttp2-client (installed from the distribution's packages if missing),
# taskset and python3. Traffic stays on 127.0.0.1.
# Usage: bench/h2-vs-h2load.sh [DURATION] [ROUNDS] [SHAPES...]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-10s}
rounds=${2:-3}
shift $(($# < 2 ? $# : 2))
shapes=("$@")
[ ${#shapes[@]} -gt 0 ] || shapes=(4x1 4x10 50x10)
missing=()
[ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v h2load >/dev/null 2>&1 || missing+=(nghttp2-client)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
cargo build --release -q
dyno=$PWD/target/release/dyno
secs=${duration%s}

. bench/nginx.sh
work=$(mktemp -d)
cleanup() {
  stop_nginx
  rm -rf "$work"
}
trap cleanup EXIT
start_nginx "$work" h2c
plain=${url/h2c:/http:}

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

h2load_run() { # C M -> "REQUESTS RATE"
  local out
  out=$(measure h2load -t 1 -c "$1" -m "$2" -D "$secs" "$plain")
  python3 - "$out" <<'PY'
import re, sys
t = sys.argv[1]
done = int(re.search(r"requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded", t).group(2))
rate = float(re.search(r"finished in [\d.]+s, ([\d.]+) req/s", t).group(1))
cpu = int(re.search(r"cpu_ns=(\d+)", t).group(1))
print(done, rate, cpu / done / 1000)
PY
}

dyno_run() { # C M ROUND -> "REQUESTS RATE CPU_PER_REQUEST_US"
  local out
  out=$(measure "$dyno" run "$url" -c "$1" --streams "$2" -d "$duration" -r 1 --threads 1 -f json \
    -o "$work/d$1x$2-$3")
  python3 - "$out" <<'PY'
import json, re, sys
t = sys.argv[1]
r = json.loads(t.splitlines()[0])["cases"][0]["reps"][0]
ok = r["detail"]["load"]["ok"]
cpu = int(re.search(r"cpu_ns=(\d+)", t).group(1))
print(ok, r["detail"]["load"]["responses_per_s"], cpu / r["detail"]["load"]["requests"] / 1000)
PY
}

echo "nginx $(/usr/sbin/nginx -v 2>&1 | sed 's/.*\///'), $(h2load --version | head -1), $($dyno --version)"
printf '%-7s %-6s %-3s %12s %12s %14s\n' tool shape round ok req/s "CPU/request"
for round in $(seq "$rounds"); do
  for shape in "${shapes[@]}"; do
    c=${shape%x*}
    m=${shape#*x}
    order="h2load dyno"
    [ $((round % 2)) -eq 0 ] && order="dyno h2load"
    for tool in $order; do
      read -r ok rate cpu <<<"$("${tool}_run" "$c" "$m" "$round")"
      printf '%-7s %-6s %-3s %12s %12.0f %12.2fµs\n' "$tool" "$shape" "$round" "$ok" "$rate" "$cpu"
      echo "$tool $shape $round $rate $cpu" >>"$work/rounds"
    done
  done
done
python3 - "$work/rounds" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    tool, shape, rnd, rate, cpu = line.split()
    runs[(tool, shape, rnd)] = (float(rate), float(cpu))
print()
print("dyno / h2load, per round (median):")
for shape in dict.fromkeys(s for _, s, _ in runs):
    rounds = sorted({r for t, s, r in runs if s == shape}, key=int)
    rate = [runs[("dyno", shape, r)][0] / runs[("h2load", shape, r)][0] for r in rounds]
    cpu = [runs[("dyno", shape, r)][1] / runs[("h2load", shape, r)][1] for r in rounds]
    print("  %-6s rate %s (%.2fx)   CPU/request %s (%.2fx)" % (
        shape, ", ".join("%.2f" % x for x in rate), statistics.median(rate),
        ", ".join("%.2f" % x for x in cpu), statistics.median(cpu)))
PY
