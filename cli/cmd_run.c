/*
** cmd_run.c: `revenant run` and `revenant check`.
*/
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "reports/rpt.h"
#include "scenarios/scn.h"

static const char run_usage[] =
    "usage: revenant run FILE|DIR... [options]\n"
    "\n"
    "Runs every case of every scenario (directories are searched for *.json)\n"
    "and checks its expectations. One line per scenario, case and seed; a\n"
    "failure is explained with the chain of trace events that led to it.\n"
    "\n"
    "options:\n"
    "  --seed N              run with seed N (decimal or 0x-hex) instead of the file's\n"
    "  --seeds A..B          run every seed from A to B inclusive (streamed: any range)\n"
    "  --strategy S          fifo | random | pct (default: the file's, else fifo)\n"
    "  --case NAME           run only the case NAME\n"
    "  --check-determinism   run each case twice and fail if the trace hashes differ\n"
    "  --crash-points        count the durable writes of a fault-free run, then re-run\n"
    "                        crashing right after each write k and check the invariants\n"
    "  --crash-points-max N  cover at most N boundaries, evenly spread (default all)\n"
    "  --crash-at K          replay crash point K of --crash-points (no file faults)\n"
    "  --json FILE           write results as JSON (docs/reports.md)\n"
    "  --junit FILE          write JUnit XML for CI\n"
    "  --trace FILE          write a Chrome Trace Event timeline (Perfetto) of the last run\n"
    "  --html FILE           write one self-contained HTML report of every run (timeline,\n"
    "                        violations and their chains; opens offline in a browser)\n"
    "  --repro-dir DIR       where repro files of failures go (default revenant-out)\n"
    "  -q, --quiet           print only failures and the summary line\n"
    "  -v, --verbose         also print figures, expected violations, the facts that\n"
    "                        hold and the script errors of passing runs\n"
    "  -h, --help            show this help\n"
    "\n"
    "exit status: 0 every expectation met, 1 an expectation failed, 2 usage or scenario\n"
    "error or a file that could not be written, 130/143 stopped by SIGINT/SIGTERM (after\n"
    "writing what finished)\n";

typedef struct run_opts {
  int have_seed;
  uint64_t seed_lo, seed_hi;
  int strategy;
  const char *only_case;
  int determinism, quiet, verbose, color, crash_points;
  uint64_t crash_max, crash_at;
  const char *json, *junit, *trace, *html, *repro_dir;
  cli_paths files;
} run_opts;

int cli_parse_seed(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  if (!*s || *s == '-') return -1;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno || *end) return -1;
  *out = v;
  return 0;
}

static int usage_error(const char *cmd, const char *msg, const char *arg) {
  fprintf(stderr, "revenant %s: %s%s%s\n", cmd, msg, arg ? " " : "", arg ? arg : "");
  fprintf(stderr, "usage: revenant %s FILE|DIR...%s; try 'revenant %s --help'\n", cmd,
          strcmp(cmd, "check") ? " [options]" : "", cmd); /* check has no options */
  return 2;
}

static int parse_seeds(run_opts *o, const char *arg) {
  const char *dots = strstr(arg, "..");
  char lo[64];
  if (!dots || (size_t)(dots - arg) >= sizeof lo) return -1;
  memcpy(lo, arg, (size_t)(dots - arg));
  lo[dots - arg] = 0;
  if (cli_parse_seed(lo, &o->seed_lo) || cli_parse_seed(dots + 2, &o->seed_hi)) return -1;
  return o->seed_lo <= o->seed_hi ? 0 : -1;
}

