/*
** scn_load_scripts.c: the scenario's Lua invariants ("invariants") and the
** script texts a repro file embeds ("scripts").
**
** "invariants" names one script or a list of them, each resolved relative
** to the scenario file's folder. Loading reads each text once (a run never
** reads the file again), runs the scripts' main chunks in a throw-away
** state to learn the names of the invariants they register
** (chk_lua_probe), so that "expect" can name them, and interns those names
** (chk_invariant_intern). "scripts" maps a path of "invariants" to
** {"hash", "text", "origin"}: a repro file carries the texts it ran with,
** so that replay works from any folder; when the origin file still exists
** and its text differs, the scenario's note says so.
** Script texts are interned for the life of the process (a small,
** append-only store), so scenario copies (scn_copy) may share them.
*/
#include <cJSON.h>
#include <limits.h>
#include <sys/stat.h>

#include "runtime/rt_lua.h"
#include "scenarios/scn_internal.h"
#include "scenarios/scn_load_internal.h"

#define SCN_MAX_SCRIPT_BYTES (1024 * 1024)

/* ---- the text store ------------------------------------------------------- */

static char **scn_texts;      /* every distinct script text loaded */
static size_t scn_n_texts, scn_cap_texts;

/* The interned copy of text (NUL-terminated), or NULL on OOM. */
static const char *scn_text_intern(const char *text, size_t len) {
  for (size_t i = 0; i < scn_n_texts; i++)
    if (strlen(scn_texts[i]) == len && memcmp(scn_texts[i], text, len) == 0) return scn_texts[i];
  if (scn_n_texts == scn_cap_texts) {
    size_t nc = scn_cap_texts ? 2 * scn_cap_texts : 8;
    char **nt = realloc(scn_texts, nc * sizeof *nt);
    if (!nt) return NULL;
    scn_texts = nt;
    scn_cap_texts = nc;
  }
  char *t = malloc(len + 1);
  if (!t) return NULL;
  memcpy(t, text, len);
  t[len] = '\0';
  return scn_texts[scn_n_texts++] = t;
}

uint64_t scn__script_hash(const char *text, size_t len) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < len; i++) {
    h ^= (unsigned char)text[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}

/* ---- reading ------------------------------------------------------------- */

/* The whole file into a malloc'd buffer; NULL with errno set. */
static char *read_all(const char *path, size_t *len) {
  FILE *f = scn_fopen_read(path);
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
    if (n > SCN_MAX_SCRIPT_BYTES) {
      free(buf);
      fclose(f);
      errno = EFBIG;
      return NULL;
    }
    if (n == cap) {
      char *nb = realloc(buf, cap * 2);
      if (!nb) free(buf);
      buf = nb;
      cap *= 2;
    }
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    free(buf);
    if (!errno) errno = EIO;
    return NULL;
  }
  *len = n;
  return buf;
}

/* The folder of path ("." when it has none). */
static void dir_of(const char *path, char *dir, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash) snprintf(dir, cap, ".");
  else if (slash == path) snprintf(dir, cap, "/");
  else snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

int ld_utf8_text(ld *L, const cJSON *node, const char *who, const char *text, size_t len) {
  int line;
  unsigned byte;
  if (!rt_lua_text_check(text, len, &line, &byte)) return 0;
  return scn_errf(L->err, L->d, node, "%s line %d is not UTF-8 text (byte 0x%02x): a repro file embeds the "
                  "script as JSON, which cannot carry it; write bytes as escapes in strings (\"\\xff\")",
                  who, line, byte);
}

