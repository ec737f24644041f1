/*
** rt_lua_modules.c: the process's store of Lua modules (rt_lua.h): every
** file a state reads with require, dofile or loadfile, and the copies a
** repro file embeds ("modules", docs/scenarios.md).
**
** A state looks a module up by (its script folder, the relative path)
** before it reads the file, and keeps what it read, so every run of the
** process loads the same text, and the scenario layer can write the texts
** the runs loaded into a repro file. Entries are appended, never removed
** (a later entry for the same folder and path wins: an embedded copy
** replaces what was read), and freed when the process exits. One thread.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation calls */
#include "runtime/rt_lua.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rt_lua_module **mods;
static int n_mods, cap_mods;

static void mods_free(void) {
  for (int i = 0; i < n_mods; i++) {
    free((char *)mods[i]->dir);
    free((char *)mods[i]->rel);
    free((char *)mods[i]->text);
    free((char *)mods[i]->origin);
    free(mods[i]);
  }
  free(mods);
  mods = NULL;
  n_mods = cap_mods = 0;
}

uint64_t rt_lua_text_hash(const char *text, size_t len) {
  uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a, as scenario scripts */
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)text[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

static char *dup_n(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

const rt_lua_module *rt_lua_module_find(const char *dir, const char *rel) {
  for (int i = n_mods - 1; dir && rel && i >= 0; i--)
    if (!strcmp(mods[i]->dir, dir) && !strcmp(mods[i]->rel, rel)) return mods[i];
  return NULL;
}

const rt_lua_module *rt_lua_module_keep(const char *dir, const char *rel, const char *text, size_t len,
                                        const char *origin, int embedded, char *err, size_t errlen) {
  if (!dir || !rel || !text) {
    snprintf(err, errlen, "module: no folder, path or text");
    return NULL;
  }
  if (len > RT_LUA_MODULE_MAX) {
    snprintf(err, errlen, "%s: too large (%zu bytes; a module is at most %d bytes, so that a repro "
             "file can carry it)", rel, len, RT_LUA_MODULE_MAX);
    return NULL;
  }
  const rt_lua_module *old = rt_lua_module_find(dir, rel);
  if (old && old->len == len && !memcmp(old->text, text, len) && old->embedded == embedded) return old;
  if (n_mods == cap_mods) {
    int nc = cap_mods ? cap_mods * 2 : 16;
    rt_lua_module **nm = realloc(mods, (size_t)nc * sizeof *nm);
    if (!nm) goto oom;
    if (!mods) atexit(mods_free);
    mods = nm;
    cap_mods = nc;
  }
  rt_lua_module *m = calloc(1, sizeof *m);
  if (!m) goto oom;
  m->dir = dup_n(dir, strlen(dir));
  m->rel = dup_n(rel, strlen(rel));
  m->text = dup_n(text, len);
  m->origin = dup_n(origin ? origin : "", origin ? strlen(origin) : 0);
  if (!m->dir || !m->rel || !m->text || !m->origin) {
    free((char *)m->dir);
    free((char *)m->rel);
    free((char *)m->text);
    free((char *)m->origin);
    free(m);
    goto oom;
  }
  m->len = len;
  m->hash = rt_lua_text_hash(text, len);
  m->embedded = embedded;
  mods[n_mods++] = m;
  return m;
oom:
  snprintf(err, errlen, "%s: out of memory keeping the module", rel);
  return NULL;
}

int rt_lua_module_count(void) { return n_mods; }

const rt_lua_module *rt_lua_module_at(int i) {
  if (i < 0 || i >= n_mods) return NULL;
  const rt_lua_module *m = mods[i];
  return rt_lua_module_find(m->dir, m->rel) == m ? m : NULL; /* a later one replaced it */
}
