/*
** scn_swarm.c: the swarm engine (scn_swarm.h, docs/swarm.md): a pool of
** forked workers, sharding, signatures, results streamed in job order.
**
** The jobs are a work queue: a counter in memory shared with the workers
** (sw_shared) that each worker takes its next job from when it finished
** one, so no core waits for a slower worker's tail. Before it runs a job a
** worker records it in its slot of that memory, and it sends one line per
** job over its pipe, flushed before it takes the next, so when a worker
** dies the parent knows the job it died in: the one in its slot with no
** result yet. That job is a failure (crash or timeout) and a fresh worker
** takes the slot. Every worker leads its
** own process group, so a kill reaches the children it forked (the
** generations of a sigkill run) as well; a worker and its children dying
** with the parent is arranged with PR_SET_PDEATHSIG where there is one.
*/
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "scenarios/scn_internal.h"
#include "scenarios/scn_swarm.h"

typedef struct sw_unit {
  size_t file;
  int ci;
} sw_unit;

/* A finished job waiting in the reorder buffer (state 0: empty slot). */
typedef struct sw_res {
  uint8_t state, passed;
  int n_viol;
  uint64_t hash, events;
  int64_t end_us;
  char *failure, *sig;
  chk_violation *viol;
  char *extra;                  /* the worker's "E" line (opts.worker_extra) */
  uint64_t probes;              /* the worker's "P" line: probes the run reached */
  uint8_t met;                  /* the run met the case's expected violations */
} sw_res;

typedef struct sw_worker {
  pid_t pid;
  int fd, done;
  double started;               /* wall time its current job started */
  char *buf;
  size_t len, cap;
} sw_worker;

/* The work queue, in memory shared with every worker (MAP_SHARED). */
typedef struct sw_shared {
  _Atomic uint64_t next;        /* the next job nobody has taken yet */
  _Atomic uint64_t cur[];       /* per worker slot: 1 + the job its worker took
                                   last, 0 before its first */
} sw_shared;

#define SW_NONE UINT64_MAX      /* no job */

struct scn_swarm {
  scn_swarm_opts o;
  scn_scenario *const *sc;
  size_t n_sc;
  sw_unit *units;
  size_t n_units;
  uint64_t total;               /* jobs; 0 = unbounded */
  int no_seeds;                 /* --time, but this shard has no seed below 2^64 */
  sw_res *ring;                 /* job j at ring[j % ring_cap] */
  uint64_t ring_cap, next_out, end_seen;
  uint64_t done, failed;
  scn_swarm_group *groups;
  size_t n_groups, cap_groups;
  scn_swarm_probe probe[RT_PROBE_COUNT]; /* runs that reached each probe */
  uint64_t *unit_probes;        /* per unit: the probes any of its runs reached */
  scn_swarm_tally *tally;       /* per unit: runs, met, mode */
  sw_worker *w;
  int n_w;
  sw_shared *sh;                /* the queue, with n_w slots (NULL until made) */
  size_t sh_size;
  double t0, deadline, last_progress;
  char tmpdir[600];
};

static double sw_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- jobs ------------------------------------------------------------------ */

static const sw_unit *job_unit(const scn_swarm *s, uint64_t j, uint64_t *seed) {
  const sw_unit *u = &s->units[j % s->n_units];
  uint64_t k = j / s->n_units;
  uint64_t base = s->o.have_base ? s->o.base : s->sc[u->file]->seed;
  *seed = base + (uint64_t)(s->o.shard_i - 1) + k * (uint64_t)s->o.shard_n;
  return u;
}

static sim_strategy job_strategy(const scn_swarm *s, const scn_scenario *sc) {
  if (s->o.strategy >= 0) return (sim_strategy)s->o.strategy;
  return sc->strategy == SIM_FIFO ? SIM_RANDOM : sc->strategy;
}

void scn_swarm_job_info(const scn_swarm *s, uint64_t j, scn_swarm_job *out) {
  const sw_unit *u = job_unit(s, j, &out->seed);
  out->job = j;
  out->unit = (size_t)(u - s->units);
  out->file = u->file;
  out->ci = u->ci;
  out->strategy = job_strategy(s, s->sc[u->file]);
}

void scn_swarm_job_scenario(const scn_swarm *s, uint64_t j, scn_scenario *m) {
  uint64_t seed;
  scn_mix mix;
  const sw_unit *u = job_unit(s, j, &seed);
  scn_copy(m, s->sc[u->file]);
  if (s->o.all_faults) m->allow.given = 0;
  if (s->o.duration_us && m->duration_us > s->o.duration_us) scn_truncate(m, s->o.duration_us);
  scn_swarm_mix(m, seed, &mix);
  m->strategy = job_strategy(s, s->sc[u->file]);
}

/* The test-only hooks: crash or hang on a chosen seed. */
static void test_hooks(const scn_swarm *s, uint64_t seed) {
  if (s->o.have_crash_seed && seed == s->o.crash_seed) {
    signal(SIGSEGV, SIG_DFL); /* a real crash, whatever handler the host installed */
    raise(SIGSEGV);
  }
  while (s->o.have_hang_seed && seed == s->o.hang_seed) pause();
}

