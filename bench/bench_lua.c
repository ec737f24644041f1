/*
** bench_lua.c: figures of the sandboxed Lua state (runtime/rt_lua.h),
** printed as `name: value unit`. Wall-clock time is read here only.
**   lua_state_new_us     rt_lua_new: one sandboxed state, as made for every
**                        actor incarnation (best of 5 rounds of 500)
**   lua_state_bytes      memory a fresh state holds (rt_lua_mem_used)
**   lua_callback_us      start a small callback as a coroutine and run it to
**                        its end on a ready state (best of 5 rounds)
*/
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <lua.h>

#include "runtime/rt_lua.h"

#define ROUND 500

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t fixed_random(void *ctx) {
  (void)ctx;
  return 0x9e3779b97f4a7c15ULL;
}

static int64_t fixed_now(void *ctx) {
  (void)ctx;
  return 0;
}

static const rt_lua_config config = {{NULL, fixed_now, fixed_random, NULL, NULL}, NULL, 0, 0};

/* Seconds per rt_lua_new (the states are freed outside the timing). */
static double state_new_round(void) {
  static rt_lua *states[ROUND];
  double t0 = now_s();
  for (int i = 0; i < ROUND; i++) states[i] = rt_lua_new(&config, NULL, 0);
  double dt = now_s() - t0;
  for (int i = 0; i < ROUND; i++) {
    if (!states[i]) return -1;
    rt_lua_free(states[i]);
  }
  return dt / ROUND;
}

/* Seconds per callback: a function with a loop, a table and pairs. */
static double callback_round(rt_lua *x, int n) {
  static const char src[] =
      "return function(k) local t = {a = k, b = 2} local s = 0 "
      "for _, v in pairs(t) do s = s + v end return s end";
  lua_State *L = rt_lua_L(x);
  rt_lua_co co;
  if (rt_lua_load(x, "bench.lua", src, sizeof src - 1) != RT_LUA_DONE) return -1;
  if (rt_lua_start(x, 0, &co) != RT_LUA_DONE) return -1;
  lua_xmove(co.L, L, 1);
  rt_lua_co_release(x, &co);
  double t0 = now_s();
  for (int i = 0; i < n; i++) {
    lua_pushvalue(L, -1);
    lua_pushinteger(L, i);
    if (rt_lua_start(x, 1, &co) != RT_LUA_DONE) return -1;
    rt_lua_co_release(x, &co);
  }
  double dt = now_s() - t0;
  lua_pop(L, 1);
  return dt / n;
}

int main(void) {
  double best = 1e9, cb = 1e9;
  for (int r = 0; r < 5; r++) {
    double t = state_new_round();
    if (t < 0) {
      fprintf(stderr, "bench_lua: rt_lua_new failed\n");
      return 1;
    }
    if (t < best) best = t;
  }
  rt_lua *x = rt_lua_new(&config, NULL, 0);
  if (!x) return 1;
  size_t bytes = rt_lua_mem_used(x);
  for (int r = 0; r < 5; r++) {
    double t = callback_round(x, 20000);
    if (t < 0) {
      fprintf(stderr, "bench_lua: callback failed: %s\n", rt_lua_error(x));
      return 1;
    }
    if (t < cb) cb = t;
  }
  rt_lua_free(x);
  printf("lua_state_new_us: %.1f us\n", best * 1e6);
  printf("lua_state_bytes: %zu bytes\n", bytes);
  printf("lua_callback_us: %.2f us\n", cb * 1e6);
  return 0;
}
