/*
 * scn_json.h: the scenario JSON reading layer.
 *
 * Scenario files are JSON (RFC 8259) plus // line and block comments. cJSON
 * cannot report positions, rejects comments and silently accepts duplicate
 * keys, so this module has its own small recursive-descent parser that builds
 * an ordinary cJSON tree and remembers, in a side table owned by the
 * document, where every value (and every object member's key) starts. On top
 * of that sit typed readers (strings, booleans, ranged integers, durations,
 * seeds) and field checks that turn every mistake into one line of the form
 * "file:line:column: message", where line and column are 1-based and the
 * column counts bytes. Nothing here keeps global state; errors go into the
 * caller's scn_err buffer. All memory comes from cJSON's allocator hooks
 * (cJSON_malloc / cJSON_free), so a test can inject allocation failures.
 */
#ifndef SCN_JSON_H
#define SCN_JSON_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>
#include <stdio.h>

typedef struct scn_doc scn_doc;                 /* parsed document: owns the cJSON tree and positions */
typedef struct { int line, col; } scn_pos;
typedef struct { char text[768]; } scn_err;      /* formatted "file:line:col: message" */

/* Nesting limit for arrays and objects: 100 levels parse, 101 are an error. */
#define SCN_JSON_MAX_DEPTH 100

/*
 * Parses len bytes of text (need not be NUL-terminated; NUL bytes are just
 * invalid input) as JSON with comments. file names the source in messages
 * (NULL means "<input>") and is copied. On success returns 0 and sets *out to
 * a new document that the caller frees with scn_doc_free. On any error returns
 * -1, sets *out to NULL and fills *err (if err is not NULL) with
 * "file:line:col: message"; nothing is leaked. Rejects duplicate keys,
 * trailing commas, integers whose magnitude is >= 10^15, numbers that
 * overflow, lone surrogates, \u0000, invalid UTF-8 in strings, nesting deeper
 * than SCN_JSON_MAX_DEPTH, and anything after the document.
 */
int  scn_doc_parse(const char *file, const char *text, size_t len, scn_doc **out, scn_err *err); /* 0 ok, -1 error (err filled, *out NULL) */

/*
 * Reads the whole file at path and parses it with path as the file name.
 * A file that cannot be read gives "path: cannot read: <strerror>". Same
 * return values and ownership as scn_doc_parse.
 */
int  scn_doc_load(const char *path, scn_doc **out, scn_err *err);   /* reads a file (error "path: cannot read: strerror") then parses */

/* The root value; owned by d, valid until scn_doc_free(d). d must not be NULL. */
const cJSON *scn_doc_root(const scn_doc *d);

/* The file name given at parse time (or "<input>"); owned by d. */
const char *scn_doc_file(const scn_doc *d);

/*
 * Where node's value starts (first byte of the value) in d's text. Returns
 * {0,0} if node is NULL or is not a node of d. Lookup is by node pointer.
 */
scn_pos scn_doc_pos(const scn_doc *d, const cJSON *node);          /* value position; {0,0} if unknown */

/*
 * Where the key of an object member starts (its opening quote). Returns
 * {0,0} if member is not an object member of d.
 */
scn_pos scn_doc_key_pos(const scn_doc *d, const cJSON *member);    /* key position of an object member */

/* Frees d, its cJSON tree and its position table. NULL is allowed. */
void scn_doc_free(scn_doc *d);

/*
 * Formats printf-style fmt into err as "file:line:col: message" at node's
 * value position. If the position is unknown (node NULL or not in d) the
 * result is "file: message"; if d is NULL it is just the message. err may be
 * NULL. Always returns -1, so callers can write `return scn_errf(...)`.
 */