/* Returns 0, or 2 after printing a usage error. */
static int parse_run_opts(int argc, char **argv, run_opts *o) {
  memset(o, 0, sizeof *o);
  o->strategy = -1;
  o->repro_dir = CLI_OUT_DIR;
  const char *no_color = getenv("NO_COLOR"); /* no-color.org: set and not empty */
  o->color = isatty(1) && !(no_color && *no_color);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = !strcmp(a, "--seed") || !strcmp(a, "--seeds") || !strcmp(a, "--strategy") ||
                !strcmp(a, "--json") || !strcmp(a, "--junit") || !strcmp(a, "--trace") ||
                !strcmp(a, "--html") ||
                !strcmp(a, "--repro-dir") || !strcmp(a, "--case") ||
                !strcmp(a, "--crash-points-max") || !strcmp(a, "--crash-at");
    if (takes && !val) return usage_error(argv[0], "option needs a value:", a);
    if (takes && cli_is_flag(val)) {
      fprintf(stderr, "revenant %s: option %s needs a value, got the option %s\n", argv[0], a, val);
      return usage_error(argv[0], "option needs a value:", a);
    }
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(run_usage, stdout);
      exit(0);
    } else if (!strcmp(a, "--seed")) {
      if (cli_parse_seed(val, &o->seed_lo)) return usage_error(argv[0], "bad seed:", val);
      o->seed_hi = o->seed_lo;
      o->have_seed = 1;
    } else if (!strcmp(a, "--seeds")) {
      if (parse_seeds(o, val)) return usage_error(argv[0], "bad seed range (want A..B):", val);
      o->have_seed = 1;
    } else if (!strcmp(a, "--strategy")) {
      if ((o->strategy = sim_strategy_parse(val)) < 0)
        return usage_error(argv[0], "unknown strategy (fifo, random, pct):", val);
    } else if (!strcmp(a, "--case")) o->only_case = val;
    else if (!strcmp(a, "--json")) o->json = val;
    else if (!strcmp(a, "--junit")) o->junit = val;
    else if (!strcmp(a, "--trace")) o->trace = val;
    else if (!strcmp(a, "--html")) o->html = val;
    else if (!strcmp(a, "--repro-dir")) o->repro_dir = val;
    else if (!strcmp(a, "--check-determinism")) o->determinism = 1;
    else if (!strcmp(a, "--crash-points")) o->crash_points = 1;
    else if (!strcmp(a, "--crash-points-max") || !strcmp(a, "--crash-at")) {
      uint64_t v;
      if (cli_parse_seed(val, &v) || v == 0) return usage_error(argv[0], "expected a positive integer:", val);
      if (!strcmp(a, "--crash-at"))
        o->crash_at = v;
      else
        o->crash_max = v;
    }
    else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) o->quiet = 1;
    else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o->verbose = 1;
    else if (a[0] == '-') return usage_error(argv[0], "unknown option", a);
    else if (cli_expand(&o->files, a)) return 2;
    if (takes) i++;
  }
  if (o->files.n == 0) return usage_error(argv[0], "no scenario files given", NULL);
  const char *outs[4] = {o->json, o->junit, o->trace, o->html}, *names[4] = {"--json", "--junit", "--trace", "--html"};
  for (int k = 0; k < 4; k++)
    if (cli_output_not_input(argv[0], names[k], outs[k], o->files.v, o->files.n)) return 2;
  return 0;
}

/* ---- one run → rpt_run ------------------------------------------------ */

typedef struct run_record {
  scn_result res;
  rpt_run rr;
  rpt_figure figs[8];
  char variant[80], replay[900];
  const scn_scenario *sc;
} run_record;

static void fill_rpt(run_record *rec, const scn_scenario *sc, int ci, double wall, uint64_t crash_at) {
  scn_result *res = &rec->res;
  rpt_run *r = &rec->rr;
  const scn_case *cs = &sc->cases[ci];
  snprintf(rec->variant, sizeof rec->variant, "%s", cs->label);
  char qf[600], qc[160];
  int n = snprintf(rec->replay, sizeof rec->replay, "revenant run %s --case %s --seed 0x%llx --strategy %s",
                   cli_shell_word(sc->file, qf, sizeof qf), cli_shell_word(cs->label, qc, sizeof qc),
                   (unsigned long long)res->seed, sim_strategy_name(res->strategy));
  if (crash_at && n > 0 && (size_t)n < sizeof rec->replay) /* the crash point is part of the run */
    snprintf(rec->replay + n, sizeof rec->replay - (size_t)n, " --crash-at %llu", (unsigned long long)crash_at);
  for (int i = 0; i < res->n_figures; i++)
    rec->figs[i] = (rpt_figure){res->figure_names[i], res->figures[i], res->figure_units[i]};
  memset(r, 0, sizeof *r);
  r->scenario_name = sc->name;
  r->scenario_file = sc->file;
  r->seed = res->seed;
  r->strategy = sim_strategy_name(res->strategy);
  r->variant = rec->variant;
  r->trace_hash = res->trace_hash;
  r->events = res->events;
  r->end_us = res->end_us;
  r->passed = res->passed;
  r->expect = cs->expect_text;
  r->failure = res->passed ? NULL : res->failure;
  r->violations = chk_violation_count(res->checks) ? chk_violation_at(res->checks, 0) : NULL;
  r->n_violations = chk_violation_count(res->checks);
  r->trace = &res->s->trace;
  r->facts = res->facts;
  r->probes = res->probes;
  r->actor_names = (const char *const *)res->actor_names;
  r->n_actors = res->n_actors;
  r->figures = rec->figs;
  r->n_figures = (size_t)res->n_figures;
  r->replay = rec->replay;
  r->crash_at = crash_at;
  r->wall_s = wall;
  rec->sc = sc;
}