/* Reads script sc->scripts[i] from disk (path already set). */
static int read_script(ld *L, const cJSON *node, scn_script *s) {
  char q[96];
  size_t len = 0;
  errno = 0;
  char *text = read_all(s->file, &len);
  if (!text)
    return scn_errf(L->err, L->d, node, "invariants: cannot read \"%s\" (%s): %s", ld_quote(q, sizeof q, s->path),
                    s->file, errno == EFBIG ? "larger than 1 MiB" : strerror(errno ? errno : EIO));
  if (memchr(text, '\0', len)) {
    free(text);
    return scn_errf(L->err, L->d, node, "invariants: \"%s\" is not a text file", ld_quote(q, sizeof q, s->path));
  }
  char who[128];
  snprintf(who, sizeof who, "invariants: \"%s\":", ld_quote(q, sizeof q, s->path));
  if (ld_utf8_text(L, node, who, text, len)) {
    free(text);
    return -1;
  }
  s->text = scn_text_intern(text, len);
  s->len = len;
  s->hash = scn__script_hash(text, len);
  char abs[PATH_MAX];
  if (realpath(s->file, abs) && strlen(abs) < sizeof s->origin) memcpy(s->origin, abs, strlen(abs) + 1);
  free(text);
  if (!s->text) return scn_errf(L->err, L->d, node, "out of memory");
  return 0;
}

