#!/usr/bin/env bash
# Regenerates crates/suites/tests/it/vectors/ycsb-keys.txt: the key sequences YCSB's own generator
# classes produce from a fixed stream of draws (SplitMix64, scripts/ycsb-vectors/Stream.java),
# which dyno's tests replay through its Rust generators.
#
# Usage: scripts/ycsb-vectors.sh YCSB_CHECKOUT
#   YCSB_CHECKOUT: a checkout of brianfrankcooper/YCSB (its core/src/main/java). Nothing of it is
#   copied into this repository: the classes are compiled in a temporary directory, with their
#   random source (ThreadLocalRandom.current(), or the per-thread Random of newer versions)
#   replaced by Stream.R. Needs javac and java (JDK 11 or later).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
src=${1:?usage: scripts/ycsb-vectors.sh YCSB_CHECKOUT}/core/src/main/java/site/ycsb
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/site/ycsb/generator"
cp "$src/Utils.java" "$work/src/site/ycsb/"
for c in Generator NumberGenerator CounterGenerator AcknowledgedCounterGenerator ZipfianGenerator \
  ScrambledZipfianGenerator SkewedLatestGenerator UniformLongGenerator; do
  sed -e 's/ThreadLocalRandom\.current()/Stream.R/g' -e 's/random\.get()/Stream.R/g' \
    "$src/generator/$c.java" >"$work/src/site/ycsb/generator/$c.java"
done
cp "$here/scripts/ycsb-vectors/Stream.java" "$here/scripts/ycsb-vectors/Vectors.java" \
  "$work/src/site/ycsb/generator/"
javac -nowarn -d "$work/classes" $(find "$work/src" -name '*.java') 2>&1 | grep -v '^Note:' || true
out="$here/crates/suites/tests/it/vectors/ycsb-keys.txt"
mkdir -p "$(dirname "$out")"
{
  echo "# YCSB's generators from scripts/ycsb-vectors/Stream.java's draws; made by scripts/ycsb-vectors.sh"
  java -cp "$work/classes" site.ycsb.generator.Vectors
} >"$out"
echo "wrote $out"
