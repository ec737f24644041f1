/*
 * test_scn_json.c: tests for the scenario JSON reading layer (scn_json).
 *
 * Good documents with comments must parse with the right line:column for
 * every value and key; every file in tests/corpus/json_bad/ must fail with
 * exactly the "line:col: message" its manifest (EXPECTED) gives; the typed
 * readers, duration and seed parsing and the "did you mean" field checks are
 * checked with tables; and every allocation failure during a parse is
 * enumerated to show it is reported cleanly and leaks nothing. Run from the
 * repository root (the corpus path is relative to it; SCN_JSON_BAD_DIR
 * overrides it).
 */
#define _POSIX_C_SOURCE 200809L   /* mkstemp, opendir */

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../scenarios/scn_json.h"

#define BAD_DIR "tests/corpus/json_bad"

/* Parses a NUL-terminated string that must be valid. */
static scn_doc *parse_ok(const char *text)
{
    scn_doc *d = NULL;
    scn_err err = {{0}};
    int rc = scn_doc_parse("t.json", text, strlen(text), &d, &err);
    if (rc != 0)
        print_error("unexpected error: %s\n", err.text);
    assert_int_equal(rc, 0);
    assert_non_null(d);
    return d;
}

/* Parses text that must fail with exactly "t.json:" + expect. */
static void parse_bad(const char *text, size_t len, const char *expect)
{
    scn_doc *d = (scn_doc *)1;
    scn_err err = {{0}};
    char want[800];
    assert_int_equal(scn_doc_parse("t.json", text, len, &d, &err), -1);
    assert_null(d);
    snprintf(want, sizeof want, "t.json:%s", expect);
    assert_string_equal(err.text, want);
}

static void assert_pos(scn_pos p, int line, int col)
{
    if (p.line != line || p.col != col)
        print_error("position %d:%d, expected %d:%d\n", p.line, p.col, line, col);
    assert_true(p.line == line && p.col == col);
}

/* ---------------------------------------------------------------- good documents */

static const char good_doc[] =
    "// a scenario\n"                                  /* line 1 */
    "{\n"                                              /* 2 */
    "  /* block\n"                                     /* 3 */
    "     comment */ \"name\": \"r\\u00e9sum\\u00e9 \xe2\x9c\x93\",\n" /* 4 */
    "  \"seed\": \"0x5f3759df\", // trailing comment\n" /* 5 */
    "  \"actors\": [\n"                                /* 6 */
    "    {\"id\": \"a\", \"kind\": \"host\"},\n"       /* 7 */
    "    {\"id\": \"b\",\t\"n\": [1, -0.5e2, null, true, false, {}, []]}\n" /* 8 */
    "  ],\n"                                           /* 9 */
    "  \"big\": 999999999999999, \"emoji\": \"\\ud83d\\ude00\"\n" /* 10 */
    "}\n"
    "/* done */\n";

static void test_good_doc_values(void **state)
{
    scn_doc *d = parse_ok(good_doc);
    const cJSON *root = scn_doc_root(d), *actors, *n;
    (void)state;
    assert_true(cJSON_IsObject(root));
    assert_string_equal(scn_doc_file(d), "t.json");
    assert_string_equal(cJSON_GetObjectItem(root, "name")->valuestring, "r\xc3\xa9sum\xc3\xa9 \xe2\x9c\x93");
    assert_string_equal(cJSON_GetObjectItem(root, "emoji")->valuestring, "\xf0\x9f\x98\x80");
    assert_true(cJSON_GetObjectItem(root, "big")->valuedouble == 999999999999999.0);
    actors = cJSON_GetObjectItem(root, "actors");
    assert_int_equal(cJSON_GetArraySize(actors), 2);
    n = cJSON_GetObjectItem(cJSON_GetArrayItem(actors, 1), "n");
    assert_int_equal(cJSON_GetArraySize(n), 7);
    assert_true(cJSON_GetArrayItem(n, 1)->valuedouble == -50.0);
    assert_true(cJSON_IsNull(cJSON_GetArrayItem(n, 2)));
    assert_true(cJSON_IsTrue(cJSON_GetArrayItem(n, 3)));
    assert_true(cJSON_IsFalse(cJSON_GetArrayItem(n, 4)));
    scn_doc_free(d);
}

