/*
** commands.c: the subcommand table.
*/
#include <stdio.h>

#include "cli/cli.h"

static int cmd_todo(int argc, char **argv) {
  (void)argc;
  fprintf(stderr, "revenant %s: not built yet\n", argv[0]);
  return 2;
}

const cli_command cli_commands[] = {
    {"run", cmd_todo, "run scenarios"},
    {"check", cmd_todo, "validate scenarios"},
    {NULL, NULL, NULL},
};
