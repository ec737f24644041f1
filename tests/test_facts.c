/*
** test_facts.c: facts of scenario files (docs/scenarios.md, "facts").
**
** Each fact form is run passing and failing against one small scenario (a
** fiber with effects and stashes, a restart, an interval schedule that is
** cancelled, a second actor): match with every count form and condition
** (exact, range, present, absent, enum, bool, actor, JSON, time window),
** sequence (with "within"), eventually, and the end forms (table rows with
** columns, alarm, keepAlive refs, effect ledger). The engine is also fed
** hand-made records to check the nearest candidates it keeps, and a swarm
** mix must drop the facts not marked robust.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/chk_facts.h"
#include "runtime/rt_schema.h"
#include "runtime/rt_events.h"
#include "scenarios/scn.h"

static const char base[] =
    "{\"name\": \"t\", \"seed\": 7, \"duration\": \"5m\",\n"
    " \"programs\": {\"job\": [{\"repeat\": 10, \"steps\": [{\"work\": \"500ms\"}, {\"effect\": \"log\"},"
    " {\"stash\": true}]}]},\n"
    " \"actors\": [{\"id\": \"agent\"}, {\"id\": \"other\"}],\n"
    " \"workload\": [{\"fiber\": \"job\", \"actor\": \"agent\", \"at\": \"1s\"},\n"
    "   {\"schedule\": \"agent\", \"callback\": \"poll\", \"interval\": \"10s\", \"at\": \"1s\"},\n"
    "   {\"cancel_schedule\": \"agent\", \"callback\": \"poll\", \"at\": \"1m\"},\n"
    "   {\"request\": \"other\", \"at\": \"2s\"}],\n"
    " \"faults\": [{\"kind\": \"restart\", \"at\": \"3.2s\"}],\n"
    " \"expect\": {\"facts\": [%s]}}\n";

static scn_scenario g_sc;

/* Loads base with one fact (its JSON text), runs it, and returns whether
** the fact passed; its message goes into msg. */
static int judge(const char *fact, char *msg, size_t cap) {
  char text[4096], err[1024];
  scn_result r;
  snprintf(text, sizeof text, base, fact);
  if (scn_load_text("facts.json", text, strlen(text), &g_sc, err, sizeof err) != 0)
    fail_msg("load: %s\n%s", err, fact);
  assert_int_equal(g_sc.n_facts, 1);
  assert_int_equal(scn_run_case(&g_sc, 0, g_sc.seed, g_sc.strategy, &r), 0);
  assert_int_equal(chk_facts_count(r.facts), 1);
  const chk_fact_result *res = chk_facts_result(r.facts, 0);
  int passed = res->passed;
  snprintf(msg, cap, "%s", res->msg);
  assert_int_equal(r.passed, passed); /* a failed fact fails the case */
  if (!passed) assert_non_null(strstr(r.failure, chk_facts_fact(r.facts, 0)->name));
  scn_result_free(&r);
  scn_free(&g_sc);
  return passed;
}

typedef struct fcase {
  const char *fact;
  int passes;
  const char *msg;   /* part of the verdict's message */
} fcase;

static void run_table(const fcase *t, size_t n) {
  char msg[256];
  for (size_t i = 0; i < n; i++) {
    int got = judge(t[i].fact, msg, sizeof msg);
    if (got != t[i].passes)
      fail_msg("fact %zu %s, want %s: %s\n  %s", i, got ? "passed" : "failed",
               t[i].passes ? "pass" : "fail", msg, t[i].fact);
    if (t[i].msg && !strstr(msg, t[i].msg))
      fail_msg("fact %zu: message \"%s\" lacks \"%s\"", i, msg, t[i].msg);
  }
}

#define N(t) (sizeof(t) / sizeof((t)[0]))

