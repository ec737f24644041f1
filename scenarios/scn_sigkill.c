/*
** scn_sigkill.c: runs a case whose faults include `sigkill` with real
** process kills over file-backed SQLite.
**
** The parent process owns the trace and the checkers. Generation g of the
** run is a forked worker that simulates the window [t_g, t_{g+1}) of
** virtual time, where t_1..t_k are the sigkill times (fixed or drawn from
** the fault.sigkill stream): generation 0 starts from the scenario,
** generation g > 0 from the databases the killed worker left on disk
** (rt_world_restore: ids continue from g * 10^9, stored alarms re-armed),
** with the workload and faults that fall in its window. Each worker streams
** its trace records (and their strings) to the parent over a pipe; at the
** end of its window it records the kill (rt_world_note_sigkill), says so
** ('K') and SIGKILLs itself for real (the parent sends SIGKILL too when it
** reads the 'K'), and SQLite's recovery on the next open discards the open
** turn. The same seed gives the same trace hash run after run, because
** every worker's start state is a function of the seed and of what
** committed before the kill.
**
** Pipelining (issue #18): generation g+1 is forked while g runs. It builds
** its kernel and world and warms SQLite up (rt_storage_warm) on the second
** core, then blocks on a gate pipe. The parent opens the gate when it has
** read g's 'K' and sent its SIGKILL: g wrote nothing after the 'K' (its
** last act is the kill), so the files are final, and g+1 opens them while
** the kernel still tears g down (the files use no POSIX locks, the
** "unix-none" VFS, so nothing waits for g's descriptors to close; only one
** process at a time runs SQLite on them, by this protocol). The parent
** then reaps g. The last generation is not waited for (scn__sigkill_reap).
*/
#include <dirent.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "scenarios/scn_internal.h"

#define ID_BASE 1000000000LL
#define MAX_KILLS 256

int scn_has_sigkill(const scn_scenario *sc) {
  return scn__has_sigkill(sc);
}

int scn__has_sigkill(const scn_scenario *sc) {
  for (int i = 0; i < sc->n_faults; i++)
    if (sc->faults[i].kind == FLT_SIGKILL) return 1;
  return 0;
}

/* ---- the worker ------------------------------------------------------- */

typedef struct wk_pipe {
  FILE *out;
  const sim_trace *t;
  uint8_t *sent;      /* string ids already sent */
  size_t n_sent;
} wk_pipe;

static void send_str(wk_pipe *p, uint32_t id) {
  if (id == 0) return;
  if (id >= p->n_sent) {
    size_t n = (size_t)id * 2 + 64;
    uint8_t *ns = realloc(p->sent, n);
    if (!ns) _exit(3);
    memset(ns + p->n_sent, 0, n - p->n_sent);
    p->sent = ns;
    p->n_sent = n;
  }
  if (p->sent[id]) return;
  p->sent[id] = 1;
  const char *s = sim_trace_str(p->t, id);
  uint32_t len = (uint32_t)strlen(s);
  fputc('S', p->out);
  fwrite(&id, sizeof id, 1, p->out);
  fwrite(&len, sizeof len, 1, p->out);
  fwrite(s, 1, len, p->out);
}

static void pipe_record(void *ctx, const sim_rec *r, uint64_t index) {
  wk_pipe *p = ctx;
  (void)index;
  send_str(p, r->s);
  send_str(p, r->s2);
  fputc('R', p->out);
  fwrite(r, sizeof *r, 1, p->out);
}

typedef struct wk_job {
  const scn_scenario *sc;
  const scn_case *cs;
  uint64_t seed;
  sim_strategy strategy;
  int gen, last;
  int64_t from_us, until_us;
  const char *dir;
} wk_job;

/* The down_for of the SIGKILL at from_us: the fixed one at that time, else
** the first rated one's (issue #14). */
static int64_t kill_down_for(const scn_scenario *sc, int64_t from_us) {
  int64_t rated = -1;
  for (int i = 0; i < sc->n_faults; i++) {
    const scn_fault *f = &sc->faults[i];
    if (f->kind != FLT_SIGKILL) continue;
    if (f->at_us == from_us) return f->delay_us;
    if (f->at_us < 0 && rated < 0) rated = f->delay_us;
  }
  return rated > 0 ? rated : 0;
}

