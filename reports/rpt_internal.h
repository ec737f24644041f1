/*
** rpt_internal.h: helpers shared by the files of reports/ (not public).
**
** Decoding of trace records per kind (the field names of rt_events.h),
** actor names, time formats, and JSON/XML-safe string output.
*/
#ifndef RPT_INTERNAL_H
#define RPT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cJSON.h>

#include "reports/rpt.h"
#include "runtime/rt_schema.h"

/* One decoded field. key is the JSON key (with its _us suffix). */
typedef struct rpt__fval {
  const char *key;
  rt_ftype type;
  int64_t v;         /* the integer (all but RT_F_STR / RT_F_JSON) */
  const char *str;   /* RT_F_STR / RT_F_JSON: the string, never NULL */
} rpt__fval;

/* Decodes the used fields of r (per kind, with the runtime's field table
** rt_schema_fields) into out[0..RT_FIELDS); empty strings are left out. t gives the
** strings and may be NULL. Returns the number of fields. */
int rpt__decode(const sim_trace *t, const sim_rec *r, rpt__fval *out);

/* Stable name of a kind ("fiber_start"); "kind_<n>" for unknown kinds
** (buf must hold 24 bytes). */
const char *rpt__kind_name(uint32_t kind, char *buf);

/* Name of actor a in r: actor_names[a], else "#<a>" (buf of 24 bytes);
** "-" for RT_NO_ACTOR. */
const char *rpt__actor(const rpt_run *r, uint32_t a, char *buf);

/* Name of invariant inv (chk_invariant_name), never NULL. */
const char *rpt__inv_name(chk_invariant inv);

/* The kept record of trace index idx, or NULL (no trace, not kept). */
const sim_rec *rpt__rec(const sim_trace *t, uint64_t idx);

/* Formats a virtual time as seconds with milliseconds: "95.000s". */
char *rpt__fmt_s(char *buf, size_t len, int64_t us);

/* Formats a duration compactly: "7d0h", "2h13m", "5m30s", "42.125s",
** "150ms", "12us". */
char *rpt__fmt_dur(char *buf, size_t len, int64_t us);

/* Length (1..4) of the valid UTF-8 sequence at p (p[0] != 0), or 0 when
** the bytes at p are not valid UTF-8. */
int rpt__utf8_len(const unsigned char *p);

/* Writes s (NULL: null) as a JSON string to f: quotes, escapes, invalid
** UTF-8 replaced by '?'. */
void rpt__json_str(FILE *f, const char *s);

/* Replaces, in place, every byte of s that starts no valid UTF-8 sequence
** with '?' (as rpt__json_str does), so a printed JSON document whose strings
** came from a script's bytes (revenant.log("\xff")) is valid JSON. */
void rpt__utf8_scrub(char *s);

/* A JSON integer item: a number below 10^15 in magnitude, else a decimal
** string (cJSON prints larger numbers lossily). NULL on OOM. */
cJSON *rpt__json_int(int64_t v);

/* Same for an unsigned value. */
cJSON *rpt__json_u64(uint64_t v);

/* "0x<hex>" of v ("0x2a"), or zero-padded to 16 digits when pad. */
char *rpt__hex(char *buf, size_t len, uint64_t v, int pad);

/* Adds the decoded fields of r to object o (enum names as strings, actor
** names, booleans, strings); returns 0, -1 on OOM. */
int rpt__json_fields(cJSON *o, const rpt_run *run, const sim_rec *r);

/* ---- who waits on whom (rpt_wait.c) ---------------------------------- */

enum { RPT__W_GATE, RPT__W_RPC, RPT__W_REQ, RPT__W_ALARM, RPT__W_COUNT };

/* One pending wait: a held input gate, an unanswered RPC call or request,
** an armed alarm. */
typedef struct rpt__wait {
  int cat;            /* RPT__W_* */
  uint32_t actor;     /* the holder, caller or requested actor */
  int64_t id, t, x;   /* id: call/request id; t: since; x: callee, entry or alarm time */
  uint32_t s;         /* purpose or method (interned string id) */
  uint64_t idx;       /* the record that started the wait (for an alarm: the latest set) */
} rpt__wait;

/* A growable list of waits; zero-initialise, free(w) when done. */
typedef struct rpt__waits {
  rpt__wait *w;
  size_t n, cap;
  int oom;            /* 1: an allocation failed, the list is incomplete */
} rpt__waits;

/* Replays the kept records of t with t_us <= now into ws (which must be
** empty) and leaves in it what is still pending then, oldest first: gates
** (cleared by release, timeout or the holder's death), RPC calls (reply or
** caller's death), requests (ok / fail only) and each actor's armed alarm
** (fire or delete). Nothing when t has no kept records. */
void rpt__waits_at(const sim_trace *t, int64_t now, rpt__waits *ws);

/* ---- spans and folding of the HTML report (rpt_html_fold.c) ---------- */

enum {
  RPT__SP_GATE, RPT__SP_STARTUP, RPT__SP_REQUEST, RPT__SP_ALARM, RPT__SP_FIBER,
  RPT__SP_RPC, RPT__SP_TOOLRUN, RPT__SP_RECOVERY, RPT__SP_HOOK, RPT__SP_ONSTART, RPT__SP_COUNT
};

#define RPT__NO_REC UINT64_MAX

/* A span of one actor: opened by record `open`, closed by `close`
** (RPT__NO_REC: still open at the end; t1 is then t0). */
typedef struct rpt__hspan {
  uint32_t actor;
  int cls;             /* RPT__SP_* */
  int64_t id;          /* request, fiber, call or run id; rows left for a scan */
  int64_t t0, t1;
  uint64_t open, close;
  uint32_t ended_by;   /* kind of the closing record */
} rpt__hspan;

/* Records [first, last] of the trace left out of the page. period > 0: a
** repeating stretch of `repeats` periods of `period` segments; 0: a plain
** stretch folded to meet the size budget. */
typedef struct rpt__fold {
  uint64_t first, last;
  int64_t t0, t1;
  uint64_t records, repeats;
  uint32_t period;
} rpt__fold;

typedef struct rpt__folding {
  uint8_t *keep;       /* per record: 1 shown, 0 folded */
  uint64_t kept;       /* records with keep == 1 */
  uint64_t bytes;      /* their estimated size on the page */
  rpt__fold *folds;    /* sorted by first */
  size_t n_folds, cap_folds;
  rpt__hspan *spans;   /* in open order */
  size_t n_spans;
} rpt__folding;

/* Pairs the spans of t and decides which records the page keeps: repeating
** stretches fold (first two periods and the last one kept), then plain
** stretches while more than max_records records or an estimated max_bytes
** bytes are kept (0: no limit). Segments
** holding a record of a violation's chain (v[0..nv)) or its revealing
** record, or the record that started one of its waits (rpt__waits_at at
** its time), or one of the nearest or matching records of a fact (facts
** may be NULL), are never folded. out is filled even for a trace without kept
** records (then empty). Returns 0, or -1 on OOM; release out with
** rpt__html_fold_free in both cases. */
int rpt__html_fold(const sim_trace *t, const chk_violation *v, size_t nv, const chk_facts *facts,
                   uint64_t max_records, uint64_t max_bytes, rpt__folding *out);

/* Frees what rpt__html_fold allocated. */
void rpt__html_fold_free(rpt__folding *f);

#endif
