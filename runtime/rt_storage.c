/*
** rt_storage.c: per-actor durable storage (SQLite) and turn commits.
**
** Each actor has its own database: ":memory:" by default, a WAL file under
** cfg.storage_dir for runs that kill real processes. The host owns only the
** alarm slot (rv_alarm); every other table belongs to the layer that
** registered it (rt__store_register: its schema, statements and the table
** names of its write ops), and the host never names one.
**
** Commit semantics (workerd-observed.md item 1): in RT_COMMIT_TURN mode
** the writes of a turn join one transaction that commits commit_window_us
** after the turn; a death before then rolls the whole turn back. In
** RT_COMMIT_IMMEDIATE mode every write is durable when it returns (the
** seeds' model). Every write is one RT_EV_WRITE record: a durable write
** boundary for crash-point coverage. On a pooled in-memory database a
** turn's transaction is a savepoint of one SQLite transaction kept open
** ("held transactions" below); the semantics are the same.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <errno.h>
#include <fcntl.h>
#include <fiu.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/rt_host.h"

/* The host's own statements: the alarm slot and transaction control. */
enum {
  ST_ALARM_SET, ST_ALARM_DELETE, ST_ALARM_GET, ST_BEGIN, ST_COMMIT, ST_ROLLBACK,
  ST_SP_BASE, ST_SP_BEGIN, ST_SP_RELEASE, ST_SP_ROLLBACK_BASE, ST_SP_ROLLBACK, ST_COUNT
};

static const char *const host_sql[ST_COUNT] = {
    [ST_ALARM_SET] = "INSERT OR REPLACE INTO rv_alarm(k,at) VALUES(0,?)",
    [ST_ALARM_DELETE] = "DELETE FROM rv_alarm WHERE k=0",
    [ST_ALARM_GET] = "SELECT at FROM rv_alarm WHERE k=0",
    [ST_BEGIN] = "BEGIN",
    [ST_COMMIT] = "COMMIT",
    [ST_ROLLBACK] = "ROLLBACK",
    [ST_SP_BASE] = "SAVEPOINT rv_base",
    [ST_SP_BEGIN] = "SAVEPOINT rv_turn",
    [ST_SP_RELEASE] = "RELEASE rv_base",
    [ST_SP_ROLLBACK_BASE] = "ROLLBACK TO rv_base",
    [ST_SP_ROLLBACK] = "ROLLBACK TO rv_turn",
};

static rt_store_module host_module = {
    .name = "host",
    .schema = "CREATE TABLE IF NOT EXISTS rv_alarm(k INTEGER PRIMARY KEY, at INTEGER);",
    .sql = host_sql,
    .n_sql = ST_COUNT,
};

/* ---- storage modules ----------------------------------------------------
** Each layer above registers the tables it owns and their statements
** (rt__store_register); the host knows none of them. The schema of a new
** database is the registered schemas in registration order. */
#define MAX_MODULES 16
static rt_store_module *modules[MAX_MODULES];
static int n_modules, n_stmts;
static const char *op_tables[64]; /* rt_write_op -> table (WRITE records) */
static unsigned char *template_img;

int rt__store_register(rt_store_module *m) {
  if (m->registered) return 0;
  if (template_img || n_modules == MAX_MODULES || n_stmts + m->n_sql > RT_STMT_MAX) return -1;
  for (int i = 0; i < m->n_ops; i++)
    if (m->ops[i].op < 0 || m->ops[i].op >= 64) return -1;
  for (int i = 0; i < m->n_ops; i++) op_tables[m->ops[i].op] = m->ops[i].table;
  m->base = n_stmts;
  n_stmts += m->n_sql;
  m->registered = 1;
  modules[n_modules++] = m;
  return 0;
}

/* The schema of every registered module, in order (malloc'd). */
static char *full_schema(void) {
  size_t n = 1;
  for (int i = 0; i < n_modules; i++) n += strlen(modules[i]->schema);
  char *s = malloc(n), *p = s;
  if (!s) return NULL;
  for (int i = 0; i < n_modules; i++) {
    size_t k = strlen(modules[i]->schema);
    memcpy(p, modules[i]->schema, k);
    p += k;
  }
  *p = '\0';
  return s;
}

static int exec_schema(sqlite3 *db) {
  char *schema = full_schema();
  int rc = !schema || sqlite3_exec(db, schema, NULL, NULL, NULL);
  free(schema);
  return rc;
}

/* An empty database with the schema, made once per process: a new
** in-memory actor database is a copy of it (about 10x cheaper than running
** the schema, which matters when every crash cycle starts fresh). Small
** pages keep an idle actor's database small. It is kept open (template_db:
** copied into a new plain ":memory:" connection by the backup API) and
** serialized (template_img: a new database file). A plain in-memory
** database keeps its pages in its cache alone; a deserialized one also
** copies each committed page into its buffer (issue #18: 4 % of a
** kill/recover cycle, 0.7 k instructions per transaction). */
static sqlite3 *template_db;
static sqlite3_int64 template_sz;
static int template_build(void);
static int list_tables(sqlite3 *db);
static void pool_off(void);

