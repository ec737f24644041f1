/*
** cmd_swarm.c: `revenant swarm`: many seeds, each with its own fault mix,
** run by forked worker processes (docs/swarm.md).
**
** Jobs are (scenario case, seed) pairs numbered j = 0, 1, ...: unit j % M
** (M = selected cases of all files), seed base + (shard_i - 1) + (j / M) *
** shard_n. Worker slot w of J runs the jobs of seed steps w, w + J, w + 2J,
** ... (a fixed split) and sends one line per job over its pipe, flushed before the next
** job starts, so when a worker dies the parent knows the job it died in:
** the next one it expected from that slot. That job is reported as a
** failure (crash or timeout) and a fresh worker continues the slot. The
** parent sorts the results by seed, so the output does not depend on -j.
** Failures are grouped by signature (scn_signature) and each group's
** smallest seed is re-run in a child process that prints its report and
** writes the group's repro file.
**
** Test-only hooks (environment): REVENANT_TEST_CRASH_SEED=N makes the run
** of seed N raise SIGSEGV, REVENANT_TEST_HANG_SEED=N makes it hang; they
** exist so that tests/test_swarm.c can check crash and timeout handling.
*/
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "reports/rpt.h"
#include "scenarios/scn.h"
#include "scenarios/scn_json.h"

#define SW_MAX_VIOL 8

static const char swarm_usage[] =
    "usage: revenant swarm FILE... (--seeds N | --time 60s) [options]\n"
    "\n"
    "Runs every case of every scenario with many seeds; each seed also draws\n"
    "its own fault mix (stream \"swarm.mix\"). Workers are separate processes:\n"
    "a crash or hang is reported as a failure with its seed. Failures are\n"
    "grouped by signature, with one repro file per signature.\n"
    "\n"
    "options:\n"
    "  --seeds N          run N seeds: base .. base+N-1\n"
    "  --time D           stop starting seeds after D of wall time (e.g. 60s, 10m)\n"
    "  -j N               worker processes (default: the number of CPUs)\n"
    "  --strategy S       fifo | random | pct (default: the file's; fifo files use random)\n"
    "  --seed-base S      first seed (default: each file's seed)\n"
    "  --case NAME        run only the case NAME\n"
    "  --shard I/N        run shard I (1-based) of N: the seeds base+k with k % N == I-1\n"
    "                     (default: from SLURM_ARRAY_TASK_ID/COUNT or JOB_COMPLETION_INDEX)\n"
    "  --shard-count N    shard count for JOB_COMPLETION_INDEX (or REVENANT_SHARD_COUNT)\n"
    "  --timeout D        wall-time limit of one seed; the worker is killed (default 60s)\n"
    "  --duration D       cut every run at D of virtual time (faster; changes what is judged)\n"
    "  --json FILE        write every run as results JSON (revenant.results/1)\n"
    "  --repro-dir DIR    where repro files go (default revenant-out)\n"
    "  --expect-reproduce a case that expects violations passes when at least one\n"
    "                     seed reproduces them (its expectation met); the others as usual.\n"
    "                     Prints one 'reproduce:' line per case\n"
    "  -q, --quiet        one line per signature and the summary line\n"
    "  -h, --help         show this help\n"
    "\n"
    "exit status: 0 every expectation met (--expect-reproduce: every case reproduced or held),\n"
    "1 an expectation failed, 2 usage or scenario error\n";

typedef struct sw_opts {
  uint64_t seeds;               /* 0: unbounded (--time) */
  int64_t time_us, timeout_us, duration_us;
  int jobs, strategy, have_base, quiet, shard_i, shard_n, shard_count, expect_reproduce;
  uint64_t base;
  const char *only_case, *json, *repro_dir;
  cli_paths files;
} sw_opts;

typedef struct sw_unit {
  size_t file;
  int ci;
} sw_unit;

enum { ST_NONE, ST_DONE, ST_CRASH, ST_TIMEOUT, ST_ERROR };

typedef struct sw_res {
  uint8_t state, passed;
  int n_viol;
  uint64_t hash, events;
  int64_t end_us;
  char *failure, *sig;          /* failed runs only */
  chk_violation *viol;
} sw_res;

typedef struct sw_worker {
  pid_t pid;
  int fd, done;
  uint64_t next;                /* job expected next from this slot */
  double started;               /* wall time that job started */
  char *buf;
  size_t len, cap;
} sw_worker;

typedef struct swarm {
  sw_opts o;
  scn_scenario **sc;
  sw_unit *units;
  size_t n_units;
  uint64_t total;               /* jobs; 0 = unbounded */
  sw_res *res;
  uint64_t cap_res, done, failed;
  sw_worker *w;
  int n_w;
  double t0, deadline, last_progress;
  int have_crash, have_hang, tty;
  uint64_t crash_seed, hang_seed;
} swarm;

