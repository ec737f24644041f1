/*
** rt_lua.h: a deterministic, sandboxed Lua 5.4 state for user scripts.
**
** One state per actor incarnation: the agent layer makes a state when an
** incarnation starts and throws it away (rt_lua_free) when the incarnation
** ends by eviction, restart, crash or SIGKILL, as workerd throws away an
** isolate's memory. Globals, upvalues and pending coroutines never survive;
** only what the script wrote to storage does.
**
** Inside the state (docs/scripting.md has the full rules):
** - order: `pairs`/`next` visit keys in a defined order (numbers ascending,
**   strings by bytes, false, true, then tables/functions/coroutines by their
**   creation serial); `tostring` and `string.format` show serials, never
**   addresses; `table.sort` is a stable merge sort;
** - randomness: `math.random` and `revenant.random` draw from the host's
**   stream; there is no clock but `revenant.now()` (the host's virtual time);
** - sandbox: no io, os, debug, package, collectgarbage, string.dump, binary
**   chunks, finalizers or weak tables; `require`/`dofile`/`loadfile` read
**   only .lua text files inside the host's script folder;
** - budgets: every resume slice of a callback may run `instr_budget` VM
**   instructions and the state may hold `mem_cap` bytes; either ends the
**   callback with RT_LUA_ERR_BUDGET / RT_LUA_ERR_MEMORY, whatever pcall the
**   script wraps around it.
**
** Callbacks run as coroutines so that the host can suspend them: the host
** starts one (rt_lua_start), the script yields values (coroutine.yield),
** the host resumes it later with values (rt_lua_resume).
*/
#ifndef RT_LUA_H
#define RT_LUA_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "sim/sim_rng.h"

#define RT_LUA_DEFAULT_INSTR 10000000ULL     /* VM instructions per slice */
#define RT_LUA_DEFAULT_MEM (64u * 1024 * 1024) /* bytes per state */

/* Outcome of rt_lua_load*, rt_lua_start and rt_lua_resume. */
typedef enum rt_lua_rc {
  RT_LUA_DONE = 0,           /* the callback returned; results on co->L */
  RT_LUA_YIELDED = 1,        /* the callback yielded; values on co->L */
  RT_LUA_ERR_RUN = -1,       /* error() or a runtime error */
  RT_LUA_ERR_BUDGET = -2,    /* instruction budget exceeded */
  RT_LUA_ERR_MEMORY = -3,    /* memory cap exceeded */
  RT_LUA_ERR_SYNTAX = -4,    /* the chunk does not compile */
  RT_LUA_ERR_FILE = -5,      /* a script file is missing or refused */
  RT_LUA_ERR_USAGE = -6      /* host misuse (dead coroutine, bad stack) */
} rt_lua_rc;

/* What the host lends the state. Every field may be NULL/0; a script that
** uses a missing service gets a clear error. */
typedef struct rt_lua_host {
  void *ctx;                                  /* passed to the callbacks */
  int64_t (*now_us)(void *ctx);               /* virtual time, µs */
  uint64_t (*random64)(void *ctx);            /* 64 random bits */
  sim_rng *rng;                               /* used when random64 is NULL;
                                                 borrowed, outlives the state */
  void (*log)(void *ctx, const char *msg, size_t len); /* revenant.log, print */
} rt_lua_host;

typedef struct rt_lua_config {
  rt_lua_host host;
  const char *script_dir;   /* folder for require/dofile/loadfile; NULL:
                               all three refused. Copied. */
  uint64_t instr_budget;    /* per resume slice; 0: RT_LUA_DEFAULT_INSTR */
  size_t mem_cap;           /* bytes; 0: RT_LUA_DEFAULT_MEM */
} rt_lua_config;

typedef struct rt_lua rt_lua;

/* A callback running as a coroutine. `L` is its thread: after DONE it holds
** the `nres` results, after YIELDED the `nres` yielded values (read them
** with the Lua API at -nres..-1). Owned by the caller's storage; the thread
** is anchored in the state until rt_lua_co_release. */
typedef struct rt_lua_co {
  lua_State *L;
  int ref;      /* registry anchor, LUA_NOREF when released */
  int nres;
  int status;   /* last rt_lua_rc */
} rt_lua_co;

