/*
** cmd_shrink.c: `revenant shrink FILE`: reduces a failing scenario (or the
** scenario of a repro file) to a smaller one in which the same invariant
** still fails with the same seed (scn_shrink), writes it as a readable
** scenario file (scn_write), loads that file back and re-runs it to verify.
*/
#include <ctype.h>
#include <cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "scenarios/scn.h"
#include "scenarios/scn_json.h"

static const char shrink_usage[] =
    "usage: revenant shrink FILE [options]\n"
    "\n"
    "Delta debugging: drops faults, workload items, stale rows and actors,\n"
    "shortens the duration and the repeats, moves fault times, while the same\n"
    "invariant still fails with the same seed. Writes a readable scenario file\n"
    "(for scenarios/regression/). FILE is a scenario or a repro file.\n"
    "\n"
    "options:\n"
    "  --case NAME        the case to shrink (default: the repro's, the only one,\n"
    "                     or the first case whose expectation fails)\n"
    "  --seed N           the seed (default: the repro's or the file's)\n"
    "  --strategy S       fifo | random | pct (default: the repro's or the file's)\n"
    "  --invariant NAME   the invariant to keep violated, built-in or one the file's\n"
    "                     Lua scripts register (default: the first unexpected\n"
    "                     violation, else the first expected one)\n"
    "  -o FILE            where to write the result (default revenant-out/NAME-shrunk.json)\n"
    "  --time D           wall-time budget (default 60s); the best so far is kept\n"
    "  -h, --help         show this help\n"
    "\n"
    "exit status: 0 shrunk and verified, 1 the written file did not reproduce,\n"
    "2 usage error, unreadable file, or nothing to shrink\n";

typedef struct shrink_opts {
  const char *file, *only_case, *out;
  const char *invariant_name;   /* --invariant: a Lua one is known only once FILE loads */
  int have_seed, strategy, invariant;
  uint64_t seed;
  int64_t time_us;
} shrink_opts;

typedef struct shrink_in {
  scn_scenario sc;              /* large: the struct lives on the heap */
  int ci;
  uint64_t seed;
  sim_strategy st;
  const char *variant;          /* the repro's case, if any */
  char variant_buf[64];
} shrink_in;

static int usage_error(const char *msg, const char *arg) {
  fprintf(stderr, "revenant shrink: %s%s%s\n", msg, arg ? " " : "", arg ? arg : "");
  fprintf(stderr, "usage: revenant shrink FILE [options]; try 'revenant shrink --help'\n");
  return 2;
}

static int shrink_opt(shrink_opts *o, const char *a, const char *v) {
  if (!strcmp(a, "--case")) o->only_case = v;
  else if (!strcmp(a, "-o")) o->out = v;
  else if (!strcmp(a, "--seed")) {
    if (cli_parse_seed(v, &o->seed)) return usage_error("bad seed:", v);
    o->have_seed = 1;
  } else if (!strcmp(a, "--strategy")) {
    if ((o->strategy = sim_strategy_parse(v)) < 0) return usage_error("unknown strategy (fifo, random, pct):", v);
  } else if (!strcmp(a, "--invariant")) {
    o->invariant_name = v;
  } else if (scn_parse_duration(v, &o->time_us) || o->time_us <= 0) {
    return usage_error("expected a duration such as 60s:", v);
  }
  return 0;
}

static int parse_shrink_opts(int argc, char **argv, shrink_opts *o) {
  static const char *const takes[] = {"--case", "-o", "--seed", "--strategy", "--invariant", "--time", NULL};
  memset(o, 0, sizeof *o);
  o->strategy = o->invariant = -1;
  o->time_us = 60000000;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = 0;
    while (takes[k] && strcmp(takes[k], a)) k++;
    if (takes[k]) {
      if (i + 1 >= argc || cli_is_flag(argv[i + 1])) return usage_error("option needs a value:", a);
      if (shrink_opt(o, a, argv[++i])) return 2;
    } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(shrink_usage, stdout);
      exit(0);
    } else if (a[0] == '-') {
      return usage_error("unknown option", a);
    } else if (o->file) {
      return usage_error("expected one FILE, got another:", a);
    } else {
      o->file = a;
    }
  }
  if (!o->file) return usage_error("no FILE given", NULL);
  char *in[1] = {(char *)o->file};
  return cli_output_not_input("shrink", "-o", o->out, in, 1);
}