static int usage_error(const char *msg, const char *arg) {
  fprintf(stderr, "revenant swarm: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
  fprintf(stderr, "usage: revenant swarm FILE... (--seeds N | --time 60s) [options]; "
                  "try 'revenant swarm --help'\n");
  return 2;
}

/* ---- options and sharding ---------------------------------------------- */

static int parse_shard(const char *v, int *i, int *n) {
  char *end;
  long a = strtol(v, &end, 10), b;
  if (end == v || *end != '/') return -1;
  b = strtol(end + 1, &end, 10);
  if (*end || a < 1 || b < 1 || a > b || b > 1000000) return -1;
  *i = (int)a;
  *n = (int)b;
  return 0;
}

static int env_long(const char *name, long *out) {
  const char *v = getenv(name);
  char *end;
  if (!v || !*v) return 0;
  *out = strtol(v, &end, 10);
  return *end ? -1 : 1;
}

/* Slurm job arrays, then Kubernetes indexed jobs; 0, or 2 on bad values. */
static int shard_from_env(sw_opts *o) {
  long id, count, min = 0, step = 1, idx, n = o->shard_count;
  if (env_long("SLURM_ARRAY_TASK_ID", &id) == 1 && env_long("SLURM_ARRAY_TASK_COUNT", &count) == 1) {
    if (env_long("SLURM_ARRAY_TASK_MIN", &min) < 0 || env_long("SLURM_ARRAY_TASK_STEP", &step) < 0 || step < 1)
      return usage_error("bad SLURM_ARRAY_TASK_MIN or SLURM_ARRAY_TASK_STEP", NULL);
    o->shard_i = (int)((id - min) / step + 1);
    o->shard_n = (int)count;
  } else if (env_long("JOB_COMPLETION_INDEX", &idx) == 1) {
    if (!n && env_long("REVENANT_SHARD_COUNT", &n) != 1)
      return usage_error("JOB_COMPLETION_INDEX is set: give --shard-count N or REVENANT_SHARD_COUNT", NULL);
    o->shard_i = (int)idx + 1;
    o->shard_n = (int)n;
  } else {
    return 0;
  }
  if (o->shard_i < 1 || o->shard_n < 1 || o->shard_i > o->shard_n)
    return usage_error("the shard from the environment is out of range", NULL);
  return 0;
}

static int parse_count(const char *v, uint64_t max, uint64_t *out) {
  return cli_parse_seed(v, out) || *out == 0 || *out > max ? -1 : 0;
}

/* One option that takes a value; 0, or 2 after a usage error. */
static int swarm_opt_value(sw_opts *o, const char *a, const char *v) {
  uint64_t n;
  if (!strcmp(a, "--seeds")) {
    if (parse_count(v, UINT64_MAX, &o->seeds)) return usage_error("expected a positive count:", v);
  } else if (!strcmp(a, "--time") || !strcmp(a, "--timeout") || !strcmp(a, "--duration")) {
    int64_t *d = !strcmp(a, "--time") ? &o->time_us : !strcmp(a, "--timeout") ? &o->timeout_us : &o->duration_us;
    if (scn_parse_duration(v, d) || *d <= 0) return usage_error("expected a duration such as 60s:", v);
  } else if (!strcmp(a, "-j")) {
    if (parse_count(v, 1024, &n)) return usage_error("-j: expected 1 to 1024:", v);
    o->jobs = (int)n;
  } else if (!strcmp(a, "--strategy")) {
    if ((o->strategy = sim_strategy_parse(v)) < 0) return usage_error("unknown strategy (fifo, random, pct):", v);
  } else if (!strcmp(a, "--seed-base")) {
    if (cli_parse_seed(v, &o->base)) return usage_error("bad seed:", v);
    o->have_base = 1;
  } else if (!strcmp(a, "--shard")) {
    if (parse_shard(v, &o->shard_i, &o->shard_n)) return usage_error("expected --shard I/N with 1 <= I <= N:", v);
  } else if (!strcmp(a, "--shard-count")) {
    if (parse_count(v, 1000000, &n)) return usage_error("expected a positive count:", v);
    o->shard_count = (int)n;
  } else if (!strcmp(a, "--case")) o->only_case = v;
  else if (!strcmp(a, "--json")) o->json = v;
  else o->repro_dir = v;
  return 0;
}

static int parse_swarm_opts(int argc, char **argv, sw_opts *o) {
  static const char *const takes[] = {"--seeds", "--time", "--timeout", "--duration", "-j", "--strategy",
                                      "--seed-base", "--shard", "--shard-count", "--case", "--json",
                                      "--repro-dir", NULL};
  memset(o, 0, sizeof *o);
  o->strategy = -1;
  o->timeout_us = 60000000;
  o->repro_dir = "revenant-out";
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  o->jobs = cpus > 0 && cpus <= 1024 ? (int)cpus : 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = 0;
    while (takes[k] && strcmp(takes[k], a)) k++;
    if (takes[k]) {
      if (i + 1 >= argc) return usage_error("option needs a value:", a);
      if (swarm_opt_value(o, a, argv[++i])) return 2;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(swarm_usage, stdout);
      exit(0);
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      o->quiet = 1;
    } else if (!strcmp(a, "--expect-reproduce")) {
      o->expect_reproduce = 1;
    } else if (a[0] == '-') {
      return usage_error("unknown option", a);
    } else if (cli_expand(&o->files, a)) {
      return 2;
    }
  }
  if (o->files.n == 0) return usage_error("no scenario files given", NULL);
  if (!o->seeds && !o->time_us) return usage_error("give --seeds N or --time D", NULL);
  if (!o->shard_n && shard_from_env(o)) return 2;
  if (!o->shard_n) o->shard_i = o->shard_n = 1;
  return 0;
}

