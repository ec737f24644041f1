/*
** test_sim_trace.c: the trace, string interning and the rolling hash
** (sim/sim_trace.h), including hash stability across processes.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/sim.h"

static const sim_rec base_rec = {1000, 7, 3, -5, 6, 1LL << 40, 0, 0};

/* Builds a trace with three records, the middle one given. */
static uint64_t hash_with(const sim_rec *mid, const char *s1, const char *s2) {
  sim_trace t;
  assert_int_equal(sim_trace_init(&t), 0);
  sim_rec r = base_rec;
  sim_trace_append(&t, &r);
  r = *mid;
  r.s = sim_trace_intern(&t, s1);
  r.s2 = sim_trace_intern(&t, s2);
  sim_trace_append(&t, &r);
  r = base_rec;
  r.t_us = 2000;
  sim_trace_append(&t, &r);
  uint64_t h = t.hash;
  sim_trace_free(&t);
  return h;
}

static void test_identical_sequences_same_hash(void **state) {
  (void)state;
  uint64_t h1 = hash_with(&base_rec, "alpha", "beta");
  uint64_t h2 = hash_with(&base_rec, "alpha", "beta");
  assert_int_equal(h1, h2);
  assert_true(h1 != SIM_TRACE_HASH_INIT);
}

static void test_any_field_changes_hash(void **state) {
  (void)state;
  uint64_t h0 = hash_with(&base_rec, "alpha", "beta");
  uint64_t seen[16];
  int n = 0;
  seen[n++] = h0;
  for (int f = 0; f < 6; f++) {
    sim_rec r = base_rec;
    switch (f) {
      case 0: r.t_us += 1; break;
      case 1: r.kind ^= 1; break;
      case 2: r.actor = UINT32_MAX; break;
      case 3: r.a = 5; break;
      case 4: r.b += 1LL << 62; break;
      case 5: r.c = 0; break;
    }
    seen[n++] = hash_with(&r, "alpha", "beta");
  }
  seen[n++] = hash_with(&base_rec, "alphb", "beta");   /* string content */
  seen[n++] = hash_with(&base_rec, "alpha", "betb");
  seen[n++] = hash_with(&base_rec, "beta", "alpha");   /* swapped */
  seen[n++] = hash_with(&base_rec, "alpha", NULL);     /* absent */
  seen[n++] = hash_with(&base_rec, NULL, "alpha");
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) assert_true(seen[i] != seen[j]);

  /* Record order matters. */
  sim_trace a, b;
  sim_trace_init(&a);
  sim_trace_init(&b);
  sim_rec r1 = base_rec, r2 = base_rec;
  r2.a = 99;
  sim_trace_append(&a, &r1);
  sim_trace_append(&a, &r2);
  sim_trace_append(&b, &r2);
  sim_trace_append(&b, &r1);
  assert_true(a.hash != b.hash);
  sim_trace_free(&a);
  sim_trace_free(&b);
}

static void test_string_ids_by_first_appearance(void **state) {
  (void)state;
  sim_trace t;
  sim_trace_init(&t);
  assert_int_equal(sim_trace_intern(&t, NULL), 0);
  assert_int_equal(sim_trace_intern(&t, ""), 0);
  assert_int_equal(sim_trace_intern(&t, "x"), 1);
  assert_int_equal(sim_trace_intern(&t, "y"), 2);
  assert_int_equal(sim_trace_intern(&t, "x"), 1);
  assert_int_equal(sim_trace_intern(&t, "z"), 3);
  assert_string_equal(sim_trace_str(&t, 0), "");
  assert_string_equal(sim_trace_str(&t, 2), "y");
  assert_string_equal(sim_trace_str(&t, 99), "");
  assert_int_equal(sim_trace_str_hash(&t, 0), 0);
  assert_int_equal(sim_trace_str_hash(&t, 1), sim_hash_str("x"));
  assert_int_equal(sim_trace_str_hash(&t, 99), 0);
  /* Many strings (index rebuilt several times): ids stay put. */
  char buf[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(buf, sizeof buf, "s%d", i);
    assert_int_equal(sim_trace_intern(&t, buf), (uint32_t)(4 + i));
  }
  for (int i = 4999; i >= 0; i--) {
    snprintf(buf, sizeof buf, "s%d", i);
    assert_int_equal(sim_trace_intern(&t, buf), (uint32_t)(4 + i));
    assert_string_equal(sim_trace_str(&t, (uint32_t)(4 + i)), buf);
  }
  assert_int_equal(sim_trace_intern(&t, "x"), 1);
  /* One buffer whose content changes between calls (a script's stash JSON):
  ** the pointer memo never answers with the id of an older content. */
  uint32_t alt[2] = {0, 0};
  for (int i = 0; i < 6; i++) {
    strcpy(buf, i % 2 ? "alt-b" : "alt-a");
    uint32_t got = sim_trace_intern(&t, buf);
    if (i < 2) alt[i] = got;
    assert_int_equal(got, alt[i % 2]);
    assert_int_equal(sim_trace_intern(&t, buf), got); /* the same content again */
    assert_string_equal(sim_trace_str(&t, got), buf);
  }
  assert_int_not_equal(alt[0], alt[1]);
  assert_int_equal(sim_trace_intern(&t, "x"), 1);
  /* The copy is owned by the trace. */
  strcpy(buf, "mutable");
  uint32_t id = sim_trace_intern(&t, buf);
  buf[0] = 'M';
  assert_string_equal(sim_trace_str(&t, id), "mutable");
  assert_int_equal(sim_trace_intern(&t, "Mutable"), id + 1);
  sim_trace_free(&t);
}

