/*
** test_rpt.c: the reports of a finished run (reports/rpt.h).
**
** A small crafted trace (two incarnations of a parent agent, a gate reset,
** a SIGKILL fault, overlapping fibers, concurrent requests, a stale tool
** run) and one no_wedge violation are rendered in every format; each
** format is read back (cJSON, xmllint) and checked field by field.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <cJSON.h>

#include "checks/chk.h"
#include "reports/rpt.h"
#include "runtime/rt_events.h"
#include "sim/sim_trace.h"

#define S_ 1000000LL
#define MS_ 1000LL

/* ---- fixture ------------------------------------------------------------ */

typedef struct fx {
  sim_trace t;
  chk_violation v[1];
  rpt_figure fig[2];
  rpt_run run;
  uint64_t i_gate_timeout, i_death2, i_recovered;
} fx;

static const char *const actor_names[] = {"parent", "child-1"};

#define REPLAY "revenant run scenarios/incidents/gated_wedge.json --seed 0x2a --strategy random"

static uint64_t add(fx *x, int64_t t, uint32_t kind, uint32_t actor, int64_t a, int64_t b,
                    int64_t c, const char *s, const char *s2) {
  sim_rec r = {t, kind, actor, a, b, c, sim_trace_intern(&x->t, s), sim_trace_intern(&x->t, s2)};
  sim_trace_append(&x->t, &r);
  return x->t.count - 1;
}

static void build_first_life(fx *x) {
  add(x, 0, RT_EV_ACTOR_WAKE, 0, 1, RT_ENTRY_FETCH, 0, "Agent", NULL);
  add(x, 0, RT_EV_STARTUP_BEGIN, 0, RT_ENTRY_FETCH, 0, 0, NULL, NULL);
  add(x, 0, RT_EV_GATE_ACQUIRE, 0, 1, 0, 0, "onStart", NULL);
  add(x, 1 * MS_, RT_EV_REQUEST_ARRIVE, 0, 1, RT_ENTRY_FETCH, 0, NULL, NULL);
  add(x, 2 * MS_, RT_EV_FIBER_START, 0, 7, 0, 0, "research", NULL);
  add(x, 3 * MS_, RT_EV_FIBER_START, 0, 8, 0, 0, "summarize", NULL);
  add(x, 5 * MS_, RT_EV_STASH, 0, 7, 3, 1, NULL, NULL);
  add(x, 10 * MS_, RT_EV_GATE_RELEASE, 0, 10 * MS_, 0, 0, NULL, NULL);
  add(x, 10 * MS_, RT_EV_STARTUP_OK, 0, 10 * MS_, 0, 0, NULL, NULL);
  add(x, 12 * MS_, RT_EV_REQUEST_ARRIVE, 0, 2, RT_ENTRY_FETCH, 0, NULL, NULL);
  add(x, 15 * MS_, RT_EV_REQUEST_OK, 0, 1, 14 * MS_, 0, NULL, NULL); /* crosses request 2 */
  add(x, 20 * MS_, RT_EV_FIBER_DONE, 0, 8, 1, 0, "summarize", NULL);
  add(x, 25 * MS_, RT_EV_REQUEST_OK, 0, 2, 13 * MS_, 0, NULL, NULL);
  add(x, 30 * MS_, RT_EV_KEEPALIVE, 0, 1, 1, 0, NULL, NULL);
  add(x, 31 * MS_, RT_EV_WAITUNTIL, 0, 1, 1, 0, NULL, NULL);
  add(x, 32 * MS_, RT_EV_TOOLRUN_INSERT, 0, 3, 1, 0, "researcher", NULL);
  add(x, 33 * MS_, RT_EV_RPC_SEND, 0, 4, 1, 0, "getStatus", NULL);
  add(x, 40 * MS_, RT_EV_ALARM_SET, 0, 120 * S_, 0, 0, NULL, NULL);
  add(x, 50 * S_, RT_EV_FAULT, 0, 0, 0, 0, "sigkill", "worker 1");
  add(x, 50 * S_, RT_EV_ACTOR_DEATH, 0, RT_DEATH_SIGKILL, 1, 0, NULL, NULL);
}

static void build_second_life(fx *x) {
  add(x, 60 * S_, RT_EV_ACTOR_WAKE, 0, 2, RT_ENTRY_FETCH, 0, "Agent", NULL);
  add(x, 60 * S_, RT_EV_STARTUP_BEGIN, 0, RT_ENTRY_FETCH, 0, 0, NULL, NULL);
  add(x, 60 * S_, RT_EV_GATE_ACQUIRE, 0, 2, 0, 0, "onStart", NULL);
  add(x, 60 * S_, RT_EV_TOOLRUN_RECOVERY, 0, 1, 1, 0, NULL, NULL);
  add(x, 61 * S_, RT_EV_RPC_SEND, 0, 5, 1, 0, "inspect", NULL);
  add(x, 61 * S_, RT_EV_GATE_ACQUIRE, 1, 1, 0, 0, "init", NULL);
  add(x, 61 * S_ + 500 * MS_, RT_EV_GATE_RELEASE, 1, 500 * MS_, 0, 0, NULL, NULL);
  add(x, 62 * S_, RT_EV_REQUEST_ARRIVE, 0, 3, RT_ENTRY_FETCH, 0, NULL, NULL);
  x->i_gate_timeout =
      add(x, 90 * S_, RT_EV_GATE_TIMEOUT, 0, 30 * S_, 30 * S_, 0, RT_MSG_GATE_RESET, NULL);
  x->i_death2 = add(x, 90 * S_, RT_EV_ACTOR_DEATH, 0, RT_DEATH_GATE_RESET, 2, 0, NULL, NULL);
}

