/*
** test_sdk_random_oom.c: rt_sdk_random's streams are made on first use
** (runtime/rt_sdk.c, issue #16); when growing their arrays fails (each
** allocation failed once through rt_inject_target) the call returns 0 and
** keeps nothing half made: the next call draws the same first number as a
** world where nothing failed.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_agent.h"

static sim SIM;
static rt_world *W;

static uint32_t world_with_actor(void) {
  sim_config sc = {7, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&SIM, &sc), 0);
  rt_config_default(&c);
  W = rt_world_new(&SIM, &c);
  assert_non_null(W);
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "r");
  snprintf(sp.cls, sizeof sp.cls, "Agent");
  return rt_actor_add(W, &sp);
}

static void free_world(void) {
  rt_world_free(W);
  sim_free(&SIM);
}

static void test_random_grow_fails(void **st) {
  (void)st;
  /* the draws of a world where nothing fails, and the sites they call */
  uint32_t a = world_with_actor();
  rt_sdk_actor h = {W, a, NULL, 0};
  rt_inject_count();
  uint64_t first = rt_sdk_random(&h);
  rt_inject_off();
  uint64_t second = rt_sdk_random(&h);
  assert_true(first != 0 && first != second);
  const rt_inject_site *view;
  rt_inject_site sites[8];
  int n = 0, all = rt_inject_sites(&view);
  for (int i = 0; i < all && n < 8; i++)
    if (!strcmp(view[i].file, "runtime/rt_sdk.c")) sites[n++] = view[i];
  free_world();
  assert_int_equal(n, 2); /* the streams' realloc and the made flags' realloc */
  for (int i = 0; i < n; i++) {
    a = world_with_actor();
    h = (rt_sdk_actor){W, a, NULL, 0};
    rt_inject_target(sites[i].file, sites[i].line, 1);
    assert_int_equal(rt_sdk_random(&h), 0);
    assert_true(rt_inject_fired());
    rt_inject_off();
    assert_int_equal(rt_sdk_random(&h), first);
    assert_int_equal(rt_sdk_random(&h), second);
    free_world();
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_random_grow_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
