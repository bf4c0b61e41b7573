#!/usr/bin/env bash
# How much a busy core 0 stalls core 1 on this machine. A spin loop on core 1 records the gaps in
# its own progress for SECONDS (default 10) while core 0 idles, then runs a busy/sleep duty cycle
# of about 60%, 85% and 100%. On bare metal the columns stay near zero whatever core 0 does; on a
# virtual machine whose cores share host time, gaps of milliseconds appear once both are busy.
# That is what a load generator spinning on one core does to a server on the other. Needs gcc and
# taskset. Nothing touches the network.
# Usage: bench/hiccups.sh [SECONDS]
set -euo pipefail
seconds=${1:-10}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/gaps.c" <<'C'
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static uint64_t now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
int main(int argc, char **argv) {
  uint64_t end = now() + strtoull(argv[1], 0, 10) * 1000000000ull, last = now(), worst = 0;
  uint64_t over[4] = {0}; const uint64_t at[4] = {100000, 1000000, 2000000, 5000000};
  for (;;) {
    uint64_t t = now(), gap = t - last; last = t;
    if (t > end) break;
    if (gap > worst) worst = gap;
    for (int i = 0; i < 4; i++) if (gap > at[i]) over[i]++;
  }
  printf("%8lu %8lu %8lu %8lu %9.2f ms\n", over[0], over[1], over[2], over[3], worst / 1e6);
  return 0;
}
C
cat > "$work/duty.c" <<'C'
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static uint64_t now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ull + t.tv_nsec; }
int main(int argc, char **argv) {
  uint64_t busy = strtoull(argv[2], 0, 10) * 1000, idle = strtoull(argv[3], 0, 10);
  uint64_t end = now() + strtoull(argv[1], 0, 10) * 1000000000ull + 500000000ull;
  while (now() < end) { uint64_t t = now() + busy; while (now() < t) {} if (idle) usleep(idle); }
  return 0;
}
C
gcc -O2 -o "$work/gaps" "$work/gaps.c"
gcc -O2 -o "$work/duty" "$work/duty.c"
printf '%-22s %8s %8s %8s %8s %12s\n' "core 0" ">100us" ">1ms" ">2ms" ">5ms" "longest"
printf '%-22s ' idle
taskset -c 1 "$work/gaps" "$seconds"
for spec in "60 40 busy ~60%" "400 20 busy ~85%" "1000 0 busy 100%"; do
  set -- $spec
  printf '%-22s ' "$3 $4"
  taskset -c 0 "$work/duty" "$seconds" "$1" "$2" &
  duty=$!
  taskset -c 1 "$work/gaps" "$seconds"
  wait "$duty"
done