static void build_third_life(fx *x) {
  add(x, 95 * S_, RT_EV_ACTOR_WAKE, 0, 3, RT_ENTRY_ALARM, 0, "Agent", NULL);
  add(x, 95 * S_, RT_EV_GATE_ACQUIRE, 0, 3, 0, 0, "onStart", NULL);
  x->i_recovered =
      add(x, 95 * S_, RT_EV_FIBER_RECOVERED, 0, 7, 3, RT_RECOVER_RESUME, "research", NULL);
  add(x, 95 * S_, RT_EV_FIBER_START, 0, 9, 7, 3, "research", NULL);
  add(x, 96 * S_, RT_EV_RPC_SEND, 0, 6, 1, 0, "inspect", NULL);
  add(x, 96 * S_, RT_EV_RPC_SEND, 0, 10, 1, 0, "ping", NULL);
  add(x, 97 * S_, RT_EV_RPC_REPLY, 0, 10, 1, 0, NULL, NULL);
  add(x, 100 * S_, RT_EV_TOOLRUN_STATUS, 0, 3, RT_TR_INTERRUPTED, RT_TR_RUNNING,
      RT_MSG_TR_TIMED_OUT, NULL);
  add(x, 101 * S_, RT_EV_GATE_RELEASE, 0, 6 * S_, 0, 0, NULL, NULL);
  add(x, 120 * S_, RT_EV_ALARM_FIRE, 0, 120 * S_, 0, 0, NULL, NULL);
  add(x, 121 * S_, RT_EV_ALARM_DONE, 0, 1, 0, 0, NULL, NULL);
  add(x, 130 * S_, RT_EV_FIBER_DONE, 0, 9, 1, 0, "research", NULL);
}

static int fx_setup(void **state) {
  fx *x = calloc(1, sizeof *x);
  if (!x || sim_trace_init(&x->t) != 0) return -1;
  build_first_life(x);
  build_second_life(x);
  build_third_life(x);
  chk_violation *v = &x->v[0];
  v->inv = CHK_NO_WEDGE;
  v->actor = 0;
  v->t_us = 100 * S_;
  snprintf(v->msg, sizeof v->msg, "2 gate resets in a row without progress");
  v->chain[0] = x->i_gate_timeout;
  v->chain[1] = x->i_death2;
  v->chain[2] = x->i_recovered;
  v->n_chain = 3;
  x->fig[0] = (rpt_figure){"gate_timeouts", 1, NULL};
  x->fig[1] = (rpt_figure){"recovery_ms_p50", 50000, "ms"};
  x->run = (rpt_run){
      .scenario_name = "gated_wedge <&> \"q\" 'a'",
      .scenario_file = "scenarios/incidents/gated_wedge.json",
      .seed = 0x2a, .strategy = "random", .variant = "toolrun=gated heartbeat=alarm",
      .trace_hash = 0xdeadbeefULL, .events = 42, .end_us = 200 * S_, .passed = 0,
      .expect = "hold: no_wedge, recovery_finishes",
      .failure = "expected no_wedge to hold, but it was violated ]]> here",
      .violations = x->v, .n_violations = 1, .trace = &x->t,
      .actor_names = actor_names, .n_actors = 2, .figures = x->fig, .n_figures = 2,
      .replay = REPLAY, .wall_s = 0.25};
  *state = x;
  return 0;
}

static int fx_teardown(void **state) {
  fx *x = *state;
  sim_trace_free(&x->t);
  free(x);
  return 0;
}

/* ---- helpers ------------------------------------------------------------ */

typedef struct membuf {
  char *p;
  size_t n;
  FILE *f;
} membuf;

static void mb_open(membuf *m) {
  m->p = NULL;
  m->n = 0;
  m->f = open_memstream(&m->p, &m->n);
  assert_non_null(m->f);
}

static char *mb_close(membuf *m) {
  assert_int_equal(fclose(m->f), 0);
  return m->p;
}

static char *render_text(const rpt_run *r, int verbose, int color) {
  membuf m;
  mb_open(&m);
  rpt_text_run(m.f, r, verbose, color);
  return mb_close(&m);
}

#define assert_contains(hay, needle)                                         \
  do {                                                                       \
    if (!strstr((hay), (needle))) {                                          \
      fprintf(stderr, "%s\n", (hay));                                        \
      fail_msg("missing \"%s\" in the text above", (needle));              \
    }                                                                        \
  } while (0)

