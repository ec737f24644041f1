/*
** test_scn_swarm.c: the swarm engine (scenarios/scn_swarm.c) through its
** API, without the command line: results come in job order and do not
** depend on the number of workers; shards cover their seeds; failures are
** grouped by signature with their smallest seed; a crashing or hanging
** seed is a failure of that seed only; a stop request ends the pool with
** what finished; a worker that is free takes the next job (a work queue,
** not a fixed split); the re-run child sees the job's full run; a sigkill
** scenario whose workers are all killed by the timeout ends and leaves no
** temporary directory. Run from the repository
** root (it loads scenarios/ files).
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scenarios/scn.h"
#include "scenarios/scn_baseline.h"
#include "scenarios/scn_swarm.h"

#define MAXR 512

typedef struct got {
  size_t n;
  uint64_t job[MAXR], seed[MAXR], hash[MAXR];
  int passed[MAXR], state[MAXR];
  char sig[MAXR][64];
  char extra[MAXR][64];
  uint64_t events[MAXR];
  volatile sig_atomic_t stop;
  size_t stop_after;       /* 0: never */
} got;

static void on_result(void *ctx, const scn_swarm_result *r) {
  got *g = ctx;
  if (g->n < MAXR) {
    g->job[g->n] = r->job;
    g->seed[g->n] = r->seed;
    g->hash[g->n] = r->hash;
    g->passed[g->n] = r->passed;
    g->state[g->n] = (int)r->state;
    snprintf(g->sig[g->n], sizeof g->sig[0], "%s", r->sig);
    snprintf(g->extra[g->n], sizeof g->extra[0], "%s", r->extra);
    g->events[g->n] = r->events;
  }
  g->n++;
  if (g->stop_after && g->n >= g->stop_after) g->stop = 1;
}

static scn_scenario *load(const char *path) {
  char err[1024];
  scn_scenario *sc = calloc(1, sizeof *sc);
  assert_non_null(sc);
  if (scn_load(path, sc, err, sizeof err)) fail_msg("%s", err);
  return sc;
}

static void unload(scn_scenario *sc) {
  scn_free(sc);
  free(sc);
}

static scn_swarm_opts opts(got *g, uint64_t seeds, int jobs) {
  scn_swarm_opts o;
  memset(&o, 0, sizeof o);
  o.seeds = seeds;
  o.timeout_us = 60000000;
  o.jobs = jobs;
  o.strategy = -1;
  o.on_result = on_result;
  o.ctx = g;
  o.stop = &g->stop;
  return o;
}

/* Runs a swarm over sc with o; returns scn_swarm_run's value. */
static int swarm(scn_scenario **sc, size_t n, const scn_swarm_opts *o, scn_swarm **out) {
  char err[512];
  scn_swarm *s = scn_swarm_new(sc, n, o, err, sizeof err);
  if (!s) fail_msg("%s", err);
  int rc = scn_swarm_run(s, err, sizeof err);
  if (out)
    *out = s;
  else
    scn_swarm_free(s);
  return rc;
}

static void test_job_order_independent_of_workers(void **st) {
  (void)st;
  scn_scenario *sc[2] = {load("scenarios/examples/keepalive-dispose.json"),
                         load("scenarios/examples/alarm-wake.json")};
  static got a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  scn_swarm_opts oa = opts(&a, 10, 1), ob = opts(&b, 10, 2);
  assert_int_equal(swarm(sc, 2, &oa, NULL), 0);
  assert_int_equal(swarm(sc, 2, &ob, NULL), 0);
  size_t units = (size_t)(sc[0]->n_cases + sc[1]->n_cases);
  assert_int_equal(a.n, 10 * units);
  assert_int_equal(b.n, a.n);
  for (size_t i = 0; i < a.n; i++) {
    assert_int_equal(a.job[i], i); /* job order, no gaps */
    assert_int_equal(b.job[i], i);
    assert_int_equal(a.hash[i], b.hash[i]);
    assert_int_equal(a.seed[i], b.seed[i]);
    assert_true(a.hash[i] != 0);
  }
  /* seeds step per seed, from each file's seed */
  assert_int_equal(a.seed[0], sc[0]->seed);
  assert_int_equal(a.seed[units], sc[0]->seed + 1);
  unload(sc[0]);
  unload(sc[1]);
}