static void test_match_counts(void **st) {
  static const fcase t[] = {
      {"{\"fact\": \"one hook\", \"match\": {\"kind\": \"hook_begin\", \"actor\": \"agent\"}, \"count\": 1}", 1, "exactly 1"},
      {"{\"fact\": \"two hooks\", \"match\": {\"kind\": \"hook_begin\", \"actor\": \"agent\"}, \"count\": 2}", 0, "found 1"},
      {"{\"fact\": \"some stash\", \"match\": {\"kind\": \"stash\"}}", 1, "at least 1"},
      {"{\"fact\": \"no stash\", \"match\": {\"kind\": \"stash\"}, \"count\": 0}", 0, "found 11"},
      {"{\"fact\": \"min\", \"match\": {\"kind\": \"stash\"}, \"count\": {\"min\": 11}}", 1, NULL},
      {"{\"fact\": \"min too high\", \"match\": {\"kind\": \"stash\"}, \"count\": {\"min\": 12}}", 0, "at least 12"},
      {"{\"fact\": \"max\", \"match\": {\"kind\": \"stash\"}, \"count\": {\"max\": 11}}", 1, NULL},
      {"{\"fact\": \"max too low\", \"match\": {\"kind\": \"stash\"}, \"count\": {\"max\": 10}}", 0, "at most 10"},
      {"{\"fact\": \"between\", \"match\": {\"kind\": \"stash\"}, \"count\": {\"min\": 5, \"max\": 20}}", 1, NULL},
      {"{\"fact\": \"none on other\", \"match\": {\"kind\": \"stash\", \"actor\": \"other\"}, \"count\": 0}", 1, NULL},
  };
  (void)st;
  run_table(t, N(t));
}

static void test_match_conditions(void **st) {
  static const fcase t[] = {
      /* JSON field */
      {"{\"fact\": \"j\", \"match\": {\"kind\": \"hook_begin\", \"where\": {\"snapshot\": {\"pc\": 12}}}, \"count\": 1}", 1, NULL},
      {"{\"fact\": \"j2\", \"match\": {\"kind\": \"hook_begin\", \"where\": {\"snapshot\": {\"pc\": 9}}}, \"count\": 1}", 0, NULL},
      /* string and enum */
      {"{\"fact\": \"s\", \"match\": {\"kind\": \"fiber_recovered\", \"where\": {\"name\": \"job\", \"action\": \"resume\"}}, \"count\": 1}", 1, NULL},
      {"{\"fact\": \"e\", \"match\": {\"kind\": \"fiber_recovered\", \"where\": {\"action\": \"drop\"}}, \"count\": 1}", 0, NULL},
      /* bool */
      {"{\"fact\": \"b\", \"match\": {\"kind\": \"fiber_done\", \"where\": {\"ok\": true}}, \"count\": 1}", 1, NULL},
      {"{\"fact\": \"b2\", \"match\": {\"kind\": \"fiber_done\", \"where\": {\"ok\": false}}, \"count\": 1}", 0, NULL},
      /* integer exact and range */
      {"{\"fact\": \"i\", \"match\": {\"kind\": \"stash\", \"where\": {\"pc\": 30}}, \"count\": 1}", 1, NULL},
      {"{\"fact\": \"r\", \"match\": {\"kind\": \"stash\", \"where\": {\"pc\": {\"min\": 13, \"max\": 29}}}, \"count\": 5}", 1, NULL},
      {"{\"fact\": \"r2\", \"match\": {\"kind\": \"stash\", \"where\": {\"pc\": {\"min\": 31}}}}", 0, NULL},
      /* time fields: exact, range, none */
      {"{\"fact\": \"t\", \"match\": {\"kind\": \"alarm_set\", \"where\": {\"at_us\": \"31s\"}}, \"count\": {\"min\": 1}}", 1, NULL},
      {"{\"fact\": \"t2\", \"match\": {\"kind\": \"alarm_set\", \"where\": {\"at_us\": {\"min\": \"11s\", \"max\": \"11.001s\"}}}, \"count\": 2}", 1, NULL},
      {"{\"fact\": \"t3\", \"match\": {\"kind\": \"schedule_set\", \"where\": {\"at_us\": \"none\", \"callback\": \"poll\"}}, \"count\": 1}", 1, NULL},
      /* a time field named without its _us suffix, as revenant trace prints it */
      {"{\"fact\": \"t4\", \"match\": {\"kind\": \"alarm_fire\", \"where\": {\"at\": \"11s\"}}, \"count\": 1}", 1, NULL},
      /* presence */
      {"{\"fact\": \"p\", \"match\": {\"kind\": \"onstart_end\", \"where\": {\"error\": {\"present\": false}}}, \"count\": 3}", 1, NULL},
      {"{\"fact\": \"p2\", \"match\": {\"kind\": \"onstart_end\", \"where\": {\"error\": {\"present\": true}}}}", 0, NULL},
      /* actor-typed field: none here; time window */
      {"{\"fact\": \"w\", \"match\": {\"kind\": \"stash\", \"from\": \"11s\", \"to\": \"12s\"}, \"count\": 3}", 1, NULL},
      {"{\"fact\": \"w2\", \"match\": {\"kind\": \"stash\", \"from\": \"4s\", \"to\": \"10s\"}}", 0, NULL},
      /* the new write fields */
      {"{\"fact\": \"wr\", \"match\": {\"kind\": \"write\", \"where\": {\"op\": \"fiber_insert\", \"table\": \"cf_agents_runs\", \"name\": \"job\"}}, \"count\": 2}", 1, NULL},
  };
  (void)st;
  run_table(t, N(t));
}

