/*
** bench_kernel.c: throughput of the simulation kernel's event loop.
**
** Steady state: N events pending; each dispatched no-op event schedules one
** new event at a random future offset drawn from a sim_rng stream, so every
** measured event costs one schedule, one pop and one dispatch. Prints one
** figure per line as `name: value unit`.
**
** Wall-clock time (clock_gettime) is used here only, to time the benchmark;
** it never reaches a simulation run.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/sim.h"

#define TARGET_EVENTS_PER_S 25000000.0     /* issue #18 */
#define TARGET_EVENTS_PER_S_1M 5000000.0
#define MIN_SECONDS 0.5
#define REPEATS 3
#define MAX_OFFSET_US 1000000   /* offsets drawn from [1, 1 s] */

typedef struct bench_ctx {
  sim_rng rng;
  uint64_t ran;
} bench_ctx;

static void step(sim *s, void *ctx, uint64_t arg) {
  bench_ctx *b = ctx;
  b->ran++;
  sim_after(s, 1 + (int64_t)sim_rng_below(&b->rng, MAX_OFFSET_US), 0, step, b,
            arg);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Events per second with `pending` events in the queue. */
static double measure(sim_strategy st, uint64_t pending) {
  sim s;
  sim_config cfg = {42, st, 1, 0};
  bench_ctx b = {{{0}}, 0};
  if (sim_init(&s, &cfg)) {
    fprintf(stderr, "bench_kernel: sim_init failed\n");
    exit(1);
  }
  s.trace.keep = 0;
  sim_rng_stream(&b.rng, 42, "workload");
  for (uint64_t i = 0; i < pending; i++)
    if (!sim_after(&s, 1 + (int64_t)sim_rng_below(&b.rng, MAX_OFFSET_US), 0,
                   step, &b, i)) {
      fprintf(stderr, "bench_kernel: out of memory\n");
      exit(1);
    }
  /* warm up: one pass over the pending set, at least 100k events */
  sim_run(&s, INT64_MAX, pending > 100000 ? pending : 100000);

  /* Best of REPEATS windows of >= MIN_SECONDS each: the machine may be
  ** shared, and other processes only ever make a window slower. */
  double best = 0;
  for (int rep = 0; rep < REPEATS; rep++) {
    uint64_t batch = 1u << 18, total = 0;
    double t0 = now_s(), el;
    do {
      sim_run(&s, INT64_MAX, batch);
      total += batch;
      el = now_s() - t0;
    } while (el < MIN_SECONDS);
    if ((double)total / el > best) best = (double)total / el;
  }
  if (sim_pending(&s) != pending) {
    fprintf(stderr, "bench_kernel: pending drifted (%llu != %llu)\n",
            (unsigned long long)sim_pending(&s), (unsigned long long)pending);
    exit(1);
  }
  sim_free(&s);
  return best;
}

/* Usage: bench_kernel [fifo|1m|random] (default: all figures). A single
** figure is handy under a profiler. */
int main(int argc, char **argv) {
  const char *only = argc > 1 ? argv[1] : NULL;
  if (only && strcmp(only, "fifo") && strcmp(only, "1m") && strcmp(only, "random")) {
    fprintf(stderr, "usage: bench_kernel [fifo|1m|random]\n");
    return 2;
  }
  double fifo = 0;
  if (!only || !strcmp(only, "fifo")) {
    fifo = measure(SIM_FIFO, 1000);
    printf("kernel_events_per_s: %.0f events/s\n", fifo);
  }
  if (!only || !strcmp(only, "1m")) {
    double m = measure(SIM_FIFO, 1000000);
    printf("kernel_events_per_s_1m: %.0f events/s\n", m);
    printf("kernel_events_1m_target_ratio: %.3f x\n", m / TARGET_EVENTS_PER_S_1M);
  }
  if (!only || !strcmp(only, "random"))
    printf("kernel_events_per_s_random: %.0f events/s\n", measure(SIM_RANDOM, 1000));
  if (fifo > 0)
    printf("kernel_events_target_ratio: %.3f x\n", fifo / TARGET_EVENTS_PER_S);
  return 0;
}
