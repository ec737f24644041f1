/*
** test_chk_lua.c: user invariants in Lua (checks/chk_lua.c, the
** "invariants" field, scenarios/scn_load_scripts.c): agreement with the
** built-in invariant a script mirrors over 200 swarm seeds, the same
** hashes and verdicts in two processes (this binary re-executes itself
** with --lua-run-child), record tables, errors and budgets, embedded
** scripts in repro files.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checks/chk_lua.h"
#include "scenarios/scn.h"

static char g_dir[64];

static int make_dir(void **st) {
  (void)st;
  snprintf(g_dir, sizeof g_dir, "/tmp/revenant-chklua-XXXXXX");
  return mkdtemp(g_dir) ? 0 : -1;
}

static int remove_dir(void **st) {
  (void)st;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void put(const char *name, const char *text) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void load(const char *path, scn_scenario *sc) {
  char err[1024];
  int rc = scn_load(path, sc, err, sizeof err);
  if (rc) print_message("%s\n", err);
  assert_int_equal(rc, 0);
}

/* Loads g_dir/name; returns scn_load's rc with the error in err. */
static int load_in_dir(const char *name, scn_scenario *sc, char *err, size_t n) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", g_dir, name);
  return scn_load(p, sc, err, n);
}

static uint32_t seen_of(const scn_result *r) {
  uint32_t seen = 0;
  for (size_t i = 0; i < chk_violation_count(r->checks); i++) seen |= 1u << chk_violation_at(r->checks, i)->inv;
  return seen;
}

static const chk_violation *first_of(const scn_result *r, int inv) {
  for (size_t i = 0; i < chk_violation_count(r->checks); i++)
    if ((int)chk_violation_at(r->checks, i)->inv == inv) return chk_violation_at(r->checks, i);
  return NULL;
}

/* ---- agreement with the built-in twin ----------------------------------- */

static void test_twin_agrees_with_effects_once_over_200_seeds(void **st) {
  (void)st;
  scn_scenario *sc = calloc(1, sizeof *sc), *m = calloc(1, sizeof *m);
  assert_non_null(sc);
  assert_non_null(m);
  load("scenarios/examples/lua-effects-once.json", sc);
  int lua = chk_invariant_parse("lua_effects_once");
  assert_true(lua >= CHK_INVARIANT_COUNT);
  int both = 0, neither = 0;
  for (uint64_t seed = 1; seed <= 200; seed++) {
    for (int ci = 0; ci < sc->n_cases; ci++) {
      scn_mix mix;
      scn_result r;
      scn_copy(m, sc);
      scn_swarm_mix(m, seed, &mix);
      assert_int_equal(scn_run_case(m, ci, seed, SIM_RANDOM, &r), 0);
      uint32_t seen = seen_of(&r);
      int b = !!(seen & (1u << CHK_EFFECTS_ONCE)), l = !!(seen & (1u << lua));
      if (b != l) print_message("seed %llu case %d: effects_once %d, lua_effects_once %d\n",
                                (unsigned long long)seed, ci, b, l);
      assert_int_equal(b, l);
      if (b) {
        const chk_violation *vb = first_of(&r, CHK_EFFECTS_ONCE), *vl = first_of(&r, lua);
        assert_int_equal(vb->actor, vl->actor);
        assert_int_equal(vb->t_us, vl->t_us);
        assert_int_equal(vb->n_chain, vl->n_chain);
        assert_memory_equal(vb->chain, vl->chain, (size_t)vb->n_chain * sizeof vb->chain[0]);
        both++;
      } else {
        neither++;
      }
      scn_result_free(&r);
    }
  }
  print_message("# 400 runs: %d with both violated, %d with neither\n", both, neither);
  assert_true(both >= 50);   /* the comparison is not vacuous either way */
  assert_true(neither >= 50);
  scn_free(sc);
  free(sc);
  free(m);
}

/* ---- two processes -------------------------------------------------------- */

/* "hash seen-mask first-message" of every case of file with its seed. */
static void run_summary(const char *file, char *out, size_t cap) {
  scn_scenario *sc = calloc(1, sizeof *sc);
  assert_non_null(sc);
  load(file, sc);
  size_t o = 0;
  out[0] = 0;
  for (int ci = 0; ci < sc->n_cases; ci++) {
    scn_result r;
    assert_int_equal(scn_run_case(sc, ci, sc->seed, sc->strategy, &r), 0);
    const chk_violation *v = NULL; /* the first one of a Lua invariant */
    for (size_t i = 0; !v && i < chk_violation_count(r.checks); i++)
      if ((int)chk_violation_at(r.checks, i)->inv >= CHK_INVARIANT_COUNT) v = chk_violation_at(r.checks, i);
    o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, "%016llx %d", (unsigned long long)r.trace_hash, r.passed);
    for (int k = 0; k < chk_invariant_count(); k++) /* by name: numbers of Lua invariants are per process */
      if (seen_of(&r) & (1u << k)) o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, " %s", chk_invariant_name(k));
    o += (size_t)snprintf(out + o, o < cap ? cap - o : 0, " %s|", v ? v->msg : "-");
    scn_result_free(&r);
  }
  scn_free(sc);
  free(sc);
}

