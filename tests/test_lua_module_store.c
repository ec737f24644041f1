/*
** test_lua_module_store.c: the process's module store (runtime/rt_lua_modules.c,
** issue #16: its refusals and allocation failures). Each allocation of
** rt_lua_module_keep is failed once through the injection seam
** (rt_inject_target): the call must return NULL with the out-of-memory
** reason and keep nothing, and the same call disarmed must then succeed.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/rt_lua.h"

#define MOD_FILE "runtime/rt_lua_modules.c"

static const rt_lua_module *keep(const char *dir, const char *rel, const char *text, const char *origin,
                                 int embedded, char *err, size_t errlen) {
  return rt_lua_module_keep(dir, rel, text, strlen(text), origin, embedded, err, errlen);
}

/* Missing folder, path or text: refused with a reason, nothing kept. */
static void test_null_arguments_refused(void **st) {
  (void)st;
  char err[128];
  int n = rt_lua_module_count();
  const char *args[3][3] = {{NULL, "a.lua", "x"}, {"/d", NULL, "x"}, {"/d", "a.lua", NULL}};
  for (int i = 0; i < 3; i++) {
    err[0] = '\0';
    assert_null(rt_lua_module_keep(args[i][0], args[i][1], args[i][2], 1, NULL, 0, err, sizeof err));
    assert_string_equal(err, "module: no folder, path or text");
  }
  assert_int_equal(rt_lua_module_count(), n);
  assert_null(rt_lua_module_find(NULL, "a.lua"));
  assert_null(rt_lua_module_find("/d", NULL));
}

/* Too large: refused naming the limit. */
static void test_too_large_refused(void **st) {
  (void)st;
  char err[256];
  size_t len = (size_t)RT_LUA_MODULE_MAX + 1;
  char *big = calloc(1, len + 1);
  assert_non_null(big);
  memset(big, 'a', len);
  int n = rt_lua_module_count();
  assert_null(rt_lua_module_keep("/big", "big.lua", big, len, NULL, 0, err, sizeof err));
  assert_non_null(strstr(err, "big.lua: too large"));
  assert_int_equal(rt_lua_module_count(), n);
  free(big);
}

/* The same text again returns the entry kept; a different text or an
** embedded copy replaces it, and the old index then reads NULL. */
static void test_same_again_and_replace(void **st) {
  (void)st;
  char err[128];
  const rt_lua_module *a = keep("/same", "m.lua", "return 1", "/same/m.lua", 0, err, sizeof err);
  assert_non_null(a);
  int n = rt_lua_module_count();
  assert_ptr_equal(keep("/same", "m.lua", "return 1", "/same/m.lua", 0, err, sizeof err), a);
  assert_int_equal(rt_lua_module_count(), n);
  assert_ptr_equal(rt_lua_module_at(n - 1), a);
  /* same length, other text */
  const rt_lua_module *b = keep("/same", "m.lua", "return 2", NULL, 0, err, sizeof err);
  assert_non_null(b);
  assert_ptr_not_equal(a, b);
  assert_string_equal(b->origin, "");
  assert_null(rt_lua_module_at(n - 1));
  /* same text, embedded */
  const rt_lua_module *c = keep("/same", "m.lua", "return 2", "repro", 1, err, sizeof err);
  assert_non_null(c);
  assert_ptr_not_equal(b, c);
  assert_int_equal(c->embedded, 1);
  assert_ptr_equal(rt_lua_module_find("/same", "m.lua"), c);
  /* other length */
  const rt_lua_module *d = keep("/same", "m.lua", "return 22", NULL, 1, err, sizeof err);
  assert_ptr_equal(rt_lua_module_find("/same", "m.lua"), d);
  assert_null(rt_lua_module_at(-1));
  assert_null(rt_lua_module_at(rt_lua_module_count()));
  assert_int_equal(d->hash, rt_lua_text_hash("return 22", 9));
}

/* Keeps filler modules until the store's array is full (count a power of
** two, at least 16), so that the next keep grows it. */
static void fill_to_boundary(void) {
  char err[128], rel[32];
  int n;
  while ((n = rt_lua_module_count()) < 16 || (n & (n - 1)) != 0) {
    snprintf(rel, sizeof rel, "fill%d.lua", n);
    assert_non_null(keep("/fill", rel, "return 0", NULL, 0, err, sizeof err));
  }
}

/* Every allocation call of a keep that grows the array (counted first)
** fails once: NULL, the out-of-memory reason, nothing kept; the same keep
** disarmed then succeeds. */
static void test_each_allocation_fails_cleanly(void **st) {
  (void)st;
  char err[128], rel[48];
  const rt_inject_site *sites;
  rt_inject_site mine[16];
  int nm = 0, fired = 0;
  fill_to_boundary();
  rt_inject_count();
  assert_non_null(keep("/oom", "count.lua", "return 3", "o", 0, err, sizeof err));
  int ns = rt_inject_sites(&sites);
  rt_inject_off();
  for (int s = 0; s < ns && nm < 16; s++)
    if (!strcmp(sites[s].file, MOD_FILE)) mine[nm++] = sites[s];
  assert_int_equal(nm, 3); /* the array's realloc, the entry's calloc, dup_n's malloc */
  for (int s = 0; s < nm; s++) {
    for (uint64_t nth = 1; nth <= mine[s].calls; nth++) {
      fill_to_boundary();
      int n = rt_lua_module_count();
      snprintf(rel, sizeof rel, "l%d_n%llu.lua", mine[s].line, (unsigned long long)nth);
      err[0] = '\0';
      rt_inject_target(MOD_FILE, mine[s].line, nth);
      const rt_lua_module *m = keep("/oom", rel, "return 4", "o", 0, err, sizeof err);
      int f = rt_inject_fired();
      rt_inject_off();
      assert_true(f);
      fired++;
      assert_null(m);
      assert_non_null(strstr(err, "out of memory keeping the module"));
      assert_int_equal(rt_lua_module_count(), n);
      assert_null(rt_lua_module_find("/oom", rel));
      m = keep("/oom", rel, "return 4", "o", 0, err, sizeof err);
      assert_non_null(m);
      assert_string_equal(m->text, "return 4");
    }
  }
  assert_int_equal(fired, 6); /* realloc 1, calloc 1, malloc 4 */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_null_arguments_refused),
      cmocka_unit_test(test_too_large_refused),
      cmocka_unit_test(test_same_again_and_replace),
      cmocka_unit_test(test_each_allocation_fails_cleanly),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
