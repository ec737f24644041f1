/*
** cmd_replay.c: `revenant replay FILE`: re-runs a repro file (written by
** `revenant run` for every failure) and checks that it reaches the same
** trace hash.
*/
#include <cJSON.h>
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "reports/rpt.h"
#include "scenarios/scn.h"

static const char replay_usage[] =
    "usage: revenant replay FILE [options]\n"
    "\n"
    "Re-runs a repro file (scenario, case, seed, strategy) and compares the\n"
    "trace hash with the one recorded in it.\n"
    "\n"
    "options:\n"
    "  -v, --verbose     print the run's report (violations, facts, figures) as run -v does\n"
    "  --json FILE       write the run's results JSON (docs/reports.md)\n"
    "  --trace FILE      write the run's Chrome Trace Event timeline (Perfetto)\n"
    "  --html FILE       write the run as a self-contained HTML report\n"
    "  -h, --help        show this help\n"
    "\n"
    "exit status: 0 same hash, 1 the hash differs (the build changed behaviour),\n"
    "2 usage error or unreadable repro file\n";

static const char *str_field(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int find_case(const scn_scenario *sc, const char *label) {
  for (int i = 0; i < sc->n_cases; i++)
    if (label && !strcmp(sc->cases[i].label, label)) return i;
  return sc->n_cases == 1 ? 0 : -1;
}

typedef struct replay_opts {
  const char *file, *json, *trace, *html;
  int verbose;
} replay_opts;

/* Writes the outputs -v, --json, --trace and --html ask for. 0, or -1 on a
** write error. */
static int replay_outputs(const replay_opts *o, const scn_scenario *sc, int ci, scn_result *res) {
  char variant[80], line[900];
  const char *names[SCN_MAX_ACTORS];
  for (uint32_t a = 0; a < sc->n_actors; a++) names[a] = sc->actors[a].id;
  snprintf(variant, sizeof variant, "%s", sc->cases[ci].label);
  char q[600];
  snprintf(line, sizeof line, "revenant replay %s", cli_shell_word(o->file, q, sizeof q));
  rpt_run r = {.scenario_name = sc->name, .scenario_file = sc->file, .seed = res->seed,
               .strategy = sim_strategy_name(res->strategy), .variant = variant,
               .trace_hash = res->trace_hash, .events = res->events, .end_us = res->end_us,
               .passed = res->passed, .expect = sc->cases[ci].expect_text,
               .failure = res->passed ? NULL : res->failure, .trace = &res->s->trace,
               .actor_names = names, .n_actors = sc->n_actors, .facts = res->facts,
               .replay = line};
  r.n_violations = chk_violation_count(res->checks);
  r.violations = r.n_violations ? chk_violation_at(res->checks, 0) : NULL;
  if (o->verbose) rpt_text_run(stdout, &r, 1, 0);
  const char *paths[3] = {o->json, o->trace, o->html};
  for (int k = 0; k < 3; k++) {
    if (!paths[k]) continue;
    cli_out f; /* atomic: a temporary file renamed into place */
    if (cli_out_open(&f, paths[k])) return -1;
    if (k == 0   ? rpt_json_write(f.f, &r, 1)
        : k == 1 ? rpt_trace_write(f.f, &r)
                 : rpt_html_write(f.f, &r, 1, NULL, NULL)) {
      fprintf(stderr, "revenant replay: cannot write %s\n", paths[k]);
      cli_out_abort(&f);
      return -1;
    }
    if (cli_out_commit(&f)) return -1;
  }
  return 0;
}

static int replay(const replay_opts *o, const cJSON *doc, scn_scenario *sc) {
  const char *path = o->file;
  const char *seed_s = str_field(doc, "seed"), *strat_s = str_field(doc, "strategy");
  const char *hash_s = str_field(doc, "trace_hash"), *variant = str_field(doc, "variant");
  uint64_t seed, want;
  int strat = strat_s ? sim_strategy_parse(strat_s) : -1;
  char *text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(doc, "scenario"));
  char err[1024];
  if (!seed_s || cli_parse_seed(seed_s, &seed) || !hash_s || cli_parse_seed(hash_s, &want) ||
      strat < 0 || !text) {
    fprintf(stderr, "revenant replay: %s: not a repro file (needs scenario, seed, strategy, trace_hash)\n", path);
    free(text);
    return 2;
  }
  int rc = scn_load_text(path, text, strlen(text), sc, err, sizeof err);
  free(text);
  if (rc) {
    fprintf(stderr, "%s\n", err);
    return 2;
  }
  if (sc->note[0]) printf("note: %s\n", sc->note);
  int ci = find_case(sc, variant);
  scn_result res;
  const cJSON *cat = cJSON_GetObjectItemCaseSensitive(doc, "crash_at"); /* a run --crash-at K repro */
  uint64_t crash_at = cJSON_IsNumber(cat) && cat->valuedouble >= 1 && cat->valuedouble < 1e15 ? (uint64_t)cat->valuedouble : 0;
  if (cat && (!crash_at || (double)crash_at != cat->valuedouble)) {
    fprintf(stderr, "revenant replay: %s: \"crash_at\" must be a write boundary from 1\n", path);
    scn_free(sc);
    return 2;
  }
  scn_run_opts ro = ci >= 0 && crash_at ? cli_crash_run_opts(&sc->cases[ci], crash_at) : (scn_run_opts){0};
  if (ci < 0 || scn_run_case_ex(sc, ci, seed, (sim_strategy)strat, &ro, &res)) {
    fprintf(stderr, "revenant replay: %s: cannot run case \"%s\"\n", path, variant ? variant : "");
    scn_free(sc);
    return 2;
  }
  int same = res.trace_hash == want;
  char cp[40] = "";
  if (crash_at) snprintf(cp, sizeof cp, " crash-at=%llu", (unsigned long long)crash_at);
  printf("%s %s case=%s seed=0x%llx%s: hash 0x%016llx %s 0x%016llx; expectation %s\n",
         same ? "REPRODUCED" : "DIVERGED", sc->name, sc->cases[ci].label,
         (unsigned long long)seed, cp, (unsigned long long)res.trace_hash, same ? "==" : "!=",
         (unsigned long long)want, res.passed ? "met" : "failed again");
  if (!res.passed && !o->verbose) printf("  %s\n", res.failure);
  int out = replay_outputs(o, sc, ci, &res);
  scn_result_free(&res);
  scn_free(sc);
  return out ? 2 : same ? 0 : 1;
}

