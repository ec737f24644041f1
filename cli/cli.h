/*
** cli.h: the subcommands of the revenant command line (the top floor).
*/
#ifndef CLI_H
#define CLI_H

#define REVENANT_VERSION "0.1.0"

/* A subcommand: argv[0] is the subcommand's name. Returns the process exit
** status (0 ok, 1 expectation failed, 2 usage or scenario error). */
typedef struct cli_command {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *summary;
} cli_command;

/* NULL-terminated table of subcommands. */
extern const cli_command cli_commands[];

#endif