/* Writes the repro file of a failed run; 0, or -1 after saying why not. */
static int write_repro(const run_opts *o, run_record *rec) {
  char path[1200], extra[40] = "";
  cli_out out;
  if (mkdir(o->repro_dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "revenant: cannot make the repro directory %s: %s\n", o->repro_dir, strerror(errno));
    return -1;
  }
  /* unique per file, case, seed and crash point: the scenario name alone
     is not (two files may share it) */
  if (o->crash_at) snprintf(extra, sizeof extra, "-crash%llu", (unsigned long long)o->crash_at);
  cli_repro_path(path, sizeof path, o->repro_dir, "repro", rec->sc->file, rec->sc->name, rec->variant,
                 rec->res.seed, extra);
  if (cli_out_open(&out, path)) return -1;
  char *source = scn_source_now(rec->sc); /* with the modules its runs loaded */
  int bad = !source || rpt_repro_write(out.f, &rec->rr, source);
  free(source);
  if (bad) {
    fprintf(stderr, "revenant: cannot write repro file %s\n", path);
    cli_out_abort(&out);
    return -1;
  }
  if (cli_out_commit(&out)) return -1;
  fprintf(stdout, "  repro: %s\n", path);
  return 0;
}

/* ---- the run loop ----------------------------------------------------- */

#define RUN_MAX_RECOVERY 1000000 /* recovery times kept for the distribution */

typedef struct run_state {
  run_opts o;
  run_record *last;          /* the last run, kept for --trace */
  cli_out json, junit, html;
  rpt_json_stream js;
  rpt_html_stream hs;
  rpt_junit_stream ju;
  int junit_dup;             /* several cases of one scenario: name them */
  size_t passed, failed;
  rpt_load_error *errs;
  size_t n_errs, cap_errs;
  int64_t *recovery_us;      /* recovery times, for the distribution */
  size_t n_recovery, cap_recovery, recovery_runs;
  size_t runs;
  uint64_t seeds_done;       /* (case, seed) pairs run */
  double t0, last_progress;
  int tty;
  uint64_t last_hash;        /* trace hash of the last run */
  int write_errors;          /* repro files that could not be written */
} run_state;

/* Adds the n recovery times v of one run (fault to recovery) to st; stops
** collecting at RUN_MAX_RECOVERY values (the line then says over how many
** runs), so memory stays bounded over any seed range. */
static void collect_recovery(run_state *st, const int64_t *v, size_t n) {
  if (st->n_recovery >= RUN_MAX_RECOVERY) return;
  st->recovery_runs++;
  if (n == 0) return;
  if (st->n_recovery + n > st->cap_recovery) {
    size_t nc = (st->cap_recovery + n) * 2;
    int64_t *nv = realloc(st->recovery_us, nc * sizeof *nv);
    if (!nv) return;
    st->recovery_us = nv;
    st->cap_recovery = nc;
  }
  memcpy(st->recovery_us + st->n_recovery, v, n * sizeof *v);
  st->n_recovery += n;
}

static int determinism_check(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strat,
                             const scn_run_opts *ro, scn_result *first) {
  scn_result again;
  if (scn_run_case_ex(sc, ci, seed, strat, ro, &again)) return -1;
  if (again.trace_hash != first->trace_hash) {
    snprintf(first->failure, sizeof first->failure,
             "not deterministic: trace hash 0x%016llx then 0x%016llx for the same seed",
             (unsigned long long)first->trace_hash, (unsigned long long)again.trace_hash);
    first->passed = 0;
  }
  scn_result_free(&again);
  return 0;
}

static void record_free(run_record *rec) {
  if (!rec) return;
  scn_result_free(&rec->res);
  free(rec);
}

static uint32_t crash_check_mask(const scn_case *cs);
static void add_error(run_state *st, const char *file, const char *msg);

