/*
** chk_facts.h: facts of a scenario file, judged while the run goes.
**
** A fact pins one behaviour of one run (docs/scenarios.md, "facts"): a
** count of records matching a pattern (kind, actor, field conditions, time
** window), an ordered sequence of patterns, or an end-state condition that
** the scenario runner reads from storage at the end (this module only
** keeps its verdict). The engine is a trace observer with bounded memory:
** per fact a counter, the step a sequence has reached, and at most
** CHK_FACT_NEAR candidate records for the report. It reads records and the
** runtime's field table (rt_schema.h) only; patterns arrive already
** resolved to kinds, slots and values by the scenario loader.
*/
#ifndef CHK_FACTS_H
#define CHK_FACTS_H

#include <stdint.h>

#include "sim/sim_trace.h"

#define CHK_FACT_MAX_WHERE 6
#define CHK_FACT_MAX_STEPS 6
#define CHK_FACT_NEAR 4
#define CHK_FACT_STR 256
#define CHK_FACT_JSON 1024
#define CHK_FACT_NAME 96
#define CHK_FACT_NO_MAX INT64_MAX

/* A condition on one field of a record. */
typedef enum chk_cond_op {
  CHK_COND_EQ = 1,      /* integer slot == lo, or string slot == str */
  CHK_COND_RANGE,       /* lo <= integer slot <= hi */
  CHK_COND_PRESENT,     /* string slot not empty */
  CHK_COND_ABSENT       /* string slot empty */
} chk_cond_op;

typedef struct chk_fact_cond {
  uint8_t slot;               /* 0..4: a, b, c, s, s2 */
  uint8_t op;                 /* chk_cond_op */
  int64_t lo, hi;
  char str[CHK_FACT_STR];     /* CHK_COND_EQ on s / s2 */
  char key[32];               /* the field's name, for reports */
} chk_fact_cond;

/* A record pattern. */
typedef struct chk_fact_pat {
  uint32_t kind;
  uint32_t actor;             /* UINT32_MAX: any actor */
  int64_t from_us, to_us;     /* inclusive window; to_us INT64_MAX: the end */
  int64_t gap_min_us, gap_max_us; /* sequence steps after the first: the time since
                                 the previous step's record (max INT64_MAX: any) */
  chk_fact_cond where[CHK_FACT_MAX_WHERE];
  int n_where;
} chk_fact_pat;

typedef enum chk_fact_form {
  CHK_FACT_MATCH = 1,         /* count of records matching pat[0] */
  CHK_FACT_SEQUENCE,          /* pat[0..n_pat) matched in trace order */
  CHK_FACT_END                /* end state: judged by the caller (chk_facts_set) */
} chk_fact_form;

/* What an end-state fact reads (CHK_FACT_END); the scenario runner
** evaluates it against the world (scenarios/scn_facts.c). */
typedef enum chk_end_what {
  CHK_END_TABLE = 1,          /* rows of an SDK table */
  CHK_END_ALARM,              /* the stored alarm */
  CHK_END_REFS                /* keepAlive refs held */
} chk_end_what;

typedef struct chk_fact_end {
  chk_end_what what;
  uint32_t actor;
  char table[48];
  char cols[CHK_FACT_MAX_WHERE][32];
  char vals[CHK_FACT_MAX_WHERE][CHK_FACT_STR]; /* text values */
  int64_t ivals[CHK_FACT_MAX_WHERE];           /* integer values */
  uint8_t kinds[CHK_FACT_MAX_WHERE];           /* 0 integer, 1 text, 2 NULL */
  int n_cols;
  int64_t lo, hi;             /* ALARM: range of the time (-1, -1: none) */
} chk_fact_end;

typedef struct chk_fact {
  char name[CHK_FACT_NAME];
  int line;                   /* where the fact starts in its file */
  char json[CHK_FACT_JSON];   /* the fact as written, compact JSON */
  int robust;
  uint32_t case_mask;         /* bit ci: the fact applies to case ci */
  chk_fact_form form;
  chk_fact_pat pat[CHK_FACT_MAX_STEPS];
  int n_pat;
  int64_t count_min, count_max; /* MATCH and END counts */
  chk_fact_end end;
} chk_fact;

/* The verdict of one fact. */
typedef struct chk_fact_result {
  int passed;
  int64_t found;              /* records counted, steps matched, or the end value */
  char msg[256];              /* what was expected and found */
  sim_rec near[CHK_FACT_NEAR];/* nearest candidates, or the first matches */
  uint64_t near_idx[CHK_FACT_NEAR];
  int n_near;
  int near_matches;           /* 1: near[] are matches (too many), 0: candidates */
} chk_fact_result;

typedef struct chk_facts chk_facts;

/* Makes an engine for the facts of case ci among facts[0..n) (robust_only:
** only those with robust set) and registers it as an observer of t. facts
** must outlive the engine. Returns NULL on OOM or when t has no free
** observer slot. */
chk_facts *chk_facts_new(sim_trace *t, const chk_fact *facts, int n, int ci, int robust_only);

/* Judges the record facts at the end of the run (virtual time end_us). End
** facts keep the verdict given with chk_facts_set (failed if none). */
void chk_facts_finish(chk_facts *f, int64_t end_us);

/* The number of facts the engine judges, and the i-th of them and its
** result (valid after chk_facts_finish). */
int chk_facts_count(const chk_facts *f);
const chk_fact *chk_facts_fact(const chk_facts *f, int i);
const chk_fact_result *chk_facts_result(const chk_facts *f, int i);

/* Sets the verdict of end fact i (found: the value read; msg: what was
** expected and found). */
void chk_facts_set(chk_facts *f, int i, int passed, int64_t found, const char *msg);

/* The number of failed facts (after chk_facts_finish). */
int chk_facts_failed(const chk_facts *f);

/* 1 if the count n satisfies [min, max]. */
int chk_facts_count_ok(int64_t n, int64_t min, int64_t max);

/* "exactly 1", "at least 2", "at most 0", "between 1 and 3" into buf. */
const char *chk_facts_count_text(int64_t min, int64_t max, char *buf, int cap);

/* Frees the engine (stop appending to its trace first). */
void chk_facts_free(chk_facts *f);

#endif
