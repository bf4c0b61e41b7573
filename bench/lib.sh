# Shared by the bench scripts (source it after `cd` to the repository's root and `set -euo pipefail`).
# A script defines its own `pids` array (started servers, stopped by its cleanup) and `work`
# directory before calling start_postgres.

install() { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# Waits until 127.0.0.1:PORT accepts a connection, at most TRIES × 50 ms (default 100); fails after.
wait_port() {
  for _ in $(seq "${2:-100}"); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "nothing listens on 127.0.0.1:$1" >&2
  return 1
}

# A scratch folder in $work that a server running as the `postgres` user can enter, and an empty
# list of the PIDs the script starts ($pids).
scratch() {
  work=$(mktemp -d)
  chmod 755 "$work"
  pids=()
}

# Signals (SIGNAL, default TERM) every process in $pids this script started, then waits (at most
# 20 s each) until each has gone.
stop_pids() {
  local p
  for p in "${pids[@]}"; do kill -"${1:-TERM}" "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do timeout 20 tail --pid="$p" -f /dev/null; done
  return 0
}

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

# From what `measure dyno run … -f json` printed: "OK RATE CPU_PER_REQUEST_US" of its one load rep.
dyno_load_figures() {
  python3 - "$1" <<'PY'
import json, re, sys
t = sys.argv[1]
r = json.loads(t.splitlines()[0])["cases"][0]["reps"][0]["detail"]["load"]
cpu = int(re.search(r"cpu_ns=(\d+)", t).group(1))
print(r["ok"], r["responses_per_s"], cpu / r["requests"] / 1000)
PY
}

# ROUNDS rounds of every shape CxM in SHAPES (an array's name), PEER and dyno in turn (PEER first
# in odd rounds): each tool's run is the script's `TOOL_run C M ROUND`, printing "OK RATE CPU".
# Prints a row per run (UNIT names what is counted) and keeps them in $work/rounds for `ratios`.
alternate() {
  local peer=$1 unit=$2 rounds=$3 shape c m order tool ok rate cpu
  local -n list=$4
  printf '%-7s %-6s %-3s %12s %12s %14s\n' tool shape round ok "$unit/s" "CPU/$unit"
  for round in $(seq "$rounds"); do
    for shape in "${list[@]}"; do
      c=${shape%x*}
      m=${shape#*x}
      order="$peer dyno"
      [ $((round % 2)) -eq 0 ] && order="dyno $peer"
      for tool in $order; do
        read -r ok rate cpu <<<"$("${tool}_run" "$c" "$m" "$round")"
        printf '%-7s %-6s %-3s %12s %12.0f %12.2fµs\n' "$tool" "$shape" "$round" "$ok" "$rate" "$cpu"
        echo "$tool $shape $round $rate $cpu" >>"$work/rounds"
      done
    done
  done
}

# FILE holds lines "TOOL SHAPE ROUND RATE CPU"; prints dyno's ratios to PEER's rate and CPU per
# UNIT within each round of each shape, and their median.
ratios() {
  python3 - "$@" <<'PY'
import statistics, sys
path, peer, unit = sys.argv[1:4]
runs = {}
for line in open(path):
    tool, shape, rnd, rate, cpu = line.split()
    runs[(tool, shape, rnd)] = (float(rate), float(cpu))
print()
print("dyno / %s, per round (median):" % peer)
for shape in dict.fromkeys(s for _, s, _ in runs):
    rounds = sorted({r for t, s, r in runs if s == shape}, key=int)
    rate = [runs[("dyno", shape, r)][0] / runs[(peer, shape, r)][0] for r in rounds]
    cpu = [runs[("dyno", shape, r)][1] / runs[(peer, shape, r)][1] for r in rounds]
    print("  %-6s rate %s (%.2fx)   CPU/%s %s (%.2fx)" % (
        shape, ", ".join("%.2f" % x for x in rate), statistics.median(rate), unit,
        ", ".join("%.2f" % x for x in cpu), statistics.median(cpu)))
PY
}

# Runs a command (its output into FILE, its errors into $work/err); prints its CPU seconds (user +
# system, GNU time's), or shows what it said and fails.
timed() {
  local file=$1
  shift
  /usr/bin/time -f "%U %S" -o "$work/time" "$@" >"$file" 2>"$work/err" || { cat "$work/err" "$file"; exit 1; }
  awk '{ print $1 + $2 }' "$work/time"
}

# The newest installed PostgreSQL's bin folder in $pgbin (installed when missing, with the extra
# packages given).
find_postgres() {
  pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  [ -n "$pgbin" ] || { install postgresql "$@"; pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1); }
}

# A private PostgreSQL on core 1 in $work/pg, user dyno, trust auth, on a free loopback port
# ($pgport), as the `postgres` user when root (initdb refuses root); its PID joins $pids. Stop
# it with stop_postgres (the postmaster by its own PID file: runuser does not pass a signal on).
start_postgres() {
  local as_pg=()
  [ "$(id -u)" = 0 ] && { id postgres >/dev/null 2>&1 || useradd -r postgres; as_pg=(runuser -u postgres --); }
  mkdir "$work/pg" && [ ${#as_pg[@]} -eq 0 ] || chown postgres "$work/pg"
  "${as_pg[@]}" "$pgbin/initdb" -D "$work/pg/data" -U dyno --auth=trust -E UTF8 --no-sync >/dev/null
  pgport=$(free_port)
  taskset -c 1 "${as_pg[@]}" "$pgbin/postgres" -D "$work/pg/data" -p "$pgport" \
    -c listen_addresses=127.0.0.1 -k "$work/pg" >"$work/pg.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pgport" && break; sleep 0.1; done
}

# Stops the private PostgreSQL and waits (at most 10 s) until it has gone, so its folder can go.
stop_postgres() {
  local pid
  [ -f "$work/pg/data/postmaster.pid" ] || return 0
  pid=$(head -1 "$work/pg/data/postmaster.pid")
  kill -INT "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  return 0
}

# dyno built, pgbench (installed when missing) and a private PostgreSQL on core 1 in a scratch
# folder, both gone when the script exits: sets $dyno, $pgbin, $pgport, $work and $pg (the URL).
pgbench_beside_postgres() {
  find_postgres postgresql-contrib
  [ -x "$pgbin/pgbench" ] || install postgresql-contrib
  cargo build --release -q
  dyno=$PWD/target/release/dyno
  scratch
  trap 'set +e; stop_postgres; rm -rf "$work"' EXIT
  start_postgres
  pg="postgres://dyno@127.0.0.1:$pgport/postgres"
}

# A private MariaDB on core 1 in $work/maria, on a free loopback port ($myport), with a user
# dyno (password secret) and a database sbtest; its PID joins $pids. Stop it with stop_mariadb.
start_mariadb() {
  [ -x /usr/sbin/mariadbd ] || install mariadb-server
  mkdir -p "$work/maria"
  mariadb-install-db --no-defaults --auth-root-authentication-method=normal --skip-test-db \
    --user=root --datadir="$work/maria/data" >/dev/null 2>&1
  myport=$(free_port)
  taskset -c 1 /usr/sbin/mariadbd --no-defaults --datadir="$work/maria/data" \
    --socket="$work/maria/sock" --pid-file="$work/maria/pid" --log-error="$work/maria.log" \
    --user=root --bind-address=127.0.0.1 --skip-name-resolve --port="$myport" >"$work/maria.out" 2>&1 &
  pids+=($!)
  wait_port "$myport" 600
  mariadb --no-defaults --socket="$work/maria/sock" -u root -e \
    "CREATE USER dyno@'127.0.0.1' IDENTIFIED BY 'secret'; GRANT ALL ON *.* TO dyno@'127.0.0.1'; CREATE DATABASE sbtest"
}

stop_mariadb() {
  [ -f "$work/maria/pid" ] && kill -TERM "$(cat "$work/maria/pid")" 2>/dev/null
  return 0
}
