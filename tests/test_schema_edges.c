/*
** test_schema_edges.c: the edges of the record and table schema
** (runtime/rt_schema.c, issue #16): kinds out of range read the unknown
** fields, missing or too long names are refused, the "_us" loose lookup,
** enum names out of range, and enum lists cut to their buffer.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_schema.h"

/* No kind and kinds past the last read the same unknown field list. */
static void test_kinds_out_of_range(void **st) {
  (void)st;
  const rt_field *none = rt_schema_fields(RT_EV_NONE);
  assert_ptr_equal(none, rt_schema_fields(RT_EV_KIND_COUNT));
  assert_ptr_equal(none, rt_schema_fields(0xffffffffu));
  assert_ptr_not_equal(none, rt_schema_fields(RT_EV_SCHEDULE_EFFECT));
  assert_string_equal(none[0].key, "a");
  assert_int_equal(rt_schema_slot(RT_EV_NONE, "s2"), 4);
  assert_int_equal(rt_schema_kind(NULL), -1);
  assert_int_equal(rt_schema_kind("no_such_record"), -1);
  assert_int_equal(rt_schema_kind(rt_event_name(RT_EV_SCHEDULE_EFFECT)), RT_EV_SCHEDULE_EFFECT);
  assert_int_equal(rt_schema_slot(RT_EV_SCHEDULE_EFFECT, NULL), -1);
}

/* "at" finds "at_us" (a time); a key found as is wins; missing, NULL and
** too long keys give -1; "_us" after a key that is not a time is refused. */
static void test_slot_loose(void **st) {
  (void)st;
  uint32_t k = RT_EV_SCHEDULE_EFFECT;
  int at = rt_schema_slot(k, "at_us");
  assert_true(at >= 0);
  assert_int_equal(rt_schema_slot_loose(k, "at"), at);
  assert_int_equal(rt_schema_slot_loose(k, "at_us"), at);
  assert_int_equal(rt_schema_slot_loose(k, "schedule"), rt_schema_slot(k, "schedule"));
  assert_int_equal(rt_schema_slot_loose(k, NULL), -1);
  assert_int_equal(rt_schema_slot_loose(k, "nothing"), -1);
  assert_int_equal(rt_schema_slot_loose(k, "a_key_long_enough_to_overflow_with_us"), -1);
  /* every kind: a loose hit on key+"_us" is always a duration or a time */
  for (uint32_t kind = 1; kind < RT_EV_KIND_COUNT; kind++) {
    const rt_field *f = rt_schema_fields(kind);
    for (int i = 0; i < RT_FIELDS; i++) {
      size_t n = f[i].key ? strlen(f[i].key) : 0;
      if (n > 3 && !strcmp(f[i].key + n - 3, "_us")) {
        char base[40];
        memcpy(base, f[i].key, n - 3);
        base[n - 3] = '\0';
        int want = (f[i].type == RT_F_US || f[i].type == RT_F_AT) ? i : -1;
        if (rt_schema_slot(kind, base) < 0) assert_int_equal(rt_schema_slot_loose(kind, base), want);
      }
    }
  }
}

/* Enum values out of range have no name; names round trip; lists cut. */
static void test_enum_edges(void **st) {
  (void)st;
  int64_t v = -7;
  assert_null(rt_schema_enum_name(RT_F_SOURCE, 0));
  assert_string_equal(rt_schema_enum_name(RT_F_SOURCE, 1), "startup");
  assert_null(rt_schema_enum_name(RT_F_SOURCE, 3));
  assert_null(rt_schema_enum_name(RT_F_OUTCOME, -1));
  assert_string_equal(rt_schema_enum_name(RT_F_PHASE, 2), "joined");
  assert_null(rt_schema_enum_name(RT_F_DEATH, 5000000000LL));
  assert_null(rt_schema_enum_name(RT_F_DEATH, -5000000000LL));
  assert_null(rt_schema_enum_name(RT_F_INT, 1));
  assert_int_equal(rt_schema_enum_value(RT_F_OUTCOME, "failed", &v), 0);
  assert_int_equal(v, 3);
  v = -7;
  assert_int_equal(rt_schema_enum_value(RT_F_OUTCOME, NULL, &v), -1);
  assert_int_equal(rt_schema_enum_value(RT_F_OUTCOME, "nope", &v), -1);
  assert_int_equal(v, -7);
  char buf[64];
  memset(buf, 'z', sizeof buf);
  rt_schema_enum_list(RT_F_PHASE, buf, 0);
  assert_int_equal(buf[0], 'z'); /* no room: untouched */
  rt_schema_enum_list(RT_F_PHASE, buf, 8);
  assert_string_equal(buf, "end, be");
  rt_schema_enum_list(RT_F_PHASE, buf, (int)sizeof buf);
  assert_string_equal(buf, "end, begin, joined");
  rt_schema_enum_list(RT_F_INT, buf, (int)sizeof buf);
  assert_string_equal(buf, "");
}

/* Table indexes out of range and missing names. */
static void test_tables_out_of_range(void **st) {
  (void)st;
  int n = rt_schema_table_count();
  assert_true(n > 0);
  assert_null(rt_schema_table_name(-1));
  assert_null(rt_schema_table_name(n));
  assert_non_null(rt_schema_table_name(n - 1));
  assert_null(rt_schema_columns(-1));
  assert_null(rt_schema_columns(n));
  assert_non_null(rt_schema_columns(0));
  assert_int_equal(rt_schema_table(NULL), -1);
  assert_int_equal(rt_schema_table(rt_schema_table_name(n - 1)), n - 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kinds_out_of_range),
      cmocka_unit_test(test_slot_loose),
      cmocka_unit_test(test_enum_edges),
      cmocka_unit_test(test_tables_out_of_range),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