static void test_good_doc_positions(void **state)
{
    scn_doc *d = parse_ok(good_doc);
    const cJSON *root = scn_doc_root(d), *name, *actors, *a1, *n, *id;
    (void)state;
    assert_pos(scn_doc_pos(d, root), 2, 1);
    assert_pos(scn_doc_key_pos(d, root), 0, 0);
    name = cJSON_GetObjectItem(root, "name");
    assert_pos(scn_doc_key_pos(d, name), 4, 17);
    assert_pos(scn_doc_pos(d, name), 4, 25);
    assert_pos(scn_doc_key_pos(d, cJSON_GetObjectItem(root, "seed")), 5, 3);
    assert_pos(scn_doc_pos(d, cJSON_GetObjectItem(root, "seed")), 5, 11);
    actors = cJSON_GetObjectItem(root, "actors");
    assert_pos(scn_doc_pos(d, actors), 6, 13);
    assert_pos(scn_doc_pos(d, cJSON_GetArrayItem(actors, 0)), 7, 5);
    assert_pos(scn_doc_key_pos(d, cJSON_GetArrayItem(actors, 0)), 0, 0);
    a1 = cJSON_GetArrayItem(actors, 1);
    id = cJSON_GetObjectItem(a1, "id");
    assert_pos(scn_doc_key_pos(d, id), 8, 6);
    assert_pos(scn_doc_pos(d, id), 8, 12);
    n = cJSON_GetObjectItem(a1, "n");
    assert_pos(scn_doc_key_pos(d, n), 8, 17);   /* after a tab: columns count bytes */
    assert_pos(scn_doc_pos(d, n), 8, 22);
    assert_pos(scn_doc_pos(d, cJSON_GetArrayItem(n, 1)), 8, 26);
    assert_pos(scn_doc_pos(d, cJSON_GetArrayItem(n, 6)), 8, 57);
    assert_pos(scn_doc_pos(d, cJSON_GetObjectItem(root, "emoji")), 10, 36);
    assert_pos(scn_doc_pos(d, NULL), 0, 0);
    assert_pos(scn_doc_pos(NULL, root), 0, 0);
    scn_doc_free(d);
}

static void test_good_edge_cases(void **state)
{
    static const char *ok[] = {
        "0", "-0", "1e300", "-999999999999999", "1.5E-3", "\"\"", "[]", "{}", "null",
        "{\"a\": {\"k\": 1}, \"b\": {\"k\": 2}}",      /* same key in sibling objects */
        "\xef\xbb\xbf{}",                               /* byte order mark */
        "  \r\n\t[1]\r\n// end without newline",
        "{\"\\\"\\\\\\/\\b\\f\\n\\r\\t\": 1}",
        "1e-400",                                       /* underflow to 0 is accepted */
        "1.2345678901234567e16",                        /* not an integer literal */
    };
    size_t k;
    scn_doc *d;
    (void)state;
    for (k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        d = parse_ok(ok[k]);
        scn_doc_free(d);
    }
    /* len bounds the input: bytes after it are never read. */
    assert_int_equal(scn_doc_parse(NULL, "[1,2]xyz", 5, &d, NULL), 0);
    assert_string_equal(scn_doc_file(d), "<input>");
    scn_doc_free(d);
    parse_bad("[1]\0", 4, "1:4: unexpected trailing content after the document");
    parse_bad("\"a\0b\"", 5, "1:3: control character in string");
    parse_bad("{\"a\": 1, \"a\"", 12, "1:10: duplicate key \"a\" (first defined at 1:2)");
    parse_bad("[\"\\", 3, "1:2: unterminated string");
    parse_bad("[\"\\ud800\\u0041\"]", 16, "1:3: lone surrogate \\uD800 in string");
    parse_bad("[\"\xed\xa0\x80\"]", 7, "1:3: invalid UTF-8 in string");
    parse_bad("[\"\xe2\x9c\"]", 6, "1:3: invalid UTF-8 in string");
    parse_bad("/* open", 7, "1:1: unterminated block comment (expected \"*/\")");
    parse_bad("/", 1, "1:1: expected '//' or '/*' to start a comment");
    parse_bad("[1,2", 4, "1:5: expected ',' or ']' after array element");
    parse_bad("-", 1, "1:1: invalid number");
    parse_bad("[1.5.2]", 7, "1:2: invalid number");
    parse_bad("[1000000000000000]", 18, "1:2: number 1000000000000000 cannot be represented exactly "
              "(integers must be below 10^15; write large values as strings)");
}