int rt__store_template(void) { return template_build(); }

/* The calls below are in parentheses, so that rt_inject.h's macros leave
** them alone: a warm-up is no failure-injection site (if it fails, only
** where the page faults happen changes). */
void rt_storage_warm(void) {
  sqlite3 *db = NULL;
  if (template_build() || (sqlite3_open)(":memory:", &db)) {
    (sqlite3_close)(db);
    return;
  }
  unsigned char *copy = (sqlite3_malloc64)((sqlite3_uint64)template_sz);
  if (copy) {
    memcpy(copy, template_img, (size_t)template_sz);
    if ((sqlite3_deserialize)(db, "main", copy, template_sz, template_sz,
                              SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) == 0)
      (sqlite3_exec)(db, "PRAGMA locking_mode=EXCLUSIVE; SELECT count(*) FROM sqlite_master;"
                         " CREATE TABLE rv_warm(k INTEGER PRIMARY KEY, v TEXT);"
                         " INSERT INTO rv_warm(v) VALUES('warm'); UPDATE rv_warm SET v='up';"
                         " DELETE FROM rv_warm;", NULL, NULL, NULL);
  }
  (sqlite3_close)(db);
}

/* One simulation is one thread (DESIGN.md rule 1), so SQLite's mutexes
** and memory statistics are pure cost. Must run before SQLite starts, so
** every path that opens a connection first comes here (a world, and the
** template a sigkill run builds before its first world: without this, a
** process whose first SQLite call was that template ran every later
** statement with mutexes, 25 % slower); SQLite refuses a later call. */
void rt__sqlite_single_thread(void) {
  static int done;
  if (done) return;
  done = 1;
  sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  rt__sqlmem_install();
}

static int template_build(void) {
  sqlite3 *db;
  if (template_img) return 0;
  rt__sqlite_single_thread();
  if (rt__store_register(&host_module)) return -1;
  if (sqlite3_open(":memory:", &db)) return -1;
  int rc = sqlite3_exec(db, "PRAGMA page_size=512;", NULL, NULL, NULL) ||
           exec_schema(db);
  if (!rc && list_tables(db)) pool_off(); /* no pool: wipe refuses */
  if (!rc) template_img = sqlite3_serialize(db, "main", &template_sz, 0);
  if (!template_img) {
    sqlite3_close(db);
    return -1;
  }
  template_db = db;
  return 0;
}

static void written_hook(void *arg, int op, const char *dbname, const char *table,
                         sqlite3_int64 rowid);

/* An in-memory database has one connection: it keeps its lock between
** transactions, so that each one skips the checks of whether another
** connection changed the file (issue #18: 8 % of a kill/recover cycle). */
static int memdb_exclusive(sqlite3 *db) {
  return sqlite3_exec(db, "PRAGMA locking_mode=EXCLUSIVE;", NULL, NULL, NULL) ? -1 : 0;
}

/* Copies the template's pages into db, a new empty ":memory:" connection
** (its page size set first: an in-memory backup target keeps its own). */
static int copy_template(sqlite3 *db) {
  if (sqlite3_exec(db, "PRAGMA page_size=512;", NULL, NULL, NULL)) return -1;
  sqlite3_backup *b = sqlite3_backup_init(db, "main", template_db, "main");
  if (!b) return -1;
  int rc = sqlite3_backup_step(b, -1);
  return sqlite3_backup_finish(b) == SQLITE_OK && rc == SQLITE_DONE ? 0 : -1;
}

static int open_from_template(rt_db *d) {
  sqlite3 *db = d->db;
  if (template_build()) return -1;
  if (!d->written && !(d->written = calloc(1, sizeof *d->written))) return -1;
  sqlite3_update_hook(db, written_hook, d->written);
  return copy_template(db) ? -1 : memdb_exclusive(db);
}

static int open_from_image(rt_db *d);

/* ---- the connection pool ------------------------------------------------
** A fresh in-memory database costs a schema parse on its first statement
** (over half the cost of a short run). A world that ends hands its
** in-memory connections back here, wiped, with their prepared statements;
** the next fresh database of the process takes one. Wiping empties (DELETE
** FROM, in one transaction) every table of the template that may hold a
** row: the tables an update hook saw a row written to since the connection
** was made or last wiped, sqlite_sequence whenever any was, and every
** table the hook cannot see (WITHOUT ROWID). The other tables are still
** empty, so the result is the same as emptying all of them (issue #18:
** the full wipe was 27 % of a kill/recover cycle). An emptied table behaves
** as a new one (rowids restart at 1) and every read that decides anything
** has an ORDER BY, so a pooled connection runs exactly as a new one. */
#define POOL_MAX 256
#define MAX_TABLES 32
static rt_db db_pool[POOL_MAX];
static int pool_n;
static char table_names[MAX_TABLES][64];
static int n_tables = -1;
static uint32_t always_wipe; /* tables no update hook reports: WITHOUT ROWID */
static int seq_table = -1;   /* sqlite_sequence's index, if the template has it */

