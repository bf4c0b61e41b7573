#!/usr/bin/env bash
# A/A on this machine: RUNS runs of one load plan back to back against `dyno serve --http` (the
# server on core 1, the generator on core 0), REPS repetitions of DURATION each. Prints, per
# figure, how much the repetitions of one run differ (the mean of each run's coefficient of
# variation) against how much the runs differ (the coefficient of variation of the runs' medians),
# and what the first would predict for the second (cv / sqrt(reps) × 1.25, the median's standard
# error): a ratio well above 1 means the machine drifts between runs, and a test over repetitions
# alone would take that drift for a change. Then `dyno compare` of each consecutive pair, with the
# earlier runs in the history: how many verdicts claimed a change, and how many p-values < 0.05.
# Traffic stays on 127.0.0.1.
# Usage: bench/aa.sh [RUNS] [REPS] [DURATION] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
runs=${1:-40}
reps=${2:-5}
duration=${3:-500ms}
out=${4:-$(mktemp -d)}
mkdir -p "$out"
cargo build --release -q
dyno=$PWD/target/release/dyno
port=$(free_port)
taskset -c 1 "$dyno" serve --http --listen "127.0.0.1:$port" >"$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
wait_port "$port"
cat >"$out/plan.toml" <<PLAN
[suite]
name = "load"
concurrency = 4
reps = $reps

[load]
duration = "$duration"

[targets.endpoint]
url = "http://127.0.0.1:$port/"
PLAN
for i in $(seq 0 $((runs - 1))); do
  taskset -c 0 "$dyno" run "$out/plan.toml" --quiet -o "$out/r/run$i" >/dev/null
done
for i in $(seq 1 2 $((runs - 1))); do
  "$dyno" compare "$out/r/run$((i - 1))" "$out/r/run$i" -f json >"$out/compare-$i.json"
done
python3 - "$out" "$runs" <<'PY'
import json, math, statistics as st, sys
out, runs = sys.argv[1], int(sys.argv[2])
recs = [json.load(open(f"{out}/r/run{i}/run.json")) for i in range(runs)]
figs = {"rate": lambda r: r["ops_per_s"]}
for q in ["p50", "p99", "p999", "max"]:
    figs[q] = (lambda q: lambda r: r["latency_ns"][q])(q)
print("| figure | within a run (cv) | between runs (cv of medians) | predicted from within | ratio |")
print("| --- | ---: | ---: | ---: | ---: |")
for name, of in figs.items():
    per_run = [[of(r) for r in rec["cases"][0]["reps"]] for rec in recs]
    within = st.mean(st.stdev(v) / st.mean(v) for v in per_run)
    medians = [st.median(v) for v in per_run]
    between = st.stdev(medians) / st.mean(medians)
    predicted = within * 1.25 / math.sqrt(len(per_run[0]))
    print(f"| {name} | {within:.3f} | {between:.3f} | {predicted:.3f} | {between / predicted:.1f} |")
# What a test over repetitions alone would say of the same pairs: Mann-Whitney's exact
# two-sided p (benchstat's test), every split of the pooled repetitions enumerated.
from itertools import combinations
def mann_whitney(a, b):
    pooled = a + b
    def stat(idx):
        xs = [pooled[i] for i in idx]
        ys = [pooled[i] for i in range(len(pooled)) if i not in idx]
        return sum((x > y) + 0.5 * (x == y) for x in xs for y in ys)
    mean = len(a) * len(b) / 2
    seen = abs(stat(range(len(a))) - mean)
    splits = list(combinations(range(len(pooled)), len(a)))
    return sum(abs(stat(s) - mean) >= seen - 1e-9 for s in splits) / len(splits)
reps_low = reps_tests = 0
for i in range(1, runs, 2):
    for name, of in figs.items():
        a = [of(r) for r in recs[i - 1]["cases"][0]["reps"]]
        b = [of(r) for r in recs[i]["cases"][0]["reps"]]
        reps_tests += 1
        reps_low += mann_whitney(a, b) < 0.05
print(f"\nrepetitions alone (Mann-Whitney, exact): {reps_low} of {reps_tests} pairs' figures p < 0.05")
claims = judged = low_p = pvals = 0
too_few = 0
for i in range(1, runs, 2):
    c = json.load(open(f"{out}/compare-{i}.json"))
    for f in (f for k in c["cases"] for f in k["figures"]):
        if f["verdict"] in ("too-few-runs", "too-few-reps"):
            too_few += 1
            continue
        judged += 1
        claims += f["verdict"] in ("improved", "regressed")
        if f["p_value"] is not None:
            pvals += 1
            low_p += f["p_value"] < 0.05
print(f"\nA/A pairs: {claims} of {judged} verdicts claimed a change; {low_p} of {pvals} p-values < 0.05; "
      f"{too_few} figures without a verdict (too few runs or repetitions)")
PY
echo "runs: $out"