/* A repro file: its scenario, seed, strategy and case. 1 if doc is one. */
static int load_repro(const char *path, const cJSON *doc, shrink_in *in, char *err, size_t cap) {
  const cJSON *scn = cJSON_GetObjectItemCaseSensitive(doc, "scenario");
  const cJSON *seed = cJSON_GetObjectItemCaseSensitive(doc, "seed");
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(doc, "strategy");
  const cJSON *var = cJSON_GetObjectItemCaseSensitive(doc, "variant");
  if (!cJSON_IsObject(scn) || !cJSON_IsString(seed) || cli_parse_seed(seed->valuestring, &in->seed)) {
    snprintf(err, cap, "%s: a repro file needs \"scenario\" and \"seed\"", path);
    return -1;
  }
  if (cJSON_GetObjectItemCaseSensitive(doc, "crash_at")) { /* its failure needs the crash */
    snprintf(err, cap, "%s: a repro of run --crash-at (\"crash_at\"): shrink does not replay crash "
             "points; replay it with revenant replay", path);
    return -1;
  }
  char *text = cJSON_PrintUnformatted(scn);
  int rc = text ? scn_load_text(path, text, strlen(text), &in->sc, err, cap) : -1;
  free(text);
  if (rc) return -1;
  int s = cJSON_IsString(st) ? sim_strategy_parse(st->valuestring) : -1;
  in->st = s >= 0 ? (sim_strategy)s : in->sc.strategy;
  if (cJSON_IsString(var)) {
    snprintf(in->variant_buf, sizeof in->variant_buf, "%s", var->valuestring);
    in->variant = in->variant_buf;
  }
  return 0;
}

/* Loads FILE (scenario or repro) into in; 0, or 2 after a message. */
static int load_input(const shrink_opts *o, shrink_in *in) {
  char err[1024];
  char *text = cli_read_file(o->file);
  cJSON *doc = text ? cJSON_Parse(text) : NULL;
  int rc;
  free(text);
  if (doc && cJSON_GetObjectItemCaseSensitive(doc, "revenant_repro")) {
    rc = load_repro(o->file, doc, in, err, sizeof err);
  } else {
    rc = scn_load(o->file, &in->sc, err, sizeof err);
    in->seed = in->sc.seed;
    in->st = in->sc.strategy;
  }
  cJSON_Delete(doc);
  if (!rc && in->sc.note[0]) fprintf(stderr, "revenant shrink: note: %s\n", in->sc.note);
  if (rc) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  if (o->have_seed) in->seed = o->seed;
  if (o->strategy >= 0) in->st = (sim_strategy)o->strategy;
  return 0;
}

/* The case: named, the repro's, the only one, or the first that fails. */
static int pick_case(const shrink_opts *o, shrink_in *in) {
  const char *want = o->only_case ? o->only_case : in->variant;
  for (int i = 0; want && i < in->sc.n_cases; i++)
    if (!strcmp(in->sc.cases[i].label, want)) return in->ci = i, 0;
  if (want && (o->only_case || in->sc.n_cases > 1)) {
    fprintf(stderr, "revenant shrink: %s: no case named \"%s\"\n", o->file, want);
    return 2;
  }
  in->ci = 0;
  for (int i = 0; in->sc.n_cases > 1 && i < in->sc.n_cases; i++) {
    scn_result r;
    int failed = scn_run_case(&in->sc, i, in->seed, in->st, &r) == 0 && !r.passed;
    scn_result_free(&r);
    if (failed) return in->ci = i, 0;
  }
  if (in->sc.n_cases > 1) {
    fprintf(stderr, "revenant shrink: %s: no case fails with seed 0x%" PRIx64 "; choose one with --case\n",
            o->file, in->seed);
    return 2;
  }
  return 0;
}

static int out_of_time(void *ctx) { return cli_wall_now() > *(const double *)ctx; }

