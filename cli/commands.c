/*
** commands.c: the subcommand table.
*/
#include <stdio.h>

#include "cli/cli.h"

static int cmd_later(int argc, char **argv) {
  (void)argc;
  fprintf(stderr, "revenant %s: not available in this version yet (see docs/cli.md)\n", argv[0]);
  return 2;
}

const cli_command cli_commands[] = {
    {"run", cli_cmd_run, "run scenarios and check their expectations"},
    {"check", cli_cmd_check, "validate scenario files only"},
    {"replay", cli_cmd_replay, "re-run a repro file to the same trace hash"},
    {"swarm", cmd_later, "explore many seeds (not yet)"},
    {"shrink", cmd_later, "reduce a failing scenario (not yet)"},
    {NULL, NULL, NULL},
};