/* ---- jobs ------------------------------------------------------------------ */

static uint64_t job_seed(const swarm *s, uint64_t j, const sw_unit **u) {
  *u = &s->units[j % s->n_units];
  uint64_t k = j / s->n_units;
  uint64_t base = s->o.have_base ? s->o.base : s->sc[(*u)->file]->seed;
  return base + (uint64_t)(s->o.shard_i - 1) + k * (uint64_t)s->o.shard_n;
}

static sim_strategy job_strategy(const swarm *s, const scn_scenario *sc) {
  if (s->o.strategy >= 0) return (sim_strategy)s->o.strategy;
  return sc->strategy == SIM_FIFO ? SIM_RANDOM : sc->strategy;
}

/* The job after j in j's worker slot: the next case of the same seed, or
** the first case of the slot's next seed (slot w runs seed steps w, w+J,
** ...), so every worker runs whole seeds and the cases of a seed, which
** may differ a lot in cost, are spread over the workers. */
static uint64_t next_job(const swarm *s, uint64_t j) {
  if (j % s->n_units + 1 < s->n_units) return j + 1;
  return (j / s->n_units + (uint64_t)s->n_w) * s->n_units;
}

/* The mutated scenario of job j into m. */
static const sw_unit *job_scenario(const swarm *s, uint64_t j, scn_scenario *m, uint64_t *seed) {
  const sw_unit *u;
  scn_mix mix;
  *seed = job_seed(s, j, &u);
  scn_copy(m, s->sc[u->file]);
  if (s->o.duration_us && m->duration_us > s->o.duration_us) scn_truncate(m, s->o.duration_us);
  scn_swarm_mix(m, *seed, &mix);
  m->strategy = job_strategy(s, s->sc[u->file]);
  return u;
}

/* The test-only hooks: crash or hang on a chosen seed. */
static void test_hooks(const swarm *s, uint64_t seed) {
  if (s->have_crash && seed == s->crash_seed) raise(SIGSEGV);
  while (s->have_hang && seed == s->hang_seed) pause();
}

/* Copies s into d without tabs or newlines (the line protocol). */
static void clean(char *d, size_t cap, const char *s) {
  size_t i = 0;
  for (; s && *s && i + 1 < cap; s++) d[i++] = (*s == '\t' || *s == '\n' || *s == '\r') ? ' ' : *s;
  d[i] = 0;
}

/* Runs job j in a worker and writes its result line. */
static void worker_job(const swarm *s, uint64_t j, scn_scenario *m, FILE *out) {
  uint64_t seed;
  scn_result r;
  char sig[256], text[600];
  const sw_unit *u = job_scenario(s, j, m, &seed);
  test_hooks(s, seed);
  scn_run_opts ro = {.stop_when_decided = 1}; /* the verdict is all a swarm needs */
  if (scn_run_case_ex(m, u->ci, seed, m->strategy, &ro, &r) != 0) {
    clean(text, sizeof text, r.failure);
    fprintf(out, "X\t%" PRIu64 "\t%s\n", j, text);
  } else {
    size_t nv = r.passed ? 0 : chk_violation_count(r.checks);
    clean(sig, sizeof sig, scn_signature(m, u->ci, &r, sig, sizeof sig));
    clean(text, sizeof text, r.passed ? "" : r.failure);
    fprintf(out, "R\t%" PRIu64 "\t%d\t%" PRIx64 "\t%" PRIu64 "\t%" PRId64 "\t%s\t%s\t%zu", j, r.passed,
            r.trace_hash, r.events, r.end_us, sig, text, nv < SW_MAX_VIOL ? nv : SW_MAX_VIOL);
    for (size_t i = 0; i < nv && i < SW_MAX_VIOL; i++) {
      const chk_violation *v = chk_violation_at(r.checks, i);
      clean(text, sizeof text, v->msg);
      fprintf(out, "\t%d\t%" PRIu32 "\t%" PRId64 "\t%s", (int)v->inv, v->actor, v->t_us, text);
    }
    fputc('\n', out);
  }
  scn_result_free(&r);
  fflush(out);
}

