#!/usr/bin/env bash
# Where a generator's CPU per request goes, dyno beside the native tool of each of issue 36's
# bars: HTTP/1.1 against nginx (wrk -t1 -c50; dyno's load suite, one thread, 50 connections, on
# io_uring and on epoll), Redis GET (redis-benchmark -c 50 -d 300; dyno's shootout reads, -c 50)
# and PostgreSQL point reads (pgbench -S -M prepared -c 8 -j 1; dyno's shootout reads, -c 8).
# Servers on core 1, generators on core 0, one after another, each sampled by `perf record -g`
# (the software clock, 999 Hz). dyno's store runs are profiled by dyno itself (`--profile`), its
# hot test alone, since their writes are timed apart; the others over the whole run.
#
# Per tool: CPU per request (user + system, getrusage; the store runs' hot test from the
# record), then its samples' shares: user code; the kernel's TCP work of sending (tcp_sendmsg,
# which on loopback also carries the peer's receive path and its wake-up) and of receiving
# (tcp_recvmsg); waiting (the scheduler, inside the wait: epoll_wait, io_uring_enter, poll);
# and the rest of the kernel (system call entry, epoll or io_uring's own work, page faults).
# The last column is that tool's TCP work alone per request, in µs: no client of the same
# requests can spend less. First, what one system call costs here (`perf bench syscall basic`,
# getppid in a loop, on core 0).
# Traffic stays on 127.0.0.1.
# Usage: bench/cpu-breakdown.sh [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
. bench/nginx.sh
secs=${1:-5}
command -v perf >/dev/null || install linux-perf
[ -x /usr/sbin/nginx ] || install nginx
command -v wrk >/dev/null || install wrk
command -v redis-server >/dev/null || install redis-server redis-tools
[ -x /usr/bin/time ] || install time
find_postgres postgresql-contrib
cargo build --release -q
dyno=$PWD/target/release/dyno
scratch
cleanup() {
  set +e
  stop_nginx
  stop_postgres
  stop_pids INT
  rm -rf "$work"
}
trap cleanup EXIT

start_nginx "$work"
start_postgres
"$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U dyno -i -s 1 -q postgres >/dev/null 2>&1
rport=$(free_port)
taskset -c 1 redis-server --bind 127.0.0.1 --port "$rport" --save "" --appendonly no --dir "$work" >/dev/null &
pids+=($!)
for _ in $(seq 50); do redis-cli -p "$rport" ping >/dev/null 2>&1 && break; sleep 0.1; done

# Folds `perf script` output (or reads folded stacks) and prints the shares as
# "user send recv wait other" (fractions of the samples).
shares() {
  python3 - "$@" <<'PY'
import sys
def classify(frames, n, acc):
    # frames: leaf first. Kernel samples enter through a system call, an interrupt or a fault.
    kernel = any(f.startswith(("entry_SYSCALL", "asm_", "ret_from_fork")) or f == "do_syscall_64"
                 for f in frames)
    if not kernel:
        k = "user"
    elif any(f in ("tcp_sendmsg", "tcp_sendmsg_locked") for f in frames):
        k = "send"
    elif any(f in ("tcp_recvmsg", "tcp_recvmsg_locked") for f in frames):
        k = "recv"
    elif any(f in ("schedule", "__schedule", "schedule_hrtimeout_range") for f in frames):
        k = "wait"
    else:
        k = "other"
    acc[k] = acc.get(k, 0) + n
acc = {}
path = sys.argv[1]
if path.endswith(".folded"):
    for line in open(path):
        stack, _, n = line.rstrip().rpartition(" ")
        frames = [f.split("+0x")[0].removesuffix("_[k]") for f in stack.split(";")][::-1]
        classify(frames, int(n), acc)
else:
    # A sample: its header line, then a frame a line (indented: address, symbol+offset, object).
    frames = []
    for line in open(path, errors="replace"):
        if line[:1] in (" ", "\t") and line.strip():
            parts = line.split()
            frames.append(parts[1].split("+0x")[0] if len(parts) > 1 else "?")
        elif frames:
            classify(frames, 1, acc)
            frames = []
    if frames:
        classify(frames, 1, acc)
total = sum(acc.values()) or 1
print(" ".join(f"{acc.get(k, 0) / total:.4f}" for k in ("user", "send", "recv", "wait", "other")))
PY
}