static void test_shard_covers_its_seeds(void **st) {
  (void)st;
  scn_scenario *sc[1] = {load("scenarios/examples/keepalive-dispose.json")};
  static got g;
  memset(&g, 0, sizeof g);
  scn_swarm_opts o = opts(&g, 10, 2);
  o.shard_i = 2;
  o.shard_n = 3;
  o.have_base = 1;
  o.base = 100;
  assert_int_equal(swarm(sc, 1, &o, NULL), 0);
  size_t units = (size_t)sc[0]->n_cases;
  assert_int_equal(g.n, 3 * units); /* k = 1, 4, 7 */
  assert_int_equal(g.seed[0], 101);
  assert_int_equal(g.seed[units], 104);
  assert_int_equal(g.seed[2 * units], 107);
  unload(sc[0]);
}

static void test_groups_by_signature(void **st) {
  (void)st;
  scn_scenario *sc[1] = {load("tests/corpus/cli/failing.json")};
  static got g;
  memset(&g, 0, sizeof g);
  scn_swarm_opts o = opts(&g, 8, 2);
  scn_swarm *s;
  assert_int_equal(swarm(sc, 1, &o, &s), 0);
  size_t ng, failed = 0;
  const scn_swarm_group *gr = scn_swarm_groups(s, &ng);
  for (size_t i = 0; i < g.n; i++) failed += !g.passed[i];
  assert_true(failed > 0);
  assert_true(ng > 0);
  uint64_t in_groups = 0;
  for (size_t k = 0; k < ng; k++) {
    in_groups += gr[k].count;
    /* the group's first job is its smallest seed, with that signature */
    size_t i = 0;
    while (i < g.n && !(g.job[i] == gr[k].first_job)) i++;
    assert_true(i < g.n);
    assert_string_equal(g.sig[i], gr[k].sig);
    assert_non_null(strstr(gr[k].failure, "no_wedge")); /* the first run's failure text */
    assert_int_equal(g.seed[i], gr[k].seeds[0]);
    for (size_t e = 0; e < i; e++) assert_true(g.passed[e] || strcmp(g.sig[e], gr[k].sig) || g.job[e] % (uint64_t)sc[0]->n_cases != gr[k].unit);
  }
  assert_int_equal(in_groups, failed);
  scn_swarm_stats ss;
  scn_swarm_stats_get(s, &ss);
  assert_int_equal(ss.runs, g.n);
  assert_int_equal(ss.failed, failed);
  scn_swarm_free(s);
  unload(sc[0]);
}

/* tests/corpus/swarm/commit-window.json with another expectation and an
** allowance: only crashes (the commit-window deaths lose a charge). */
static scn_scenario *commit_window(const char *expect) {
  char text[2048], err[1024];
  snprintf(text, sizeof text,
           "{\"name\": \"cw\", \"seed\": 1, \"duration\": \"10m\",\n"
           " \"programs\": {\"pay\": [{\"repeat\": 5, \"steps\": [{\"effect\": \"charge\"}, {\"stash\": true},"
           " {\"work\": \"20s\"}]}]},\n"
           " \"actors\": [{\"id\": \"agent\", \"recovery\": [{\"action\": \"resume\"}]}],\n"
           " \"workload\": [{\"fiber\": \"pay\", \"actor\": \"agent\", \"at\": \"1s\"},"
           " {\"request\": \"agent\", \"at\": \"5s\", \"every\": \"30s\"}],\n"
           " \"swarm\": {\"faults\": {\"crash\": true, \"evict\": {\"off\": \"only crashes here\"},"
           " \"restart\": {\"off\": \"only crashes here\"}, \"storage_fail\": {\"off\": \"only crashes here\"}}},\n"
           " \"expect\": %s}\n", expect);
  scn_scenario *sc = calloc(1, sizeof *sc);
  assert_non_null(sc);
  if (scn_load_text("cw.json", text, strlen(text), sc, err, sizeof err)) fail_msg("%s", err);
  return sc;
}