static void test_sequence(void **st) {
  static const fcase t[] = {
      {"{\"fact\": \"q\", \"sequence\": [{\"kind\": \"actor_death\", \"actor\": \"agent\"},"
       " {\"kind\": \"hook_begin\"}, {\"kind\": \"fiber_done\", \"where\": {\"ok\": true}}]}", 1, "all 3 steps"},
      {"{\"fact\": \"q2\", \"sequence\": [{\"kind\": \"fiber_done\"}, {\"kind\": \"hook_begin\"}]}", 0, "step 2 of 2"},
      {"{\"fact\": \"q3\", \"sequence\": [{\"kind\": \"hook_begin\"}, {\"kind\": \"fiber_done\", \"within\": \"3s\"}]}", 1, NULL},
      {"{\"fact\": \"q4\", \"sequence\": [{\"kind\": \"hook_begin\"}, {\"kind\": \"fiber_done\", \"within\": \"2s\"}]}", 0, "never matched"},
      {"{\"fact\": \"q5\", \"sequence\": [{\"kind\": \"hook_begin\"}, {\"kind\": \"fiber_done\", \"within\": {\"min\": \"3s\", \"max\": \"3s\"}}]}", 1, NULL},
      {"{\"fact\": \"q6\", \"sequence\": [{\"kind\": \"keepalive\", \"where\": {\"refs\": 0, \"delta\": -1}},"
       " {\"kind\": \"alarm_delete\", \"within\": \"1s\"}]}", 0, NULL},
  };
  (void)st;
  run_table(t, N(t));
}

static void test_eventually(void **st) {
  static const fcase t[] = {
      {"{\"fact\": \"e\", \"eventually\": {\"actor\": \"agent\", \"fiber\": \"job\"}}", 1, NULL},
      {"{\"fact\": \"e2\", \"eventually\": {\"actor\": \"agent\", \"fiber\": \"job\", \"by\": \"14s\"}}", 1, NULL},
      {"{\"fact\": \"e3\", \"eventually\": {\"actor\": \"agent\", \"fiber\": \"job\", \"by\": \"13.9s\"}}", 0, NULL},
      {"{\"fact\": \"e4\", \"eventually\": {\"actor\": \"other\", \"fiber\": \"job\"}}", 0, NULL},
  };
  (void)st;
  run_table(t, N(t));
}