static int ti_n; /* entries of the table index cache (below) */

static void pool_off(void) {
  n_tables = -1;
  ti_n = 0;
}

/* The template's tables in name order, and which of them to always wipe. */
static int list_tables(sqlite3 *db) {
  sqlite3_stmt *st;
  n_tables = 0;
  ti_n = 0;
  if (sqlite3_prepare_v2(db, "SELECT name, upper(sql) LIKE '%WITHOUT%ROWID%' FROM sqlite_master"
                         " WHERE type='table' ORDER BY name",
                         -1, &st, NULL))
    return -1;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (n_tables == MAX_TABLES) break; /* more than the list holds: no pool */
    snprintf(table_names[n_tables], 64, "%.63s", (const char *)sqlite3_column_text(st, 0));
    if (!strcmp(table_names[n_tables], "sqlite_sequence")) seq_table = n_tables;
    if (sqlite3_column_int(st, 1)) always_wipe |= 1u << n_tables;
    n_tables++;
  }
  sqlite3_finalize(st);
  return rc == SQLITE_DONE ? 0 : -1;
}

/* The index of table in the template's list, or -1 if it is not there. */
static int table_find(const char *table) {
  for (int i = 0; i < n_tables; i++)
    if (!strcmp(table, table_names[i])) return i;
  return -1;
}

/* sqlite3_update_hook of a pooled connection: marks the table written. A
** table not in the template's list (none is made on a poolable connection)
** marks every table. */
static void written_hook(void *arg, int op, const char *dbname, const char *table,
                         sqlite3_int64 rowid) {
  rt_db_written *wr = arg;
  (void)op;
  (void)dbname;
  (void)rowid;
  if (table != wr->last || strcmp(table, table_names[wr->last_i])) {
    int i = table_find(table);
    if (i < 0) {
      wr->tables = ~0u;
      return;
    }
    wr->last = table;
    wr->last_i = i;
  }
  wr->tables |= 1u << wr->last_i;
}

/* Runs statement q of d, kept in d->wipe[i] (prepared on first use; q is
** only read then). */
static int wipe_step(rt_db *d, int i, const char *q) {
  if (!d->wipe[i] && sqlite3_prepare_v3(d->db, q, -1, SQLITE_PREPARE_PERSISTENT, &d->wipe[i], NULL))
    return -1;
  int rc = sqlite3_step(d->wipe[i]);
  sqlite3_reset(d->wipe[i]);
  return rc == SQLITE_DONE ? 0 : -1;
}

/* sqlite3_changes() reads 0, as on a new connection (a script's DDL
** reports it as its write's key). */
static int changes_zero(rt_db *d) {
  return wipe_step(d, MAX_TABLES + 2, "DELETE FROM rv_alarm WHERE 0");
}

/* Empties a held connection: its transaction began when every table was
** empty (the template, or just wiped), so rolling it back restores exactly
** that content. 0, or -1 (then close it). */
static int wipe_held(rt_db *d) {
  d->held = d->sp_open = d->sp_depth = d->txn_open = 0;
  if (n_tables < 0 || !d->written) return -1;
  /* first, inside the transaction (no journal of its own): the rollback
  ** leaves sqlite3_changes() alone */
  if (changes_zero(d)) return -1;
  if (!sqlite3_get_autocommit(d->db) && wipe_step(d, MAX_TABLES + 3, "ROLLBACK")) return -1;
  d->written->tables = 0;
  return 0;
}

/* Empties d's tables; returns 0, or -1 if it cannot (then close it). */
static int wipe(rt_db *d) {
  if (d->held) return wipe_held(d);
  if (d->txn_open) sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
  d->txn_open = 0;
  if (n_tables < 0 || !d->written) return -1;
  uint32_t todo = d->written->tables;
  if (todo && seq_table >= 0) todo |= 1u << seq_table;
  todo |= always_wipe;
  if (wipe_step(d, MAX_TABLES, "BEGIN")) return -1;
  for (int i = 0; i < n_tables; i++) {
    char q[96] = "";
    if (!(todo & (1u << i))) continue;
    if (!d->wipe[i]) snprintf(q, sizeof q, "DELETE FROM \"%.63s\"", table_names[i]);
    if (wipe_step(d, i, q)) {
      sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
      return -1;
    }
  }
  if (changes_zero(d) || wipe_step(d, MAX_TABLES + 1, "COMMIT"))
    return -1;
  d->written->tables = 0;
  return 0;
}

static void db_close_now(rt_db *d);

/* The message of SQLite result rc on db: the connection's own when it
** reports that result, else the code's generic text (a failure that left
** no message on the connection, e.g. one injected in a test). */
static const char *sql_err(sqlite3 *db, int rc) {
  return db && sqlite3_errcode(db) == rc ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
}