static void worker_main(const swarm *s, int fd, uint64_t start) {
  FILE *out = fdopen(fd, "w");
  scn_scenario *m = malloc(sizeof *m);
  if (!out || !m) _exit(3);
  for (uint64_t j = start; !s->total || j < s->total; j = next_job(s, j)) {
    if (s->deadline > 0 && cli_wall_now() >= s->deadline) break;
    worker_job(s, j, m, out);
  }
  fputs("D\n", out);
  fflush(out);
  _exit(0);
}

/* ---- the parent: workers, lines, crashes ------------------------------------ */

static int spawn(swarm *s, int w, uint64_t start) {
  int p[2];
  sw_worker *wk = &s->w[w];
  wk->pid = -1;
  wk->fd = -1;
  if ((s->total && start >= s->total) || (s->deadline > 0 && cli_wall_now() >= s->deadline)) return 0;
  if (pipe(p) != 0) return -1;
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) {
    close(p[0]);
    close(p[1]);
    return -1;
  }
  if (pid == 0) {
    close(p[0]);
    for (int k = 0; k < s->n_w; k++)
      if (s->w[k].fd >= 0) close(s->w[k].fd);
    worker_main(s, p[1], start);
  }
  close(p[1]);
  *wk = (sw_worker){pid, p[0], 0, start, cli_wall_now(), wk->buf, 0, wk->cap};
  return 0;
}

static sw_res *res_at(swarm *s, uint64_t j) {
  if (j >= s->cap_res) {
    uint64_t nc = s->cap_res ? s->cap_res : 1024;
    while (nc <= j) nc *= 2;
    sw_res *n = realloc(s->res, nc * sizeof *n);
    if (!n) return NULL;
    memset(n + s->cap_res, 0, (nc - s->cap_res) * sizeof *n);
    s->res = n;
    s->cap_res = nc;
  }
  return &s->res[j];
}