static void child_summary(const char *file, char *out, size_t cap) {
  char exe[512], cmd[900];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  assert_true(n > 0);
  exe[n] = '\0';
  snprintf(cmd, sizeof cmd, "'%s' --lua-run-child '%s'", exe, file);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  assert_non_null(fgets(out, (int)cap, p));
  assert_int_equal(pclose(p), 0);
  out[strcspn(out, "\n")] = 0;
}

static void test_two_processes_same_hashes_and_verdicts(void **st) {
  (void)st;
  static const char *const files[] = {"scenarios/examples/lua-toolruns-settle.json",
                                      "scenarios/examples/lua-sees-last-stash.json"};
  for (size_t i = 0; i < 2; i++) {
    char here[2048], c1[2048], c2[2048];
    run_summary(files[i], here, sizeof here);
    child_summary(files[i], c1, sizeof c1);
    child_summary(files[i], c2, sizeof c2);
    assert_string_equal(c1, here);
    assert_string_equal(c2, here);
    assert_true(strstr(here, "tool run") || strstr(here, "recovery hook")); /* a Lua violation was found */
  }
}

/* ---- record tables ------------------------------------------------------- */

static const char *const records_lua =
    "local n, kinds, bad = 0, {}, nil\n"
    "revenant.invariant('records', {\n"
    "  on_record = function(r)\n"
    "    if r.index ~= n and not bad then bad = 'index ' .. r.index .. ' at record ' .. n end\n"
    "    n = n + 1\n"
    "    kinds[r.kind] = (kinds[r.kind] or 0) + 1\n"
    "    local fields = 0\n"
    "    for k, v in pairs(r) do fields = fields + 1 end\n"
    "    if fields < 3 and not bad then bad = r.kind .. ' has ' .. fields .. ' fields' end\n"
    "    if r.kind == 'toolrun_status' and type(r.status) ~= 'string' and not bad then bad = 'status not a name' end\n"
    "    if r.kind == 'toolrun_insert' and r.child ~= 'helper' and r.child ~= 'stuck' and not bad then bad = 'child' end\n"
    "    if r.kind == 'fiber_start' and type(r.name) ~= 'string' and not bad then bad = 'name' end\n"
    "    if r.kind == 'alarm_done' and type(r.ok) ~= 'boolean' and not bad then bad = 'ok' end\n"
    "    local ok, e = pcall(function() r.kind = 'x' end)\n"
    "    if ok and not bad then bad = 'a record could be written' end\n"
    "  end,\n"
    "  on_finish = function()\n"
    "    local ks = {}\n"
    "    for k, c in pairs(kinds) do ks[#ks + 1] = k end\n"
    "    revenant.violate(string.format('n=%d kinds=%d now=%d %s', n, #ks, revenant.now(), bad or 'ok'))\n"
    "  end,\n"
    "})\n";

/* Replaces the first `from` in text (room for the result) with `to`. */
static void replace(char *text, const char *from, const char *to) {
  char *p = strstr(text, from);
  assert_non_null(p);
  size_t fl = strlen(from), tl = strlen(to);
  memmove(p + tl, p + fl, strlen(p + fl) + 1);
  memcpy(p, to, tl);
}

static void test_records_carry_every_field(void **st) {
  (void)st;
  char text[4096], err[1024];
  put("records.lua", records_lua);
  FILE *f = fopen("scenarios/examples/lua-toolruns-settle.json", "r");
  assert_non_null(f);
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  replace(text, "\"invariants\": [\"lua/toolruns_settle.lua\"]", "\"invariants\": [\"records.lua\"]");
  replace(text, "\"hold\": [\"toolruns_settle\", ", "\"hold\": [");
  replace(text, "\"violate\": [\"toolruns_settle\", ", "\"violate\": [");
  put("records.json", text);
  scn_scenario *sc = calloc(1, sizeof *sc);
  assert_non_null(sc);
  int rc = load_in_dir("records.json", sc, err, sizeof err);
  if (rc) print_message("%s\n", err);
  assert_int_equal(rc, 0);
  scn_result r;
  assert_int_equal(scn_run_case(sc, 1, sc->seed, sc->strategy, &r), 0);
  const chk_violation *v = first_of(&r, chk_invariant_parse("records"));
  assert_non_null(v);
  char want[128];
  snprintf(want, sizeof want, "n=%llu ", (unsigned long long)r.events);
  assert_non_null(strstr(v->msg, want));
  assert_non_null(strstr(v->msg, " now=600000 ok")); /* revenant.now() in ms at the end */
  assert_int_equal(v->at_index, UINT64_MAX);         /* found at the end */
  scn_result_free(&r);
  scn_free(sc);
  free(sc);
}

