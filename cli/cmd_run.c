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
    "  --seeds A..B          run every seed from A to B inclusive\n"
    "  --strategy S          fifo | random | pct (default: the file's, else fifo)\n"
    "  --case NAME           run only the case NAME\n"
    "  --check-determinism   run each case twice and fail if the trace hashes differ\n"
    "  --crash-points        count the durable writes of a fault-free run, then re-run\n"
    "                        crashing right after each write k and check the invariants\n"
    "  --crash-points-max N  cover at most N boundaries, evenly spread (default all)\n"
    "  --crash-at K          crash right after the K-th durable write (replays a crash point)\n"
    "  --json FILE           write results as JSON (docs/reports.md)\n"
    "  --junit FILE          write JUnit XML for CI\n"
    "  --trace FILE          write a Chrome Trace Event timeline (Perfetto) of the last run\n"
    "  --html FILE           write one self-contained HTML report of every run (timeline,\n"
    "                        violations and their chains; opens offline in a browser)\n"
    "  --repro-dir DIR       where repro files of failures go (default revenant-out)\n"
    "  -q, --quiet           print only failures and the summary line\n"
    "  -v, --verbose         also print figures and expected violations\n"
    "  -h, --help            show this help\n"
    "\n"
    "exit status: 0 every expectation met, 1 an expectation failed, 2 usage or scenario error\n";

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
  fprintf(stderr, "usage: revenant %s FILE|DIR... [options]; try 'revenant %s --help'\n", cmd, cmd);
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
  o->repro_dir = "revenant-out";
  o->color = isatty(1) && !getenv("NO_COLOR");
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *val = i + 1 < argc ? argv[i + 1] : NULL;
    int takes = !strcmp(a, "--seed") || !strcmp(a, "--seeds") || !strcmp(a, "--strategy") ||
                !strcmp(a, "--json") || !strcmp(a, "--junit") || !strcmp(a, "--trace") ||
                !strcmp(a, "--html") ||
                !strcmp(a, "--repro-dir") || !strcmp(a, "--case") ||
                !strcmp(a, "--crash-points-max") || !strcmp(a, "--crash-at");
    if (takes && !val) return usage_error(argv[0], "option needs a value:", a);
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

static void fill_rpt(run_record *rec, const scn_scenario *sc, int ci, double wall) {
  scn_result *res = &rec->res;
  rpt_run *r = &rec->rr;
  const scn_case *cs = &sc->cases[ci];
  snprintf(rec->variant, sizeof rec->variant, "%s", cs->label);
  snprintf(rec->replay, sizeof rec->replay, "revenant run %s --case %s --seed 0x%llx --strategy %s",
           sc->file, cs->label, (unsigned long long)res->seed, sim_strategy_name(res->strategy));
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
  r->actor_names = (const char *const *)res->actor_names;
  r->n_actors = res->n_actors;
  r->figures = rec->figs;
  r->n_figures = (size_t)res->n_figures;
  r->replay = rec->replay;
  r->wall_s = wall;
  rec->sc = sc;
}

static void write_repro(const run_opts *o, run_record *rec) {
  char path[1024];
  mkdir(o->repro_dir, 0777);
  snprintf(path, sizeof path, "%s/repro-%s-%s-0x%llx.json", o->repro_dir, rec->sc->name,
           rec->variant, (unsigned long long)rec->res.seed);
  FILE *f = fopen(path, "w");
  if (!f || rpt_repro_write(f, &rec->rr, rec->sc->source)) {
    fprintf(stderr, "revenant: cannot write repro file %s\n", path);
  } else {
    fprintf(stdout, "  repro: %s\n", path);
  }
  if (f) fclose(f);
}

/* ---- the run loop ----------------------------------------------------- */

typedef struct run_state {
  run_opts o;
  run_record *recs;
  size_t n_recs, cap_recs;
  size_t passed, failed;
  int keep;
  int64_t *recovery_us;      /* recovery times of every run, for the distribution */
  size_t n_recovery, cap_recovery;
  size_t runs;
} run_state;