/* Closes the pooled connections at exit (so that leak checkers see every
** SQLite allocation released). */
static void pool_drain(void) {
  while (pool_n > 0) db_close_now(&db_pool[--pool_n]);
  sqlite3_free(template_img);
  template_img = NULL;
  sqlite3_close(template_db);
  template_db = NULL;
  rt__sqlmem_trim();
}

/* Closes the pooled connections and drops the schema template: the next
** database is opened as by a fresh process (a failure-injection arming). */
static void store_cold(void) {
  pool_drain();
  pool_off();
}

/* Keeps d's connection for a later fresh database. 1 if it was taken. */
static int pool_put(rt_db *d) {
  static int drain_registered;
  if (!d->poolable || d->img || pool_n == POOL_MAX || wipe(d)) return 0;
  if (!drain_registered) {
    drain_registered = atexit(pool_drain) == 0;
    rt__inject_cold_hook(store_cold);
  }
  db_pool[pool_n++] = *d;
  memset(d, 0, sizeof *d);
  return 1;
}

static int pool_take(rt_db *d) {
  if (pool_n == 0) return 0;
  *d = db_pool[--pool_n];
  return 1;
}

/* Source of rt_db.gen values: strictly increasing, so a value names one
** state of one connection for the whole process. Only ever compared for
** equality; it decides whether a scan is repeated, never a result. */
static uint64_t store_gen_next;

static void new_gen(rt_db *d) { d->gen = ++store_gen_next; }

/* Writes n bytes of p to fd; 0, or -1 with errno set. */
static int write_all(int fd, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n > 0) {
    ssize_t k = write(fd, b, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    b += k;
    n -= (size_t)k;
  }
  return 0;
}

static int db_path(rt_world *w, uint32_t a, char *buf, size_t n) {
  if (!w->cfg.storage_files) return snprintf(buf, n, ":memory:") >= (int)n;
  return snprintf(buf, n, "%s/actor-%u.db", w->cfg.storage_dir, a) >= (int)n;
}

/* A new database file is the template's bytes, marked as a WAL database
** (header bytes 18 and 19): the same schema as running it, without parsing
** and executing every CREATE in each new process (a sigkill generation
** inherits the template from the parent, rt_storage_prepare). Its first
** transaction goes to the WAL as before. 0, or -1 with errno set. */
static int file_from_template(const char *path) {
  if (template_build()) {
    errno = ENOMEM;
    return -1;
  }
  unsigned char head[100];
  if (template_sz < (sqlite3_int64)sizeof head) {
    errno = EINVAL;
    return -1;
  }
  memcpy(head, template_img, sizeof head);
  head[18] = head[19] = 2;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return -1;
  size_t rest = (size_t)template_sz - sizeof head;
  int rc = write_all(fd, head, sizeof head) || write_all(fd, template_img + sizeof head, rest);
  int e = errno;
  if (close(fd) && !rc) return -1;
  errno = e;
  return rc ? -1 : 0;
}

/* Sets up d's new connection: its content (an image, the template) in
** memory, or the pragmas of a file (a new file already holds the schema,
** file_from_template). 0 or -1. */
static int db_setup(rt_world *w, rt_db *d) {
  if (!w->cfg.storage_files && d->img) return open_from_image(d); /* journal: memory */
  if (!w->cfg.storage_files) {
    d->poolable = 1;
    return open_from_template(d);
  }
  /* One process at a time opens an actor's files (a generation of a
  ** sigkill run), so: no file locks or shared-memory index (exclusive), and
  ** no fsync (a process kill keeps what reached the page cache; only an OS
  ** crash needs the fsync, and none is simulated). The WAL and its recovery
  ** on the next open stay real. Exclusive comes first: the other two read
  ** the schema, which opens the WAL, and a WAL opened before exclusive mode
  ** keeps its index in a shared-memory file (an -shm file mapped by every
  ** generation, with a lock call per read transaction); opened after it,
  ** the index is in the heap, rebuilt from the WAL file on every open. */
  if (sqlite3_exec(d->db, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL;"
                   " PRAGMA synchronous=OFF;", NULL, NULL, NULL) ||
      rt__store_register(&host_module))
    return -1;
  return 0;
}

static void hold(rt_world *w, uint32_t a);

