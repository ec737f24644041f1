/*
** test_cron.c: the cron parser of cron schedules (runtime/rt_cron.h).
**
** The expected next times below were computed with the npm package the SDK
** uses, cron-schedule 6.0.0 (packages/agents/package.json: "^6.0.0"), as
** Math.floor(parseCronExpression(e).getNextDate(start).getTime() / 1000)
** under TZ=UTC; the error messages are that package's. They cover ranges,
** steps, lists, names, nicknames, 6-field seconds, weekday 7 = Sunday, the
** day-of-month / day-of-week OR rule, month ends, leap days and expressions
** that never fire.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt_cron.h"

/* 2026-01-01 00:00:00 (a Thursday), +37 s, 2026-02-27 23:59:30,
** 2026-12-31 23:59:59, 2027-06-15 12:34:56 (UTC). */
static const int64_t starts[5] = {1767225600, 1767225637, 1772236770, 1798761599, 1813062896};

static const struct {
  const char *expr;
  int64_t next[5];
} cases[] = {
    {"* * * * *", {1767225660, 1767225660, 1772236800, 1798761600, 1813062900}},
    {"*/15 * * * *", {1767226500, 1767226500, 1772236800, 1798761600, 1813063500}},
    {"0 9 * * 1-5", {1767258000, 1767258000, 1772442000, 1798794000, 1813136400}},
    {"30 2 1,15 * *", {1767234600, 1767234600, 1772332200, 1798770600, 1814409000}},
    {"0 0 13 * 5", {1767312000, 1767312000, 1772755200, 1798761600, 1813276800}},
    {"0 0 29 2 *", {1835395200, 1835395200, 1835395200, 1835395200, 1835395200}},
    {"0 0 * jan,JUL sun", {1767484800, 1767484800, 1783209600, 1798934400, 1814659200}},
    {"5-10/2 0 * * *", {1767225900, 1767225900, 1772237100, 1798761900, 1813104300}},
    {"0 0 31 * *", {1769817600, 1769817600, 1774915200, 1801353600, 1816992000}},
    {"@monthly", {1769904000, 1769904000, 1772323200, 1798761600, 1814400000}},
    {"@weekly", {1767484800, 1767484800, 1772323200, 1798934400, 1813449600}},
    {"@YEARLY", {1798761600, 1798761600, 1798761600, 1798761600, 1830297600}},
    {"@hourly", {1767229200, 1767229200, 1772236800, 1798761600, 1813064400}},
    {"0 0 * * 7", {1767484800, 1767484800, 1772323200, 1798934400, 1813449600}},
    {"10 * * * * *", {1767225610, 1767225670, 1772236810, 1798761610, 1813062910}},
    {"0 12 * * mon-fri", {1767268800, 1767268800, 1772452800, 1798804800, 1813147200}},
    {"5/20 * * * *", {1767225900, 1767225900, 1772237100, 1798761900, 1813064700}},
    {"1-2 * * * *", {1767225660, 1767225660, 1772236860, 1798761660, 1813064460}},
    {"0 0 1-31 * 1", {1767571200, 1767571200, 1772409600, 1799020800, 1813536000}},
    {"0 0 * * 0-7", {1767312000, 1767312000, 1772236800, 1798761600, 1813104000}},
    {"0 0 15 * 0-6", {1768435200, 1768435200, 1773532800, 1799971200, 1815609600}},
    {"0 0 * * sun-sat", {1767312000, 1767312000, 1772236800, 1798761600, 1813104000}},
    {"0 0 * * 7-7", {1767484800, 1767484800, 1772323200, 1798934400, 1813449600}},
    {"0 0 1 */3 *", {1775001600, 1775001600, 1775001600, 1798761600, 1814400000}},
    {"0  0   *  * *", {1767312000, 1767312000, 1772236800, 1798761600, 1813104000}},
    {"0 0 1,15 * mon", {1767571200, 1767571200, 1772323200, 1798761600, 1813536000}},
    {"45 23 * dec *", {1796168700, 1796168700, 1796168700, 1827704700, 1827704700}},
    {"*/7 */5 * * *", {1767226020, 1767226020, 1772236800, 1798761600, 1813071600}},
    {"0 0 29 feb mon", {1769990400, 1769990400, 1801440000, 1801440000, 1833494400}},
};