static void test_nesting_limit(void **state)
{
    char buf[512];
    size_t k;
    scn_doc *d;
    (void)state;
    memset(buf, '[', 100);
    memset(buf + 100, ']', 100);
    buf[200] = '\0';
    d = parse_ok(buf);   /* exactly 100 levels */
    scn_doc_free(d);
    for (k = 0; k < 101; k++)
        memcpy(buf + 5 * k, "{\"a\":", 5);
    strcpy(buf + 5 * k, "1");
    parse_bad(buf, strlen(buf), "1:501: nesting is too deep (more than 100 levels)");
}

static void test_many_keys(void **state)
{
    size_t cap = 64 * 1024, o = 0, k, first = 0;
    char *buf = malloc(cap), want[128];
    (void)state;
    assert_non_null(buf);
    o += (size_t)snprintf(buf + o, cap - o, "{");
    for (k = 0; k < 2000; k++) {
        if (k == 1999)
            first = o;
        o += (size_t)snprintf(buf + o, cap - o, "\"k%zu\": {\"x\": %zu},", k, k);
    }
    snprintf(want, sizeof want, "1:%zu: duplicate key \"k1999\" (first defined at 1:%zu)", o + 1, first + 1);
    o += (size_t)snprintf(buf + o, cap - o, "\"k1999\": 0}");
    parse_bad(buf, o, want);
    strcpy(buf + o - 12, "}");   /* drop the duplicate: 2000 distinct keys, 2000 inner "x" keys */
    scn_doc_free(parse_ok(buf));
    free(buf);
}

/* ---------------------------------------------------------------- bad corpus */

/* A small scenario-like schema so that the corpus can hold semantic mistakes. */
static int mini_schema(const scn_doc *d, scn_err *err)
{
    static const char *const top[] = {"name", "seed", "duration", "workers", "enabled", "actors", NULL};
    static const char *const actor[] = {"id", "kind", NULL};
    const cJSON *root = scn_doc_root(d), *actors, *a;
    const char *s;
    uint64_t seed;
    int64_t i64;
    int b, k = 0;
    char what[32];
    if (scn_check_fields(d, root, top, err) < 0 || scn_get_string(d, root, "name", &s, err) < 0
        || scn_get_seed(d, root, "seed", &seed, err) < 0 || scn_get_duration(d, root, "duration", &i64, err) < 0
        || scn_get_int(d, root, "workers", 1, 64, &i64, err) < 0 || scn_get_bool(d, root, "enabled", &b, err) < 0)
        return -1;
    actors = cJSON_GetObjectItemCaseSensitive(root, "actors");
    if (actors == NULL)
        return 0;
    if (scn_expect_type(d, actors, cJSON_Array, "actors", err) < 0)
        return -1;
    cJSON_ArrayForEach(a, actors) {
        snprintf(what, sizeof what, "actors[%d]", k++);
        if (scn_expect_type(d, a, cJSON_Object, what, err) < 0 || scn_check_fields(d, a, actor, err) < 0)
            return -1;
    }
    return 0;
}

static const char *bad_dir(void)
{
    const char *dir = getenv("SCN_JSON_BAD_DIR");
    return dir != NULL ? dir : BAD_DIR;
}

static int g_quiet;   /* set while deliberately checking wrong expectations */

/*
 * Loads dir/name and checks it fails (to parse, or the mini schema) with
 * exactly "dir/name:" + expect. Returns 0 on a match; otherwise prints why.
 */