/* "0x" and 1..16 hex digits into *out; 0 or -1. */
static int parse_hex64(const char *s, uint64_t *out) {
  size_t n = strlen(s);
  if (n < 3 || n > 18 || s[0] != '0' || s[1] != 'x') return -1;
  uint64_t v = 0;
  for (size_t i = 2; i < n; i++) {
    int c = s[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return -1;
    v = v << 4 | (uint64_t)d;
  }
  *out = v;
  return 0;
}

/* The embedded text of s from "scripts" member e. */
static int embedded_script(ld *L, const cJSON *e, scn_script *s) {
  static const char *const fields[] = {"hash", "text", "origin", NULL};
  char q[96];
  const cJSON *h = ld_get(e, "hash"), *t = ld_get(e, "text"), *o = ld_get(e, "origin");
  uint64_t want;
  if (ld_obj_fields(L, e, "scripts entry", fields) < 0) return -1;
  if (!cJSON_IsString(t) || !cJSON_IsString(h) || parse_hex64(h->valuestring, &want) != 0)
    return scn_errf(L->err, L->d, e, "scripts \"%s\": needs \"text\" (a string) and \"hash\" (a hex string)",
                    ld_quote(q, sizeof q, s->path));
  size_t len = strlen(t->valuestring);
  s->hash = scn__script_hash(t->valuestring, len);
  if (s->hash != want)
    return scn_errf(L->err, L->d, h,
                    "scripts \"%s\": the text does not match its hash (0x%016" PRIx64 " != 0x%016" PRIx64
                    "): it was edited after the file was written",
                    ld_quote(q, sizeof q, s->path), s->hash, want);
  if (!(s->text = scn_text_intern(t->valuestring, len))) return scn_errf(L->err, L->d, e, "out of memory");
  s->len = len;
  s->embedded = 1;
  if (cJSON_IsString(o)) snprintf(s->origin, sizeof s->origin, "%s", o->valuestring);
  /* Did the file it came from change since? */
  size_t flen = 0;
  char *now = s->origin[0] ? read_all(s->origin, &flen) : NULL;
  if (now) {
    uint64_t fh = scn__script_hash(now, flen);
    size_t o_len = strlen(L->sc->note);
    if (fh != s->hash && o_len + 1 < sizeof L->sc->note) {
      /* A long origin path may cut the note; the return value is taken so
      ** that gcc -O0 (make coverage) does not call that an error. */
      int w = snprintf(L->sc->note + o_len, sizeof L->sc->note - o_len,
                       "%sscript %s changed since this file was written (hash 0x%016" PRIx64
                       " there, 0x%016" PRIx64 " embedded); running the embedded copy",
                       o_len ? "; " : "", s->origin, fh, s->hash);
      (void)w;
    }
    free(now);
  }
  return 0;
}

/* One name of "invariants". */
static int one_script(ld *L, const cJSON *n, const cJSON *embeds) {
  char q[96];
  scn_scenario *sc = L->sc;
  if (!cJSON_IsString(n) || !n->valuestring[0])
    return scn_errf(L->err, L->d, n, "invariants: expected a script path (a string such as \"charged_once.lua\")");
  const char *p = n->valuestring;
  size_t pl = strlen(p);
  if (pl >= sizeof sc->scripts[0].path || pl < 5 || strcmp(p + pl - 4, ".lua") != 0)
    return scn_errf(L->err, L->d, n, "invariants: \"%s\" must be a .lua file path (under 256 bytes)",
                    ld_quote(q, sizeof q, p));
  if (p[0] == '/')
    return scn_errf(L->err, L->d, n, "invariants: \"%s\" must be relative to the scenario file's folder",
                    ld_quote(q, sizeof q, p));
  for (int i = 0; i < sc->n_scripts; i++)
    if (!strcmp(sc->scripts[i].path, p))
      return scn_errf(L->err, L->d, n, "invariants: \"%s\" is listed twice", ld_quote(q, sizeof q, p));
  scn_script *s = &sc->scripts[sc->n_scripts];
  memset(s, 0, sizeof *s);
  snprintf(s->path, sizeof s->path, "%s", p);
  char dir[sizeof sc->dir];
  dir_of(sc->file, dir, sizeof dir); /* even when it does not exist: the name in messages */
  if (!strcmp(dir, ".")) snprintf(s->file, sizeof s->file, "%s", p);
  else snprintf(s->file, sizeof s->file, "%s/%s", dir, p);
  const cJSON *e = ld_get(embeds, p);
  if (e ? embedded_script(L, e, s) : read_script(L, n, s)) return -1;
  sc->n_scripts++;
  return 0;
}

static int check_embeds(ld *L, const cJSON *embeds) {
  char q[96];
  if (!embeds) return 0;
  if (!cJSON_IsObject(embeds))
    return scn_errf(L->err, L->d, embeds, "scripts: expected an object of script path -> {hash, text}");
  for (const cJSON *m = embeds->child; m; m = m->next) {
    int found = 0;
    for (int i = 0; i < L->sc->n_scripts; i++) found |= !strcmp(L->sc->scripts[i].path, m->string);
    if (!found)
      return ld_key_errf(L, m, "scripts: \"%s\" is not one of the \"invariants\"", ld_quote(q, sizeof q, m->string));
  }
  return 0;
}

/* ---- modules ("modules") ------------------------------------------------- */

/* The real path of sc's folder (where its scripts' states read modules). */
static int real_dir(const scn_scenario *sc, char *out) {
  if (!sc->dir[0] || !realpath(sc->dir, out)) return -1;
  return 0;
}

/* A module path as require makes it: relative, ".lua", no "..". */
static const char *module_path_refusal(const char *p) {
  size_t n = strlen(p);
  if (n < 5 || n >= 256 || strcmp(p + n - 4, ".lua") != 0) return "a .lua path under 256 bytes";
  if (p[0] == '/') return "a path relative to the scenario's folder";
  for (const char *c = p; *c; c++)
    if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./", *c))
      return "letters, digits, '_', '-', '.' and '/'";
  for (const char *c = p; (c = strstr(c, "..")) != NULL; c++)
    if ((c == p || c[-1] == '/') && (c[2] == '/' || c[2] == '\0')) return "a path that stays in the folder";
  return NULL;
}

/* One member of "modules": checked, and kept by the process (rt_lua.h) as
** the copy require finds first in this scenario's folder. */
static int one_module(ld *L, const cJSON *m, const char *rdir) {
  static const char *const fields[] = {"hash", "text", "origin", NULL};
  char q[96], err[400];
  const char *why = module_path_refusal(m->string);
  if (why) return ld_key_errf(L, m, "modules: \"%s\" must be %s", ld_quote(q, sizeof q, m->string), why);
  if (!cJSON_IsObject(m)) return scn_errf(L->err, L->d, m, "modules \"%s\": expected {\"hash\", \"text\"}", m->string);
  if (ld_obj_fields(L, m, "modules entry", fields) < 0) return -1;
  const cJSON *h = ld_get(m, "hash"), *t = ld_get(m, "text"), *o = ld_get(m, "origin");
  uint64_t want;
  if (!cJSON_IsString(t) || !cJSON_IsString(h) || parse_hex64(h->valuestring, &want) != 0 ||
      (o && !cJSON_IsString(o)))
    return scn_errf(L->err, L->d, m, "modules \"%s\": needs \"text\" (a string), \"hash\" (a hex "
                    "string) and optionally \"origin\" (a path)", m->string);
  size_t len = strlen(t->valuestring);
  uint64_t got = rt_lua_text_hash(t->valuestring, len);
  if (got != want)
    return scn_errf(L->err, L->d, h, "modules \"%s\": the text does not match its hash (0x%016" PRIx64
                    " != 0x%016" PRIx64 "): it was edited after the file was written", m->string, got, want);
  const char *origin = o ? o->valuestring : "";
  if (!rt_lua_module_keep(rdir, m->string, t->valuestring, len, origin, 1, err, sizeof err))
    return scn_errf(L->err, L->d, t, "modules: %s", err);
  size_t flen = 0;
  char *now = origin[0] ? read_all(origin, &flen) : NULL; /* did its file change since? */
  size_t o_len = strlen(L->sc->note);
  if (now && rt_lua_text_hash(now, flen) != got && o_len + 1 < sizeof L->sc->note) {
    int w = snprintf(L->sc->note + o_len, sizeof L->sc->note - o_len,
                     "%smodule %s changed since this file was written (hash 0x%016" PRIx64
                     " there, 0x%016" PRIx64 " embedded); running the embedded copy",
                     o_len ? "; " : "", origin, rt_lua_text_hash(now, flen), got);
    (void)w; /* a long path may cut the note */
  }
  free(now);
  return 0;
}

/* "modules": the module texts a repro file's runs loaded. Read before the
** scripts run their main chunks (at load), so that require finds them. */
static int load_modules(ld *L) {
  const cJSON *mods = ld_get(L->root, "modules");
  char rdir[PATH_MAX];
  if (!mods) return 0;
  if (!cJSON_IsObject(mods))
    return scn_errf(L->err, L->d, mods, "modules: expected an object of module path -> {hash, text}");
  if (real_dir(L->sc, rdir) != 0) return 0; /* no folder: require is refused anyway */
  for (const cJSON *m = mods->child; m; m = m->next)
    if (one_module(L, m, rdir)) return -1;
  return 0;
}

void *scn__modules_json(const scn_scenario *sc) {
  char rdir[PATH_MAX], h[24];
  if (real_dir(sc, rdir) != 0) return NULL;
  int n = rt_lua_module_count(), k = 0;
  const rt_lua_module **v = n ? malloc((size_t)n * sizeof *v) : NULL;
  for (int i = 0; v && i < n; i++) {
    const rt_lua_module *m = rt_lua_module_at(i);
    if (m && !strcmp(m->dir, rdir)) v[k++] = m;
  }
  cJSON *o = k ? cJSON_CreateObject() : NULL;
  for (int i = 1; i < k; i++) /* by path: insertion sort, a handful of modules */
    for (int j = i; j > 0 && strcmp(v[j - 1]->rel, v[j]->rel) > 0; j--) {
      const rt_lua_module *t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  for (int i = 0; o && i < k; i++) {
    cJSON *e = cJSON_AddObjectToObject(o, v[i]->rel);
    snprintf(h, sizeof h, "0x%016" PRIx64, v[i]->hash);
    if (!e || !cJSON_AddStringToObject(e, "hash", h) || !cJSON_AddStringToObject(e, "text", v[i]->text) ||
        (v[i]->origin[0] && !cJSON_AddStringToObject(e, "origin", v[i]->origin))) {
      cJSON_Delete(o);
      o = NULL;
    }
  }
  free(v);
  return o;
}

/* The end of the JSON value (or key) at p in minified text; NULL if
** malformed. */
static const char *skip_value(const char *p) {
  int depth = 0;
  for (;;) {
    if (*p == '"') {
      for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1]) p++;
      if (!*p) return NULL;
      p++;
    } else if (*p == '{' || *p == '[') {
      depth++;
      p++;
    } else if (*p == '}' || *p == ']') {
      if (--depth < 0) return NULL;
      p++;
    } else if (depth > 0 && (*p == ',' || *p == ':')) {
      p++;
    } else { /* a number or a literal */
      while (*p && !strchr(",:}]", *p)) p++;
      if (!*p) return NULL;
    }
    if (depth == 0) return p;
  }
}

