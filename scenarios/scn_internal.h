/*
** scn_internal.h: helpers shared by the runners of scenarios/ (the
** in-process runner scn_run.c and the real-SIGKILL runner scn_sigkill.c).
** Not for use outside scenarios/.
*/
#ifndef SCN_INTERNAL_H
#define SCN_INTERNAL_H

#include "scenarios/scn.h"

/* Copies msg into res->failure. */
void scn__set_failure(scn_result *res, const char *msg);

/* Adds the scenario's actors to w and their names to res. 0 or -1. */
int scn__add_actors(const scn_scenario *sc, rt_world *w, scn_result *res);

/* Writes the scenario's stale rows (tool runs, orphan fibers). 0 or -1. */
int scn__seed_stale(const scn_scenario *sc, rt_world *w);

/* Plans the workload from from_us on: each item's first arrival at or
** after from_us now, every later one lazily when the previous fires (the
** plan is process state: one run at a time per process). 0 or -1. */
int scn__plan_workload(const scn_scenario *sc, rt_world *w, int64_t from_us);

/* 1 if planning a later arrival failed (out of memory) in the last run. */
int scn__plan_failed(void);

/* Fills res's figures from its kept trace. */
void scn__compute_figures(scn_result *res);

/* Sets res->passed and res->failure from the violations and the case's
** expectation (or o->check_mask). */
void scn__judge(const scn_scenario *sc, int ci, const scn_run_opts *o, scn_result *res);

/* scn_facts.c: makes res->facts, the engine of the facts of case ci (none
** when o->check_mask judges invariants only). 0, or -1 on OOM. */
int scn__facts_begin(const scn_scenario *sc, int ci, const scn_run_opts *o, scn_result *res);

/* Reads the end-state facts from w (NULL: a sigkill run, no end facts) and
** finishes the engine; call after chk_finish, before the world is freed. */
void scn__facts_end(rt_world *w, scn_result *res);

/* Fails res (passed = 0, failure names the first failed fact) for every
** failed fact; call after scn__judge. */
void scn__facts_judge(scn_result *res);

/* Counts the run's probe records into res->probes. 0 or -1. */
int scn__probes_begin(scn_result *res);

/* Registers o->observer on res's trace (and fills o->trace_out). 0 or -1. */
int scn__observe(const scn_run_opts *o, scn_result *res);

/* Makes dir = "$TMPDIR/revenant-KIND-PID-XXXXXX" (without TMPDIR under
** /dev/shm when it is a writable directory, else /tmp; /tmp also when that
** fails), after removing such directories left by processes that no
** longer exist (a SIGKILLed run cannot remove its own). 0, or -1 with dir "". */
int scn__tmpdir_make(char *dir, size_t cap, const char *kind);

/* Removes directory dir and everything under it (nothing if dir is ""). */
void scn__tmpdir_remove(const char *dir);

/* 1 if the scenario has a sigkill fault (it then runs in worker
** processes over file-backed storage). */
int scn__has_sigkill(const scn_scenario *sc);

/* Runs a case whose faults include sigkill: see scn_sigkill.c. */
int scn__run_sigkill(const scn_scenario *sc, int ci, uint64_t seed, sim_strategy strategy,
                     const scn_run_opts *o, scn_result *res);

/* Reaps the last worker process of this process's previous sigkill run,
** which was left to exit on its own once it had said it was done
** (scn_sigkill.c); the next sigkill run and the process's exit call it, and
** a forked process that ends with _exit after sigkill runs calls it first. */
void scn__sigkill_reap(void);

/* ---- Lua invariants (scn_load_scripts.c, scn_run.c) ---------------------- */

/* FNV-1a 64 of a script text (the "hash" of an embedded script). */
uint64_t scn__script_hash(const char *text, size_t len);

/* The scenario's scripts as a "scripts" JSON object (a cJSON *, the caller
** deletes it), or NULL on OOM. */
void *scn__scripts_json(const scn_scenario *sc);

/* The scenario text (len bytes) for repro files: with "invariants" read
** from files, minified with "scripts" embedded as its first field; else a
** copy. Malloc'd (NULL on OOM). */
char *scn__embed_scripts(const scn_scenario *sc, const char *text, size_t len);

/* "modules" of a written file: a cJSON object of path -> {hash, text,
** origin} of every module the process holds for sc's folder (the ones its
** runs loaded, and a repro's embedded ones), by path; NULL when none. */
void *scn__modules_json(const scn_scenario *sc);

/* Attaches the scenario's Lua invariants to c (nothing without
** "invariants"). 0, or -1 with the reason in err. */
int scn__attach_lua(const scn_scenario *sc, chk_set *c, char *err, size_t errlen);

/* After chk_finish: fails res with the Lua invariants' error, if one
** stopped them. Returns 1 then, else 0. */
int scn__lua_failed(scn_result *res);

/* Forked workers (sigkill generations, swarm workers) end by _exit or a real
** SIGKILL, both of which skip gcov's counter dump at exit. Under `make
** coverage` (-DREVENANT_COVERAGE) a worker writes its counters first, so
** the code only workers run counts as reached; otherwise nothing. */
#ifdef REVENANT_COVERAGE
extern void __gcov_dump(void);
#define SCN_COVERAGE_DUMP() __gcov_dump()
#else
#define SCN_COVERAGE_DUMP() ((void)0)
#endif

#endif