static int check_bad_case(const char *dir, const char *name, const char *expect)
{
    char path[512], want[1024];
    scn_doc *d = NULL;
    scn_err err = {{0}};
    int rc;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    snprintf(want, sizeof want, "%s:%s", path, expect);
    rc = scn_doc_load(path, &d, &err);
    if (rc == 0) {
        rc = mini_schema(d, &err);
        scn_doc_free(d);
    }
    if (g_quiet && (rc == 0 || strcmp(err.text, want) != 0))
        return 1;
    if (rc == 0) {
        print_error("%s: accepted, expected \"%s\"\n", name, expect);
        return 1;
    }
    if (strcmp(err.text, want) != 0) {
        print_error("%s:\n   got: %s\n  want: %s\n", name, err.text, want);
        return 1;
    }
    return 0;
}

/* Reads the manifest; calls check_bad_case per entry; returns mismatches (+1 if it cannot read it). */
static int run_manifest(const char *dir, int *cases, char names[][128], int max_names)
{
    char path[512], line[1024];
    int bad = 0;
    FILE *f;
    snprintf(path, sizeof path, "%s/EXPECTED", dir);
    f = fopen(path, "r");
    if (f == NULL) {
        print_error("cannot open %s (run the tests from the repository root)\n", path);
        return 1;
    }
    *cases = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        char *tab = strchr(line, '\t');
        line[strcspn(line, "\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        if (tab == NULL) {
            print_error("EXPECTED: no tab in line \"%s\"\n", line);
            bad++;
            continue;
        }
        *tab = '\0';
        if (*cases < max_names)
            snprintf(names[*cases], 128, "%.127s", line);
        (*cases)++;
        bad += check_bad_case(dir, line, tab + 1);
    }
    fclose(f);
    return bad;
}

/* Counts files in dir (other than EXPECTED and dot files) missing from names. */
static int unlisted_files(const char *dir, char names[][128], int n)
{
    DIR *dh = opendir(dir);
    struct dirent *e;
    int missing = 0, k;
    if (dh == NULL)
        return 1;
    while ((e = readdir(dh)) != NULL) {
        if (e->d_name[0] == '.' || strcmp(e->d_name, "EXPECTED") == 0)
            continue;
        for (k = 0; k < n && strcmp(names[k], e->d_name) != 0; k++)
            ;
        if (k == n) {
            print_error("%s/%s is not listed in EXPECTED\n", dir, e->d_name);
            missing++;
        }
    }
    closedir(dh);
    return missing;
}

static void test_bad_corpus(void **state)
{
    static char names[256][128];
    int cases = 0, bad;
    (void)state;
    bad = run_manifest(bad_dir(), &cases, names, 256);
    assert_int_equal(bad, 0);
    assert_true(cases >= 30 && cases <= 256);
    assert_int_equal(unlisted_files(bad_dir(), names, cases), 0);
}

/* A wrong expectation (wrong column, wrong message, or a file that parses) must be reported. */
static void test_wrong_expectation_is_caught(void **state)
{
    (void)state;
    g_quiet = 1;
    assert_int_equal(check_bad_case(bad_dir(), "empty.json", "1:1: expected a value: the file is empty (or only whitespace and comments)"), 0);
    assert_int_equal(check_bad_case(bad_dir(), "empty.json", "1:2: expected a value"), 1);
    assert_int_equal(check_bad_case(bad_dir(), "leading_zero.json", "1:2: expected a value"), 1);
    assert_int_equal(check_bad_case(bad_dir(), "no_such_file.json", "1:1: expected a value"), 1);
    assert_int_equal(check_bad_case(bad_dir(), "schema_workers_range.json", "1:13: \"workers\": 0 is out of range"), 1);
    g_quiet = 0;
}

/* ---------------------------------------------------------------- durations and seeds */