int rt__db_open(rt_world *w, uint32_t a) {
  rt_db *d = &w->actors[a].store;
  char path[400];
  if (d->db) return 0;
  new_gen(d);
  if (!w->cfg.storage_files && !d->img && pool_take(d)) {
    new_gen(d);
    hold(w, a);
    return 0;
  }
  if (db_path(w, a, path, sizeof path)) return -1;
  /* A file left by an earlier process (a SIGKILLed generation) already
  ** holds the schema: only a new one is written from the template. */
  struct stat fst;
  int fresh = !w->cfg.storage_files || stat(path, &fst) != 0 || fst.st_size == 0;
  if (w->cfg.storage_files && fresh && file_from_template(path)) {
    fprintf(stderr, "revenant: cannot create storage %s: %s\n", path, strerror(errno));
    unlink(path);
    return -1;
  }
  /* A file takes no POSIX locks ("unix-none"): one process at a time
  ** opens an actor's files (db_setup), so they would only make the next
  ** generation of a sigkill run wait until the kernel has closed the
  ** descriptors of the killed one (about 0.2 ms of each cycle). */
  int rc = sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                           w->cfg.storage_files ? "unix-none" : NULL);
  if (rc != SQLITE_OK) {
    fprintf(stderr, "revenant: cannot open storage %s: %s\n", path, sql_err(d->db, rc));
    sqlite3_close(d->db);
    d->db = NULL;
    return -1;
  }
  if (db_setup(w, d) == 0) {
    hold(w, a);
    return 0;
  }
  /* Half set up: closed, so that the next access opens it again instead
  ** of running statements on a database without its tables; a new file
  ** goes too (its size would mark it as holding the schema). */
  fprintf(stderr, "revenant: cannot set up storage %s\n", path);
  db_close_now(d);
  if (w->cfg.storage_files && fresh) {
    char wal[416];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(path);
    unlink(wal);
  }
  return -1;
}

/* Runs one of the transaction-control statements. */
static void txn_ctl(rt_world *w, uint32_t a, int id);

/* An idle in-memory database of a world with many actors is parked as its
** serialized image (a few KB with 512-byte pages) instead of a live
** connection with its cache and statements; the next access opens it again
** from the image. */
/* Worlds with at most this many actors keep idle connections open: a
** parked database pays a schema parse and a fresh prepare of every
** statement when it wakes (about 40 % of a 1-hour #1595 run, callgrind),
** and a few open connections cost little memory. Only memory depends on
** it: the content and every result are the same. */
#define RT_PARK_MIN_ACTORS 64

void rt__db_park(rt_world *w, rt_db *d) {
  if (w->cfg.storage_files || !d->db || d->txn_open) return;
  if (w->n_actors <= RT_PARK_MIN_ACTORS) return;
  sqlite3_int64 sz;
  unsigned char *img = sqlite3_serialize(d->db, "main", &sz, 0);
  if (!img) return;
  db_close_now(d); /* a pooled connection would keep the pages */
  new_gen(d);
  d->img = img;
  d->img_sz = sz;
}

static int open_from_image(rt_db *d) {
  unsigned char *img = d->img;
  d->img = NULL;
  return sqlite3_deserialize(d->db, "main", img, d->img_sz, d->img_sz,
                             SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE)
             ? -1
             : memdb_exclusive(d->db);
}

void rt__db_close(rt_db *d) {
  new_gen(d);
  if (pool_put(d)) return;
  db_close_now(d);
}

/* Closes d's connection for real (no pool). */
static void db_close_now(rt_db *d) {
  for (int i = 0; i < RT_WIPE_STMTS; i++) {
    sqlite3_finalize(d->wipe[i]);
    d->wipe[i] = NULL;
  }
  free(d->written);
  d->written = NULL;
  d->poolable = 0;
  d->sbx = NULL; /* freed by SQLite with the connection */
  sqlite3_free(d->img);
  d->img = NULL;
  for (int i = 0; i < RT_STMT_MAX; i++) {
    sqlite3_finalize(d->st[i]);
    d->st[i] = NULL;
  }
  sqlite3_close(d->db);
  d->db = NULL;
  d->txn_open = d->held = d->sp_open = d->sp_depth = 0;
}

sqlite3_stmt *rt__stmt(rt_world *w, uint32_t a, const rt_store_module *m, int k) {
  rt_db *d = &w->actors[a].store;
  int id = m->base + k;
  if (!m->registered || k < 0 || k >= m->n_sql) return NULL;
  if (!d->db && rt__db_open(w, a)) return NULL;
  int rc;
  if (!d->st[id] && (rc = sqlite3_prepare_v3(d->db, m->sql[k], -1, SQLITE_PREPARE_PERSISTENT,
                                             &d->st[id], NULL)) != SQLITE_OK) {
    fprintf(stderr, "revenant: sql error: %s\n", sql_err(d->db, rc));
    return NULL;
  }
  sqlite3_reset(d->st[id]); /* every caller binds all parameters */
  if (m->clear_bindings) sqlite3_clear_bindings(d->st[id]);
  return d->st[id];
}

static sqlite3_stmt *stmt(rt_world *w, uint32_t a, int id) {
  return rt__stmt(w, a, &host_module, id);
}

/* Runs transaction-control statement id: its step's result, or -1. Not
** reset after the step: it ran to its end (nothing of it stays active) and
** rt__stmt resets it before its next use (issue #18: one reset less for
** each of 25 control statements per kill/recover cycle). */
static int txn_step(rt_world *w, uint32_t a, int id) {
  sqlite3_stmt *st = stmt(w, a, id);
  return st ? sqlite3_step(st) : -1;
}

static void txn_ctl(rt_world *w, uint32_t a, int id) { (void)txn_step(w, a, id); }