#define assert_not_contains(hay, needle)                                     \
  do {                                                                       \
    if (strstr((hay), (needle))) {                                           \
      fprintf(stderr, "%s\n", (hay));                                        \
      fail_msg("unexpected \"%s\" in the text above", (needle));           \
    }                                                                        \
  } while (0)

/* Keys of object o, in order, must be exactly want[0..n). */
static void assert_keys(const cJSON *o, const char *const *want, size_t n) {
  size_t i = 0;
  assert_true(cJSON_IsObject(o));
  for (const cJSON *c = o->child; c; c = c->next, i++) {
    if (i >= n) fail_msg("extra key \"%s\"", c->string);
    if (strcmp(c->string, want[i]) != 0) fail_msg("key %zu is \"%s\", want \"%s\"", i, c->string, want[i]);
  }
  assert_int_equal(i, n);
}

static const cJSON *get(const cJSON *o, const char *k) {
  const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);
  if (!it) fail_msg("no key \"%s\"", k);
  return it;
}

static void assert_str_item(const cJSON *o, const char *k, const char *want) {
  const cJSON *it = get(o, k);
  assert_true(cJSON_IsString(it));
  assert_string_equal(it->valuestring, want);
}

static void assert_num_item(const cJSON *o, const char *k, double want) {
  const cJSON *it = get(o, k);
  assert_true(cJSON_IsNumber(it));
  assert_true(it->valuedouble == want);
}

/* ---- text --------------------------------------------------------------- */

static void test_text_failure(void **state) {
  fx *x = *state;
  char *s = render_text(&x->run, 0, 0);
  const char *head = "FAIL gated_wedge <&> \"q\" 'a' [toolrun=gated heartbeat=alarm] seed=0x2a random 42 events 3m20s hash=0x00000000deadbeef\n";
  assert_memory_equal(s, head, strlen(head));
  assert_contains(s, "failure: expected no_wedge to hold");
  assert_contains(s, "variant: toolrun=gated heartbeat=alarm");
  assert_contains(s, "violation 1/1: no_wedge  actor parent  t=100.000s");
  assert_contains(s, "2 gate resets in a row without progress");
  assert_contains(s, "t=95.000s parent fiber_recovered fiber=7 pc=3 action=resume name=\"research\"\n");
  assert_contains(s, "t=90.000s parent actor_death cause=gate_reset incarnation=2\n");
  assert_contains(s, "t=90.000s parent gate_timeout held=30.000s ceiling=30.000s message=\"A call to");
  assert_contains(s, "who waits on whom at t=100.000s:");
  assert_contains(s, "gate     parent holds its input gate since t=95.000s (5.000s, purpose \"onStart\")");
  assert_contains(s, "rpc      parent -> child-1 call 6 \"inspect\" unanswered since t=96.000s (4.000s)");
  assert_contains(s, "request  parent request 3 (fetch) unanswered since t=62.000s (38.000s)");
  assert_contains(s, "alarm    parent alarm armed for t=120.000s (in 20.000s)");
  /* calls 4 and 5 died with their caller; requests 1 and 2 were answered */
  assert_not_contains(s, "call 4");
  assert_not_contains(s, "call 5");
  assert_not_contains(s, "call 10"); /* answered at 97 s */
  assert_not_contains(s, "request 1 ");
  assert_contains(s, "replay: " REPLAY "\n");
  assert_not_contains(s, "\033");
  assert_not_contains(s, "figures:");
  free(s);
  s = render_text(&x->run, 1, 1);
  assert_contains(s, "\033[1;31mFAIL\033[0m");
  assert_contains(s, "figures: gate_timeouts=1 recovery_ms_p50=50000ms");
  free(s);
}

/* The faults, failed commits, gate resets and deaths of the violation's
** actor between two chain records are shown between them, marked "+"
** (#16 item 5); other actors' records are not. */
static void test_text_chain_causes(void **state) {
  fx *x = *state;
  chk_violation *v = &x->v[0], saved = *v;
  v->inv = CHK_NO_DOUBLE_RECOVERY;
  v->chain[0] = 4; /* FIBER_START 7 at 2 ms */
  v->chain[1] = x->i_recovered;
  v->n_chain = 2;
  char *s = render_text(&x->run, 0, 0);
  const char *want =
      "    chain:\n"
      "      t=0.002s parent fiber_start fiber=7 recovered_from=0 pc=0 name=\"research\"\n"
      "    + t=50.000s parent fault x=0 y=0 fault=\"sigkill\" detail=\"worker 1\"\n";
  assert_contains(s, want);
  assert_contains(s, "    + t=50.000s parent actor_death cause=sigkill incarnation=1\n");
  assert_contains(s, "    + t=90.000s parent gate_timeout held=30.000s");
  assert_contains(s, "    + t=90.000s parent actor_death cause=gate_reset incarnation=2\n"
                     "      t=95.000s parent fiber_recovered fiber=7");
  assert_not_contains(s, "+ t=61");  /* child-1's gate is not a cause */
  free(s);
  *v = saved;
}

