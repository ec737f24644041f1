/*
** cmd_swarm.c: `revenant swarm`: argument parsing and printing around the
** swarm engine (scenarios/scn_swarm.h, docs/swarm.md), which runs the
** seeds in forked workers and hands back results in job order and the
** failure groups by signature. Each group's smallest seed is re-run in a
** child (scn_swarm_rerun) that prints its report and writes the group's
** repro file, unless a --baseline (scenarios/scn_baseline.h) knows the
** signature: then one line with the entry's reason, and the group does not
** fail the swarm.
**
** Test-only hooks (environment): REVENANT_TEST_CRASH_SEED=N makes the run
** of seed N raise SIGSEGV, REVENANT_TEST_HANG_SEED=N makes it hang; they
** exist so that tests/test_swarm.c can check crash and timeout handling.
*/
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "reports/rpt.h"
#include "scenarios/scn.h"
#include "scenarios/scn_baseline.h"
#include "scenarios/scn_json.h"
#include "scenarios/scn_swarm.h"
#include "runtime/rt_events.h"

static const char swarm_usage[] =
    "usage: revenant swarm FILE... (--seeds N | --time 60s) [options]\n"
    "\n"
    "Runs every case of every scenario with many seeds; each seed also draws\n"
    "its own fault mix (stream \"swarm.mix\") within the file's allowance\n"
    "(\"swarm\": {\"faults\"}); a case's expected violations are judged per its\n"
    "mode (expect.swarm: every seed, once across the swarm, or report only).\n"
    "Workers are separate processes:\n"
    "a crash or hang is reported as a failure with its seed. Failures are\n"
    "grouped by signature, with one repro file per signature. The report ends\n"
    "with the probes the runs reached (docs/trace.md \"Probes\") and the ones\n"
    "no run reached; a case's expect.reach fails the swarm when no run of it\n"
    "reached a probe it lists.\n"
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
    "  --html FILE        write a self-contained HTML report: signatures, recovery-time\n"
    "                     plot, runs per fault kind, and the timeline of the first seed\n"
    "                     of each signature (at most 8)\n"
    "  --repro-dir DIR    where repro files go (default revenant-out)\n"
    "  --baseline FILE    known signatures (each with its reason): reported as known,\n"
    "                     they do not fail the swarm; only new ones do\n"
    "  --write-baseline FILE  write every signature found as a baseline file (the\n"
    "                     reasons of matching --baseline entries kept, others TODO)\n"
    "  --all-faults       ignore each file's fault allowance (\"swarm\": {\"faults\"}):\n"
    "                     draw every kind unbounded (what the allowances exclude;\n"
    "                     scenarios/swarm-baseline.json lists what that finds)\n"
    "  --expect-reproduce a case that expects violations passes when at least one\n"
    "                     seed reproduces them (its expectation met); the others as usual.\n"
    "                     Prints one 'reproduce:' line per case\n"
    "  -q, --quiet        one line per signature and the summary line (no probe table)\n"
    "  -h, --help         show this help\n"
    "\n"
    "exit status: 0 every expectation met (--expect-reproduce: every case reproduced or\n"
    "held; --baseline: every failure known), 1 an expectation failed (a new signature)\n"
    "or an expect.reach probe was never reached, 2 usage\n"
    "or scenario error or a file that could not be\n"
    "written, 130/143 stopped by SIGINT/SIGTERM (after writing what finished)\n";

typedef struct sw_opts {
  scn_swarm_opts e;             /* what the engine needs */
  int quiet, shard_count, expect_reproduce;
  const char *json, *html, *repro_dir, *baseline, *write_baseline;
  cli_paths files;
} sw_opts;

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
    o->e.shard_i = (int)((id - min) / step + 1);
    o->e.shard_n = (int)count;
  } else if (env_long("JOB_COMPLETION_INDEX", &idx) == 1) {
    if (!n && env_long("REVENANT_SHARD_COUNT", &n) != 1)
      return usage_error("JOB_COMPLETION_INDEX is set: give --shard-count N or REVENANT_SHARD_COUNT", NULL);
    o->e.shard_i = (int)idx + 1;
    o->e.shard_n = (int)n;
  } else {
    return 0;
  }
  if (o->e.shard_i < 1 || o->e.shard_n < 1 || o->e.shard_i > o->e.shard_n)
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
    if (parse_count(v, UINT64_MAX, &o->e.seeds)) return usage_error("expected a positive count:", v);
  } else if (!strcmp(a, "--time") || !strcmp(a, "--timeout") || !strcmp(a, "--duration")) {
    int64_t *d = !strcmp(a, "--time") ? &o->e.time_us : !strcmp(a, "--timeout") ? &o->e.timeout_us : &o->e.duration_us;
    if (scn_parse_duration(v, d) || *d <= 0) return usage_error("expected a duration such as 60s:", v);
  } else if (!strcmp(a, "-j")) {
    if (parse_count(v, 1024, &n)) return usage_error("-j: expected 1 to 1024:", v);
    o->e.jobs = (int)n;
  } else if (!strcmp(a, "--strategy")) {
    if ((o->e.strategy = sim_strategy_parse(v)) < 0) return usage_error("unknown strategy (fifo, random, pct):", v);
  } else if (!strcmp(a, "--seed-base")) {
    if (cli_parse_seed(v, &o->e.base)) return usage_error("bad seed:", v);
    o->e.have_base = 1;
  } else if (!strcmp(a, "--shard")) {
    if (parse_shard(v, &o->e.shard_i, &o->e.shard_n)) return usage_error("expected --shard I/N with 1 <= I <= N:", v);
  } else if (!strcmp(a, "--shard-count")) {
    if (parse_count(v, 1000000, &n)) return usage_error("expected a positive count:", v);
    o->shard_count = (int)n;
  } else if (!strcmp(a, "--case")) o->e.only_case = v;
  else if (!strcmp(a, "--json")) o->json = v;
  else if (!strcmp(a, "--html")) o->html = v;
  else if (!strcmp(a, "--baseline")) o->baseline = v;
  else if (!strcmp(a, "--write-baseline")) o->write_baseline = v;
  else o->repro_dir = v;
  return 0;
}