static void test_parse_duration(void **state)
{
    static const struct { const char *s; int ok; int64_t us; } t[] = {
        {"150ms", 1, 150000}, {"30s", 1, 30000000}, {"2.5m", 1, 150000000}, {"1h", 1, 3600000000LL},
        {"7d", 1, 604800000000LL}, {"250us", 1, 250}, {"0s", 1, 0}, {"0us", 1, 0}, {"1.5ms", 1, 1500},
        {"0.000001s", 1, 1}, {"1.000000s", 1, 1000000}, {"0.5us", 0, 0}, {"0.0000001s", 0, 0},
        {"1.50000000000000000000s", 1, 1500000}, {"0.0000000000001d", 0, 0}, {"0.00000000001d", 0, 0},
        {"0.0000000125d", 1, 1080}, {"0.0001220703125d", 1, 10546875}, {"0.00012207031250000d", 1, 10546875}, {"11574d", 1, 999993600000000LL}, {"11575d", 0, 0},
        {"999999999999999us", 1, 999999999999999LL}, {"1000000000000000us", 0, 0},
        {"99999999999999999999999s", 0, 0}, {"007s", 1, 7000000},
        {"", 0, 0}, {"s", 0, 0}, {"30", 0, 0}, {"30 s", 0, 0}, {" 30s", 0, 0}, {"30S", 0, 0},
        {"-1s", 0, 0}, {"+1s", 0, 0}, {".5s", 0, 0}, {"5.s", 0, 0}, {"1e3ms", 0, 0}, {"1sec", 0, 0},
        {"1m30s", 0, 0}, {"1mss", 0, 0}, {"1ns", 0, 0}, {"1w", 0, 0}, {"1.2.3s", 0, 0},
    };
    size_t k;
    (void)state;
    for (k = 0; k < sizeof t / sizeof t[0]; k++) {
        int64_t us = -7;
        int rc = scn_parse_duration(t[k].s, &us);
        if (rc != (t[k].ok ? 0 : -1) || (t[k].ok && us != t[k].us) || (!t[k].ok && us != -7))
            print_error("duration \"%s\": rc %d us %lld\n", t[k].s, rc, (long long)us);
        assert_int_equal(rc, t[k].ok ? 0 : -1);
        assert_int_equal(us, t[k].ok ? t[k].us : -7);
    }
    assert_int_equal(scn_parse_duration(NULL, NULL), -1);
}

/* Reads "seed" from {"seed": <json>}; returns the reader's result, message in err. */
static int read_seed(const char *json, uint64_t *out, scn_err *err)
{
    scn_doc *d = NULL;
    char text[256];
    int rc;
    snprintf(text, sizeof text, "{\"seed\": %s}", json);
    assert_int_equal(scn_doc_parse("s.json", text, strlen(text), &d, err), 0);
    rc = scn_get_seed(d, scn_doc_root(d), "seed", out, err);
    scn_doc_free(d);
    return rc;
}

static void test_seeds(void **state)
{
    static const struct { const char *json; int rc; uint64_t v; } t[] = {
        {"0", 0, 0}, {"42", 0, 42}, {"999999999999999", 0, 999999999999999ULL},
        {"\"0x5f3759df\"", 0, 0x5f3759dfULL}, {"\"0X5F3759DF\"", 0, 0x5f3759dfULL}, {"\"12345\"", 0, 12345},
        {"\"18446744073709551615\"", 0, UINT64_MAX}, {"\"0xffffffffffffffff\"", 0, UINT64_MAX},
        {"\"0x0000000000000000001\"", 0, 1},
        {"\"18446744073709551616\"", -1, 0}, {"\"0x10000000000000000\"", -1, 0},
        {"-1", -1, 0}, {"1.5", -1, 0}, {"1e15", -1, 0}, {"true", -1, 0}, {"null", -1, 0},
        {"\"\"", -1, 0}, {"\"0x\"", -1, 0}, {"\"-1\"", -1, 0}, {"\" 1\"", -1, 0}, {"\"+1\"", -1, 0},
        {"\"12a\"", -1, 0}, {"\"0x12g\"", -1, 0},
    };
    size_t k;
    scn_err err;
    (void)state;
    for (k = 0; k < sizeof t / sizeof t[0]; k++) {
        uint64_t v = 7;
        int rc = read_seed(t[k].json, &v, &err);
        if (rc != t[k].rc || v != (t[k].rc == 0 ? t[k].v : 7))
            print_error("seed %s: rc %d v %llu\n", t[k].json, rc, (unsigned long long)v);
        assert_int_equal(rc, t[k].rc);
        assert_true(v == (t[k].rc == 0 ? t[k].v : 7));
    }
    assert_int_equal(read_seed("-1", &(uint64_t){0}, &err), -1);
    assert_string_equal(err.text, "s.json:1:10: \"seed\": expected a seed: an integer from 0 below 10^15 or a "
                        "string such as \"0x5f3759df\" or \"12345\"");
}