/* ---- held transactions ---------------------------------------------------
** A pooled in-memory database keeps one SQLite transaction open ("held")
** from the moment it is opened or taken from the pool, and each turn is a
** savepoint in it: BEGIN of a turn becomes SAVEPOINT, ROLLBACK becomes
** ROLLBACK TO (still SQLite's own rollback), and COMMIT nothing at all: the
** turn's savepoint stays on SQLite's stack, below every later one, and the
** runtime only ever rolls back to the savepoint of the turn that is open,
** so nothing can undo a committed turn. Every SP_STACK_MAX turns one
** RELEASE of the lowest savepoint empties the stack. Nothing else reads
** the database, so every statement of the connection sees the same rows,
** a crash loses the open turn and nothing else, and parking serializes the
** same pages. A write outside a turn lands in the savepoint of a turn that
** ended (as committed as autocommit). What it saves per turn is the
** journal's start and end and a RELEASE (issue #18: 1.5 k of 9 k
** instructions per one-row transaction, and ~0.9 k per control statement).
** The pool's wipe is a rollback of the held transaction, which restores the
** content it began with: every table empty.
** Never for user SQL (rt__db_user_sql): a statement that rolls back the
** whole transaction (INSERT OR ROLLBACK, RAISE(ROLLBACK)) would lose every
** earlier turn, not only the open one.
** The stack is followed by the statements' results (sp_depth, sp_open), so
** that a control statement that fails (failure injection) leaves the state
** of the BEGIN/ROLLBACK it stands for: a turn whose SAVEPOINT failed writes
** as if committed, and one whose ROLLBACK TO failed stays open and the next
** turn joins it, as the next BEGIN fails inside a transaction still open. */
#define SP_STACK_MAX 8

static int held_off;

void rt_held_txn_set(int on) { held_off = !on; }

static void hold(rt_world *w, uint32_t a) {
  rt_db *d = &w->actors[a].store;
  if (held_off || !d->poolable || d->held || w->actors[a].user_sql) return;
  d->held = txn_step(w, a, ST_BEGIN) == SQLITE_DONE;
}

/* Ends the held transaction (between turns): the connection's turns are
** plain transactions from now on. */
static void unhold(rt_world *w, uint32_t a) {
  rt_db *d = &w->actors[a].store;
  if (!d->held || d->txn_open) return;
  txn_ctl(w, a, ST_COMMIT);
  d->held = d->sp_open = d->sp_depth = 0;
}

void rt__db_user_sql(rt_world *w, uint32_t a) {
  w->actors[a].user_sql = 1;
  unhold(w, a);
}

static void turn_begin(rt_world *w, uint32_t a) {
  rt_db *d = &w->actors[a].store;
  if (d->held && w->actors[a].user_sql) unhold(w, a);
  if (!d->held) {
    txn_ctl(w, a, ST_BEGIN);
  } else if (!d->sp_open && txn_step(w, a, d->sp_depth ? ST_SP_BEGIN : ST_SP_BASE) == SQLITE_DONE) {
    d->sp_open = 1;
    d->sp_depth++;
  }
}

/* After a turn: a full stack is released (all of it: SQLite then also
** empties the savepoints' sub-journal). */
static void stack_trim(rt_world *w, uint32_t a) {
  rt_db *d = &w->actors[a].store;
  if (!d->sp_open && d->sp_depth >= SP_STACK_MAX &&
      txn_step(w, a, ST_SP_RELEASE) == SQLITE_DONE)
    d->sp_depth = 0;
}

/* The turn's savepoint stays where it is. */
static void turn_commit(rt_world *w, uint32_t a) {
  rt_db *d = &w->actors[a].store;
  if (!d->held) {
    txn_ctl(w, a, ST_COMMIT);
    return;
  }
  d->sp_open = 0;
  stack_trim(w, a);
}

/* Back to the open turn's savepoint, which stays (empty) like a committed
** turn's: a write before the next turn is not undone by a later rollback. */
static void turn_rollback(rt_world *w, uint32_t a) {
  rt_db *d = &w->actors[a].store;
  if (!d->held) {
    txn_ctl(w, a, ST_ROLLBACK);
    return;
  }
  if (d->sp_open &&
      txn_step(w, a, d->sp_depth > 1 ? ST_SP_ROLLBACK : ST_SP_ROLLBACK_BASE) == SQLITE_DONE)
    d->sp_open = 0;
  stack_trim(w, a); /* turns that all roll back fill the stack too */
}

static void commit_event(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt__commit_now((rt_world *)ctx, (uint32_t)arg);
}

static int commit_fails(rt_world *w, rt_actor *ac) {
  if (ac->fail_commits > 0) {
    ac->fail_commits--;
    return 1;
  }
  if (w->fail_any_commits > 0) {
    w->fail_any_commits--;
    return 1;
  }
  return fiu_fail("revenant/storage/commit") != 0;
}

static void storage_death(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  rt_kill_actor((rt_world *)ctx, (uint32_t)arg, RT_DEATH_STORAGE);
}