/* expect.swarm: "every" fails each seed that misses the violation; "once"
** passes them and needs one seed that meets it (else a whole-case group
** "unreproduced:"); "report" never fails on it. */
static void test_swarm_modes(void **st) {
  (void)st;
  static got g;
  scn_swarm *s;
  size_t ng;
  scn_swarm_tally t;
  const char *const modes[] = {"every", "once", "report"};
  uint64_t failed[3];
  for (int m = 0; m < 3; m++) {
    char ex[128];
    snprintf(ex, sizeof ex, "{\"violate\": [\"effects_once\"], \"swarm\": \"%s\"}", modes[m]);
    scn_scenario *sc[1] = {commit_window(ex)};
    memset(&g, 0, sizeof g);
    scn_swarm_opts o = opts(&g, 40, 2);
    assert_int_equal(swarm(sc, 1, &o, &s), 0);
    scn_swarm_unit_tally(s, 0, &t);
    assert_int_equal(t.mode, m);
    assert_int_equal(t.runs, 40);
    assert_true(t.met > 0 && t.met < 40); /* some seeds lose a charge, some do not */
    failed[m] = 0;
    for (size_t i = 0; i < g.n; i++) failed[m] += !g.passed[i];
    scn_swarm_groups(s, &ng);
    assert_int_equal(ng, m == 0 ? 1 : 0);
    scn_swarm_free(s);
    unload(sc[0]);
  }
  assert_int_equal(failed[0], 40 - t.met);
  assert_int_equal(failed[1], 0);
  assert_int_equal(failed[2], 0);
  /* once, never met: one whole-case group */
  scn_scenario *sc[1] = {commit_window("{\"violate\": [\"no_wedge\"], \"swarm\": \"once\"}")};
  memset(&g, 0, sizeof g);
  scn_swarm_opts o = opts(&g, 10, 2);
  assert_int_equal(swarm(sc, 1, &o, &s), 0);
  const scn_swarm_group *gr = scn_swarm_groups(s, &ng);
  assert_int_equal(ng, 1);
  assert_string_equal(gr[0].sig, "unreproduced:no_wedge/-/-");
  assert_int_equal(gr[0].whole_case, 1);
  assert_int_equal(gr[0].count, 10);
  assert_non_null(strstr(gr[0].failure, "none of 10 seeds"));
  scn_swarm_free(s);
  /* --expect-reproduce judges every case with violations as once */
  sc[0]->cases[0].swarm_mode = SCN_SWARM_EVERY;
  memset(&g, 0, sizeof g);
  o = opts(&g, 10, 2);
  o.reproduce = 1;
  assert_int_equal(swarm(sc, 1, &o, &s), 0);
  scn_swarm_groups(s, &ng);
  assert_int_equal(ng, 1);
  scn_swarm_free(s);
  unload(sc[0]);
}

/* A fault allowance: a kind it does not list is never drawn, a bound cuts
** the drawn value, and the draws of the other kinds do not move. */
static void test_allowance_shapes_the_mix(void **st) {
  (void)st;
  scn_scenario *a = commit_window("{\"hold\": [\"effects_once\"]}");
  scn_scenario *m = malloc(sizeof *m), *n = malloc(sizeof *n);
  assert_non_null(m);
  assert_non_null(n);
  int crashes = 0;
  for (uint64_t seed = 1; seed <= 64; seed++) {
    scn_mix x, y;
    scn_copy(m, a);
    scn_swarm_mix(m, seed, &x);
    scn_copy(n, a);
    n->allow.given = 0; /* every kind, unbounded */
    scn_swarm_mix(n, seed, &y);
    assert_int_equal(x.kinds & ~(1u << FLT_CRASH), 0);
    for (int i = a->n_faults; i < m->n_faults; i++) {
      assert_int_equal(m->faults[i].kind, FLT_CRASH);
      crashes++;
      /* the same crash as the unbounded mix draws */
      int k = a->n_faults;
      while (k < n->n_faults && n->faults[k].kind != FLT_CRASH) k++;
      assert_true(k < n->n_faults);
      assert_memory_equal(&m->faults[i], &n->faults[k], sizeof m->faults[i]);
    }
  }
  assert_true(crashes > 10);
  /* a bound cuts the rate */
  a->allow.max_per_day[FLT_CRASH] = 1;
  a->allow.no_after_write = 1u << FLT_CRASH;
  for (uint64_t seed = 1; seed <= 64; seed++) {
    scn_mix x;
    scn_copy(m, a);
    scn_swarm_mix(m, seed, &x);
    for (int i = a->n_faults; i < m->n_faults; i++) {
      assert_int_equal(m->faults[i].after_write, 0);
      assert_true(m->faults[i].per_day <= 1);
    }
  }
  free(m);
  free(n);
  unload(a);
}