/* Makes a sandboxed state. Returns NULL on failure with the reason in err
** (may be NULL). The caller frees it with rt_lua_free. */
rt_lua *rt_lua_new(const rt_lua_config *cfg, char *err, size_t errlen);

/* Closes the state and everything in it (pending coroutines included).
** NULL is allowed. */
void rt_lua_free(rt_lua *x);

/* The main thread, for the host to push functions and arguments and to
** read globals. Host pushes must stay small (they run unprotected). A light
** C function the host adds after rt_lua_new gets its serial only when a
** script first shows or orders it; push host functions as C closures (with
** an upvalue) to number them when they are made. */
lua_State *rt_lua_L(rt_lua *x);

/* Compiles a text chunk named `name` (shown in errors as name:line) and
** pushes it as a function on the main thread. Binary chunks are refused.
** Returns RT_LUA_DONE, or RT_LUA_ERR_SYNTAX / RT_LUA_ERR_MEMORY with nothing
** pushed and the message in rt_lua_error. */
int rt_lua_load(rt_lua *x, const char *name, const char *src, size_t len);

/* The same for `relpath` inside the script folder (same rules as dofile):
** RT_LUA_ERR_FILE when the path is refused or cannot be read. */
int rt_lua_load_file(rt_lua *x, const char *relpath);

/* Starts a callback: pops a function and `nargs` arguments above it from
** the main thread, runs it as a new coroutine until it returns, yields or
** fails. Fills *co (any previous content is ignored). Returns an rt_lua_rc;
** on an error the message (file:line, reason, traceback) is in rt_lua_error
** and co->L holds nothing useful. Release *co with rt_lua_co_release. */
int rt_lua_start(rt_lua *x, int nargs, rt_lua_co *co);

/* Resumes a yielded callback: drops the values it yielded, pops `nargs`
** values from the main thread and passes them as the results of its
** coroutine.yield. Returns an rt_lua_rc like rt_lua_start; RT_LUA_ERR_USAGE
** when co is not suspended. A fresh instruction budget starts. */
int rt_lua_resume(rt_lua *x, rt_lua_co *co, int nargs);

/* A slice the host runs (rt_lua_start, rt_lua_resume), as seen from a C
** function that the script calls in it. */
typedef struct rt_lua_slice rt_lua_slice;

/* For a C function called by a script: when L is the coroutine of the
** slice the host is running (not a coroutine the script made), ends that
** slice here as a yield would (its instruction count and flags go back to
** the host, or to the slice around it) and returns it; NULL otherwise, with
** nothing changed. The host may then start or resume other coroutines; the
** C function must call rt_lua_slice_resume before it returns to L. */
rt_lua_slice *rt_lua_slice_pause(rt_lua *x, lua_State *L);

/* Starts slice s again as rt_lua_resume would: a fresh instruction budget
** and hook count, no error, the strict memory cap. */
void rt_lua_slice_resume(rt_lua *x, rt_lua_slice *s);

/* Pushes t[k] on L (t at index idx of L; L is x's main thread or a
** coroutine of x that is not running) as a script would read it. A value the table holds itself is read raw (no script runs); a
** missing one goes through the metatable's __index, if any, as a slice of
** its own: protected, with a fresh instruction budget and the memory cap,
** charged to the slice around it. Returns the value's Lua type, or
** RT_LUA_ERR_RUN / RT_LUA_ERR_BUDGET / RT_LUA_ERR_MEMORY with nothing pushed
** and the message in rt_lua_error (a host look-up of a script's callback:
** an __index that throws or loops must not abort the process). */
int rt_lua_getfield(rt_lua *x, lua_State *L, int idx, const char *k);

/* Unanchors the coroutine (its memory goes back at the next collection).
** A coroutine that returned (RT_LUA_DONE) is kept, up to 32, and its
** thread runs a later rt_lua_start (coroutine.running() may then show the
** same identity for two callbacks one after the other). Idempotent. */
void rt_lua_co_release(rt_lua *x, rt_lua_co *co);

