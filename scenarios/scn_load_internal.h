/*
** scn_load_internal.h: what the two halves of the scenario loader share
** (scn_load.c: header, runtime, checks, programs, actors, entry points;
** scn_load_work.c: workload, faults, expectations and cases). Not for use
** outside scenarios/.
*/
#ifndef SCN_LOAD_INTERNAL_H
#define SCN_LOAD_INTERNAL_H

#include "scenarios/scn.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/scn_json.h"

#define US_PER_S 1000000LL
#define DAY_US (86400LL * US_PER_S)
#define MAX_DUR_US (365LL * DAY_US)
#define MAX_REPEAT 1000
#define MAX_RATE 100000
#define MAX_PPM 1000000
#define MAX_COUNT 1000000
#define MAX_AFTER_WRITE 1000000 /* a fault's "after_write" */

/* Loader state: the document, the error sink and the scenario being filled. */
typedef struct ld {
  const scn_doc *d;
  scn_err *err;
  scn_scenario *sc;
  const cJSON *root;
  const char *duration_text;  /* the "duration" string, for messages */
  rt_config base;             /* profile + top-level "runtime" */
  int cloudflare;             /* "profile": "cloudflare" was given */
  uint64_t shared_reach;      /* a top-level expect.reach beside "cases" */
  int swarm_default;          /* "swarm": {"violations": ...}: scn_swarm_mode */
  const cJSON *actor_nodes[SCN_MAX_ACTORS];
  const cJSON *child_nodes[SCN_MAX_ACTORS][RT_MAX_CHILDREN];
} ld;

/* One allowed value of an enumerated field. */
typedef struct opt {
  const char *name;
  int value;
} opt;

/* A ", "-separated list for messages, cut with "..." when it gets long. */
typedef struct list {
  char s[400];
  size_t n;
  int cut;
} list;

/* ---- helpers of scn_load.c used by scn_load_work.c ---------------------
** Each returns 0 on success, 1 when an optional key is absent, -1 after
** writing "file:line:col: message" into L->err (as the scn_get_* readers). */

/* obj[key] when obj is an object, else NULL. */
const cJSON *ld_get(const cJSON *obj, const char *key);
/* s quoted for a message into dst (cut with "..." past cap). */
const char *ld_quote(char *dst, size_t cap, const char *s);
/* Appends name to a message list. */
void ld_list_add(list *l, const char *name);
/* An error at the key of member m (printf format). Returns -1. */
int ld_key_errf(ld *L, const cJSON *m, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* -1 with "missing required field" when obj has no key. */
int ld_need(ld *L, const cJSON *obj, const char *key);
/* node must be an object whose fields are all in allowed. */
int ld_obj_fields(ld *L, const cJSON *node, const char *what, const char *const *fields);
/* node must be an array of min..max items. */
int ld_arr_len(ld *L, const cJSON *node, const char *what, int min, int max, const char *noun);
/* A string field copied into dst (cap bytes; empty only if allow_empty). */
int ld_get_text(ld *L, const cJSON *obj, const char *key, char *dst, size_t cap, int allow_empty);
/* "key": unknown value s; expected one of the list l. Returns -1. */
int ld_bad_value(ld *L, const cJSON *node, const char *key, const char *s, const list *l);
/* An enumerated string field. */
int ld_get_enum(ld *L, const cJSON *obj, const char *key, const opt *opts, int *out);
/* A duration field of at least min_us. */
int ld_get_dur(ld *L, const cJSON *obj, const char *key, int64_t min_us, int64_t *out);
/* A time field (a duration not after the scenario's duration). */
int ld_get_time(ld *L, const cJSON *obj, const char *key, int64_t min_us, int64_t *out);
/* A field naming a declared actor. */
int ld_get_actor(ld *L, const cJSON *obj, const char *key, uint32_t *out);
/* A field naming a declared program. */
int ld_get_program(ld *L, const cJSON *obj, const char *key, int *out);
/* A "runtime" object overriding c. */
int ld_load_runtime(ld *L, const cJSON *o, rt_config *c);

extern const opt ld_adapter_opts[];
extern const opt ld_store_opts[];

/* ---- scn_load_work.c ---------------------------------------------------- */

/* The "workload" array into sc->work. */
int ld_load_workload(ld *L);

/* scn_load_scripts.c: 0 if the script text (len bytes) is UTF-8 throughout; else an error at
** node, "WHO line N is not UTF-8 text (byte 0xXX): ..." (who names the
** script, as "script agent.lua:"), since a repro file embeds scripts as
** JSON, which cannot carry other bytes. */
int ld_utf8_text(ld *L, const cJSON *node, const char *who, const char *text, size_t len);

/* scn_load_script.c: the agent "script" field of actor i (absent: 0), and that
** `method` is a function of the script of `actor` (error at node). */
int ld_actor_script(ld *L, const cJSON *a, uint32_t i);
int ld_check_invoke(ld *L, const cJSON *node, uint32_t actor, const char *method);
/* Frees the script texts a loaded scenario owns (none in a scn_copy). */
void scn__actor_scripts_free(scn_scenario *sc);
/* The "faults" array into sc->faults. */
int ld_load_faults(ld *L);
/* "expect" or "cases" into sc->cases. */
int ld_load_cases(ld *L);

/* A rate field ("2/d", "5/h") as a count per day. */
int ld_get_rate(ld *L, const cJSON *f, const char *key, int64_t *per_day);

/* ---- scn_load_swarm.c --------------------------------------------------- */

/* The top-level "swarm" object: sc->allow and the default mode of
** expected violations (before the cases are loaded). */
int ld_load_swarm(ld *L);
/* expect.swarm of case c (after its hold and violate lists). */
int ld_swarm_mode(ld *L, const cJSON *ex, scn_case *c);

/* ---- scn_load_scripts.c ------------------------------------------------- */

/* "invariants" (and "scripts") into sc->scripts and sc->lua_inv. */
int ld_load_invariants(ld *L);

/* ---- scn_load_facts.c --------------------------------------------------- */

/* An expectation's "facts" array into sc->facts, each applying to the
** cases in case_mask (bit per case index). */
int ld_load_facts(ld *L, const cJSON *arr, uint32_t case_mask);

#endif