static void test_text_pass_one_line(void **state) {
  fx *x = *state;
  rpt_run r = x->run;
  r.passed = 1;
  r.failure = NULL;
  r.expect = "hold: recovery_finishes; violate: no_wedge";
  r.end_us = 7 * 86400 * S_;
  r.events = 1234;
  char *s = render_text(&r, 0, 0);
  assert_string_equal(s, "PASS gated_wedge <&> \"q\" 'a' [toolrun=gated heartbeat=alarm] "
                         "seed=0x2a random 1234 events 7d0h hash=0x00000000deadbeef "
                         "no_wedge violated as expected\n");
  free(s);
  r.variant = "default"; /* the case of a file without "cases" is not shown */
  s = render_text(&r, 0, 0);
  assert_string_equal(s, "PASS gated_wedge <&> \"q\" 'a' seed=0x2a random 1234 events 7d0h "
                         "hash=0x00000000deadbeef no_wedge violated as expected\n");
  free(s);
  size_t nv = r.n_violations;
  r.n_violations = 0; /* nothing violated: the line ends at the hash */
  s = render_text(&r, 0, 0);
  assert_string_equal(s, "PASS gated_wedge <&> \"q\" 'a' seed=0x2a random 1234 events 7d0h "
                         "hash=0x00000000deadbeef\n");
  free(s);
  r.n_violations = nv;
  s = render_text(&r, 1, 0);
  assert_contains(s, "violation (expected): no_wedge actor parent t=100.000s");
  free(s);
  /* a violation the case does not name is not judged, and not "expected" */
  r.expect = "hold: recovery_finishes; violate: no_wedged, x";
  s = render_text(&r, 1, 0);
  assert_contains(s, "hash=0x00000000deadbeef no_wedge violated (not judged: not in expect)\n");
  assert_contains(s, "violation (not judged): no_wedge actor parent t=100.000s");
  assert_not_contains(s, "as expected");
  free(s);
  r.expect = NULL; /* no expectation at all */
  s = render_text(&r, 0, 0);
  assert_contains(s, "hash=0x00000000deadbeef no_wedge violated (not judged: not in expect)\n");
  free(s);
  r.expect = "hold: recovery_finishes; violate: no_wedge";
  s = render_text(&r, 1, 0);
  assert_contains(s, "figures: gate_timeouts=1");
  assert_not_contains(s, "chain:");
  free(s);
}

/* The same invariant violated on the same actor again and again is shown
** once, with the count and the time of the last one; another actor's is
** shown apart. */
static void test_text_merges_repeated_violations(void **state) {
  fx *x = *state;
  chk_violation v[4];
  rpt_run r = x->run;
  for (int i = 0; i < 4; i++) v[i] = x->v[0];
  v[1].t_us = 150 * S_;
  v[2].actor = 1;
  v[3].t_us = 190 * S_;
  r.violations = v;
  r.n_violations = 4;
  char *s = render_text(&r, 0, 0);
  assert_contains(s, "violation 1/4: no_wedge  actor parent  t=100.000s");
  assert_contains(s, "the same violation 2 more times on this actor, the last at t=190.000s");
  assert_contains(s, "violation 3/4: no_wedge  actor");
  assert_not_contains(s, "violation 2/4");
  assert_not_contains(s, "violation 4/4");
  free(s);
  r.passed = 1;
  r.expect = "violate: no_wedge";
  s = render_text(&r, 1, 0);
  assert_contains(s, "violation (expected): no_wedge actor parent t=100.000s (and 2 more, the last at t=190.000s)");
  free(s);
}

static void test_text_without_trace(void **state) {
  fx *x = *state;
  rpt_run r = x->run;
  r.trace = NULL;
  char *s = render_text(&r, 0, 0);
  char want[64];
  snprintf(want, sizeof want, "record #%llu (not kept)", (unsigned long long)x->i_death2);
  assert_contains(s, want);
  assert_contains(s, "(no kept trace records)");
  assert_contains(s, "replay: " REPLAY);
  free(s);
}

static void test_summary_line(void **state) {
  (void)state;
  membuf m;
  mb_open(&m);
  rpt_text_summary(m.f, 3, 1);
  char *s = mb_close(&m);
  assert_string_equal(s, "3 passed, 1 failed\n");
  free(s);
}

/* ---- JSON results --------------------------------------------------------- */

static cJSON *render_json(const rpt_run *runs, size_t n) {
  membuf m;
  mb_open(&m);
  assert_int_equal(rpt_json_write(m.f, runs, n), 0);
  char *s = mb_close(&m);
  cJSON *doc = cJSON_Parse(s);
  if (!doc) fail_msg("results JSON does not parse:\n%s", s);
  free(s);
  return doc;
}