/* The progress line on a terminal (stderr) for a seed range, at most 5
** times a second. */
static void progress(run_state *st, uint64_t seed, int final) {
  double now = cli_wall_now();
  if (!st->tty || !st->o.have_seed || st->o.seed_lo == st->o.seed_hi ||
      (!final && now - st->last_progress < 0.2))
    return;
  st->last_progress = now;
  if (final) {
    fputs("\r\033[K", stderr);
    return;
  }
  double el = now - st->t0, rate = el > 0 ? (double)st->runs / el : 0;
  fprintf(stderr, "\r\033[Krun: %zu runs, seed %llu of %llu..%llu, %.1f runs/s, %zu failed", st->runs,
          (unsigned long long)seed, (unsigned long long)st->o.seed_lo, (unsigned long long)st->o.seed_hi, rate,
          st->failed);
}

static int run_one(run_state *st, const scn_scenario *sc, int ci, uint64_t seed) {
  sim_strategy strat = st->o.strategy >= 0 ? (sim_strategy)st->o.strategy : sc->strategy;
  run_record *rec = calloc(1, sizeof *rec); /* one allocation per run: pointers into it stay valid */
  if (!rec) return -1;
  double t0 = cli_wall_now();
  /* Without an output that reads the trace (--json, --junit, --trace, -v),
  ** the run keeps no trace records: a failure is re-run with them kept for
  ** its report. Recovery times are measured as the records go by. */
  int64_t rec_us[256];
  rpt_recovery_stream *rs = rpt_recovery_stream_new(rec_us, 256);
  scn_run_opts ro = {.crash_after_write = st->o.crash_at,
                     .lean = !st->o.json && !st->o.junit && !st->o.trace && !st->o.html && !st->o.verbose,
                     .observer = rs ? rpt_recovery_observe : NULL,
                     .observer_ctx = rs};
  if (st->o.crash_at) { /* the run --crash-points made for this boundary: without the file's faults */
    scn_run_opts cr = cli_crash_run_opts(&sc->cases[ci], st->o.crash_at);
    ro.without_faults = cr.without_faults;
    ro.check_mask = cr.check_mask;
  }
  int rc = scn_run_case_ex(sc, ci, seed, strat, &ro, &rec->res);
  size_t n_rec = rpt_recovery_stream_end(rs);
  ro.observer = NULL; /* a second run (--check-determinism) is not measured again */
  if (rc) { /* e.g. a Lua invariant's error: also in the JSON "errors" and JUnit */
    fprintf(stderr, "revenant: %s: %s\n", sc->file, rec->res.failure);
    add_error(st, sc->file, rec->res.failure);
    record_free(rec);
    return -1;
  }
  if (st->o.crash_at && rec->res.writes < st->o.crash_at) {
    fprintf(stderr, "revenant: %s [%s] seed=0x%llx: --crash-at %llu is beyond the last durable write "
            "boundary (the run has %llu)\n", sc->file, sc->cases[ci].label, (unsigned long long)seed,
            (unsigned long long)st->o.crash_at, (unsigned long long)rec->res.writes);
    record_free(rec);
    return -1;
  }
  if (st->o.determinism && determinism_check(sc, ci, seed, strat, &ro, &rec->res)) {
    record_free(rec);
    return -1;
  }
  fill_rpt(rec, sc, ci, cli_wall_now() - t0, st->o.crash_at);
  collect_recovery(st, rec_us, n_rec);
  st->runs++;
  if (rec->res.passed)
    st->passed++;
  else
    st->failed++;
  if (!st->o.quiet || !rec->res.passed) rpt_text_run(stdout, &rec->rr, st->o.verbose, st->o.color);
  char why[256];
  if (!st->o.quiet && !st->o.crash_at &&
      chk_unjudged(rec->res.checks, sc->cases[ci].hold_mask, rec->res.end_us, why, sizeof why))
    printf("  not judged: %s\n", why);
  st->last_hash = rec->res.trace_hash;
  if (!rec->res.passed && write_repro(&st->o, rec)) st->write_errors++;
  if (st->json.f) rpt_json_add(&st->js, &rec->rr);
  if (st->html.f) rpt_html_add(&st->hs, &rec->rr);
  if (st->junit.f) rpt_junit_add(&st->ju, &rec->rr, st->junit_dup);
  if (st->o.trace) { /* keep only the last run */
    record_free(st->last);
    st->last = rec;
  } else {
    record_free(rec);
  }
  return 0;
}

