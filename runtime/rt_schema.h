/*
** rt_schema.h: the field table of the trace vocabulary, and the SDK tables.
**
** One row per record kind: the name and type of each of the five fields
** (a, b, c, s, s2) of a sim_rec, as rt_events.h documents them. Reports
** render records with it, the facts of scenario files (checks/chk_facts.c)
** match records by field name with it, and `revenant trace` prints with it,
** so there is one vocabulary. The second half lists the SDK tables and
** their columns that end-state facts may read (rt_query_rows, rt.h).
** Nothing here touches a world: these are constant tables.
*/
#ifndef RT_SCHEMA_H
#define RT_SCHEMA_H

#include <stdint.h>

/* How one field is typed (and shown). */
typedef enum rt_ftype {
  RT_F_INT = 0,    /* plain integer */
  RT_F_US,         /* duration in µs ("held_us") */
  RT_F_AT,         /* absolute virtual time in µs ("at_us"); -1 = none */
  RT_F_BOOL,       /* 1 / 0 */
  RT_F_ACTOR,      /* actor index */
  RT_F_DEATH,      /* rt_death_cause */
  RT_F_ENTRY,      /* rt_entry */
  RT_F_ACTION,     /* rt_recover_action */
  RT_F_TRSTATUS,   /* rt_toolrun_status */
  RT_F_WRITEOP,    /* rt_write_op */
  RT_F_SOURCE,     /* recovery scan source: 1 startup, 2 alarm */
  RT_F_OUTCOME,    /* tool-run inspection: 1 inspected, 2 timed_out, 3 failed */
  RT_F_PHASE,      /* 1 begin, 0 end, 2 joined */
  RT_F_CBOUTCOME,  /* rt_cb_outcome */
  RT_F_LFSTATUS,   /* rt_legacy_status */
  RT_F_CHATMODE,   /* rt_chat_mode */
  RT_F_STREAM,     /* rt_chat_stream_status */
  RT_F_UPSTREAM,   /* rt_chat_upstream_phase */
  RT_F_EXECSTATE,  /* rt_exec_turn_state */
  RT_F_ADAPTER,    /* rt_exec_adapter */
  RT_F_RUNSTATE,   /* rt_thread_run_state */
  RT_F_TRATTACH,   /* rt_tr_attach */
  RT_F_STR,        /* interned string (s or s2) */
  RT_F_JSON,       /* interned string holding one JSON value (s or s2) */
  RT_F_TYPE_COUNT
} rt_ftype;

/* One field of a kind. key NULL: the slot is unused. */
typedef struct rt_field {
  const char *key;
  rt_ftype type;
} rt_field;

#define RT_FIELDS 5   /* a, b, c, s, s2 */

/* The five fields of kind (slots 0..2 are a, b, c; 3..4 are s, s2). An
** unknown kind gets the generic names "a", "b", "c", "s", "s2". Never NULL. */
const rt_field *rt_schema_fields(uint32_t kind);

/* The kind named name ("alarm_set"), or -1. */
int rt_schema_kind(const char *name);

/* The slot (0..4) of field key of kind, or -1 when kind has no such field. */
int rt_schema_slot(uint32_t kind, const char *key);

/* Same, but a time or duration field may also be named without its "_us"
** suffix, as the text form prints it ("at" for "at_us"). */
int rt_schema_slot_loose(uint32_t kind, const char *key);

/* 1 if t is an enumerated type (its values have names). */
int rt_schema_is_enum(rt_ftype t);

/* The name of value v of enum type t, or NULL (not an enum, unknown value). */
const char *rt_schema_enum_name(rt_ftype t, int64_t v);

/* The value of name in enum type t into *out: 0, or -1 if t has no such
** name. */
int rt_schema_enum_value(rt_ftype t, const char *name, int64_t *out);

/* Writes the names of enum type t, ", "-separated, into buf (cap bytes). */
void rt_schema_enum_list(rt_ftype t, char *buf, int cap);

/* A short word for a type in messages: "integer", "duration", "time",
** "boolean", "actor", "name", "string", "JSON value". */
const char *rt_schema_type_word(rt_ftype t);

/* ---- SDK tables that end-state facts may read ------------------------- */

/* A column of an SDK table; type is RT_F_INT, RT_F_STR, RT_F_JSON or an
** enum type stored as its integer (cf_agent_tool_runs.status). */
typedef struct rt_column {
  const char *name;
  rt_ftype type;
} rt_column;

/* The number of readable tables, and table i's name (NULL past the end). */
int rt_schema_table_count(void);
const char *rt_schema_table_name(int i);

/* The index of table name, or -1. */
int rt_schema_table(const char *name);

/* The columns of table ti (NULL-name terminated), or NULL for a bad index. */
const rt_column *rt_schema_columns(int ti);

#endif