/* ---- children ------------------------------------------------------------- */

/* In a fresh child: its own process group, death with the parent, and
** TMPDIR inside the swarm's directory. */
static void child_setup(const scn_swarm *s) {
  setpgid(0, 0);
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  if (s->tmpdir[0]) setenv("TMPDIR", s->tmpdir, 1);
}

/* Kills the process group of pid (and pid, should it have none). */
static void kill_group(pid_t pid) {
  if (pid <= 0) return;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

/* Forks a child that leads its own group; the parent sets the group too,
** so a kill right after fork cannot miss it. */
static pid_t fork_child(const scn_swarm *s) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) child_setup(s);
  if (pid > 0) setpgid(pid, pid);
  return pid;
}

static void remove_tmpdir(scn_swarm *s) {
  scn__tmpdir_remove(s->tmpdir);
  s->tmpdir[0] = 0;
}

/* ---- the worker ------------------------------------------------------------ */

/* Copies s into d without tabs or newlines (the line protocol). */
static void clean(char *d, size_t cap, const char *s) {
  size_t i = 0;
  for (; s && *s && i + 1 < cap; s++) d[i++] = (*s == '\t' || *s == '\n' || *s == '\r') ? ' ' : *s;
  d[i] = 0;
}

/* The "E" line of job j: what opts.worker_extra says about its run. */
static void worker_extra_line(const scn_swarm *s, uint64_t j, const scn_scenario *m, int ci, const scn_result *r,
                              FILE *out) {
  char buf[4096], text[4096];
  buf[0] = 0;
  s->o.worker_extra(s->o.ctx, m, ci, r, buf, sizeof buf);
  buf[sizeof buf - 1] = 0;
  clean(text, sizeof text, buf);
  fprintf(out, "E\t%" PRIu64 "\t%s\n", j, text);
}

/* The mode case c is judged by (expect.swarm, or "once" for every case
** with violations under opts.reproduce). */
static int case_mode(const scn_swarm *s, const scn_case *c) {
  if (!c->violate_mask) return SCN_SWARM_EVERY;
  return s->o.reproduce ? SCN_SWARM_ONCE : c->swarm_mode;
}

/* Whether run r of case c met its expected violations (*met), and its
** swarm verdict: with mode once or report, a run that held everything it
** must hold passes even if it missed them. */
static int swarm_verdict(const scn_swarm *s, const scn_scenario *sc, const scn_case *c,
                         const scn_result *r, int *met) {
  uint32_t seen = scn_seen_mask(sc, r);
  int held = !(c->hold_mask & seen);
  for (int i = 0; i < chk_facts_count(r->facts); i++)
    if (!chk_facts_result(r->facts, i)->passed) held = 0;
  *met = (c->violate_mask & ~seen) == 0;
  if (r->passed || case_mode(s, c) == SCN_SWARM_EVERY) return r->passed;
  return held && !*met;
}

/* Runs job j in a worker and writes its result line. */
static void worker_job(const scn_swarm *s, uint64_t j, scn_scenario *m, FILE *out) {
  scn_swarm_job jb;
  scn_result r;
  char sig[256], text[600];
  scn_swarm_job_info(s, j, &jb);
  scn_swarm_job_scenario(s, j, m);
  test_hooks(s, jb.seed);
  /* The verdict is all a swarm needs: stop when it is decided, keep no
  ** trace records (a failing run is re-run with them kept, for its
  ** signature). */
  scn_run_opts ro = {.stop_when_decided = 1, .lean = !s->o.worker_extra, /* worker_extra may read the trace */
                     .waits_only_rerun = 1, .no_figures = !s->o.worker_extra}; /* and the figures */
  if (scn_run_case_ex(m, jb.ci, jb.seed, m->strategy, &ro, &r) != 0) {
    clean(text, sizeof text, r.failure);
    fprintf(out, "X\t%" PRIu64 "\t%s\n", j, text);
  } else {
    if (s->o.worker_extra) worker_extra_line(s, j, m, jb.ci, &r, out);
    int met = 0;
    r.passed = swarm_verdict(s, m, &m->cases[jb.ci], &r, &met);
    size_t nv = r.passed ? 0 : chk_violation_count(r.checks);
    uint64_t reached = 0;
    for (int p = 0; p < RT_PROBE_COUNT; p++)
      if (r.probes[p]) reached |= 1ull << p;
    if (reached) fprintf(out, "P\t%" PRIu64 "\t%" PRIx64 "\n", j, reached); /* before its R line */
    clean(sig, sizeof sig, scn_signature(m, jb.ci, &r, sig, sizeof sig));
    clean(text, sizeof text, r.passed ? "" : r.failure);
    fprintf(out, "R\t%" PRIu64 "\t%d\t%" PRIx64 "\t%" PRIu64 "\t%" PRId64 "\t%s\t%s\t%zu", j, r.passed | met << 1,
            r.trace_hash, r.events, r.end_us, sig, text,
            nv < SCN_SWARM_MAX_VIOL ? nv : SCN_SWARM_MAX_VIOL);
    for (size_t i = 0; i < nv && i < SCN_SWARM_MAX_VIOL; i++) {
      const chk_violation *v = chk_violation_at(r.checks, i);
      clean(text, sizeof text, v->msg);
      fprintf(out, "\t%d\t%" PRIu32 "\t%" PRId64 "\t%s", (int)v->inv, v->actor, v->t_us, text);
    }
    fputc('\n', out);
  }
  scn_result_free(&r);
  if (fflush(out)) _exit(5); /* the parent is gone */
}

