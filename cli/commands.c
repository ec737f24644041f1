/*
** commands.c: the subcommand table.
*/
#include "cli/cli.h"

const cli_command cli_commands[] = {
    {"run", cli_cmd_run, "FILE|DIR...", "run scenarios and check their expectations"},
    {"check", cli_cmd_check, "FILE|DIR...", "validate scenario files only"},
    {"trace", cli_cmd_trace, "FILE", "run one case and print every trace record"},
    {"replay", cli_cmd_replay, "FILE", "re-run a repro file to the same trace hash"},
    {"swarm", cli_cmd_swarm, "FILE...", "explore many seeds with random fault mixes"},
    {"shrink", cli_cmd_shrink, "FILE", "reduce a failing scenario to a smaller one"},
    {"merge", cli_cmd_merge, "FILE.json...", "combine results JSON files (swarm shards)"},
    {NULL, NULL, NULL, NULL},
};
