#!/usr/bin/env bash
# Memory check: dyno's own RSS during a long open-loop run at the highest rate this machine
# sustains. The reference HTTP server (`dyno serve --http`) runs on core 1; the generator on core 0
# first finds the ceiling (closed loop, 50 connections, 5 s), then the highest share of it (90%,
# 80% … of it, 5 s each) that it offers as an open loop with a valid verdict, and offers that
# for DURATION (default 10m) while this script reads the generator's VmRSS once a second. Prints
# the RSS at start, its peak and end, the trend (Theil-Sen slope with its 95% interval) and a
# verdict: PASS when the peak stays under LIMIT_MIB (default 64) and the RSS is flat (the growth
# over the run under 1 MiB, or an interval that holds zero). With LIVE=1 the long run also serves
# its live view (`--ui`, a client reading its events all along) and pushes its figures
# (`--push`) to a destination that takes connections and never answers, whose queue stays full.
# Traffic stays on 127.0.0.1.
# Usage: [LIVE=1] bench/memory-check.sh [DURATION]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
duration=${1:-10m}
limit_mib=${LIMIT_MIB:-64}
cargo build --release -q
dyno=$PWD/target/release/dyno

work=$(mktemp -d)
server=""
gen=""
helpers=""
cleanup() {
  set +e
  for p in $gen $server $helpers; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

port=$(free_port)
taskset -c 1 "$dyno" serve --http --listen "127.0.0.1:$port" >/dev/null 2>&1 &
server=$!
wait_port "$port"
url="http://127.0.0.1:$port/"

taskset -c 0 "$dyno" run "$url" -c 50 -d 5s --quiet -o "$work/ceiling" >/dev/null
ceiling=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(int(r['cases'][0]['reps'][0]['detail']['load']['responses_per_s']))" "$work/ceiling/run.json")
echo "ceiling (closed loop, 50 connections): $ceiling req/s"
# The highest open-loop rate the generator keeps (its own verdict: valid), from 90% down.
rate=0
for pct in 90 80 70 60 50 40 30; do
  try=$((ceiling * pct / 100))
  taskset -c 0 "$dyno" run "$url" --rate "$try" -d 5s -c 50 --max-connections 200 --quiet \
    -o "$work/probe-$pct" >/dev/null
  valid=$(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['cases'][0]['reps'][0]['detail']['load']['generator']['valid'])" "$work/probe-$pct/run.json")
  echo "  open loop at $pct% ($try req/s) for 5 s: generator valid: $valid"
  if [ "$valid" = "True" ]; then rate=$try; break; fi
done
[ "$rate" -gt 0 ] || { echo "no rate down to 30% of the ceiling kept the generator valid"; exit 1; }
echo "offering $rate req/s for $duration"

live=()
if [ "${LIVE:-0}" = 1 ]; then
  python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1024)
print(s.getsockname()[1], flush=True); time.sleep(7200)' > "$work/hole" &
  helpers="$helpers $!"
  until [ -s "$work/hole" ]; do sleep 0.1; done
  ui_port=$(free_port)
  live=(--ui="127.0.0.1:$ui_port" --push "influx://127.0.0.1:$(cat "$work/hole")/dyno")
  echo "with the live view on 127.0.0.1:$ui_port (a client reading it) and a push into a black hole"
fi
taskset -c 0 "$dyno" run "$url" --rate "$rate" --duration "$duration" -r 1 -c 50 --max-connections 200 \
  "${live[@]}" --quiet -o "$work/run" >"$work/table.txt" &
gen=$!
if [ "${LIVE:-0}" = 1 ]; then
  wait_port "$ui_port"
  # One page's worth of reading: the events, all along (curl ends when the run does).
  curl -sN -H "Host: 127.0.0.1:$ui_port" "http://127.0.0.1:$ui_port/events" > "$work/events" &
  helpers="$helpers $!"
fi
start=$(date +%s.%N)
while kill -0 "$gen" 2>/dev/null; do
  rss=$(awk '/^VmRSS/ {print $2}' "/proc/$gen/status" 2>/dev/null || true)
  [ -n "$rss" ] && echo "$(echo "$(date +%s.%N) - $start" | bc) $rss" >>"$work/rss"
  sleep 1
done
wait "$gen" || true
gen=""
[ -f "$work/events" ] && echo "the live view's client read $(grep -c '^data:' "$work/events") events"

python3 - "$work/rss" "$work/run/run.json" "$limit_mib" <<'PY'
import json, math, sys
pts = [tuple(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
rec = json.load(open(sys.argv[2]))
limit = float(sys.argv[3])
load = rec["cases"][0]["reps"][0]["detail"]["load"]
g = load["generator"]
print(f"achieved {g['achieved_per_s']:.0f} req/s of {g['intended_per_s']:.0f} intended; "
      f"generator verdict: {'valid' if g['valid'] else 'INVALID: ' + (g['reason'] or '')}")
print(f"responses {load['responses']}, p99 {rec['cases'][0]['summary']['latency_ns']['p99'] / 1e6:.2f} ms")
for p in rec.get("push", []):
    print(f"pushed to {p['url']}: {p['sent']} points sent, {p['undelivered']} undelivered")
kib = [p[1] for p in pts]
mib = lambda k: k / 1024
# Skip the first 10 s (start-up: connections, buffers) for the trend.
tail = [p for p in pts if p[0] >= 10] or pts
step = max(1, len(tail) // 300)
xs = tail[::step]
slopes = sorted((b[1] - a[1]) / (b[0] - a[0]) for i, a in enumerate(xs) for b in xs[i + 1:] if b[0] > a[0])
m, n = len(slopes), len(xs)
med = slopes[m // 2]
c = 1.96 * math.sqrt(n * (n - 1) * (2 * n + 5) / 18)
lo, hi = slopes[max(0, int((m - c) / 2))], slopes[min(m - 1, int(math.ceil((m + c) / 2)))]
span = tail[-1][0] - tail[0][0]
growth_mib = med * span / 1024
print(f"samples {len(pts)} over {pts[-1][0]:.0f} s; RSS start {mib(kib[0]):.1f} MiB, "
      f"peak {mib(max(kib)):.1f} MiB, end {mib(kib[-1]):.1f} MiB")
print(f"RSS trend after 10 s: {med * 60 / 1024:+.3f} MiB/min (95%: {lo * 60 / 1024:+.3f} .. "
      f"{hi * 60 / 1024:+.3f}), {growth_mib:+.2f} MiB over {span:.0f} s")
flat = abs(growth_mib) < 1.0 or lo <= 0 <= hi
ok = mib(max(kib)) < limit and flat
print(f"verdict: {'PASS' if ok else 'FAIL'} (peak under {limit:.0f} MiB: {mib(max(kib)) < limit}; flat: {flat})")
sys.exit(0 if ok else 1)
PY