/* Takes the next job of the queue into *j for worker slot w, recording it
** in the slot; 0 when the queue is exhausted or the time budget is over. */
static int take_job(const scn_swarm *s, int w, uint64_t *j) {
  if (s->deadline > 0 && sw_now() >= s->deadline) return 0;
  uint64_t k = atomic_fetch_add(&s->sh->next, 1);
  if (s->total && k >= s->total) return 0;
  atomic_store(&s->sh->cur[w], k + 1);
  *j = k;
  return 1;
}

/* Worker slot w: runs `first` (a job to run again, already in its slot;
** SW_NONE: none), then jobs from the queue until it is empty. */
static void worker_main(const scn_swarm *s, int w, int fd, uint64_t first) {
  FILE *out = fdopen(fd, "w");
  scn_scenario *m = malloc(sizeof *m);
  if (!out || !m) _exit(3);
  for (uint64_t j = first; j != SW_NONE || take_job(s, w, &j); j = SW_NONE) worker_job(s, j, m, out);
  fputs("D\n", out);
  fflush(out);
  scn__sigkill_reap(); /* _exit runs no atexit handler */
  SCN_COVERAGE_DUMP();
  _exit(0);
}

/* ---- results: reorder buffer, groups, delivery ------------------------------- */

static void res_clear(sw_res *r) {
  free(r->failure);
  free(r->sig);
  free(r->viol);
  free(r->extra);
  memset(r, 0, sizeof *r);
}

/* The buffer slot of job j (>= next_out), growing the ring; NULL on OOM. */
static sw_res *res_at(scn_swarm *s, uint64_t j) {
  if (j < s->next_out) return NULL;
  if (j - s->next_out >= s->ring_cap) {
    uint64_t nc = s->ring_cap ? s->ring_cap : 64;
    while (j - s->next_out >= nc) nc *= 2;
    sw_res *n = calloc((size_t)nc, sizeof *n);
    if (!n) return NULL;
    for (uint64_t k = s->next_out; k < s->next_out + s->ring_cap; k++) n[k % nc] = s->ring[k % s->ring_cap];
    free(s->ring);
    s->ring = n;
    s->ring_cap = nc;
  }
  if (j + 1 > s->end_seen) s->end_seen = j + 1;
  return &s->ring[j % s->ring_cap];
}

static void group_add(scn_swarm *s, const scn_swarm_result *r) {
  size_t k = 0;
  while (k < s->n_groups && (s->groups[k].unit != r->unit || strcmp(s->groups[k].sig, r->sig))) k++;
  if (k == s->n_groups) {
    if (s->n_groups == s->cap_groups) {
      size_t nc = s->cap_groups ? s->cap_groups * 2 : 16;
      scn_swarm_group *g = realloc(s->groups, nc * sizeof *g);
      if (!g) return;
      s->groups = g;
      s->cap_groups = nc;
    }
    char *sig = strdup(r->sig), *failure = strdup(r->failure);
    if (!sig || !failure) {
      free(sig);
      free(failure);
      return;
    }
    s->groups[s->n_groups++] = (scn_swarm_group){sig, failure, r->unit, r->job, r->state, 0, {0}, 0};
  }
  scn_swarm_group *g = &s->groups[k];
  if (g->count < 8) g->seeds[g->count] = r->seed;
  g->count++;
}

static void deliver(scn_swarm *s, uint64_t j, sw_res *x) {
  scn_swarm_job jb;
  scn_swarm_job_info(s, j, &jb);
  scn_swarm_result r = {j, jb.seed, jb.unit, jb.file, jb.ci, (scn_swarm_state)x->state, x->passed,
                        x->hash, x->events, x->end_us, x->failure ? x->failure : "",
                        x->sig ? x->sig : "", x->viol, x->n_viol, x->extra ? x->extra : "", x->probes,
                        x->met};
  if (s->tally && x->state == SCN_SWARM_DONE) {
    scn_swarm_tally *t = &s->tally[jb.unit];
    t->runs++;
    if (x->met && t->met++ == 0) t->first_met = jb.seed;
  }
  for (int p = 0; p < RT_PROBE_COUNT; p++) {
    if (!(x->probes >> p & 1)) continue;
    if (s->probe[p].runs++ == 0) {
      s->probe[p].first_seed = jb.seed;
      s->probe[p].first_unit = jb.unit;
    }
  }
  if (s->unit_probes) s->unit_probes[jb.unit] |= x->probes;
  if (!r.passed) group_add(s, &r);
  if (s->o.on_result) s->o.on_result(s->o.ctx, &r);
  res_clear(x);
}

/* Hands out every finished job from next_out on; with `all`, skips gaps. */
static void deliver_ready(scn_swarm *s, int all) {
  while (s->next_out < s->end_seen) {
    sw_res *x = &s->ring[s->next_out % s->ring_cap];
    if (x->state) deliver(s, s->next_out, x);
    else if (!all) break;
    else res_clear(x); /* a gap: at most an "E" line whose result never came */
    s->next_out++;
  }
}