/* sim_trace_intern_fixed gives the ids sim_trace_intern gives, also when
** its entries share memo sets with buffers that are reused with new content
** (pointers of 64 literals fill every set, and one buffer is interned with
** 64 contents in between), and on repeats answered from the memo. */
static void test_intern_fixed_same_ids(void **state) {
  (void)state;
  static const char *const lits[] = {
#define L8(p) p "0", p "1", p "2", p "3", p "4", p "5", p "6", p "7"
      L8("a"), L8("b"), L8("c"), L8("d"), L8("e"), L8("f"), L8("g"), L8("h")};
#undef L8
  enum { N = sizeof lits / sizeof lits[0] };
  sim_trace t;
  char buf[32], copy[32];
  uint32_t id[N];
  assert_int_equal(sim_trace_init(&t), 0);
  for (int round = 0; round < 3; round++)
    for (int i = 0; i < N; i++) {
      uint32_t got = sim_trace_intern_fixed(&t, lits[i]);
      if (round == 0) id[i] = got;
      assert_int_equal(got, id[i]);
      snprintf(copy, sizeof copy, "%s", lits[i]);
      assert_int_equal(sim_trace_intern(&t, copy), id[i]); /* the content's id */
      snprintf(buf, sizeof buf, "buf-%d-%d", round, i);  /* the same pointer, new content */
      uint32_t b = sim_trace_intern(&t, buf);
      assert_string_equal(sim_trace_str(&t, b), buf);
      assert_string_equal(sim_trace_str(&t, sim_trace_intern_fixed(&t, lits[i])), lits[i]);
    }
  /* a buffer interned with other content before it became fixed: the memo's
     entry for its pointer is not trusted */
  snprintf(buf, sizeof buf, "before");
  uint32_t before = sim_trace_intern(&t, buf);
  snprintf(buf, sizeof buf, "after");
  uint32_t after = sim_trace_intern_fixed(&t, buf);
  assert_int_not_equal(after, before);
  assert_string_equal(sim_trace_str(&t, after), "after");
  assert_int_equal(sim_trace_intern_fixed(&t, buf), after);
  assert_int_equal(sim_trace_intern_fixed(&t, ""), 0);
  assert_int_equal(sim_trace_intern_fixed(&t, NULL), 0);
  sim_trace_free(&t);
}

static void test_hash_independent_of_string_ids(void **state) {
  (void)state;
  sim_trace a, b;
  sim_trace_init(&a);
  sim_trace_init(&b);
  /* Same strings, interned in different orders: different ids. */
  uint32_t a_foo = sim_trace_intern(&a, "foo"), a_bar = sim_trace_intern(&a, "bar");
  uint32_t b_bar = sim_trace_intern(&b, "bar"), b_foo = sim_trace_intern(&b, "foo");
  sim_trace_intern(&b, "unused");
  assert_true(a_foo != b_foo);
  sim_rec r = base_rec;
  r.s = a_foo;
  r.s2 = a_bar;
  sim_trace_append(&a, &r);
  r.s = b_foo;
  r.s2 = b_bar;
  sim_trace_append(&b, &r);
  assert_int_equal(a.hash, b.hash);
  /* Recomputing with sim_trace_fold gives the same value. */
  uint64_t h = sim_trace_fold(SIM_TRACE_HASH_INIT, &r, sim_hash_str("foo"),
                              sim_hash_str("bar"));
  assert_int_equal(h, a.hash);
  /* And the same ids with swapped contents differ. */
  r.s = b_bar;
  r.s2 = b_foo;
  sim_trace_append(&b, &r);
  r.s = a_foo;
  r.s2 = a_bar;
  sim_trace_append(&a, &r);
  assert_true(a.hash != b.hash);
  sim_trace_free(&a);
  sim_trace_free(&b);
}

