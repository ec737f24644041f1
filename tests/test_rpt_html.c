/*
** test_rpt_html.c: the HTML report (reports/rpt_html.c, rpt_html_fold.c).
**
** Pages are written to memory, their embedded JSON (#rv-data) is parsed
** back with cJSON and checked: structure (lanes, spans, faults, chains,
** wait-for edges, generic records of unknown kinds), escaping of strings
** that could end the <script> element, folding of repeats and the record
** budget (never a chain record), determinism, and the swarm page. The
** browser side is tests/browser/test_html.sh.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <cJSON.h>

#include "checks/chk.h"
#include "checks/chk_facts.h"
#include "reports/rpt.h"
#include "runtime/rt_events.h"
#include "sim/sim_trace.h"

#define S_ 1000000LL
#define MS_ 1000LL
#define DAY_ (86400LL * S_)

typedef struct fx {
  sim_trace t;
  chk_violation v[2];
  rpt_run run;
  const char *names[3];
} fx;

static uint64_t add(fx *x, int64_t t, uint32_t kind, uint32_t actor, int64_t a, int64_t b,
                    int64_t c, const char *s, const char *s2) {
  sim_rec r = {t, kind, actor, a, b, c, sim_trace_intern(&x->t, s), sim_trace_intern(&x->t, s2)};
  sim_trace_append(&x->t, &r);
  return x->t.count - 1;
}

static void fx_init(fx *x, const char *scenario) {
  memset(x, 0, sizeof *x);
  assert_int_equal(sim_trace_init(&x->t), 0);
  x->names[0] = "parent";
  x->names[1] = "child-1";
  x->names[2] = "idle";
  x->run = (rpt_run){.scenario_name = scenario, .scenario_file = "s.json", .seed = 0x2a,
                     .strategy = "random", .variant = "gated", .trace_hash = 0xdeadbeef,
                     .end_us = 200 * S_, .passed = 0, .expect = "hold: no_wedge",
                     .failure = "expected no_wedge to hold, but it was violated",
                     .trace = &x->t, .actor_names = x->names, .n_actors = 3,
                     .replay = "revenant run s.json --seed 0x2a"};
}

static void fx_small_records(fx *x);

/* A small failing run: a gate span, an RPC to child-1 left unanswered, a
** fault, a death and a no_wedge violation whose chain has three records. */
static void fx_small(fx *x, const char *scenario) {
  fx_init(x, scenario);
  fx_small_records(x);
}

static void fx_small_records(fx *x) {
  add(x, 0, RT_EV_ACTOR_WAKE, 0, 1, RT_ENTRY_FETCH, 0, "Agent", NULL);
  add(x, 0, RT_EV_GATE_ACQUIRE, 0, 1, 0, 0, "onStart", NULL);
  add(x, 1 * S_, RT_EV_RPC_SEND, 0, 4, 1, 0, "inspect", NULL);
  add(x, 1 * S_, RT_EV_GATE_ACQUIRE, 1, 1, 0, 0, "init", NULL);
  uint64_t c0 = add(x, 30 * S_, RT_EV_GATE_TIMEOUT, 0, 30 * S_, 30 * S_, 0, "reset", NULL);
  uint64_t c1 = add(x, 30 * S_, RT_EV_ACTOR_DEATH, 0, RT_DEATH_GATE_RESET, 1, 0, NULL, NULL);
  add(x, 40 * S_, RT_EV_FAULT, 1, 7, 0, 0, "sigkill", "worker 1");
  add(x, 60 * S_, RT_EV_ACTOR_WAKE, 0, 2, RT_ENTRY_FETCH, 0, "Agent", NULL);
  add(x, 60 * S_, RT_EV_GATE_ACQUIRE, 0, 2, 0, 0, "onStart", NULL);
  uint64_t c2 = add(x, 61 * S_, RT_EV_RPC_SEND, 0, 5, 1, 0, "inspect", NULL);
  add(x, 62 * S_, 200, 0, 11, 12, 0, "custom", NULL); /* a kind reports/ does not know */
  add(x, 63 * S_, RT_EV_HOOK_BEGIN, 0, 7, 3, 0, "research", NULL);
  add(x, 64 * S_, RT_EV_HOOK_END, 0, 7, 1, 1 * S_, "research", NULL);
  x->v[0] = (chk_violation){.inv = CHK_NO_WEDGE, .actor = 0, .t_us = 100 * S_,
                            .chain = {c0, c1, c2}, .n_chain = 3, .subject = -1,
                            .at_index = UINT64_MAX};
  snprintf(x->v[0].msg, sizeof x->v[0].msg, "2 gate resets in a row");
  x->run.violations = x->v;
  x->run.n_violations = 1;
  x->run.events = x->t.count;
}