/* The repro document of path, or NULL after saying why not (missing,
** a directory, not JSON, not a repro file of a version this build reads). */
static cJSON *read_repro(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "revenant replay: %s: %s\n", path, strerror(errno));
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) {
    fprintf(stderr, "revenant replay: %s: is a directory; give one repro file\n", path);
    return NULL;
  }
  errno = 0;
  char *buf = cli_read_file(path);
  if (!buf) {
    fprintf(stderr, "revenant replay: %s: cannot read: %s\n", path, errno ? strerror(errno) : "read error");
    return NULL;
  }
  cJSON *doc = cJSON_Parse(buf);
  free(buf);
  if (!doc) {
    fprintf(stderr, "revenant replay: %s: not valid JSON\n", path);
    return NULL;
  }
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "revenant_repro");
  if (!cJSON_IsNumber(v) || v->valuedouble != 1) {
    if (cJSON_IsNumber(v))
      fprintf(stderr, "revenant replay: %s: repro format %g is not one this build reads (it reads 1)\n", path,
              v->valuedouble);
    else
      fprintf(stderr, "revenant replay: %s: not a repro file (no \"revenant_repro\": 1)%s\n", path,
              cJSON_GetObjectItemCaseSensitive(doc, "actors") ? "; for a scenario use revenant run" : "");
    cJSON_Delete(doc);
    return NULL;
  }
  return doc;
}

static const char replay_hint[] = "usage: revenant replay FILE [options]; try 'revenant replay --help'\n";

static int replay_args(int argc, char **argv, replay_opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      fputs(replay_usage, stdout);
      return 0;
    }
    if ((!strcmp(a, "--json") || !strcmp(a, "--trace") || !strcmp(a, "--html")) && (!val || cli_is_flag(val))) {
      fprintf(stderr, "revenant replay: option needs a value: %s\n%s", a, replay_hint);
      return 2;
    }
    if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) o->verbose = 1;
    else if (!strcmp(a, "--json")) o->json = argv[++i];
    else if (!strcmp(a, "--trace")) o->trace = argv[++i];
    else if (!strcmp(a, "--html")) o->html = argv[++i];
    else if (a[0] != '-' && !o->file) o->file = a;
    else {
      fprintf(stderr, "revenant replay: %s: %s\n%s", a[0] == '-' ? "unknown option" :
              "expected exactly one repro FILE, got another", a, replay_hint);
      return 2;
    }
  }
  if (!o->file) {
    fprintf(stderr, "revenant replay: expected exactly one repro FILE\n%s", replay_hint);
    return 2;
  }
  char *in[1] = {(char *)o->file};
  if (cli_output_not_input("replay", "--json", o->json, in, 1) ||
      cli_output_not_input("replay", "--trace", o->trace, in, 1) ||
      cli_output_not_input("replay", "--html", o->html, in, 1))
    return 2;
  return -1;
}

int cli_cmd_replay(int argc, char **argv) {
  replay_opts o = {0};
  int rc = replay_args(argc, argv, &o);
  if (rc >= 0) return rc;
  cJSON *doc = read_repro(o.file);
  if (!doc) return 2;
  scn_scenario *sc = calloc(1, sizeof *sc);
  rc = sc ? replay(&o, doc, sc) : 2;
  free(sc);
  cJSON_Delete(doc);
  return rc;
}
