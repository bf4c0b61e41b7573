#!/usr/bin/env bash
# dyno against wrk, in turn, on the same nginx serving a static 13-byte file: 50 connections,
# DURATION (default 10 s) each, ROUNDS rounds (default 3), generator pinned to core 0 and nginx to
# core 1. Prints each tool's requests/s and CPU per request (user + system of the generator,
# divided by its requests), for dyno both as it runs by default and with --coalesce off, and
# dyno's ratios to wrk within each round with their median. Each round also runs dyno with a mix
# of three requests (a requests file), and with the same three as templates (a `{{uniform}}` id
# in each query): their CPU per request over the single request's, per round and median; and
# once more pushing its figures (`--push`) to a destination that takes connections and never
# answers (a black hole): its CPU per request and rate over the plain run's; and on the epoll
# backend (`--io epoll`; dyno runs on io_uring by default where the kernel allows it): dyno's
# CPU per request and rate over epoll's, and epoll's over wrk's. Then dyno's open loop at 90% of the
# best closed-loop rate seen, with its corrected p99, and one run each at 80%, 70%, 60% and 50% of
# it; last, the 90% run once more in 10 ms intervals beside nginx's time on CPU, to show where its
# tail comes from. Needs nginx and wrk (installed from the distribution's packages if missing),
# taskset and python3. Traffic stays on 127.0.0.1.
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

. bench/lib.sh
. bench/nginx.sh
work=$(mktemp -d)
hole=""
cleanup() {
  stop_nginx
  [ -n "$hole" ] && kill "$hole" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
start_nginx "$work"
# The black hole: listens, never accepts a connection nor reads one (the kernel's backlog takes
# them), and ends with the script (or after an hour).
python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1024)
print(s.getsockname()[1], flush=True); time.sleep(3600)' > "$work/hole" &
hole=$!
until [ -s "$work/hole" ]; do sleep 0.1; done
hole_url="influx://127.0.0.1:$(cat "$work/hole")/dyno"
for q in a b c; do printf 'GET %s?r=%s\n\n' "$url" $q; done > "$work/mix.txt"
for q in a b c; do printf 'GET %s?r=%s&id={{uniform 1 1000000}}\n\n' "$url" $q; done > "$work/templates.txt"

best=0
echo "nginx $(/usr/sbin/nginx -v 2>&1 | sed 's/.*\///'), wrk $(wrk -v 2>&1 | head -1 | awk '{print $2}'), $($dyno --version)"
printf '%-14s %-3s %12s %12s %14s\n' tool round requests req/s "CPU/request"
for round in $(seq "$rounds"); do
  # wrk: one thread, 50 connections.
  out=$(measure wrk -t1 -c50 -d"$duration" "$url")
  reqs=$(echo "$out" | awk '/requests in/ {print $1}')
  rate=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
  cpu=$(echo "$out" | sed -n 's/^cpu_ns=//p')
  printf '%-14s %-3s %12s %12.0f %12.2fµs\n' wrk "$round" "$reqs" "$rate" "$(echo "$cpu / $reqs / 1000" | bc -l)"
  echo "wrk static $round $rate $(echo "$cpu / $reqs / 1000" | bc -l)" >> "$work/rounds"
  best=$(python3 -c "print(max($best, $rate))")
  # dyno: one load thread, 50 connections; as it runs by default, without coalescing, with a
  # mix of three requests, and with the three as templates.
  for variant in auto epoll off mix templates push; do
    coalesce=auto; [ $variant = off ] && coalesce=off
    more=(); [ $variant = mix ] && more=(--requests-file "$work/mix.txt")
    [ $variant = templates ] && more=(--requests-file "$work/templates.txt")
    [ $variant = push ] && more=(--push "$hole_url")
    [ $variant = epoll ] && more=(--io epoll)
    out=$(measure "$dyno" run "$url" -c 50 -d "$duration" -r 1 --threads 1 --coalesce $coalesce "${more[@]}" -f json -o "$work/r$round$variant")
    reqs=$(echo "$out" | python3 -c 'import json,sys; r=json.loads(sys.stdin.readline()); print(r["cases"][0]["reps"][0]["detail"]["load"]["requests"])')
    rate=$(echo "$out" | python3 -c 'import json,sys; r=json.loads(sys.stdin.readline()); print(r["cases"][0]["reps"][0]["detail"]["load"]["responses_per_s"])')
    cpu=$(echo "$out" | sed -n 's/^cpu_ns=//p')
    label=dyno; [ $variant != auto ] && label=dyno-$variant
    printf '%-14s %-3s %12s %12.0f %12.2fµs\n' $label "$round" "$reqs" "$rate" "$(echo "$cpu / $reqs / 1000" | bc -l)"
    echo "$label static $round $rate $(echo "$cpu / $reqs / 1000" | bc -l)" >> "$work/rounds"
    best=$(python3 -c "print(max($best, $rate))")
    if [ $variant = push ]; then
      python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["push"][0]
print("               (pushed to the black hole: %d points sent, %d undelivered)" % (p["sent"], p["undelivered"]))' "$work/r${round}push/run.json"
    fi
  done
done
# The machine's speed drifts between rounds, so the comparison is made within each round.
ratios "$work/rounds" wrk request
python3 - "$work/rounds" <<'PY'
import statistics, sys
runs = {(t, r): float(cpu) for t, _, r, _, cpu in (l.split() for l in open(sys.argv[1]))}
rounds = sorted({r for _, r in runs}, key=int)
print("CPU per request over the single request's, per round (median):")
for variant in ("dyno-mix", "dyno-templates", "dyno-push"):
    x = [runs[(variant, r)] / runs[("dyno", r)] for r in rounds]
    print("  %-15s %s (%.2fx)" % (variant, ", ".join("%.2f" % v for v in x), statistics.median(x)))