/* Baseline patterns: part by part, "*" for any part; an entry without a
** case matches every case; matches are counted. */
static void test_baseline_match(void **st) {
  (void)st;
  assert_true(scn_baseline_sig_match("no_wedge/ChatAgent/gate", "no_wedge/ChatAgent/gate"));
  assert_true(scn_baseline_sig_match("no_wedge/*/gate", "no_wedge/ChatAgent/gate"));
  assert_true(scn_baseline_sig_match("*/*/*", "lua:my_inv/Agent/none"));
  assert_false(scn_baseline_sig_match("no_wedge/ChatAgent/*", "no_wedge/Agent/gate"));
  assert_false(scn_baseline_sig_match("no_wedge/ChatAgent", "no_wedge/ChatAgent/gate"));
  assert_false(scn_baseline_sig_match("no_wedge/ChatAgent/gate", "no_wedge/ChatAgent/gate+request"));
  const char *text = "// known\n{\"revenant_baseline\": 1, \"entries\": [\n"
                     " {\"scenario\": \"s\", \"signature\": \"a/*/c\", \"reason\": \"any case\"},\n"
                     " {\"scenario\": \"s\", \"case\": \"k\", \"signature\": \"b/x/y\", \"reason\": \"one case\"}]}";
  scn_baseline b;
  char err[512];
  assert_int_equal(scn_baseline_load_text("b.json", text, strlen(text), &b, err, sizeof err), 0);
  assert_int_equal(b.n, 2);
  const scn_baseline_entry *e = scn_baseline_match(&b, "s", "any", "a/Agent/c");
  assert_non_null(e);
  assert_string_equal(e->reason, "any case");
  assert_null(scn_baseline_match(&b, "s", "other", "b/x/y"));
  assert_non_null(scn_baseline_match(&b, "s", "k", "b/x/y"));
  assert_null(scn_baseline_match(&b, "t", "k", "b/x/y"));
  assert_int_equal(b.e[0].matched, 1);
  assert_int_equal(b.e[1].matched, 1);
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  assert_int_equal(scn_baseline_write(f, b.e, b.n), 0);
  fclose(f);
  scn_baseline c;
  assert_int_equal(scn_baseline_load_text("w.json", out, len, &c, err, sizeof err), 0);
  assert_int_equal(c.n, 2);
  assert_string_equal(c.e[1].case_name, "k");
  assert_string_equal(c.e[0].signature[0], "a/*/c");
  free(out);
  scn_baseline_free(&c);
  scn_baseline_free(&b);
  const char *dup = "{\"revenant_baseline\": 1, \"entries\": [{\"scenario\": \"s\", \"signature\": \"a/b/c\", "
                    "\"reason\": \"r\"},\n {\"scenario\": \"s\", \"signature\": \"a/b/c\", \"reason\": \"r\"}]}";
  assert_int_equal(scn_baseline_load_text("d.json", dup, strlen(dup), &b, err, sizeof err), -1);
  assert_non_null(strstr(err, "d.json:2:2: duplicate entry"));
}