/* A failed commit breaks the output gate: the actor is reset as soon as
** the current turn returns (never under the feet of the code that wrote),
** and the rest of the turn can no longer write. */
static void storage_broken(rt_world *w, uint32_t a) {
  rt_inc *m = w->actors[a].mem;
  if (!m || m->storage_broken || m->death_early) return;
  if (w->cfg.fail_reset == RT_FAIL_RESET_SYNC) {
    /* the old bug, emulated without the use after free: the reset is
    ** recorded inside the failing commit, and the rest of the turn runs
    ** on and writes as if nothing happened; the memory goes after it */
    m->death_early = 1;
    rt__emit(w, RT_EV_ACTOR_DEATH, a, RT_DEATH_STORAGE, m->incarnation, 0, NULL);
  } else {
    m->storage_broken = 1;
  }
  sim_after(w->s, 0, m->dom, storage_death, w, a);
}

void rt__commit_now(rt_world *w, uint32_t a) {
  rt_actor *ac = &w->actors[a];
  rt_db *d = &ac->store;
  if (!d->txn_open) return;
  if (commit_fails(w, ac)) {
    rt__emit(w, RT_EV_STORAGE_FAIL, a, d->txn_id, SQLITE_IOERR, 0, NULL);
    RT_PROBE(w, a, RT_PROBE_STORAGE_FAIL_COMMIT);
    rt__rollback(w, a, "storage_fail");
    storage_broken(w, a);
    return;
  }
  turn_commit(w, a);
  d->txn_open = 0;
  rt__emit(w, RT_EV_TXN_COMMIT, a, d->txn_id, d->txn_writes, 0, NULL);
}

void rt__rollback(rt_world *w, uint32_t a, const char *reason) {
  rt_db *d = &w->actors[a].store;
  if (!d->txn_open) return;
  turn_rollback(w, a);
  new_gen(d); /* the rows written since BEGIN are gone again */
  d->txn_open = 0;
  rt__emit(w, RT_EV_TXN_ROLLBACK, a, d->txn_id, d->txn_writes, 0, reason);
  rt__alarm_sync(w, a);
}

static void hook_event(sim *s, void *ctx, uint64_t arg) {
  (void)s;
  (void)arg;
  rt_world *w = ctx;
  if (w->hook_fn) w->hook_fn(w->hook_ctx);
}

/* Opens the turn's transaction if needed; returns 0 or -1. */
int rt__txn_join(rt_world *w, uint32_t a) {
  rt_actor *ac = &w->actors[a];
  rt_db *d = &ac->store;
  if (!d->db && rt__db_open(w, a)) return -1;
  if (ac->mem && ac->mem->storage_broken) return -1;
  if (d->txn_open) return 0;
  d->txn_open = 1;
  d->txn_id = ++w->next_txn;
  d->txn_writes = 0;
  turn_begin(w, a);
  if (w->cfg.commit != RT_COMMIT_TURN || !ac->mem) return 0;
  sim_after(w->s, w->cfg.commit_window_us, ac->mem->dom, commit_event, w, a);
  return 0;
}

/* Records a write boundary (one RT_EV_WRITE with the table and the row's
** name, as the module gives it); commits at once
** when not in turn mode. */
int rt__txn_wrote_row(rt_world *w, uint32_t a, rt_write_op op, int64_t key, int rc,
                      const char *name) {
  rt_actor *ac = &w->actors[a];
  rt_db *d = &ac->store;
  if (rc != SQLITE_DONE) {
    fprintf(stderr, "revenant: storage write failed: %s\n", sql_err(d->db, rc));
    return -1;
  }
  d->txn_writes++;
  const char *table = op >= 0 && op < 64 ? op_tables[op] : NULL;
  sim_emit(w->s, RT_EV_WRITE, a, op, key, d->txn_id, table ? rt__str(w, table) : 0,
           name ? rt__str(w, name) : 0);
  w->writes++;
  if (w->hook_fn && w->writes == w->hook_k) sim_after(w->s, 0, 0, hook_event, w, 0);
  if (w->cfg.commit != RT_COMMIT_TURN || !ac->mem) rt__commit_now(w, a);
  return 0;
}

int rt__txn_wrote(rt_world *w, uint32_t a, rt_write_op op, int64_t key, int rc) {
  return rt__txn_wrote_row(w, a, op, key, rc, NULL);
}

int rt__w_alarm(rt_world *w, uint32_t a, int64_t at_us) {
  sqlite3_stmt *st;
  if (rt__txn_join(w, a) || !(st = stmt(w, a, at_us < 0 ? ST_ALARM_DELETE : ST_ALARM_SET)))
    return -1;
  if (at_us >= 0) sqlite3_bind_int64(st, 1, at_us);
  return rt__txn_wrote(w, a, at_us < 0 ? RT_W_ALARM_DELETE : RT_W_ALARM_SET, at_us,
                   sqlite3_step(st));
}

/* ---- scans kept while the tables are unchanged --------------------------
** A scan's result depends only on the actor's tables. They change only
** through this connection: a write (counted by sqlite3_total_changes64), a
** rollback, or an open, close or park (each gives rt_db.gen a value never
** used before). So a scan whose (gen, change count) equals the last one's
** would read the same rows, in the same ORDER BY order. */