static int parse_swarm_opts(int argc, char **argv, sw_opts *o) {
  static const char *const takes[] = {"--seeds", "--time", "--timeout", "--duration", "-j", "--strategy",
                                      "--seed-base", "--shard", "--shard-count", "--case", "--json",
                                      "--html", "--repro-dir", "--baseline", "--write-baseline", NULL};
  memset(o, 0, sizeof *o);
  o->e.strategy = -1;
  o->e.timeout_us = 60000000;
  o->repro_dir = CLI_OUT_DIR;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  o->e.jobs = cpus > 0 && cpus <= 1024 ? (int)cpus : 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = 0;
    while (takes[k] && strcmp(takes[k], a)) k++;
    if (takes[k]) {
      if (i + 1 >= argc) return usage_error("option needs a value:", a);
      if (cli_is_flag(argv[i + 1])) {
        fprintf(stderr, "revenant swarm: option %s needs a value, got the option %s\n", a, argv[i + 1]);
        return usage_error("option needs a value:", a);
      }
      if (swarm_opt_value(o, a, argv[++i])) return 2;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(swarm_usage, stdout);
      exit(0);
    } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
      o->quiet = 1;
    } else if (!strcmp(a, "--expect-reproduce")) {
      o->expect_reproduce = 1;
    } else if (!strcmp(a, "--all-faults")) {
      o->e.all_faults = 1;
    } else if (a[0] == '-') {
      return usage_error("unknown option", a);
    } else if (cli_expand(&o->files, a)) {
      return 2;
    }
  }
  if (o->files.n == 0) return usage_error("no scenario files given", NULL);
  if (cli_output_not_input("swarm", "--json", o->json, o->files.v, o->files.n) ||
      cli_output_not_input("swarm", "--html", o->html, o->files.v, o->files.n) ||
      cli_output_not_input("swarm", "--write-baseline", o->write_baseline, o->files.v, o->files.n))
    return 2;
  if (!o->e.seeds && !o->e.time_us) return usage_error("give --seeds N or --time D", NULL);
  if (!o->e.shard_n && shard_from_env(o)) return 2;
  if (!o->e.shard_n) o->e.shard_i = o->e.shard_n = 1;
  return 0;
}

/* ---- results kept for the report --------------------------------------------- */

/* A finished run as the results JSON needs it (kept only with --json). */
typedef struct sw_kept {
  uint64_t job, seed;
  size_t unit;
  int passed, n_viol;
  uint64_t hash, events;
  int64_t end_us;
  char *failure;
  chk_violation *viol;
} sw_kept;

#define SW_HTML_KINDS 128
#define SW_HTML_REC 64
#define SW_HTML_RUNS 8

/* What --html gathers from every run: fault kinds and recovery times. */
typedef struct sw_html {
  rpt_swarm_kind kinds[SW_HTML_KINDS];
  size_t n_kinds;
  int64_t *rec;
  size_t n_rec, cap_rec;
  int oom;
} sw_html;

typedef struct swarm {
  sw_opts o;
  sw_html html;
  scn_scenario **sc;
  size_t n_sc;
  scn_swarm *eng;
  sw_kept *kept;                /* --json when it cannot be streamed */
  size_t n_kept, cap_kept;
  int stream;                   /* --json written as results arrive */
  cli_out json;
  rpt_json_stream js;
  int tty, oom;
  int unreached;           /* (case, probe) pairs of expect.reach no run reached */
  scn_baseline base;       /* --baseline */
  int have_base;
  size_t known, fresh;     /* signature groups the baseline knows, and new ones */
  uint64_t known_runs;
} swarm;

static void keep_result(swarm *s, const scn_swarm_result *r) {
  if (s->n_kept == s->cap_kept) {
    size_t nc = s->cap_kept ? s->cap_kept * 2 : 256;
    sw_kept *k = realloc(s->kept, nc * sizeof *k);
    if (!k) {
      s->oom = 1;
      return;
    }
    s->kept = k;
    s->cap_kept = nc;
  }
  sw_kept *k = &s->kept[s->n_kept++];
  *k = (sw_kept){r->job, r->seed, r->unit, r->passed, 0, r->hash, r->events, r->end_us, NULL, NULL};
  if (r->passed) return;
  k->failure = strdup(r->failure);
  if (r->n_viol > 0 && (k->viol = malloc((size_t)r->n_viol * sizeof *k->viol))) {
    memcpy(k->viol, r->viol, (size_t)r->n_viol * sizeof *k->viol);
    k->n_viol = r->n_viol;
  }
  if (!k->failure) s->oom = 1;
}

