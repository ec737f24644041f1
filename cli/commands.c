/*
** commands.c: the subcommand table.
*/
#include "cli/cli.h"

const cli_command cli_commands[] = {
    {"run", cli_cmd_run, "run scenarios and check their expectations"},
    {"check", cli_cmd_check, "validate scenario files only"},
    {"replay", cli_cmd_replay, "re-run a repro file to the same trace hash"},
    {"swarm", cli_cmd_swarm, "explore many seeds with random fault mixes, in worker processes"},
    {"shrink", cli_cmd_shrink, "reduce a failing scenario to a smaller one"},
    {"merge", cli_cmd_merge, "combine results JSON files (e.g. of swarm shards)"},
    {NULL, NULL, NULL},
};