/* Writes out to path, loads it back and checks that inv is violated. */
static int write_verify(const char *path, const scn_scenario *out, int inv) {
  cli_out f;
  if (cli_out_open(&f, path)) return 2;
  if (scn_write(f.f, out) != 0) {
    fprintf(stderr, "revenant shrink: cannot write %s\n", path);
    cli_out_abort(&f);
    return 2;
  }
  if (cli_out_commit(&f)) return 2;
  printf("wrote %s\n", path);
  scn_scenario *back = calloc(1, sizeof *back);
  char err[1024];
  scn_result r;
  if (!back || scn_load(path, back, err, sizeof err)) {
    fprintf(stderr, "revenant shrink: the written file does not load: %s\n", back ? err : "out of memory");
    free(back);
    return 1;
  }
  int ok = scn_run_case(back, 0, back->seed, back->strategy, &r) == 0;
  ok = ok && (scn_seen_mask(back, &r) & scn_inv_bit(back, inv));
  printf("  verified: %s %s %s (hash 0x%016" PRIx64 ", expectation %s)\n", path,
         ok ? "violates" : "does NOT violate", chk_invariant_name((chk_invariant)inv), r.trace_hash,
         r.passed ? "met" : "failed");
  scn_result_free(&r);
  scn_free(back);
  free(back);
  return ok ? 0 : 1;
}

/* --invariant names a built-in invariant or one FILE's scripts registered
** (interned when FILE loaded): 0, or 2 after a message with a "did you
** mean". Checked before the case is picked, whose message would mislead. */
static int check_invariant_name(const shrink_opts *o) {
  const char *names[257];
  int n = 0;
  if (!o->invariant_name || chk_invariant_parse(o->invariant_name) >= 0) return 0;
  for (int i = 0; i < chk_invariant_count() && n < 256; i++) names[n++] = chk_invariant_name((chk_invariant)i);
  names[n] = NULL;
  const char *best = scn_suggest(o->invariant_name, names);
  fprintf(stderr, "revenant shrink: unknown invariant: %s (neither built-in nor registered by %s's "
          "invariants)%s%s%s\n", o->invariant_name, o->file, best ? "; did you mean " : "",
          best ? best : "", best ? "?" : "");
  return 2;
}

static int shrink_main(const shrink_opts *o, shrink_in *in, scn_scenario *out) {
  char err[1024], path[1024], b1[400], b2[400];
  scn_shrink_stats st;
  double t0 = cli_wall_now(), deadline = t0 + (double)o->time_us / 1e6;
  int inv = o->invariant_name ? chk_invariant_parse(o->invariant_name) : -1;
  scn_shrink_opts so = {inv, out_of_time, &deadline};
  printf("shrink %s [%s] seed=0x%" PRIx64 " %s\n", in->sc.name, in->sc.cases[in->ci].label, in->seed,
         sim_strategy_name(in->st));
  if (scn_shrink(&in->sc, in->ci, in->seed, in->st, &so, out, &st, err, sizeof err)) {
    fprintf(stderr, "revenant shrink: %s: %s\n", o->file, err);
    return 2;
  }
  if (o->out) {
    snprintf(path, sizeof path, "%s", o->out);
  } else {
    char name[128];
    size_t k = 0;
    for (const char *c = out->name; *c && k + 1 < sizeof name; c++) /* never a raw name in a path */
      name[k++] = (isalnum((unsigned char)*c) || *c == '-' || *c == '_') ? *c : '_';
    name[k] = 0;
    mkdir(CLI_OUT_DIR, 0777);
    snprintf(path, sizeof path, CLI_OUT_DIR "/%s.json", k ? name : "shrunk");
  }
  printf("  kept: %s violated, %d runs, %d reductions kept, %.2fs%s\n",
         chk_invariant_name((chk_invariant)st.invariant), st.runs, st.accepted, cli_wall_now() - t0,
         st.stopped ? " (time budget spent: the best so far is written)" : "");
  printf("  before: %s\n  after:  %s\n", scn_size_text(&st.before, b1, sizeof b1),
         scn_size_text(&st.after, b2, sizeof b2));
  return write_verify(path, out, st.invariant);
}

int cli_cmd_shrink(int argc, char **argv) {
  shrink_opts o;
  int rc = parse_shrink_opts(argc, argv, &o);
  if (rc) return rc;
  shrink_in *in = calloc(1, sizeof *in);
  scn_scenario *out = calloc(1, sizeof *out);
  if (!in || !out) rc = 2;
  if (!rc) rc = load_input(&o, in);
  if (!rc) rc = check_invariant_name(&o);
  if (!rc) rc = pick_case(&o, in);
  if (!rc) rc = shrink_main(&o, in, out);
  if (in) scn_free(&in->sc);
  if (out) scn_free(out);
  free(in);
  free(out);
  return rc;
}