/* The part of generation j's world that needs no file: the kernel, the
** trace stream, the world and its actors. A pre-forked generation builds it
** while the one before it still runs. */
static rt_world *worker_prepare(const wk_job *j, sim *s, wk_pipe *p) {
  sim_config scfg = {j->seed, j->strategy, j->sc->pct_depth ? j->sc->pct_depth : 3, 10000};
  if (!p->out || sim_init(s, &scfg)) _exit(3);
  s->trace.keep = 0;
  s->now_us = j->from_us;
  p->t = &s->trace;
  sim_trace_observe(&s->trace, pipe_record, p);
  rt_config cfg = j->cs->cfg;
  cfg.storage_files = 1;
  snprintf(cfg.storage_dir, sizeof cfg.storage_dir, "%s", j->dir);
  rt_world *w = rt_world_new(s, &cfg);
  scn_result names; /* only to reuse scn__add_actors */
  memset(&names, 0, sizeof names);
  if (!w || scn__add_actors(j->sc, w, &names)) _exit(3);
  rt_world_set_case(w, j->cs->label); /* revenant.case of scripts */
  return w;
}

/* Blocks until the parent opens the gate: one byte once the generation
** before this one has been killed. End of file (the parent gave up on the
** run, or died) ends this process without touching the files. */
static void worker_wait_gate(int gate) {
  char c;
  ssize_t k;
  while ((k = read(gate, &c, 1)) < 0 && errno == EINTR) {
  }
  if (k != 1) _exit(5);
  close(gate);
}

/* The rest of generation j's world, from the files: the stale rows of the
** scenario (generation 0) or what the killed generation left (the open
** recovers its WAL), then the workload and faults of its window. */
static void worker_open(const wk_job *j, rt_world *w) {
  int rc = j->gen == 0 ? scn__seed_stale(j->sc, w) : rt_world_restore(w, j->gen * ID_BASE);
  if (j->gen > 0) rt_set_down(w, j->from_us + kill_down_for(j->sc, j->from_us)); /* down_for */
  if (rc || scn__plan_workload(j->sc, w, j->from_us) ||
      flt_plan_window(w, j->sc->faults, j->sc->n_faults, j->sc->duration_us, j->from_us,
                      j->until_us, FLT_SIGKILL) < 0)
    _exit(3);
}

/* Generation j's process: its world, the gate (gate < 0: none), its
** window of virtual time, then the kill or the end of the run. */
static void worker_main(const wk_job *j, int fd, int gate) {
  sim s;
  wk_pipe p = {fdopen(fd, "w"), NULL, NULL, 0};
  rt_world *w = worker_prepare(j, &s, &p);
  if (gate >= 0) {
#ifdef __GLIBC__
    mallopt(M_TRIM_THRESHOLD, 64 << 20); /* keeps the heap the warm-up grows */
#endif
    rt_storage_warm(); /* while the generation before it still runs */
    worker_wait_gate(gate);
  }
  worker_open(j, w);
  sim_run(&s, j->last ? j->sc->duration_us : j->until_us - 1, 0);
  if (rt_world_fatal(w)[0]) { /* a script ended the run (budget, memory, escape) */
    fprintf(stderr, "revenant: %s\n", rt_world_fatal(w));
    _exit(4);
  }
  if (j->last) {
    rt_world_free(w); /* checkpoints the WAL */
    SCN_COVERAGE_DUMP(); /* before the parent goes on without waiting */
    fputc('D', p.out);
    fflush(p.out);
    _exit(0);
  }
  s.now_us = j->until_us;
  sim_emit(&s, RT_EV_FAULT, RT_NO_ACTOR, 0, 0, 0, sim_trace_intern(&s.trace, "sigkill"), 0);
  rt_world_note_sigkill(w);
  SCN_COVERAGE_DUMP(); /* before the process dies */
  fputc('K', p.out);
  fflush(p.out);
  /* A real SIGKILL, sent at once rather than when the parent has read the
  ** stream: the process dies mid-life (no handler, no exit path, SQLite's
  ** files as they are) while the parent still drains what it sent. */
  kill(getpid(), SIGKILL);
  for (;;) pause(); /* not reached; the parent's SIGKILL would end us here */
}

/* ---- the parent ------------------------------------------------------- */

typedef struct pt_map {
  uint32_t *to;       /* worker string id -> parent id */
  size_t n;
} pt_map;

