/*
** scn_load_script.c: an actor's "script" field (issue #13; docs/scripting.md
** and docs/scenarios.md "Scripted actors").
**
** "script": "agent.lua" names a Lua file resolved relative to the scenario
** file's folder; "script": {"name", "text", "hash", "file"} carries the text
** inline (what repro files and shrink output write, so that they run from
** any folder). The script is compiled and its main chunk run once in a
** throwaway sandboxed state to check it: a syntax error (name:line), a
** failing chunk, a chunk that does not return a table, or a callback name
** that looks like the SDK's but is not one is an error at the field.
*/
#include <lauxlib.h>
#include <libgen.h>

#include "runtime/rt_lua.h"
#include "scenarios/scn_internal.h"
#include "scenarios/scn_load_internal.h"

/* The SDK callbacks a script may define, and those it may not yet (the
** runtime does not call them for scripts). */
static const char *const wired[] = {"onStart", "onFiberRecovered",
                                    "onAlarm", "onChatRecovery", /* luachat */
                                    "onAgentToolFinish",         /* luatool */
                                    NULL};
static const char *const sdk_callbacks[] = {
    "onStart",   "onFiberRecovered", "onChatRecovery", "onAgentToolFinish", "onRequest",
    "onConnect", "onMessage",        "onClose",        "onError",           "onAlarm",
    "onEmail",   "onStateUpdate",    "onFiberComplete", NULL};


static int in_list(const char *s, const char *const *l) {
  for (; *l; l++)
    if (!strcmp(s, *l)) return 1;
  return 0;
}