/* Removes the top-level member `key` of minified object text s (in place). */
static void drop_member(char *s, const char *key) {
  size_t kl = strlen(key);
  char *p = s + 1;
  while (*p == '"') {
    char *start = p;
    const char *v = skip_value(p); /* the key */
    if (!v || *v != ':') return;
    const char *end = skip_value(v + 1);
    if (!end) return;
    int hit = (size_t)(v - start) == kl + 2 && !strncmp(start + 1, key, kl);
    if (*end == ',') end++;
    if (hit) {
      if (*end == '}' && start[-1] == ',') start--; /* it was the last member */
      memmove(start, end, strlen(end) + 1);
      return;
    }
    p = (char *)end;
  }
}

char *scn_source_now(const scn_scenario *sc) {
  if (!sc->source) return NULL;
  size_t n = strlen(sc->source);
  char *min = malloc(n + 1);
  if (!min) return NULL;
  memcpy(min, sc->source, n + 1);
  cJSON *o = scn__modules_json(sc);
  if (!o) return min; /* no module was loaded: the file as it was */
  cJSON_Minify(min);
  drop_member(min, "modules");
  char *js = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  size_t ml = strlen(min), jl = js ? strlen(js) : 0;
  char *out = js && ml >= 2 && min[0] == '{' ? malloc(ml + jl + 16) : NULL;
  if (out) snprintf(out, ml + jl + 16, "{\"modules\":%s%s%s", js, min[1] == '}' ? "" : ",", min + 1);
  free(js);
  free(min);
  return out;
}