static int read_str(FILE *in, sim_trace *t, pt_map *m) {
  uint32_t id, len;
  char buf[4096];
  if (fread(&id, sizeof id, 1, in) != 1 || fread(&len, sizeof len, 1, in) != 1 ||
      len >= sizeof buf || fread(buf, 1, len, in) != len)
    return -1;
  buf[len] = 0;
  if (id >= m->n) {
    size_t n = (size_t)id * 2 + 64;
    uint32_t *nt = realloc(m->to, n * sizeof *nt);
    if (!nt) return -1;
    memset(nt + m->n, 0, (n - m->n) * sizeof *nt);
    m->to = nt;
    m->n = n;
  }
  m->to[id] = sim_trace_intern(t, buf);
  return 0;
}

/* Reads one worker's stream into the parent's trace. Returns 'K' (ready to
** be killed), 'D' (done) or 0 (the worker died on its own). */
static int drain(FILE *in, sim *s) {
  pt_map m = {NULL, 0};
  int c, end = 0;
  while (!end && (c = fgetc(in)) != EOF) {
    sim_rec r;
    if (c == 'S' && read_str(in, &s->trace, &m) == 0) continue;
    if (c == 'R' && fread(&r, sizeof r, 1, in) == 1) {
      r.s = r.s < m.n ? m.to[r.s] : 0;
      r.s2 = r.s2 < m.n ? m.to[r.s2] : 0;
      s->now_us = r.t_us;
      sim_trace_append(&s->trace, &r);
      continue;
    }
    end = c == 'K' || c == 'D' ? c : -1;
  }
  free(m.to);
  return end > 0 ? end : 0;
}

/* Closes every descriptor above 2 but keep and keep2 (either may be -1)
** with close_range: one system call instead of a walk of /proc/self/fd
** (about a tenth of a millisecond at the start of every generation).
** 0, or -1 where close_range is missing or fails (nothing or only some
** closed: the walk runs after it). */
static int close_all_but(int keep, int keep2) {
#if defined(__linux__) && defined(CLOSE_RANGE_CLOEXEC)
  int k[2] = {keep < keep2 ? keep : keep2, keep < keep2 ? keep2 : keep};
  unsigned from = 3;
  for (int i = 0; i < 2; i++) {
    if (k[i] < (int)from) continue;
    if ((unsigned)k[i] > from && close_range(from, (unsigned)k[i] - 1, 0)) return -1;
    from = (unsigned)k[i] + 1;
  }
  return close_range(from, ~0u, 0) ? -1 : 0;
#else
  (void)keep;
  (void)keep2;
  return -1;
#endif
}

/* In a generation's process: it dies with the process that forked it
** (which may itself be killed, e.g. by a swarm's --timeout), and it closes
** what it inherited except its own pipes (`keep` and `keep2`: its stream
** and its gate), so that it never holds a pipe of a process above it open
** (a swarm's result pipe: the swarm would wait for an end of file that
** never comes; the stream of the generation before it). Without
** close_range it closes the pipes it finds in /proc/self/fd. */
static void child_detach(pid_t parent, int keep, int keep2) {
#ifdef __linux__
  prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
  if (getppid() != parent) _exit(3); /* the parent died before prctl */
  if (close_all_but(keep, keep2) == 0) return;
  DIR *d = opendir("/proc/self/fd");
  if (!d) return;
  int dfd = dirfd(d);
  struct dirent *e;
  while ((e = readdir(d))) {
    struct stat st;
    int fd = atoi(e->d_name);
    if (e->d_name[0] == '.' || fd <= 2 || fd == keep || fd == keep2 || fd == dfd) continue;
    if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) close(fd);
  }
  closedir(d);
}

/* A forked generation, seen from the parent. */
typedef struct gen_proc {
  wk_job job;
  pid_t pid;
  int out;  /* read end of its stream */
  int gate; /* write end of its gate; -1: none, or opened */
} gen_proc;

/* Forks generation j. With gated set it builds its world and then waits
** for open_gate before it touches the files. 0, or -1 (nothing left). */
static int spawn(const wk_job *j, int gated, gen_proc *g) {
  int fds[2], gfd[2] = {-1, -1};
  if (pipe(fds)) return -1;
  if (gated && pipe(gfd)) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  fflush(NULL);
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (gated) close(gfd[1]);
    child_detach(parent, fds[1], gfd[0]);
    worker_main(j, fds[1], gfd[0]);
  }
  close(fds[1]);
  if (gated) close(gfd[0]);
  if (pid < 0) {
    close(fds[0]);
    if (gated) close(gfd[1]);
    return -1;
  }
  g->job = *j;
  g->pid = pid;
  g->out = fds[0];
  g->gate = gfd[1];
  return 0;
}

