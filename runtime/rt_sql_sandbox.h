/*
** rt_sql_sandbox.h: determinism and limits for user SQL on an actor's
** SQLite connection (scripts' `self.sql:exec`).
**
** On a connection, rt_sql_sandbox:
** - replaces random() and randomblob(N) by draws from the host's stream;
** - makes 'now' in date(), time(), datetime(), julianday(), unixepoch(),
**   strftime() and CURRENT_TIMESTAMP / CURRENT_DATE / CURRENT_TIME the
**   virtual clock (epoch_unix_ms + the host's now_us), and refuses the
**   'localtime' and 'utc' modifiers (they read the machine's time zone);
** - installs an authorizer that, while user SQL is being prepared
**   (rt_sql_sandbox_prepare or rt_sql_sandbox_user(s, 1)), refuses ATTACH,
**   DETACH, load_extension, VACUUM, BEGIN/COMMIT/ROLLBACK (transactions
**   belong to the runtime's turn commits), PRAGMAs that change durability
**   (synchronous, journal_mode, locking_mode, wal_checkpoint, ...), and any
**   write or schema change on the SDK's tables (names starting with
**   sdk_prefix, case-insensitive). Reads of the SDK's tables are allowed.
**
** SQL the runtime itself prepares (user mode off) is never refused, so the
** SDK keeps writing its tables on the same connection.
*/
#ifndef RT_SQL_SANDBOX_H
#define RT_SQL_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "sim/sim_rng.h"

typedef struct rt_sql_sandbox_config {
  void *ctx;                          /* passed to the callbacks */
  int64_t (*now_us)(void *ctx);       /* virtual time, µs; NULL: 'now' refused */
  uint64_t (*random64)(void *ctx);    /* 64 random bits; NULL: use rng */
  sim_rng *rng;                       /* borrowed; NULL with random64 NULL:
                                         random() refused */
  int64_t epoch_unix_ms;              /* wall time of virtual time 0 */
  const char *sdk_prefix;             /* read-only tables: a prefix or several
                                         separated by commas ("cf_,rv_");
                                         NULL: "cf_" */
} rt_sql_sandbox_config;

typedef struct rt_sqlsbx rt_sqlsbx;

/* Sandboxes db (once per connection). The sandbox belongs to the
** connection: it is freed when db is closed. Returns NULL with the reason in
** err on failure (db is then left without overrides). */
rt_sqlsbx *rt_sql_sandbox(sqlite3 *db, const rt_sql_sandbox_config *cfg, char *err, size_t errlen);

/* Switches the authorizer on (1: the next prepares are user SQL) or off. */
void rt_sql_sandbox_user(rt_sqlsbx *s, int on);

/* Prepares the first user statement of sql with the authorizer on (tail,
** if not NULL, gets the rest as sqlite3_prepare_v2 gives it). Returns the
** SQLite code; on a refusal (SQLITE_AUTH) err names what was refused and
** why, on other errors it holds sqlite3_errmsg. *stmt is NULL on failure;
** the caller finalizes it otherwise. Keep user mode on (rt_sql_sandbox_user)
** while stepping user statements too: statements SQLite runs inside a step
** (VACUUM's, a re-prepare after a schema change) are authorized then. */
int rt_sql_sandbox_prepare(rt_sqlsbx *s, const char *sql, sqlite3_stmt **stmt,
                           const char **tail, char *err, size_t errlen);

/* What the authorizer refused last ("" if nothing), e.g. "ATTACH (another
** database file is outside the actor's storage)". */
const char *rt_sql_sandbox_refusal(const rt_sqlsbx *s);

/* Formats virtual unix milliseconds as "YYYY-MM-DD HH:MM:SS.SSS" (UTC,
** proleptic Gregorian) into out (at least 24 bytes). */
void rt_sql_format_time(int64_t unix_ms, char *out, size_t outlen);

#endif