static int scan_cache_off;

void rt_scan_cache_set(int on) { scan_cache_off = !on; }

/* ---- tables known to be empty --------------------------------------------
** A poolable connection starts as the template or freshly wiped: every
** table empty. Its update hook marks each table a row is written to
** (rt_db_written), and nothing but a written row puts a row in a table, so
** a table with no mark still holds no row, and a scan of it reads none
** (issue #18: seven of a kill/recover cycle's statements were such scans).
** Conservative: a rollback or a deleted row keeps the mark; WITHOUT ROWID
** tables (the hook does not see them) and an unknown table's write (every
** mark set) are never known empty. The index of a name is kept by the
** name's pointer (callers pass literals): 8 entries, then strcmp. */
#define TI_CACHE 8
static const char *ti_ptr[TI_CACHE];
static int ti_idx[TI_CACHE];

static int table_index(const char *table) {
  for (int k = 0; k < ti_n; k++)
    if (ti_ptr[k] == table) return ti_idx[k];
  int i = table_find(table);
  if (i < 0) return -1;
  if (ti_n < TI_CACHE) {
    ti_ptr[ti_n] = table;
    ti_idx[ti_n++] = i;
  }
  return i;
}

int rt__table_empty(rt_world *w, uint32_t a, const char *table) {
  rt_db *d = &w->actors[a].store;
  if (scan_cache_off || w->cfg.storage_files || d->img) return 0;
  if (!d->db && rt__db_open(w, a)) return 0;
  if (!d->written || n_tables < 0) return 0;
  int i = table_index(table);
  return i >= 0 && !((d->written->tables | always_wipe) & (1u << i));
}

int rt__scan_cached(rt_world *w, uint32_t a, int k, int64_t param, void *out,
                    size_t row_size, int cap, int *n) {
  rt_actor *ac = &w->actors[a];
  rt_scan_cache *c = &ac->scan[k];
  if (scan_cache_off || w->cfg.storage_files || !ac->store.db || c->gen != ac->store.gen ||
      c->param != param || c->cap_rows != cap ||
      c->changes != (int64_t)sqlite3_total_changes64(ac->store.db))
    return 0;
  if (c->n) memcpy(out, c->rows, (size_t)c->n * row_size);
  *n = c->n;
  return 1;
}

void rt__scan_store(rt_world *w, uint32_t a, int k, int64_t param,
                    const void *rows, size_t row_size, int cap, int n) {
  rt_actor *ac = &w->actors[a];
  rt_scan_cache *c = &ac->scan[k];
  size_t need = (size_t)n * row_size;
  c->gen = 0;
  if (w->cfg.storage_files || !ac->store.db) return;
  if (need > c->cap) {
    void *r = realloc(c->rows, need);
    if (!r) return;
    c->rows = r;
    c->cap = need;
  }
  if (need) memcpy(c->rows, rows, need);
  c->n = n;
  c->cap_rows = cap;
  c->param = param;
  c->changes = (int64_t)sqlite3_total_changes64(ac->store.db);
  c->gen = ac->store.gen;
}

void rt__scan_free(rt_actor *ac) {
  for (int k = 0; k < RT_SCAN_SLOTS; k++) {
    free(ac->scan[k].rows);
    ac->scan[k].rows = NULL;
    ac->scan[k].cap = 0;
    ac->scan[k].gen = 0;
  }
}

int64_t rt__step_int(sqlite3_stmt *st, int64_t dflt) {
  int64_t v = dflt;
  if (!st) return dflt;
  if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
    v = sqlite3_column_int64(st, 0);
  sqlite3_reset(st);
  return v;
}

static int64_t one_int(rt_world *w, uint32_t a, int id, int64_t dflt) {
  return rt__step_int(stmt(w, a, id), dflt);
}

int64_t rt__stored_alarm(rt_world *w, uint32_t a) { return one_int(w, a, ST_ALARM_GET, -1); }

void rt__db_alarm_drop(rt_world *w, uint32_t a) {
  sqlite3_stmt *st = stmt(w, a, ST_ALARM_DELETE);
  if (!st) return;
  sqlite3_step(st);
  sqlite3_reset(st);
}

/* Prepares an ad-hoc statement on the actor's database (opened if needed);
** the caller finalizes it. NULL, with a message, on an SQL error. */
sqlite3_stmt *rt__prepare(rt_world *w, uint32_t a, const char *q) {
  rt_db *d = &w->actors[a].store;
  sqlite3_stmt *st = NULL;
  if (!d->db && rt__db_open(w, a)) return NULL;
  int rc = sqlite3_prepare_v2(d->db, q, -1, &st, NULL);
  if (rc != SQLITE_OK) {
    fprintf(stderr, "revenant: sql error: %s\n", sql_err(d->db, rc));
    sqlite3_finalize(st);
    return NULL;
  }
  return st;
}