/* ---- crash-point coverage --------------------------------------------- */

static uint32_t crash_check_mask(const scn_case *cs) {
  uint32_t m = (1u << CHK_RECOVERY_FINISHES) | (1u << CHK_STASH_DURABLE) |
               (1u << CHK_NO_DOUBLE_RECOVERY) | (1u << CHK_TOOLRUN_TERMINAL_IMMUTABLE) |
               (1u << CHK_STARTUP_SNAPSHOT);
  return (m | cs->hold_mask) & ~cs->violate_mask;
}

scn_run_opts cli_crash_run_opts(const scn_case *cs, uint64_t k) {
  scn_run_opts ro = {.crash_after_write = k, .without_faults = 1, .check_mask = crash_check_mask(cs)};
  return ro;
}

#define CRASH_LIST_MAX 5 /* failing boundaries listed by name */

static int crash_points(run_state *st, const scn_scenario *sc, int ci, uint64_t seed) {
  const scn_case *cs = &sc->cases[ci];
  sim_strategy strat = st->o.strategy >= 0 ? (sim_strategy)st->o.strategy : sc->strategy;
  scn_run_opts ro = {.without_faults = 1, .check_mask = crash_check_mask(cs)};
  scn_result res;
  if (!ro.check_mask) {
    printf("SKIP crash-points %s [%s]: the case expects every checked invariant violated\n",
           sc->name, cs->label);
    return 0;
  }
  if (scn_has_sigkill(sc))
    printf("note: crash-points %s [%s]: crash points run without the file's faults, so its sigkill "
           "faults do not apply here\n", sc->name, cs->label);
  if (scn_run_case_ex(sc, ci, seed, strat, &ro, &res)) return -1;
  uint64_t n = res.writes, step = 1, covered = 0, failed = 0;
  scn_result_free(&res);
  if (st->o.crash_max && n > st->o.crash_max) step = (n + st->o.crash_max - 1) / st->o.crash_max;
  ro.stop_when_decided = 1; /* a failing boundary stops at its first violation */
  for (uint64_t k = 1; k <= n && !cli_stop; k += step) {
    ro.crash_after_write = k;
    if (scn_run_case_ex(sc, ci, seed, strat, &ro, &res)) return -1;
    covered++;
    char qf[600], qc[160];
    if (!res.passed && failed++ < CRASH_LIST_MAX)
      printf("  crash after write %llu: %s\n    replay: revenant run %s --case %s --seed 0x%llx "
             "--strategy %s --crash-at %llu\n", (unsigned long long)k, res.failure,
             cli_shell_word(sc->file, qf, sizeof qf), cli_shell_word(cs->label, qc, sizeof qc),
             (unsigned long long)seed, sim_strategy_name(strat), (unsigned long long)k);
    scn_result_free(&res);
  }
  if (failed > CRASH_LIST_MAX)
    printf("  ... and %llu more failing boundar%s\n", (unsigned long long)(failed - CRASH_LIST_MAX),
           failed - CRASH_LIST_MAX == 1 ? "y" : "ies");
  printf("%s crash-points %s [%s] seed=0x%llx: %llu write boundaries, %llu covered, %llu failed\n",
         failed ? "FAIL" : "PASS", sc->name, cs->label, (unsigned long long)seed,
         (unsigned long long)n, (unsigned long long)covered, (unsigned long long)failed);
  if (failed)
    st->failed++;
  else
    st->passed++;
  return 0;
}

static int run_scenario(run_state *st, const scn_scenario *sc) {
  uint64_t lo = st->o.have_seed ? st->o.seed_lo : sc->seed;
  uint64_t hi = st->o.have_seed ? st->o.seed_hi : sc->seed;
  int matched = 0, selected = 0;
  for (int ci = 0; ci < sc->n_cases; ci++)
    selected += !st->o.only_case || !strcmp(st->o.only_case, sc->cases[ci].label);
  st->junit_dup = selected > 1;
  for (int ci = 0; ci < sc->n_cases && !cli_stop; ci++) {
    if (st->o.only_case && strcmp(st->o.only_case, sc->cases[ci].label)) continue;
    matched = 1;
    uint64_t first_hash = 0;
    for (uint64_t seed = lo; !cli_stop; seed++) {
      if (st->o.crash_points ? crash_points(st, sc, ci, seed) : run_one(st, sc, ci, seed)) return -1;
      if (seed == lo) first_hash = st->last_hash;
      if (seed == lo + 1 && !st->o.crash_points && st->last_hash == first_hash)
        printf("note: %s [%s]: seeds 0x%llx and 0x%llx gave the same run (trace hash 0x%016llx): nothing in "
               "this scenario draws from the seed (strategy %s, no random faults or workload), so every seed "
               "is the same run; try --strategy random\n",
               sc->name, sc->cases[ci].label, (unsigned long long)lo, (unsigned long long)seed,
               (unsigned long long)first_hash,
               sim_strategy_name(st->o.strategy >= 0 ? (sim_strategy)st->o.strategy : sc->strategy));
      st->seeds_done++;
      progress(st, seed, 0);
      if (seed == hi) break;
    }
  }
  if (!matched) fprintf(stderr, "revenant: %s: no case named \"%s\"\n", sc->file, st->o.only_case);
  return matched ? 0 : -1;
}