static const struct {
  const char *expr, *message;
} bad[] = {
    {"* * * *", "Invalid cron expression: expected 5 or 6 elements."},
    {"* * * * * * *", "Invalid cron expression: expected 5 or 6 elements."},
    {"60 * * * *", "Failed to parse 60: 60 is outside of constraint range of 0 - 59."},
    {"* 24 * * *", "Failed to parse 24: 24 is outside of constraint range of 0 - 23."},
    {"* * 0 * *", "Failed to parse 0: 0 is outside of constraint range of 1 - 31."},
    {"* * * 13 *", "Failed to parse 13: 13 is outside of constraint range of 1 - 12."},
    {"* * * * 8", "Failed to parse 8: 8 is outside of constraint range of 0 - 7."},
    {"5-1 * * * *", "Failed to parse 5-1: Invalid range (start: 5, end: 1)."},
    {"*/0 * * * *", "Failed to parse step: Expected 0 to be greater than 0."},
    {"x * * * *", "Failed to parse x: x is NaN."},
    {"* * * foo *", "Failed to parse foo: foo is NaN."},
    {"1,,2 * * * *", "Failed to parse :  is NaN."},
    {"0 0 30 2 *", "No valid next date was found."},
    {"", "Invalid cron expression: expected 5 or 6 elements."},
    {"-1 * * * *", "Failed to parse -1: -1 is outside of constraint range of 0 - 59."},
    {"*/ * * * *", "Failed to parse */: */ is NaN."},
    /* 8 elements: the split stops at the 7th and still refuses */
    {"* * * * * * * *", "Invalid cron expression: expected 5 or 6 elements."},
    /* parseInt saturates; the message shows the element as written */
    {"99999999999 * * * *",
     "Failed to parse 99999999999: 99999999999 is outside of constraint range of 0 - 59."},
    /* a long element: the message quotes it whole, the token cut at 63 */
    {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx * * * *", "Failed to parse xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx is NaN."},
    {"*/x * * * *", "Failed to parse */x: */x is NaN."}, /* a step of letters: no range */
    {"1-x * * * *", "Failed to parse 1-x: x is NaN."},   /* the range's end is bad */
};

static void next_times_match_cron_schedule(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (int k = 0; k < 5; k++) {
      char err[160] = "";
      int64_t got = rt_cron_next_expr(cases[i].expr, starts[k], err, sizeof err);
      if (got != cases[i].next[k])
        print_error("\"%s\" after %lld: got %lld, want %lld (%s)\n", cases[i].expr,
                    (long long)starts[k], (long long)got, (long long)cases[i].next[k], err);
      assert_int_equal(got, cases[i].next[k]);
    }
}

static void bad_expressions_fail_with_the_package_message(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char err[160] = "";
    int64_t got = rt_cron_next_expr(bad[i].expr, starts[0], err, sizeof err);
    if (got != -1) print_error("\"%s\" parsed (%lld)\n", bad[i].expr, (long long)got);
    assert_int_equal(got, -1);
    assert_string_equal(err, bad[i].message);
  }
}

/* Walking a schedule forward: each next time is strictly later, and the
** times of "0 9 * * 1-5" over two weeks are the ten weekday mornings. */
static void successive_times_walk_forward(void **state) {
  rt_cron c;
  char err[160];
  int64_t t = starts[0];
  (void)state;
  assert_int_equal(rt_cron_parse("0 9 * * 1-5", &c, err, sizeof err), 0);
  for (int i = 0; i < 10; i++) {
    int y, mo, d, h, mi, s, wd;
    int64_t n = rt_cron_next(&c, t);
    assert_true(n > t);
    rt_cron_civil(n, &y, &mo, &d, &h, &mi, &s, &wd);
    assert_int_equal(h, 9);
    assert_int_equal(mi, 0);
    assert_true(wd >= 1 && wd <= 5);
    t = n;
  }
  assert_int_equal(t, rt_cron_unix(2026, 1, 14, 9, 0, 0)); /* Jan 1 Thu .. Jan 14 Wed */
}

/* The field sets themselves: a step over a range, names, 7 as Sunday. */
static void fields_parse_to_sets(void **state) {
  rt_cron c;
  char err[160];
  (void)state;
  assert_int_equal(rt_cron_parse("10-20/5 */6 1,15,31 jan-mar,DEC sun,6", &c, err, sizeof err), 0);
  assert_int_equal(c.seconds, 1);
  assert_int_equal(c.minutes, (1ULL << 10) | (1ULL << 15) | (1ULL << 20));
  assert_int_equal(c.hours, (1u << 0) | (1u << 6) | (1u << 12) | (1u << 18));
  assert_int_equal(c.days, (1u << 1) | (1u << 15) | (1u << 31));
  assert_int_equal(c.months, (1u << 1) | (1u << 2) | (1u << 3) | (1u << 12));
  assert_int_equal(c.weekdays, (1u << 0) | (1u << 6));
}

/* Elements outside the range regex are read by parseInt as a whole: blanks
** (a tab: the split is on spaces only) and a sign before the digits, a
** dotted start, a non-numeric step after a range. */
static void parse_int_readings(void **state) {
  rt_cron c;
  char err[160];
  (void)state;
  assert_int_equal(rt_cron_parse("\t5 +7 1.5-3 1-5/x *", &c, err, sizeof err), 0);
  assert_int_equal(c.minutes, 1ULL << 5);
  assert_int_equal(c.hours, 1u << 7);
  assert_int_equal(c.days, 1u << 1);
  assert_int_equal(c.months, 1u << 1);
  assert_int_equal(c.weekdays, 0x7f);
  assert_int_equal(rt_cron_parse("1-a. * * * *", &c, err, sizeof err), 0);
  assert_int_equal(c.minutes, 1ULL << 1);
  assert_int_equal(rt_cron_parse(NULL, &c, err, sizeof err), -1);
  assert_string_equal(err, "Invalid cron expression: must be of type string.");
}

static void civil_round_trip(void **state) {
  (void)state;
  for (int64_t t = -86400LL * 800; t < 86400LL * 365 * 80; t += 86400LL * 37 + 3727) {
    int y, mo, d, h, mi, s, wd;
    rt_cron_civil(t, &y, &mo, &d, &h, &mi, &s, &wd);
    assert_int_equal(rt_cron_unix(y, mo, d, h, mi, s), t);
  }
  { /* before year 0: the era arithmetic rounds toward minus infinity */
    int y, mo, d, h, mi, s, wd;
    int64_t t = rt_cron_unix(-1, 3, 1, 12, 0, 0);
    rt_cron_civil(t, &y, &mo, &d, &h, &mi, &s, &wd);
    assert_int_equal(y, -1);
    assert_int_equal(mo, 3);
    assert_int_equal(d, 1);
    assert_int_equal(h, 12);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(next_times_match_cron_schedule),
      cmocka_unit_test(bad_expressions_fail_with_the_package_message),
      cmocka_unit_test(successive_times_walk_forward),
      cmocka_unit_test(fields_parse_to_sets),
      cmocka_unit_test(civil_round_trip),
      cmocka_unit_test(parse_int_readings),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
