/*
** test_chk_filter.c: each built-in checker names the record kinds its
** on_record reads (chk_class.record_kind), and the core skips it for every
** other kind. Those lists are written by hand beside each on_record switch;
** a case added to the switch but not to the list would be skipped without a
** word. This test runs every case of every scenario of the library with the
** filter on and with it off (chk_filter_off) and requires the same verdict,
** the same violations (invariant, actor, time, message, chain) and the same
** trace hash. Dropping a kind from one list makes it fail where the library
** shows the difference: from chk_fiber.c's fiber_kind, RT_EV_FIBER_HOOK_THREW
** (3 cases differ), RT_EV_FIBER_SKIPPED (1) or RT_EV_EFFECT (12); not
** RT_EV_STASH, whose bookkeeping no violation of the library reads.
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
#include <sys/stat.h>

#include "checks/chk_reg.h"
#include "scenarios/scn.h"

static int runs, mismatches;

/* 1 if a and b report the same violations, in the same order. */
static int same_violations(const chk_set *a, const chk_set *b) {
  size_t n = chk_violation_count(a);
  if (n != chk_violation_count(b)) return 0;
  for (size_t i = 0; i < n; i++) {
    const chk_violation *x = chk_violation_at(a, i), *y = chk_violation_at(b, i);
    if (x->inv != y->inv || x->actor != y->actor || x->t_us != y->t_us ||
        x->subject != y->subject || x->at_index != y->at_index ||
        x->n_chain != y->n_chain || strcmp(x->msg, y->msg) ||
        memcmp(x->chain, y->chain, sizeof x->chain[0] * (size_t)x->n_chain))
      return 0;
  }
  return 1;
}

static void run_filtered(const scn_scenario *sc, int ci, int off, scn_result *r) {
  chk_filter_off(off);
  int rc = scn_run_case(sc, ci, sc->seed, sc->strategy, r);
  chk_filter_off(0);
  assert_int_equal(rc, 0);
}

static void compare_case(const scn_scenario *sc, int ci) {
  scn_result a, b;
  run_filtered(sc, ci, 0, &a);
  run_filtered(sc, ci, 1, &b);
  runs++;
  if (a.trace_hash != b.trace_hash || a.passed != b.passed ||
      !same_violations(a.checks, b.checks)) {
    mismatches++;
    print_message("# %s case %d: the filtered checkers judge differently "
                  "(%zu vs %zu violations, passed %d vs %d)\n",
                  sc->file, ci, chk_violation_count(a.checks),
                  chk_violation_count(b.checks), a.passed, b.passed);
  }
  scn_result_free(&a);
  scn_result_free(&b);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_file(const char *path) {
  static scn_scenario sc;
  char err[512];
  if (scn_load(path, &sc, err, sizeof err)) return; /* not a scenario (a data file) */
  for (int ci = 0; ci < sc.n_cases; ci++) compare_case(&sc, ci);
  scn_free(&sc);
}

/* Every *.json below dir, in name order. */
static void walk(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  struct dirent *e;
  char *names[1024];
  int n = 0;
  while ((e = readdir(d)) != NULL && n < 1024)
    if (e->d_name[0] != '.') assert_non_null(names[n++] = strdup(e->d_name));
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], by_name);
  for (int i = 0; i < n; i++) {
    char *path = malloc(strlen(dir) + strlen(names[i]) + 2);
    struct stat st;
    assert_non_null(path);
    sprintf(path, "%s/%s", dir, names[i]);
    size_t k = strlen(names[i]);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) walk(path);
    else if (k > 5 && strcmp(names[i] + k - 5, ".json") == 0) run_file(path);
    free(path);
    free(names[i]);
  }
}

static void test_filter_drops_nothing_a_checker_reads(void **state) {
  (void)state;
  walk("scenarios");
  print_message("# %d runs compared\n", runs);
  assert_true(runs > 150); /* the whole library, not a stray folder */
  assert_int_equal(mismatches, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_filter_drops_nothing_a_checker_reads),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