/* Records a failure the worker did not report itself. */
static void res_fail(scn_swarm *s, uint64_t j, int state, const char *failure, const char *sig) {
  sw_res *r = res_at(s, j);
  if (!r) return;
  res_clear(r);
  r->state = (uint8_t)state;
  r->failure = strdup(failure);
  r->sig = strdup(sig);
  s->done++;
  s->failed++;
  deliver_ready(s, 0);
}

/* Splits a line at tabs into at most cap fields; returns the count. */
static int split(char *line, char **f, int cap) {
  int n = 0;
  f[n++] = line;
  for (char *p = line; *p && n < cap; p++)
    if (*p == '\t') {
      *p = 0;
      f[n++] = p + 1;
    }
  return n;
}

static void parse_viol(sw_res *r, char **f, int nf, int n) {
  r->viol = calloc((size_t)(n > 0 ? n : 1), sizeof *r->viol);
  for (int i = 0; r->viol && i < n && i < SCN_SWARM_MAX_VIOL && 9 + 4 * i + 3 < nf; i++) {
    chk_violation *v = &r->viol[i];
    char **g = f + 9 + 4 * i;
    v->inv = (chk_invariant)atoi(g[0]);
    v->actor = (uint32_t)strtoul(g[1], NULL, 10);
    v->t_us = strtoll(g[2], NULL, 10);
    snprintf(v->msg, sizeof v->msg, "%s", g[3]);
    v->subject = -1;
    r->n_viol = i + 1;
  }
}

/* One result line from a worker. */
static void on_line(scn_swarm *s, sw_worker *wk, char *line) {
  char *f[9 + 4 * SCN_SWARM_MAX_VIOL];
  int nf = split(line, f, (int)(sizeof f / sizeof f[0]));
  if (!strcmp(f[0], "D")) {
    wk->done = 1;
    return;
  }
  if (!strcmp(f[0], "E")) { /* opts.worker_extra, sent just before the job's R line */
    sw_res *x = nf >= 3 ? res_at(s, strtoull(f[1], NULL, 10)) : NULL;
    if (x && !x->state) {
      free(x->extra);
      x->extra = strdup(f[2]);
    }
    return;
  }
  if (!strcmp(f[0], "P")) { /* the probes of a run, sent just before its R line */
    sw_res *x = nf >= 3 ? res_at(s, strtoull(f[1], NULL, 10)) : NULL;
    if (x && !x->state) x->probes = strtoull(f[2], NULL, 16);
    return;
  }
  if (nf < 3 || (strcmp(f[0], "R") && strcmp(f[0], "X"))) return;
  uint64_t j = strtoull(f[1], NULL, 10);
  wk->started = sw_now(); /* the worker takes its next job now */
  if (f[0][0] == 'X') {
    res_fail(s, j, SCN_SWARM_ERROR, f[2], "error/-/-");
    return;
  }
  sw_res *r = res_at(s, j);
  if (!r || nf < 9) return;
  char *extra = r->extra;
  uint64_t probes = r->probes;
  r->extra = NULL;
  res_clear(r);
  r->extra = extra;
  r->probes = probes;
  r->state = SCN_SWARM_DONE;
  r->passed = (uint8_t)(atoi(f[2]) & 1);
  r->met = (uint8_t)(atoi(f[2]) >> 1 & 1);
  r->hash = strtoull(f[3], NULL, 16);
  r->events = strtoull(f[4], NULL, 10);
  r->end_us = strtoll(f[5], NULL, 10);
  s->done++;
  if (!r->passed) {
    s->failed++;
    r->sig = strdup(f[6]);
    r->failure = strdup(f[7]);
    parse_viol(r, f, nf, atoi(f[8]));
  }
  deliver_ready(s, 0);
}

/* Reads what worker wk sent (waiting at most wait_ms for data); returns 0
** at end of file or on error, 1 otherwise. */
static int drain(scn_swarm *s, sw_worker *wk, int wait_ms) {
  char tmp[8192];
  struct pollfd p = {wk->fd, POLLIN, 0};
  if (wait_ms >= 0) {
    int pr = poll(&p, 1, wait_ms);
    if (pr < 0 && errno == EINTR) return 1;
    if (pr <= 0) return 0; /* nothing within wait_ms: treat as the end */
  }
  ssize_t n = read(wk->fd, tmp, sizeof tmp);
  if (n < 0 && errno == EINTR) return 1;
  if (n <= 0) return 0;
  if (wk->len + (size_t)n + 1 > wk->cap) {
    size_t nc = (wk->len + (size_t)n + 1) * 2;
    char *b = realloc(wk->buf, nc);
    if (!b) return 0;
    wk->buf = b;
    wk->cap = nc;
  }
  memcpy(wk->buf + wk->len, tmp, (size_t)n);
  wk->len += (size_t)n;
  wk->buf[wk->len] = 0;
  char *start = wk->buf, *nl;
  while ((nl = strchr(start, '\n'))) {
    *nl = 0;
    on_line(s, wk, start);
    start = nl + 1;
  }
  wk->len -= (size_t)(start - wk->buf);
  memmove(wk->buf, start, wk->len);
  return 1;
}

