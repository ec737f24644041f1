/*
** scn_baseline.h: swarm baselines (docs/swarm.md "Baselines"): a file of
** known failure signatures, each with the reason it is known, so that a CI
** swarm fails only on new ones (the convention of lint baselines).
**
**   {"revenant_baseline": 1,
**    "entries": [{"scenario": "evict-restart-rates", "case": "default",
**                 "signature": "keepalive_holds/Agent/none",
**                 "reason": "alarms 60 s late outlast keepAlive's heartbeat"}]}
**
** A signature is "<violation>/<actor class>/<open waits>" (or the
** "missing:", "unreproduced:", "fact:", "crash:" forms, docs/swarm.md); an
** entry's signature may put "*" for any of the three parts, and its "case"
** may be left out (any case). "scenario" and "signature" may each be an
** array (up to SCN_BASELINE_LIST): a family of scenarios with one reason;
** any listed name with any listed pattern matches. The violation part is a name, not an
** invariant index, so invariants added later (Lua ones, robust facts) fit.
*/
#ifndef SCN_BASELINE_H
#define SCN_BASELINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SCN_BASELINE_LIST 8 /* scenarios or signatures one entry may list */

typedef struct scn_baseline_entry {
  char scenario[SCN_BASELINE_LIST][128];   /* scenario names: one, or a family
                                              that shares one reason */
  int n_scenarios;                         /* >= 1 */
  char case_name[64];                      /* case label; "" = any case */
  char signature[SCN_BASELINE_LIST][256];  /* patterns; any one may match */
  int n_signatures;                        /* >= 1 */
  int listed;                              /* 1: written as arrays (as loaded) */
  char reason[512];                        /* never empty */
  uint64_t matched;        /* groups that matched it (set by scn_baseline_match) */
} scn_baseline_entry;

typedef struct scn_baseline {
  scn_baseline_entry *e;   /* owned */
  size_t n;
} scn_baseline;

/* Loads a baseline file. On error returns -1 with "file:line:col: message"
** in err (a missing field, an empty reason, an unknown field with a
** did-you-mean, a duplicate entry). Release with scn_baseline_free. */
int scn_baseline_load(const char *path, scn_baseline *b, char *err, size_t errlen);

/* Same, from text in memory (path names it in messages). */
int scn_baseline_load_text(const char *path, const char *text, size_t len, scn_baseline *b,
                           char *err, size_t errlen);

/* 1 if signature sig matches pattern pat part by part ("a/b/c"; a "*"
** part matches anything), else 0. */
int scn_baseline_sig_match(const char *pat, const char *sig);

/* 1 if entry e names scenario (one of its list), case_name (or has no
** case) and a pattern matching sig, else 0. Counts nothing. */
int scn_baseline_entry_matches(const scn_baseline_entry *e, const char *scenario, const char *case_name,
                               const char *sig);

/* The first entry matching (scenario, case, signature), its `matched`
** counter incremented; NULL if none. */
const scn_baseline_entry *scn_baseline_match(scn_baseline *b, const char *scenario, const char *case_name,
                                             const char *sig);

/* Writes entries as a baseline file (sorted as given). Returns 0, or -1 on
** a write error. */
int scn_baseline_write(FILE *f, const scn_baseline_entry *e, size_t n);

/* Frees what b owns. NULL is allowed. */
void scn_baseline_free(scn_baseline *b);

#endif
