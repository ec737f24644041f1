/*
** test_probe.c: probes (docs/trace.md "Probes"): the runtime marks the rare
** situations it reaches; a run counts them, writes one record per probe and
** run, and stays deterministic; every probe has a name and a number.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt_schema.h"
#include "scenarios/scn.h"

/* Runs case ci of file with its own seed; res must be freed. */
static void run_file(const char *file, int ci, scn_result *res) {
  static scn_scenario sc;
  char err[512];
  assert_int_equal(scn_load(file, &sc, err, sizeof err), 0);
  assert_int_equal(scn_run_case(&sc, ci, sc.seed, sc.strategy, res), 0);
  scn_free(&sc);
}

static size_t probe_records(const scn_result *res, int p) {
  size_t n = 0;
  for (size_t i = 0; i < res->s->trace.n; i++) {
    const sim_rec *r = &res->s->trace.recs[i];
    if (r->kind == RT_EV_PROBE && r->a == p) {
      assert_string_equal(sim_trace_str(&res->s->trace, r->s), rt_probe_name(p));
      n++;
    }
  }
  return n;
}

/* Which shipped scenario reaches which probe with its own seed: each of
** them reached, the run's count matches its records, one record each. */
static void test_library_reaches_probes(void **st) {
  static const struct {
    const char *file;
    int probe;
  } want[] = {
    {"scenarios/examples/fiber-crash-recover.json", RT_PROBE_COMMIT_WINDOW_DEATH},
    {"scenarios/examples/gate-timeout.json", RT_PROBE_GATE_RESET_IN_ONSTART},
    {"scenarios/examples/gate-timeout.json", RT_PROBE_WAITERS_FAILED},
    {"scenarios/examples/slow-recovery-hook.json", RT_PROBE_GATE_RESET_IN_HOOK},
    {"scenarios/examples/slow-recovery-hook.json", RT_PROBE_ALARM_RETRIES_EXHAUSTED},
    {"scenarios/examples/storage-fail.json", RT_PROBE_STORAGE_FAIL_COMMIT},
    {"scenarios/examples/toolrun-stuck-child.json", RT_PROBE_INSPECT_TIMEOUT},
    {"scenarios/examples/toolrun-stuck-child.json", RT_PROBE_LATE_REPLY},
    {"scenarios/examples/chat-recovery.json", RT_PROBE_UPSTREAM_SEVERED},
    {"scenarios/incidents/workerd-6850.json", RT_PROBE_STARTUP_POISONED},
  };
  (void)st;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    scn_result res;
    run_file(want[i].file, 0, &res);
    if (res.probes[want[i].probe] != 1)
      fail_msg("%s: probe %s counted %u times", want[i].file, rt_probe_name(want[i].probe),
               res.probes[want[i].probe]);
    assert_int_equal(probe_records(&res, want[i].probe), 1);
    scn_result_free(&res);
  }
}

/* A run with no fault reaches none: the quick path costs no record. */
static void test_quiet_run_reaches_none(void **st) {
  static scn_scenario sc;
  scn_run_opts o = {0};
  scn_result res;
  char err[512];
  (void)st;
  o.without_faults = 1;
  assert_int_equal(scn_load("scenarios/examples/fiber-crash-recover.json", &sc, err, sizeof err), 0);
  assert_int_equal(scn_run_case_ex(&sc, 0, sc.seed, sc.strategy, &o, &res), 0);
  for (int p = 0; p < RT_PROBE_COUNT; p++) assert_int_equal(res.probes[p], 0);
  scn_result_free(&res);
  scn_free(&sc);
}

/* The same run twice gives the same probes and the same trace hash. */
static void test_probes_deterministic(void **st) {
  scn_result a, b;
  (void)st;
  run_file("scenarios/incidents/issue-1595.json", 0, &a);
  run_file("scenarios/incidents/issue-1595.json", 0, &b);
  assert_true(a.trace_hash == b.trace_hash);
  assert_memory_equal(a.probes, b.probes, sizeof a.probes);
  assert_int_equal(a.probes[RT_PROBE_WAITERS_FAILED], 1); /* thousands of hits, one record */
  scn_result_free(&a);
  scn_result_free(&b);
}