/* One entry names a family of scenarios and signatures with one reason;
** it round-trips through the writer as lists; bad lists are errors. */
static void test_baseline_family(void **st) {
  (void)st;
  const char *text = "{\"revenant_baseline\": 1, \"entries\": [\n"
                     " {\"scenario\": [\"s\", \"t\"], \"signature\": [\"a/*/*\", \"b/X/*\"], \"reason\": \"r\"}]}";
  scn_baseline b, c;
  char err[512];
  assert_int_equal(scn_baseline_load_text("f.json", text, strlen(text), &b, err, sizeof err), 0);
  assert_int_equal(b.e[0].n_scenarios, 2);
  assert_non_null(scn_baseline_match(&b, "t", "k", "a/Agent/none"));
  assert_non_null(scn_baseline_match(&b, "s", "k", "b/X/gate"));
  assert_null(scn_baseline_match(&b, "s", "k", "b/Y/gate"));
  assert_null(scn_baseline_match(&b, "u", "k", "a/Agent/none"));
  assert_int_equal(b.e[0].matched, 2);
  char *out = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&out, &len);
  assert_int_equal(scn_baseline_write(f, b.e, b.n), 0);
  fclose(f);
  assert_non_null(strstr(out, "[\"s\", \"t\"]"));
  assert_int_equal(scn_baseline_load_text("w.json", out, len, &c, err, sizeof err), 0);
  assert_int_equal(c.e[0].n_signatures, 2);
  assert_string_equal(c.e[0].signature[1], "b/X/*");
  free(out);
  scn_baseline_free(&c);
  scn_baseline_free(&b);
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"{\"revenant_baseline\": 1, \"entries\": [{\"scenario\": [], \"signature\": \"a/b/c\", \"reason\": \"r\"}]}",
       "\"scenario\": a list needs 1 to 8 entries, found 0"},
      {"{\"revenant_baseline\": 1, \"entries\": [{\"scenario\": [\"s\", 3], \"signature\": \"a/b/c\", \"reason\": \"r\"}]}",
       "\"scenario\"[1]: expected a non-empty string"},
      {"{\"revenant_baseline\": 1, \"entries\": [{\"scenario\": [\"s\", \"s\"], \"signature\": \"a/b/c\", \"reason\": \"r\"}]}",
       "\"scenario\"[1]: \"s\" is listed twice"},
      {"{\"revenant_baseline\": 1, \"entries\": [{\"scenario\": \"s\", \"signature\": [\"a/b/c\", \"a/b\"], \"reason\": \"r\"}]}",
       "\"signature\": expected"},
      {"{\"revenant_baseline\": 1, \"entries\": [{\"scenario\": [\"s\", \"t\"], \"signature\": \"a/b/c\", \"reason\": \"r\"},"
       " {\"scenario\": \"t\", \"signature\": [\"x/y/z\", \"a/b/c\"], \"reason\": \"r\"}]}",
       "duplicate entry: entries[0]"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    err[0] = 0;
    assert_int_equal(scn_baseline_load_text("bad.json", bad[i].text, strlen(bad[i].text), &b, err, sizeof err), -1);
    if (!strstr(err, bad[i].msg)) fail_msg("case %zu: got \"%s\", want \"%s\"", i, err, bad[i].msg);
  }
}

static void test_crash_and_hang_fail_their_seed(void **st) {
  (void)st;
  scn_scenario *sc[1] = {load("scenarios/examples/keepalive-dispose.json")};
  static got g;
  memset(&g, 0, sizeof g);
  scn_swarm_opts o = opts(&g, 8, 2);
  o.have_base = 1;
  o.base = 1;
  o.have_crash_seed = 1;
  o.crash_seed = 3;
  o.have_hang_seed = 1;
  o.hang_seed = 6;
  o.timeout_us = 3000000; /* generous: an ordinary seed must never reach it, even under ASan on a loaded machine */
  assert_int_equal(swarm(sc, 1, &o, NULL), 0);
  size_t units = (size_t)sc[0]->n_cases;
  assert_int_equal(g.n, 8 * units);
  for (size_t i = 0; i < g.n; i++) {
    if (g.seed[i] == 3) {
      assert_int_equal(g.state[i], SCN_SWARM_CRASH);
      assert_string_equal(g.sig[i], "crash:SIGSEGV/-/-");
    } else if (g.seed[i] == 6) {
      assert_int_equal(g.state[i], SCN_SWARM_TIMEOUT);
      assert_string_equal(g.sig[i], "timeout/-/-");
    } else {
      assert_int_equal(g.state[i], SCN_SWARM_DONE);
      assert_true(g.passed[i]);
    }
  }
  unload(sc[0]);
}

