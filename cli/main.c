/*
** main.c: the revenant command line: subcommand dispatch.
*/
#include <errno.h>
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

/* A command's status, or 2 when its standard output could not be written
** (`revenant check > /dev/full` must not exit 0). */
static int stdout_checked(int rc) {
  errno = 0;
  int bad = fflush(stdout) != 0 || ferror(stdout);
  if (!bad) return rc;
  fprintf(stderr, "revenant: cannot write standard output: %s\n", errno ? strerror(errno) : "write error");
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "help") && argc > 2) { /* `revenant help run`: run's own help */
    char *sub[] = {argv[2], "--help", NULL};
    for (const cli_command *c = cli_commands; c->name; c++)
      if (!strcmp(argv[2], c->name)) return stdout_checked(c->fn(2, sub));
    fprintf(stderr, "revenant: unknown command '%s'\n", argv[2]);
    fputs("usage: revenant <command> [options]; try 'revenant --help'\n", stderr);
    return 2;
  }
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
    usage(stdout);
    return stdout_checked(0);
  }
  if (!strcmp(cmd, "--version")) {
    printf("revenant %s (%s, SQLite %s)\n", REVENANT_VERSION, rt_lua_release(),
           sqlite3_libversion());
    return stdout_checked(0);
  }
  for (const cli_command *c = cli_commands; c->name; c++)
    if (!strcmp(cmd, c->name)) return stdout_checked(c->fn(argc - 1, argv + 1));
  if (cmd[0] == '-')
    fprintf(stderr, "revenant: unknown option '%s'\n", cmd);
  else
    fprintf(stderr, "revenant: unknown command '%s'\n", cmd);
  fputs("usage: revenant <command> [options]; try 'revenant --help'\n", stderr);
  return 2;
}
