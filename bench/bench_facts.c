/*
** bench_facts.c: the cost of judging facts while a run goes.
**
** Appends synthetic records (a mix of 8 kinds over 4 actors, strings in
** every second record) to a trace that keeps nothing, first with no
** observer, then with a facts engine judging 24 facts (counts with where
** conditions, windows and sequences) as chk_facts would for a scenario
** with many facts. Prints `name: value unit` lines; wall-clock time is used
** only to time the benchmark.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checks/chk_facts.h"
#include "runtime/rt_events.h"

#define RECORDS 2000000
#define N_FACTS 24
#define REPEATS 3

static const uint32_t kinds[8] = {RT_EV_STASH, RT_EV_WRITE, RT_EV_TXN_COMMIT, RT_EV_KEEPALIVE,
                                  RT_EV_ALARM_SET, RT_EV_EFFECT, RT_EV_REQUEST_OK, RT_EV_FIBER_DONE};

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void make_facts(chk_fact *f) {
  memset(f, 0, N_FACTS * sizeof *f);
  for (int i = 0; i < N_FACTS; i++) {
    f[i].case_mask = 1;
    f[i].count_min = 1;
    f[i].count_max = CHK_FACT_NO_MAX;
    f[i].form = i % 3 == 2 ? CHK_FACT_SEQUENCE : CHK_FACT_MATCH;
    f[i].n_pat = f[i].form == CHK_FACT_SEQUENCE ? 3 : 1;
    for (int p = 0; p < f[i].n_pat; p++) {
      chk_fact_pat *pt = &f[i].pat[p];
      pt->kind = kinds[(i + p) % 8];
      pt->actor = (uint32_t)(i % 4);
      pt->to_us = INT64_MAX;
      pt->gap_max_us = INT64_MAX;
      pt->n_where = 2;
      pt->where[0] = (chk_fact_cond){.slot = 0, .op = CHK_COND_RANGE, .lo = 10, .hi = 1000};
      pt->where[1] = (chk_fact_cond){.slot = 3, .op = CHK_COND_EQ, .str = "{\"pc\":7}"};
    }
  }
}

/* Records appended per second, with (facts != NULL) or without an engine. */
static double measure(const chk_fact *facts) {
  double best = 0;
  for (int r = 0; r < REPEATS; r++) {
    sim_trace t;
    if (sim_trace_init(&t)) exit(1);
    t.keep = 0;
    chk_facts *fs = facts ? chk_facts_new(&t, facts, N_FACTS, 0, 0) : NULL;
    uint32_t ids[4] = {sim_trace_intern(&t, "{\"pc\":7}"), sim_trace_intern(&t, "{\"pc\":8}"),
                       sim_trace_intern(&t, "cf_agents_runs"), sim_trace_intern(&t, "job")};
    double t0 = now_s();
    for (uint64_t i = 0; i < RECORDS; i++) {
      sim_rec rec = {(int64_t)i * 1000, kinds[i % 8], (uint32_t)(i % 4), (int64_t)(i % 2000), 1, 2,
                     i % 2 ? ids[i % 4] : 0, 0};
      sim_trace_append(&t, &rec);
    }
    double dt = now_s() - t0;
    chk_facts_finish(fs, (int64_t)RECORDS * 1000);
    if (RECORDS / dt > best) best = RECORDS / dt;
    chk_facts_free(fs);
    sim_trace_free(&t);
  }
  return best;
}

int main(void) {
  static chk_fact facts[N_FACTS];
  make_facts(facts);
  double bare = measure(NULL), judged = measure(facts);
  printf("facts_records_per_s: %.0f 1/s\n", judged);
  printf("facts_overhead_ns_per_record: %.1f ns\n", (1e9 / judged - 1e9 / bare));
  return 0;
}
