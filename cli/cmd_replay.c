/*
** cmd_replay.c: `revenant replay FILE`: re-runs a repro file (written by
** `revenant run` for every failure) and checks that it reaches the same
** trace hash.
*/
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "reports/rpt.h"
#include "scenarios/scn.h"

static const char replay_usage[] =
    "usage: revenant replay FILE [--html OUT]\n"
    "\n"
    "Re-runs a repro file (scenario, case, seed, strategy) and compares the\n"
    "trace hash with the one recorded in it.\n"
    "\n"
    "options:\n"
    "  --html OUT   write the replayed run as a self-contained HTML report\n"
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

/* Writes the replayed run as an HTML report to out; 0 or -1. */
static int replay_html(const char *out, const char *path, const scn_scenario *sc, int ci,
                       const scn_result *res) {
  char replay_cmd[1100];
  snprintf(replay_cmd, sizeof replay_cmd, "revenant replay %s", path);
  rpt_run r = {
      .scenario_name = sc->name, .scenario_file = sc->file, .seed = res->seed,
      .strategy = sim_strategy_name(res->strategy), .variant = sc->cases[ci].label,
      .trace_hash = res->trace_hash, .events = res->events, .end_us = res->end_us,
      .passed = res->passed, .expect = sc->cases[ci].expect_text,
      .failure = res->passed ? NULL : res->failure,
      .violations = chk_violation_count(res->checks) ? chk_violation_at(res->checks, 0) : NULL,
      .n_violations = chk_violation_count(res->checks), .trace = &res->s->trace,
      .actor_names = (const char *const *)res->actor_names, .n_actors = res->n_actors,
      .replay = replay_cmd};
  FILE *f = fopen(out, "w");
  int err = !f || rpt_html_write(f, &r, 1, NULL, NULL);
  if (f && fclose(f)) err = 1;
  if (err) fprintf(stderr, "revenant replay: cannot write %s\n", out);
  return err ? -1 : 0;
}

static int replay(const char *path, const cJSON *doc, scn_scenario *sc, const char *html) {
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
  int ci = find_case(sc, variant);
  scn_result res;
  if (ci < 0 || scn_run_case(sc, ci, seed, (sim_strategy)strat, &res)) {
    fprintf(stderr, "revenant replay: %s: cannot run case \"%s\"\n", path, variant ? variant : "");
    scn_free(sc);
    return 2;
  }
  int same = res.trace_hash == want;
  printf("%s %s case=%s seed=0x%llx: hash 0x%016llx %s 0x%016llx; expectation %s\n",
         same ? "REPRODUCED" : "DIVERGED", sc->name, sc->cases[ci].label,
         (unsigned long long)seed, (unsigned long long)res.trace_hash, same ? "==" : "!=",
         (unsigned long long)want, res.passed ? "met" : "failed again");
  if (!res.passed) printf("  %s\n", res.failure);
  int bad_html = html && replay_html(html, path, sc, ci, &res);
  scn_result_free(&res);
  scn_free(sc);
  if (bad_html) return 2;
  return same ? 0 : 1;
}

int cli_cmd_replay(int argc, char **argv) {
  const char *file = NULL, *html = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
      fputs(replay_usage, stdout);
      return 0;
    }
    if (!strcmp(argv[i], "--html") && i + 1 < argc) {
      html = argv[++i];
    } else if (argv[i][0] == '-' || file) {
      fprintf(stderr, "revenant replay: expected one repro FILE and optionally --html OUT\n%s", replay_usage);
      return 2;
    } else {
      file = argv[i];
    }
  }
  if (!file) {
    fprintf(stderr, "revenant replay: expected exactly one repro FILE\n%s", replay_usage);
    return 2;
  }
  char *buf = cli_read_file(file);
  cJSON *doc = buf ? cJSON_Parse(buf) : NULL;
  free(buf);
  if (!doc) {
    fprintf(stderr, "revenant replay: %s: cannot read or parse\n", file);
    return 2;
  }
  scn_scenario *sc = calloc(1, sizeof *sc);
  int rc = sc ? replay(file, doc, sc, html) : 2;
  free(sc);
  cJSON_Delete(doc);
  return rc;
}
