/*
 * scn_json.c: scenario JSON with comments, positions and typed readers.
 *
 * A small recursive-descent parser for RFC 8259 JSON plus // and block
 * comments. It builds a cJSON tree with cJSON's own constructors and records,
 * in a table owned by the document, where each value (and each member's key)
 * starts; after parsing the table is sorted by node address so lookups are a
 * binary search (the address order is used for lookup only, never for output
 * or iteration). Duplicate keys are found with a hash table keyed by
 * (object serial number, key text) that lives only during the parse. The
 * lower half of the file holds the typed readers (strings, booleans, ranged
 * integers, durations, seeds) and the field checks with their "did you mean"
 * suggestions. Every error becomes "file:line:col: message" in the caller's
 * scn_err; line and column are 1-based and the column counts bytes. All
 * memory goes through cJSON_malloc / cJSON_free so tests can inject failures.
 */
#include "scn_json.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SCN__INT_LIMIT 1000000000000000LL   /* 10^15: exact JSON integers stay below this */
#define SCN__MAX_NUMBER_LEN 512             /* longer number literals are rejected */
#define SCN__MAX_FILE_BYTES (64u << 20)      /* scn_doc_load refuses larger files */

/* One node's positions; key is {0,0} for values that are not object members. */
typedef struct {
    const cJSON *node;
    scn_pos val;
    scn_pos key;
} scn__posent;

struct scn_doc {
    cJSON *root;
    char *file;
    scn__posent *pos;   /* sorted by node address */
    size_t npos;
};

/* A key seen in an object during parsing; key == NULL marks an empty slot. */
typedef struct {
    const char *key;    /* owned by the cJSON tree (member->string) */
    uint32_t obj;       /* serial number of the enclosing object */
    uint32_t hash;
    scn_pos kpos;
} scn__keyent;

typedef struct {
    const char *file;
    const unsigned char *s;
    size_t len, i;              /* input and cursor */
    int line;                   /* line of the cursor, 1-based */
    size_t line_start;          /* offset of the first byte of that line */
    scn__posent *pos;
    size_t npos, pos_cap;
    scn__keyent *keys;          /* open addressing, capacity a power of two */
    size_t nkeys, keys_cap;
    uint32_t nobj;              /* objects started so far */
    char *buf;                  /* scratch for decoded strings and numbers */
    size_t buf_len, buf_cap;
    scn_err *err;
} scn__parser;

/* {====================================================================
 * Memory and message helpers
 * ==================================================================== */

/*
 * Returns a new block of new_n elements of elem bytes holding the first old_n
 * elements of old, and frees old; or NULL (old untouched) on failure.
 */
static void *scn__resize(void *old, size_t old_n, size_t new_n, size_t elem)
{
    void *p;
    if (new_n == 0 || new_n > SIZE_MAX / elem)
        return NULL;
    p = cJSON_malloc(new_n * elem);
    if (p == NULL)
        return NULL;
    if (old != NULL) {
        if (old_n > 0)
            memcpy(p, old, old_n * elem);
        cJSON_free(old);
    }
    return p;
}

/* A cJSON_malloc'd copy of s, or NULL. */
static char *scn__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = cJSON_malloc(n);
    if (p != NULL)
        memcpy(p, s, n);
    return p;
}

/* Formats "file:line:col: " (or "file: " without a position) plus the message into err. */
static int scn__verr(scn_err *err, const char *file, scn_pos pos, const char *fmt, va_list ap)
{
    size_t cap = sizeof err->text;
    int n = 0;
    if (err == NULL)
        return -1;
    if (file != NULL && pos.line > 0)
        n = snprintf(err->text, cap, "%s:%d:%d: ", file, pos.line, pos.col);
    else if (file != NULL)
        n = snprintf(err->text, cap, "%s: ", file);
    if (n < 0)
        n = 0;
    if ((size_t)n >= cap)
        n = (int)cap - 1;
    vsnprintf(err->text + n, cap - (size_t)n, fmt, ap);
    return -1;
}

#if defined(__GNUC__)
#define SCN__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define SCN__PRINTF(a, b)
#endif

static int scn__errat(scn_err *err, const scn_doc *d, scn_pos pos, const char *fmt, ...) SCN__PRINTF(4, 5);

/* Formats a message at an explicit position of d; returns -1. */
static int scn__errat(scn_err *err, const scn_doc *d, scn_pos pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    scn__verr(err, d != NULL ? d->file : NULL, pos, fmt, ap);
    va_end(ap);
    return -1;
}

/*
 * Writes s (n bytes) into dst for use inside double quotes in a message:
 * quote and backslash are escaped, control bytes become \u00XX, and text
 * beyond about cap-11 bytes is cut and marked with "...". One step writes
 * at most 6 bytes and the ending 4, so stopping below cap-10 always fits.
 * cap must be at least 16. Returns dst.
 */
static const char *scn__quote(char *dst, size_t cap, const char *s, size_t n)
{
    size_t o = 0, k;
    for (k = 0; k < n && o + 10 < cap; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c == '"' || c == '\\') {
            dst[o++] = '\\';
            dst[o++] = (char)c;
        } else if (c < 0x20 || c == 0x7f) {
            o += (size_t)snprintf(dst + o, cap - o, "\\u%04x", c);
        } else {
            dst[o++] = (char)c;
        }
    }
    if (k < n) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o] = '\0';
    return dst;
}

/* Shortest of %.15g / %.17g that reads back as v. */
static const char *scn__fmt_num(char *dst, size_t cap, double v)
{
    snprintf(dst, cap, "%.15g", v);
    if (strtod(dst, NULL) != v)
        snprintf(dst, cap, "%.17g", v);
    return dst;
}

static int scn__is_digit(int c) { return c >= '0' && c <= '9'; }