/* ---------------------------------------------------------------- readers and checks */

static void test_check_fields(void **state)
{
    static const char *const allowed[] = {"name", "seed", "duration", "actors", "expect", NULL};
    static const struct { const char *key; const char *msg; } t[] = {
        {"sede", "did you mean \"seed\"?"}, {"Seed", "did you mean \"seed\"?"},
        {"seeds", "did you mean \"seed\"?"}, {"durtaion", "did you mean \"duration\"?"},
        {"duratoin", "did you mean \"duration\"?"}, {"dur", "did you mean \"duration\"?"},
        {"actor", "did you mean \"actors\"?"}, {"expectations", "did you mean \"expect\"?"},
        {"nmae", "did you mean \"name\"?"},
        {"x", "expected one of: name, seed, duration, actors, expect"},
        {"zz", "expected one of: name, seed, duration, actors, expect"},
        {"workload", "expected one of: name, seed, duration, actors, expect"},
        {"a\"b", "expected one of: name, seed, duration, actors, expect"},
    };
    static const char *const none[] = {NULL};
    size_t k;
    char text[128], want[256];
    scn_err err;
    scn_doc *d;
    (void)state;
    for (k = 0; k < sizeof t / sizeof t[0]; k++) {
        cJSON *key = cJSON_CreateString(t[k].key);
        char *q = cJSON_PrintUnformatted(key);
        snprintf(text, sizeof text, "{\"name\": 1,\n  %s: 2}", q);
        cJSON_free(q);
        cJSON_Delete(key);
        d = parse_ok(text);
        assert_int_equal(scn_check_fields(d, scn_doc_root(d), allowed, &err), -1);
        snprintf(want, sizeof want, "t.json:2:3: unknown field \"%s%s\"; %s",
                 strcmp(t[k].key, "a\"b") == 0 ? "a\\\"" : t[k].key, strcmp(t[k].key, "a\"b") == 0 ? "b" : "",
                 t[k].msg);
        assert_string_equal(err.text, want);
        scn_doc_free(d);
    }
    d = parse_ok("{\"name\": 1, \"seed\": 2}");
    assert_int_equal(scn_check_fields(d, scn_doc_root(d), allowed, &err), 0);
    assert_int_equal(scn_check_fields(d, scn_doc_root(d), none, &err), -1);
    assert_string_equal(err.text, "t.json:1:2: unknown field \"name\"; no fields are allowed here");
    assert_int_equal(scn_check_fields(d, cJSON_GetObjectItem(scn_doc_root(d), "seed"), allowed, &err), -1);
    assert_string_equal(err.text, "t.json:1:21: expected an object, found a number");
    scn_doc_free(d);
}

/* Keys with control bytes are escaped in messages and long ones are cut with "...". */
static void test_long_key_message(void **state)
{
    static const char *const allowed[] = {"a", NULL};
    char text[2048], want[128];
    size_t o = 0, k;
    scn_doc *d;
    scn_err err;
    (void)state;
    o += (size_t)snprintf(text + o, sizeof text - o, "{\"");
    for (k = 0; k < 200; k++)
        o += (size_t)snprintf(text + o, sizeof text - o, "\\u0001");
    snprintf(text + o, sizeof text - o, "\": 1}");
    d = parse_ok(text);
    assert_int_equal(scn_check_fields(d, scn_doc_root(d), allowed, &err), -1);
    snprintf(want, sizeof want, "t.json:1:2: unknown field \"%s", "\\u0001\\u0001");
    assert_memory_equal(err.text, want, strlen(want));
    assert_non_null(strstr(err.text, "\\u0001...\"; expected one of: a"));
    scn_doc_free(d);
}