typedef struct obs_log {
  sim_rec *recs;
  uint64_t *idx;
  size_t n;
} obs_log;

static void observe(void *ctx, const sim_rec *r, uint64_t index) {
  obs_log *o = ctx;
  o->recs[o->n] = *r;
  o->idx[o->n] = index;
  o->n++;
}

static void nop_observer(void *ctx, const sim_rec *r, uint64_t index) {
  (void)ctx;
  (void)r;
  (void)index;
}

static void test_observers_see_every_record(void **state) {
  (void)state;
  enum { N = 3000 };
  sim_trace t, quiet;
  sim_trace_init(&t);
  sim_trace_init(&quiet);
  quiet.keep = 0;
  obs_log o1 = {calloc(N, sizeof(sim_rec)), calloc(N, sizeof(uint64_t)), 0};
  obs_log o2 = {calloc(N, sizeof(sim_rec)), calloc(N, sizeof(uint64_t)), 0};
  obs_log o3 = {calloc(N, sizeof(sim_rec)), calloc(N, sizeof(uint64_t)), 0};
  assert_int_equal(sim_trace_observe(&t, observe, &o1), 0);
  assert_int_equal(sim_trace_observe(&t, observe, &o2), 0);
  assert_int_equal(sim_trace_observe(&quiet, observe, &o3), 0);
  for (int i = 0; i < N; i++) {
    sim_rec r = base_rec;
    r.t_us = i;
    r.a = i * 31;
    r.s = sim_trace_intern(&t, i % 2 ? "odd" : "even");
    sim_trace_append(&t, &r);
    r.s = sim_trace_intern(&quiet, i % 2 ? "odd" : "even");
    sim_trace_append(&quiet, &r);
  }
  assert_int_equal(o1.n, N);
  assert_int_equal(o2.n, N);
  assert_int_equal(o3.n, N);
  assert_int_equal(t.count, N);
  assert_int_equal(t.n, N);
  for (int i = 0; i < N; i++) {
    assert_int_equal(o1.idx[i], i);
    assert_int_equal(o2.idx[i], i);
    assert_int_equal(o3.idx[i], i);
    assert_memory_equal(&o1.recs[i], &t.recs[i], sizeof(sim_rec));
    assert_memory_equal(&o2.recs[i], &t.recs[i], sizeof(sim_rec));
    assert_int_equal(o1.recs[i].a, i * 31);
  }
  /* keep = 0: records are not kept, but counted, hashed and observed. */
  assert_int_equal(quiet.n, 0);
  assert_int_equal(quiet.count, N);
  assert_int_equal(quiet.hash, t.hash);
  /* the observer table is bounded */
  for (int i = 2; i < SIM_TRACE_MAX_OBSERVERS; i++)
    assert_int_equal(sim_trace_observe(&t, nop_observer, NULL), 0);
  assert_int_equal(sim_trace_observe(&t, nop_observer, NULL), -1);
  sim_trace_free(&t);
  sim_trace_free(&quiet);
  free(o1.recs); free(o1.idx);
  free(o2.recs); free(o2.idx);
  free(o3.recs); free(o3.idx);
}

/* ---- a whole simulation, hashed, in several processes ------------------- */

/* Each actor is its own heap object and the event context, so a kernel that
** let pointer values (which differ between processes) into the order would
** give different hashes in different processes. */
typedef struct actor {
  struct world *w;
  uint32_t dom;
  uint32_t id;
  uint64_t steps;
} actor;

typedef struct world {
  sim_rng rng;
  actor *actors[32];
} world;