static int read_script(const char *path, char **text, size_t *len) {
  FILE *f = scn_fopen_read(path);
  if (!f) return -1;
  char *buf = malloc(SCN_MAX_AGENT_SCRIPT_BYTES + 1);
  size_t n = buf ? fread(buf, 1, SCN_MAX_AGENT_SCRIPT_BYTES + 1, f) : 0;
  fclose(f);
  if (!buf || n > SCN_MAX_AGENT_SCRIPT_BYTES) {
    free(buf);
    errno = buf ? EFBIG : ENOMEM;
    return -1;
  }
  buf[n] = 0;
  *text = buf;
  *len = n;
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A growing list of names (pointers into the throwaway Lua state). */
typedef struct {
  const char **v;
  int n, cap;
} name_list;

/* Appends k; 0, or -1 out of memory. */
static int name_add(name_list *l, const char *k) {
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 64;
    const char **v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = k;
  return 0;
}

/* Adds to l every string key with a function value of the table at index
** t, then of the tables its metatable's __index chain leads to (a script
** whose table inherits from a base table, as `class A extends Base`
** ports), at most 8 levels: the runtime finds those methods too
** (lua_getfield). No limit on their number. Leaves the stack as it was;
** 0, or -1 out of memory. */
static int callback_names(lua_State *T, int t, name_list *l) {
  lua_pushvalue(T, t);
  for (int level = 0; level < 8 && lua_istable(T, -1); level++) {
    int tab = lua_gettop(T);
    lua_pushnil(T);
    while (lua_next(T, tab)) { /* lua_next order: sorted by the caller */
      if (lua_type(T, -2) == LUA_TSTRING && lua_isfunction(T, -1) && name_add(l, lua_tostring(T, -2))) {
        lua_settop(T, tab - 1); /* as it was: tab is always the slot above the caller's top */
        return -1;
      }
      lua_pop(T, 1);
    }
    if (!lua_getmetatable(T, tab)) break;
    lua_pushliteral(T, "__index"); /* raw, as Lua reads a metamethod */
    lua_rawget(T, -2);
    lua_remove(T, -2);  /* the metatable */
    lua_remove(T, tab); /* the table walked */
  }
  lua_pop(T, 1);
  return 0;
}

/* s->fns: the n names (sorted, distinct) one after another, each with its
** NUL; 0, or -1 out of memory. */
static int keep_names(scn_actor_script *s, const char *const *names, int n) {
  size_t len = 1;
  for (int i = 0; i < n; i++) len += strlen(names[i]) + 1;
  char *p = malloc(len);
  if (!p) return -1;
  free(s->fns);
  s->fns = p;
  s->n_fns = n;
  for (int i = 0; i < n; i++) {
    size_t k = strlen(names[i]) + 1;
    memcpy(p, names[i], k);
    p += k;
  }
  *p = 0;
  return 0;
}

/* The checks of check_callbacks over the names (n of them, sorted here;
** duplicates dropped); keeps them in s->fns. 0 or an error. */
static int check_names(ld *L, const cJSON *node, scn_actor_script *s, rt_lua *x, lua_State *T, int t,
                       const char **names, int n) {
  int m = 0;
  if (n) qsort(names, (size_t)n, sizeof names[0], cmp_str);
  for (int i = 0; i < n; i++) /* a name the table and a base both define, once */
    if (!m || strcmp(names[m - 1], names[i])) names[m++] = names[i];
  n = m;
  for (int i = 0; wired[i]; i++) { /* a callback that is not a function would be skipped */
    int ty = rt_lua_getfield(x, T, t, wired[i]); /* an __index that throws is an error */
    if (ty < 0)
      return scn_errf(L->err, L->d, node, "script %s: looking up the callback %s: %s", s->name,
                      wired[i], rt_lua_error(x));
    lua_pop(T, 1);
    if (ty != LUA_TNIL && ty != LUA_TFUNCTION)
      return scn_errf(L->err, L->d, node, "script %s: callback \"%s\" must be a function, not %s",
                      s->name, wired[i], lua_typename(T, ty));
  }
  for (int i = 0; i < n; i++) {
    const char *k = names[i];
    int looks = k[0] == 'o' && k[1] == 'n' && k[2] >= 'A' && k[2] <= 'Z';
    const char *best = scn_suggest(k, sdk_callbacks);
    if ((looks || best) && !in_list(k, sdk_callbacks))
      return best ? scn_errf(L->err, L->d, node, "script %s: unknown callback \"%s\"; did you "
                             "mean \"%s\"?", s->name, k, best)
                  : scn_errf(L->err, L->d, node, "script %s: unknown callback \"%s\" (SDK "
                             "callbacks scripts may define: onStart, onFiberRecovered, onAlarm, "
                             "onChatRecovery, onAgentToolFinish)", s->name, k);
    if (in_list(k, sdk_callbacks) && !in_list(k, wired))
      return scn_errf(L->err, L->d, node, "script %s: callback \"%s\" is not called for scripts "
                      "yet (scripts may define onStart, onFiberRecovered, onAlarm, onChatRecovery, "
                      "onAgentToolFinish, methods and schedule callbacks)", s->name, k);
  }
  if (keep_names(s, names, n)) return scn_errf(L->err, L->d, node, "script %s: out of memory", s->name);
  return 0;
}

/* Checks the callbacks of the script's table (at index t of T): SDK names
** it misspells or that scripts cannot define yet, a called one that is not
** a function; fills s->fns with its function names, sorted. 0 or an error. */
static int check_callbacks(ld *L, const cJSON *node, scn_actor_script *s, rt_lua *x, lua_State *T, int t) {
  name_list l = {0};
  int r = callback_names(T, t, &l) ? scn_errf(L->err, L->d, node, "script %s: out of memory", s->name)
                                   : check_names(L, node, s, x, T, t, l.v, l.n);
  free(l.v);
  return r;
}

/* Compiles and runs the chunk of s in a throwaway state; fills s->fns. */
static int check_script(ld *L, const cJSON *node, scn_actor_script *s) {
  char err[512];
  sim_rng rng;
  sim_rng_stream(&rng, 1, "scn.script.check");
  rt_lua_config cfg = {{NULL, NULL, NULL, &rng, NULL}, s->dir[0] ? s->dir : NULL, 0, 0};
  rt_lua *x = rt_lua_new(&cfg, err, sizeof err);
  if (!x) return scn_errf(L->err, L->d, node, "script %s: %s", s->name, err);
  rt_lua_co co = {0};
  int rc = rt_lua_load(x, s->name, s->text, s->len);
  if (rc == RT_LUA_DONE) rc = rt_lua_start(x, 0, &co);
  if (rc != RT_LUA_DONE) {
    char msg[512];
    const char *e = rc == RT_LUA_YIELDED ? "the main chunk yielded" : rt_lua_error(x);
    const char *tb = strstr(e, "\nstack traceback:"); /* one line here */
    snprintf(msg, sizeof msg, "%.*s", (int)(tb ? (size_t)(tb - e) : strlen(e)), e);
    int r = scn_errf(L->err, L->d, node, "script %s: %s", s->name, msg);
    rt_lua_free(x);
    return r;
  }
  if (co.nres < 1 || lua_type(co.L, -co.nres) != LUA_TTABLE) {
    rt_lua_free(x);
    return scn_errf(L->err, L->d, node, "script %s: it must return a table of callbacks "
                    "(return { onStart = function(self) ... end, ... })", s->name);
  }
  lua_State *T = co.L;
  int t = lua_gettop(T) - co.nres + 1;
  int r = check_callbacks(L, node, s, x, T, t);
  rt_lua_free(x);
  return r;
}

static void dir_of(const char *file, char *out, size_t n) {
  char tmp[512];
  snprintf(tmp, sizeof tmp, "%s", file);
  snprintf(out, n, "%s", dirname(tmp));
}

int ld_actor_script(ld *L, const cJSON *a, uint32_t i) {
  const cJSON *v = ld_get(a, "script");
  scn_actor_script *s = &L->sc->actor_scripts[i];
  if (!v) return 0;
  dir_of(L->sc->file, s->dir, sizeof s->dir);
  if (cJSON_IsString(v)) {
    const char *rel = v->valuestring;
    if (!*rel || strlen(rel) >= sizeof s->name)
      return scn_errf(L->err, L->d, v, "\"script\": expected a file name of 1 to %zu characters",
                      sizeof s->name - 1);
    snprintf(s->name, sizeof s->name, "%s", rel);
    char full[1100];
    if (rel[0] == '/') snprintf(full, sizeof full, "%s", rel);
    else snprintf(full, sizeof full, "%s/%s", s->dir, rel);
    if (strlen(full) >= sizeof s->path)
      return scn_errf(L->err, L->d, v, "\"script\": the path %s is too long", full);
    char *real = realpath(full, NULL); /* absolute: repro files name it from anywhere */
    const char *use = real && strlen(real) < sizeof s->path ? real : full;
    memcpy(s->path, use, strlen(use) + 1); /* both fit: checked above */
    free(real);
    if (read_script(s->path, &s->text, &s->len) < 0) /* named as written: the absolute path is in no file */
      return scn_errf(L->err, L->d, v, "\"script\": cannot read %s: %s", full,
                      errno == EFBIG ? "larger than 256 KiB" : strerror(errno));
    char who[160];
    snprintf(who, sizeof who, "script %s:", s->name);
    if (ld_utf8_text(L, v, who, s->text, s->len)) return -1;
  } else if (cJSON_IsObject(v)) {
    static const char *const fields[] = {"name", "text", "hash", "file", NULL};
    const char *name = NULL, *text = NULL, *hash = NULL, *file = NULL;
    if (ld_obj_fields(L, v, "script", fields) < 0 || ld_need(L, v, "name") < 0 ||
        ld_need(L, v, "text") < 0 || scn_get_string(L->d, v, "name", &name, L->err) < 0 ||
        scn_get_string(L->d, v, "text", &text, L->err) < 0 ||
        (ld_get(v, "hash") && scn_get_string(L->d, v, "hash", &hash, L->err) < 0) ||
        (ld_get(v, "file") && scn_get_string(L->d, v, "file", &file, L->err) < 0))
      return -1;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->len = strlen(text);
    if (s->len > SCN_MAX_AGENT_SCRIPT_BYTES || !(s->text = malloc(s->len + 1)))
      return scn_errf(L->err, L->d, v, "\"script\": text larger than 256 KiB");
    memcpy(s->text, text, s->len + 1);
    if (hash) {
      char want[24];
      snprintf(want, sizeof want, "%016" PRIx64, scn__script_hash(s->text, s->len));
      if (strcmp(want, hash))
        return scn_errf(L->err, L->d, ld_get(v, "hash"), "\"hash\": the text's hash is %s, not %s "
                        "(the embedded script was edited)", want, hash);
    }
    if (file) { /* a repro: say when the script it came from has changed */
      char *cur = NULL;
      size_t n = 0;
      if (read_script(file, &cur, &n) == 0 && scn__script_hash(cur, n) != scn__script_hash(s->text, s->len))
        fprintf(stderr, "revenant: note: %s has changed since this file was written; the "
                        "embedded copy of %s runs\n", file, s->name);
      free(cur);
    }
  } else {
    return scn_errf(L->err, L->d, v, "\"script\": expected a file name (\"agent.lua\") or an "
                    "object {\"name\", \"text\"}");
  }
  s->hash = scn__script_hash(s->text, s->len);
  L->sc->n_actor_scripts++;
  return check_script(L, v, s);
}

int ld_check_invoke(ld *L, const cJSON *node, uint32_t actor, const char *method) {
  const scn_actor_script *s = &L->sc->actor_scripts[actor];
  if (!s->name[0])
    return scn_errf(L->err, L->d, node, "actor \"%s\" has no script (give it \"script\": \"agent.lua\")",
                    L->sc->actors[actor].id);
  const char **names = malloc(((size_t)s->n_fns + 1) * sizeof *names);
  if (!names) return scn_errf(L->err, L->d, node, "out of memory");
  const char *p = s->fns;
  for (int i = 0; i < s->n_fns; i++, p += strlen(p) + 1) {
    if (!strcmp(p, method)) {
      free(names);
      return 0;
    }
    names[i] = p;
  }
  names[s->n_fns] = NULL;
  const char *best = scn_suggest(method, names);
  free(names);
  if (best)
    return scn_errf(L->err, L->d, node, "script %s has no function \"%s\"; did you mean \"%s\"?",
                    s->name, method, best);
  return scn_errf(L->err, L->d, node, "script %s has no function \"%s\"", s->name, method);
}

void scn__actor_scripts_free(scn_scenario *sc) {
  if (sc->actor_scripts_borrowed) return;
  for (int i = 0; i < SCN_MAX_ACTORS; i++) {
    free(sc->actor_scripts[i].text);
    sc->actor_scripts[i].text = NULL;
    free(sc->actor_scripts[i].fns);
    sc->actor_scripts[i].fns = NULL;
  }
}