/* Lets g open the files: the generation before it has been killed. */
static void open_gate(gen_proc *g) {
  if (g->gate < 0) return;
  ssize_t k;
  while ((k = write(g->gate, "G", 1)) < 0 && errno == EINTR) {
  }
  close(g->gate); /* a failed write: it reads end of file and ends */
  g->gate = -1;
}

/* Ends a pre-forked generation the run no longer needs (one before it
** failed; if that one had said 'K', this one may have opened the files,
** which go with the run's directory). */
static void abandon(gen_proc *g) {
  int status;
  if (g->gate >= 0) close(g->gate);
  kill(g->pid, SIGKILL);
  close(g->out);
  while (waitpid(g->pid, &status, 0) < 0 && errno == EINTR) {
  }
}

/* The last generation of the previous run, which said 'D' (done) and was
** left to exit on its own: its exit (unmapping what it inherited and what
** it grew, 0.15-0.2 ms) overlaps the parent's end of the run, what the
** caller does with the result and the forks of the next run, instead of
** being waited for. The next sigkill run of this process reaps it once it
** has forked its first generations, and so does the process's exit
** (atexit; a swarm worker, which ends with _exit, calls scn__sigkill_reap
** itself): it never outlives the process as a zombie. */
static pid_t exiting_pid;
static pid_t exiting_owner; /* the process that forked it (a forked swarm
                            ** worker inherits these and must not wait) */

void scn__sigkill_reap(void) {
  if (exiting_pid > 0 && exiting_owner == getpid())
    while (waitpid(exiting_pid, NULL, 0) < 0 && errno == EINTR) {
    }
  exiting_pid = 0;
}

static void reap_at_exit(void) { scn__sigkill_reap(); }

/* Leaves pid (a last generation that said 'D') to exit on its own. */
static void defer_reap(pid_t pid) {
  static int registered; /* atexit handlers are inherited by fork: once */
  scn__sigkill_reap(); /* at most one is left at a time */
  if (!registered) registered = atexit(reap_at_exit) == 0;
  exiting_pid = pid;
  exiting_owner = getpid();
}

