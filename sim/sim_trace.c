/*
** sim_trace.c: trace records, string interning and the rolling hash.
*/
#include "sim_trace.h"

#include <stdlib.h>
#include <string.h>

#include "sim_rng.h"

int sim_trace_init(sim_trace *t) {
  memset(t, 0, sizeof *t);
  t->keep = 1;
  t->hash = SIM_TRACE_HASH_INIT;
  t->strings.cap = 16;
  t->strings.str = calloc(t->strings.cap, sizeof(char *));
  t->strings.hash = calloc(t->strings.cap, sizeof(uint64_t));
  if (!t->strings.str || !t->strings.hash) {
    free(t->strings.str);
    free(t->strings.hash);
    memset(t, 0, sizeof *t);
    return -1;
  }
  t->strings.str[0] = NULL;
  t->strings.n = 1;
  return 0;
}

void sim_trace_free(sim_trace *t) {
  for (size_t i = 1; i < t->strings.n; i++) free(t->strings.str[i]);
  free(t->strings.str);
  free(t->strings.hash);
  free(t->strings.index);
  free(t->recs);
  memset(t, 0, sizeof *t);
}

static int strtab_reindex(sim_strtab *st, size_t cap) {
  uint32_t *ix = calloc(cap, sizeof(uint32_t));
  if (!ix) return -1;
  for (size_t id = 1; id < st->n; id++) {
    size_t j = st->hash[id] & (cap - 1);
    while (ix[j]) j = (j + 1) & (cap - 1);
    ix[j] = (uint32_t)id;
  }
  free(st->index);
  st->index = ix;
  st->index_cap = cap;
  return 0;
}

static uint32_t sim_trace_intern_slow(sim_trace *t, const char *s);

static uint32_t strtab_add(sim_strtab *st, const char *s, uint64_t h) {
  if (st->n == st->cap) {
    size_t nc = st->cap * 2;
    char **ns = realloc(st->str, nc * sizeof(char *));
    if (!ns) return 0;
    st->str = ns;
    uint64_t *nh = realloc(st->hash, nc * sizeof(uint64_t));
    if (!nh) return 0;
    st->hash = nh;
    st->cap = nc;
  }
  char *copy = strdup(s);
  if (!copy) return 0;
  st->str[st->n] = copy;
  st->hash[st->n] = h;
  return (uint32_t)st->n++;
}

/* The memo set of pointer s. */
static inline size_t memo_set(const char *s) {
  return (size_t)(((uint64_t)(uintptr_t)s * 0x9e3779b97f4a7c15ULL) >> 59);
}

uint32_t sim_trace_intern(sim_trace *t, const char *s) {
  sim_strtab *st = &t->strings;
  if (!s || !*s) return 0;
  size_t m = memo_set(s);
  if (st->memo_ptr[m][0] == s && strcmp(st->str[st->memo_id[m][0]], s) == 0) return st->memo_id[m][0];
  if (st->memo_ptr[m][1] == s && strcmp(st->str[st->memo_id[m][1]], s) == 0) return st->memo_id[m][1];
  uint32_t id = sim_trace_intern_slow(t, s);
  if (id) { /* the newest in way 0, the one it displaces in way 1; a buffer
            ** reused with new content (a script's stash JSON) replaces its
            ** own entry instead, so it does not push out a constant */
    if (st->memo_ptr[m][1] == s) st->memo_ptr[m][1] = NULL;
    if (st->memo_ptr[m][0] != s) {
      st->memo_ptr[m][1] = st->memo_ptr[m][0];
      st->memo_id[m][1] = st->memo_id[m][0];
      st->memo_fixed[m][1] = st->memo_fixed[m][0];
    }
    st->memo_ptr[m][0] = s;
    st->memo_id[m][0] = id;
    st->memo_fixed[m][0] = 0;
  }
  return id;
}

uint32_t sim_trace_intern_fixed(sim_trace *t, const char *s) {
  sim_strtab *st = &t->strings;
  if (!s || !*s) return 0;
  size_t m = memo_set(s);
  if (st->memo_ptr[m][0] == s && st->memo_fixed[m][0]) return st->memo_id[m][0];
  if (st->memo_ptr[m][1] == s && st->memo_fixed[m][1]) return st->memo_id[m][1];
  uint32_t id = sim_trace_intern(t, s); /* checks the content, puts s in way 0 */
  if (id && st->memo_ptr[m][0] == s) st->memo_fixed[m][0] = 1;
  return id;
}

static uint32_t sim_trace_intern_slow(sim_trace *t, const char *s) {
  sim_strtab *st = &t->strings;
  if (st->index_cap < 2 * (st->n + 1) && strtab_reindex(st, st->index_cap ? st->index_cap * 2 : 64))
    return 0;
  uint64_t h = sim_hash_str(s);
  size_t j = h & (st->index_cap - 1);
  while (st->index[j]) {
    uint32_t id = st->index[j];
    if (st->hash[id] == h && strcmp(st->str[id], s) == 0) return id;
    j = (j + 1) & (st->index_cap - 1);
  }
  uint32_t id = strtab_add(st, s, h);
  if (id) st->index[j] = id;
  return id;
}

const char *sim_trace_str(const sim_trace *t, uint32_t id) {
  if (id == 0 || id >= t->strings.n) return "";
  return t->strings.str[id];
}

uint64_t sim_trace_str_hash(const sim_trace *t, uint32_t id) {
  if (id == 0 || id >= t->strings.n) return 0;
  return t->strings.hash[id];
}

static inline uint64_t fold1(uint64_t h, uint64_t x) {
  h ^= x;
  h *= 0x9e3779b97f4a7c15ULL;
  return h ^ (h >> 29);
}

uint64_t sim_trace_fold(uint64_t h, const sim_rec *r, uint64_t s_hash,
                        uint64_t s2_hash) {
  h = fold1(h, (uint64_t)r->t_us);
  h = fold1(h, ((uint64_t)r->kind << 32) | r->actor);
  h = fold1(h, (uint64_t)r->a);
  h = fold1(h, (uint64_t)r->b);
  h = fold1(h, (uint64_t)r->c);
  h = fold1(h, s_hash);
  return fold1(h, s2_hash);
}

void sim_trace_append(sim_trace *t, const sim_rec *r) {
  uint64_t index = t->count++;
  t->hash = sim_trace_fold(t->hash, r, sim_trace_str_hash(t, r->s),
                           sim_trace_str_hash(t, r->s2));
  if (t->keep) {
    if (t->n == t->cap) {
      size_t nc = t->cap ? t->cap * 2 : 256;
      sim_rec *nr = realloc(t->recs, nc * sizeof(sim_rec));
      if (nr) {
        t->recs = nr;
        t->cap = nc;
      }
    }
    if (t->n < t->cap) t->recs[t->n++] = *r;
  }
  for (int i = 0; i < t->n_obs; i++) t->obs[i](t->obs_ctx[i], r, index);
}

int sim_trace_observe(sim_trace *t, sim_observer_fn fn, void *ctx) {
  if (t->n_obs >= SIM_TRACE_MAX_OBSERVERS) return -1;
  t->obs[t->n_obs] = fn;
  t->obs_ctx[t->n_obs] = ctx;
  t->n_obs++;
  return 0;
}
