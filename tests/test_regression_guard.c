/*
** test_regression_guard.c: every regression scenario guards something
** (issue #16 item 7). A regression whose trace does not change when its bug
** comes back guards nothing, so each file of scenarios/regression/ must have
** a broken case B (a runtime variant with the bug back, expecting a
** violation or pinning the broken story with facts of its own) and a fixed
** case F (expecting no violation) such that F's expectations, run under B's
** runtime, fail: with the bug back, the fixed case would catch it.
**
** Files whose bug has no runtime switch yet would be listed in `no_switch`
** with the reason (none is today); the test fails if such a file gains a
** guarding pair (then drop it from the list) or if a listed file no
** longer exists.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/scn.h"

#define DIR_REG "scenarios/regression"

/* Regressions whose bug cannot come back by a runtime field, with the
** reason. Empty since the two last ones got their switches
** (runtime.hook_run_fiber and runtime.commit_fail_reset, docs/scenarios.md);
** the {NULL, NULL} row ends it. */
static const struct {
  const char *file, *why;
} no_switch[] = {
    {NULL, NULL},
};

/* How many files no_switch lists (up to its NULL row). */
static int n_no_switch(void) {
  int n = 0;
  while (no_switch[n].file) n++;
  return n;
}

static int listed(const char *name) {
  for (int i = 0; no_switch[i].file; i++)
    if (strcmp(no_switch[i].file, name) == 0) return 1;
  return 0;
}

/* Case ci states a broken story of its own: a violation, or facts only it has. */
static int states_breakage(const scn_scenario *sc, int ci) {
  if (sc->cases[ci].violate_mask) return 1;
  for (int k = 0; k < sc->n_facts; k++)
    if (sc->facts[k].case_mask == (1u << ci)) return 1;
  return 0;
}

/* 1 if case f's expectation fails when run under case b's runtime. */
static int fixed_catches(const scn_scenario *sc, int f, int b) {
  static scn_scenario cp;
  scn_result res;
  scn_copy(&cp, sc);
  cp.cases[f].cfg = sc->cases[b].cfg;
  memset(&res, 0, sizeof res);
  assert_int_equal(scn_run_case(&cp, f, sc->seed, sc->strategy, &res), 0);
  int caught = !res.passed;
  scn_result_free(&res);
  return caught;
}

/* The guarding pair of one file, or -1: writes "B by F" into how. */
static int guarding_pair(const scn_scenario *sc, char *how, size_t n) {
  for (int b = 0; b < sc->n_cases; b++) {
    if (!states_breakage(sc, b)) continue;
    for (int f = 0; f < sc->n_cases; f++) {
      if (f == b || sc->cases[f].violate_mask || !fixed_catches(sc, f, b)) continue;
      snprintf(how, n, "%s caught by %s", sc->cases[b].label, sc->cases[f].label);
      return 0;
    }
  }
  return -1;
}

static int by_name(const void *x, const void *y) {
  return strcmp(*(char *const *)x, *(char *const *)y);
}

static void test_every_regression_guards(void **st) {
  (void)st;
  DIR *d = opendir(DIR_REG);
  assert_non_null(d);
  char *names[64];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    size_t len = strlen(e->d_name);
    if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0 && n < 64)
      names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], by_name);
  assert_true(n >= 3);
  int seen_listed = 0;
  for (int i = 0; i < n; i++) {
    static scn_scenario sc;
    char path[512], err[1024], how[160] = "";
    snprintf(path, sizeof path, "%s/%s", DIR_REG, names[i]);
    if (scn_load(path, &sc, err, sizeof err) != 0) fail_msg("%s", err);
    int ok = guarding_pair(&sc, how, sizeof how) == 0;
    if (listed(names[i])) {
      seen_listed++;
      if (ok) fail_msg("%s now has a guarding pair (%s): drop it from no_switch", path, how);
    } else if (!ok) {
      fail_msg("%s: no case brings its bug back and fails the fixed case's expectation (add a "
               "broken case: a runtime variant with expect.violate or facts of its own)",
               path);
    } else {
      print_message("# %s: %s\n", names[i], how);
    }
    scn_free(&sc);
    free(names[i]);
  }
  assert_int_equal(seen_listed, n_no_switch());
}

/* The check can fail: a file whose only "broken" case runs the fixed
** runtime has no guarding pair. */
static void test_guard_can_fail(void **st) {
  (void)st;
  static scn_scenario sc;
  char err[1024], how[160];
  if (scn_load(DIR_REG "/inspect-deadline.json", &sc, err, sizeof err) != 0) fail_msg("%s", err);
  assert_int_equal(guarding_pair(&sc, how, sizeof how), 0);
  for (int c = 0; c < sc.n_cases; c++) sc.cases[c].cfg = sc.cases[0].cfg; /* the bug removed */
  assert_int_equal(guarding_pair(&sc, how, sizeof how), -1);
  scn_free(&sc);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_every_regression_guards),
      cmocka_unit_test(test_guard_can_fail),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