static void test_readers(void **state)
{
    scn_doc *d = parse_ok("{\"s\": \"x\", \"b\": false, \"i\": 64, \"f\": 2.0, \"n\": -3,\n"
                          " \"d\": \"2.5m\", \"big\": 1e19, \"t\": true}");
    const cJSON *r = scn_doc_root(d);
    const char *s = "untouched";
    int b = 7;
    int64_t i = 7;
    scn_err err;
    (void)state;
    assert_int_equal(scn_get_string(d, r, "s", &s, &err), 0);
    assert_string_equal(s, "x");
    assert_int_equal(scn_get_string(d, r, "missing", &s, &err), 1);
    assert_string_equal(s, "x");
    assert_int_equal(scn_get_string(d, r, "b", &s, &err), -1);
    assert_string_equal(err.text, "t.json:1:17: \"b\": expected a string, found false");
    assert_int_equal(scn_get_bool(d, r, "b", &b, &err), 0);
    assert_int_equal(b, 0);
    assert_int_equal(scn_get_bool(d, r, "t", &b, &err), 0);
    assert_int_equal(b, 1);
    assert_int_equal(scn_get_bool(d, r, "missing", &b, &err), 1);
    assert_int_equal(scn_get_bool(d, r, "i", &b, &err), -1);
    assert_string_equal(err.text, "t.json:1:29: \"i\": expected true or false, found a number");
    assert_int_equal(scn_get_int(d, r, "i", 0, 64, &i, &err), 0);
    assert_int_equal(i, 64);
    assert_int_equal(scn_get_int(d, r, "f", 0, 64, &i, &err), 0);
    assert_int_equal(i, 2);
    assert_int_equal(scn_get_int(d, r, "i", 0, 63, &i, &err), -1);
    assert_string_equal(err.text, "t.json:1:29: \"i\": 64 is out of range (must be between 0 and 63)");
    assert_int_equal(scn_get_int(d, r, "n", -3, -3, &i, &err), 0);
    assert_int_equal(i, -3);
    assert_int_equal(scn_get_int(d, r, "s", 0, 1, &i, &err), -1);
    assert_string_equal(err.text, "t.json:1:7: \"s\": expected an integer, found a string");
    assert_int_equal(scn_get_duration(d, r, "d", &i, &err), 0);
    assert_int_equal(i, 150000000);
    assert_int_equal(scn_get_duration(d, r, "nope", &i, &err), 1);
    assert_int_equal(scn_get_string(d, cJSON_GetObjectItem(r, "s"), "s", &s, &err), 1);
    scn_doc_free(d);
}

static void test_big_int_out_of_int64(void **state)
{
    scn_doc *d = parse_ok("{\"x\": 1e19, \"y\": -1e300}");
    int64_t i = 7;
    scn_err err;
    (void)state;
    assert_int_equal(scn_get_int(d, scn_doc_root(d), "x", INT64_MIN, INT64_MAX, &i, &err), -1);
    assert_string_equal(err.text, "t.json:1:7: \"x\": 1e+19 is out of range (must be between "
                        "-9223372036854775808 and 9223372036854775807)");
    assert_int_equal(scn_get_int(d, scn_doc_root(d), "y", 0, 10, &i, &err), -1);
    assert_string_equal(err.text, "t.json:1:18: \"y\": -1e+300 is out of range (must be between 0 and 10)");
    assert_int_equal(i, 7);
    scn_doc_free(d);
}