/* Takes g's stream into the parent's trace; on its 'K' kills it, opens
** next's gate (next may be NULL) and reaps g; the last generation's 'D'
** is final (scn__sigkill_reap). Returns 0, or -1 with res->failure set. */
static int finish_generation(gen_proc *g, sim *s, scn_result *res, gen_proc *next) {
  int status;
  FILE *in = fdopen(g->out, "r");
  int end = in ? drain(in, s) : 0;
  if (end == 'K') kill(g->pid, SIGKILL); /* it killed itself; a zombie ignores this */
  if (end == 'K' && next) open_gate(next); /* g writes nothing after its 'K' */
  int deferred = end == 'D' && g->job.last; /* done: its exit status says nothing more */
  while (!deferred && waitpid(g->pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (in)
    fclose(in);
  else
    close(g->out);
  if (deferred) {
    defer_reap(g->pid);
    return 0;
  }
  int gen = g->job.gen;
  int killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if ((end == 'K' && killed) || (end == 'D' && WIFEXITED(status) && !WEXITSTATUS(status)))
    return 0;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 4)
    snprintf(res->failure, sizeof res->failure,
             "worker process of generation %d: a script ended the run (the message is above)",
             gen);
  else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
    snprintf(res->failure, sizeof res->failure,
             "worker process of generation %d could not assemble its world (storage, workload "
             "or fault plan)", gen);
  else if (WIFSIGNALED(status))
    snprintf(res->failure, sizeof res->failure,
             "worker process of generation %d died of signal %d", gen, WTERMSIG(status));
  else
    snprintf(res->failure, sizeof res->failure,
             "worker process of generation %d died unexpectedly (status 0x%x)", gen, status);
  return -1;
}

static void remove_dir(const char *dir, uint32_t n_actors) {
  static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
  char path[512];
  for (uint32_t a = 0; a < n_actors; a++)
    for (int k = 0; k < 4; k++) {
      snprintf(path, sizeof path, "%s/actor-%u.db%s", dir, a, suffix[k]);
      unlink(path);
    }
  rmdir(dir);
}

/* The generations of a run: their windows between the kill times. Returns
** how many (at most MAX_KILLS + 1) into jobs. */
static int plan_generations(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strategy,
                            const char *dir, wk_job *jobs) {
  int64_t t[MAX_KILLS];
  int k = flt_times(seed, sc->faults, sc->n_faults, sc->duration_us, FLT_SIGKILL, t, MAX_KILLS);
  if (k > MAX_KILLS) k = MAX_KILLS;
  int n = 0;
  for (int g = 0; g <= k; g++) {
    int64_t from = g ? t[g - 1] : 0, until = g < k ? t[g] : sc->duration_us;
    if (g < k && until <= from) continue; /* two kills at one instant: one kill */
    jobs[n++] = (wk_job){sc, &sc->cases[ci], seed, strategy, g, g == k, from, until, dir};
  }
  return n;
}

/* Runs the generations one after another, each forked while the one
** before it still runs (its fork, page faults, world and warm-up overlap
** that generation's work on a second core); it opens the files only once
** the one before it has said 'K' and been sent SIGKILL. */
static int run_all(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strategy,
                   const char *dir, scn_result *res) {
  wk_job jobs[MAX_KILLS + 1];
  int n = plan_generations(sc, ci, seed, strategy, dir, jobs);
  gen_proc cur, next;
  if (spawn(&jobs[0], 0, &cur)) {
    scn__set_failure(res, "cannot fork the worker process of generation 0");
    return -1;
  }
  for (int i = 0;; i++) {
    int have_next = i + 1 < n;
    if (have_next && spawn(&jobs[i + 1], 1, &next)) {
      abandon(&cur);
      snprintf(res->failure, sizeof res->failure,
               "cannot fork the worker process of generation %d", jobs[i + 1].gen);
      return -1;
    }
    if (i == 0) scn__sigkill_reap(); /* the previous run's, after this one's forks */
    if (finish_generation(&cur, res->s, res, have_next ? &next : NULL)) {
      if (have_next) abandon(&next);
      return -1;
    }
    if (!have_next) return 0;
    open_gate(&next);
    cur = next;
  }
}

int scn__run_sigkill(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strategy,
                     const scn_run_opts *o, scn_result *res) {
  sim_config scfg = {seed, strategy, sc->pct_depth ? sc->pct_depth : 3, 10000};
  char dir[200]; /* under $TMPDIR: a swarm points it into its own directory */
  memset(res, 0, sizeof *res);
  res->seed = seed;
  res->strategy = strategy;
  res->s = calloc(1, sizeof *res->s);
  if (!res->s || sim_init(res->s, &scfg) || scn__tmpdir_make(dir, sizeof dir, "sigkill")) {
    scn__set_failure(res, "cannot prepare a sigkill run (kernel or temporary directory)");
    return -1;
  }
  chk_params p = sc->params;
  p.enabled_mask = 0xffffffffu;
  res->checks = chk_new(&res->s->trace, &p);
  res->actor_names = calloc(sc->n_actors ? sc->n_actors : 1, sizeof(char *));
  res->n_actors = res->actor_names ? sc->n_actors : 0;
  for (uint32_t i = 0; i < res->n_actors; i++) res->actor_names[i] = strdup(sc->actors[i].id);
  if (res->checks)
    chk_set_actor_names(res->checks, (const char *const *)res->actor_names, res->n_actors);
  char lerr[1024];
  if (res->checks && scn__attach_lua(sc, res->checks, lerr, sizeof lerr)) {
    scn__set_failure(res, lerr);
    return -1;
  }
  if (res->checks && (scn__facts_begin(sc, ci, o, res) || scn__probes_begin(res) ||
                      (o->observer && scn__observe(o, res)))) {
    scn__set_failure(res, "out of memory");
    return -1;
  }
  /* the models and the schema template once, here: every generation
  ** inherits them instead of building them in its own process */
  if (rt_storage_prepare()) {
    remove_dir(dir, sc->n_actors);
    scn__set_failure(res, "cannot prepare the storage schema of a sigkill run");
    return -1;
  }
  int rc = res->checks ? run_all(sc, ci, seed, strategy, dir, res) : -1;
  remove_dir(dir, sc->n_actors);
  if (rc) return -1;
  res->s->now_us = sc->duration_us;
  chk_finish(res->checks, res->s->now_us);
  scn__facts_end(NULL, res); /* no end-state facts in sigkill runs (the loader refuses them) */
  if (scn__lua_failed(res)) return -1;
  res->trace_hash = res->s->trace.hash;
  res->events = res->s->trace.count;
  res->end_us = res->s->now_us;
  scn__compute_figures(res);
  scn__judge(sc, ci, o, res);
  scn__facts_judge(res);
  return 0;
}