/* Names are unique, found back, and the record kind has its fields. */
static void test_probe_names(void **st) {
  (void)st;
  for (int p = 0; p < RT_PROBE_COUNT; p++) {
    assert_string_not_equal(rt_probe_name(p), "?");
    assert_int_equal(rt_probe_find(rt_probe_name(p)), p);
    for (int q = 0; q < p; q++) assert_string_not_equal(rt_probe_name(p), rt_probe_name(q));
  }
  assert_string_equal(rt_probe_name(RT_PROBE_COUNT), "?");
  assert_int_equal(rt_probe_find("no_such_probe"), -1);
  assert_int_equal(rt_probe_find(NULL), -1);
  assert_int_equal(rt_schema_kind("probe"), RT_EV_PROBE);
  assert_int_equal(rt_schema_slot(RT_EV_PROBE, "probe"), 3);
}

/* expect.reach is loaded per case (a top-level one applies to every case)
** and written back by scn_write. */
static void test_reach_loaded_and_written(void **st) {
  static scn_scenario sc, back;
  static const char text[] =
      "{\"name\": \"r\", \"duration\": \"1m\", \"actors\": [{\"id\": \"a\"}],\n"
      " \"expect\": {\"reach\": [\"late_reply\"]},\n"
      " \"cases\": [{\"name\": \"x\", \"expect\": {\"reach\": [\"alarm_cut\"]}}, {\"name\": \"y\"}]}\n";
  char err[512], *buf = NULL;
  size_t len = 0;
  (void)st;
  assert_int_equal(scn_load_text("r.json", text, strlen(text), &sc, err, sizeof err), 0);
  assert_true(sc.cases[0].reach_mask == ((1ull << RT_PROBE_LATE_REPLY) | (1ull << RT_PROBE_ALARM_CUT)));
  assert_true(sc.cases[1].reach_mask == (1ull << RT_PROBE_LATE_REPLY));
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(scn_write(f, &sc), 0);
  fclose(f);
  if (scn_load_text("back.json", buf, len, &back, err, sizeof err) != 0) fail_msg("%s\n%s", err, buf);
  assert_true(back.cases[0].reach_mask == sc.cases[0].reach_mask);
  assert_true(back.cases[1].reach_mask == sc.cases[1].reach_mask);
  free(buf);
  scn_free(&back);
  scn_free(&sc);
}

/* Crashes where they hurt (#16 item 4): in a file where only a crash inside
** a commit window loses work, the swarm's fault mixes over 200 seeds draw
** write-boundary crashes that lose it (effects_once) and reach the probe;
** uniform per-day crashes alone found 2 such seeds (both storage failures). */
static void test_mix_crashes_at_write_boundaries(void **st) {
  static scn_scenario base, m;
  char err[512];
  int lost = 0, reached = 0, at_write = 0;
  (void)st;
  assert_int_equal(scn_load("tests/corpus/swarm/commit-window.json", &base, err, sizeof err), 0);
  for (uint64_t seed = 1; seed <= 200; seed++) {
    scn_mix mix;
    scn_result res;
    scn_copy(&m, &base);
    scn_swarm_mix(&m, seed, &mix);
    for (int i = 0; i < m.n_faults; i++) at_write += m.faults[i].after_write > 0;
    assert_int_equal(scn_run_case(&m, 0, seed, SIM_RANDOM, &res), 0);
    lost += !res.passed && strstr(res.failure, "effects_once") != NULL;
    reached += res.probes[RT_PROBE_COMMIT_WINDOW_DEATH] > 0;
    scn_result_free(&res);
  }
  scn_free(&base);
  if (lost < 10 || reached < lost || at_write < 50)
    fail_msg("lost %d, reached %d, write-boundary faults %d", lost, reached, at_write);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_library_reaches_probes),
    cmocka_unit_test(test_quiet_run_reaches_none),
    cmocka_unit_test(test_probes_deterministic),
    cmocka_unit_test(test_probe_names),
    cmocka_unit_test(test_reach_loaded_and_written),
    cmocka_unit_test(test_mix_crashes_at_write_boundaries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