/* ---- errors ------------------------------------------------------------- */

static const char *const scenario_fmt =
    "{\"name\": \"t\", \"duration\": \"10s\", \"invariants\": \"%s\",\n"
    " \"programs\": {\"job\": [{\"work\": \"100ms\"}, {\"effect\": \"e\"}, {\"stash\": true}]},\n"
    " \"actors\": [{\"id\": \"agent\"}],\n"
    " \"workload\": [{\"fiber\": \"job\", \"actor\": \"agent\", \"at\": \"1s\"}],\n"
    " \"expect\": {\"hold\": [\"%s\"]}}\n";

/* Writes s.lua with script and s.json expecting hold on inv; loads it. */
static int try_script(const char *script, const char *inv, scn_scenario *sc, char *err, size_t n) {
  char text[1024];
  put("s.lua", script);
  snprintf(text, sizeof text, scenario_fmt, "s.lua", inv);
  put("s.json", text);
  return load_in_dir("s.json", sc, err, n);
}

static void expect_load_error(const char *script, const char *inv, const char *want) {
  scn_scenario *sc = calloc(1, sizeof *sc);
  char err[1024];
  assert_non_null(sc);
  int rc = try_script(script, inv, sc, err, sizeof err);
  if (rc == 0 || !strstr(err, want)) print_message("want \"%s\" in: %s\n", want, rc ? err : "(loaded)");
  assert_int_equal(rc, -1);
  assert_non_null(strstr(err, want));
  free(sc);
}

/* Loads, runs the only case, expects a run error containing want (and
** want2 when non-NULL). */
static void expect_run_error(const char *script, const char *want, const char *want2) {
  scn_scenario *sc = calloc(1, sizeof *sc);
  char err[1024];
  assert_non_null(sc);
  int rc = try_script(script, "inv", sc, err, sizeof err);
  if (rc) print_message("%s\n", err);
  assert_int_equal(rc, 0);
  scn_result r;
  rc = scn_run_case(sc, 0, sc->seed, sc->strategy, &r);
  if (rc == 0 || !strstr(r.failure, want)) print_message("want \"%s\" in: %s\n", want, r.failure);
  assert_int_equal(rc, -1);
  assert_non_null(strstr(r.failure, want));
  if (want2) assert_non_null(strstr(r.failure, want2));
  scn_result_free(&r);
  scn_free(sc);
  free(sc);
}

static void test_load_errors(void **st) {
  (void)st;
  char p[300];
  snprintf(p, sizeof p, "%s/s.lua:2:", g_dir);
  expect_load_error("revenant.invariant('inv', {on_record = function(r) end})\nlocal = 1\n", "inv", p);
  expect_load_error("revenant.invariant('inv', {on_record = function(r) end})\n", "inx",
                    "unknown invariant \"inx\"; did you mean \"inv\"?");
  expect_load_error("revenant.invariant('no_wedge', {on_record = function(r) end})\n", "no_wedge",
                    "taken by a built-in invariant");
  expect_load_error("revenant.invariant('inv', {on_recrod = function(r) end})\n", "inv",
                    "unknown field 'on_recrod'");
  expect_load_error("revenant.invariant('inv', {kinds = {'efect'}, on_record = function(r) end})\n", "inv",
                    "unknown record kind \"efect\"");
  /* a set instead of a list filtered nothing (its length is 0: every kind) */
  expect_load_error("revenant.invariant('inv', {kinds = {effect = true}, on_record = function(r) end})\n", "inv",
                    "kinds must be a list of record kinds ({\"effect\", ...}), not a table with other keys");
  expect_load_error("revenant.violate('x')\n", "inv", "call it from on_record or on_finish");
  expect_load_error("while true do end\n", "inv", "instruction budget");
  expect_load_error("os.execute('true')\n", "inv", "os.execute is refused by the revenant sandbox");
  expect_load_error("-- nothing\n", "inv", "register no invariant");
}

