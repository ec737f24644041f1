/*
** cli.h: the subcommands of the revenant command line (the top floor).
*/
#ifndef CLI_H
#define CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "scenarios/scn.h"

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

/* The default output directory of run and swarm repro files and of shrink. */
#define CLI_OUT_DIR "revenant-out"

/* Appends `arg` (a file) or every *.json below it (a directory, in name
** order; swarm baselines, *baseline.json, the repro, results, Chrome trace
** and baseline files revenant writes, and subdirectories called
** CLI_OUT_DIR left out) to p. Returns 0, or -1 with a message on stderr. */
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

/* The run options of crash point k of `run --crash-points` for case cs
** (what `run --crash-at k` and `replay` of its repro file run): without
** the file's faults, the process crashed right after the k-th durable
** write, judging the crash-point invariants (docs/cli.md). */
scn_run_opts cli_crash_run_opts(const scn_case *cs, uint64_t k);

/* 0, or 2 after saying so on stderr (`revenant CMD: --json x.json would
** overwrite the input x.json`) when the output file out (NULL: none, given
** as option opt) is one of the n input files: an output written over its
** own scenario or repro file would destroy it. */
int cli_output_not_input(const char *cmd, const char *opt, const char *out, char *const *in, size_t n);

/* s as one word of a shell command line: s itself when every byte is one
** of A-Z a-z 0-9 _ . / : = @ % + , -, else s in single quotes (a quote as
** '\'') in buf (cap bytes; cut short if it does not fit). For the replay
** commands reports print, so a path with a space can be pasted. */
const char *cli_shell_word(const char *s, char *buf, size_t cap);

/* 1 if v, given where an option's value is expected, is itself an option
** ("-q", "--json"): such a value is refused ("-" alone and "./-x" pass). */
int cli_is_flag(const char *v);

/* An output file written atomically: into a temporary file beside it,
** renamed over the path only when everything was written and closed, so
** an interrupted or failed run never leaves half a file. A path that
** exists and is not a regular file (/dev/stdout, a FIFO, /dev/full) is
** written in place. */
typedef struct cli_out {
  const char *path;
  char tmp[1200];
  FILE *f;
  int direct;
} cli_out;

/* Opens o for path. Returns 0, or -1 after "revenant: cannot write PATH:
** <strerror>" on stderr. */
int cli_out_open(cli_out *o, const char *path);

/* Flushes, closes and renames o into place (every step checked). Returns
** 0, or -1 after "revenant: cannot write PATH: <strerror>" on stderr (the
** temporary file is removed). */
int cli_out_commit(cli_out *o);

/* Closes and removes o's temporary file; nothing reaches the path. */
void cli_out_abort(cli_out *o);

/* The signal (SIGINT, SIGTERM, SIGHUP, SIGPIPE) that asked a long command
** to stop, or 0;
** set by the handlers cli_catch_signals installs (without SA_RESTART, so
** a blocking call returns EINTR). A command stops starting work, writes
** what finished, says "interrupted after N seeds" and exits 128 + signal. */
extern volatile sig_atomic_t cli_stop;
void cli_catch_signals(void);

/* The path of a repro file: "DIR/<kind>-<file stem>[-<scenario name>]-
** <case>-0x<seed><extra>.json" (the name only when it differs from the
** stem), every part reduced to [A-Za-z0-9._-] (a name is never used raw
** in a path: "../x" or "a/b" become "_.._x", "a_b"), and never a path this
** process already handed out (then "-2", "-3" ... before ".json"). */
void cli_repro_path(char *out, size_t cap, const char *dir, const char *kind, const char *file,
                    const char *name, const char *label, uint64_t seed, const char *extra);

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
