/*
** lua_world.h: the one-simulation world the Lua-agent unit tests build
** (tests/test_luachat.c, tests/test_luatool.c, tests/test_luaagent.c,
** tests/test_luaagent_edges.c) and the trace lookups they share. Include
** after <cmocka.h>; every function is static inline so a test that uses
** only some of them stays warning-free.
*/
#ifndef REVENANT_TESTS_LUA_WORLD_H
#define REVENANT_TESTS_LUA_WORLD_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"
#include "sim/sim.h"

#define MS(x) ((int64_t)(x) * 1000)

typedef struct world {
  sim s;
  rt_world *w;
} world;

/* Starts a kept-trace simulation (seed 1, FIFO) and an empty world with
** the default config; asserts on failure. */
static inline void world_start(world *x) {
  sim_config sc = {1, SIM_FIFO, 3, 1000};
  rt_config c;
  rt_config_default(&c);
  assert_int_equal(sim_init(&x->s, &sc), 0);
  x->s.trace.keep = 1;
  x->w = rt_world_new(&x->s, &c);
  assert_non_null(x->w);
}

/* Adds actor `id` (class `cls`, NULL: none) and asserts it gets index `want`. */
static inline void world_actor(world *x, const char *id, const char *cls, int want) {
  rt_actor_spec sp;
  memset(&sp, 0, sizeof sp);
  snprintf(sp.id, sizeof sp.id, "%s", id);
  if (cls) snprintf(sp.cls, sizeof sp.cls, "%s", cls);
  assert_int_equal(rt_actor_add(x->w, &sp), want);
}

/* Loads `src` as actor 0's script, named agent.lua; asserts it loads. */
static inline void world_script(world *x, const char *src) {
  assert_int_equal(rt_actor_script(x->w, 0, "agent.lua", src, strlen(src), NULL), 0);
}

/* Frees the world and the simulation. */
static inline void done(world *x) {
  rt_world_free(x->w);
  sim_free(&x->s);
}

/* The k-th record (0-based) of `kind`, or NULL. */
static inline const sim_rec *nth(world *x, uint32_t kind, int k) {
  for (size_t i = 0; i < x->s.trace.n; i++)
    if (x->s.trace.recs[i].kind == kind && k-- == 0) return &x->s.trace.recs[i];
  return NULL;
}

/* The string s of the k-th record of `kind`, or NULL. */
static inline const char *str_of(world *x, uint32_t kind, int k) {
  const sim_rec *r = nth(x, kind, k);
  return r ? sim_trace_str(&x->s.trace, r->s) : NULL;
}

/* The second string s2 of the k-th record of `kind`, or NULL. */
static inline const char *str2_of(world *x, uint32_t kind, int k) {
  const sim_rec *r = nth(x, kind, k);
  return r ? sim_trace_str(&x->s.trace, r->s2) : NULL;
}

/* How many records of `kind` the trace holds. */
static inline int count_kind(world *x, uint32_t kind) {
  int n = 0;
  for (size_t i = 0; i < x->s.trace.n; i++) n += x->s.trace.recs[i].kind == kind;
  return n;
}

#endif