rates = {(t, r): float(rate) for t, _, r, rate, _ in (l.split() for l in open(sys.argv[1]))}
x = [rates[("dyno-push", r)] / rates[("dyno", r)] for r in rounds]
print("  %-15s %s (%.2fx)  <- its rate over the plain run's" % ("dyno-push", ", ".join("%.2f" % v for v in x), statistics.median(x)))
print("The I/O backends, per round (median):")
for name, a, b, m in (("io_uring/epoll CPU", "dyno", "dyno-epoll", runs), ("io_uring/epoll rate", "dyno", "dyno-epoll", rates),
                      ("epoll/wrk CPU", "dyno-epoll", "wrk", runs), ("epoll/wrk rate", "dyno-epoll", "wrk", rates)):
    x = [m[(a, r)] / m[(b, r)] for r in rounds]
    print("  %-20s %s (%.2fx)" % (name, ", ".join("%.2f" % v for v in x), statistics.median(x)))
PY

# One open-loop run at SHARE of the best rate seen; prints its row.
open_loop() {
  local share=$1 run=$2
  local rate
  rate=$(python3 -c "print(int($best * $share))")
  taskset -c 0 "$dyno" run "$url" --rate "$rate" -c 50 -d "$duration" -r 1 --threads 1 --warmup -f json \
      -o "$work/open$share-$run" 2>/dev/null | python3 -c '
import json, sys
r = json.loads(sys.stdin.readline()); c = r["cases"][0]; s = c["summary"]; g = c["reps"][0]["detail"]["load"]["generator"]
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

# Where the 90% run's tail comes from: one more run at 90%, in 10 ms intervals, while nginx's
# worker is sampled every 2 ms (its time on CPU from /proc/PID/schedstat, in ns). An interval in
# which nginx was on CPU nearly all the time yet served well under the offered rate is the server
# (or the machine under it) slowing down, not the generator holding requests back.
worker=$(pgrep -P "$nginx_pid" | head -1)
rate=$(python3 -c "print(int($best * 0.9))")
echo
echo "The 90% run again ($rate req/s, $duration), in 10 ms intervals beside nginx's time on CPU:"
taskset -c 0 python3 - "$worker" "$rate" "$dyno" run "$url" --rate "$rate" -c 50 -d "$duration" -r 1 \
    --threads 1 --interval 10ms -f json -o "$work/steady" <<'PY'
import bisect, json, statistics, subprocess, sys, tempfile, time
worker, rate, cmd = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
stat = open("/proc/%d/schedstat" % worker)
def on_cpu_ns():
    stat.seek(0)
    return int(stat.read().split()[0])
out = tempfile.TemporaryFile("w+")   # not a pipe: the record outgrows a pipe's buffer
run = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, text=True)
samples, tick = [], time.monotonic_ns()
while run.poll() is None:   # ends with the run, which is bounded by its duration
    samples.append((time.monotonic_ns(), on_cpu_ns()))
    tick += 2_000_000
    time.sleep(max(0.0, (tick - time.monotonic_ns()) / 1e9))
out.seek(0)
record = json.loads(out.readline())
times = [t for t, _ in samples]
def at(t):
    i = min(max(bisect.bisect_left(times, t), 1), len(samples) - 1)
    (ta, ca), (tb, cb) = samples[i - 1], samples[i]
    return ca + (cb - ca) * (t - ta) / max(1, tb - ta)
def busy(t0, t1):
    return (at(t1) - at(t0)) / (t1 - t0)
# The measured start: the first 2 ms in which nginx was busy (it idles while dyno connects).
start = samples[0][0]
while start < samples[-1][0] and busy(start, start + 2_000_000) < 0.3:
    start += 500_000
load = record["cases"][0]["reps"][0]["detail"]["load"]
# A running task's time on CPU is brought up to date at each clock tick (4 ms at HZ=250), so it is
# read over 40 ms: 4 intervals, centred on the one shown.
WINDOW = 40_000_000
rows = []
for k, iv in enumerate(load["intervals"][:-1]):
    mid = start + k * 10_000_000 + 5_000_000
    cpu = min(busy(mid - WINDOW // 2, mid + WINDOW // 2), 1.0)
    rows.append((iv["responses"] * 100, iv["p99_ns"] / 1e6, cpu))
served = [r for r, _, _ in rows]
blocks = [rows[k:k + 4] for k in range(0, len(rows) - 3, 4)]
slow = [b for b in blocks if min(r[2] for r in b) >= 0.95 and sum(r[0] for r in b) / 4 < 0.8 * rate]
print("  p99 corrected %.2f ms; served per 10 ms: median %.0f/s, lowest %.0f/s"
      % (record["cases"][0]["summary"]["latency_ns"]["p99"] / 1e6, statistics.median(served), min(served)))
print("  40 ms spans with nginx on CPU >= 95%% yet serving < 80%% of the offered rate: %d of %d"
      % (len(slow), len(blocks)))
print("  10 ms intervals with p99 over 5 ms while nginx was on CPU < 80%%: %d of %d"
      % (sum(1 for r in rows if r[2] < 0.8 and r[1] > 5), sum(1 for r in rows if r[1] > 5)))
worst = max(range(len(rows)), key=lambda k: rows[k][1])
print("  around the worst interval (start, served/s, p99, nginx on CPU over 40 ms):")
lo = max(0, worst - 8)
for k in range(lo, min(len(rows), lo + 12)):
    print("    %6d ms %8.0f/s %8.2f ms %5.0f%%" % (k * 10, rows[k][0], rows[k][1], rows[k][2] * 100))
PY
