/*
** bench_chk_lua.c: the cost of a Lua invariant per trace record, printed
** as `name: value unit`. Wall-clock time is read here only.
**   lua_invariant_ns_per_record  (time of a checker set with one trivial
**        Lua invariant - the same set without it) / records, over 200,000
**        probe records (two fields) appended to a trace (not kept); best
**        of 5
**   lua_invariant_records_per_s  records per second through the set with
**        the Lua invariant
** Both sets hold every built-in checker; the Lua one adds a state whose
** on_record returns at once, so the figure is the price of building the
** read-only record table and starting the callback.
*/
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "checks/chk.h"
#include "checks/chk_lua.h"
#include "runtime/rt_events.h"
#include "sim/sim_trace.h"

#define RECORDS 200000

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char trivial[] =
    "local n = 0\n"
    "revenant.invariant('bench_trivial', {on_record = function(r) n = n + 1 end})\n";

/* Seconds to push RECORDS effect records through a set (with the Lua
** invariant when lua is 1); -1 on failure. */
static double one_round(int lua) {
  sim_trace t;
  char err[512];
  if (sim_trace_init(&t)) return -1;
  t.keep = 0;
  chk_set *c = chk_new(&t, NULL);
  chk_lua_script s = {"bench.lua", trivial, sizeof trivial - 1};
  if (!c || (lua && chk_lua_attach(c, &s, 1, NULL, err, sizeof err))) {
    fprintf(stderr, "bench_chk_lua: %s\n", c ? err : "chk_new failed");
    chk_free(c);
    sim_trace_free(&t);
    return -1;
  }
  uint32_t name = sim_trace_intern(&t, "bench");
  double t0 = now_s();
  for (int i = 0; i < RECORDS; i++) {
    sim_rec r = {.t_us = i, .kind = RT_EV_PROBE, .actor = 0, .a = i % 64, .b = 0, .c = 0, .s = name};
    sim_trace_append(&t, &r);
  }
  double dt = now_s() - t0;
  if (lua && (chk_lua_calls(c) != RECORDS || chk_lua_error(c)[0])) {
    fprintf(stderr, "bench_chk_lua: the invariant ran %llu times: %s\n", (unsigned long long)chk_lua_calls(c),
            chk_lua_error(c));
    dt = -1;
  }
  chk_free(c);
  sim_trace_free(&t);
  return dt;
}

int main(void) {
  double best[2] = {1e9, 1e9};
  for (int round = 0; round < 5; round++)
    for (int lua = 0; lua < 2; lua++) {
      double dt = one_round(lua);
      if (dt < 0) return 1;
      if (dt < best[lua]) best[lua] = dt;
    }
  printf("lua_invariant_ns_per_record: %.0f ns\n", (best[1] - best[0]) / RECORDS * 1e9);
  printf("lua_invariant_records_per_s: %.0f records/s\n", RECORDS / best[1]);
  return 0;
}