static void actor_step(sim *s, void *ctx, uint64_t arg) {
  actor *me = ctx;
  world *w = me->w;
  char name[48];
  me->steps++;
  /* New strings appear as the run goes on, so ids depend on the run. */
  snprintf(name, sizeof name, "op-%llu", (unsigned long long)(arg % 97));
  uint32_t op = sim_trace_intern(&s->trace, name);
  snprintf(name, sizeof name, "actor-%u", me->id);
  uint32_t who = sim_trace_intern(&s->trace, name);
  sim_emit(s, (uint32_t)(arg % 11), me->id, (int64_t)arg,
           (int64_t)me->steps, (int64_t)sim_pending(s), op, who);
  uint64_t fan = sim_rng_below(&w->rng, 4);
  for (uint64_t i = 0; i < fan; i++) {
    actor *to = w->actors[sim_rng_below(&w->rng, 32)];
    sim_after(s, (int64_t)sim_rng_below(&w->rng, 5) * 1000, to->dom, actor_step,
              to, arg * 7 + i + 1);
  }
  if (sim_rng_chance_ppm(&w->rng, 5000))
    sim_domain_kill(s, w->actors[sim_rng_below(&w->rng, 32)]->dom);
}

static uint64_t run_world(uint64_t seed) {
  sim s;
  world w;
  sim_config c = {seed, SIM_RANDOM, 1, 0};
  if (sim_init(&s, &c)) return 0;
  sim_rng_stream(&w.rng, seed, "workload");
  for (uint32_t i = 0; i < 32; i++) {
    w.actors[i] = calloc(1, sizeof(actor));
    if (!w.actors[i]) abort();
    w.actors[i]->w = &w;
    w.actors[i]->id = i;
    w.actors[i]->dom = sim_domain_new(&s);
  }
  for (uint64_t i = 0; i < 64; i++)
    sim_at(&s, 0, w.actors[i % 32]->dom, actor_step, w.actors[i % 32], i);
  sim_run(&s, INT64_MAX, 10000);
  uint64_t h = s.dispatched == 10000 ? s.trace.hash : 0;
  sim_free(&s);
  for (int i = 0; i < 32; i++) free(w.actors[i]);
  return h;
}

#define CHILD_ENV "TEST_SIM_TRACE_HASH_FD"
#define SEED 20240611ULL

static int write_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t k = write(fd, c, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    c += k;
    n -= (size_t)k;
  }
  return 0;
}

/* Child: fork only (same address space layout) or fork + exec of this very
** binary (fresh layout, fresh allocator state). */
static pid_t spawn_child(int wfd, int rfd, int do_exec) {
  /* Resolved before forking; readlink (not exec of /proc/self/exe itself)
  ** names this test binary also under valgrind. */
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return -1;
  self[len] = 0;
  pid_t pid = fork();
  if (pid != 0) return pid;
  close(rfd);
  if (do_exec) {
    char fdbuf[16];
    snprintf(fdbuf, sizeof fdbuf, "%d", wfd);
    setenv(CHILD_ENV, fdbuf, 1);
    execl(self, "test_sim_trace", (char *)NULL);
    _exit(126);
  }
  uint64_t h = run_world(SEED);
  _exit(write_all(wfd, &h, sizeof h) ? 1 : 0);
}

static uint64_t read_child(int rfd, pid_t pid) {
  uint64_t h = 0;
  ssize_t k = read(rfd, &h, sizeof h);
  assert_int_equal(k, (ssize_t)sizeof h);
  int st = 0;
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 0);
  close(rfd);
  return h;
}

static void test_hash_stable_across_processes(void **state) {
  (void)state;
  uint64_t here = run_world(SEED);
  assert_true(here != 0);
  assert_int_equal(run_world(SEED), here);       /* same process, twice */
  assert_true(run_world(SEED + 1) != here);      /* the seed matters */

  uint64_t got[2];
  for (int k = 0; k < 2; k++) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = spawn_child(fds[1], fds[0], k == 1);
    assert_true(pid > 0);
    close(fds[1]);
    got[k] = read_child(fds[0], pid);
  }
  assert_int_equal(got[0], got[1]);
  assert_int_equal(got[0], here);
}

int main(void) {
  const char *fd = getenv(CHILD_ENV);
  if (fd) { /* re-executed child of test_hash_stable_across_processes */
    uint64_t h = run_world(SEED);
    return write_all(atoi(fd), &h, sizeof h) ? 1 : 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identical_sequences_same_hash),
      cmocka_unit_test(test_any_field_changes_hash),
      cmocka_unit_test(test_string_ids_by_first_appearance),
      cmocka_unit_test(test_intern_fixed_same_ids),
      cmocka_unit_test(test_hash_independent_of_string_ids),
      cmocka_unit_test(test_observers_see_every_record),
      cmocka_unit_test(test_hash_stable_across_processes),
  };
  return cmocka_run_group_tests_name("sim_trace", tests, NULL, NULL) != 0;
}
