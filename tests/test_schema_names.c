/*
** test_schema_names.c: the trace vocabulary's names (runtime/rt_schema.c,
** rt_names.c), which `revenant trace`, facts and the HTML report print and
** parse (issue #16 item 7: names no other test printed). Every value an
** enum field can hold has a name that parses back to that value; the type
** words of the field types are distinct; the thread store's names are the
** words the scenario file uses.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_schema.h"

/* Every enum type names at least one value, and each name parses back. */
static void test_enum_names_round_trip(void **st) {
  (void)st;
  for (int t = 0; t < RT_F_TYPE_COUNT; t++) {
    if (!rt_schema_is_enum((rt_ftype)t)) {
      assert_null(rt_schema_enum_name((rt_ftype)t, 0));
      continue;
    }
    int named = 0;
    for (int64_t v = -1; v < 40; v++) {
      const char *n = rt_schema_enum_name((rt_ftype)t, v);
      if (!n) continue;
      int64_t back = -99;
      assert_int_equal(rt_schema_enum_value((rt_ftype)t, n, &back), 0);
      assert_true(back == v);
      named++;
    }
    assert_true(named >= 2);
    int64_t x;
    assert_int_equal(rt_schema_enum_value((rt_ftype)t, "no-such-name", &x), -1);
    assert_null(rt_schema_enum_name((rt_ftype)t, 5000000)); /* out of any range */
  }
  assert_string_equal(rt_schema_enum_name(RT_F_RUNSTATE, RT_RUN_SUPPRESSED), "finish_suppressed");
}

static void test_type_words(void **st) {
  (void)st;
  const rt_ftype plain[] = {RT_F_INT, RT_F_US, RT_F_AT, RT_F_BOOL, RT_F_ACTOR, RT_F_STR, RT_F_JSON};
  const char *words[7];
  for (int i = 0; i < 7; i++) {
    words[i] = rt_schema_type_word(plain[i]);
    assert_true(words[i][0] != '\0');
    assert_string_not_equal(words[i], "name");
    for (int j = 0; j < i; j++) assert_string_not_equal(words[i], words[j]);
  }
  assert_string_equal(rt_schema_type_word(RT_F_DEATH), "name");
  assert_string_equal(rt_schema_type_word(RT_F_TRATTACH), "name");
}

static void test_thread_names(void **st) {
  (void)st;
  assert_string_equal(rt_thread_store_name(RT_THREAD_VERSIONED), "versioned");
  assert_string_equal(rt_thread_store_name(RT_THREAD_BROKEN), "broken");
  assert_string_equal(rt_thread_store_name(RT_THREAD_LEAKY), "leaky");
  assert_non_null(rt_thread_scope_name(RT_SCOPE_RUN));
  assert_string_not_equal(rt_thread_scope_name(RT_SCOPE_RUN), rt_thread_scope_name(RT_SCOPE_THREAD));
  assert_non_null(rt_thread_scope_name(RT_SCOPE_TOOL_CALL));
  assert_non_null(rt_thread_run_state_name(RT_RUN_FINISHED));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_enum_names_round_trip),
      cmocka_unit_test(test_type_words),
      cmocka_unit_test(test_thread_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