/* A load error, kept for the reports (message is the loader's). */
static void add_error(run_state *st, const char *file, const char *msg) {
  if (st->n_errs == st->cap_errs) {
    size_t nc = st->cap_errs ? st->cap_errs * 2 : 8;
    rpt_load_error *e = realloc(st->errs, nc * sizeof *e);
    if (!e) return;
    st->errs = e;
    st->cap_errs = nc;
  }
  char *f = strdup(file), *m = strdup(msg);
  if (!f || !m) {
    free(f);
    free(m);
    return;
  }
  st->errs[st->n_errs++] = (rpt_load_error){f, m};
}

static int open_outputs(run_state *st) {
  if (st->o.json) {
    if (cli_out_open(&st->json, st->o.json)) return -1;
    rpt_json_begin(&st->js, st->json.f);
  }
  if (st->o.html) {
    if (cli_out_open(&st->html, st->o.html)) return -1;
    rpt_html_begin(&st->hs, st->html.f, st->o.files.n == 1 ? st->o.files.v[0] : NULL, NULL);
  }
  if (st->o.junit) {
    if (cli_out_open(&st->junit, st->o.junit)) return -1;
    if (rpt_junit_begin(&st->ju, st->junit.f)) {
      fprintf(stderr, "revenant: cannot write %s: no temporary file\n", st->o.junit);
      return -1;
    }
  }
  return 0;
}

/* Ends the streamed reports and writes the trace: each file complete (an
** empty run list or an empty trace when nothing ran) or not at all. */
static int close_outputs(run_state *st) {
  int rc = 0;
  if (st->json.f) {
    if (rpt_json_end(&st->js, st->errs, st->n_errs)) {
      fprintf(stderr, "revenant: cannot write %s\n", st->o.json);
      cli_out_abort(&st->json);
      rc = -1;
    } else if (cli_out_commit(&st->json)) {
      rc = -1;
    }
  }
  if (st->html.f) {
    if (rpt_html_end(&st->hs, NULL)) {
      fprintf(stderr, "revenant: cannot write %s\n", st->o.html);
      cli_out_abort(&st->html);
      rc = -1;
    } else if (cli_out_commit(&st->html)) {
      rc = -1;
    }
  }
  if (st->junit.f) {
    if (rpt_junit_end(&st->ju, st->errs, st->n_errs)) {
      fprintf(stderr, "revenant: cannot write %s\n", st->o.junit);
      cli_out_abort(&st->junit);
      rc = -1;
    } else if (cli_out_commit(&st->junit)) {
      rc = -1;
    }
  }
  if (st->o.trace) {
    cli_out t;
    rpt_run empty = {0};
    if (cli_out_open(&t, st->o.trace)) return -1;
    if (rpt_trace_write(t.f, st->last ? &st->last->rr : &empty)) {
      fprintf(stderr, "revenant: cannot write %s\n", st->o.trace);
      cli_out_abort(&t);
      return -1;
    }
    if (cli_out_commit(&t)) rc = -1;
  }
  return rc;
}

/* A file that looks like a repro file gets a hint instead of the loader's
** complaint about unknown fields. */
static int is_repro_file(const char *path) {
  char *text = cli_read_file(path);
  int yes = text && strstr(text, "\"revenant_repro\"") != NULL;
  free(text);
  return yes;
}