/* The message of the last failure ("" if none): "file:line: reason" and,
** for runtime, budget and memory errors, a "stack traceback:" section.
** Valid until the next call on x. */
const char *rt_lua_error(const rt_lua *x);

/* The first sandbox refusal the state met ("" if none), as
** "file:line: os.execute is refused by the revenant sandbox (...)": an
** attempt to reach past the sandbox (os, io, debug, package, string.dump,
** binary chunks, files or modules outside the script folder), kept even
** when the script caught the error. */
const char *rt_lua_escape(const rt_lua *x);

/* Bytes the state holds now (Lua's blocks and the identity map). */
size_t rt_lua_mem_used(const rt_lua *x);

/* "Lua 5.4.x": the release built against, after checking that the library
** linked at run time has the same version number ("Lua version mismatch"
** otherwise). */
const char *rt_lua_release(void);

/* VM instructions charged to the current or last resume slice (counted in
** steps of the hook period, at most 1,000). */
uint64_t rt_lua_instr_used(const rt_lua *x);

/* ---- modules (rt_lua_modules.c) ----------------------------------------
** The process keeps every module a state reads (require, dofile, loadfile)
** by its state's script folder (a real path) and its relative path; a state
** looks there before it reads the file, so all runs of the process load the
** same text, and a repro file can embed what the runs loaded. A repro's
** embedded copies are kept the same way (embedded = 1) under the folder of
** the repro, so require finds them first. */

#define RT_LUA_MODULE_MAX (1024 * 1024) /* bytes of one module */

typedef struct rt_lua_module {
  const char *dir;      /* the states' script folder (realpath) */
  const char *rel;      /* the path below it, e.g. "lib/util.lua" */
  const char *text;     /* NUL-terminated */
  size_t len;
  uint64_t hash;        /* rt_lua_text_hash of the text */
  const char *origin;   /* the file it was read from ("" unknown) */
  int embedded;         /* 1: a repro file's copy */
} rt_lua_module;

/* FNV-1a 64 of text[0..len): the hash repro files write for scripts. */
uint64_t rt_lua_text_hash(const char *text, size_t len);

/* The module kept for (dir, rel), the latest one; NULL if none. */
const rt_lua_module *rt_lua_module_find(const char *dir, const char *rel);

/* Keeps a copy of text as module (dir, rel); it replaces an earlier one
** for the rest of the process. Returns it, or NULL with the reason in err
** (larger than RT_LUA_MODULE_MAX, out of memory). */
const rt_lua_module *rt_lua_module_keep(const char *dir, const char *rel, const char *text, size_t len,
                                        const char *origin, int embedded, char *err, size_t errlen);

/* Entries kept so far; entry i, or NULL when a later one replaced it. */
int rt_lua_module_count(void);
const rt_lua_module *rt_lua_module_at(int i);

/* ---- JSON (rt_lua_json.c) ----------------------------------------------
** Encodes the value at idx and pushes the JSON text: keys sorted by bytes,
** tables with keys exactly 1..n as arrays, {} for an empty table. Raises a
** Lua error naming what JSON cannot carry (integers beyond 2^53, NaN,
** infinities, functions, coroutines, non-string keys, nesting past 64):
** call it from a running script or under lua_pcall. Returns 1. */
int rt_lua_json_encode(lua_State *L, int idx);

/* The same text without making a Lua string: a NUL-terminated buffer the
** process keeps (valid until the next encode), its length in *len. */
const char *rt_lua_json_text(lua_State *L, int idx, size_t *len);

/* Pushes the Lua value of JSON text s[0..n): objects and arrays as tables
** (arrays from 1), null as nil, integers within 2^53 as integers. On a
** syntax error pushes nil and returns -1; else 0. Raises only on memory. */
int rt_lua_json_decode(lua_State *L, const char *s, size_t n);

/* Whether text (n bytes) is text a JSON string carries unchanged: no NUL
** byte and well-formed UTF-8 (shortest forms, no surrogates). 0, or -1 with
** the 1-based *line and the value of the first offending *byte. Scripts and
** modules are checked so, as repro files embed them as JSON strings. */
int rt_lua_text_check(const char *text, size_t n, int *line, unsigned *byte);

#endif