/* Adds the recovery times of one run (fault to recovery) to st. */
static void collect_recovery(run_state *st, const sim_trace *t) {
  int64_t v[256];
  size_t n = 0;
  rpt_recovery_times(t, v, &n, 256);
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

static int determinism_check(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy st,
                             scn_result *first) {
  scn_result again;
  if (scn_run_case(sc, ci, seed, st, &again)) return -1;
  if (again.trace_hash != first->trace_hash) {
    snprintf(first->failure, sizeof first->failure,
             "not deterministic: trace hash 0x%016llx then 0x%016llx for the same seed",
             (unsigned long long)first->trace_hash, (unsigned long long)again.trace_hash);
    first->passed = 0;
  }
  scn_result_free(&again);
  return 0;
}

static run_record *next_record(run_state *st) {
  if (st->n_recs == st->cap_recs) {
    size_t nc = st->cap_recs ? st->cap_recs * 2 : 16;
    run_record *nr = realloc(st->recs, nc * sizeof *nr);
    if (!nr) return NULL;
    st->recs = nr;
    st->cap_recs = nc;
  }
  return &st->recs[st->n_recs++];
}

static int run_one(run_state *st, const scn_scenario *sc, int ci, uint64_t seed) {
  sim_strategy strat = st->o.strategy >= 0 ? (sim_strategy)st->o.strategy : sc->strategy;
  run_record *rec = next_record(st);
  if (!rec) return -1;
  double t0 = cli_wall_now();
  scn_run_opts ro = {.crash_after_write = st->o.crash_at};
  if (scn_run_case_ex(sc, ci, seed, strat, &ro, &rec->res)) {
    fprintf(stderr, "revenant: %s: %s\n", sc->file, rec->res.failure);
    scn_result_free(&rec->res);
    st->n_recs--;
    return -1;
  }
  if (st->o.determinism && determinism_check(sc, ci, seed, strat, &rec->res)) return -1;
  fill_rpt(rec, sc, ci, cli_wall_now() - t0);
  collect_recovery(st, &rec->res.s->trace);
  st->runs++;
  if (rec->res.passed)
    st->passed++;
  else
    st->failed++;
  if (!st->o.quiet || !rec->res.passed) rpt_text_run(stdout, &rec->rr, st->o.verbose, st->o.color);
  if (!rec->res.passed) write_repro(&st->o, rec);
  return 0;
}

/* ---- crash-point coverage --------------------------------------------- */

static uint32_t crash_check_mask(const scn_case *cs) {
  uint32_t m = (1u << CHK_RECOVERY_FINISHES) | (1u << CHK_STASH_DURABLE) |
               (1u << CHK_NO_DOUBLE_RECOVERY) | (1u << CHK_TOOLRUN_TERMINAL_IMMUTABLE) |
               (1u << CHK_STARTUP_SNAPSHOT);
  return (m | cs->hold_mask) & ~cs->violate_mask;
}

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
  if (scn_run_case_ex(sc, ci, seed, strat, &ro, &res)) return -1;
  uint64_t n = res.writes, step = 1, covered = 0, failed = 0;
  scn_result_free(&res);
  if (st->o.crash_max && n > st->o.crash_max) step = (n + st->o.crash_max - 1) / st->o.crash_max;
  ro.stop_when_decided = 1; /* a failing boundary stops at its first violation */
  for (uint64_t k = 1; k <= n; k += step) {
    ro.crash_after_write = k;
    if (scn_run_case_ex(sc, ci, seed, strat, &ro, &res)) return -1;
    covered++;
    if (!res.passed && failed++ < 5)
      printf("  crash after write %llu: %s\n    replay: revenant run %s --case %s --seed 0x%llx "
             "--crash-at %llu\n", (unsigned long long)k, res.failure, sc->file, cs->label,
             (unsigned long long)seed, (unsigned long long)k);
    scn_result_free(&res);
  }
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
  int matched = 0;
  for (int ci = 0; ci < sc->n_cases; ci++) {
    if (st->o.only_case && strcmp(st->o.only_case, sc->cases[ci].label)) continue;
    matched = 1;
    for (uint64_t seed = lo;; seed++) {
      if (st->o.crash_points ? crash_points(st, sc, ci, seed) : run_one(st, sc, ci, seed)) return -1;
      if (seed == hi) break;
    }
  }
  if (!matched) fprintf(stderr, "revenant: %s: no case named \"%s\"\n", sc->file, st->o.only_case);
  return matched ? 0 : -1;
}