int ld_load_invariants(ld *L) {
  scn_scenario *sc = L->sc;
  const cJSON *inv = ld_get(L->root, "invariants"), *embeds = ld_get(L->root, "scripts");
  dir_of(sc->file, sc->dir, sizeof sc->dir);
  struct stat dst;
  if (stat(sc->dir, &dst) != 0 || !S_ISDIR(dst.st_mode)) sc->dir[0] = '\0'; /* require refused */
  if (load_modules(L) < 0) return -1;
  if (!inv) {
    if (embeds) return scn_errf(L->err, L->d, embeds, "scripts: only with \"invariants\"");
    return 0;
  }
  if (cJSON_IsString(inv)) {
    if (one_script(L, inv, embeds)) return -1;
  } else if (cJSON_IsArray(inv)) {
    if (ld_arr_len(L, inv, "invariants", 1, CHK_LUA_MAX_SCRIPTS, "scripts") < 0) return -1;
    for (const cJSON *n = inv->child; n; n = n->next)
      if (one_script(L, n, embeds)) return -1;
  } else {
    return scn_errf(L->err, L->d, inv, "invariants: expected a script path or a list of them");
  }
  if (check_embeds(L, embeds)) return -1;
  chk_lua_script ls[CHK_LUA_MAX_SCRIPTS];
  for (int i = 0; i < sc->n_scripts; i++)
    ls[i] = (chk_lua_script){sc->scripts[i].file, sc->scripts[i].text, sc->scripts[i].len};
  char names[CHK_LUA_MAX_INVARIANTS][CHK_NAME_MAX], e[1500];
  chk_lua_opts o = {.dir = sc->dir[0] ? sc->dir : NULL};
  int n = chk_lua_probe(ls, sc->n_scripts, &o, names, CHK_LUA_MAX_INVARIANTS, e, sizeof e);
  if (n < 0) return scn_errf(L->err, L->d, inv, "invariants: %s", e);
  if (n == 0)
    return scn_errf(L->err, L->d, inv, "invariants: the scripts register no invariant "
                                       "(call revenant.invariant(name, {on_record = ..., on_finish = ...}))");
  for (int i = 0; i < n; i++) {
    int id = chk_invariant_parse(names[i]); /* interned by the probe */
    if (id < CHK_INVARIANT_COUNT) return scn_errf(L->err, L->d, inv, "invariants: bad name \"%s\"", names[i]);
    sc->lua_inv[sc->n_lua_inv++] = id;
  }
  return 0;
}