static scn_scenario *load_one(run_state *st, const char *path) {
  char err[1024];
  scn_scenario *sc = calloc(1, sizeof *sc); /* large: off the stack */
  if (sc && scn_load(path, sc, err, sizeof err) == 0) {
    if (sc->note[0]) fprintf(stderr, "revenant: %s: note: %s\n", path, sc->note);
    return sc;
  }
  if (!sc) snprintf(err, sizeof err, "%s: out of memory", path);
  else if (is_repro_file(path)) {
    char q[600];
    snprintf(err, sizeof err, "%s: this is a repro file, not a scenario: use revenant replay %s", path,
             cli_shell_word(path, q, sizeof q));
  }
  fprintf(stderr, "%s\n", err);
  add_error(st, path, err);
  free(sc);
  return NULL;
}

int cli_cmd_run(int argc, char **argv) {
  run_state st;
  memset(&st, 0, sizeof st);
  int rc = parse_run_opts(argc, argv, &st.o);
  if (rc) {
    cli_paths_free(&st.o.files);
    return rc;
  }
  int errors = 0;
  st.tty = isatty(2);
  st.t0 = cli_wall_now();
  cli_catch_signals();
  int out_err = open_outputs(&st);
  errors += out_err != 0;
  scn_scenario *keep = NULL; /* the scenario of st.last (its strings are in it) */
  for (size_t i = 0; !out_err && i < st.o.files.n && !cli_stop; i++) {
    scn_scenario *sc = load_one(&st, st.o.files.v[i]);
    if (!sc) {
      errors++;
      continue;
    }
    if (run_scenario(&st, sc)) errors++;
    if (st.last && st.last->sc == sc) {
      if (keep) scn_free(keep);
      free(keep);
      keep = sc;
    } else {
      scn_free(sc);
      free(sc);
    }
  }
  progress(&st, 0, 1);
  if (close_outputs(&st)) errors++;
  if (st.n_recovery && (st.runs > 1 || st.o.verbose)) {
    printf("recovery times (fault to recovery) over %zu runs: ", st.recovery_runs);
    rpt_distribution(stdout, st.recovery_us, st.n_recovery);
  }
  free(st.recovery_us);
  if (cli_stop)
    printf("interrupted after %llu seed%s (%zu runs)\n", (unsigned long long)st.seeds_done,
           st.seeds_done == 1 ? "" : "s", st.runs);
  rpt_text_summary_errors(stdout, st.passed, st.failed, st.n_errs);
  record_free(st.last);
  if (keep) scn_free(keep);
  free(keep);
  for (size_t k = 0; k < st.n_errs; k++) {
    free((char *)st.errs[k].file);
    free((char *)st.errs[k].message);
  }
  free(st.errs);
  cli_paths_free(&st.o.files);
  if (cli_stop) return 128 + cli_stop;
  if (errors || st.write_errors) return 2;
  return st.failed ? 1 : 0;
}

/* ---- check ------------------------------------------------------------ */

static const char check_usage[] =
    "usage: revenant check FILE|DIR...\n"
    "\n"
    "Validates scenario files without running them. Every error is printed\n"
    "as file:line:column: message.\n"
    "\n"
    "exit status: 0 all valid, 2 an invalid file or a usage error\n";

int cli_cmd_check(int argc, char **argv) {
  cli_paths files = {0};
  int bad = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(check_usage, stdout);
      cli_paths_free(&files);
      return 0;
    }
    if (argv[i][0] == '-') {
      cli_paths_free(&files);
      return usage_error("check", "unknown option", argv[i]);
    }
    if (cli_expand(&files, argv[i])) bad++;
  }
  if (files.n == 0 && !bad) return usage_error("check", "no scenario files given", NULL);
  scn_scenario *sc = calloc(1, sizeof *sc);
  int valid = 0; /* bad also counts paths that could not be listed */
  for (size_t i = 0; sc && i < files.n; i++) {
    char err[1024];
    if (scn_load(files.v[i], sc, err, sizeof err)) {
      fprintf(stderr, "%s\n", err);
      bad++;
      continue;
    }
    printf("ok %s (%d case%s, %d fact%s)\n", files.v[i], sc->n_cases, sc->n_cases == 1 ? "" : "s",
           sc->n_facts, sc->n_facts == 1 ? "" : "s");
    valid++;
    scn_free(sc);
  }
  if (!sc) bad++; /* out of memory: nothing was checked */
  free(sc);
  printf("%d valid, %d invalid\n", valid, bad);
  cli_paths_free(&files);
  return bad ? 2 : 0;
}