static void test_end_state(void **st) {
  static const fcase t[] = {
      {"{\"fact\": \"rows\", \"end\": {\"actor\": \"agent\", \"table\": \"cf_agents_runs\", \"rows\": 0}}", 1, "found 0"},
      {"{\"fact\": \"rows2\", \"end\": {\"actor\": \"agent\", \"table\": \"cf_agents_runs\"}}", 0, "at least 1"},
      {"{\"fact\": \"sched\", \"end\": {\"actor\": \"agent\", \"table\": \"cf_agents_schedules\", \"where\": {\"callback\": \"poll\"}, \"rows\": 0}}", 1, NULL},
      {"{\"fact\": \"null\", \"end\": {\"actor\": \"agent\", \"table\": \"cf_agents_runs\", \"where\": {\"snapshot\": null}, \"rows\": 0}}", 1, NULL},
      {"{\"fact\": \"alarm\", \"end\": {\"actor\": \"agent\", \"alarm\": \"none\"}}", 1, NULL},
      {"{\"fact\": \"alarm2\", \"end\": {\"actor\": \"agent\", \"alarm\": \"31s\"}}", 0, "found none"},
      {"{\"fact\": \"alarm3\", \"end\": {\"actor\": \"agent\", \"alarm\": {\"min\": \"1s\", \"max\": \"5m\"}}}", 0, NULL},
      {"{\"fact\": \"refs\", \"end\": {\"actor\": \"agent\", \"keepalive_refs\": 0}}", 1, NULL},
      {"{\"fact\": \"refs2\", \"end\": {\"actor\": \"agent\", \"keepalive_refs\": {\"min\": 1}}}", 0, NULL},
      {"{\"fact\": \"ledger\", \"end\": {\"effect\": \"log\", \"count\": 10}}", 1, NULL},
      {"{\"fact\": \"ledger2\", \"end\": {\"effect\": \"log\", \"actor\": \"agent\", \"count\": 9}}", 0, "found 10"},
  };
  (void)st;
  run_table(t, N(t));
}

/* Top-level facts apply to every case, a case's facts only to it. */
static void test_case_masks(void **st) {
  static const char text[] =
      "{\"name\": \"t\", \"duration\": \"1m\", \"actors\": [{\"id\": \"a\"}],"
      " \"workload\": [{\"request\": \"a\", \"at\": \"1s\"}],"
      " \"expect\": {\"facts\": [{\"fact\": \"top\", \"match\": {\"kind\": \"request_ok\"}}]},"
      " \"cases\": [{\"name\": \"x\", \"expect\": {\"facts\": [{\"fact\": \"only x\", \"match\": {\"kind\": \"request_ok\"}, \"count\": 2}]}},"
      "            {\"name\": \"y\"}]}";
  char err[512];
  scn_result r;
  (void)st;
  if (scn_load_text("m.json", text, strlen(text), &g_sc, err, sizeof err)) fail_msg("%s", err);
  assert_int_equal(g_sc.n_facts, 2);
  assert_int_equal(scn_run_case(&g_sc, 0, 1, SIM_FIFO, &r), 0);
  assert_int_equal(chk_facts_count(r.facts), 2);
  assert_false(r.passed); /* "only x" wants 2 requests served */
  assert_non_null(strstr(r.failure, "only x"));
  scn_result_free(&r);
  assert_int_equal(scn_run_case(&g_sc, 1, 1, SIM_FIFO, &r), 0);
  assert_int_equal(chk_facts_count(r.facts), 1);
  assert_true(r.passed);
  scn_result_free(&r);
  scn_free(&g_sc);
}

/* The swarm judges only robust facts. */
static void test_swarm_keeps_robust_facts(void **st) {
  static const char text[] =
      "{\"name\": \"t\", \"duration\": \"1m\", \"actors\": [{\"id\": \"a\"}],"
      " \"workload\": [{\"request\": \"a\", \"at\": \"1s\"}],"
      " \"expect\": {\"facts\": [{\"fact\": \"fragile\", \"match\": {\"kind\": \"request_ok\"}, \"count\": 1},"
      "   {\"fact\": \"law\", \"robust\": true, \"end\": {\"actor\": \"a\", \"keepalive_refs\": 0}}]}}";
  char err[512];
  scn_mix mix;
  (void)st;
  if (scn_load_text("s.json", text, strlen(text), &g_sc, err, sizeof err)) fail_msg("%s", err);
  assert_int_equal(g_sc.n_facts, 2);
  scn_swarm_mix(&g_sc, 42, &mix);
  assert_int_equal(g_sc.n_facts, 1);
  assert_string_equal(g_sc.facts[0].name, "law");
  assert_true(g_sc.facts[0].robust);
  scn_free(&g_sc);
}

