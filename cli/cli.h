/*
** cli.h: the subcommands of the revenant command line (the top floor).
*/
#ifndef CLI_H
#define CLI_H

#include <stddef.h>
#include <stdint.h>

#define REVENANT_VERSION "0.1.0"

/* A subcommand: argv[0] is the subcommand's name. Returns the process exit
** status (0 ok, 1 expectation failed, 2 usage or scenario error). */
typedef struct cli_command {
  const char *name;
  int (*fn)(int argc, char **argv);
  const char *args;     /* its arguments, for the usage text */
  const char *summary;  /* one line */
} cli_command;

/* A list of scenario file paths (owned strings). */
typedef struct cli_paths {
  char **v;
  size_t n, cap;
} cli_paths;

/* Appends `arg` (a file) or every *.json below it (a directory, in name
** order) to p. Returns 0, or -1 with a message on stderr. */
int cli_expand(cli_paths *p, const char *arg);

/* Frees the list. */
void cli_paths_free(cli_paths *p);

/* Reads a whole file into a malloc'd NUL-terminated buffer the caller
** frees; NULL if it cannot be read. */
char *cli_read_file(const char *path);

/* Seconds of a monotonic wall clock: for reports, budgets and progress
** only, never inside a run. */
double cli_wall_now(void);

/* Parses a seed: decimal or 0x-hex, up to 2^64-1. Returns 0 or -1. */
int cli_parse_seed(const char *s, uint64_t *out);

int cli_cmd_run(int argc, char **argv);
int cli_cmd_check(int argc, char **argv);
int cli_cmd_replay(int argc, char **argv);
int cli_cmd_swarm(int argc, char **argv);   /* cmd_swarm.c, docs/swarm.md */
int cli_cmd_shrink(int argc, char **argv);  /* cmd_shrink.c */
int cli_cmd_merge(int argc, char **argv);   /* cmd_merge.c: combine results JSON */
int cli_cmd_trace(int argc, char **argv);   /* cmd_trace.c: print a run's records */

/* NULL-terminated table of subcommands. */
extern const cli_command cli_commands[];

#endif