/* ---- the pool ------------------------------------------------------------------ */

/* 1 if the queue has no job left to take. */
static int queue_empty(const scn_swarm *s) {
  return s->total && atomic_load(&s->sh->next) >= s->total;
}

/* Starts worker slot w, which first runs job `again` (SW_NONE: none) and
** then takes jobs from the queue; starts nothing when there is nothing
** left to run or the swarm is stopping. 0, or -1 on a system error. */
static int spawn(scn_swarm *s, int w, uint64_t again) {
  int p[2];
  sw_worker *wk = &s->w[w];
  wk->pid = -1;
  wk->fd = -1;
  wk->len = 0;
  if (again == SW_NONE && (queue_empty(s) || (s->deadline > 0 && sw_now() >= s->deadline))) return 0;
  if (s->o.stop && *s->o.stop) return 0;
  atomic_store(&s->sh->cur[w], again == SW_NONE ? 0 : again + 1);
  if (pipe(p) != 0) return -1;
  fcntl(p[0], F_SETFD, FD_CLOEXEC);
  pid_t pid = fork_child(s);
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) {
    close(p[0]);
    for (int k = 0; k < s->n_w; k++)
      if (s->w[k].fd >= 0) close(s->w[k].fd);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    worker_main(s, w, p[1], again);
  }
  close(p[1]);
  *wk = (sw_worker){pid, p[0], 0, sw_now(), wk->buf, 0, wk->cap};
  return 0;
}

static const char *sig_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    default: return "signal";
  }
}

enum { REAP_EOF, REAP_TIMEOUT, REAP_RERUN, REAP_STOP };

/* 1 if the result of job j reached the parent. */
static int job_reported(const scn_swarm *s, uint64_t j) {
  if (j < s->next_out) return 1;
  return j - s->next_out < s->ring_cap && s->ring[j % s->ring_cap].state != 0;
}

/* The job worker slot w died in: the one it took last, if its result
** never came; else SW_NONE. */
static uint64_t job_held(const scn_swarm *s, int w) {
  uint64_t c = atomic_load(&s->sh->cur[w]);
  return c && !job_reported(s, c - 1) ? c - 1 : SW_NONE;
}

/* A worker that died holding no job fails the next job of the queue in its
** place (as if it died starting it), so a worker that dies before its
** first job cannot be replaced forever; SW_NONE when none is left. */
static uint64_t job_for_failure(scn_swarm *s) {
  if (queue_empty(s) || (s->deadline > 0 && sw_now() >= s->deadline)) return SW_NONE;
  uint64_t k = atomic_fetch_add(&s->sh->next, 1);
  return s->total && k >= s->total ? SW_NONE : k;
}

/* Records job j (SW_NONE: nothing) as failed by how its worker ended. */
static void fail_job(scn_swarm *s, uint64_t j, int mode, int status) {
  char msg[160], sig[64];
  if (j == SW_NONE) return;
  if (mode == REAP_TIMEOUT) {
    snprintf(msg, sizeof msg, "timed out: the seed ran longer than the --timeout of %.3fs; worker killed",
             (double)s->o.timeout_us / 1e6);
    res_fail(s, j, SCN_SWARM_TIMEOUT, msg, "timeout/-/-");
  } else if (WIFSIGNALED(status)) {
    snprintf(msg, sizeof msg, "worker crashed: %s (signal %d) while running this seed",
             sig_name(WTERMSIG(status)), WTERMSIG(status));
    snprintf(sig, sizeof sig, "crash:%s/-/-", sig_name(WTERMSIG(status)));
    res_fail(s, j, SCN_SWARM_CRASH, msg, sig);
  } else {
    snprintf(msg, sizeof msg, "worker exited with status %d while running this seed", WEXITSTATUS(status));
    res_fail(s, j, SCN_SWARM_CRASH, msg, "crash:exit/-/-");
  }
}

/* Worker w ended (EOF, or killed): if it died inside a job, that job
** failed (REAP_RERUN: killed by mistake, run it again; REAP_STOP: the
** swarm is stopping, nothing failed); a fresh worker takes the slot.
** Returns 0, or -1 if it cannot fork. */
static int reap(scn_swarm *s, int w, int mode) {
  sw_worker *wk = &s->w[w];
  int status = 0;
  close(wk->fd);
  wk->fd = -1;
  kill_group(wk->pid); /* whatever the worker left behind in its group */
  while (waitpid(wk->pid, &status, 0) < 0 && errno == EINTR) {}
  wk->pid = -1;
  if (mode == REAP_STOP || wk->done) return 0;
  uint64_t held = job_held(s, w);
  if (mode == REAP_RERUN) return spawn(s, w, held);
  fail_job(s, held != SW_NONE ? held : job_for_failure(s), mode, status);
  return spawn(s, w, SW_NONE);
}

/* Kills worker w's group and takes what it wrote before (bounded: a pipe
** still held open by something outside the group cannot hang us). */
static void kill_and_drain(scn_swarm *s, sw_worker *wk) {
  kill_group(wk->pid);
  double until = sw_now() + 2.0;
  while (sw_now() < until && drain(s, wk, 100)) {}
}