/* scn_write writes the facts back where they were: top level for every
** case, each case's own under it; loading the text gives the same facts. */
static void test_write_keeps_facts(void **st) {
  static scn_scenario back;
  char err[1024];
  (void)st;
  const char *files[] = {"scenarios/examples/alarm-wake.json", "scenarios/examples/recovery-drop.json"};
  for (int k = 0; k < 2; k++) {
    if (scn_load(files[k], &g_sc, err, sizeof err)) fail_msg("%s", err);
    char *text = scn_write_string(&g_sc);
    assert_non_null(text);
    if (scn_load_text("back.json", text, strlen(text), &back, err, sizeof err))
      fail_msg("%s\n%s", err, text);
    assert_int_equal(back.n_facts, g_sc.n_facts);
    uint32_t all = (1u << g_sc.n_cases) - 1;
    for (int i = 0; i < g_sc.n_facts; i++) {
      assert_string_equal(back.facts[i].name, g_sc.facts[i].name);
      assert_string_equal(back.facts[i].json, g_sc.facts[i].json);
      assert_int_equal(back.facts[i].case_mask & all, g_sc.facts[i].case_mask & all);
    }
    free(text);
    scn_free(&back);
    scn_free(&g_sc);
  }
}

/* ---- the new records are deterministic ----------------------------------- */

typedef struct kind_count {
  uint64_t n[RT_EV_KIND_COUNT];
} kind_count;

static void count_kinds(void *ctx, const sim_rec *r, uint64_t idx) {
  kind_count *k = ctx;
  (void)idx;
  if (r->kind < RT_EV_KIND_COUNT) k->n[r->kind]++;
}

/* Two runs of a scenario that emits every record added for facts (hook
** begin/end with the snapshot, onStart end, schedule rows, stash values,
** write tables and names) give the same hash, and the records are there. */
static void test_new_records_deterministic(void **st) {
  char text[4096], err[1024];
  uint64_t hash[2];
  kind_count k[2];
  (void)st;
  snprintf(text, sizeof text, base, "");
  if (scn_load_text("d.json", text, strlen(text), &g_sc, err, sizeof err)) fail_msg("%s", err);
  for (int i = 0; i < 2; i++) {
    scn_result r;
    memset(&k[i], 0, sizeof k[i]);
    scn_run_opts o = {.observer = count_kinds, .observer_ctx = &k[i]};
    assert_int_equal(scn_run_case_ex(&g_sc, 0, g_sc.seed, g_sc.strategy, &o, &r), 0);
    hash[i] = r.trace_hash;
    scn_result_free(&r);
  }
  assert_true(hash[0] == hash[1]);
  assert_memory_equal(&k[0], &k[1], sizeof k[0]);
  assert_int_equal(k[0].n[RT_EV_HOOK_BEGIN], 1);
  assert_int_equal(k[0].n[RT_EV_HOOK_END], 1);
  assert_int_equal(k[0].n[RT_EV_ONSTART_END], 3);
  assert_true(k[0].n[RT_EV_SCHEDULE_SET] >= 2);
  assert_int_equal(k[0].n[RT_EV_STASH], 11);
  scn_free(&g_sc);
}

/* A stash value lives in the string table and is folded into the hash:
** two traces that differ only in it have different hashes. */
static void test_stash_value_in_hash(void **st) {
  sim_trace t[2];
  const char *v[2] = {"{\"pc\":4}", "{\"pc\":5}"};
  (void)st;
  for (int i = 0; i < 2; i++) {
    assert_int_equal(sim_trace_init(&t[i]), 0);
    sim_rec r = {1000, RT_EV_STASH, 0, 3, 4, 1, sim_trace_intern(&t[i], v[i]), 0};
    sim_trace_append(&t[i], &r);
  }
  assert_true(t[0].hash != t[1].hash);
  for (int i = 0; i < 2; i++) sim_trace_free(&t[i]);
}

/* docs/trace.md has a row for every kind, naming each of its fields. */
static void test_trace_doc_lists_every_field(void **st) {
  static char doc[1 << 17];
  (void)st;
  FILE *f = fopen("docs/trace.md", "rb");
  assert_non_null(f);
  size_t n = fread(doc, 1, sizeof doc - 1, f);
  fclose(f);
  doc[n] = 0;
  for (uint32_t k = 1; k < RT_EV_KIND_COUNT; k++) {
    char head[64];
    snprintf(head, sizeof head, "| `%s` |", rt_event_name(k));
    const char *row = strstr(doc, head);
    if (!row) fail_msg("docs/trace.md has no row for %s", rt_event_name(k));
    const char *end = strchr(row, '\n');
    const rt_field *fd = rt_schema_fields(k);
    for (int i = 0; i < RT_FIELDS; i++) {
      char key[48];
      if (!fd[i].key) continue;
      snprintf(key, sizeof key, "`%s`", fd[i].key);
      const char *at = strstr(row, key);
      if (!at || at > end) fail_msg("docs/trace.md: %s lacks field %s", rt_event_name(k), fd[i].key);
    }
  }
}