static int scn__is_word(int c)
{
    return scn__is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

/* }==================================================================== */

/* {====================================================================
 * Parser: positions, errors, whitespace and comments
 * ==================================================================== */

/* Position of byte offset at, which must lie on the cursor's line. */
static scn_pos scn__here(const scn__parser *p, size_t at)
{
    scn_pos pos;
    size_t col = at - p->line_start + 1;
    pos.line = p->line;
    pos.col = col > (size_t)INT32_MAX ? INT32_MAX : (int)col;
    return pos;
}

static int scn__perr(scn__parser *p, scn_pos pos, const char *fmt, ...) SCN__PRINTF(3, 4);

/* Fills the parser's error at pos; returns -1. */
static int scn__perr(scn__parser *p, scn_pos pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    scn__verr(p->err, p->file, pos, fmt, ap);
    va_end(ap);
    return -1;
}

static int scn__oom(scn__parser *p)
{
    return scn__perr(p, scn__here(p, p->i), "out of memory");
}

/* Byte at the cursor, or -1 at the end of input. */
static int scn__peek(const scn__parser *p)
{
    return p->i < p->len ? p->s[p->i] : -1;
}

/* Skips one comment starting at the '/' under the cursor. */
static int scn__skip_comment(scn__parser *p)
{
    scn_pos start = scn__here(p, p->i);
    int next = p->i + 1 < p->len ? p->s[p->i + 1] : -1;
    if (next == '/') {
        while (p->i < p->len && p->s[p->i] != '\n')
            p->i++;
        return 0;
    }
    if (next != '*')
        return scn__perr(p, start, "expected '//' or '/*' to start a comment");
    p->i += 2;
    for (;;) {
        if (p->i + 1 >= p->len) {
            p->i = p->len;
            return scn__perr(p, start, "unterminated block comment (expected \"*/\")");
        }
        if (p->s[p->i] == '*' && p->s[p->i + 1] == '/') {
            p->i += 2;
            return 0;
        }
        if (p->s[p->i] == '\n') {
            p->line++;
            p->line_start = p->i + 1;
        }
        p->i++;
    }
}

/* Skips whitespace and comments, keeping line and line_start current. */
static int scn__skip_ws(scn__parser *p)
{
    while (p->i < p->len) {
        unsigned char c = p->s[p->i];
        if (c == '\n') {
            p->i++;
            p->line++;
            p->line_start = p->i;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            p->i++;
        } else if (c == '/') {
            if (scn__skip_comment(p) < 0)
                return -1;
        } else {
            break;
        }
    }
    return 0;
}

/* Appends a position record for node. */
static int scn__record(scn__parser *p, const cJSON *node, scn_pos val, scn_pos key)
{
    if (p->npos == p->pos_cap) {
        size_t cap = p->pos_cap ? p->pos_cap * 2 : 64;
        scn__posent *n = scn__resize(p->pos, p->npos, cap, sizeof *n);
        if (n == NULL)
            return scn__oom(p);
        p->pos = n;
        p->pos_cap = cap;
    }
    p->pos[p->npos].node = node;
    p->pos[p->npos].val = val;
    p->pos[p->npos].key = key;
    p->npos++;
    return 0;
}

/* }==================================================================== */

/* {====================================================================
 * Parser: strings
 * ==================================================================== */

/* Appends n bytes to the scratch buffer. */
static int scn__put(scn__parser *p, const void *bytes, size_t n)
{
    if (p->buf_cap - p->buf_len < n) {
        size_t cap = p->buf_cap ? p->buf_cap : 64;
        char *b;
        while (cap - p->buf_len < n) {
            if (cap > SIZE_MAX / 2)
                return scn__oom(p);
            cap *= 2;
        }
        b = scn__resize(p->buf, p->buf_len, cap, 1);
        if (b == NULL)
            return scn__oom(p);
        p->buf = b;
        p->buf_cap = cap;
    }
    memcpy(p->buf + p->buf_len, bytes, n);
    p->buf_len += n;
    return 0;
}

/* Reads 4 hex digits at offset at; returns 0 and the value, or -1. */
static int scn__hex4(const scn__parser *p, size_t at, unsigned *out)
{
    unsigned v = 0;
    size_t k;
    if (at > p->len || p->len - at < 4)
        return -1;
    for (k = 0; k < 4; k++) {
        int c = p->s[at + k];
        if (scn__is_digit(c))
            v = v * 16 + (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v * 16 + (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v = v * 16 + (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

/* Appends code point cp (valid, not a surrogate) as UTF-8. */
static int scn__put_utf8(scn__parser *p, unsigned cp)
{
    unsigned char b[4];
    size_t n;
    if (cp < 0x80) {
        b[0] = (unsigned char)cp;
        n = 1;
    } else if (cp < 0x800) {
        b[0] = (unsigned char)(0xC0 | (cp >> 6));
        b[1] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (cp >> 12));
        b[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        b[0] = (unsigned char)(0xF0 | (cp >> 18));
        b[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        b[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        b[3] = (unsigned char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return scn__put(p, b, n);
}

/* Decodes a \uXXXX escape (and its low surrogate, if any) at the cursor. */
static int scn__uescape(scn__parser *p)
{
    size_t at = p->i;
    unsigned cp, lo;
    if (scn__hex4(p, at + 2, &cp) < 0)
        return scn__perr(p, scn__here(p, at), "invalid \\u escape (expected 4 hex digits)");
    p->i = at + 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return scn__perr(p, scn__here(p, at), "lone surrogate \\u%04X in string", cp);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (p->i + 1 >= p->len || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u'
            || scn__hex4(p, p->i + 2, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF)
            return scn__perr(p, scn__here(p, at), "lone surrogate \\u%04X in string", cp);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        p->i += 6;
    }
    if (cp == 0)
        return scn__perr(p, scn__here(p, at), "\\u0000 is not allowed in strings");
    return scn__put_utf8(p, cp);
}

/* Decodes the escape sequence at the cursor (a backslash) of the string opened at open. */
static int scn__escape(scn__parser *p, size_t open)
{
    static const char map[] = "\"\"\\\\//b\bf\fn\nr\rt\t";
    size_t at = p->i, k;
    int c;
    if (at + 1 >= p->len)
        return scn__perr(p, scn__here(p, open), "unterminated string");
    c = p->s[at + 1];
    if (c == 'u')
        return scn__uescape(p);
    for (k = 0; map[k] != '\0'; k += 2) {
        if (c == map[k]) {
            p->i += 2;
            return scn__put(p, &map[k + 1], 1);
        }
    }
    return scn__perr(p, scn__here(p, at),
                     "invalid escape sequence (expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)");
}

/* Copies one well-formed UTF-8 sequence (shortest form, no surrogates, <= U+10FFFF). */
static int scn__utf8(scn__parser *p)
{
    const unsigned char *s = p->s + p->i;
    size_t left = p->len - p->i, n, k;
    unsigned cp, min;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        n = 2, cp = s[0] & 0x1Fu, min = 0x80;
    } else if ((s[0] & 0xF0) == 0xE0) {
        n = 3, cp = s[0] & 0x0Fu, min = 0x800;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        n = 4, cp = s[0] & 0x07u, min = 0x10000;
    } else {
        return scn__perr(p, scn__here(p, p->i), "invalid UTF-8 in string");
    }
    for (k = 1; k < n; k++) {
        if (k >= left || (s[k] & 0xC0) != 0x80)
            return scn__perr(p, scn__here(p, p->i), "invalid UTF-8 in string");
        cp = (cp << 6) | (s[k] & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return scn__perr(p, scn__here(p, p->i), "invalid UTF-8 in string");
    p->i += n;
    return scn__put(p, s, n);
}

/*
 * Decodes the string whose opening quote is under the cursor into the
 * scratch buffer (NUL-terminated; buf_len excludes the NUL) and moves the
 * cursor past the closing quote. A string may not run past a newline.
 */
static int scn__string(scn__parser *p)
{
    size_t open = p->i++;
    p->buf_len = 0;
    for (;;) {
        int c = scn__peek(p);
        int rc;
        if (c < 0 || c == '\n')
            return scn__perr(p, scn__here(p, open), "unterminated string");
        if (c == '"') {
            p->i++;
            if (scn__put(p, "", 1) < 0)
                return -1;
            p->buf_len--;
            return 0;
        }
        if (c < 0x20)
            return scn__perr(p, scn__here(p, p->i), "control character in string");
        if (c == '\\') {
            rc = scn__escape(p, open);
        } else if (c < 0x80) {
            unsigned char b = (unsigned char)c;
            p->i++;
            rc = scn__put(p, &b, 1);
        } else {
            rc = scn__utf8(p);
        }
        if (rc < 0)
            return -1;
    }
}

/* }==================================================================== */

/* {====================================================================
 * Parser: numbers and literals
 * ==================================================================== */

/* Offset just past the digits starting at k. */
static size_t scn__digits(const scn__parser *p, size_t k)
{
    while (k < p->len && scn__is_digit(p->s[k]))
        k++;
    return k;
}

/*
 * Scans an RFC 8259 number at the cursor. Returns the offset just past it, or
 * 0 if the text there is not a well-formed number followed by a delimiter.
 * *is_int says whether it had neither fraction nor exponent.
 */
static size_t scn__scan_number(const scn__parser *p, int *is_int)
{
    size_t k = p->i, e;
    *is_int = 1;
    if (k < p->len && p->s[k] == '-')
        k++;
    if (k < p->len && p->s[k] == '0')
        k++;
    else if (k < p->len && scn__is_digit(p->s[k]))
        k = scn__digits(p, k);
    else
        return 0;
    if (k < p->len && p->s[k] == '.') {
        *is_int = 0;
        e = scn__digits(p, k + 1);
        if (e == k + 1)
            return 0;
        k = e;
    }
    if (k < p->len && (p->s[k] == 'e' || p->s[k] == 'E')) {
        *is_int = 0;
        k++;
        if (k < p->len && (p->s[k] == '+' || p->s[k] == '-'))
            k++;
        e = scn__digits(p, k);
        if (e == k)
            return 0;
        k = e;
    }
    if (k < p->len && (scn__is_word(p->s[k]) || p->s[k] == '.' || p->s[k] == '+' || p->s[k] == '-'))
        return 0;
    return k;
}

/* Parses the number at the cursor into a new cJSON number. */
static int scn__number(scn__parser *p, cJSON **out)
{
    scn_pos pos = scn__here(p, p->i);
    char q[64];
    int is_int;
    size_t end = scn__scan_number(p, &is_int), n = end - p->i;
    double v;
    if (end == 0)
        return scn__perr(p, pos, "invalid number");
    if (n > SCN__MAX_NUMBER_LEN)
        return scn__perr(p, pos, "invalid number (longer than %d characters)", SCN__MAX_NUMBER_LEN);
    if (is_int && n - (p->s[p->i] == '-') >= 16)
        return scn__perr(p, pos, "number %s cannot be represented exactly (integers must be below 10^15;"
                         " write large values as strings)", scn__quote(q, sizeof q, (const char *)p->s + p->i, n));
    p->buf_len = 0;
    if (scn__put(p, p->s + p->i, n) < 0 || scn__put(p, "", 1) < 0)
        return -1;
    v = strtod(p->buf, NULL);
    if (isinf(v))
        return scn__perr(p, pos, "number %s is out of range", scn__quote(q, sizeof q, p->buf, n));
    *out = cJSON_CreateNumber(v);
    if (*out == NULL)
        return scn__oom(p);
    p->i = end;
    return 0;
}

/* Parses true, false or null at the cursor; any other word is an error. */
static int scn__literal(scn__parser *p, cJSON **out)
{
    size_t at = p->i, k = at, n;
    char q[48];
    while (k < p->len && scn__is_word(p->s[k]))
        k++;
    n = k - at;
    if (n == 4 && memcmp(p->s + at, "true", 4) == 0)
        *out = cJSON_CreateTrue();
    else if (n == 5 && memcmp(p->s + at, "false", 5) == 0)
        *out = cJSON_CreateFalse();
    else if (n == 4 && memcmp(p->s + at, "null", 4) == 0)
        *out = cJSON_CreateNull();
    else
        return scn__perr(p, scn__here(p, at), "invalid literal \"%s\" (expected true, false or null)",
                         scn__quote(q, sizeof q, (const char *)p->s + at, n));
    if (*out == NULL)
        return scn__oom(p);
    p->i = k;
    return 0;
}

/* Parses a string value at the cursor into a new cJSON string. */
static int scn__string_value(scn__parser *p, cJSON **out)
{
    if (scn__string(p) < 0)
        return -1;
    *out = cJSON_CreateString(p->buf);
    return *out == NULL ? scn__oom(p) : 0;
}

/* }==================================================================== */

/* {====================================================================
 * Parser: duplicate keys
 * ==================================================================== */

static uint32_t scn__hash(uint32_t obj, const char *key)
{
    uint32_t h = 2166136261u ^ obj;
    h *= 16777619u;
    for (; *key != '\0'; key++) {
        h ^= (unsigned char)*key;
        h *= 16777619u;
    }
    h ^= h >> 16;   /* FNV's low bits ignore its high bits: mix (murmur3 fmix32) */
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* The slot holding (obj, key), or the empty slot where it would go. */
static scn__keyent *scn__key_slot(scn__keyent *tab, size_t cap, uint32_t obj, const char *key, uint32_t h)
{
    size_t mask = cap - 1, k = h & mask;
    while (tab[k].key != NULL) {
        if (tab[k].hash == h && tab[k].obj == obj && strcmp(tab[k].key, key) == 0)
            return &tab[k];
        k = (k + 1) & mask;
    }
    return &tab[k];
}

/* Doubles the key table (or creates it), rehashing every entry. */
static int scn__key_grow(scn__parser *p)
{
    size_t cap = p->keys_cap ? p->keys_cap * 2 : 64, k;
    scn__keyent *tab = scn__resize(NULL, 0, cap, sizeof *tab);
    if (tab == NULL)
        return scn__oom(p);
    memset(tab, 0, cap * sizeof *tab);
    for (k = 0; k < p->keys_cap; k++) {
        scn__keyent *e = &p->keys[k];
        if (e->key != NULL)
            *scn__key_slot(tab, cap, e->obj, e->key, e->hash) = *e;
    }
    cJSON_free(p->keys);
    p->keys = tab;
    p->keys_cap = cap;
    return 0;
}

/* The first definition of key in object obj, or NULL. */
static const scn__keyent *scn__key_find(const scn__parser *p, uint32_t obj, const char *key)
{
    const scn__keyent *e;
    if (p->keys_cap == 0)
        return NULL;
    e = scn__key_slot(p->keys, p->keys_cap, obj, key, scn__hash(obj, key));
    return e->key != NULL ? e : NULL;
}

/* Remembers key (owned by the tree) of object obj, defined at kpos. */
static int scn__key_add(scn__parser *p, uint32_t obj, const char *key, scn_pos kpos)
{
    uint32_t h = scn__hash(obj, key);
    scn__keyent *e;
    if ((p->nkeys + 1) * 2 > p->keys_cap && scn__key_grow(p) < 0)
        return -1;
    e = scn__key_slot(p->keys, p->keys_cap, obj, key, h);
    e->key = key;
    e->obj = obj;
    e->hash = h;
    e->kpos = kpos;
    p->nkeys++;
    return 0;
}

/* }==================================================================== */

/* {====================================================================
 * Parser: values, arrays and objects
 * ==================================================================== */

static int scn__value(scn__parser *p, int depth, scn_pos kpos, cJSON **out);

/* Consumes the ':' after a key, with whitespace before it. */
static int scn__colon(scn__parser *p)
{
    if (scn__skip_ws(p) < 0)
        return -1;
    if (scn__peek(p) != ':')
        return scn__perr(p, scn__here(p, p->i), "expected ':' after object key");
    p->i++;
    return 0;
}

/* Parses one "key": value member at the cursor and appends it to obj. */
static int scn__member(scn__parser *p, int depth, cJSON *obj, uint32_t id, int first)
{
    scn_pos kpos = scn__here(p, p->i);
    const scn__keyent *dup;
    cJSON *item = NULL;
    char *key, q[96];
    if (scn__peek(p) != '"')
        return scn__perr(p, kpos, first ? "expected a string key or '}'" : "expected a string key");
    if (scn__string(p) < 0)
        return -1;
    dup = scn__key_find(p, id, p->buf);
    if (dup != NULL)
        return scn__perr(p, kpos, "duplicate key \"%s\" (first defined at %d:%d)",
                         scn__quote(q, sizeof q, p->buf, p->buf_len), dup->kpos.line, dup->kpos.col);
    key = scn__strdup(p->buf);
    if (key == NULL)
        return scn__oom(p);
    if (scn__colon(p) < 0 || scn__value(p, depth, kpos, &item) < 0) {
        cJSON_free(key);
        return -1;
    }
    item->string = key;   /* the tree owns it now; cJSON_Delete frees it */
    cJSON_AddItemToArray(obj, item);
    return scn__key_add(p, id, key, kpos);
}

/*
 * After an element or member: consumes ',' (0) or the closing byte (1).
 * Anything else, or a comma directly before the closing byte, is an error.
 */
static int scn__separator(scn__parser *p, int close, const char *what)
{
    scn_pos comma;
    int c;
    if (scn__skip_ws(p) < 0)
        return -1;
    c = scn__peek(p);
    if (c == close) {
        p->i++;
        return 1;
    }
    if (c != ',')
        return scn__perr(p, scn__here(p, p->i), "expected ',' or '%c' after %s", close, what);
    comma = scn__here(p, p->i);
    p->i++;
    if (scn__skip_ws(p) < 0)
        return -1;
    if (scn__peek(p) == close)
        return scn__perr(p, comma, "trailing comma is not allowed");
    return 0;
}

/*
 * Parses the container opened by the byte under the cursor ('{' or '[') at
 * nesting depth depth. Members or elements are handed to scn__member or
 * scn__value; on error the partial container is freed.
 */
static int scn__container(scn__parser *p, int depth, cJSON **out)
{
    int is_obj = p->s[p->i] == '{', close = is_obj ? '}' : ']', rc = 0, first = 1;
    uint32_t id = 0;
    cJSON *c, *item;
    if (depth > SCN_JSON_MAX_DEPTH)
        return scn__perr(p, scn__here(p, p->i), "nesting is too deep (more than %d levels)", SCN_JSON_MAX_DEPTH);
    c = is_obj ? cJSON_CreateObject() : cJSON_CreateArray();
    if (c == NULL)
        return scn__oom(p);
    if (is_obj)
        id = ++p->nobj;
    p->i++;
    if (scn__skip_ws(p) < 0)
        rc = -1;
    else if (scn__peek(p) == close)
        p->i++, rc = 1;
    while (rc == 0) {
        if (is_obj) {
            rc = scn__member(p, depth, c, id, first);
        } else {
            rc = scn__value(p, depth, (scn_pos){0, 0}, &item);
            if (rc == 0)
                cJSON_AddItemToArray(c, item);
        }
        if (rc == 0)
            rc = scn__separator(p, close, is_obj ? "object member" : "array element");
        first = 0;
    }
    if (rc < 0) {
        cJSON_Delete(c);
        return -1;
    }
    *out = c;
    return 0;
}

/*
 * Parses one value after optional whitespace, records its position (and
 * kpos, its key's position, for object members) and returns it in *out,
 * owned by the caller. depth counts the containers around it.
 */
static int scn__value(scn__parser *p, int depth, scn_pos kpos, cJSON **out)
{
    scn_pos pos;
    int c, rc;
    *out = NULL;
    if (scn__skip_ws(p) < 0)
        return -1;
    pos = scn__here(p, p->i);
    c = scn__peek(p);
    if (c == '{' || c == '[')
        rc = scn__container(p, depth + 1, out);
    else if (c == '"')
        rc = scn__string_value(p, out);
    else if (c == '-' || scn__is_digit(c))
        rc = scn__number(p, out);
    else if (c >= 0 && scn__is_word(c))
        rc = scn__literal(p, out);
    else if (c == '\'')
        return scn__perr(p, pos, "expected a value (strings need double quotes)");
    else if (depth == 0 && p->i >= p->len)
        return scn__perr(p, pos, "expected a value: the file is empty (or only whitespace and comments)");
    else
        return scn__perr(p, pos, "expected a value");
    if (rc < 0)
        return -1;
    if (scn__record(p, *out, pos, kpos) < 0) {
        cJSON_Delete(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

/* }==================================================================== */

/* {====================================================================
 * Documents
 * ==================================================================== */

static int scn__cmp_pos(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)((const scn__posent *)a)->node;
    uintptr_t y = (uintptr_t)((const scn__posent *)b)->node;
    return (x > y) - (x < y);
}

/* Wraps a successful parse into a document, taking root and the position table. */
static int scn__finish(scn__parser *p, cJSON *root, scn_doc **out)
{
    scn_doc *d = cJSON_malloc(sizeof *d);
    if (d == NULL)
        return scn__oom(p);
    d->file = scn__strdup(p->file);
    if (d->file == NULL) {
        cJSON_free(d);
        return scn__oom(p);
    }
    qsort(p->pos, p->npos, sizeof *p->pos, scn__cmp_pos);
    d->root = root;
    d->pos = p->pos;
    d->npos = p->npos;
    p->pos = NULL;
    *out = d;
    return 0;
}

int scn_doc_parse(const char *file, const char *text, size_t len, scn_doc **out, scn_err *err)
{
    scn__parser p;
    cJSON *root = NULL;
    scn_doc *d = NULL;
    int rc;
    memset(&p, 0, sizeof p);
    p.file = file != NULL ? file : "<input>";
    p.s = (const unsigned char *)(text != NULL ? text : "");
    p.len = text != NULL ? len : 0;
    p.line = 1;
    p.err = err;
    if (p.len >= 3 && memcmp(p.s, "\xEF\xBB\xBF", 3) == 0)
        p.i = 3;   /* a UTF-8 byte order mark; columns still count its bytes */
    rc = scn__value(&p, 0, (scn_pos){0, 0}, &root);
    if (rc == 0)
        rc = scn__skip_ws(&p);
    if (rc == 0 && p.i < p.len)
        rc = scn__perr(&p, scn__here(&p, p.i), "unexpected trailing content after the document");
    if (rc == 0)
        rc = scn__finish(&p, root, &d);
    if (rc < 0)
        cJSON_Delete(root);
    cJSON_free(p.pos);
    cJSON_free(p.keys);
    cJSON_free(p.buf);
    if (out != NULL)
        *out = d;
    else
        scn_doc_free(d);
    return rc;
}

FILE *scn_fopen_read(const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), fl;
    FILE *f;
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        errno = EISDIR;
        return NULL;
    }
    fl = fcntl(fd, F_GETFL); /* blocking reads again: a pipe's writer may be slow */
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0 || (f = fdopen(fd, "rb")) == NULL) {
        int e = errno;
        close(fd);
        errno = e;
        return NULL;
    }
    return f;
}

/* Reads a whole file into a cJSON_malloc'd buffer; on failure errno says why. */
static int scn__read_file(const char *path, char **text, size_t *len)
{
    FILE *f = scn_fopen_read(path);
    char *buf = NULL, *nb;
    size_t n = 0, cap = 0, got;
    int e = 0;
    if (f == NULL)
        return -1;
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            nb = ncap <= SCN__MAX_FILE_BYTES ? scn__resize(buf, n, ncap, 1) : NULL;
            if (nb == NULL) {
                e = ncap <= SCN__MAX_FILE_BYTES ? ENOMEM : EFBIG;
                break;
            }
            buf = nb;
            cap = ncap;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            e = ferror(f) ? (errno ? errno : EIO) : 0;
            break;
        }
    }
    fclose(f);
    if (e != 0) {
        cJSON_free(buf);
        errno = e;
        return -1;
    }
    *text = buf;
    *len = n;
    return 0;
}

int scn_doc_load(const char *path, scn_doc **out, scn_err *err)
{
    char *text = NULL;
    size_t len = 0;
    int rc;
    *out = NULL;
    if (scn__read_file(path, &text, &len) < 0) {
        scn_pos none = {0, 0};
        return scn__errat(err, NULL, none, "%s: cannot read: %s", path, strerror(errno));
    }
    rc = scn_doc_parse(path, text, len, out, err);
    cJSON_free(text);
    return rc;
}

const cJSON *scn_doc_root(const scn_doc *d)
{
    return d->root;
}

const char *scn_doc_file(const scn_doc *d)
{
    return d->file;
}

/* The position record of node in d, or NULL. */
static const scn__posent *scn__find(const scn_doc *d, const cJSON *node)
{
    scn__posent key;
    if (d == NULL || node == NULL || d->npos == 0)
        return NULL;
    key.node = node;
    return bsearch(&key, d->pos, d->npos, sizeof *d->pos, scn__cmp_pos);
}

scn_pos scn_doc_pos(const scn_doc *d, const cJSON *node)
{
    const scn__posent *e = scn__find(d, node);
    scn_pos none = {0, 0};
    return e != NULL ? e->val : none;
}

scn_pos scn_doc_key_pos(const scn_doc *d, const cJSON *member)
{
    const scn__posent *e = scn__find(d, member);
    scn_pos none = {0, 0};
    return e != NULL ? e->key : none;
}

void scn_doc_free(scn_doc *d)
{
    if (d == NULL)
        return;
    cJSON_Delete(d->root);
    cJSON_free(d->pos);
    cJSON_free(d->file);
    cJSON_free(d);
}

int scn_errf(scn_err *err, const scn_doc *d, const cJSON *node, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    scn__verr(err, d != NULL ? d->file : NULL, scn_doc_pos(d, node), fmt, ap);
    va_end(ap);
    return -1;
}

/* }==================================================================== */

/* {====================================================================
 * Durations and seeds
 * ==================================================================== */

enum { SCN__BAD_SYNTAX = -1, SCN__BAD_FRACTION = -2, SCN__BAD_RANGE = -3 };

/* Microseconds per unit for the unit spelled exactly u, or 0. */
static uint64_t scn__unit_us(const char *u)
{
    static const struct { const char *name; uint64_t us; } units[] = {
        {"us", 1}, {"ms", 1000}, {"s", 1000000}, {"m", 60000000},
        {"h", 3600000000ull}, {"d", 86400000000ull},
    };
    size_t k;
    for (k = 0; k < sizeof units / sizeof units[0]; k++)
        if (strcmp(u, units[k].name) == 0)
            return units[k].us;
    return 0;
}

static uint64_t scn__gcd(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/*
 * Microseconds in the fraction digits frac[0..nf) of one unit of us; must be
 * whole. A fraction has at most 13 significant digits that can be whole
 * (86400000000 = 2^13 * 3^3 * 5^8), so nf is capped before any arithmetic.
 */
static int scn__fraction_us(const char *frac, size_t nf, uint64_t us, uint64_t *out)
{
    uint64_t f = 0, pow = 1, g;
    size_t k;
    while (nf > 0 && frac[nf - 1] == '0')
        nf--;
    if (nf > 13)
        return SCN__BAD_FRACTION;
    for (k = 0; k < nf; k++) {
        f = f * 10 + (uint64_t)(frac[k] - '0');
        pow *= 10;
    }
    g = scn__gcd(us, pow);
    if (f % (pow / g) != 0)
        return SCN__BAD_FRACTION;
    f /= pow / g;
    if (f != 0 && f > (uint64_t)SCN__INT_LIMIT / (us / g))
        return SCN__BAD_RANGE;
    *out = f * (us / g);
    return 0;
}

/* scn_parse_duration with a reason: SCN__BAD_SYNTAX, _FRACTION or _RANGE. */
static int scn__duration(const char *s, int64_t *out_us)
{
    const char *q = s, *frac = q;
    uint64_t whole = 0, us, fus = 0, total;
    size_t nf = 0;
    int rc;
    if (s == NULL || !scn__is_digit(*q))
        return SCN__BAD_SYNTAX;
    for (; scn__is_digit(*q); q++)
        if (whole < (uint64_t)SCN__INT_LIMIT)
            whole = whole * 10 + (uint64_t)(*q - '0');
    if (*q == '.') {
        frac = ++q;
        while (scn__is_digit(*q))
            q++;
        nf = (size_t)(q - frac);
        if (nf == 0)
            return SCN__BAD_SYNTAX;
    }
    us = scn__unit_us(q);
    if (us == 0)
        return SCN__BAD_SYNTAX;
    rc = scn__fraction_us(frac, nf, us, &fus);
    if (rc < 0)
        return rc;
    if (whole > (uint64_t)SCN__INT_LIMIT / us)
        return SCN__BAD_RANGE;
    total = whole * us;
    if (fus >= (uint64_t)SCN__INT_LIMIT - total)
        return SCN__BAD_RANGE;
    *out_us = (int64_t)(total + fus);
    return 0;
}

int scn_parse_duration(const char *s, int64_t *out_us)
{
    return scn__duration(s, out_us) < 0 ? -1 : 0;
}

/* Parses a seed string: 0x + 1..16 hex digits, or decimal digits; -1 syntax, -2 too big. */
static int scn__seed_string(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    unsigned d;
    const char *q = s;
    int hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex)
        q += 2;
    if (*q == '\0')
        return -1;
    for (; *q != '\0'; q++) {
        if (scn__is_digit(*q))
            d = (unsigned)(*q - '0');
        else if (hex && *q >= 'a' && *q <= 'f')
            d = (unsigned)(*q - 'a' + 10);
        else if (hex && *q >= 'A' && *q <= 'F')
            d = (unsigned)(*q - 'A' + 10);
        else
            return -1;
        if (hex ? (v >> 60) != 0 : v > (UINT64_MAX - d) / 10)
            return -2;
        v = hex ? (v << 4) | d : v * 10 + d;
    }
    *out = v;
    return 0;
}

/* }==================================================================== */

/* {====================================================================
 * Typed readers
 * ==================================================================== */

const char *scn_type_name(const cJSON *node)
{
    switch (node != NULL ? node->type & 0xFF : cJSON_Invalid) {
    case cJSON_Object: return "an object";
    case cJSON_Array: return "an array";
    case cJSON_String: return "a string";
    case cJSON_Number: return "a number";
    case cJSON_True: return "true";
    case cJSON_False: return "false";
    case cJSON_NULL: return "null";
    default: return "nothing";
    }
}

/* The member key of obj, or NULL if obj is not an object or has no such key. */
static const cJSON *scn__member_of(const cJSON *obj, const char *key)
{
    if (!cJSON_IsObject(obj) || key == NULL)
        return NULL;
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

int scn_get_string(const scn_doc *d, const cJSON *obj, const char *key, const char **out, scn_err *err)
{
    const cJSON *m = scn__member_of(obj, key);
    if (m == NULL)
        return 1;
    if (!cJSON_IsString(m))
        return scn_errf(err, d, m, "\"%s\": expected a string, found %s", key, scn_type_name(m));
    *out = m->valuestring;
    return 0;
}

int scn_get_bool(const scn_doc *d, const cJSON *obj, const char *key, int *out, scn_err *err)
{
    const cJSON *m = scn__member_of(obj, key);
    if (m == NULL)
        return 1;
    if (!cJSON_IsBool(m))
        return scn_errf(err, d, m, "\"%s\": expected true or false, found %s", key, scn_type_name(m));
    *out = cJSON_IsTrue(m) ? 1 : 0;
    return 0;
}

int scn_get_int(const scn_doc *d, const cJSON *obj, const char *key, int64_t min, int64_t max, int64_t *out, scn_err *err)
{
    const cJSON *m = scn__member_of(obj, key);
    char num[40];
    double v;
    int64_t i;
    if (m == NULL)
        return 1;
    if (!cJSON_IsNumber(m))
        return scn_errf(err, d, m, "\"%s\": expected an integer, found %s", key, scn_type_name(m));
    v = m->valuedouble;
    if (v != floor(v))
        return scn_errf(err, d, m, "\"%s\": expected an integer, found %s", key,
                        scn__fmt_num(num, sizeof num, v));
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) || (i = (int64_t)v) < min || i > max)
        return scn_errf(err, d, m, "\"%s\": %s is out of range (must be between %" PRId64 " and %" PRId64 ")",
                        key, scn__fmt_num(num, sizeof num, v), min, max);
    *out = i;
    return 0;
}

int scn_get_duration(const scn_doc *d, const cJSON *obj, const char *key, int64_t *out_us, scn_err *err)
{
    const cJSON *m = scn__member_of(obj, key);
    char q[96];
    int rc;
    if (m == NULL)
        return 1;
    if (!cJSON_IsString(m))
        return scn_errf(err, d, m, "\"%s\": expected a duration string such as \"150ms\", \"30s\", \"2.5m\", \"7d\"", key);
    rc = scn__duration(m->valuestring, out_us);
    scn__quote(q, sizeof q, m->valuestring, strlen(m->valuestring));
    if (rc == SCN__BAD_FRACTION)
        return scn_errf(err, d, m, "\"%s\": duration \"%s\" is not a whole number of microseconds", key, q);
    if (rc == SCN__BAD_RANGE)
        return scn_errf(err, d, m, "\"%s\": duration \"%s\" is too long (must be below 10^15us, about 31 years)", key, q);
    if (rc < 0)
        return scn_errf(err, d, m, "\"%s\": invalid duration \"%s\"; expected a number and a unit (us, ms, s, m, h, d)"
                        " such as \"150ms\", \"30s\", \"2.5m\", \"7d\"", key, q);
    return 0;
}

int scn_get_seed(const scn_doc *d, const cJSON *obj, const char *key, uint64_t *out, scn_err *err)
{
    const cJSON *m = scn__member_of(obj, key);
    char q[96];
    int rc;
    if (m == NULL)
        return 1;
    if (cJSON_IsNumber(m) && m->valuedouble >= 0 && m->valuedouble < (double)SCN__INT_LIMIT
        && m->valuedouble == floor(m->valuedouble)) {
        *out = (uint64_t)m->valuedouble;
        return 0;
    }
    if (!cJSON_IsString(m))
        return scn_errf(err, d, m, "\"%s\": expected a seed: an integer from 0 below 10^15 or a string such as"
                        " \"0x5f3759df\" or \"12345\"", key);
    rc = scn__seed_string(m->valuestring, out);
    scn__quote(q, sizeof q, m->valuestring, strlen(m->valuestring));
    if (rc == -2)
        return scn_errf(err, d, m, "\"%s\": seed \"%s\" is larger than 2^64-1", key, q);
    if (rc < 0)
        return scn_errf(err, d, m, "\"%s\": invalid seed \"%s\"; expected hex such as \"0x5f3759df\" or"
                        " decimal digits such as \"12345\"", key, q);
    return 0;
}

/* }==================================================================== */

/* {====================================================================
 * Field checks
 * ==================================================================== */

#define SCN__MAX_EDIT_LEN 64

/* Optimal-string-alignment edit distance (adjacent swaps count 1); 99 for long words. */
static int scn__edit_distance(const char *a, const char *b)
{
    int t[SCN__MAX_EDIT_LEN + 1][SCN__MAX_EDIT_LEN + 1];
    size_t la = strlen(a), lb = strlen(b), i, j;
    if (la > SCN__MAX_EDIT_LEN || lb > SCN__MAX_EDIT_LEN)
        return 99;
    for (i = 0; i <= la; i++)
        t[i][0] = (int)i;
    for (j = 0; j <= lb; j++)
        t[0][j] = (int)j;
    for (i = 1; i <= la; i++) {
        for (j = 1; j <= lb; j++) {
            int cost = a[i - 1] != b[j - 1], v = t[i - 1][j - 1] + cost;
            if (t[i - 1][j] + 1 < v)
                v = t[i - 1][j] + 1;
            if (t[i][j - 1] + 1 < v)
                v = t[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && t[i - 2][j - 2] + 1 < v)
                v = t[i - 2][j - 2] + 1;
            t[i][j] = v;
        }
    }
    return t[la][lb];
}

/*
 * The allowed name closest to key: edit distance at most 2 and less than
 * half of key's length (so "x" suggests nothing), smallest distance first,
 * earliest in the list on ties; failing that, the first name that is a
 * prefix of key or has key as a prefix (the shorter one at least 3 bytes).
 */
static const char *scn__suggest(const char *key, const char *const *allowed)
{
    const char *best = NULL;
    size_t lk = strlen(key), k;
    int best_d = 3;
    for (k = 0; allowed[k] != NULL; k++) {
        int dist = scn__edit_distance(key, allowed[k]);
        if (dist < best_d && (size_t)dist * 2 < lk) {
            best = allowed[k];
            best_d = dist;
        }
    }
    for (k = 0; best == NULL && allowed[k] != NULL; k++) {
        size_t la = strlen(allowed[k]), n = la < lk ? la : lk;
        if (n >= 3 && strncmp(key, allowed[k], n) == 0)
            best = allowed[k];
    }
    return best;
}

const char *scn_suggest(const char *key, const char *const *names)
{
    return key && names ? scn__suggest(key, names) : NULL;
}

/* Reports member m of d as an unknown field, with a suggestion or the full list. */
static int scn__unknown_field(const scn_doc *d, const cJSON *m, const char *const *allowed, scn_err *err)
{
    const char *best = scn__suggest(m->string, allowed);
    scn_pos kp = scn_doc_key_pos(d, m);
    char q[96], list[600];
    size_t o = 0, k;
    scn__quote(q, sizeof q, m->string, strlen(m->string));
    if (best != NULL)
        return scn__errat(err, d, kp, "unknown field \"%s\"; did you mean \"%s\"?", q, best);
    if (allowed[0] == NULL)
        return scn__errat(err, d, kp, "unknown field \"%s\"; no fields are allowed here", q);
    list[0] = '\0';
    for (k = 0; allowed[k] != NULL && o < sizeof list; k++) {
        int n = snprintf(list + o, sizeof list - o, "%s%s", k ? ", " : "", allowed[k]);
        o += n > 0 ? (size_t)n : 0;
    }
    return scn__errat(err, d, kp, "unknown field \"%s\"; expected one of: %s", q, list);
}

int scn_check_fields(const scn_doc *d, const cJSON *obj, const char *const *allowed, scn_err *err)
{
    const cJSON *m;
    if (!cJSON_IsObject(obj))
        return scn_errf(err, d, obj, "expected an object, found %s", scn_type_name(obj));
    cJSON_ArrayForEach(m, obj) {
        size_t k;
        for (k = 0; allowed[k] != NULL && strcmp(allowed[k], m->string) != 0; k++)
            ;
        if (allowed[k] == NULL)
            return scn__unknown_field(d, m, allowed, err);
    }
    return 0;
}

int scn_expect_type(const scn_doc *d, const cJSON *node, int cjson_type_mask, const char *what, scn_err *err)
{
    static const struct { int mask; const char *name; } names[] = {
        {cJSON_Object, "an object"}, {cJSON_Array, "an array"}, {cJSON_String, "a string"},
        {cJSON_Number, "a number"}, {cJSON_True | cJSON_False, "a boolean"}, {cJSON_NULL, "null"},
    };
    char want[128];
    size_t o = 0, k;
    if (what == NULL)
        what = "value";
    if (node == NULL)
        return scn_errf(err, d, NULL, "missing \"%s\"", what);
    if ((node->type & 0xFF & cjson_type_mask) != 0)
        return 0;
    want[0] = '\0';
    for (k = 0; k < sizeof names / sizeof names[0]; k++) {
        if ((cjson_type_mask & names[k].mask) != 0) {
            int n = snprintf(want + o, sizeof want - o, "%s%s", o ? " or " : "", names[k].name);
            o += n > 0 && (size_t)n < sizeof want - o ? (size_t)n : 0;
        }
    }
    return scn_errf(err, d, node, "expected %s for \"%s\", found %s", o ? want : "nothing", what,
                    scn_type_name(node));
}

/* }==================================================================== */