static int write_outputs(run_state *st) {
  rpt_run *runs = calloc(st->n_recs ? st->n_recs : 1, sizeof *runs);
  int rc = 0;
  if (!runs) return -1;
  for (size_t i = 0; i < st->n_recs; i++) {
    /* rr points into its record, which next_record's realloc may have moved */
    runs[i] = st->recs[i].rr;
    runs[i].variant = st->recs[i].variant;
    runs[i].replay = st->recs[i].replay;
    runs[i].figures = st->recs[i].figs;
  }
  const char *paths[4] = {st->o.json, st->o.junit, st->o.trace, st->o.html};
  for (int k = 0; k < 4; k++) {
    if (!paths[k]) continue;
    FILE *f = fopen(paths[k], "w");
    int err = !f;
    if (f && k == 0) err = rpt_json_write(f, runs, st->n_recs);
    if (f && k == 1) err = rpt_junit_write(f, runs, st->n_recs);
    if (f && k == 2 && st->n_recs) err = rpt_trace_write(f, &runs[st->n_recs - 1]);
    if (f && k == 3) err = rpt_html_write(f, runs, st->n_recs, NULL, NULL);
    if (f && fclose(f)) err = 1;
    if (err) {
      fprintf(stderr, "revenant: cannot write %s\n", paths[k]);
      rc = -1;
    }
  }
  free(runs);
  return rc;
}

int cli_cmd_run(int argc, char **argv) {
  run_state st;
  memset(&st, 0, sizeof st);
  int rc = parse_run_opts(argc, argv, &st.o);
  if (rc) {
    cli_paths_free(&st.o.files);
    return rc;
  }
  st.keep = st.o.json || st.o.junit || st.o.trace || st.o.html;
  int errors = 0;
  scn_scenario **loaded = calloc(st.o.files.n, sizeof *loaded);
  for (size_t i = 0; loaded && i < st.o.files.n; i++) {
    char err[1024];
    scn_scenario *sc = loaded[i] = calloc(1, sizeof *sc); /* large: off the stack */
    if (!sc || scn_load(st.o.files.v[i], sc, err, sizeof err)) {
      fprintf(stderr, "%s\n", sc ? err : "revenant: out of memory");
      free(sc);
      loaded[i] = NULL;
      errors++;
      continue;
    }
    if (run_scenario(&st, sc)) errors++;
    if (!st.keep) { /* results point into sc: release both now */
      for (size_t k = 0; k < st.n_recs; k++) scn_result_free(&st.recs[k].res);
      st.n_recs = 0;
      scn_free(sc);
      free(sc);
      loaded[i] = NULL;
    }
  }
  if (st.keep && write_outputs(&st)) errors++;
  if (st.n_recovery && (st.runs > 1 || st.o.verbose)) {
    printf("recovery times (fault to recovery) over %zu runs: ", st.runs);
    rpt_distribution(stdout, st.recovery_us, st.n_recovery);
  }
  free(st.recovery_us);
  rpt_text_summary(stdout, st.passed, st.failed);
  for (size_t k = 0; k < st.n_recs; k++) scn_result_free(&st.recs[k].res);
  free(st.recs);
  for (size_t i = 0; loaded && i < st.o.files.n; i++) {
    if (loaded[i]) scn_free(loaded[i]);
    free(loaded[i]);
  }
  free(loaded);
  cli_paths_free(&st.o.files);
  if (errors) return 2;
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
  for (size_t i = 0; sc && i < files.n; i++) {
    char err[1024];
    if (scn_load(files.v[i], sc, err, sizeof err)) {
      fprintf(stderr, "%s\n", err);
      bad++;
      continue;
    }
    printf("ok %s (%d case%s, %d fact%s)\n", files.v[i], sc->n_cases, sc->n_cases == 1 ? "" : "s",
           sc->n_facts, sc->n_facts == 1 ? "" : "s");
    scn_free(sc);
  }
  free(sc);
  printf("%zu valid, %d invalid\n", files.n - (size_t)(bad > (int)files.n ? (int)files.n : bad), bad);
  cli_paths_free(&files);
  return bad ? 2 : 0;
}
