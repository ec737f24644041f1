/*
** main.c: the revenant command line: subcommand dispatch.
*/
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
    "usage: revenant <command> [options]\n"
    "\n"
    "Deterministic simulation and fault injection for durable-agent recovery logic.\n"
    "\n"
    "commands:\n"
    "  run FILE|DIR...     run scenarios and check their expectations\n"
    "  check FILE|DIR...   validate scenario files only\n"
    "  swarm FILE...       explore many seeds with random fault mixes\n"
    "  replay FILE         re-run a repro file to the same trace hash\n"
    "  shrink FILE         reduce a failing scenario to a smaller one\n"
    "\n"
    "options:\n"
    "  -h, --help          show this help (and `revenant COMMAND --help`)\n"
    "  --version           print the version\n"
    "\n"
    "exit status: 0 every expectation met, 1 an expectation failed, 2 usage or scenario error\n"
    "manual: docs/cli.md, docs/scenarios.md\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    fputs(usage, stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("revenant %s\n", REVENANT_VERSION);
    return 0;
  }
  for (const cli_command *c = cli_commands; c->name; c++)
    if (!strcmp(cmd, c->name)) return c->fn(argc - 1, argv + 1);
  if (cmd[0] == '-')
    fprintf(stderr, "revenant: unknown option '%s'\n", cmd);
  else
    fprintf(stderr, "revenant: unknown command '%s'\n", cmd);
  fputs("usage: revenant <command> [options]; try 'revenant --help'\n", stderr);
  return 2;
}