/* ---- invariant bits ------------------------------------------------------- */

_Static_assert(CHK_INVARIANT_COUNT + CHK_LUA_MAX_INVARIANTS <= 32, "invariant masks are 32 bits");

uint32_t scn_inv_bit(const scn_scenario *sc, int inv) {
  if (inv >= 0 && inv < CHK_INVARIANT_COUNT) return 1u << inv;
  for (int k = 0; sc && k < sc->n_lua_inv; k++)
    if (sc->lua_inv[k] == inv) return 1u << (CHK_INVARIANT_COUNT + k);
  return 0;
}

int scn_inv_of_bit(const scn_scenario *sc, int k) {
  if (k >= 0 && k < CHK_INVARIANT_COUNT) return k;
  k -= CHK_INVARIANT_COUNT;
  return sc && k >= 0 && k < sc->n_lua_inv ? sc->lua_inv[k] : -1;
}

uint32_t scn_seen_mask(const scn_scenario *sc, const scn_result *res) {
  uint32_t seen = 0;
  for (size_t i = 0; res->checks && i < chk_violation_count(res->checks); i++)
    seen |= scn_inv_bit(sc, (int)chk_violation_at(res->checks, i)->inv);
  return seen;
}

/* ---- writing -------------------------------------------------------------- */

void *scn__scripts_json(const scn_scenario *sc) {
  cJSON *o = cJSON_CreateObject();
  char h[24];
  for (int i = 0; o && i < sc->n_scripts; i++) {
    const scn_script *s = &sc->scripts[i];
    cJSON *e = cJSON_AddObjectToObject(o, s->path);
    snprintf(h, sizeof h, "0x%016" PRIx64, s->hash);
    if (!e || !cJSON_AddStringToObject(e, "hash", h) || !cJSON_AddStringToObject(e, "text", s->text) ||
        (s->origin[0] && !cJSON_AddStringToObject(e, "origin", s->origin))) {
      cJSON_Delete(o);
      return NULL;
    }
  }
  return o;
}

char *scn__embed_scripts(const scn_scenario *sc, const char *text, size_t len) {
  int any = 0;
  for (int i = 0; i < sc->n_scripts; i++) any |= sc->scripts[i].embedded;
  char *min = malloc(len + 1);
  if (!min) return NULL;
  memcpy(min, text, len);
  min[len] = '\0';
  if (!sc->n_scripts || any) return min; /* nothing to add, or "scripts" is there */
  cJSON_Minify(min);
  cJSON *o = scn__scripts_json(sc);
  char *js = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  size_t ml = strlen(min), jl = js ? strlen(js) : 0;
  char *out = js && ml > 1 && min[0] == '{' ? malloc(ml + jl + 16) : NULL;
  if (out) snprintf(out, ml + jl + 16, "{\"scripts\":%s,%s", js, min + 1);
  free(js);
  free(min);
  return out;
}