static void test_expect_type_and_errf(void **state)
{
    scn_doc *d = parse_ok("{\"actors\": [{}, [], \"s\", 1, true, null]}");
    const cJSON *a = cJSON_GetObjectItem(scn_doc_root(d), "actors");
    scn_err err;
    (void)state;
    assert_int_equal(scn_expect_type(d, cJSON_GetArrayItem(a, 0), cJSON_Object, "actors[0]", &err), 0);
    assert_int_equal(scn_expect_type(d, cJSON_GetArrayItem(a, 4), cJSON_True | cJSON_False, "b", &err), 0);
    assert_int_equal(scn_expect_type(d, cJSON_GetArrayItem(a, 1), cJSON_Object, "actors[1]", &err), -1);
    assert_string_equal(err.text, "t.json:1:17: expected an object for \"actors[1]\", found an array");
    assert_int_equal(scn_expect_type(d, cJSON_GetArrayItem(a, 5), cJSON_String | cJSON_Number, "v", &err), -1);
    assert_string_equal(err.text, "t.json:1:35: expected a string or a number for \"v\", found null");
    assert_int_equal(scn_expect_type(d, NULL, cJSON_Object, "expect", &err), -1);
    assert_string_equal(err.text, "t.json: missing \"expect\"");
    assert_int_equal(scn_errf(&err, d, a, "custom %d", 5), -1);
    assert_string_equal(err.text, "t.json:1:12: custom 5");
    assert_int_equal(scn_errf(&err, NULL, a, "bare"), -1);
    assert_string_equal(err.text, "bare");
    assert_int_equal(scn_errf(NULL, d, a, "nowhere"), -1);
    scn_doc_free(d);
}

static void test_load(void **state)
{
    char path[] = "/tmp/test_scn_json_XXXXXX";
    int fd = mkstemp(path);
    scn_doc *d = (scn_doc *)1;
    scn_err err;
    (void)state;
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "{\"a\": [1,\n 2]}", 14), 14);
    close(fd);
    assert_int_equal(scn_doc_load(path, &d, &err), 0);
    assert_string_equal(scn_doc_file(d), path);
    assert_pos(scn_doc_pos(d, cJSON_GetArrayItem(cJSON_GetObjectItem(scn_doc_root(d), "a"), 1)), 2, 2);
    scn_doc_free(d);
    unlink(path);
    assert_int_equal(scn_doc_load("/nonexistent/x.json", &d, &err), -1);
    assert_null(d);
    assert_string_equal(err.text, "/nonexistent/x.json: cannot read: No such file or directory");
    assert_int_equal(scn_doc_load("/tmp", &d, &err), -1);
    assert_string_equal(err.text, "/tmp: cannot read: Is a directory");
}

/* ---------------------------------------------------------------- allocation failures */

static long g_allocs, g_frees, g_fail_at;

static void *count_malloc(size_t n)
{
    if (g_fail_at >= 0 && g_allocs >= g_fail_at)
        return NULL;
    g_allocs++;
    return malloc(n);
}

static void count_free(void *p)
{
    if (p != NULL)
        g_frees++;
    free(p);
}

static void test_out_of_memory(void **state)
{
    cJSON_Hooks hooks = {count_malloc, count_free};
    long n;
    scn_err err;
    scn_doc *d;
    int rc = -1;
    (void)state;
    cJSON_InitHooks(&hooks);
    for (n = 0; n < 10000 && rc != 0; n++) {
        g_allocs = g_frees = 0;
        g_fail_at = n;
        rc = scn_doc_parse("m.json", good_doc, strlen(good_doc), &d, &err);
        if (rc != 0) {
            assert_null(d);
            assert_non_null(strstr(err.text, ": out of memory"));
        }
        scn_doc_free(d);
        assert_int_equal(g_allocs, g_frees);
    }
    cJSON_InitHooks(NULL);
    print_message("allocation points: %ld\n", n - 1);
    assert_int_equal(rc, 0);
    assert_true(n > 30);   /* every one of the n-1 allocation points failed cleanly */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_doc_values),
        cmocka_unit_test(test_good_doc_positions),
        cmocka_unit_test(test_good_edge_cases),
        cmocka_unit_test(test_nesting_limit),
        cmocka_unit_test(test_many_keys),
        cmocka_unit_test(test_bad_corpus),
        cmocka_unit_test(test_wrong_expectation_is_caught),
        cmocka_unit_test(test_parse_duration),
        cmocka_unit_test(test_seeds),
        cmocka_unit_test(test_check_fields),
        cmocka_unit_test(test_long_key_message),
        cmocka_unit_test(test_readers),
        cmocka_unit_test(test_big_int_out_of_int64),
        cmocka_unit_test(test_expect_type_and_errf),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_out_of_memory),
    };
    return cmocka_run_group_tests_name("scn_json", tests, NULL, NULL) != 0;
}
