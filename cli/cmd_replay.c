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
    "usage: revenant replay FILE\n"
    "\n"
    "Re-runs a repro file (scenario, case, seed, strategy) and compares the\n"
    "trace hash with the one recorded in it.\n"
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

static int replay(const char *path, const cJSON *doc, scn_scenario *sc) {
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
  scn_result_free(&res);
  scn_free(sc);
  return same ? 0 : 1;
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

int cli_cmd_replay(int argc, char **argv) {
  if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    fputs(replay_usage, stdout);
    return 0;
  }
  if (argc != 2 || argv[1][0] == '-') {
    fprintf(stderr, "revenant replay: expected exactly one repro FILE\n%s", replay_usage);
    return 2;
  }
  cJSON *doc = read_repro(argv[1]);
  if (!doc) return 2;
  scn_scenario *sc = calloc(1, sizeof *sc);
  int rc = sc ? replay(argv[1], doc, sc) : 2;
  free(sc);
  cJSON_Delete(doc);
  return rc;
}
