/*
** bench_luaagent.c: what running an agent's code through a Lua script costs
** (issue #13), printed as `name: value unit`. Wall-clock time is read here
** only, never in a run.
**   lua_fiber_lifecycles_per_s   runFiber from a script's method: start,
**                                three fiber:stash of a JSON value, return
**   decl_fiber_lifecycles_per_s  the same lifecycle as a declarative program
**                                (three value stashes) from a workload request
**   lua_callback_overhead_ratio  time per lifecycle through Lua / through the
**                                declarative program, the incarnation's Lua
**                                state already made (target <= 1.5; the
**                                median of 7 interleaved rounds); making the
**                                state is lua_state_new_us (bench_lua.c).
**                                Both sides on the same storage: plain turn
**                                transactions, as every scripted actor has
**                                (held transactions are never used for an
**                                actor with a script, docs/bench.md), so the
**                                figure is the callback path alone
**   decl_fiber_lifecycles_per_s_held, lua_vs_held_decl_ratio
**                                the declarative lifecycle with held
**                                transactions (the default for an actor
**                                without a script), and the script's time over
**                                it: what a scripted actor costs against a
**                                declarative one as each runs by default
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/rt.h"

#define MS(x) ((int64_t)(x) * 1000)
#define N 20000

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char script[] =
    "local A = {}\n"
    "function A:run()\n"
    "  self:runFiber('bench', function(f)\n"
    "    f:stash({pc = 1}) f:stash({pc = 2}) f:stash({pc = 3})\n"
    "  end)\n"
    "end\n"
    "return A\n";

/* Seconds per lifecycle of n, after a first one that wakes the actor (and
** makes its Lua state). lua: through the script, else the program; held:
** held transactions on (they only ever apply to an actor without a script). */
static double lifecycles(int lua, int held, int n) {
  rt_held_txn_set(held);
  rt_step steps[3];
  for (int k = 0; k < 3; k++) {
    memset(&steps[k], 0, sizeof steps[k]);
    steps[k].kind = RT_STEP_STASH;
    steps[k].has_value = 1;
    snprintf(steps[k].name, sizeof steps[k].name, "{\"pc\":%d}", k + 1);
  }
  rt_program p = {"bench", steps, 3};
  rt_actor_spec sp;
  rt_config c;
  sim s;
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "a");
  rt_config_default(&c);
  c.dispose = RT_DISPOSE_FIXED;
  sim_init(&s, &sc);
  s.trace.keep = 0;
  rt_world *w = rt_world_new(&s, &c);
  rt_actor_add(w, &sp);
  if (lua && rt_actor_script(w, 0, "bench.lua", script, sizeof script - 1, NULL)) return -1;
  for (int i = 0; i <= n; i++) {
    int rc = lua ? rt_invoke_at(w, 0, "run", NULL, MS(10) * (i + 1))
                 : rt_fiber_at(w, 0, &p, MS(10) * (i + 1));
    if (rc) return -1;
  }
  sim_run(&s, MS(15), 0); /* the first: wake, startup, the Lua state */
  double t0 = now_s();
  sim_run(&s, MS(10) * (n + 2), 0);
  double dt = now_s() - t0;
  int bad = rt_world_fatal(w)[0] != 0 || rt_count_fiber_rows(w, 0) != 0;
  rt_world_free(w);
  sim_free(&s);
  return bad ? -1 : dt / n;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(void) {
  double lua = 1e9, decl = 1e9, held = 1e9, ratio[7], vs_held[7];
  for (int r = 0; r < 7; r++) { /* rounds interleaved: a busy machine slows both */
    double l = lifecycles(1, 1, N), d = lifecycles(0, 0, N), h = lifecycles(0, 1, N);
    if (l < 0 || d < 0 || h < 0) {
      fprintf(stderr, "bench_luaagent: a run failed\n");
      return 1;
    }
    if (l < lua) lua = l;
    if (d < decl) decl = d;
    if (h < held) held = h;
    ratio[r] = l / d;
    vs_held[r] = l / h;
  }
  qsort(ratio, 7, sizeof ratio[0], cmp_double);
  qsort(vs_held, 7, sizeof vs_held[0], cmp_double);
  printf("lua_fiber_lifecycles_per_s: %.0f 1/s\n", 1.0 / lua);
  printf("decl_fiber_lifecycles_per_s: %.0f 1/s\n", 1.0 / decl);
  printf("decl_fiber_lifecycles_per_s_held: %.0f 1/s\n", 1.0 / held);
  printf("lua_callback_overhead_ratio: %.2f x\n", ratio[3]); /* the median round */
  printf("lua_callback_overhead_target_ratio: %.2f x\n", ratio[3] / 1.5);
  printf("lua_vs_held_decl_ratio: %.2f x\n", vs_held[3]);
  return 0;
}