static int kill_slow(scn_swarm *s) {
  double now = sw_now();
  for (int w = 0; w < s->n_w; w++) {
    sw_worker *wk = &s->w[w];
    if (wk->fd < 0 || now - wk->started <= (double)s->o.timeout_us / 1e6) continue;
    double started = wk->started;
    kill_and_drain(s, wk);
    /* a result that arrived meanwhile means the slow job did finish */
    if (reap(s, w, wk->started != started ? REAP_RERUN : REAP_TIMEOUT)) return -1;
  }
  return 0;
}

static void stop_all(scn_swarm *s) {
  for (int w = 0; w < s->n_w; w++) {
    if (s->w[w].fd < 0) continue;
    kill_and_drain(s, &s->w[w]);
    reap(s, w, REAP_STOP);
  }
}

void scn_swarm_stats_get(const scn_swarm *s, scn_swarm_stats *st) {
  double now = sw_now();
  memset(st, 0, sizeof *st);
  st->runs = s->done;
  st->failed = s->failed;
  st->total = s->total;
  st->units = s->n_units;
  st->workers = s->n_w;
  st->elapsed_s = now - s->t0;
  double seeds = (double)s->done / (double)s->n_units;
  double rate = st->elapsed_s > 0 ? seeds / st->elapsed_s : 0;
  double left = s->deadline > 0 ? s->deadline - now : 0;
  if (s->total && rate > 0) {
    double by_count = ((double)s->total / (double)s->n_units - seeds) / rate;
    if (left <= 0 || by_count < left) left = by_count;
  }
  st->left_s = left > 0 ? left : 0;
}

static void progress(scn_swarm *s) {
  double now = sw_now();
  if (!s->o.on_progress || now - s->last_progress < 0.2) return;
  s->last_progress = now;
  scn_swarm_stats st;
  scn_swarm_stats_get(s, &st);
  s->o.on_progress(s->o.ctx, &st);
}

/* How long the pool may wait for a line: until the earliest worker's
** timeout (at least 1 ms), at most 100 ms (progress, stop requests). */
static int poll_ms(const scn_swarm *s) {
  double now = sw_now(), wait = 0.1;
  for (int w = 0; w < s->n_w; w++) {
    if (s->w[w].fd < 0) continue;
    double left = s->w[w].started + (double)s->o.timeout_us / 1e6 - now;
    if (left < wait) wait = left;
  }
  return wait < 0.001 ? 1 : (int)(wait * 1000.0);
}

static int run_pool(scn_swarm *s) {
  struct pollfd *p = calloc((size_t)s->n_w, sizeof *p);
  int rc = p ? 0 : -1;
  for (int w = 0; w < s->n_w; w++) s->w[w].fd = -1;
  for (int w = 0; w < s->n_w && !rc; w++) rc = spawn(s, w, SW_NONE);
  for (int live = 1; live && !rc;) {
    if (s->o.stop && *s->o.stop) break;
    live = 0;
    for (int w = 0; w < s->n_w; w++) {
      p[w] = (struct pollfd){s->w[w].fd, POLLIN, 0};
      live |= s->w[w].fd >= 0;
    }
    if (!live) break;
    if (poll(p, (nfds_t)s->n_w, poll_ms(s)) < 0 && errno != EINTR) rc = -1;
    for (int w = 0; w < s->n_w && !rc; w++)
      if (p[w].fd >= 0 && (p[w].revents & (POLLIN | POLLHUP | POLLERR)) && !drain(s, &s->w[w], -1))
        rc = reap(s, w, REAP_EOF);
    if (!rc) rc = kill_slow(s);
    progress(s);
  }
  stop_all(s);
  free(p);
  return rc;
}

static int cmp_group(const void *a, const void *b) {
  const scn_swarm_group *x = a, *y = b;
  if (x->seeds[0] != y->seeds[0]) return x->seeds[0] < y->seeds[0] ? -1 : 1;
  if (x->unit != y->unit) return x->unit < y->unit ? -1 : 1;
  return 0;
}

/* After the runs: a unit judged "once" whose runs never met its expected
** violations gets a whole-case group (its first missing invariant). */
static void unit_groups(scn_swarm *s) {
  for (size_t u = 0; u < s->n_units; u++) {
    const scn_case *c = &s->sc[s->units[u].file]->cases[s->units[u].ci];
    const scn_swarm_tally *t = &s->tally[u];
    if (t->mode != SCN_SWARM_ONCE || t->runs == 0 || t->met > 0) continue;
    const scn_scenario *sc = s->sc[s->units[u].file];
    int k = 0;
    while (k < 31 && !(c->violate_mask & (1u << k))) k++;
    int inv = scn_inv_of_bit(sc, k);
    char sig[160], failure[400];
    scn_swarm_job jb;
    scn_swarm_job_info(s, u, &jb);
    const char *name = chk_invariant_name((chk_invariant)inv);
    snprintf(sig, sizeof sig, "unreproduced:%s/-/-", name ? name : "?");
    snprintf(failure, sizeof failure,
             "expected %s in at least one seed (expect.swarm: once), but none of %" PRIu64 " seeds did",
             c->expect_text, t->runs);
    scn_swarm_result r = {u, jb.seed, u, jb.file, jb.ci, SCN_SWARM_DONE, 0, 0, 0, 0, failure, sig,
                          NULL, 0, "", 0, 0};
    size_t before = s->n_groups;
    group_add(s, &r);
    if (s->n_groups > before) {
      s->groups[before].whole_case = 1;
      s->groups[before].count = t->runs;
    }
  }
}