int  scn_errf(scn_err *err, const scn_doc *d, const cJSON *node, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ; /* formats at node's position (key pos for members when reporting unknown fields), returns -1 */

/*
 * Typed readers. obj is the object to read from (a non-object reads as if the
 * key were absent). Each returns 0 on success (out set), 1 if the key is
 * absent (out untouched), -1 on a type or range error (err filled at the
 * member's value position, message like
 * `"duration": expected a duration string such as "150ms", "30s", "2.5m", "7d"`).
 * Pointers written to out are owned by d.
 */
int scn_get_string(const scn_doc *d, const cJSON *obj, const char *key, const char **out, scn_err *err);

/* Reads true or false into *out as 1 or 0. */
int scn_get_bool(const scn_doc *d, const cJSON *obj, const char *key, int *out, scn_err *err);

/*
 * Reads a number with an integral value (1.5 is an error; 2.0 and 2e3 are
 * accepted) in [min, max]; the range error message names the range.
 */
int scn_get_int(const scn_doc *d, const cJSON *obj, const char *key, int64_t min, int64_t max, int64_t *out, scn_err *err); /* integer only (1.5 is an error), range-checked with a message naming the range */

/* Reads a duration string (see scn_parse_duration) into microseconds. Numbers are an error. */
int scn_get_duration(const scn_doc *d, const cJSON *obj, const char *key, int64_t *out_us, scn_err *err); /* string durations only */

/*
 * Reads a seed: a non-negative JSON integer below 10^15, or a string holding
 * hex ("0x5f3759df", 1 to 16 hex digits) or decimal digits ("12345"), up to
 * 2^64-1. No signs, spaces or empty strings.
 */
int scn_get_seed(const scn_doc *d, const cJSON *obj, const char *key, uint64_t *out, scn_err *err); /* integer < 10^15 or string "0x5f3759df" / "12345" up to 2^64-1 */

/*
 * Parses a duration: digits, optionally '.' and more digits, then a unit
 * (us, ms, s, m, h, d), nothing else ("150ms", "30s", "2.5m", "1h", "7d",
 * "250us", "0s"). The result must be a whole number of microseconds below
 * 10^15. Returns 0 and sets *out_us, or -1 (out_us untouched) on any problem.
 */
int scn_parse_duration(const char *s, int64_t *out_us); /* "150ms","30s","2.5m","1h","7d","250us", "0s"; units us ms s m h d; decimal fraction allowed; result must be integral microseconds and fit in int64 below 10^15 us; returns 0 ok, -1 bad */

/*
 * Checks that obj is an object whose every key is in allowed (a
 * NULL-terminated list). Returns 0 if so. Otherwise returns -1 with err at
 * the first offending key: `unknown field "sede"; did you mean "seed"?` (a
 * close spelling or a prefix match) or `unknown field "x"; expected one of:
 * a, b, c`. A non-object gives "expected an object" at obj's position.
 */
int scn_check_fields(const scn_doc *d, const cJSON *obj, const char *const *allowed /* NULL-terminated */, scn_err *err); /* unknown field -> `unknown field "sede"; did you mean "seed"?` (edit distance <= 2 or prefix match) or `unknown field "x"; expected one of: a, b, c`; also errors if obj is not an object */

/*
 * Returns 0 if node's type is in cjson_type_mask (cJSON_Object, cJSON_Array,
 * cJSON_String, cJSON_Number, cJSON_True|cJSON_False, cJSON_NULL, or a union),
 * else -1 with err at node's position, e.g.
 * `expected an object for "actors[2]", found an array`. A NULL node gives
 * `missing "what"` without a position.
 */
int scn_expect_type(const scn_doc *d, const cJSON *node, int cjson_type_mask, const char *what, scn_err *err); /* "expected an object for \"actors[2]\"" style */

/* fopen(path, "rb") for a file revenant reads whole (a scenario, a script)
** that never hangs: a named pipe with no writer reads as empty instead of
** blocking in open(). NULL with errno set; EISDIR for a directory. */
FILE *scn_fopen_read(const char *path);

/* The name in names (NULL-terminated) that key most likely misspells, as
** the "did you mean" of scn_check_fields chooses it, or NULL. */
const char *scn_suggest(const char *key, const char *const *names);

/* "an object", "a number", "true", ... ("nothing" for NULL): a node's
** JSON type as messages name it. */
const char *scn_type_name(const cJSON *node);

#endif /* SCN_JSON_H */