static void test_stop_keeps_what_finished(void **st) {
  (void)st;
  scn_scenario *sc[1] = {load("scenarios/examples/keepalive-dispose.json")};
  static got g;
  memset(&g, 0, sizeof g);
  scn_swarm_opts o = opts(&g, 100000, 2);
  g.stop_after = 5;
  assert_int_equal(swarm(sc, 1, &o, NULL), 1);
  assert_true(g.n >= 5);
  assert_true(g.n < 100000);
  for (size_t i = 1; i < g.n && i < MAXR; i++) assert_true(g.job[i] > g.job[i - 1]);
  unload(sc[0]);
}

static int rerun_fn(void *ctx, const scn_scenario *m, int ci, const scn_result *r) {
  const uint64_t *want = ctx;
  (void)m;
  (void)ci;
  /* the child's full run has the same hash as the worker's decided run only
     when nothing stopped it early: check what does not change instead */
  return r->seed == *want && r->s && r->s->trace.count > 0 ? 0 : 1;
}

static void test_rerun_in_child(void **st) {
  (void)st;
  scn_scenario *sc[1] = {load("scenarios/examples/keepalive-dispose.json")};
  static got g;
  memset(&g, 0, sizeof g);
  scn_swarm_opts o = opts(&g, 2, 1);
  scn_swarm *s;
  assert_int_equal(swarm(sc, 1, &o, &s), 0);
  scn_swarm_job jb;
  scn_swarm_job_info(s, 1, &jb);
  uint64_t want = jb.seed;
  assert_int_equal(scn_swarm_rerun(s, 1, rerun_fn, &want), 0);
  want++; /* the child checks the seed: a wrong one must fail */
  assert_int_equal(scn_swarm_rerun(s, 1, rerun_fn, &want), -1);
  scn_swarm_free(s);
  unload(sc[0]);
}

/* A sigkill scenario whose every seed outlives a 1 us timeout: its workers
** are killed while a SIGKILL generation waits in pause(). The swarm must
** end (alarm: a hang kills the test) and leave nothing in TMPDIR. */
static void test_sigkill_timeouts_end_and_clean_up(void **st) {
  (void)st;
  char dir[] = "/tmp/revenant-test-scn-swarm-XXXXXX", cmd[128];
  assert_non_null(mkdtemp(dir));
  const char *old = getenv("TMPDIR");
  char *saved = old ? strdup(old) : NULL;
  setenv("TMPDIR", dir, 1);
  scn_scenario *sc[1] = {load("scenarios/examples/sigkill-recover.json")};
  static got g;
  memset(&g, 0, sizeof g);
  scn_swarm_opts o = opts(&g, 12, 2);
  o.timeout_us = 1;
  alarm(60);
  assert_int_equal(swarm(sc, 1, &o, NULL), 0);
  alarm(0);
  assert_int_equal(g.n, 12);
  for (size_t i = 0; i < g.n; i++) assert_true(g.state[i] == SCN_SWARM_TIMEOUT || g.state[i] == SCN_SWARM_DONE);
  DIR *d = opendir(dir);
  assert_non_null(d);
  int entries = 0;
  for (struct dirent *e; (e = readdir(d));) entries += e->d_name[0] != '.';
  closedir(d);
  assert_int_equal(entries, 0);
  if (saved) setenv("TMPDIR", saved, 1);
  else unsetenv("TMPDIR");
  free(saved);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(system(cmd), 0);
  unload(sc[0]);
}

/* In the worker: the run's seed and event count, with a tab and a newline
** that the engine must flatten. */
static void extra_fn(void *ctx, const scn_scenario *m, int ci, const scn_result *r, char *buf, size_t cap) {
  (void)ctx;
  (void)m;
  snprintf(buf, cap, "seed=%llu\tevents=%llu ci=%d\n", (unsigned long long)r->seed,
           (unsigned long long)r->events, ci);
}