/* Writes the page of runs[0..n) (and swarm) with options o into a
** malloc'd string. */
static char *page_opts(const rpt_run *runs, size_t n, const rpt_swarm *sw, const rpt_html_opts *o) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  assert_non_null(f);
  assert_int_equal(rpt_html_write(f, runs, n, sw, o), 0);
  assert_int_equal(fclose(f), 0);
  return buf;
}

/* The same with a record budget of max (0: the default). */
static char *page(const rpt_run *runs, size_t n, const rpt_swarm *sw, uint64_t max) {
  rpt_html_opts o = {.max_records = max, .max_bytes = max ? UINT64_MAX : 0};
  return page_opts(runs, n, sw, &o);
}

/* The JSON of #rv-data, parsed. */
static cJSON *page_data(const char *html) {
  const char *open = "<script type=\"application/json\" id=\"rv-data\">";
  const char *p = strstr(html, open);
  assert_non_null(p);
  p += strlen(open);
  const char *e = strstr(p, "</script>");
  assert_non_null(e);
  cJSON *d = cJSON_ParseWithLength(p, (size_t)(e - p));
  assert_non_null(d);
  return d;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static cJSON *item(const cJSON *o, const char *k) {
  cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  assert_non_null(v);
  return v;
}

/* 1 when record index idx is among the kept records of run r. */
static int has_rec(const cJSON *r, double idx) {
  const cJSON *rec;
  cJSON_ArrayForEach(rec, item(r, "recs")) if (cJSON_GetArrayItem(rec, 0)->valuedouble == idx) return 1;
  return 0;
}

/* ---- structure ----------------------------------------------------------- */

static void test_structure(void **state) {
  (void)state;
  fx x;
  fx_small(&x, "gated_wedge");
  char *html = page(&x.run, 1, NULL, 0);
  assert_int_equal(strncmp(html, "<!DOCTYPE html>", 15), 0);
  assert_int_equal(count(html, "</script>"), 2); /* the data and the script */
  assert_int_equal(count(html, "<style>"), 1);
  assert_null(strstr(html, "<link"));            /* self-contained: nothing fetched */
  assert_null(strstr(html, " src="));
  assert_null(strstr(html, "https:"));
  cJSON *d = page_data(html), *r = cJSON_GetArrayItem(item(d, "runs"), 0);
  assert_string_equal(item(d, "schema")->valuestring, "revenant.html/1");
  assert_string_equal(item(r, "scenario")->valuestring, "gated_wedge");
  assert_string_equal(item(r, "case")->valuestring, "gated");
  assert_string_equal(item(r, "seed")->valuestring, "0x2a");
  assert_string_equal(item(r, "hash")->valuestring, "0x00000000deadbeef");
  assert_string_equal(item(r, "replay")->valuestring, "revenant run s.json --seed 0x2a");
  /* lanes: the two actors with records, not the idle one */
  cJSON *act = item(r, "active");
  assert_int_equal(cJSON_GetArraySize(act), 2);
  assert_int_equal(cJSON_GetArrayItem(act, 1)->valueint, 1);
  assert_string_equal(cJSON_GetArrayItem(item(r, "actors"), 2)->valuestring, "idle");
  /* the first gate span of parent: [0, 30 s], closed by the timeout (index 4) */
  cJSON *sp = cJSON_GetArrayItem(item(r, "spans"), 0);
  assert_int_equal(cJSON_GetArrayItem(sp, 0)->valueint, 0);
  assert_string_equal(cJSON_GetArrayItem(item(r, "span_kinds"), cJSON_GetArrayItem(sp, 1)->valueint)->valuestring, "gate");
  assert_true(cJSON_GetArrayItem(sp, 3)->valuedouble == 30.0 * S_);
  assert_int_equal(cJSON_GetArrayItem(sp, 5)->valueint, 4);
  /* the recovery hook of fiber 7: [63 s, 64 s] */
  int hooks = 0;
  cJSON_ArrayForEach(sp, item(r, "spans")) {
    const char *cls = cJSON_GetArrayItem(item(r, "span_kinds"), cJSON_GetArrayItem(sp, 1)->valueint)->valuestring;
    if (strcmp(cls, "hook")) continue;
    hooks++;
    assert_true(cJSON_GetArrayItem(sp, 2)->valuedouble == 63.0 * S_);
    assert_true(cJSON_GetArrayItem(sp, 3)->valuedouble == 64.0 * S_);
  }
  assert_int_equal(hooks, 1);
  /* the fault marker */
  cJSON *fl = cJSON_GetArrayItem(item(r, "faults"), 0);
  assert_int_equal(cJSON_GetArraySize(item(r, "faults")), 1);
  assert_string_equal(cJSON_GetArrayItem(fl, 3)->valuestring, "sigkill");
  assert_string_equal(cJSON_GetArrayItem(fl, 4)->valuestring, "worker 1");
  /* the violation: its chain, and parent -> child-1 waiting at t=100 s */
  cJSON *v = cJSON_GetArrayItem(item(r, "viols"), 0);
  assert_string_equal(item(v, "inv")->valuestring, "no_wedge");
  assert_int_equal(cJSON_GetArraySize(item(v, "chain")), 3);
  assert_int_equal(cJSON_GetArrayItem(item(v, "chain"), 2)->valueint, 9);
  int rpc = 0, gate = 0;
  cJSON *w;
  cJSON_ArrayForEach(w, item(v, "waits")) {
    const char *cat = cJSON_GetArrayItem(w, 0)->valuestring;
    if (!strcmp(cat, "rpc")) {
      rpc++;
      assert_int_equal(cJSON_GetArrayItem(w, 1)->valueint, 0);
      assert_int_equal(cJSON_GetArrayItem(w, 2)->valueint, 1);
      assert_string_equal(cJSON_GetArrayItem(w, 5)->valuestring, "inspect");
      assert_int_equal(cJSON_GetArrayItem(w, 6)->valueint, 9); /* the rpc_send of call 5 */
    }
    gate += !strcmp(cat, "gate");
  }
  assert_int_equal(rpc, 1);  /* call 4 died with the caller; call 5 is pending */
  assert_int_equal(gate, 2); /* parent's second gate and child-1's */
  free(html);
  cJSON_Delete(d);
  sim_trace_free(&x.t);
}

/* Records go through the per-kind field table; an unknown kind keeps its
** raw fields and gets a kind_<n> name. */
static void test_generic_records(void **state) {
  (void)state;
  fx x;
  fx_small(&x, "generic");
  char *html = page(&x.run, 1, NULL, 0);
  cJSON *d = page_data(html), *r = cJSON_GetArrayItem(item(d, "runs"), 0);
  assert_string_equal(item(item(r, "kinds"), "200")->valuestring, "kind_200");
  assert_string_equal(item(item(r, "kinds"), "3")->valuestring, rt_event_name(3));
  cJSON *keys = item(r, "keys"), *rec = cJSON_GetArrayItem(item(r, "recs"), 10);
  assert_int_equal(cJSON_GetArrayItem(rec, 2)->valueint, 200);
  assert_int_equal(cJSON_GetArraySize(rec), 4 + 2 * 4); /* raw a, b, c, s */
  assert_string_equal(cJSON_GetArrayItem(keys, cJSON_GetArrayItem(rec, 4)->valueint)->valuestring, "a");
  assert_int_equal(cJSON_GetArrayItem(rec, 5)->valueint, 11);
  assert_string_equal(cJSON_GetArrayItem(rec, 11)->valuestring, "custom");
  /* the death's cause is decoded to its name */
  rec = cJSON_GetArrayItem(item(r, "recs"), 5);
  assert_string_equal(cJSON_GetArrayItem(keys, cJSON_GetArrayItem(rec, 4)->valueint)->valuestring, "cause");
  assert_string_equal(cJSON_GetArrayItem(rec, 5)->valuestring, "gate_reset");
  free(html);
  cJSON_Delete(d);
  sim_trace_free(&x.t);
}

/* A failed fact is listed with its nearest records (here: the matches). */
static void test_facts(void **state) {
  (void)state;
  fx x;
  fx_init(&x, "facts");
  static chk_fact fact;
  memset(&fact, 0, sizeof fact);
  snprintf(fact.name, sizeof fact.name, "the gate is never reset </script>");
  snprintf(fact.json, sizeof fact.json, "{\"match\":{\"kind\":\"gate_timeout\"},\"count\":0}");
  fact.line = 7;
  fact.case_mask = 1;
  fact.form = CHK_FACT_MATCH;
  fact.pat[0] = (chk_fact_pat){.kind = RT_EV_GATE_TIMEOUT, .actor = UINT32_MAX, .from_us = 0,
                               .to_us = INT64_MAX, .gap_max_us = INT64_MAX};
  fact.n_pat = 1;
  fact.count_min = fact.count_max = 0;
  chk_facts *cf = chk_facts_new(&x.t, &fact, 1, 0, 0);
  assert_non_null(cf);
  fx_small_records(&x);
  chk_facts_finish(cf, 200 * S_);
  x.run.facts = cf;
  char *html = page(&x.run, 1, NULL, 0);
  assert_int_equal(count(html, "</script>"), 2);
  cJSON *d = page_data(html), *r = cJSON_GetArrayItem(item(d, "runs"), 0);
  cJSON *fa = cJSON_GetArrayItem(item(r, "facts"), 0);
  assert_string_equal(item(fa, "name")->valuestring, "the gate is never reset </script>");
  assert_false(cJSON_IsTrue(item(fa, "passed")));
  assert_int_equal(item(fa, "line")->valueint, 7);
  assert_int_equal(cJSON_GetArraySize(item(fa, "near")), 1);
  assert_int_equal(cJSON_GetArrayItem(item(fa, "near"), 0)->valueint, 4); /* the gate_timeout */
  assert_true(has_rec(r, 4));
  free(html);
  cJSON_Delete(d);
  chk_facts_free(cf);
  sim_trace_free(&x.t);
}

/* ---- escaping ----------------------------------------------------------------- */

static void test_escaping(void **state) {
  (void)state;
  const char *evil = "x</script><script>alert(1)</script><!-- & \xe2\x80\xa8";
  fx x;
  fx_small(&x, evil);
  x.names[0] = "<b>parent</b>";
  add(&x, 63 * S_, RT_EV_FAULT, 0, 0, 0, 0, "evict", "</SCRIPT>detail");
  x.run.failure = "failed </script>";
  char *html = page(&x.run, 1, NULL, 0);
  assert_int_equal(count(html, "</script>"), 2);
  assert_null(strstr(html, "</SCRIPT>"));
  assert_null(strstr(html, "<!--"));
  assert_null(strstr(html, "<b>parent"));
  assert_null(strstr(strstr(html, "id=\"rv-data\""), "\xe2\x80\xa8")); /* JSON: \u2028 */
  assert_non_null(strstr(html, "x\\u003c/script\\u003e"));
  assert_non_null(strstr(html, "<title>revenant: x&lt;/script&gt;"));
  cJSON *d = page_data(html), *r = cJSON_GetArrayItem(item(d, "runs"), 0);
  assert_string_equal(item(r, "scenario")->valuestring, evil); /* read back exactly */
  assert_string_equal(cJSON_GetArrayItem(item(r, "actors"), 0)->valuestring, "<b>parent</b>");
  assert_string_equal(cJSON_GetArrayItem(cJSON_GetArrayItem(item(r, "faults"), 1), 4)->valuestring,
                      "</SCRIPT>detail");
  free(html);
  cJSON_Delete(d);
  sim_trace_free(&x.t);
}

/* ---- folding ------------------------------------------------------------------ */

/* 7 days of one cycle every 31 s (wake, gate, request, timeout, death); the
** chain of the violation sits in cycle `mark`. distinct != 0 gives every
** cycle its own purpose string (nothing repeats). chain[0..1] gets the
** chain; chain[2] a request of the first quarter that is never answered
** (a wait still pending at the violation). */
static void fx_week(fx *x, int distinct, uint64_t *chain) {
  static char pad[1001];
  memset(pad, 'x', 1000);
  fx_init(x, "week");
  uint64_t cycles = 7 * DAY_ / (31 * S_), mark = cycles / 2;
  int64_t t = 0;
  char purpose[32] = "onStart";
  for (uint64_t k = 0; k < cycles; k++, t += 31 * S_) {
    if (distinct) snprintf(purpose, sizeof purpose, "p%llu", (unsigned long long)k);
    if (distinct == 2) add(x, t, RT_EV_CHAT_USER, 0, (int64_t)k, 0, 0, purpose, pad + k % 900);
    add(x, t, RT_EV_ACTOR_WAKE, 0, (int64_t)k + 1, RT_ENTRY_FETCH, 0, "Agent", NULL);
    add(x, t, RT_EV_GATE_ACQUIRE, 0, (int64_t)k + 1, 0, 0, purpose, NULL);
    add(x, t, RT_EV_REQUEST_ARRIVE, 0, (int64_t)k, RT_ENTRY_FETCH, 0, NULL, NULL);
    uint64_t a = add(x, t + 30 * S_, RT_EV_GATE_TIMEOUT, 0, 30 * S_, 30 * S_, 0, "reset", NULL);
    add(x, t + 30 * S_, RT_EV_REQUEST_FAIL, 0, (int64_t)k, 30 * S_, 0, "reset", NULL);
    uint64_t b = add(x, t + 30 * S_, RT_EV_ACTOR_DEATH, 0, RT_DEATH_GATE_RESET, (int64_t)k + 1, 0, NULL, NULL);
    if (k == mark) chain[0] = a, chain[1] = b;
    if (k == cycles / 4)
      chain[2] = add(x, t + 30 * S_, RT_EV_REQUEST_ARRIVE, 1, 999999, RT_ENTRY_FETCH, 0, NULL, NULL);
  }
  x->v[0] = (chk_violation){.inv = CHK_NO_WEDGE, .actor = 0, .t_us = t, .chain = {chain[0], chain[1]},
                            .n_chain = 2, .subject = -1, .at_index = UINT64_MAX};
  x->run.violations = x->v;
  x->run.n_violations = 1;
  x->run.end_us = 7 * DAY_;
  x->run.events = x->t.count;
}

static void test_fold_repeats_keeps_chain(void **state) {
  (void)state;
  fx x;
  uint64_t chain[3];
  fx_week(&x, 0, chain);
  char *html = page(&x.run, 1, NULL, 0);
  size_t size = strlen(html);
  cJSON *d = page_data(html), *r = cJSON_GetArrayItem(item(d, "runs"), 0);
  double kept = item(r, "kept")->valuedouble, total = item(r, "total")->valuedouble, folded = 0;
  assert_true(total == (double)x.t.n);
  assert_true(total > 100000);
  assert_true(kept < 200);         /* 19,509 cycles down to a few */
  assert_true(size < 100 * 1000);  /* bytes: far below the 5 MB budget */
  assert_true(has_rec(r, (double)chain[0]) && has_rec(r, (double)chain[1]));
  assert_true(has_rec(r, (double)chain[2]));
  cJSON *f;
  int n = 0;
  cJSON_ArrayForEach(f, item(r, "folds")) {
    folded += item(f, "records")->valuedouble;
    assert_true(item(f, "period")->valueint >= 1);
    assert_true(item(f, "repeats")->valuedouble >= 2);
    assert_false(item(f, "first")->valuedouble <= chain[0] && chain[0] <= item(f, "last")->valuedouble);
    n++;
  }
  assert_int_equal(n, 3);          /* the pending request's and the chain's cycles split it */
  assert_true(folded + kept == total);
  /* the kept records are the first cycles, the chain's, and the last ones */
  assert_true(has_rec(r, 0) && has_rec(r, total - 1));
  free(html);
  cJSON_Delete(d);
  sim_trace_free(&x.t);
}

static void test_fold_budget_plain(void **state) {
  (void)state;
  fx x;
  uint64_t chain[3];
  fx_week(&x, 1, chain); /* every cycle differs: nothing repeats */
  char *all = page(&x.run, 1, NULL, UINT64_MAX);
  cJSON *d = page_data(all), *r = cJSON_GetArrayItem(item(d, "runs"), 0);
  assert_true(item(r, "kept")->valuedouble == (double)x.t.n); /* no budget: all kept */
  cJSON_Delete(d);
  char *html = page(&x.run, 1, NULL, 3000);
  d = page_data(html);
  r = cJSON_GetArrayItem(item(d, "runs"), 0);
  assert_true(item(r, "kept")->valuedouble <= 3000);
  assert_true(strlen(html) * 20 < strlen(all));
  assert_true(has_rec(r, (double)chain[0]) && has_rec(r, (double)chain[1]));
  assert_true(has_rec(r, (double)chain[2])); /* where the pending request's wait starts */
  cJSON *f;
  cJSON_ArrayForEach(f, item(r, "folds")) assert_int_equal(item(f, "period")->valueint, 0);
  free(all);
  free(html);
  cJSON_Delete(d);
  sim_trace_free(&x.t);
}

/* Long strings: the byte estimate folds before the record count does. */
static void test_fold_budget_bytes(void **state) {
  (void)state;
  fx x;
  uint64_t chain[3];
  fx_week(&x, 2, chain); /* ~19,500 cycles with 100-1000 byte strings */
  rpt_html_opts o = {.max_records = 0, .max_bytes = 1000 * 1000};
  char *html = page_opts(&x.run, 1, NULL, &o);
  cJSON *d = page_data(html), *r = cJSON_GetArrayItem(item(d, "runs"), 0);
  assert_true(strlen(html) < 1500 * 1000);
  assert_true(item(r, "kept")->valuedouble < 40000); /* the record budget was not what bound */
  assert_true(has_rec(r, (double)chain[0]) && has_rec(r, (double)chain[1]));
  free(html);
  cJSON_Delete(d);
  sim_trace_free(&x.t);
}

static void test_deterministic(void **state) {
  (void)state;
  fx x;
  uint64_t chain[3];
  fx_week(&x, 0, chain);
  char *a = page(&x.run, 1, NULL, 0), *b = page(&x.run, 1, NULL, 0);
  assert_string_equal(a, b);
  free(b);
  /* streamed run by run: the same bytes */
  size_t len = 0;
  FILE *f = open_memstream(&b, &len);
  rpt_html_stream w;
  rpt_html_begin(&w, f, "week", NULL);
  rpt_html_add(&w, &x.run);
  assert_int_equal(rpt_html_end(&w, NULL), 0);
  assert_int_equal(fclose(f), 0);
  assert_string_equal(a, b);
  free(a);
  free(b);
  sim_trace_free(&x.t);
}

/* ---- several runs, no trace, swarm ---------------------------------------------- */

static void test_runs_and_swarm(void **state) {
  (void)state;
  fx x;
  fx_small(&x, "one");
  rpt_run runs[2] = {x.run, x.run};
  runs[1].scenario_name = "two";
  runs[1].trace = NULL; /* a run without kept records still renders */
  static const int64_t rec[] = {1500 * MS_, 27 * S_, 30 * S_};
  static const rpt_swarm_sig sigs[] = {{"no_wedge/Agent/gate", "one", "gated", 12, 0x5, "revenant swarm ..."}};
  static const rpt_swarm_kind kinds[] = {{"evict", 10, 2, 14}, {"sigkill", 7, 7, 7}};
  const rpt_swarm_probe probes[2] = {{"commit_window_death", 7, 0x1f, "s", "default"},
                                     {"recovery_reentry", 0, 0, NULL, NULL}};
  rpt_swarm sw = {"revenant swarm s.json --seeds 100", 100, 12, 100, sigs, 1, rec, 3, kinds, 2, probes, 2};
  char *html = page(runs, 2, &sw, 0);
  cJSON *d = page_data(html), *s = item(d, "swarm");
  assert_int_equal(cJSON_GetArraySize(item(d, "runs")), 2);
  assert_string_equal(item(cJSON_GetArrayItem(item(d, "runs"), 1), "scenario")->valuestring, "two");
  assert_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(item(d, "runs"), 1), "recs"));
  assert_int_equal(item(s, "failed")->valueint, 12);
  cJSON *g = cJSON_GetArrayItem(item(s, "sigs"), 0);
  assert_string_equal(item(g, "first_seed")->valuestring, "0x5");
  assert_int_equal(item(g, "count")->valueint, 12);
  assert_int_equal(cJSON_GetArraySize(item(s, "recovery_us")), 3);
  cJSON *k = cJSON_GetArrayItem(item(s, "kinds"), 1);
  assert_string_equal(cJSON_GetArrayItem(k, 0)->valuestring, "sigkill");
  assert_int_equal(cJSON_GetArrayItem(k, 2)->valueint, 7);
  cJSON *p0 = cJSON_GetArrayItem(item(s, "probes"), 0), *p1 = cJSON_GetArrayItem(item(s, "probes"), 1);
  assert_string_equal(cJSON_GetArrayItem(p0, 0)->valuestring, "commit_window_death");
  assert_int_equal(cJSON_GetArrayItem(p0, 1)->valueint, 7);
  assert_string_equal(cJSON_GetArrayItem(p0, 2)->valuestring, "0x1f");
  assert_string_equal(cJSON_GetArrayItem(p0, 4)->valuestring, "default");
  assert_int_equal(cJSON_GetArrayItem(p1, 1)->valueint, 0);
  assert_true(cJSON_IsNull(cJSON_GetArrayItem(p1, 3)));
  assert_non_null(strstr(html, "function probeTable"));
  free(html);
  cJSON_Delete(d);
  sim_trace_free(&x.t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_structure),
      cmocka_unit_test(test_generic_records),
      cmocka_unit_test(test_facts),
      cmocka_unit_test(test_escaping),
      cmocka_unit_test(test_fold_repeats_keeps_chain),
      cmocka_unit_test(test_fold_budget_plain),
      cmocka_unit_test(test_fold_budget_bytes),
      cmocka_unit_test(test_deterministic),
      cmocka_unit_test(test_runs_and_swarm),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
