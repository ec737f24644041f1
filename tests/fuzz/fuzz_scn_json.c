/*
 * fuzz_scn_json.c: libFuzzer harness for the scenario JSON reader.
 *
 * Feeds arbitrary bytes to scn_doc_parse. A rejected input must come back
 * with no document and a "fuzz:" message; an accepted one must give every
 * node a position, keys before their values and siblings in source order,
 * must survive the typed readers and field checks, and must reparse after
 * cJSON prints it (the only allowed failure is a double that cJSON prints as
 * a 16+ digit integer) to the same text. Anything else aborts, which libFuzzer
 * reports as a crash; AddressSanitizer catches leaks and memory errors.
 * Build and run: see tests/fuzz/README.md.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../scenarios/scn_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c) do { if (!(c)) abort(); } while (0)

static int pos_before(scn_pos a, scn_pos b)
{
    return a.line < b.line || (a.line == b.line && a.col < b.col);
}

/* Exercises every reader on obj; results only need to be consistent. */
static void read_fields(const scn_doc *d, const cJSON *obj)
{
    static const char *const allowed[] = {"name", "seed", "duration", "workers", "enabled", "actors", NULL};
    const char *s = NULL;
    int64_t i64 = 0;
    uint64_t u64 = 0;
    int b = 0;
    scn_err err;
    err.text[0] = '\0';
    if (scn_check_fields(d, obj, allowed, &err) < 0)
        CHECK(strncmp(err.text, "fuzz:", 5) == 0);
    CHECK(scn_get_string(d, obj, "name", &s, &err) >= -1);
    CHECK(scn_get_seed(d, obj, "seed", &u64, &err) >= -1);
    CHECK(scn_get_duration(d, obj, "duration", &i64, &err) >= -1);
    CHECK(scn_get_int(d, obj, "workers", -5, 5, &i64, &err) >= -1);
    CHECK(scn_get_bool(d, obj, "enabled", &b, &err) >= -1);
    if (scn_get_duration(d, obj, "duration", &i64, &err) == 0)
        CHECK(i64 >= 0 && i64 < 1000000000000000LL);
}

/* Checks positions below node, in source order. */
static void walk(const scn_doc *d, const cJSON *node)
{
    const cJSON *c;
    scn_pos p = scn_doc_pos(d, node), prev = p;
    CHECK(p.line >= 1 && p.col >= 1);
    if (cJSON_IsObject(node))
        read_fields(d, node);
    cJSON_ArrayForEach(c, node) {
        scn_pos cp = scn_doc_pos(d, c), kp = scn_doc_key_pos(d, c);
        CHECK(pos_before(prev, cp));
        if (cJSON_IsObject(node))
            CHECK(kp.line >= 1 && pos_before(prev, kp) && pos_before(kp, cp));
        else
            CHECK(kp.line == 0 && kp.col == 0);
        prev = cp;
        walk(d, c);
    }
}

/* Printing an accepted document and parsing it again must give the same text. */
static void round_trip(const scn_doc *d)
{
    char *once = cJSON_PrintUnformatted(scn_doc_root(d)), *twice;
    scn_doc *d2 = NULL;
    scn_err err;
    if (once == NULL)
        return;
    if (scn_doc_parse("fuzz", once, strlen(once), &d2, &err) != 0) {
        CHECK(strstr(err.text, "cannot be represented exactly") != NULL);
        cJSON_free(once);
        return;
    }
    twice = cJSON_PrintUnformatted(scn_doc_root(d2));
    CHECK(twice != NULL && strcmp(once, twice) == 0);
    cJSON_free(twice);
    cJSON_free(once);
    scn_doc_free(d2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    scn_doc *d = (scn_doc *)&d;
    scn_err err;
    err.text[0] = '\0';
    if (scn_doc_parse("fuzz", (const char *)data, size, &d, &err) != 0) {
        CHECK(d == NULL && strncmp(err.text, "fuzz:", 5) == 0);
        return 0;
    }
    CHECK(d != NULL && scn_doc_root(d) != NULL);
    walk(d, scn_doc_root(d));
    round_trip(d);
    scn_doc_free(d);
    return 0;
}
