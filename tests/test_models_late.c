/*
** test_models_late.c: the composition root refuses, for the rest of the
** process, when the models cannot register (runtime/rt_models.c, issue #16):
** here the storage template was built before any model registered its
** tables, so no store module may join it. rt_world_new and
** rt_storage_prepare then fail every time, never half register. A process
** of its own (the registration is once per process).
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_agent.h"

static void test_register_after_template_fails(void **st) {
  (void)st;
  sim s;
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(rt__store_template(), 0); /* no model registered yet */
  assert_int_equal(sim_init(&s, &sc), 0);
  rt_config_default(&c);
  assert_null(rt_world_new(&s, &c));
  assert_null(rt_world_new(&s, &c)); /* the failure is kept */
  assert_int_equal(rt_storage_prepare(), -1);
  sim_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_register_after_template_fails),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
