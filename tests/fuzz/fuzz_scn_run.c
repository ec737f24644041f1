/*
** fuzz_scn_run.c: libFuzzer entry point for load + run: any scenario the
** loader accepts must run without crashing, hanging or leaking (runs are
** capped at 1 h of virtual time; sigkill scenarios, which fork, are
** skipped).
*/
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "scenarios/scn.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static scn_scenario sc;
  char err[512];
  if (scn_load_text("fuzz.json", (const char *)data, size, &sc, err, sizeof err) != 0) { scn_free(&sc); return 0; }
  if (sc.duration_us > 3600LL * 1000000) sc.duration_us = 3600LL * 1000000;
  for (int ci = 0; ci < sc.n_cases && ci < 2; ci++) {
    if (sc.cases[ci].cfg.storage_files) continue;
    int sk = 0;
    for (int i = 0; i < sc.n_faults; i++) sk |= sc.faults[i].kind == FLT_SIGKILL;
    if (sk) break;
    scn_result r;
    if (scn_run_case(&sc, ci, sc.seed, SIM_RANDOM, &r) == 0) scn_result_free(&r); else scn_result_free(&r);
  }
  scn_free(&sc);
  return 0;
}
