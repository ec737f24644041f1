/*
** main.c: the revenant command line: subcommand dispatch.
*/
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "cli/cli.h"
#include "runtime/rt_lua.h"

/* The usage text: the command list comes from the command table, so it
** can never leave a command out. */
static void usage(FILE *f) {
  fputs("usage: revenant <command> [options]\n\n"
        "Deterministic simulation and fault injection for durable-agent recovery logic.\n\n"
        "commands:\n", f);
  for (const cli_command *c = cli_commands; c->name; c++)
    fprintf(f, "  %-7s %-13s %s\n", c->name, c->args, c->summary);
  fputs("\noptions:\n"
        "  -h, --help   show this help (and `revenant COMMAND --help`)\n"
        "  --version    print the version (and of Lua and SQLite linked)\n\n"
        "exit status: 0 every expectation met, 1 an expectation failed, 2 usage or scenario error\n"
        "manual: docs/cli.md, docs/scenarios.md\n", f);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "--version")) {
    printf("revenant %s (%s, SQLite %s)\n", REVENANT_VERSION, rt_lua_release(),
           sqlite3_libversion());
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