/* --html, in the worker: "kind:count,...|us,us,..." of the run's fault
** records and recovery times (rpt_recovery_times). */
static void html_detail(void *ctx, const scn_scenario *m, int ci, const scn_result *r, char *buf,
                        size_t cap) {
  const sim_trace *t = &r->s->trace;
  const char *kinds[32];
  uint64_t counts[32];
  int nk = 0;
  size_t n = 0;
  (void)ctx, (void)m, (void)ci;
  for (size_t i = 0; t->keep && i < t->n; i++) {
    if (t->recs[i].kind != RT_EV_FAULT) continue;
    const char *k = sim_trace_str(t, t->recs[i].s);
    int x = 0;
    while (x < nk && strcmp(kinds[x], k)) x++;
    if (x == nk && nk == 32) continue;
    if (x == nk) kinds[nk] = k, counts[nk++] = 0;
    counts[x]++;
  }
  buf[0] = 0;
  for (int x = 0; x < nk && n < cap; x++) {
    size_t at = n;
    n += (size_t)snprintf(buf + n, cap - n, "%s%s:%" PRIu64, x ? "," : "", kinds[x], counts[x]);
    for (size_t p = at + (x ? 1 : 0); p < n && p < cap && buf[p] != ':'; p++)
      if (buf[p] == ',' || buf[p] == '|') buf[p] = '_';
  }
  int64_t v[SW_HTML_REC];
  size_t nv = 0;
  rpt_recovery_times(t, v, &nv, SW_HTML_REC);
  if (n < cap) n += (size_t)snprintf(buf + n, cap - n, "|");
  for (size_t i = 0; i < nv && n < cap; i++) n += (size_t)snprintf(buf + n, cap - n, "%s%" PRId64, i ? "," : "", v[i]);
}

