#!/usr/bin/env bash
# etcd's two client protocols side by side, on one etcd server: the official Go client over
# gRPC (bench/etcd-clients, built with go), HTTP/1.1 JSON to the v3 gateway from Go's net/http,
# and dyno's etcd:// driver running the kv suite over each: gRPC (`dyno`, the default api) and
# the gateway (`dyno-gateway`, api=gateway). Each does what the kv suite does: one client,
# reads (linearizable) for DURATION, then writes for DURATION, 100 keys of 300 B. The client
# runs on core 0, etcd on core 1; ROUNDS rounds (default 5), the four clients in turn in each. Per client: client CPU per operation
# (user + system, the whole process), etcd's CPU per operation (/proc/PID/stat), median latency
# of reads and of writes; then each figure as a ratio to the gRPC client's in the same round,
# and the median ratio. Needs etcd (Debian's etcd-server, installed if missing), go, taskset.
# Then each gRPC client once more under a packet capture (tcpdump, installed if missing): the
# latency the wire shows beside the client's own. Traffic stays on 127.0.0.1.
# Usage: bench/etcd-clients.sh [DURATION] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${1:-5s}
rounds=${2:-5}
command -v etcd >/dev/null 2>&1 || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server
}
cargo build --release -q
(cd bench/etcd-clients && go build -o ../../target/etcd-clients .)
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
peer=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
taskset -c 1 etcd --name b --data-dir "$work/data" \
  --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
  --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
  --initial-cluster "b=http://127.0.0.1:$peer" >"$work/etcd.log" 2>&1 &
etcd_pid=$!
tpid=
trap '[ -z "$tpid" ] || kill -INT "$tpid" 2>/dev/null; kill $etcd_pid 2>/dev/null; wait $etcd_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 1 100); do
  etcdctl --endpoints "127.0.0.1:$port" endpoint health >/dev/null 2>&1 && break
  sleep 0.1
done
# etcd's CPU so far, in ns (utime + stime, clock ticks).
server_cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.0f\n", ($14 + $15) * 1e9 / hz }' "/proc/$etcd_pid/stat"; }
results="$work/results.jsonl"
# One client's run: prints its JSON line (mode, CPU, each phase's operations and p50).
run_client() {
  local client=$1 round=$2
  if [ "${client%-gateway}" = dyno ]; then
    local out="$work/$client-$round" api=grpc
    [ "$client" = dyno ] || api=gateway
    python3 - "$out" "$port" "$duration" "$client" "$api" <<'PY'
import json, resource, subprocess, sys
out, port, duration, mode, api = sys.argv[1:]
subprocess.run(["taskset", "-c", "0", "./target/release/dyno", "run", f"etcd://127.0.0.1:{port}?api={api}",
                "--suite", "kv", "-c", "1", "-n", "100", "--duration", duration, "--quiet",
                "-o", out], check=True, stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
rec = json.load(open(f"{out}/run.json"))
phase = {}
for c in rec["cases"]:
    rep = c["reps"][0]
    lat = rep["by_op"][c["test"]]["latency_ns"]
    phase[c["test"]] = {"ops": rep["ops"], "p50_us": lat["p50"] / 1e3}
print(json.dumps({"mode": mode, "cpu_ns": int((r.ru_utime + r.ru_stime) * 1e9),
                  "get": phase["get"], "set": phase["set"]}))
PY
  else
    taskset -c 0 ./target/etcd-clients -endpoint "127.0.0.1:$port" -mode "$client" -duration "$duration"
  fi
}
for round in $(seq 1 "$rounds"); do
  for client in grpc gateway dyno dyno-gateway; do
    s0=$(server_cpu)
    line=$(run_client "$client" "$round")
    s1=$(server_cpu)
    echo "$line" | python3 -c "import json,sys; d=json.load(sys.stdin); d['round']=$round; d['server_cpu_ns']=$s1-$s0; print(json.dumps(d))" >>"$results"
  done
done
python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def figures(r):
    ops = r["get"]["ops"] + r["set"]["ops"]
    cpu = r.get("cpu_ns", r["get"].get("cpu_ns", 0) + r["set"].get("cpu_ns", 0))
    return {"client CPU/op (µs)": cpu / ops / 1e3, "etcd CPU/op (µs)": r["server_cpu_ns"] / ops / 1e3,
            "get p50 (µs)": r["get"]["p50_us"], "set p50 (µs)": r["set"]["p50_us"], "ops": ops}
names = ["client CPU/op (µs)", "etcd CPU/op (µs)", "get p50 (µs)", "set p50 (µs)"]
by = {}
for r in rows:
    by.setdefault(r["round"], {})[r["mode"]] = figures(r)
print("| round | client | ops | " + " | ".join(names) + " |")
print("|---|---|---:|" + "---:|" * len(names))
for rnd, m in sorted(by.items()):
    for mode, f in m.items():
        print(f"| {rnd} | {mode} | {f['ops']:,} | " + " | ".join(f"{f[n]:.1f}" for n in names) + " |")
print()
print("Ratio to the gRPC client in the same round (median of the rounds, with min–max):")
print()
print("| client | " + " | ".join(names) + " |")
print("|---|" + "---:|" * len(names))
for mode in ["gateway", "dyno", "dyno-gateway"]:
    cells = []
    for n in names:
        rs = [m[mode][n] / m["grpc"][n] for m in by.values()]
        cells.append(f"{statistics.median(rs):.2f}× ({min(rs):.2f}–{max(rs):.2f})")
    print(f"| {mode} | " + " | ".join(cells) + " |")
PY

# The wire: each gRPC client (the Go client, dyno) once more under a packet capture of etcd's port,
# each request paired with its answer (bench/etcd-clients/wire.py). The capture's p50 is etcd's time
# and loopback's; what a client's own p50 holds beyond it is the client's.
command -v tcpdump >/dev/null 2>&1 || {
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tcpdump
}
echo
echo "Each gRPC client once more, under a packet capture of etcd's port (tcpdump on core 1), p50 in µs:"
echo
echo "| client | get: client | get: wire | get: the client's own | set: client | set: wire | set: the client's own | control segments | packets dropped |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for client in grpc dyno; do
  cap="$work/$client.pcap"
  taskset -c 1 tcpdump -i lo -nn -s 160 -B 32768 -w "$cap" "tcp port $port" 2>"$work/tcpdump.err" &
  tpid=$!
  for _ in $(seq 100); do grep -q "listening on" "$work/tcpdump.err" && break; sleep 0.05; done
  line=$(run_client "$client" wire)
  kill -INT "$tpid"
  wait "$tpid" || true
  tpid=
  dropped=$(awk '/dropped by kernel/ { print $1 }' "$work/tcpdump.err")
  wire=$(python3 bench/etcd-clients/wire.py "$cap" "$port" 300)
  python3 - "$line" "$wire" "$client" "${dropped:-?}" <<'PY'
import json, sys
c, w = json.loads(sys.argv[1]), json.loads(sys.argv[2])
cells = []
for k in ("get", "set"):
    wire = w[k]["p50_us"]  # None: no request of this kind was seen on the wire
    cells += [c[k]["p50_us"], wire, None if wire is None else c[k]["p50_us"] - wire]
show = lambda x: "–" if x is None else f"{x:.1f}"
print(f"| {sys.argv[3]} | " + " | ".join(map(show, cells)) + f" | {w['control_segments']:,} | {sys.argv[4]} |")
PY
done