static void test_json_results(void **state) {
  fx *x = *state;
  rpt_run runs[2] = {x->run, x->run};
  runs[1].passed = 1;
  runs[1].failure = NULL;
  runs[1].events = 1234567890123456789ULL;
  cJSON *doc = render_json(runs, 2);
  static const char *const top[] = {"schema", "runs", "summary"};
  static const char *const run_keys[] = {"scenario", "file", "seed", "strategy", "variant",
                                         "passed", "expect", "failure", "trace_hash", "events",
                                         "end_us", "figures", "violations", "facts", "replay"};
  assert_keys(doc, top, 3);
  assert_str_item(doc, "schema", "revenant.results/1");
  const cJSON *r0 = cJSON_GetArrayItem(get(doc, "runs"), 0);
  const cJSON *r1 = cJSON_GetArrayItem(get(doc, "runs"), 1);
  assert_int_equal(cJSON_GetArraySize(get(doc, "runs")), 2);
  assert_keys(r0, run_keys, sizeof run_keys / sizeof run_keys[0]);
  assert_str_item(r0, "seed", "0x2a");
  assert_str_item(r0, "trace_hash", "0x00000000deadbeef");
  assert_num_item(r0, "events", 42);
  assert_str_item(r1, "events", "1234567890123456789");
  assert_num_item(r0, "end_us", 200e6);
  assert_true(cJSON_IsFalse(get(r0, "passed")));
  assert_true(cJSON_IsNull(get(r1, "failure")));
  assert_str_item(r0, "replay", REPLAY);
  assert_num_item(get(r0, "figures"), "recovery_ms_p50", 50000);
  const cJSON *v = cJSON_GetArrayItem(get(r0, "violations"), 0);
  static const char *const v_keys[] = {"invariant", "actor", "t_us", "message", "chain"};
  assert_keys(v, v_keys, 5);
  assert_str_item(v, "invariant", "no_wedge");
  assert_str_item(v, "actor", "parent");
  assert_num_item(v, "t_us", 100e6);
  const cJSON *c2 = cJSON_GetArrayItem(get(v, "chain"), 2);
  static const char *const c_keys[] = {"index", "t_us", "kind", "actor", "fiber", "pc",
                                       "action", "name"};
  assert_keys(c2, c_keys, 8);
  assert_num_item(c2, "index", (double)x->i_recovered);
  assert_str_item(c2, "kind", "fiber_recovered");
  assert_str_item(c2, "action", "resume");
  const cJSON *c1 = cJSON_GetArrayItem(get(v, "chain"), 1);
  assert_str_item(c1, "cause", "gate_reset");
  assert_num_item(get(doc, "summary"), "passed", 1);
  assert_num_item(get(doc, "summary"), "failed", 1);
  cJSON_Delete(doc);
}

/* ---- JUnit ----------------------------------------------------------------- */

static int have_xmllint(void) {
  return system("command -v xmllint >/dev/null 2>&1") == 0;
}

/* Runs xmllint --noout on text; returns its exit status. */
static int xmllint_status(const char *text) {
  char path[] = "/tmp/test_rpt_junit_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "xmllint --noout %s 2>/dev/null", path);
  int rc = system(cmd);
  unlink(path);
  return rc;
}

static void test_junit(void **state) {
  fx *x = *state;
  rpt_run runs[3] = {x->run, x->run, x->run};
  runs[1].passed = 1;
  runs[1].seed = 0x2b;
  runs[2].strategy = "pct";  /* same scenario and seed: names must differ */
  runs[2].variant = "bad\x01utf8 \xff";
  membuf m;
  mb_open(&m);
  assert_int_equal(rpt_junit_write(m.f, runs, 3), 0);
  char *s = mb_close(&m);
  assert_contains(s, "<testsuites name=\"revenant\" tests=\"3\" failures=\"2\"");
  assert_contains(s, "<testsuite name=\"revenant\"");
  assert_contains(s, "classname=\"revenant.gated_wedge\" "
                     "name=\"gated_wedge &lt;&amp;&gt; &quot;q&quot; &apos;a&apos; seed=0x2a random "
                     "(toolrun=gated heartbeat=alarm)\" time=\"0.250\"");
  assert_contains(s, "&apos;a&apos; seed=0x2a pct (bad?utf8 ?)\"");
  assert_contains(s, "name=\"gated_wedge &lt;&amp;&gt; &quot;q&quot; &apos;a&apos; seed=0x2b\" time=\"0.250\"/>");
  assert_contains(s, "type=\"ExpectationFailed\"");
  assert_contains(s, "]]]]><![CDATA[>");
  assert_contains(s, "replay: " REPLAY);
  assert_contains(s, "no_wedge");
  if (!have_xmllint()) {
    print_message("xmllint not found: skipping the well-formedness check\n");
  } else {
    assert_int_equal(xmllint_status(s), 0);
    /* the check itself can fail: an unescaped '&' is rejected */
    assert_int_not_equal(xmllint_status("<a b=\"&\"/>"), 0);
  }
  free(s);
}

/* ---- Chrome trace --------------------------------------------------------- */