/* Records a failure the worker did not report itself. */
static void res_fail(swarm *s, uint64_t j, int state, const char *failure, const char *sig) {
  sw_res *r = res_at(s, j);
  if (!r) return;
  r->state = (uint8_t)state;
  r->passed = 0;
  r->failure = strdup(failure);
  r->sig = strdup(sig);
  s->done++;
  s->failed++;
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
  r->viol = calloc((size_t)(n ? n : 1), sizeof *r->viol);
  for (int i = 0; r->viol && i < n && 9 + 4 * i + 3 < nf; i++) {
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

/* One result line from worker slot w. */
static void on_line(swarm *s, sw_worker *wk, char *line) {
  char *f[9 + 4 * SW_MAX_VIOL];
  int nf = split(line, f, (int)(sizeof f / sizeof f[0]));
  if (!strcmp(f[0], "D")) {
    wk->done = 1;
    return;
  }
  if (nf < 3 || (strcmp(f[0], "R") && strcmp(f[0], "X"))) return;
  uint64_t j = strtoull(f[1], NULL, 10);
  wk->next = next_job(s, j);
  wk->started = cli_wall_now();
  if (f[0][0] == 'X') {
    res_fail(s, j, ST_ERROR, f[2], "error/-/-");
    return;
  }
  sw_res *r = res_at(s, j);
  if (!r || nf < 9) return;
  r->state = ST_DONE;
  r->passed = (uint8_t)atoi(f[2]);
  r->hash = strtoull(f[3], NULL, 16);
  r->events = strtoull(f[4], NULL, 10);
  r->end_us = strtoll(f[5], NULL, 10);
  s->done++;
  if (r->passed) return;
  s->failed++;
  r->sig = strdup(f[6]);
  r->failure = strdup(f[7]);
  parse_viol(r, f, nf, atoi(f[8]));
}

/* Reads what worker w sent; returns 0 at end of file, 1 otherwise. */
static int drain(swarm *s, sw_worker *wk) {
  char tmp[8192];
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

enum { REAP_EOF, REAP_TIMEOUT, REAP_RERUN };

/* Worker w ended (EOF, or killed): if it died inside a job, that job
** failed (REAP_RERUN: killed by mistake, run it again); a fresh worker
** continues the slot. Returns 0, or -1 if it cannot fork. */
static int reap(swarm *s, int w, int mode) {
  sw_worker *wk = &s->w[w];
  int status = 0;
  char msg[160], sig[64];
  close(wk->fd);
  wk->fd = -1;
  while (waitpid(wk->pid, &status, 0) < 0 && errno == EINTR) {}
  wk->pid = -1;
  if (wk->done || (s->total && wk->next >= s->total)) return 0;
  if (mode == REAP_RERUN) return spawn(s, w, wk->next);
  if (mode == REAP_TIMEOUT) {
    snprintf(msg, sizeof msg, "timed out: the seed ran longer than the --timeout of %.3fs; worker killed",
             (double)s->o.timeout_us / 1e6);
    res_fail(s, wk->next, ST_TIMEOUT, msg, "timeout/-/-");
  } else if (WIFSIGNALED(status)) {
    snprintf(msg, sizeof msg, "worker crashed: %s (signal %d) while running this seed",
             sig_name(WTERMSIG(status)), WTERMSIG(status));
    snprintf(sig, sizeof sig, "crash:%s/-/-", sig_name(WTERMSIG(status)));
    res_fail(s, wk->next, ST_CRASH, msg, sig);
  } else {
    snprintf(msg, sizeof msg, "worker exited with status %d while running this seed", WEXITSTATUS(status));
    res_fail(s, wk->next, ST_CRASH, msg, "crash:exit/-/-");
  }
  return spawn(s, w, next_job(s, wk->next));
}

static int kill_slow(swarm *s) {
  double now = cli_wall_now();
  for (int w = 0; w < s->n_w; w++) {
    sw_worker *wk = &s->w[w];
    if (wk->fd < 0 || now - wk->started <= (double)s->o.timeout_us / 1e6) continue;
    double started = wk->started;
    kill(wk->pid, SIGKILL);
    while (drain(s, wk)) {}
    /* a result that arrived meanwhile means the slow job did finish */
    if (reap(s, w, wk->started != started ? REAP_RERUN : REAP_TIMEOUT)) return -1;
  }
  return 0;
}

/* ---- progress ---------------------------------------------------------------- */

static void progress(swarm *s, int final) {
  double now = cli_wall_now(), el = now - s->t0;
  if (!s->tty || (!final && now - s->last_progress < 0.2)) return;
  s->last_progress = now;
  if (final) {
    fputs("\r\033[K", stderr);
    return;
  }
  double seeds = (double)s->done / (double)s->n_units, rate = el > 0 ? seeds / el : 0;
  double left = s->deadline > 0 ? s->deadline - now : 0;
  if (s->total && rate > 0) {
    double by_count = ((double)s->total / (double)s->n_units - seeds) / rate;
    if (left <= 0 || by_count < left) left = by_count;
  }
  fprintf(stderr, "\r\033[Kswarm: %.0f%s%.0f seeds, %.1f seeds/s, %" PRIu64 " failed, %.0fs left", seeds,
          s->total ? "/" : "", s->total ? (double)s->total / (double)s->n_units : 0.0, rate, s->failed,
          left > 0 ? left : 0);
}

static int run_pool(swarm *s) {
  struct pollfd *p = calloc((size_t)s->n_w, sizeof *p);
  int rc = p ? 0 : -1;
  for (int w = 0; w < s->n_w && !rc; w++) s->w[w].fd = -1;
  for (int w = 0; w < s->n_w && !rc; w++) rc = spawn(s, w, (uint64_t)w * s->n_units);
  for (int live = 1; live && !rc;) {
    live = 0;
    for (int w = 0; w < s->n_w; w++) {
      p[w] = (struct pollfd){s->w[w].fd, POLLIN, 0};
      live |= s->w[w].fd >= 0;
    }
    if (!live) break;
    if (poll(p, (nfds_t)s->n_w, 100) < 0 && errno != EINTR) rc = -1;
    for (int w = 0; w < s->n_w && !rc; w++)
      if (p[w].fd >= 0 && (p[w].revents & (POLLIN | POLLHUP | POLLERR)) && !drain(s, &s->w[w]))
        rc = reap(s, w, REAP_EOF);
    if (!rc) rc = kill_slow(s);
    progress(s, 0);
  }
  progress(s, 1);
  free(p);
  return rc;
}

/* ---- reporting ---------------------------------------------------------------- */

typedef struct sw_group {
  const char *sig;
  size_t unit;
  uint64_t first_job, count;
  uint64_t seeds[8];
} sw_group;

typedef struct sw_sorted {
  uint64_t seed, job;
  size_t unit;
} sw_sorted;

static int cmp_sorted(const void *a, const void *b) {
  const sw_sorted *x = a, *y = b;
  if (x->seed != y->seed) return x->seed < y->seed ? -1 : 1;
  if (x->unit != y->unit) return x->unit < y->unit ? -1 : 1;
  return 0;
}

/* The finished jobs sorted by (seed, unit); *n receives the count. */
static sw_sorted *sorted_jobs(const swarm *s, size_t *n) {
  sw_sorted *v = malloc((s->done ? s->done : 1) * sizeof *v);
  *n = 0;
  for (uint64_t j = 0; v && j < s->cap_res; j++) {
    if (s->res[j].state == ST_NONE) continue;
    const sw_unit *u;
    v[*n].seed = job_seed(s, j, &u);
    v[*n].job = j;
    v[(*n)++].unit = (size_t)(u - s->units);
  }
  if (v) qsort(v, *n, sizeof *v, cmp_sorted);
  return v;
}

static sw_group *group_failures(const swarm *s, const sw_sorted *v, size_t n, size_t *ng) {
  sw_group *g = calloc(s->failed ? s->failed : 1, sizeof *g);
  *ng = 0;
  for (size_t i = 0; g && i < n; i++) {
    const sw_res *r = &s->res[v[i].job];
    if (r->passed || !r->sig) continue;
    size_t k = 0;
    while (k < *ng && (g[k].unit != v[i].unit || strcmp(g[k].sig, r->sig))) k++;
    if (k == *ng) g[(*ng)++] = (sw_group){r->sig, v[i].unit, v[i].job, 0, {0}};
    if (g[k].count < 8) g[k].seeds[g[k].count] = v[i].seed;
    g[k].count++;
  }
  return g;
}

static void replay_cmd(const swarm *s, uint64_t j, char *b, size_t cap) {
  const sw_unit *u;
  uint64_t seed = job_seed(s, j, &u);
  const scn_scenario *sc = s->sc[u->file];
  int n = snprintf(b, cap, "revenant swarm %s --case %s --seeds 1 --seed-base 0x%" PRIx64 " --strategy %s",
                   sc->file, sc->cases[u->ci].label, seed, sim_strategy_name(job_strategy(s, sc)));
  if (s->o.duration_us && n > 0 && (size_t)n < cap)
    snprintf(b + n, cap - (size_t)n, " --duration %" PRId64 "us", s->o.duration_us);
}

/* The rpt_run of job j as the parent knows it (no trace). */
static void parent_rpt(const swarm *s, uint64_t j, rpt_run *r, char *replay, size_t cap) {
  const sw_unit *u = &s->units[j % s->n_units];
  const sw_res *x = &s->res[j];
  const scn_scenario *sc = s->sc[u->file];
  memset(r, 0, sizeof *r);
  r->scenario_name = sc->name;
  r->scenario_file = sc->file;
  r->seed = job_seed(s, j, &u);
  r->strategy = sim_strategy_name(job_strategy(s, sc));
  r->variant = sc->cases[u->ci].label;
  r->trace_hash = x->hash;
  r->events = x->events;
  r->end_us = x->end_us;
  r->passed = x->passed;
  r->expect = sc->cases[u->ci].expect_text;
  r->failure = x->passed ? NULL : x->failure;
  r->violations = x->viol;
  r->n_violations = (size_t)x->n_viol;
  replay_cmd(s, j, replay, cap);
  r->replay = replay;
}

/* In a child: re-runs job j with its trace, prints it, writes the repro. */
static void repro_child(const swarm *s, uint64_t j, const char *path) {
  scn_scenario *m = malloc(sizeof *m);
  uint64_t seed;
  scn_result res;
  rpt_run r;
  char replay[900];
  if (!m) _exit(3);
  const sw_unit *u = job_scenario(s, j, m, &seed);
  test_hooks(s, seed);
  if (scn_run_case_ex(m, u->ci, seed, m->strategy, NULL, &res) != 0) _exit(3);
  parent_rpt(s, j, &r, replay, sizeof replay);
  r.trace_hash = res.trace_hash;
  r.events = res.events;
  r.end_us = res.end_us;
  r.violations = chk_violation_count(res.checks) ? chk_violation_at(res.checks, 0) : NULL;
  r.n_violations = chk_violation_count(res.checks);
  r.trace = &res.s->trace;
  r.actor_names = (const char *const *)res.actor_names;
  r.n_actors = res.n_actors;
  if (!s->o.quiet) rpt_text_run(stdout, &r, 0, 0);
  char *text = scn_write_string(m);
  FILE *f = fopen(path, "w");
  int bad = !f || !text || rpt_repro_write(f, &r, text);
  if (f && fclose(f)) bad = 1;
  fflush(stdout);
  _exit(bad ? 4 : 0);
}

/* Waits for pid at most the seed timeout; 1 if it exited with 0. */
static int wait_child(const swarm *s, pid_t pid) {
  int status = 0;
  double until = cli_wall_now() + (double)s->o.timeout_us / 1e6;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (r < 0 && errno != EINTR) return 0;
    if (cli_wall_now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return 0;
    }
    usleep(2000);
  }
}

/* The repro of a job that cannot be re-run (crash, hang): no trace. */
static void repro_fallback(const swarm *s, uint64_t j, const char *path) {
  scn_scenario *m = malloc(sizeof *m);
  uint64_t seed;
  rpt_run r;
  char replay[900];
  if (!m) return;
  job_scenario(s, j, m, &seed);
  parent_rpt(s, j, &r, replay, sizeof replay);
  if (!s->o.quiet)
    printf("FAIL %s [%s] seed=0x%" PRIx64 " %s: %s\n", r.scenario_name, r.variant, r.seed, r.strategy,
         r.failure ? r.failure : "failed");
  char *text = scn_write_string(m);
  FILE *f = fopen(path, "w");
  if (!f || !text || rpt_repro_write(f, &r, text)) fprintf(stderr, "revenant: cannot write %s\n", path);
  if (f) fclose(f);
  free(text);
  free(m);
}

static void report_group(const swarm *s, const sw_group *g, int k) {
  char path[1024];
  const sw_unit *u = &s->units[g->unit];
  const scn_scenario *sc = s->sc[u->file];
  mkdir(s->o.repro_dir, 0777);
  snprintf(path, sizeof path, "%s/swarm-%s-%s-%d.json", s->o.repro_dir, sc->name, sc->cases[u->ci].label, k);
  fflush(stdout);
  pid_t pid = s->res[g->first_job].state == ST_DONE ? fork() : -1;
  if (pid == 0) repro_child(s, g->first_job, path);
  if (pid < 0 || !wait_child(s, pid)) repro_fallback(s, g->first_job, path);
  printf("  signature %d: %s [%s]: %" PRIu64 " run%s, seeds", k, g->sig, sc->cases[u->ci].label, g->count,
         g->count == 1 ? "" : "s");
  for (uint64_t i = 0; i < g->count && i < 8; i++) printf(" 0x%" PRIx64, g->seeds[i]);
  printf("%s\n  repro: %s\n", g->count > 8 ? " ..." : "", path);
}

static int write_json(const swarm *s, const sw_sorted *v, size_t n) {
  rpt_run *runs = calloc(n ? n : 1, sizeof *runs);
  char **replays = calloc(n ? n : 1, sizeof *replays), buf[1200];
  int rc = -1, oom = !runs || !replays;
  for (size_t i = 0; !oom && i < n; i++) {
    parent_rpt(s, v[i].job, &runs[i], buf, sizeof buf);
    oom = !(replays[i] = strdup(buf));
    runs[i].replay = replays[i];
  }
  FILE *f = oom ? NULL : fopen(s->o.json, "w");
  if (f && rpt_json_write(f, runs, n) == 0) rc = 0;
  if (f && fclose(f)) rc = -1;
  if (rc) fprintf(stderr, "revenant swarm: cannot write %s\n", s->o.json);
  for (size_t i = 0; replays && i < n; i++) free(replays[i]);
  free(runs);
  free(replays);
  return rc;
}

static int report(swarm *s) {
  size_t n, ng;
  sw_sorted *v = sorted_jobs(s, &n);
  sw_group *g = v ? group_failures(s, v, n, &ng) : NULL;
  int rc = v && g ? 0 : -1;
  for (size_t k = 0; g && k < ng; k++) report_group(s, &g[k], (int)k + 1);
  if (v && s->o.json && write_json(s, v, n)) rc = -1;
  double el = cli_wall_now() - s->t0;
  fprintf(stderr, "swarm: %zu runs (%.0f seeds x %zu cases) in %.2fs: %.1f seeds/s with %d workers, shard %d/%d\n",
          n, (double)n / (double)s->n_units, s->n_units, el, el > 0 ? (double)n / (double)s->n_units / el : 0.0,
          s->n_w, s->o.shard_i, s->o.shard_n);
  rpt_text_summary(stdout, n - s->failed, s->failed);
  free(v);
  free(g);
  return rc;
}

/* --expect-reproduce: one line per case (runs, how many met the case's
** expectation, the first such seed); returns 0 if every case passes
** scn_swarm_reproduce_verdict. */
static int reproduce_report(const swarm *s) {
  int bad = 0;
  for (size_t ui = 0; ui < s->n_units; ui++) {
    const sw_unit *u = &s->units[ui];
    const scn_case *c = &s->sc[u->file]->cases[u->ci];
    uint64_t runs = 0, met = 0, first = 0;
    for (uint64_t j = ui; j < s->cap_res; j += s->n_units) {
      const sw_unit *uu;
      uint64_t seed = job_seed(s, j, &uu);
      if (s->res[j].state == ST_NONE) continue;
      runs++;
      if (s->res[j].passed && met++ == 0) first = seed;
    }
    int v = scn_swarm_reproduce_verdict(c, runs, met);
    bad |= v;
    if (c->violate_mask && met)
      printf("reproduce: %s [%s]: reproduced in %" PRIu64 " of %" PRIu64 " seeds, first seed 0x%" PRIx64 "\n",
             s->sc[u->file]->name, c->label, met, runs, first);
    else if (c->violate_mask)
      printf("reproduce: %s [%s]: NOT reproduced in %" PRIu64 " seeds\n", s->sc[u->file]->name, c->label, runs);
    else
      printf("reproduce: %s [%s]: expectation met in %" PRIu64 " of %" PRIu64 " seeds%s\n", s->sc[u->file]->name,
             c->label, met, runs, v ? "" : " (holds)");
  }
  return bad;
}

/* ---- setup ---------------------------------------------------------------------- */

static int load_all(swarm *s) {
  s->sc = calloc(s->o.files.n, sizeof *s->sc);
  s->units = calloc(s->o.files.n * SCN_MAX_CASES, sizeof *s->units);
  if (!s->sc || !s->units) return -1;
  for (size_t i = 0; i < s->o.files.n; i++) {
    char err[1024];
    int matched = 0;
    s->sc[i] = calloc(1, sizeof *s->sc[i]);
    if (!s->sc[i] || scn_load(s->o.files.v[i], s->sc[i], err, sizeof err)) {
      fprintf(stderr, "%s\n", s->sc[i] ? err : "revenant: out of memory");
      return -1;
    }
    for (int c = 0; c < s->sc[i]->n_cases; c++) {
      if (s->o.only_case && strcmp(s->o.only_case, s->sc[i]->cases[c].label)) continue;
      s->units[s->n_units++] = (sw_unit){i, c};
      matched = 1;
    }
    if (!matched) {
      fprintf(stderr, "revenant swarm: %s: no case named \"%s\"\n", s->o.files.v[i], s->o.only_case);
      return -1;
    }
  }
  return 0;
}

static int read_hook(const char *name, uint64_t *v) {
  const char *e = getenv(name);
  return e && *e && cli_parse_seed(e, v) == 0;
}

static void setup_counts(swarm *s) {
  uint64_t i0 = (uint64_t)(s->o.shard_i - 1), n = (uint64_t)s->o.shard_n;
  uint64_t steps = s->o.seeds > i0 ? (s->o.seeds - i0 + n - 1) / n : 0;
  s->total = s->o.seeds ? steps * s->n_units : 0;
  s->n_w = s->o.jobs;
  if (s->total && (uint64_t)s->n_w > s->total / s->n_units) s->n_w = (int)(s->total / s->n_units);
  if (s->n_w < 1) s->n_w = 1;
  s->t0 = cli_wall_now();
  s->deadline = s->o.time_us ? s->t0 + (double)s->o.time_us / 1e6 : 0;
  s->tty = isatty(2);
  s->have_crash = read_hook("REVENANT_TEST_CRASH_SEED", &s->crash_seed);
  s->have_hang = read_hook("REVENANT_TEST_HANG_SEED", &s->hang_seed);
}

static void swarm_free(swarm *s) {
  for (uint64_t j = 0; j < s->cap_res; j++) {
    free(s->res[j].failure);
    free(s->res[j].sig);
    free(s->res[j].viol);
  }
  free(s->res);
  for (int w = 0; s->w && w < s->n_w; w++) free(s->w[w].buf);
  free(s->w);
  for (size_t i = 0; s->sc && i < s->o.files.n; i++) {
    if (s->sc[i]) scn_free(s->sc[i]);
    free(s->sc[i]);
  }
  free(s->sc);
  free(s->units);
  cli_paths_free(&s->o.files);
}

int cli_cmd_swarm(int argc, char **argv) {
  swarm s;
  memset(&s, 0, sizeof s);
  int rc = parse_swarm_opts(argc, argv, &s.o);
  if (rc || load_all(&s)) {
    swarm_free(&s);
    return 2;
  }
  setup_counts(&s);
  if (!s.o.quiet && s.o.duration_us)
    printf("swarm: every run is cut at %.3fs of virtual time (--duration)\n", (double)s.o.duration_us / 1e6);
  if (!s.o.quiet && s.o.seeds)
    printf("swarm: %zu file(s), %zu case(s), %" PRIu64 " seeds of %" PRIu64 " (shard %d/%d)\n",
           s.o.files.n, s.n_units, s.total / s.n_units, s.o.seeds, s.o.shard_i, s.o.shard_n);
  else if (!s.o.quiet)
    printf("swarm: %zu file(s), %zu case(s), seeds for %.0fs (shard %d/%d)\n", s.o.files.n, s.n_units,
           (double)s.o.time_us / 1e6, s.o.shard_i, s.o.shard_n);
  s.w = calloc((size_t)s.n_w, sizeof *s.w);
  rc = !s.w || (s.total == 0 && s.o.seeds) ? 0 : run_pool(&s);
  if (!s.w || rc || report(&s)) rc = 2;
  else if (s.o.expect_reproduce) rc = reproduce_report(&s);
  else rc = s.failed ? 1 : 0;
  swarm_free(&s);
  return rc;
}
