/*
** test_reproduce.c: `revenant swarm --expect-reproduce` (issue #15): a case
** that expects violations passes when at least one seed reproduces them;
** scn_swarm_reproduce_verdict decides per case. Runs the binary
** ($REVENANT, default ./revenant) from the repository root.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scenarios/scn.h"

static char g_dir[64];

static const char *bin(void) {
  const char *b = getenv("REVENANT");
  return b && *b ? b : "./revenant";
}

/* Runs bin args > dir/out; returns the exit status and the output in buf. */
static int run(char *buf, size_t cap, const char *args) {
  char cmd[1024], path[128];
  snprintf(path, sizeof path, "%s/out", g_dir);
  snprintf(cmd, sizeof cmd, "%s %s --repro-dir %s > %s 2>/dev/null", bin(), args, g_dir, path);
  int st = system(cmd);
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
  buf[n] = 0;
  if (f) fclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int setup(void **st) {
  (void)st;
  snprintf(g_dir, sizeof g_dir, "/tmp/revenant-repro-XXXXXX");
  return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **st) {
  char cmd[128];
  (void)st;
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_verdict(void **st) {
  scn_case c;
  (void)st;
  memset(&c, 0, sizeof c);
  c.violate_mask = 1;
  assert_int_equal(scn_swarm_reproduce_verdict(&c, 1000, 1), 0);
  assert_int_equal(scn_swarm_reproduce_verdict(&c, 1000, 0), 1);
  c.violate_mask = 0;
  c.hold_mask = 1;
  assert_int_equal(scn_swarm_reproduce_verdict(&c, 10, 10), 0);
  assert_int_equal(scn_swarm_reproduce_verdict(&c, 10, 9), 1);
  assert_int_equal(scn_swarm_reproduce_verdict(&c, 0, 0), 1);
}

/* The #1630 incident reproduces within a few seeds; the #1640 case holds. */
static void test_incident_reproduces(void **st) {
  static char out[8192];
  (void)st;
  int rc = run(out, sizeof out, "swarm scenarios/incidents/agents-1630.json --seeds 4 -j 2 -q --expect-reproduce");
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, "reproduce: agents-1630 [fresh]: reproduced in "));
  assert_non_null(strstr(out, "reproduce: agents-1630 [stable]: expectation met in 4 of 4 seeds (holds)"));
}

/* A case whose expected violation never happens is not reproduced: exit 1. */
static void test_not_reproduced(void **st) {
  static char out[8192];
  char path[128], args[256];
  (void)st;
  snprintf(path, sizeof path, "%s/never.json", g_dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("{\"name\": \"never\", \"duration\": \"1m\", \"actors\": [{\"id\": \"a\"}],\n"
        " \"workload\": [{\"request\": \"a\", \"at\": \"1s\"}],\n"
        " \"expect\": {\"violate\": [\"effects_once\"]}}\n", f);
  fclose(f);
  snprintf(args, sizeof args, "swarm %s --seeds 3 -j 1 -q --expect-reproduce", path);
  assert_int_equal(run(out, sizeof out, args), 1);
  assert_non_null(strstr(out, "reproduce: never [default]: NOT reproduced in 3 seeds"));
  snprintf(args, sizeof args, "swarm %s --seeds 3 -j 1 -q", path); /* without the flag: failures */
  assert_int_equal(run(out, sizeof out, args), 1);
  assert_null(strstr(out, "reproduce:"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_verdict),
      cmocka_unit_test(test_incident_reproduces),
      cmocka_unit_test(test_not_reproduced),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