/* ---- the engine alone, on hand-made records ----------------------------- */

static void rec(sim_trace *t, int64_t at_s, uint32_t kind, uint32_t actor, int64_t a) {
  sim_rec r = {at_s * 1000000, kind, actor, a, 0, 0, 0, 0};
  sim_trace_append(t, &r);
}

/* A failed count keeps the nearest candidates (the value closest to the
** wanted one first), at most CHK_FACT_NEAR of them; too many matches keep
** the first matches. */
static void test_nearest_candidates(void **st) {
  sim_trace t;
  chk_fact f[2];
  (void)st;
  memset(f, 0, sizeof f);
  for (int i = 0; i < 2; i++) {
    f[i].form = CHK_FACT_MATCH;
    f[i].case_mask = 1;
    f[i].n_pat = 1;
    f[i].pat[0] = (chk_fact_pat){.kind = RT_EV_ALARM_SET, .actor = 0, .to_us = INT64_MAX,
                                 .gap_max_us = INT64_MAX, .n_where = 1};
    f[i].pat[0].where[0] = (chk_fact_cond){.slot = 0, .op = CHK_COND_EQ, .lo = 31000000};
    f[i].count_min = f[i].count_max = 1;
  }
  f[1].pat[0].where[0].lo = 5000000;
  f[1].count_min = f[1].count_max = 0;
  assert_int_equal(sim_trace_init(&t), 0);
  chk_facts *fs = chk_facts_new(&t, f, 2, 0, 0);
  assert_non_null(fs);
  for (int s = 1; s <= 10; s++) rec(&t, s, RT_EV_ALARM_SET, 0, s * 5000000LL); /* 5 s .. 50 s */
  rec(&t, 11, RT_EV_ALARM_SET, 1, 31000000);  /* another actor: not a candidate */
  rec(&t, 12, RT_EV_ALARM_FIRE, 0, 31000000); /* another kind: not a candidate */
  chk_facts_finish(fs, 20000000);
  const chk_fact_result *r = chk_facts_result(fs, 0);
  assert_false(r->passed);
  assert_int_equal(r->found, 0);
  assert_int_equal(r->n_near, CHK_FACT_NEAR);
  assert_false(r->near_matches);
  assert_int_equal(r->near[0].a, 30000000); /* 1 s away */
  assert_int_equal(r->near[1].a, 35000000); /* 4 s away (earlier record first on ties) */
  assert_int_equal(r->near[2].a, 25000000);
  assert_int_equal(r->near[3].a, 40000000);
  r = chk_facts_result(fs, 1); /* count 0, found 1: the match is shown */
  assert_false(r->passed);
  assert_true(r->near_matches);
  assert_int_equal(r->n_near, 1);
  assert_int_equal(r->near[0].a, 5000000);
  assert_int_equal(chk_facts_failed(fs), 2);
  chk_facts_free(fs);
  sim_trace_free(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_match_counts),
      cmocka_unit_test(test_match_conditions),
      cmocka_unit_test(test_sequence),
      cmocka_unit_test(test_eventually),
      cmocka_unit_test(test_end_state),
      cmocka_unit_test(test_case_masks),
      cmocka_unit_test(test_swarm_keeps_robust_facts),
      cmocka_unit_test(test_nearest_candidates),
      cmocka_unit_test(test_new_records_deterministic),
      cmocka_unit_test(test_stash_value_in_hash),
      cmocka_unit_test(test_write_keeps_facts),
      cmocka_unit_test(test_trace_doc_lists_every_field),
  };
  return cmocka_run_group_tests_name("facts", tests, NULL, NULL) != 0;
}
