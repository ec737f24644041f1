/*
** chk_lua.h: user invariants written in Lua (issue #13 item 3).
**
** A scenario's `invariants` scripts run in one sandboxed Lua state
** (runtime/rt_lua.h) that lives for the whole run: it is the observer, not
** an actor, so no eviction or crash throws it away. A script registers
** named invariants while its main chunk runs:
**
**   revenant.invariant("charged_once", {
**     kinds = {"effect"},                      -- optional filter
**     on_record = function(r) ... end,         -- every (matching) record
**     on_finish = function() ... end,          -- once, at the end
**   })
**
** and reports with revenant.violate(message, r1, r2, ...), naming the
** records that show it (their trace indices become the chain). Each record
** is a read-only table with the field names of docs/trace.md (the field
** table of runtime/rt_schema.h): kind, at (µs), actor, index, and the
** kind's own fields. A user invariant gets a number from
** chk_invariant_intern, so it appears in expectations, signatures, shrink
** and every report like a built-in one (docs/scripting.md).
*/
#ifndef CHK_LUA_H
#define CHK_LUA_H

#include <stddef.h>
#include <stdint.h>

#include "checks/chk.h"

#define CHK_LUA_MAX_SCRIPTS 8
#define CHK_LUA_MAX_INVARIANTS 15   /* per scenario (its masks are 32 bits with the built-ins) */

/* One script: its name in messages (the path as the scenario resolves it,
** e.g. "scenarios/examples/charged_once.lua") and its text. */
typedef struct chk_lua_script {
  const char *name;
  const char *text;
  size_t len;
} chk_lua_script;

typedef struct chk_lua_opts {
  const char *dir;          /* folder for require/dofile (the scenario's), or NULL */
  uint64_t instr_budget;    /* VM instructions per callback; 0: rt_lua's default */
  size_t mem_cap;           /* bytes for the state; 0: rt_lua's default */
} chk_lua_opts;

/* Runs the main chunks of the n scripts, in order, in a fresh state and
** writes the names of the invariants they register into names (in the
** order registered, at most max). Returns the count, or -1 with the reason
** in err: a syntax or runtime error ("file:line: reason" and a traceback),
** a budget or memory cap, a bad revenant.invariant call, a name registered
** twice. Used when a scenario loads, so that its expectations can name
** them. */
int chk_lua_probe(const chk_lua_script *s, int n, const chk_lua_opts *o,
                  char (*names)[CHK_NAME_MAX], int max, char *err, size_t errlen);

/* Makes the run's state, runs the scripts' main chunks and registers the
** Lua checker in c (after the built-in ones). Every name a script
** registers is interned (chk_invariant_intern). Returns 0, or -1 with the
** reason in err (as chk_lua_probe, or out of memory). */
int chk_lua_attach(chk_set *c, const chk_lua_script *s, int n, const chk_lua_opts *o,
                   char *err, size_t errlen);

/* The error that stopped the Lua invariants of c during the run: "invariant
** NAME: file:line: reason" and a traceback; "" when none (or no Lua
** checker). After such an error no Lua callback runs again in the run. */
const char *chk_lua_error(const chk_set *c);

/* Records the Lua invariants were called on so far (for make bench). */
uint64_t chk_lua_calls(const chk_set *c);

#endif