/* 0 when, per (pid, tid), every two X slices are disjoint or nested;
** else 1 (and the message names them). */
static int x_slices_overlap(const cJSON *events, char *why, size_t len) {
  int n = cJSON_GetArraySize(events);
  for (int i = 0; i < n; i++) {
    const cJSON *a = cJSON_GetArrayItem(events, i);
    if (strcmp(get(a, "ph")->valuestring, "X") != 0) continue;
    for (int j = i + 1; j < n; j++) {
      const cJSON *b = cJSON_GetArrayItem(events, j);
      if (strcmp(get(b, "ph")->valuestring, "X") != 0) continue;
      if (get(a, "pid")->valuedouble != get(b, "pid")->valuedouble ||
          get(a, "tid")->valuedouble != get(b, "tid")->valuedouble)
        continue;
      double s1 = get(a, "ts")->valuedouble, e1 = s1 + get(a, "dur")->valuedouble;
      double s2 = get(b, "ts")->valuedouble, e2 = s2 + get(b, "dur")->valuedouble;
      if (e1 <= s2 || e2 <= s1 || (s1 <= s2 && e2 <= e1) || (s2 <= s1 && e1 <= e2)) continue;
      snprintf(why, len, "X %d [%g,%g] and X %d [%g,%g] overlap", i, s1, e1, j, s2, e2);
      return 1;
    }
  }
  return 0;
}

/* 0 when, per tid, the X slices come in (ts ascending, longest first)
** order, so that Perfetto meets a parent before its children; else 1. */
static int x_slices_unsorted(const cJSON *events, char *why, size_t len) {
  const cJSON *prev = NULL, *e;
  cJSON_ArrayForEach(e, events) {
    if (strcmp(get(e, "ph")->valuestring, "X") != 0) continue;
    if (prev && get(prev, "tid")->valuedouble == get(e, "tid")->valuedouble) {
      double s1 = get(prev, "ts")->valuedouble, s2 = get(e, "ts")->valuedouble;
      if (s2 < s1 || (s2 == s1 && get(e, "dur")->valuedouble > get(prev, "dur")->valuedouble)) {
        snprintf(why, len, "X at ts %g (tid %g) out of order", s2, get(e, "tid")->valuedouble);
        return 1;
      }
    }
    prev = e;
  }
  return 0;
}

static cJSON *render_trace(const rpt_run *r) {
  membuf m;
  mb_open(&m);
  assert_int_equal(rpt_trace_write(m.f, r), 0);
  char *s = mb_close(&m);
  cJSON *doc = cJSON_Parse(s);
  if (!doc) fail_msg("trace JSON does not parse:\n%s", s);
  free(s);
  return doc;
}

/* The first event with this name and phase, or NULL. */
static const cJSON *find_ev(const cJSON *events, const char *name, const char *ph) {
  const cJSON *e;
  cJSON_ArrayForEach(e, events) {
    if (strcmp(get(e, "name")->valuestring, name) == 0 && strcmp(get(e, "ph")->valuestring, ph) == 0)
      return e;
  }
  return NULL;
}

static void test_nesting_checker_detects_overlap(void **state) {
  (void)state;
  char why[128];
  cJSON *ok = cJSON_Parse("[{\"name\":\"a\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":10},"
                          "{\"name\":\"b\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":3},"
                          "{\"name\":\"c\",\"ph\":\"X\",\"pid\":1,\"tid\":2,\"ts\":5,\"dur\":30}]");
  cJSON *bad = cJSON_Parse("[{\"name\":\"a\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":10},"
                           "{\"name\":\"b\",\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":5,\"dur\":10}]");
  assert_non_null(ok);
  assert_non_null(bad);
  assert_int_equal(x_slices_overlap(ok, why, sizeof why), 0);
  assert_int_equal(x_slices_overlap(bad, why, sizeof why), 1);
  cJSON_Delete(ok);
  cJSON_Delete(bad);
}

static void test_trace_events(void **state) {
  fx *x = *state;
  cJSON *doc = render_trace(&x->run);
  const cJSON *ev = get(doc, "traceEvents");
  char why[256];
  assert_str_item(doc, "displayTimeUnit", "ms");
  if (x_slices_overlap(ev, why, sizeof why)) fail_msg("%s", why);
  if (x_slices_unsorted(ev, why, sizeof why)) fail_msg("%s", why);
  const cJSON *e = find_ev(ev, "process_name", "M");
  assert_non_null(e);
  assert_str_item(get(e, "args"), "name", "revenant: gated_wedge <&> \"q\" 'a'");
  /* thread names: gate and work track per actor */
  int names = 0;
  cJSON_ArrayForEach(e, ev) {
    if (strcmp(get(e, "name")->valuestring, "thread_name") != 0) continue;
    const char *nm = get(get(e, "args"), "name")->valuestring;
    names += strcmp(nm, "parent gate") == 0 || strcmp(nm, "parent work") == 0 ||
             strcmp(nm, "child-1 gate") == 0 || strcmp(nm, "child-1 work") == 0;
  }
  assert_int_equal(names, 4);
  /* gate spans: the first one 0..10ms, the timed-out one 60..90 s */
  e = find_ev(ev, "gate: onStart", "X");
  assert_non_null(e);
  assert_num_item(e, "ts", 0);
  assert_num_item(e, "dur", 10 * MS_);
  assert_num_item(e, "tid", 1);
  int gates = 0, timeout_gate = 0;
  const cJSON *g;
  cJSON_ArrayForEach(g, ev) {
    if (strcmp(get(g, "ph")->valuestring, "X") || strncmp(get(g, "name")->valuestring, "gate", 4)) continue;
    gates++;
    timeout_gate += get(g, "ts")->valuedouble == 60e6 && get(g, "dur")->valuedouble == 30e6 &&
                    strcmp(get(get(g, "args"), "ended_by")->valuestring, "gate_timeout") == 0;
  }
  assert_int_equal(gates, 4);  /* parent x3 (last open until 101 s), child-1 x1 */
  assert_int_equal(timeout_gate, 1);
  assert_str_item(get(doc, "otherData"), "trace_hash", "0x00000000deadbeef");
  cJSON_Delete(doc);
}

