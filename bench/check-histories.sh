#!/usr/bin/env bash
# What dyno's consistency checkers cost: `dyno check` (pinned to core 0) on two histories made
# here, each checked ROUNDS times (default 3), the time each took printed (the checker's own,
# from its table, and the process's wall and CPU time):
#   - a register history of OPS operations (default 100000) by 16 clients over 1000 keys, each
#     operation taking effect at an instant inside its own interval on a sequential register
#     (so it is linearizable), with overlaps between clients, a read for every write, and one
#     operation in 50 of unknown outcome;
#   - a list-append history of TXNS transactions (default 50000) by 16 clients over 1000 keys,
#     1 to 4 appends and reads each, executed one after another (so it is serializable), one in
#     20 aborted, written in Jepsen's EDN.
# Both are valid, so the checkers do their whole work (a violation can end a key's search early).
# Usage: bench/check-histories.sh [OPS] [TXNS] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
ops=${1:-100000}
txns=${2:-50000}
rounds=${3:-3}
cargo build --release -q
dyno=$PWD/target/release/dyno
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$ops" "$txns" "$work" <<'PY'
import json, random, sys
ops, txns, work = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rnd = random.Random(7)
clients, keys = 16, 1000
# Registers: every client's next operation starts after its last answer; it takes effect at an
# instant of its own interval, in the order of those instants.
events = []
free = [0] * clients
value = 0
for i in range(ops):
    c = rnd.randrange(clients)
    start = free[c] + rnd.randrange(1, 2000)
    at = start + rnd.randrange(1, 20000)
    end = at + rnd.randrange(1, 20000)
    free[c] = end
    events.append((at, c, start, end, rnd.randrange(keys)))
events.sort()
state = {}
with open(f"{work}/registers.jsonl", "w") as out:
    for at, c, start, end, key in events:
        line = {"client": c, "key": key, "invoke_ns": start}
        if rnd.random() < 0.5:
            value += 1
            state[key] = value
            line.update(f="write", value=value)
        else:
            line.update(f="read", value=state.get(key))
        if rnd.random() < 0.02:
            line["type"] = "info"
        else:
            line.update(type="ok", complete_ns=end)
        out.write(json.dumps(line) + "\n")
# List-append: one transaction after another, each seeing all that committed before it.
lists = {}
value = 0
t = 0
with open(f"{work}/append.edn", "w") as out:
    for i in range(txns):
        c = rnd.randrange(clients)
        mine = {}
        mops = []
        for _ in range(rnd.randrange(1, 5)):
            k = rnd.randrange(keys)
            if rnd.random() < 0.5:
                value += 1
                mine.setdefault(k, list(lists.get(k, []))).append(value)
                mops.append(f"[:append {k} {value}]")
            else:
                seen = mine.get(k, lists.get(k, []))
                mops.append(f"[:r {k} [{' '.join(map(str, seen))}]]")
        aborted = rnd.random() < 0.05
        if not aborted:
            lists.update(mine)
        t += 1000
        kind = ":fail" if aborted else ":ok"
        v = " ".join(mops)
        out.write(f"{{:type :invoke, :f :txn, :value [{v}], :process {c}, :time {t}}}\n")
        out.write(f"{{:type {kind}, :f :txn, :value [{v}], :process {c}, :time {t + 500}}}\n")
PY

echo "dyno check on this machine ($(nproc) cores), $(date -u +%F): $ops register operations, $txns transactions"
for round in $(seq "$rounds"); do
  for what in "linearizable registers.jsonl" "serializable append.edn"; do
    set -- $what
    start=$(date +%s%N)
    out=$(taskset -c 0 "$dyno" check --model "$1" "$work/$2" || true)
    wall=$(( ($(date +%s%N) - start) / 1000000 ))
    verdict=$(echo "$out" | awk 'NR==4 { print $2 }')
    took=$(echo "$out" | awk 'NR==4 { print $NF }')
    echo "round $round  $1  $2: verdict $verdict, checked in $took, process wall ${wall} ms"
  done
done
