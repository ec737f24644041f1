/*
** test_park.c: idle databases of large worlds are parked as serialized
** images (runtime/rt_storage.c, rt__db_park: worlds of more than 64 actors)
** and opened again from the image on the next access. Parking changes
** memory only: a schedule stored before an idle eviction fires from the
** parked database with the same trace as in a world that keeps its
** connections open (issue #16 item 7: no test had more than 64 actors).
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_host.h"

#define S(x) ((int64_t)(x) * 1000000)

/* Actor 0 of an n-actor world stores a one-shot schedule for 400 s, goes
** idle and is evicted; the alarm wakes it at 400 s. Returns the trace hash;
** *parked says whether its database was an image at 300 s; *ran counts the
** schedule's runs. */
static uint64_t run_world(uint32_t n, int *parked, int *ran, int *idle) {
  sim s;
  sim_config sc = {9, SIM_FIFO, 3, 1000};
  rt_config c;
  assert_int_equal(sim_init(&s, &sc), 0);
  rt_config_default(&c);
  rt_world *w = rt_world_new(&s, &c);
  assert_non_null(w);
  for (uint32_t i = 0; i < n; i++) {
    rt_actor_spec sp;
    memset(&sp, 0, sizeof sp);
    snprintf(sp.id, sizeof sp.id, "a%u", i);
    assert_int_equal(rt_actor_add(w, &sp), i);
  }
  assert_int_equal(rt_schedule_at(w, 0, "tick", S(399), 0, S(1)), 0);
  sim_run(&s, S(300), 0);
  *parked = w->actors[0].store.img != NULL;
  sim_run(&s, S(600), 0);
  *ran = *idle = 0;
  for (size_t i = 0; i < s.trace.n; i++) {
    const sim_rec *r = &s.trace.recs[i];
    if (r->kind == RT_EV_SCHEDULE_RUN && !strcmp(sim_trace_str(&s.trace, r->s), "tick")) (*ran)++;
    if (r->kind == RT_EV_ACTOR_DEATH && r->a == RT_DEATH_IDLE && r->t_us < S(300)) (*idle)++;
  }
  uint64_t h = s.trace.hash;
  rt_world_free(w);
  sim_free(&s);
  return h;
}

static void test_parked_database_same_run(void **st) {
  int parked_small, parked_large, ran_small, ran_large, idle_small, idle_large;
  (void)st;
  uint64_t small = run_world(64, &parked_small, &ran_small, &idle_small);
  uint64_t large = run_world(65, &parked_large, &ran_large, &idle_large);
  assert_int_equal(idle_small, 1);
  assert_int_equal(idle_large, 1);
  assert_int_equal(parked_small, 0); /* 64 actors: connections stay open */
  assert_int_equal(parked_large, 1); /* 65: the idle database is an image */
  assert_int_equal(ran_small, 1);
  assert_int_equal(ran_large, 1);  /* the stored row survived the image */
  assert_true(small == large);     /* untouched actors leave no record */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parked_database_same_run),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
