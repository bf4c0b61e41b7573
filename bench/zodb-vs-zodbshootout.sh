#!/usr/bin/env bash
# The four ZODB storages and RelStorage on MariaDB measured by dyno (through adapters/zodb) and by
# zodbshootout 0.8.0 itself, in one run, on the same kinds of servers: a ZEO server on a
# MappingStorage, a FileStorage in the client's own process, a ZEO server on a FileStorage,
# RelStorage on PostgreSQL (history-preserving) and on MariaDB (history-free: RelStorage's
# history-preserving schema cannot be made on MariaDB 10.5 and later). Servers run on
# core 1, each tool (and its client processes) on core 0; each tool gets servers of its own,
# started alike. ROUNDS rounds (default 3): dyno's shootout (-n N -c 1, --reps 3, objects of
# the size zodbshootout's make: below),
# then zodbshootout (-c 1 --object-counts N -s 300, pyperf's --fast); objects per second for
# each test, and the ratio dyno / zodbshootout per round, then the median of the rounds.
#
# What each tool times differs, and the script prints both sides as measured:
#   - zodbshootout times a test's whole loop in one process (a transaction of N objects, or N
#     attribute reads); dyno times each write on its side of the adapter's pipe (a round trip to
#     the adapter process per object, about 8–10 µs here: bench/adapter-overhead.sh), and a read
#     test's N objects as one batched request (get_many), as zodbshootout times its loop;
#   - the tests pair as they mean: dyno's warm (new sessions: pickle and client caches empty, the
#     server's kept) is zodbshootout's cold (a new DB per loop); hot and steamin are the same
#     states; dyno's cold (the page cache dropped too) has no zodbshootout twin, nor has
#     zodbshootout's write/read "warm". With address= (servers this script started), dyno's cold is
#     n/a for ZEO: the caches of a server dyno did not start are not dyno's to drop.
#   - the objects are the size zodbshootout's `-s 300` makes, which is not 300 bytes: it takes a
#     sample of that many *words* of its own source text (at least 300 bytes), about 1,400 bytes
#     of data (1,480 pickled). The script measures the mean and gives dyno --size of it
#     (DYNO_SIZE=300 gives dyno 300-byte objects, as before 2026-11-29).
# ZS_ARGS adds options to zodbshootout's (pyperf's, e.g. ZS_ARGS="--loops 5": five loops of a
# test per value instead of --fast's one); ZS_TESTS runs only the tests named.
# Usage: [ZS_ARGS=…] [ZS_TESTS=…] [DYNO_SIZE=B] bench/zodb-vs-zodbshootout.sh [ROUNDS] [N]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3}
n=${2:-1000}
find_postgres
cargo build --release -q
dyno=$PWD/target/release/dyno
./adapters/zodb/setup.sh >/dev/null
# zodbshootout in an environment of its own: the adapter's pins, and its own (pyperf 2.0.0, six).
zs=$PWD/target/zodbshootout-venv
if [ ! -x "$zs/bin/zodbshootout" ] || ! "$zs/bin/python" -c 'import pymysql' 2>/dev/null; then
  python3 -m venv "$zs"
  "$zs/bin/pip" install -q --disable-pip-version-check -r adapters/zodb/requirements.txt \
    zodbshootout==0.8.0 pyperf==2.0.0
