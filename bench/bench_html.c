/*
** bench_html.c: the HTML report of the 7-day #1595 incident.
**
** Runs both cases of scenarios/incidents/issue-1595.json once, then writes
** their HTML page (rpt_html_write: pairing spans, folding, JSON) to memory
** several times. Prints:
**   html_1595_write_ms: X ms          one page of both cases (448,743 + 39,115 records)
**   html_1595_bytes: X B              its size
**   html_1595_budget_ratio: X         size / 5 MB (<= 1 meets the budget)
** Wall-clock time is read here only, to time the benchmark.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reports/rpt.h"
#include "scenarios/scn.h"

#define INCIDENT "scenarios/incidents/issue-1595.json"
#define BUDGET_BYTES 5000000.0
#define REPEATS 5

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void fill(rpt_run *r, const scn_scenario *sc, int ci, const scn_result *res) {
  memset(r, 0, sizeof *r);
  r->scenario_name = sc->name;
  r->scenario_file = sc->file;
  r->seed = res->seed;
  r->strategy = sim_strategy_name(res->strategy);
  r->variant = sc->cases[ci].label;
  r->trace_hash = res->trace_hash;
  r->events = res->events;
  r->end_us = res->end_us;
  r->passed = res->passed;
  r->violations = chk_violation_count(res->checks) ? chk_violation_at(res->checks, 0) : NULL;
  r->n_violations = chk_violation_count(res->checks);
  r->trace = &res->s->trace;
  r->actor_names = (const char *const *)res->actor_names;
  r->n_actors = res->n_actors;
}

int main(void) {
  char err[1024];
  scn_scenario *sc = calloc(1, sizeof *sc);
  scn_result res[2];
  rpt_run runs[2];
  if (!sc || scn_load(INCIDENT, sc, err, sizeof err) || sc->n_cases != 2) {
    fprintf(stderr, "bench_html: cannot load %s: %s\n", INCIDENT, err);
    return 1;
  }
  for (int ci = 0; ci < 2; ci++) {
    if (scn_run_case(sc, ci, sc->seed, sc->strategy, &res[ci])) return 1;
    fill(&runs[ci], sc, ci, &res[ci]);
  }
  double best = 1e9;
  size_t bytes = 0;
  for (int k = 0; k < REPEATS; k++) {
    char *buf = NULL;
    FILE *f = open_memstream(&buf, &bytes);
    double t0 = now();
    if (!f || rpt_html_write(f, runs, 2, NULL, NULL)) return 1;
    fclose(f);
    double dt = now() - t0;
    if (dt < best) best = dt;
    free(buf);
  }
  printf("html_1595_write_ms: %.1f ms\n", best * 1e3);
  printf("html_1595_bytes: %zu B\n", bytes);
  printf("html_1595_budget_ratio: %.4f\n", (double)bytes / BUDGET_BYTES);
  for (int ci = 0; ci < 2; ci++) scn_result_free(&res[ci]);
  scn_free(sc);
  free(sc);
  return 0;
}
