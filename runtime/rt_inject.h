/*
** rt_inject.h: deterministic failure injection at the runtime's own call
** sites of allocation and SQLite (issue #16 item 7: reach the error paths).
**
** Every runtime .c file includes this header first. It includes <stdlib.h>,
** <string.h> and <sqlite3.h> itself, then redefines malloc, calloc,
** realloc, strdup and the SQLite calls the runtime checks (open, prepare,
** step, exec, serialize, deserialize, sqlite3_malloc) as macros that name
** their call site by __FILE__ and __LINE__. Disarmed (the default, and
** every run of the command line) each costs one test of a global that is
** always 0: the real call follows. Armed by a test (rt_inject_count,
** rt_inject_target), every call passes through rt__inject_hit, which counts
** the site's occurrences and fails the one targeted occurrence: NULL from an
** allocation, an SQLite error code from a database call. No randomness:
** the same target in the same run fails the same call.
**
** Not for use outside runtime/ (system headers included after it would see
** the macros: it includes the ones it wraps first, guarded).
*/
#ifndef RT_INJECT_H
#define RT_INJECT_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Non-zero while a test counts or targets sites; 0 otherwise. */
extern int rt__inject_armed;

/* One call at file:line: counts it; 1 if it must fail. Only called armed. */
int rt__inject_hit(const char *file, int line);

/* Registers fn (idempotent; at most 8) to run at every arming, before the
** counts reset: it drops process-wide state kept between runs (a pool, a
** buffer) so that an armed run makes the same calls as the counting run. */
void rt__inject_cold_hook(void (*fn)(void));

/* 1 if the call at this site must fail (a single predictable branch when
** disarmed). */
#define RT_INJECT_AT(f, l) (__builtin_expect(rt__inject_armed, 0) && rt__inject_hit((f), (l)))

/* ---- the wrappers: the real call unless this occurrence fails ---------- */

static inline void *rt__inj_malloc(size_t n, const char *f, int l) {
  return RT_INJECT_AT(f, l) ? NULL : malloc(n);
}
static inline void *rt__inj_calloc(size_t k, size_t n, const char *f, int l) {
  return RT_INJECT_AT(f, l) ? NULL : calloc(k, n);
}
static inline void *rt__inj_realloc(void *p, size_t n, const char *f, int l) {
  return RT_INJECT_AT(f, l) ? NULL : realloc(p, n);
}
static inline char *rt__inj_strdup(const char *s, const char *f, int l) {
  return RT_INJECT_AT(f, l) ? NULL : strdup(s);
}
static inline void *rt__inj_sqlite3_malloc(int n, const char *f, int l) {
  return RT_INJECT_AT(f, l) ? NULL : sqlite3_malloc(n);
}
/* A failed open leaves no handle (*db NULL; sqlite3_close(NULL) is a no-op). */
static inline int rt__inj_sqlite3_open(const char *path, sqlite3 **db, const char *f, int l) {
  if (RT_INJECT_AT(f, l)) return *db = NULL, SQLITE_CANTOPEN;
  return sqlite3_open(path, db);
}
static inline int rt__inj_sqlite3_open_v2(const char *path, sqlite3 **db, int flags,
                                          const char *vfs, const char *f, int l) {
  if (RT_INJECT_AT(f, l)) return *db = NULL, SQLITE_CANTOPEN;
  return sqlite3_open_v2(path, db, flags, vfs);
}
static inline int rt__inj_sqlite3_prepare_v2(sqlite3 *db, const char *sql, int n,
                                             sqlite3_stmt **st, const char **tail,
                                             const char *f, int l) {
  if (RT_INJECT_AT(f, l)) return *st = NULL, SQLITE_NOMEM;
  return sqlite3_prepare_v2(db, sql, n, st, tail);
}
static inline int rt__inj_sqlite3_prepare_v3(sqlite3 *db, const char *sql, int n,
                                             unsigned flags, sqlite3_stmt **st,
                                             const char **tail, const char *f, int l) {
  if (RT_INJECT_AT(f, l)) return *st = NULL, SQLITE_NOMEM;
  return sqlite3_prepare_v3(db, sql, n, flags, st, tail);
}
/* A failed step does not run the statement: SQLITE_IOERR, as a full disk. */
static inline int rt__inj_sqlite3_step(sqlite3_stmt *st, const char *f, int l) {
  return RT_INJECT_AT(f, l) ? SQLITE_IOERR : sqlite3_step(st);
}
static inline int rt__inj_sqlite3_exec(sqlite3 *db, const char *sql,
                                       int (*cb)(void *, int, char **, char **),
                                       void *arg, char **errmsg, const char *f, int l) {
  return RT_INJECT_AT(f, l) ? SQLITE_IOERR : sqlite3_exec(db, sql, cb, arg, errmsg);
}
static inline unsigned char *rt__inj_sqlite3_serialize(sqlite3 *db, const char *schema,
                                                       sqlite3_int64 *sz, unsigned flags,
                                                       const char *f, int l) {
  return RT_INJECT_AT(f, l) ? NULL : sqlite3_serialize(db, schema, sz, flags);
}
/* As SQLite on failure: a buffer handed over with FREEONCLOSE is freed. */
static inline int rt__inj_sqlite3_deserialize(sqlite3 *db, const char *schema,
                                              unsigned char *img, sqlite3_int64 sz,
                                              sqlite3_int64 cap, unsigned flags,
                                              const char *f, int l) {
  if (RT_INJECT_AT(f, l)) {
    if (flags & SQLITE_DESERIALIZE_FREEONCLOSE) sqlite3_free(img);
    return SQLITE_NOMEM;
  }
  return sqlite3_deserialize(db, schema, img, sz, cap, flags);
}

#define malloc(n) rt__inj_malloc((n), __FILE__, __LINE__)
#define calloc(k, n) rt__inj_calloc((k), (n), __FILE__, __LINE__)
#define realloc(p, n) rt__inj_realloc((p), (n), __FILE__, __LINE__)
#define strdup(s) rt__inj_strdup((s), __FILE__, __LINE__)
#define sqlite3_malloc(n) rt__inj_sqlite3_malloc((n), __FILE__, __LINE__)
#define sqlite3_open(p, d) rt__inj_sqlite3_open((p), (d), __FILE__, __LINE__)
#define sqlite3_open_v2(p, d, fl, v) rt__inj_sqlite3_open_v2((p), (d), (fl), (v), __FILE__, __LINE__)
#define sqlite3_prepare_v2(d, q, n, s, t) \
  rt__inj_sqlite3_prepare_v2((d), (q), (n), (s), (t), __FILE__, __LINE__)
#define sqlite3_prepare_v3(d, q, n, fl, s, t) \
  rt__inj_sqlite3_prepare_v3((d), (q), (n), (fl), (s), (t), __FILE__, __LINE__)
#define sqlite3_step(s) rt__inj_sqlite3_step((s), __FILE__, __LINE__)
#define sqlite3_exec(d, q, cb, a, e) rt__inj_sqlite3_exec((d), (q), (cb), (a), (e), __FILE__, __LINE__)
#define sqlite3_serialize(d, s, z, fl) rt__inj_sqlite3_serialize((d), (s), (z), (fl), __FILE__, __LINE__)
#define sqlite3_deserialize(d, s, i, z, c, fl) \
  rt__inj_sqlite3_deserialize((d), (s), (i), (z), (c), (fl), __FILE__, __LINE__)

#endif