static void test_run_errors(void **st) {
  (void)st;
  char p[300];
  snprintf(p, sizeof p, "%s/s.lua:3: card declined", g_dir);
  expect_run_error("revenant.invariant('inv', {kinds = {'effect'}, on_record = function(r)\n"
                   "  local x = 1\n  error('card declined')\nend})\n",
                   p, "stack traceback:");
  expect_run_error("revenant.invariant('inv', {on_record = function(r) while true do end end})\n",
                   "instruction budget of 10000000 exceeded", "invariant inv:");
  expect_run_error("local t = {}\nrevenant.invariant('inv', {on_record = function(r)\n"
                   "  for i = 1, 1e9 do t[#t + 1] = string.rep('x', 1000) .. i end end})\n",
                   "memory cap", NULL);
  expect_run_error("revenant.invariant('inv', {on_record = function(r) r.kind = 'x' end})\n",
                   "trace records are read-only", NULL);
  expect_run_error("revenant.invariant('inv', {on_record = function(r)\n"
                   "  revenant.invariant('more', {on_finish = function() end}) end})\n",
                   "register invariants while the script loads", NULL);
  expect_run_error("revenant.invariant('inv', {on_finish = function() coroutine.yield() end})\n",
                   "on_finish yielded", NULL);
}

/* ---- embedded scripts ---------------------------------------------------- */

static void test_repro_embeds_the_script(void **st) {
  (void)st;
  char err[1024], p[256];
  scn_scenario *sc = calloc(1, sizeof *sc), *b = calloc(1, sizeof *b);
  assert_non_null(sc);
  assert_non_null(b);
  assert_int_equal(try_script("revenant.invariant('inv', {kinds = {'effect'}, on_record = function(r)\n"
                              "  revenant.violate('effect ' .. r.effect, r) end})\n",
                              "inv", sc, err, sizeof err), 0);
  assert_non_null(strstr(sc->source, "\"scripts\":{\"s.lua\":{\"hash\":\"0x"));
  scn_result r1, r2;
  assert_int_equal(scn_run_case(sc, 0, sc->seed, sc->strategy, &r1), 0);
  assert_false(r1.passed);
  /* the script file goes away: the embedded text still runs, anywhere */
  snprintf(p, sizeof p, "%s/s.lua", g_dir);
  assert_int_equal(unlink(p), 0);
  int rc = scn_load_text("/nowhere/repro.json", sc->source, strlen(sc->source), b, err, sizeof err);
  if (rc) print_message("%s\n", err);
  assert_int_equal(rc, 0);
  assert_string_equal(b->note, "");
  assert_int_equal(scn_run_case(b, 0, b->seed, b->strategy, &r2), 0);
  assert_int_equal(r2.trace_hash, r1.trace_hash);
  assert_string_equal(chk_violation_at(r2.checks, 0)->msg, "effect e");
  scn_result_free(&r2);
  scn_free(b);
  /* the file comes back changed: the copy runs and the note says so */
  put("s.lua", "-- changed\n");
  assert_int_equal(scn_load_text("/nowhere/repro.json", sc->source, strlen(sc->source), b, err, sizeof err), 0);
  assert_non_null(strstr(b->note, "changed since this file was written"));
  scn_free(b);
  /* a hand-edited embedded text no longer matches its hash */
  char *t = strdup(sc->source), *e = strstr(t, "effect ");
  assert_non_null(e);
  e[0] = 'E';
  assert_int_equal(scn_load_text("/nowhere/repro.json", t, strlen(t), b, err, sizeof err), -1);
  assert_non_null(strstr(err, "does not match its hash"));
  free(t);
  /* scn_write (swarm and shrink outputs) embeds it as well */
  char *w = scn_write_string(sc);
  assert_non_null(w);
  assert_int_equal(scn_load_text("/nowhere/shrunk.json", w, strlen(w), b, err, sizeof err), 0);
  assert_int_equal(scn_run_case(b, 0, b->seed, b->strategy, &r2), 0);
  assert_int_equal(r2.trace_hash, r1.trace_hash);
  scn_result_free(&r2);
  scn_free(b);
  free(w);
  scn_result_free(&r1);
  scn_free(sc);
  free(sc);
  free(b);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--lua-run-child") == 0) {
    char out[2048];
    run_summary(argv[2], out, sizeof out);
    printf("%s\n", out);
    return 0;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_twin_agrees_with_effects_once_over_200_seeds),
      cmocka_unit_test(test_two_processes_same_hashes_and_verdicts),
      cmocka_unit_test_setup_teardown(test_records_carry_every_field, make_dir, remove_dir),
      cmocka_unit_test_setup_teardown(test_load_errors, make_dir, remove_dir),
      cmocka_unit_test_setup_teardown(test_run_errors, make_dir, remove_dir),
      cmocka_unit_test_setup_teardown(test_repro_embeds_the_script, make_dir, remove_dir),
  };
  return cmocka_run_group_tests_name("chk_lua", tests, NULL, NULL) != 0;
}