# Runs a command on core 0 under perf; prints its CPU seconds and leaves its samples in $work/s.
sampled() {
  local out=$1 cpu
  shift
  cpu=$(timed "$out" taskset -c 0 perf record -q -g -F 999 -o "$work/perf.data" -- "$@") || { echo "$cpu" >&2; exit 1; }
  perf script -i "$work/perf.data" 2>/dev/null >"$work/s"
  echo "$cpu"
}

row() { # LABEL CPU_US_PER_REQUEST SHARES...
  python3 -c "
import sys
label, cpu, *s = sys.argv[1:]
cpu = float(cpu); s = [float(x) for x in s]
print(f'{label:34} {cpu:9.2f} ' + ' '.join(f'{x * 100:6.1f}%' for x in s) + f' {cpu * (s[1] + s[2]):9.2f}')
" "$@"
}

echo "$($dyno --version); nginx $(/usr/sbin/nginx -v 2>&1 | sed 's/.*\///'), wrk, redis $(redis-server --version | awk '{print $3}'), PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}'); kernel $(uname -r)"
taskset -c 0 perf bench syscall basic -l 2000000 2>/dev/null | awk '/usecs\/op/ { printf "a system call: %.0f ns\n", $1 * 1000 }'
printf '%-34s %9s %7s %7s %7s %7s %7s %9s\n' tool "µs/req" user "tcp send" "tcp recv" wait "other k" "TCP µs/req"

cpu=$(sampled "$work/wrk.out" wrk -t1 -c50 -d"${secs}s" "$url")
reqs=$(awk '/requests in/ {print $1}' "$work/wrk.out")
row "wrk -t1 -c50" "$(python3 -c "print($cpu * 1e6 / $reqs)")" $(shares "$work/s")
for io in uring epoll; do
  cpu=$(sampled "$work/dyno.out" "$dyno" run "$url" -c 50 -d "${secs}s" -r 1 --threads 1 --no-warmup --io "$io" -f json -o "$work/load-$io")
  reqs=$(head -1 "$work/dyno.out" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["cases"][0]["reps"][0]["detail"]["load"]["requests"])')
  row "dyno load -c 50 ($io)" "$(python3 -c "print($cpu * 1e6 / $reqs)")" $(shares "$work/s")
done

n=200000
cpu=$(sampled "$work/rb.csv" redis-benchmark -p "$rport" -t get -c 50 -P 1 -d 300 -n "$n" --csv)
row "redis-benchmark -t get -c 50" "$(python3 -c "print($cpu * 1e6 / $n)")" $(shares "$work/s")
per_client=25000
cpu=$(sampled "$work/pgbench.out" "$pgbin/pgbench" -h 127.0.0.1 -p "$pgport" -U dyno -S -M prepared -c 8 -j 1 -t "$per_client" postgres)
row "pgbench -S -c 8 -j 1" "$(python3 -c "print($cpu * 1e6 / (8 * $per_client))")" $(shares "$work/s")

# dyno's store runs: the hot test's CPU from the record, its samples from dyno's own profile.
hot() { # NAME LABEL URL ARGS...
  local name=$1 label=$2 target=$3
  shift 3
  taskset -c 0 "$dyno" run "$target" "$@" --reps 1 --quiet --profile "$work/prof-$name" -o "$work/$name" >/dev/null
  local cpu folded
  cpu=$(python3 -c "
import json
for c in json.load(open('$work/$name/run.json'))['cases']:
    if c['test'] == 'hot':
        r = c['reps'][0]
        print(r['detail']['store']['client_cpu_ns'] / r['ops'] / 1e3)")
  folded=$(find "$work/prof-$name" -path '*hot*' -name 'dyno-*.folded' | head -1)
  [ -n "$folded" ] || { echo "no profile of dyno's hot test in $work/prof-$name" >&2; exit 1; }
  row "dyno $label hot" "$cpu" $(shares "$folded")
}
hot redis "redis:// -c 50" "redis://127.0.0.1:$rport" -c 50 -n 2000 --size 300
hot postgres "postgres:// -c 8" "postgres://dyno@127.0.0.1:$pgport/postgres" -c 8 -n 20000
