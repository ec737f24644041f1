/*
** rt_sqlmem.c: SQLite's allocator (SQLITE_CONFIG_MALLOC): size classes with
** free lists in front of malloc (issue #18).
**
** Debian's SQLite is built without lookaside memory, so every small object
** of a statement (cursors, record buffers, savepoints, journal chunks,
** cache pages) is a malloc and a free: about 110 of each per kill/recover
** cycle, in bursts larger than glibc's per-thread cache, so most went to
** its bins and back (12 % of the cycle's CPU). Here a block of up to
** SM_MAX bytes is taken from and given back to a free list of its class
** (multiples of 16 bytes); larger blocks go to malloc as before. Each block
** carries its usable size in an 8-byte header (xSize; SQLite needs 8-byte
** alignment; malloc_usable_size instead cost 1.6 k instructions a cycle).
** At most SM_CACHE_BYTES are kept on the lists in all, so that memory held
** by idle actors is unchanged (a free over the limit is a free).
**
** One simulation is one thread (DESIGN.md rule 1) and SQLite runs in
** single-thread mode, so the lists take no lock. Addresses never decide
** anything, so results are the same as with malloc. The calls to malloc and
** free are in parentheses: they are SQLite's own allocations, not failure
** injection sites of the runtime (rt_inject.h). Under AddressSanitizer the
** allocator is not installed: a block on a free list would hide a use after
** free from it.
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */

#include "runtime/rt_host.h"
#include "sim/sim_asan.h"

#define SM_HEAD 8                /* the header: the block's usable size */
#define SM_GRAIN 16
#define SM_MAX 2048              /* largest block with a class, header included */
#define SM_CLASSES (SM_MAX / SM_GRAIN)
#define SM_CACHE_BYTES (512 * 1024)

typedef struct sm_free {
  struct sm_free *next;
} sm_free;

static sm_free *lists[SM_CLASSES]; /* [b / 16 - 1]: free blocks of b bytes */
static size_t cached_bytes;

/* Bytes of a block (header included) that holds n usable bytes. */
static size_t block_bytes(size_t n) {
  return (n + SM_HEAD + SM_GRAIN - 1) & ~(size_t)(SM_GRAIN - 1);
}

static void *sm_malloc(int n) {
  if (n <= 0) return NULL;
  size_t b = block_bytes((size_t)n);
  int64_t *h;
  if (b <= SM_MAX && lists[b / SM_GRAIN - 1]) {
    sm_free *f = lists[b / SM_GRAIN - 1];
    lists[b / SM_GRAIN - 1] = f->next;
    cached_bytes -= b;
    h = (int64_t *)(void *)f;
  } else if (!(h = (malloc)(b))) {
    return NULL;
  }
  *h = (int64_t)(b - SM_HEAD);
  return (char *)h + SM_HEAD;
}

static int sm_size(void *p) {
  return p ? (int)*(int64_t *)(void *)((char *)p - SM_HEAD) : 0;
}

static void sm_release(void *p) {
  if (!p) return;
  char *h = (char *)p - SM_HEAD;
  size_t b = (size_t)sm_size(p) + SM_HEAD;
  if (b > SM_MAX || cached_bytes + b > SM_CACHE_BYTES) {
    (free)(h);
    return;
  }
  sm_free *f = (sm_free *)(void *)h;
  f->next = lists[b / SM_GRAIN - 1];
  lists[b / SM_GRAIN - 1] = f;
  cached_bytes += b;
}

static void *sm_realloc(void *p, int n) {
  if (!p) return sm_malloc(n);
  int old = sm_size(p);
  if (n > 0 && block_bytes((size_t)n) == (size_t)old + SM_HEAD) return p;
  void *q = sm_malloc(n);
  if (!q) return NULL;
  memcpy(q, p, (size_t)(old < n ? old : n));
  sm_release(p);
  return q;
}

static int sm_roundup(int n) {
  return n <= 0 ? n : (int)(block_bytes((size_t)n) - SM_HEAD);
}

static int sm_init(void *arg) {
  (void)arg;
  return SQLITE_OK;
}

/* Gives every cached block back to malloc. */
static void sm_trim(void) {
  for (int i = 0; i < SM_CLASSES; i++) {
    while (lists[i]) {
      sm_free *f = lists[i];
      lists[i] = f->next;
      (free)(f);
    }
  }
  cached_bytes = 0;
}

static void sm_shutdown(void *arg) {
  (void)arg;
  sm_trim();
}

static const sqlite3_mem_methods sm_methods = {sm_malloc, sm_release, sm_realloc, sm_size,
                                               sm_roundup, sm_init, sm_shutdown, NULL};

void rt__sqlmem_install(void) {
#if !SIM_ASAN
  sqlite3_config(SQLITE_CONFIG_MALLOC, &sm_methods);
#else
  (void)sm_methods; /* SQLite's own allocator: ASan sees every free */
#endif
}

void rt__sqlmem_trim(void) { sm_trim(); }

size_t rt__sqlmem_cached(void) { return cached_bytes; }

int rt__sqlmem_on(void) {
#if !SIM_ASAN
  return 1;
#else
  return 0;
#endif
}