/* After a pool that ran to its end: a job taken from the queue whose
** result never came (its worker was killed between taking it and
** recording it in its slot) is a crash of that job, so every job taken
** has a result. */
static void fail_lost_jobs(scn_swarm *s) {
  uint64_t end = atomic_load(&s->sh->next);
  if (s->total && end > s->total) end = s->total;
  for (uint64_t j = s->next_out; j < end; j++)
    if (!job_reported(s, j))
      res_fail(s, j, SCN_SWARM_CRASH, "worker died after it took this seed, before it ran it", "crash:lost/-/-");
}

int scn_swarm_run(scn_swarm *s, char *err, size_t errlen) {
  if (s->total == 0 && (s->o.seeds || s->no_seeds)) return 0;
  int rc = run_pool(s);
  if (!rc && !(s->o.stop && *s->o.stop)) fail_lost_jobs(s);
  deliver_ready(s, 1);
  if (!rc) unit_groups(s);
  if (s->n_groups) qsort(s->groups, s->n_groups, sizeof *s->groups, cmp_group);
  remove_tmpdir(s);
  if (rc) {
    snprintf(err, errlen, "swarm: cannot run the worker pool: %s", strerror(errno));
    return -1;
  }
  return s->o.stop && *s->o.stop ? 1 : 0;
}

/* ---- re-runs ------------------------------------------------------------------- */

int scn_swarm_rerun(const scn_swarm *s, uint64_t j, scn_swarm_rerun_fn fn, void *ctx) {
  int status = 0;
  pid_t pid = fork_child(s);
  if (pid < 0) return -1;
  if (pid == 0) {
    scn_scenario *m = malloc(sizeof *m);
    scn_swarm_job jb;
    scn_result res;
    if (!m) _exit(3);
    scn_swarm_job_info(s, j, &jb);
    scn_swarm_job_scenario(s, j, m);
    test_hooks(s, jb.seed);
    if (scn_run_case_ex(m, jb.ci, jb.seed, m->strategy, NULL, &res) != 0) _exit(3);
    int rc = fn(ctx, m, jb.ci, &res);
    fflush(NULL);
    scn__sigkill_reap(); /* _exit runs no atexit handler */
    SCN_COVERAGE_DUMP();
    _exit(rc ? 4 : 0);
  }
  double until = sw_now() + (double)s->o.timeout_us / 1e6;
  for (;;) {
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int r = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid) { /* ended, not yet reaped: its group id is still ours */
      kill_group(pid);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
    }
    if ((r < 0 && errno != EINTR) || sw_now() > until || (s->o.stop && *s->o.stop)) {
      kill_group(pid);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
      return -1;
    }
    usleep(2000);
  }
}

/* ---- setup ---------------------------------------------------------------------- */

static int make_tmpdir(scn_swarm *s) {
  return scn__tmpdir_make(s->tmpdir, sizeof s->tmpdir, "swarm");
}

/* How many seed offsets past each file's base stay at or below 2^64-1
** (the least over the files; UINT64_MAX when every base is 0). */
static uint64_t seed_room(const scn_swarm *s, size_t *file) {
  uint64_t room = UINT64_MAX;
  for (size_t i = 0; i < s->n_sc; i++) {
    uint64_t base = s->o.have_base ? s->o.base : s->sc[i]->seed;
    if (UINT64_MAX - base < room) {
      room = UINT64_MAX - base;
      *file = i;
    }
  }
  return room;
}

/* s->total from --seeds, or the seeds left before 2^64-1 with --time; a
** --seeds count that would pass seed 2^64-1 (or a job count past 2^64) is
** refused, never wrapped to seed 0. 0, or -1 with err. */
static int set_total(scn_swarm *s, char *err, size_t errlen) {
  size_t f = 0;
  uint64_t room = seed_room(s, &f), seeds = s->o.seeds;
  uint64_t i0 = (uint64_t)(s->o.shard_i - 1), n = (uint64_t)s->o.shard_n;
  uint64_t base = s->o.have_base ? s->o.base : s->sc[f]->seed;
  if (seeds && seeds - 1 > room) {
    snprintf(err, errlen,
             "revenant swarm: %s: %" PRIu64 " seeds from 0x%" PRIx64 " would pass the last seed 0xffffffffffffffff "
             "(at most %" PRIu64 " from this base); lower --seeds or --seed-base",
             s->sc[f]->file, seeds, base, room + 1); /* room < seeds - 1 here */
    return -1;
  }
  if (!seeds) {
    if (room >= UINT64_MAX / s->n_units) return 0; /* no run reaches 2^64-1: unbounded */
    s->no_seeds = room < i0;
    uint64_t steps = room < i0 ? 0 : (room - i0) / n + 1;
    s->total = steps * s->n_units;
    return 0;
  }
  uint64_t steps = seeds > i0 ? (seeds - i0 - 1) / n + 1 : 0;
  if (steps > UINT64_MAX / s->n_units) {
    snprintf(err, errlen, "revenant swarm: %" PRIu64 " seeds x %zu cases is more than 2^64 runs; lower --seeds",
             seeds, s->n_units);
    return -1;
  }
  s->total = steps * s->n_units;
  return 0;
}

