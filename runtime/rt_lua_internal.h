/*
** rt_lua_internal.h: what rt_lua.c (the state: allocator, identities,
** budgets, coroutines, errors) shares with rt_lua_lib.c (the sandboxed
** library: ordered pairs, tostring, sort, random, load, require, stubs).
** Not for other files.
*/
#ifndef RT_LUA_INTERNAL_H
#define RT_LUA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

#include "runtime/rt_lua.h"

#define RT__LUA_ERR_MAX 8192

/* Every block Lua holds is preceded by this many bytes: its creation
** serial (tables, functions, threads) or 0 (rt_lua.c). */
#define RT__LUA_HDR 8

/* Small blocks (up to RT__LUA_BLK_STEP * RT__LUA_BLK_CLASSES bytes) are
** kept on per-state free lists by size class when Lua frees them. */
#define RT__LUA_BLK_STEP 16
#define RT__LUA_BLK_CLASSES 16

/* Address -> creation serial of light C functions, which have no block
** (an open-addressing map, looked up by exact address, never iterated). */
typedef struct rt__lua_ids {
  uintptr_t *key;    /* 0 = empty slot */
  uint64_t *val;
  size_t cap;        /* power of two, or 0 */
  size_t n;
} rt__lua_ids;

/* A running slice (rt_lua.c run_slice): its coroutine, and the state of
** the slice around it (or the host's), restored when it ends. */
struct rt_lua_slice {
  lua_State *L;
  uint64_t used;
  int in_script, abort, refused;
  struct rt_lua_slice *prev;
};

struct rt_lua {
  /* hot: read on every allocation and every slice (one or two cache lines;
  ** the 8 KB message buffer used to sit between these and the free lists) */
  lua_State *L;
  uint64_t budget;         /* instructions per resume slice */
  uint64_t used;           /* charged in the current slice */
  size_t cap;              /* memory cap, bytes */
  size_t mem;              /* bytes held now */
  uint64_t serial;         /* last creation serial given */
  int period;              /* hook period, instructions */
  int in_script;           /* 1 while a slice runs: the cap is strict */
  int refused;             /* the last growing allocation was refused */
  int abort;               /* 0, RT_LUA_ERR_BUDGET or RT_LUA_ERR_MEMORY */
  rt_lua_slice *slice;     /* the innermost running slice, NULL between slices */
  void *blocks[RT__LUA_BLK_CLASSES]; /* freed small blocks by size class (rt_lua.c) */
  size_t cached;           /* bytes in those lists */
  int npool;
  int pool[32];            /* registry refs of finished coroutines to reuse */
  lua_State *pool_L[32];   /* their threads (anchored by those refs) */
  /* the rest */
  rt_lua_host host;
  char *dir;               /* realpath of the script folder, or NULL */
  rt__lua_ids ids;
  uint64_t serial_base;    /* serials <= base: the sandbox's own objects */
  sim_rng own;             /* math.randomseed(n)'s private stream */
  int own_on;
  char escape[512];        /* the first sandbox refusal ("" none) */
  char err[RT__LUA_ERR_MAX];
};

/* The rt_lua that owns L (any of its threads). */
rt_lua *rt__lua_of(lua_State *L);

/* Creation serial of the value at idx if it is a table, function or
** thread; 0 for other types. A light C function that was never seen gets
** the next serial now. */
uint64_t rt__lua_serial(lua_State *L, int idx);

/* Charges n instructions of work done in C to the current slice; raises
** the budget error when the budget is spent. */
void rt__lua_charge(lua_State *L, uint64_t n);

/* Raises the pending abort (budget or memory) if there is one. */
void rt__lua_check_abort(lua_State *L);

/* Draws 64 bits from the host stream (or math.randomseed's own stream when
** own != 0); raises a clear error when the host gave none. */
uint64_t rt__lua_random64(lua_State *L, int own);

/* Installs the sandboxed library into L's globals (after the standard
** libraries base, coroutine, table, string, math, utf8 are open). Runs in
** protected mode; raises on failure. */
void rt__lua_lib_install(lua_State *L);

/* Pushes the sandbox's tostring of the value at idx (no addresses). */
const char *rt__lua_tostring(lua_State *L, int idx, size_t *len);

/* Reads `relpath` inside the script folder after checking it (relative,
** no "..", ends in .lua, stays inside after symlinks), compiles it as text
** and pushes the function. Returns LUA_OK, or an error status with the
** message pushed (LUA_ERRFILE for a refused or unreadable path). */
int rt__lua_loadfile(lua_State *L, const char *relpath);

/* Where the Lua text of a file's bytes starts, as the stand-alone lua reads
** a file (luaL_loadfilex): past a UTF-8 byte order mark, and past a first
** line that starts with '#' (a shebang), its newline kept so that line
** numbers stay those of the file. */
size_t rt__lua_text_start(const char *src, size_t len);

#endif