static void test_trace_async_instants_counters(void **state) {
  fx *x = *state;
  cJSON *doc = render_trace(&x->run);
  const cJSON *ev = get(doc, "traceEvents"), *e, *g;
  /* fibers 7 and 8 overlap: async pairs, 7 ended by the SIGKILL */
  int fb = 0, fe = 0;
  cJSON_ArrayForEach(g, ev) {
    const cJSON *cat = cJSON_GetObjectItemCaseSensitive(g, "cat");
    if (!cat || strcmp(cat->valuestring, "fiber")) continue;
    const char *ph = get(g, "ph")->valuestring;
    assert_true(strcmp(ph, "b") == 0 || strcmp(ph, "e") == 0);
    fb += ph[0] == 'b';
    fe += ph[0] == 'e';
    if (ph[0] == 'e' && get(g, "id")->valuedouble == 7) assert_num_item(g, "ts", 50e6);
  }
  assert_int_equal(fb, 3);
  assert_int_equal(fe, 3);
  /* request 1 crossed request 2: it is async, request 2 is an X slice */
  e = find_ev(ev, "request (fetch)", "b");
  assert_non_null(e);
  assert_num_item(e, "ts", 1 * MS_);
  e = find_ev(ev, "request (fetch)", "X");
  assert_non_null(e);
  assert_num_item(e, "ts", 12 * MS_);
  assert_num_item(e, "tid", 2);
  /* instants and the counter */
  e = find_ev(ev, "fault: sigkill worker 1", "i");
  assert_non_null(e);
  assert_str_item(e, "s", "t");
  assert_num_item(e, "ts", 50e6);
  assert_non_null(find_ev(ev, "death: sigkill", "i"));
  assert_non_null(find_ev(ev, "alarm fire", "i"));
  assert_non_null(find_ev(ev, "recovered fiber 7 (resume)", "i"));
  assert_non_null(find_ev(ev, "tool run 3 -> interrupted", "i"));
  e = find_ev(ev, "parent pending", "C");
  assert_non_null(e);
  assert_num_item(get(e, "args"), "keepAlive", 1);
  assert_num_item(get(e, "args"), "waitUntil", 0);
  cJSON_Delete(doc);
}

/* Many concurrent requests, gates and deaths on three actors, drawn from a
** fixed LCG: the X slices must still be disjoint or nested. */
static void test_trace_nesting_stress(void **state) {
  (void)state;
  sim_trace t;
  assert_int_equal(sim_trace_init(&t), 0);
  uint64_t z = 12345;
  int64_t now = 0, next_req = 1;
  for (int i = 0; i < 3000; i++) {
    z = z * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t actor = (uint32_t)(z >> 33) % 3, op = (uint32_t)(z >> 40) % 8;
    int64_t id = (int64_t)((z >> 20) % (uint64_t)next_req) + 1;
    now += (int64_t)((z >> 50) % 3) * MS_;
    sim_rec r = {now, RT_EV_NONE, actor, 0, 0, 0, 0, 0};
    switch (op) {
    case 0: case 1: r.kind = RT_EV_REQUEST_ARRIVE; r.a = next_req++; r.b = RT_ENTRY_FETCH; break;
    case 2: case 3: r.kind = RT_EV_REQUEST_OK; r.a = id; break;
    case 4: r.kind = RT_EV_GATE_ACQUIRE; break;
    case 5: r.kind = RT_EV_GATE_RELEASE; break;
    case 6: r.kind = (z >> 60) ? RT_EV_STARTUP_BEGIN : RT_EV_ACTOR_DEATH; break;
    default: r.kind = RT_EV_STARTUP_OK; break;
    }
    sim_trace_append(&t, &r);
  }
  rpt_run run = {.scenario_name = "stress", .trace = &t, .end_us = now + S_};
  cJSON *doc = render_trace(&run);
  const cJSON *ev = get(doc, "traceEvents");
  char why[256];
  int xs = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, ev) xs += strcmp(get(e, "ph")->valuestring, "X") == 0;
  assert_true(xs > 100);
  if (x_slices_overlap(ev, why, sizeof why)) fail_msg("%s", why);
  if (x_slices_unsorted(ev, why, sizeof why)) fail_msg("%s", why);
  cJSON_Delete(doc);
  sim_trace_free(&t);
}

static void test_trace_without_records(void **state) {
  fx *x = *state;
  rpt_run r = x->run;
  r.trace = NULL;
  cJSON *doc = render_trace(&r);
  const cJSON *ev = get(doc, "traceEvents");
  assert_int_equal(cJSON_GetArraySize(ev), 2 + 2 * 2); /* process, world, 2 per actor */
  cJSON_Delete(doc);
}