/* Maps the work queue, shared with the workers forked later (anonymous
** memory comes zeroed: job 0 next, no slot holding a job). 0, or -1. */
static int make_queue(scn_swarm *s) {
  size_t size = sizeof *s->sh + (size_t)s->n_w * sizeof s->sh->cur[0];
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return -1;
  s->sh = p;
  s->sh_size = size;
  return 0;
}

scn_swarm *scn_swarm_new(scn_scenario *const *sc, size_t n_sc, const scn_swarm_opts *o,
                         char *err, size_t errlen) {
  scn_swarm *s = calloc(1, sizeof *s);
  if (!s || n_sc == 0 || o->jobs < 1 || (!o->seeds && !o->time_us) || o->timeout_us <= 0) {
    snprintf(err, errlen, "swarm: %s", s ? "bad options (files, seeds or time, jobs, timeout)" : "out of memory");
    free(s);
    return NULL;
  }
  s->o = *o;
  if (!s->o.shard_n) s->o.shard_i = s->o.shard_n = 1;
  s->sc = sc;
  s->n_sc = n_sc;
  s->units = calloc(n_sc * SCN_MAX_CASES, sizeof *s->units);
  s->unit_probes = calloc(n_sc * SCN_MAX_CASES, sizeof *s->unit_probes);
  s->tally = calloc(n_sc * SCN_MAX_CASES, sizeof *s->tally);
  if (!s->units || !s->unit_probes || !s->tally) goto oom;
  for (size_t i = 0; i < n_sc; i++) {
    int matched = 0;
    for (int c = 0; c < sc[i]->n_cases; c++) {
      if (o->only_case && strcmp(o->only_case, sc[i]->cases[c].label)) continue;
      s->tally[s->n_units].mode = case_mode(s, &sc[i]->cases[c]);
      s->units[s->n_units++] = (sw_unit){i, c};
      matched = 1;
    }
    if (!matched) {
      snprintf(err, errlen, "revenant swarm: %s: no case named \"%s\"", sc[i]->file,
               o->only_case ? o->only_case : "");
      scn_swarm_free(s);
      return NULL;
    }
  }
  if (set_total(s, err, errlen)) {
    scn_swarm_free(s);
    return NULL;
  }
  s->n_w = o->jobs;
  if (s->total && (uint64_t)s->n_w > s->total / s->n_units) s->n_w = (int)(s->total / s->n_units);
  if (s->n_w < 1) s->n_w = 1;
  s->w = calloc((size_t)s->n_w, sizeof *s->w);
  if (!s->w) goto oom;
  for (int w = 0; w < s->n_w; w++) s->w[w].fd = s->w[w].pid = -1;
  if (make_queue(s)) goto oom;
  s->t0 = sw_now();
  s->deadline = o->time_us ? s->t0 + (double)o->time_us / 1e6 : 0;
  if (make_tmpdir(s)) {
    snprintf(err, errlen, "swarm: cannot make a temporary directory: %s", strerror(errno));
    scn_swarm_free(s);
    return NULL;
  }
  return s;
oom:
  snprintf(err, errlen, "swarm: out of memory");
  scn_swarm_free(s);
  return NULL;
}

const scn_swarm_probe *scn_swarm_probes(const scn_swarm *s) { return s->probe; }

void scn_swarm_unit_tally(const scn_swarm *s, size_t unit, scn_swarm_tally *out) {
  memset(out, 0, sizeof *out);
  if (unit < s->n_units) *out = s->tally[unit];
}

uint64_t scn_swarm_unit_probes(const scn_swarm *s, size_t unit) {
  return unit < s->n_units ? s->unit_probes[unit] : 0;
}

const scn_swarm_group *scn_swarm_groups(const scn_swarm *s, size_t *n) {
  *n = s->n_groups;
  return s->groups;
}

void scn_swarm_free(scn_swarm *s) {
  if (!s) return;
  for (int w = 0; s->w && w < s->n_w; w++) {
    if (s->w[w].fd >= 0) close(s->w[w].fd);
    if (s->w[w].pid > 0) {
      kill_group(s->w[w].pid);
      while (waitpid(s->w[w].pid, NULL, 0) < 0 && errno == EINTR) {}
    }
    free(s->w[w].buf);
  }
  free(s->w);
  for (uint64_t k = 0; k < s->ring_cap; k++) res_clear(&s->ring[k]);
  free(s->ring);
  for (size_t k = 0; k < s->n_groups; k++) {
    free(s->groups[k].sig);
    free(s->groups[k].failure);
  }
  free(s->groups);
  free(s->unit_probes);
  free(s->tally);
  free(s->units);
  if (s->sh) munmap(s->sh, s->sh_size);
  remove_tmpdir(s);
  free(s);
}