static void test_worker_extra_reaches_the_parent(void **st) {
  (void)st;
  scn_scenario *sc[1] = {load("scenarios/examples/keepalive-dispose.json")};
  static got g;
  memset(&g, 0, sizeof g);
  scn_swarm_opts o = opts(&g, 4, 2);
  o.worker_extra = extra_fn;
  assert_int_equal(swarm(sc, 1, &o, NULL), 0);
  assert_int_equal(g.n, 4 * (size_t)sc[0]->n_cases);
  for (size_t i = 0; i < g.n; i++) {
    char want[64];
    snprintf(want, sizeof want, "seed=%llu events=%llu ci=%d ", (unsigned long long)g.seed[i],
             (unsigned long long)g.events[i], (int)(g.job[i] % (uint64_t)sc[0]->n_cases));
    assert_string_equal(g.extra[i], want);
  }
  memset(&g, 0, sizeof g);
  o = opts(&g, 2, 1); /* without the hook: "" */
  assert_int_equal(swarm(sc, 1, &o, NULL), 0);
  assert_string_equal(g.extra[0], "");
  unload(sc[0]);
}

/* In the worker: the pid of the process that ran the job. */
static void pid_fn(void *ctx, const scn_scenario *m, int ci, const scn_result *r, char *buf, size_t cap) {
  (void)ctx;
  (void)m;
  (void)ci;
  (void)r;
  snprintf(buf, cap, "%ld", (long)getpid());
}

/* Jobs are handed out on demand: while one worker hangs in the first seed
** (until the timeout kills it), the other takes every later seed. With a
** static split (slot w runs seeds w, w+J, ...) the hanging worker's slot
** would keep its seeds, run by its replacement, in another process. */
static void test_idle_worker_takes_the_next_job(void **st) {
  (void)st;
  scn_scenario *sc[1] = {load("scenarios/examples/keepalive-dispose.json")};
  static got g;
  memset(&g, 0, sizeof g);
  scn_swarm_opts o = opts(&g, 8, 2);
  o.only_case = sc[0]->cases[0].label;
  o.have_base = 1;
  o.base = 1;
  o.have_hang_seed = 1;
  o.hang_seed = 1;
  o.timeout_us = 3000000; /* the other seven seeds take far less, even under ASan */
  o.worker_extra = pid_fn;
  assert_int_equal(swarm(sc, 1, &o, NULL), 0);
  assert_int_equal(g.n, 8);
  assert_int_equal(g.state[0], SCN_SWARM_TIMEOUT);
  for (size_t i = 1; i < g.n; i++) {
    assert_int_equal(g.state[i], SCN_SWARM_DONE);
    assert_string_equal(g.extra[i], g.extra[1]); /* one process ran seeds 2..8 */
  }
  unload(sc[0]);
}

static void test_bad_case_is_an_error(void **st) {
  (void)st;
  scn_scenario *sc[1] = {load("scenarios/examples/keepalive-dispose.json")};
  static got g;
  char err[256] = "";
  scn_swarm_opts o = opts(&g, 2, 1);
  o.only_case = "no-such-case";
  assert_null(scn_swarm_new(sc, 1, &o, err, sizeof err));
  assert_non_null(strstr(err, "no case named \"no-such-case\""));
  o.only_case = NULL;
  o.jobs = 0;
  assert_null(scn_swarm_new(sc, 1, &o, err, sizeof err));
  unload(sc[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_job_order_independent_of_workers),
      cmocka_unit_test(test_shard_covers_its_seeds),
      cmocka_unit_test(test_groups_by_signature),
      cmocka_unit_test(test_swarm_modes),
      cmocka_unit_test(test_allowance_shapes_the_mix),
      cmocka_unit_test(test_baseline_match),
      cmocka_unit_test(test_baseline_family),
      cmocka_unit_test(test_crash_and_hang_fail_their_seed),
      cmocka_unit_test(test_stop_keeps_what_finished),
      cmocka_unit_test(test_rerun_in_child),
      cmocka_unit_test(test_sigkill_timeouts_end_and_clean_up),
      cmocka_unit_test(test_worker_extra_reaches_the_parent),
      cmocka_unit_test(test_idle_worker_takes_the_next_job),
      cmocka_unit_test(test_bad_case_is_an_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