fi
# RelStorage 4.3 on MariaDB needs the adapter's shim (adapters/zodb/dyno_relstorage_mariadb.py):
# zodbshootout and its pyperf workers load it at start, from a .pth file in their environment.
site=$("$zs/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cp adapters/zodb/dyno_relstorage_mariadb.py "$site/"
echo "import dyno_relstorage_mariadb; dyno_relstorage_mariadb.install()" >"$site/dyno_mariadb.pth"
zpy=$PWD/adapters/zodb/.venv/bin/python
# The mean size of the data zodbshootout -s 300 puts in its N objects, and of their pickles.
read -r zs_size zs_pickled < <("$zs/bin/python" -c '
import sys
from zodbshootout.speedtest import SpeedTestData
n = int(sys.argv[1])
data = SpeedTestData(1, n, 300)
pickles = data.make_pickles(n)
raw = [o.data for o in data.data_to_store().values()]
print(round(sum(map(len, raw)) / len(raw)), round(sum(map(len, pickles)) / len(pickles)))
' "$n")
size=${DYNO_SIZE:-$zs_size}
echo "zodbshootout -s 300: $zs_size bytes of data an object on average ($zs_pickled pickled); dyno --size $size"
scratch
cleanup() {
  set +e
  stop_postgres
  stop_mariadb
  stop_pids TERM
  mkdir -p target/zodb-bench && cp -r "$work"/dyno-* "$work"/zs-*.json target/zodb-bench/ 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

start_postgres
"$pgbin/psql" -q -h 127.0.0.1 -p "$pgport" -U dyno -d postgres -c "CREATE DATABASE zodbshootout" >/dev/null
start_mariadb
mariadb --no-defaults --socket="$work/maria/sock" -u root -e "CREATE DATABASE zodbshootout"

# ZEO servers on core 1: one on a MappingStorage and one on a FileStorage, for each tool. Not
# called in a command substitution: its subshell would keep the PID from `pids`, and the servers
# would outlive the run (they did, until 2026-11-28).
zeo() { # VAR NAME BACKEND → the port in VAR
  local port; port=$(free_port)
  mkdir -p "$work/$2"
  printf '<zeo>\n  address 127.0.0.1:%s\n</zeo>\n%s\n' "$port" "$3" >"$work/$2/zeo.conf"
  PYTHONPATH=$PWD/adapters/zodb taskset -c 1 "$zpy" -m ZEO.runzeo -C "$work/$2/zeo.conf" \
    >"$work/$2/zeo.log" 2>&1 &
  pids+=($!)
  wait_port "$port" 200
  printf -v "$1" '%s' "$port"
}
zeo dm dyno-mapping '<mappingstorage>
</mappingstorage>'
zeo df dyno-zeo "<filestorage>
  path $work/dyno-zeo/Data.fs
</filestorage>"
zeo zm zs-mapping '<mappingstorage>
</mappingstorage>'
zeo zf zs-zeo "<filestorage>
  path $work/zs-zeo/Data.fs
</filestorage>"

z=exec:adapters/zodb/adapter.py
dyno_targets=("$z?storage=mapping&address=127.0.0.1:$dm" "$z?storage=file"
  "$z?storage=zeo&address=127.0.0.1:$df"
  "$z?storage=relstorage&dsn=postgresql://dyno@127.0.0.1:$pgport/postgres"
  "$z?storage=relstorage&dsn=mysql://dyno:secret@127.0.0.1:$myport")
mkdir -p "$work/zs-file"
cat >"$work/zs.conf" <<EOF
%import relstorage
<zodb mapping>
  <zeoclient>
    server 127.0.0.1:$zm
  </zeoclient>
</zodb>
<zodb file>
  <filestorage>
    path $work/zs-file/Data.fs
  </filestorage>
</zodb>
<zodb zeo>
  <zeoclient>
    server 127.0.0.1:$zf
  </zeoclient>
</zodb>
<zodb relstorage>
  <relstorage>
    <postgresql>
      dsn dbname=zodbshootout host=127.0.0.1 port=$pgport user=dyno
    </postgresql>
  </relstorage>
</zodb>
<zodb relstorage-mysql>
  <relstorage>
    keep-history false
    <mysql>
      driver PyMySQL
      host 127.0.0.1
      port $myport
      user dyno
      passwd secret
      db zodbshootout
    </mysql>
  </relstorage>
</zodb>
EOF

for r in $(seq "$rounds"); do
  echo "== round $r: dyno" >&2
  taskset -c 0 "$dyno" run -n "$n" -c 1 --size "$size" --reps 3 --quiet -o "$work/dyno-$r" \
    "${dyno_targets[@]}" >/dev/null
  echo "== round $r: zodbshootout" >&2
  # shellcheck disable=SC2086
  (cd "$work" && taskset -c 0 "$zs/bin/zodbshootout" -c 1 --object-counts "$n" -s 300 --fast \
    -q -o "$work/zs-$r.json" ${ZS_ARGS:-} "$work/zs.conf" ${ZS_TESTS:-add update cold hot steamin} >"$work/zs-$r.log" 2>&1) \
    || { tail -20 "$work/zs-$r.log" >&2; exit 1; }
done

"$zpy" - "$work" "$rounds" "$n" <<'EOF'
import json, statistics, sys
work, rounds, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
storages = ["mapping", "file", "zeo", "relstorage", "relstorage-mysql"]
# dyno's test, and zodbshootout's test of the same state.
pairs = [("add", "add"), ("update", "update"), ("warm", "cold"), ("hot", "hot"), ("steamin", "steamin")]
def dyno_rates(r):
    rec = json.load(open("%s/dyno-%d/run.json" % (work, r)))
    out = {}
    for c in rec["cases"]:
        # dyno names the second RelStorage target (on MariaDB) zodb-relstorage-2.
        s = c["target"].replace("zodb-", "").replace("relstorage-2", "relstorage-mysql")
        if c["status"] == "ok":
            out[(s, c["test"])] = c["summary"]["ops_per_s"]["median"]
    return out
def zs_rates(r):
    suite = json.load(open("%s/zs-%d.json" % (work, r)))
    out = {}
    for b in suite["benchmarks"]:
        name = b["metadata"]["name"]  # "{c=1 processes, o=1000} zeo: read 1000 hot objects"
        storage, what = name.split("} ", 1)[-1].split(": ", 1)
        test = {"add": "add", "update": "update", "read": None}[what.split()[0]]
        if test is None:
            test = what.split()[2]  # cold, hot, steamin
        values = [v for run in b["runs"] for v in run.get("values", [])]
        out[(storage, test)] = n / statistics.mean(values)  # a value: one loop of n objects
    return out
D = [dyno_rates(r) for r in range(1, rounds + 1)]
Z = [zs_rates(r) for r in range(1, rounds + 1)]
def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None
def fmt(x):
    return "n/a" if x is None else "{:,.0f}".format(x)
print("objects/s, median of %d rounds (dyno / zodbshootout, then the median of the per-round ratios)" % rounds)
print()
print("| dyno test (zodbshootout's) | " + " | ".join(storages) + " | in-process MappingStorage (zodbshootout only) |")
print("|---|" + "---:|" * (len(storages) + 1))
for dt, zt in pairs:
    cells = []
    for s in storages:
        d = med([x.get((s, dt)) for x in D])
        z = med([x.get((s, zt)) for x in Z])
        ratios = [x.get((s, dt)) / y[(s, zt)] for x, y in zip(D, Z) if x.get((s, dt)) and y.get((s, zt))]
        ratio = med(ratios)
        cells.append("%s / %s (%s)" % (fmt(d), fmt(z), "n/a" if ratio is None else "%.2f×" % ratio))
    inproc = med([y.get(("MappingStorage", zt)) for y in Z])
    print("| %s (%s) | %s | %s |" % (dt, zt, " | ".join(cells), fmt(inproc)))
EOF
