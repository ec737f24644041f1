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

#endif
