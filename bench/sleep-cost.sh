#!/usr/bin/env bash
# What a sleep costs the thread that sleeps, on this machine: the price of `--nap`. A thread on
# core 0 sends a byte through a pipe to a partner on core 1, which answers after SPIN_US of work
# (30 unless given), the way a server answers a request; the thread waits for the answer in one of
# two ways, in alternating rounds:
#   - woken: it blocks in epoll_wait until the answer's arrival wakes it (what dyno does without a
#     nap: on a halted vCPU the wake-up is an interrupt sent by the partner's core);
#   - napped: it sleeps NAP_US (50 unless given) on a timer, then reads the answer that came
#     meanwhile and woke no one (what a nap that catches its reply does);
# and, alone, a timed sleep of NAP_US with no partner (timer). Per round trip (or sleep): the
# thread's run time as the scheduler counts it (/proc/thread-self/schedstat, what GNU time and the
# benches' CPU per transaction add up) and the wall time. napped minus woken is what a nap costs
# the generator beyond the wake-up it spares the server; on the 2-core VM of the measurements a
# timer's sleep costs more than a sleep ended by an interrupt, which is why a nap that catches one
# reply costs the generator CPU (docs/src/measurements/sql.md, 2026-11-30 evening). The probe is
# a small C program (compiled with cc here): dyno's own loop would add its own work to each turn.
# Usage: [SPIN_US=30] [NAP_US=50] bench/sleep-cost.sh [ROUNDS] [ITERATIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-5}
iterations=${2:-20000}
command -v cc >/dev/null || install gcc libc6-dev
scratch
trap 'rm -rf "$work"' EXIT
cat >"$work/probe.c" <<'C'
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static double run_us(void) { /* this thread's run time, as the scheduler counts it */
  unsigned long long ns = 0;
  FILE *f = fopen("/proc/thread-self/schedstat", "r");
  if (!f || fscanf(f, "%llu", &ns) != 1) { perror("schedstat"); exit(1); }
  fclose(f);
  return ns / 1e3;
}

static void pin(int core) {
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(core, &s);
  if (sched_setaffinity(0, sizeof s, &s)) { perror("sched_setaffinity"); exit(1); }
}

static void nap(long us) {
  struct timespec t = {0, us * 1000};
  clock_nanosleep(CLOCK_MONOTONIC, 0, &t, NULL);
}

int main(int argc, char **argv) {
  if (argc != 5) { fprintf(stderr, "usage: probe timer|woken|napped N SPIN_US NAP_US\n"); return 2; }
  const char *mode = argv[1];
  int n = atoi(argv[2]);
  double spin = atof(argv[3]);
  long nap_us = atol(argv[4]);
  prctl(PR_SET_TIMERSLACK, 1000); /* as dyno's generator threads: a 1 µs slack */
  int ask[2], answer[2];
  if (pipe(ask) || pipe(answer)) { perror("pipe"); return 1; }
  pid_t partner = -1;
  if (strcmp(mode, "timer") != 0) {
    partner = fork();
    if (partner == 0) {
      pin(1);
      close(ask[1]);
      close(answer[0]);
      char x;
      for (int i = 0; i < n; i++) {
        if (read(ask[0], &x, 1) != 1) return 0;
        double t = now_us();
        while (now_us() - t < spin) {}
        if (write(answer[1], &x, 1) != 1) return 1;
      }
      return 0;
    }
  }
  pin(0);
  close(ask[0]);
  close(answer[1]);
  fcntl(answer[0], F_SETFL, O_NONBLOCK);
  int ep = epoll_create1(0);
  struct epoll_event e = {.events = EPOLLIN};
  epoll_ctl(ep, EPOLL_CTL_ADD, answer[0], &e);
  double r0 = run_us(), w0 = now_us();
  long late = 0;
  char x = 'x';
  for (int i = 0; i < n; i++) {
    if (partner < 0) { nap(nap_us); continue; }
    if (write(ask[1], &x, 1) != 1) { perror("write"); return 1; }
    if (strcmp(mode, "napped") == 0) nap(nap_us);
    ssize_t got;
    while ((got = read(answer[0], &x, 1)) != 1) {
      if (got == 0) { fprintf(stderr, "probe: the partner went away\n"); return 1; }
      late += strcmp(mode, "napped") == 0;
      epoll_wait(ep, &e, 1, -1);
    }
  }
  printf("%.2f %.1f %ld\n", (run_us() - r0) / n, (now_us() - w0) / n, late);
  if (partner > 0) {
    close(ask[1]); /* the partner, should it still wait, reads the end and exits */
    waitpid(partner, NULL, 0);
  }
  return 0;
}
C
cc -O2 -o "$work/probe" "$work/probe.c"
spin=${SPIN_US:-30}
nap=${NAP_US:-50}
echo "$(uname -r); $iterations iterations a run; the partner answers after ${spin} µs; a nap of ${nap} µs"
printf "%-6s %-7s %14s %12s %s\n" round mode "run time µs" "wall µs" "answers later than the nap"
results=$work/results
: >"$results"
for round in $(seq 1 "$rounds"); do
  order="woken napped timer"
  [ $((round % 2)) -eq 0 ] && order="timer napped woken"
  for mode in $order; do
    read -r run wall late <<<"$("$work/probe" "$mode" "$iterations" "$spin" "$nap")"
    printf "%-6s %-7s %14s %12s %s\n" "$round" "$mode" "$run" "$wall" "$late"
    echo "$mode $run" >>"$results"
  done
done
python3 - "$results" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    mode, run = line.split()
    by.setdefault(mode, []).append(float(run))
med = {m: statistics.median(v) for m, v in by.items()}
print()
print("median run time: " + ", ".join(f"{m} {v:.2f} µs" for m, v in med.items()))
print(f"napped - woken: {med['napped'] - med['woken']:+.2f} µs a round trip")
PY