/* --html, in the parent: adds one run's detail line to the tallies. */
static void html_add(sw_html *h, const scn_swarm_result *r) {
  char line[4096];
  snprintf(line, sizeof line, "%s", r->extra);
  char *bar = strchr(line, '|'), *save = NULL;
  if (bar) *bar = 0;
  for (char *tok = strtok_r(line, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    char *colon = strrchr(tok, ':');
    if (!colon) continue;
    *colon = 0;
    size_t k = 0;
    while (k < h->n_kinds && strcmp(h->kinds[k].kind, tok)) k++;
    if (k == h->n_kinds) {
      char *name = k < SW_HTML_KINDS ? strdup(tok) : NULL;
      if (!name) continue;
      h->kinds[h->n_kinds++] = (rpt_swarm_kind){name, 0, 0, 0};
    }
    h->kinds[k].runs++;
    h->kinds[k].failed += !r->passed;
    h->kinds[k].faults += strtoull(colon + 1, NULL, 10);
  }
  for (char *p = bar ? bar + 1 : NULL; p && *p;) {
    if (h->n_rec == h->cap_rec) {
      size_t nc = h->cap_rec ? h->cap_rec * 2 : 1024;
      int64_t *nr = realloc(h->rec, nc * sizeof *nr);
      if (!nr) {
        h->oom = 1;
        return;
      }
      h->rec = nr;
      h->cap_rec = nc;
    }
    h->rec[h->n_rec++] = strtoll(p, &p, 10);
    if (*p == ',') p++;
    else break;
  }
}

static void parent_rpt(const swarm *s, uint64_t j, const sw_kept *k, rpt_run *r, char *replay, size_t cap);

static void on_result(void *ctx, const scn_swarm_result *r) {
  swarm *s = ctx;
  if (s->o.html && r->state == SCN_SWARM_DONE) html_add(&s->html, r);
  if (!s->o.json) return;
  if (!s->stream) {
    keep_result(s, r);
    return;
  }
  rpt_run run;
  char replay[1200];
  sw_kept k = {r->job, r->seed, r->unit, r->passed, r->n_viol, r->hash, r->events, r->end_us,
               (char *)r->failure, (chk_violation *)r->viol};
  parent_rpt(s, r->job, &k, &run, replay, sizeof replay);
  if (s->json.f) rpt_json_add(&s->js, &run);
}

static void on_progress(void *ctx, const scn_swarm_stats *st) {
  swarm *s = ctx;
  if (!s->tty) return;
  double seeds = (double)st->runs / (double)st->units;
  double rate = st->elapsed_s > 0 ? seeds / st->elapsed_s : 0;
  fprintf(stderr, "\r\033[Kswarm: %.0f%s%.0f seeds, %.1f seeds/s, %" PRIu64 " failed, %.0fs left", seeds,
          st->total ? "/" : "", st->total ? (double)st->total / (double)st->units : 0.0, rate, st->failed,
          st->left_s);
}

/* ---- reporting ---------------------------------------------------------------- */

static void replay_cmd(const swarm *s, const scn_swarm_job *jb, char *b, size_t cap) {
  const scn_scenario *sc = s->sc[jb->file];
  char qf[600], qc[160];
  int n = snprintf(b, cap, "revenant swarm %s --case %s --seeds 1 --seed-base 0x%" PRIx64 " --strategy %s",
                   cli_shell_word(sc->file, qf, sizeof qf), cli_shell_word(sc->cases[jb->ci].label, qc, sizeof qc),
                   jb->seed, sim_strategy_name(jb->strategy));
  if (s->o.e.duration_us && n > 0 && (size_t)n < cap)
    n += snprintf(b + n, cap - (size_t)n, " --duration %" PRId64 "us", s->o.e.duration_us);
  if (s->o.e.all_faults && n > 0 && (size_t)n < cap) snprintf(b + n, cap - (size_t)n, " --all-faults");
}

/* The rpt_run of job j as the parent knows it (no trace). */
static void parent_rpt(const swarm *s, uint64_t j, const sw_kept *k, rpt_run *r, char *replay, size_t cap) {
  scn_swarm_job jb;
  scn_swarm_job_info(s->eng, j, &jb);
  const scn_scenario *sc = s->sc[jb.file];
  memset(r, 0, sizeof *r);
  r->scenario_name = sc->name;
  r->scenario_file = sc->file;
  r->seed = jb.seed;
  r->strategy = sim_strategy_name(jb.strategy);
  r->variant = sc->cases[jb.ci].label;
  r->expect = sc->cases[jb.ci].expect_text;
  if (k) {
    r->trace_hash = k->hash;
    r->events = k->events;
    r->end_us = k->end_us;
    r->passed = k->passed;
    r->failure = k->passed ? NULL : k->failure;
    r->violations = k->viol;
    r->n_violations = (size_t)k->n_viol;
  }
  replay_cmd(s, &jb, replay, cap);
  r->replay = replay;
}

typedef struct repro_ctx {
  const swarm *s;
  uint64_t job;
  const char *path;
} repro_ctx;

/* In the re-run child: prints the run with its trace, writes the repro. */
static int repro_child(void *ctx, const scn_scenario *m, int ci, const scn_result *res) {
  const repro_ctx *c = ctx;
  rpt_run r;
  char replay[900];
  (void)ci;
  parent_rpt(c->s, c->job, NULL, &r, replay, sizeof replay);
  r.trace_hash = res->trace_hash;
  r.events = res->events;
  r.end_us = res->end_us;
  r.passed = res->passed;
  r.failure = res->passed ? NULL : res->failure;
  r.violations = chk_violation_count(res->checks) ? chk_violation_at(res->checks, 0) : NULL;
  r.n_violations = chk_violation_count(res->checks);
  r.trace = &res->s->trace;
  r.actor_names = (const char *const *)res->actor_names;
  r.n_actors = res->n_actors;
  if (!c->s->o.quiet) rpt_text_run(stdout, &r, 0, 0);
  char *text = scn_write_string(m);
  cli_out f;
  int bad = !text || cli_out_open(&f, c->path);
  if (!bad && rpt_repro_write(f.f, &r, text)) {
    fprintf(stderr, "revenant: cannot write %s\n", c->path);
    cli_out_abort(&f);
    bad = 1;
  } else if (!bad) {
    bad = cli_out_commit(&f) != 0;
  }
  free(text);
  return bad;
}

/* The repro of a job that cannot be re-run (crash, hang): no trace. */
static int repro_fallback(const swarm *s, const scn_swarm_group *g, const char *path) {
  scn_scenario *m = malloc(sizeof *m);
  rpt_run r;
  char replay[900];
  if (!m) return -1;
  scn_swarm_job_scenario(s->eng, g->first_job, m);
  sw_kept k = {g->first_job, 0, g->unit, 0, 0, 0, 0, 0, g->failure, NULL};
  for (size_t i = 0; i < s->n_kept; i++)
    if (s->kept[i].job == g->first_job) k = s->kept[i];
  if (!k.failure || !*k.failure) k.failure = g->first_state == SCN_SWARM_TIMEOUT ? "timed out" : "failed";
  parent_rpt(s, g->first_job, &k, &r, replay, sizeof replay);
  if (!s->o.quiet)
    printf("FAIL %s [%s] seed=0x%" PRIx64 " %s: %s\n", r.scenario_name, r.variant, r.seed, r.strategy,
           k.failure);
  char *text = scn_write_string(m);
  cli_out f;
  int bad = !text || cli_out_open(&f, path);
  if (!bad && rpt_repro_write(f.f, &r, text)) {
    fprintf(stderr, "revenant: cannot write %s\n", path);
    cli_out_abort(&f);
    bad = 1;
  } else if (!bad) {
    bad = cli_out_commit(&f) != 0;
  }
  free(text);
  free(m);
  return bad ? -1 : 0;
}

/* Prints group k and writes its repro file; 0, 1 if the baseline knows it
** (nothing written), or -1 if it cannot. */
static int report_group(swarm *s, const scn_swarm_group *g, int k) {
  char path[1200];
  scn_swarm_job jb;
  int rc = 0;
  scn_swarm_job_info(s->eng, g->first_job, &jb);
  const scn_scenario *sc = s->sc[jb.file];
  const scn_baseline_entry *known =
      s->have_base ? scn_baseline_match(&s->base, sc->name, sc->cases[jb.ci].label, g->sig) : NULL;
  if (known) { /* reported, not re-run: no repro file */
    printf("  signature %d: %s [%s]: %" PRIu64 " run%s, known (baseline): %s\n", k, g->sig,
           sc->cases[jb.ci].label, g->count, g->count == 1 ? "" : "s", known->reason);
    return 1;
  }
  if (g->whole_case) { /* a verdict on the case over the swarm: no run to re-run */
    if (!s->o.quiet) printf("FAIL %s [%s]: %s\n", sc->name, sc->cases[jb.ci].label, g->failure);
    printf("  signature %d: %s [%s]: none of %" PRIu64 " run%s\n", k, g->sig, sc->cases[jb.ci].label, g->count,
           g->count == 1 ? "" : "s");
    return 0;
  }
  cli_repro_path(path, sizeof path, s->o.repro_dir, "swarm", sc->file, sc->name, sc->cases[jb.ci].label, jb.seed,
                 NULL);
  if (mkdir(s->o.repro_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "revenant swarm: cannot make the repro directory %s: %s\n", s->o.repro_dir, strerror(errno));
    rc = -1;
  } else {
    repro_ctx c = {s, g->first_job, path};
    if (g->first_state != SCN_SWARM_DONE || scn_swarm_rerun(s->eng, g->first_job, repro_child, &c))
      rc = repro_fallback(s, g, path);
  }
  printf("  signature %d: %s [%s]: %" PRIu64 " run%s, seeds", k, g->sig, sc->cases[jb.ci].label, g->count,
         g->count == 1 ? "" : "s");
  for (uint64_t i = 0; i < g->count && i < 8; i++) printf(" 0x%" PRIx64, g->seeds[i]);
  printf("%s\n", g->count > 8 ? " ..." : "");
  if (!rc) printf("  repro: %s\n", path);
  return rc;
}

static int cmp_kept(const void *a, const void *b) {
  const sw_kept *x = a, *y = b;
  if (x->seed != y->seed) return x->seed < y->seed ? -1 : 1;
  if (x->unit != y->unit) return x->unit < y->unit ? -1 : 1;
  return 0;
}

/* The results JSON, runs sorted by (seed, case). */
static int write_json(swarm *s) {
  size_t n = s->n_kept;
  rpt_run *runs = calloc(n ? n : 1, sizeof *runs);
  char **replays = calloc(n ? n : 1, sizeof *replays), buf[1200];
  int rc = -1, oom = !runs || !replays || s->oom;
  if (n) qsort(s->kept, n, sizeof *s->kept, cmp_kept);
  for (size_t i = 0; !oom && i < n; i++) {
    parent_rpt(s, s->kept[i].job, &s->kept[i], &runs[i], buf, sizeof buf);
    oom = !(replays[i] = strdup(buf));
    runs[i].replay = replays[i];
  }
  cli_out f;
  if (oom) fprintf(stderr, "revenant swarm: cannot write %s: out of memory\n", s->o.json);
  else if (cli_out_open(&f, s->o.json) == 0) {
    if (rpt_json_write(f.f, runs, n) == 0) rc = cli_out_commit(&f);
    else {
      fprintf(stderr, "revenant swarm: cannot write %s\n", s->o.json);
      cli_out_abort(&f);
    }
  }
  for (size_t i = 0; replays && i < n; i++) free(replays[i]);
  free(runs);
  free(replays);
  return rc;
}

static int cmp_kind(const void *a, const void *b) {
  return strcmp(((const rpt_swarm_kind *)a)->kind, ((const rpt_swarm_kind *)b)->kind);
}

/* One signature's first seed, re-run here with its trace for the page. */
typedef struct sw_html_run {
  scn_scenario *m;
  scn_result res;
  rpt_run r;
  char replay[900];
} sw_html_run;

static int html_run(const swarm *s, uint64_t j, sw_html_run *x) {
  scn_swarm_job jb;
  scn_swarm_job_info(s->eng, j, &jb);
  if (!(x->m = malloc(sizeof *x->m))) return -1;
  scn_swarm_job_scenario(s->eng, j, x->m);
  if (scn_run_case_ex(x->m, jb.ci, jb.seed, x->m->strategy, NULL, &x->res) != 0) {
    scn_result_free(&x->res);
    free(x->m);
    return -1;
  }
  const scn_result *res = &x->res;
  rpt_run *r = &x->r;
  parent_rpt(s, j, NULL, r, x->replay, sizeof x->replay);
  r->trace_hash = res->trace_hash;
  r->events = res->events;
  r->end_us = res->end_us;
  r->passed = res->passed;
  r->failure = res->passed ? NULL : res->failure;
  r->violations = chk_violation_count(res->checks) ? chk_violation_at(res->checks, 0) : NULL;
  r->n_violations = chk_violation_count(res->checks);
  r->trace = &res->s->trace;
  r->actor_names = (const char *const *)res->actor_names;
  r->n_actors = res->n_actors;
  return 0;
}

/* The --html page: the summary, then the first seed of the first
** SW_HTML_RUNS signatures that ran to a verdict, one at a time. */
static int write_html(swarm *s) {
  size_t ng;
  scn_swarm_stats st;
  const scn_swarm_group *g = scn_swarm_groups(s->eng, &ng);
  scn_swarm_stats_get(s->eng, &st);
  sw_html *h = &s->html;
  rpt_swarm_sig *sigs = calloc(ng ? ng : 1, sizeof *sigs);
  char (*replays)[900] = calloc(ng ? ng : 1, sizeof *replays), title[600];
  int rc = -1;
  if (!sigs || !replays || h->oom) {
    fprintf(stderr, "revenant swarm: cannot write %s: out of memory\n", s->o.html);
    goto out;
  }
  qsort(h->kinds, h->n_kinds, sizeof *h->kinds, cmp_kind);
  for (size_t k = 0; k < ng; k++) {
    scn_swarm_job jb;
    scn_swarm_job_info(s->eng, g[k].first_job, &jb);
    const scn_scenario *sc = s->sc[jb.file];
    replay_cmd(s, &jb, replays[k], sizeof replays[k]);
    sigs[k] = (rpt_swarm_sig){g[k].sig, sc->name, sc->cases[jb.ci].label, g[k].count, jb.seed, replays[k]};
  }
  size_t tl = (size_t)snprintf(title, sizeof title, "%zu case(s) of", st.units);
  for (size_t i = 0; i < s->o.files.n && tl < sizeof title; i++)
    tl += (size_t)snprintf(title + tl, sizeof title - tl, " %s", s->o.files.v[i]);
  if (tl < sizeof title) snprintf(title + tl, sizeof title - tl, "; shard %d/%d", s->o.e.shard_i, s->o.e.shard_n);
  rpt_swarm_probe probes[RT_PROBE_COUNT];
  const scn_swarm_probe *pr = scn_swarm_probes(s->eng);
  for (int p = 0; p < RT_PROBE_COUNT; p++) {
    scn_swarm_job jb;
    scn_swarm_job_info(s->eng, pr[p].first_unit, &jb); /* job u is unit u's first */
    probes[p] = (rpt_swarm_probe){rt_probe_name(p), pr[p].runs, pr[p].first_seed, s->sc[jb.file]->name,
                                  s->sc[jb.file]->cases[jb.ci].label};
  }
  rpt_swarm sw = {title, st.runs, st.failed, st.units ? st.runs / st.units : 0, sigs, ng,
                  h->rec, h->n_rec, h->kinds, h->n_kinds, probes, RT_PROBE_COUNT};
  cli_out f;
  if (cli_out_open(&f, s->o.html)) goto out;
  rpt_html_stream w;
  rpt_html_begin(&w, f.f, "swarm", NULL);
  for (size_t k = 0, shown = 0; k < ng && shown < SW_HTML_RUNS; k++) {
    sw_html_run x;
    if (g[k].whole_case || g[k].first_state != SCN_SWARM_DONE || html_run(s, g[k].first_job, &x)) continue;
    rpt_html_add(&w, &x.r);
    scn_result_free(&x.res);
    scn_free(x.m);
    free(x.m);
    shown++;
  }
  if (rpt_html_end(&w, &sw)) {
    fprintf(stderr, "revenant swarm: cannot write %s\n", s->o.html);
    cli_out_abort(&f);
  } else {
    rc = cli_out_commit(&f);
  }
out:
  free(sigs);
  free(replays);
  return rc;
}

/* The probe table: each probe some run reached, with how many runs and the
** first seed (and its file and case); then the probes no run reached. */
static void report_probes(const swarm *s) {
  const scn_swarm_probe *pr = scn_swarm_probes(s->eng);
  char none[1024] = "";
  size_t o = 0;
  int reached = 0;
  for (int p = 0; p < RT_PROBE_COUNT; p++) reached += pr[p].runs > 0;
  printf("probes: %d of %d reached\n", reached, RT_PROBE_COUNT);
  for (int p = 0; p < RT_PROBE_COUNT; p++) {
    if (!pr[p].runs) {
      o += (size_t)snprintf(none + o, o < sizeof none ? sizeof none - o : 0, "%s%s", o ? ", " : "",
                            rt_probe_name(p));
      continue;
    }
    scn_swarm_job jb;
    scn_swarm_job_info(s->eng, pr[p].first_unit, &jb); /* job u is unit u's first */
    const scn_scenario *sc = s->sc[jb.file];
    printf("  %-24s %8" PRIu64 " run%s  first seed 0x%" PRIx64 " (%s [%s])\n", rt_probe_name(p), pr[p].runs,
           pr[p].runs == 1 ? " " : "s", pr[p].first_seed, sc->name, sc->cases[jb.ci].label);
  }
  if (*none) printf("  not reached: %s\n", none);
}

/* expect.reach: a case whose runs never reached a probe it requires fails
** the swarm. Returns the number of such (case, probe) pairs. */
static int report_reach(const swarm *s, const scn_swarm_stats *st) {
  int missing = 0;
  for (size_t u = 0; u < st->units; u++) {
    scn_swarm_job jb;
    scn_swarm_job_info(s->eng, u, &jb);
    const scn_scenario *sc = s->sc[jb.file];
    uint64_t want = sc->cases[jb.ci].reach_mask, got = scn_swarm_unit_probes(s->eng, u);
    for (int p = 0; p < RT_PROBE_COUNT; p++) {
      if (!(want >> p & 1) || (got >> p & 1)) continue;
      printf("FAIL reach %s [%s]: no run reached probe %s (expect.reach in %s)\n", sc->name,
             sc->cases[jb.ci].label, rt_probe_name(p), sc->file);
      missing++;
    }
  }
  return missing;
}

/* --write-baseline: one entry per signature group (a group the baseline
** knew keeps that entry's reason and pattern). */
static int write_baseline(swarm *s, const scn_swarm_group *g, size_t ng) {
  scn_baseline_entry *e = calloc(ng ? ng : 1, sizeof *e);
  const scn_baseline_entry **src = calloc(ng ? ng : 1, sizeof *src); /* the known entry of e[i] */
  size_t n = 0;
  int rc = -1;
  if (!e || !src) {
    free(e);
    free(src);
    return -1;
  }
  for (size_t k = 0; k < ng; k++) {
    scn_swarm_job jb;
    scn_swarm_job_info(s->eng, g[k].first_job, &jb);
    const scn_scenario *sc = s->sc[jb.file];
    scn_baseline_entry x;
    const scn_baseline_entry *old = NULL;
    for (size_t i = 0; s->have_base && i < s->base.n && !old; i++) {
      const scn_baseline_entry *b = &s->base.e[i];
      if (scn_baseline_entry_matches(b, sc->name, sc->cases[jb.ci].label, g[k].sig)) old = b;
    }
    if (old) {
      x = *old;
    } else {
      memset(&x, 0, sizeof x);
      snprintf(x.scenario[0], sizeof x.scenario[0], "%s", sc->name);
      x.n_scenarios = 1;
      snprintf(x.case_name, sizeof x.case_name, "%s", sc->cases[jb.ci].label);
      snprintf(x.signature[0], sizeof x.signature[0], "%s", g[k].sig);
      x.n_signatures = 1;
      snprintf(x.reason, sizeof x.reason, "TODO: why this is known (the SDK behaviour or the model limit)");
    }
    int dup = 0; /* a known entry once; a new signature once per scenario and case */
    for (size_t i = 0; i < n && !dup; i++)
      dup = old ? src[i] == old
                : !src[i] && !strcmp(e[i].scenario[0], x.scenario[0]) && !strcmp(e[i].case_name, x.case_name) &&
                      !strcmp(e[i].signature[0], x.signature[0]);
    if (!dup) {
      src[n] = old;
      e[n++] = x;
    }
  }
  cli_out f;
  if (cli_out_open(&f, s->o.write_baseline) == 0) {
    if (scn_baseline_write(f.f, e, n) == 0) rc = cli_out_commit(&f);
    else {
      fprintf(stderr, "revenant swarm: cannot write %s\n", s->o.write_baseline);
      cli_out_abort(&f);
    }
  }
  free(e);
  free(src);
  return rc;
}

static int report(swarm *s) {
  size_t ng;
  scn_swarm_stats st;
  const scn_swarm_group *g = scn_swarm_groups(s->eng, &ng);
  int rc = 0;
  for (size_t k = 0; k < ng; k++) {
    int r = report_group(s, &g[k], (int)k + 1);
    if (r < 0) rc = -1;
    if (r == 1) s->known++, s->known_runs += g[k].count;
    else s->fresh++;
  }
  if (s->o.write_baseline && write_baseline(s, g, ng)) rc = -1;
  if (s->o.json && s->stream) {
    if (!s->json.f || rpt_json_end(&s->js, NULL, 0)) {
      if (s->json.f) fprintf(stderr, "revenant swarm: cannot write %s\n", s->o.json);
      cli_out_abort(&s->json);
      rc = -1;
    } else if (cli_out_commit(&s->json)) {
      rc = -1;
    }
  } else if (s->o.json && write_json(s)) {
    rc = -1;
  }
  if (s->o.html && write_html(s)) rc = -1;
  scn_swarm_stats_get(s->eng, &st);
  double seeds = (double)st.runs / (double)st.units;
  fprintf(stderr, "swarm: %" PRIu64 " runs (%.0f seeds x %zu cases) in %.2fs: %.1f seeds/s with %d workers, shard %d/%d\n",
          st.runs, seeds, st.units, st.elapsed_s, st.elapsed_s > 0 ? seeds / st.elapsed_s : 0.0, st.workers,
          s->o.e.shard_i, s->o.e.shard_n);
  if (cli_stop) printf("interrupted after %.0f seeds\n", seeds);
  if (!s->o.quiet) report_probes(s);
  s->unreached = st.runs ? report_reach(s, &st) : 0;
  if (s->have_base) {
    size_t unseen = 0;
    for (size_t i = 0; i < s->base.n; i++) unseen += s->base.e[i].matched == 0;
    printf("baseline: %zu known signature%s (%" PRIu64 " runs), %zu new; %zu of %zu entries not seen\n", s->known,
           s->known == 1 ? "" : "s", s->known_runs, s->fresh, unseen, s->base.n);
  }
  rpt_text_summary(stdout, (size_t)(st.runs - st.failed), (size_t)st.failed);
  return rc;
}

/* One line per case judged "once" or "report" (expect.swarm), and with
** --expect-reproduce per case: runs, how many met the case's expected
** violations, the first such seed. Returns 1 if a case fails its mode (a
** "once" case never reproduced; with --expect-reproduce also a case with
** nothing expected violated whose expectation was not met in every run). */
static int reproduce_report(const swarm *s, const scn_swarm_stats *st) {
  int bad = 0;
  for (size_t u = 0; u < st->units; u++) {
    scn_swarm_tally t;
    scn_swarm_job jb;
    scn_swarm_unit_tally(s->eng, u, &t);
    scn_swarm_job_info(s->eng, u, &jb);
    const scn_scenario *sc = s->sc[jb.file];
    const scn_case *c = &sc->cases[jb.ci];
    if (!t.runs || (!s->o.expect_reproduce && t.mode == SCN_SWARM_EVERY)) continue;
    if (t.mode == SCN_SWARM_EVERY) { /* --expect-reproduce, a case that expects no violation */
      int v = scn_swarm_reproduce_verdict(c, t.runs, t.met);
      bad |= v;
      printf("reproduce: %s [%s]: expectation met in %" PRIu64 " of %" PRIu64 " seeds%s\n", sc->name, c->label,
             t.met, t.runs, v ? "" : " (holds)");
    } else if (t.mode == SCN_SWARM_REPORT) {
      if (!s->o.quiet)
        printf("report: %s [%s]: %s in %" PRIu64 " of %" PRIu64 " seeds (expect.swarm: report)\n", sc->name,
               c->label, c->expect_text, t.met, t.runs);
    } else if (t.met) {
      if (!s->o.quiet || s->o.expect_reproduce)
        printf("reproduce: %s [%s]: reproduced in %" PRIu64 " of %" PRIu64 " seeds, first seed 0x%" PRIx64 "\n",
               sc->name, c->label, t.met, t.runs, t.first_met);
    } else {
      bad = 1;
      printf("reproduce: %s [%s]: NOT reproduced in %" PRIu64 " seeds\n", sc->name, c->label, t.runs);
    }
  }
  return bad || s->oom;
}

/* ---- setup ---------------------------------------------------------------------- */

static int load_all(swarm *s) {
  s->sc = calloc(s->o.files.n, sizeof *s->sc);
  if (!s->sc) return -1;
  for (size_t i = 0; i < s->o.files.n; i++) {
    char err[1024];
    s->sc[i] = calloc(1, sizeof *s->sc[i]);
    if (!s->sc[i] || scn_load(s->o.files.v[i], s->sc[i], err, sizeof err)) {
      fprintf(stderr, "%s\n", s->sc[i] ? err : "revenant: out of memory");
      free(s->sc[i]);
      s->sc[i] = NULL;
      return -1;
    }
    s->n_sc = i + 1;
  }
  return 0;
}

static int read_hook(const char *name, uint64_t *v) {
  const char *e = getenv(name);
  return e && *e && cli_parse_seed(e, v) == 0;
}

static void swarm_free(swarm *s) {
  cli_out_abort(&s->json); /* only when not yet committed */
  scn_swarm_free(s->eng);
  for (size_t i = 0; i < s->n_kept; i++) {
    free(s->kept[i].failure);
    free(s->kept[i].viol);
  }
  free(s->kept);
  for (size_t k = 0; k < s->html.n_kinds; k++) free((char *)s->html.kinds[k].kind);
  free(s->html.rec);
  for (size_t i = 0; s->sc && i < s->o.files.n; i++) {
    if (s->sc[i]) scn_free(s->sc[i]);
    free(s->sc[i]);
  }
  free(s->sc);
  cli_paths_free(&s->o.files);
  scn_baseline_free(&s->base);
}

int cli_cmd_swarm(int argc, char **argv) {
  swarm s;
  char err[1200];
  memset(&s, 0, sizeof s);
  int rc = parse_swarm_opts(argc, argv, &s.o);
  if (!rc && s.o.baseline) {
    if (scn_baseline_load(s.o.baseline, &s.base, err, sizeof err)) {
      fprintf(stderr, "%s\n", err);
      rc = 2;
    } else {
      s.have_base = 1;
    }
  }
  if (rc || load_all(&s)) {
    swarm_free(&s);
    return 2;
  }
  s.tty = isatty(2);
  s.o.e.on_result = on_result;
  s.o.e.on_progress = on_progress;
  if (s.o.html) s.o.e.worker_extra = html_detail;
  s.o.e.ctx = &s;
  s.o.e.stop = &cli_stop;
  s.o.e.reproduce = s.o.expect_reproduce;
  cli_catch_signals();
  s.o.e.have_crash_seed = read_hook("REVENANT_TEST_CRASH_SEED", &s.o.e.crash_seed);
  s.o.e.have_hang_seed = read_hook("REVENANT_TEST_HANG_SEED", &s.o.e.hang_seed);
  if (!(s.eng = scn_swarm_new(s.sc, s.n_sc, &s.o.e, err, sizeof err))) {
    fprintf(stderr, "%s\n", err);
    swarm_free(&s);
    return 2;
  }
  scn_swarm_stats st;
  scn_swarm_stats_get(s.eng, &st);
  if (!s.o.quiet && s.o.e.duration_us)
    printf("swarm: every run is cut at %.3fs of virtual time (--duration)\n", (double)s.o.e.duration_us / 1e6);
  if (!s.o.quiet && s.o.e.seeds)
    printf("swarm: %zu file(s), %zu case(s), %" PRIu64 " seeds of %" PRIu64 " (shard %d/%d)\n",
           s.o.files.n, st.units, st.total / st.units, s.o.e.seeds, s.o.e.shard_i, s.o.e.shard_n);
  else if (!s.o.quiet)
    printf("swarm: %zu file(s), %zu case(s), seeds for %.0fs (shard %d/%d)\n", s.o.files.n, st.units,
           (double)s.o.e.time_us / 1e6, s.o.e.shard_i, s.o.e.shard_n);
  if (!s.o.quiet && !s.o.e.seeds && st.total)
    printf("swarm: --time stops after %" PRIu64 " seeds at the latest: the last seed is 0xffffffffffffffff\n",
           st.total / st.units);
  /* Runs come in job order: seed step k, then file and case. That is the
     (seed, case) order of the JSON whenever every file starts from the same
     seed, so the file is streamed; otherwise a small record per run is kept
     and sorted at the end. */
  s.stream = s.o.json != NULL;
  for (size_t i = 1; s.stream && !s.o.e.have_base && i < s.n_sc; i++) s.stream = s.sc[i]->seed == s.sc[0]->seed;
  if (s.stream) {
    if (cli_out_open(&s.json, s.o.json)) {
      swarm_free(&s);
      return 2;
    }
    rpt_json_begin(&s.js, s.json.f);
  }
  rc = scn_swarm_run(s.eng, err, sizeof err);
  if (s.tty) fputs("\r\033[K", stderr);
  if (rc < 0) fprintf(stderr, "revenant %s\n", err);
  if (rc < 0 || report(&s)) rc = 2;
  else if (cli_stop) rc = 128 + cli_stop;
  else {
    scn_swarm_stats_get(s.eng, &st);
    int cases_bad = reproduce_report(&s, &st);
    if (s.have_base) rc = s.fresh || s.unreached || s.oom ? 1 : 0; /* cases that fail have groups */
    else rc = st.failed || cases_bad || s.unreached ? 1 : 0;
  }
  swarm_free(&s);
  return rc;
}