/* ---- repro file ----------------------------------------------------------- */

static const char scenario_text[] =
    "// incident 2024-05\n"
    "{\n  \"name\": \"gated_wedge\", /* the wedge */\n"
    "  \"seed\": 12345678901234567,\n  \"duration\": \"200s\"\n}\n";

static void test_repro(void **state) {
  fx *x = *state;
  membuf m;
  mb_open(&m);
  assert_int_equal(rpt_repro_write(m.f, &x->run, scenario_text), 0);
  char *s = mb_close(&m);
  assert_contains(s, "\"seed\":12345678901234567"); /* every digit kept */
  cJSON *doc = cJSON_Parse(s);
  if (!doc) fail_msg("repro does not parse:\n%s", s);
  free(s);
  static const char *const keys[] = {"revenant_repro", "scenario", "seed", "strategy",
                                     "variant", "trace_hash", "expect", "failed_facts", "faults"};
  assert_keys(doc, keys, 9);
  assert_num_item(doc, "revenant_repro", 1);
  assert_str_item(get(doc, "scenario"), "name", "gated_wedge");
  assert_str_item(get(doc, "scenario"), "duration", "200s");
  assert_str_item(doc, "seed", "0x2a");
  assert_str_item(doc, "strategy", "random");
  assert_str_item(doc, "trace_hash", "0x00000000deadbeef");
  assert_str_item(doc, "expect", "hold: no_wedge, recovery_finishes");
  const cJSON *faults = get(doc, "faults");
  assert_int_equal(cJSON_GetArraySize(faults), 1);
  const cJSON *f0 = cJSON_GetArrayItem(faults, 0);
  assert_num_item(f0, "t_us", 50e6);
  assert_str_item(f0, "kind", "sigkill");
  assert_str_item(f0, "actor", "parent");
  assert_str_item(f0, "detail", "worker 1");
  cJSON_Delete(doc);
}

static void test_repro_rejects_bad_scenario(void **state) {
  fx *x = *state;
  membuf m;
  mb_open(&m);
  assert_int_equal(rpt_repro_write(m.f, &x->run, "{\"name\": "), -1);
  assert_int_equal(rpt_repro_write(m.f, &x->run, "[1, 2]"), -1);
  assert_int_equal(rpt_repro_write(m.f, &x->run, NULL), -1);
  char *s = mb_close(&m);
  assert_string_equal(s, "");
  free(s);
}

/* ---- recovery times ------------------------------------------------------- */

static void test_recovery_times(void **state) {
  fx *x = *state;
  int64_t out[4] = {0};
  size_t n = 99;
  rpt_recovery_times(&x->t, out, &n, 4);
  /* death at 50 s orphans fiber 7 and run 3; the gate reset at 90 s keeps
  ** the episode; fiber 7 recovered at 95 s, run 3 interrupted at 100 s */
  assert_int_equal(n, 1);
  assert_int_equal(out[0], 50 * S_);
  rpt_recovery_times(&x->t, out, &n, 0);
  assert_int_equal(n, 0);
  rpt_recovery_times(NULL, out, &n, 4);
  assert_int_equal(n, 0);
}

static void test_distribution(void **state) {
  (void)state;
  int64_t v[100];
  for (int i = 0; i < 100; i++) v[i] = (100 - i) * MS_; /* unsorted on purpose */
  membuf m;
  mb_open(&m);
  rpt_distribution(m.f, v, 100);
  rpt_distribution(m.f, v, 0);
  rpt_distribution(m.f, v + 99, 1);
  char *s = mb_close(&m);
  assert_string_equal(s, "n=100 min=1.000ms p50=50.000ms p90=90.000ms p99=99.000ms max=100.000ms\n"
                         "n=0\n"
                         "n=1 min=1.000ms p50=1.000ms p90=1.000ms p99=1.000ms max=1.000ms\n");
  assert_int_equal(v[0], 100 * MS_);
  free(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text_failure),
      cmocka_unit_test(test_text_chain_causes),
      cmocka_unit_test(test_text_pass_one_line),
      cmocka_unit_test(test_text_merges_repeated_violations),
      cmocka_unit_test(test_text_without_trace),
      cmocka_unit_test(test_summary_line),
      cmocka_unit_test(test_json_results),
      cmocka_unit_test(test_junit),
      cmocka_unit_test(test_nesting_checker_detects_overlap),
      cmocka_unit_test(test_trace_events),
      cmocka_unit_test(test_trace_async_instants_counters),
      cmocka_unit_test(test_trace_nesting_stress),
      cmocka_unit_test(test_trace_without_records),
      cmocka_unit_test(test_repro),
      cmocka_unit_test(test_repro_rejects_bad_scenario),
      cmocka_unit_test(test_recovery_times),
      cmocka_unit_test(test_distribution),
  };
  return cmocka_run_group_tests_name("rpt", tests, fx_setup, fx_teardown) != 0;
}
