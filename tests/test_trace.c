/*
** test_trace.c: `revenant trace` and facts as a user meets them on the
** command line: the done-when of issue #12 (alarm_set records with values,
** jsonl that parses line by line), the filter grammar and its errors, a
** copy of an example with one fact's expected value changed making `run`
** exit 1 and name the fact (with the nearest records), facts in the JSON
** report and the repro file, and replay's -v / --json / --trace. Runs the
** binary named by $REVENANT (default ./revenant) from the repository root.
*/
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[1 << 20];
static char tmpdir[] = "/tmp/revenant-trace-XXXXXX";

static const char *bin(void) {
  const char *b = getenv("REVENANT");
  return b && *b ? b : "./revenant";
}

/* Runs `revenant ARGS` (stdout and stderr together into out); returns the
** exit status. */
static int rv(const char *fmt, ...) {
  char args[2048], cmd[2400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "%s %s 2>&1", bin(), args);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose(f);
  return buf;
}

/* Writes a copy of example `src` with the first `from` replaced by `to`
** into tmpdir/name; returns its path (static buffer). */
static const char *mutate(const char *src, const char *from, const char *to, const char *name) {
  static char path[256];
  char *text = slurp(src);
  assert_non_null(text);
  char *at = strstr(text, from);
  if (!at) fail_msg("%s has no %s", src, from);
  snprintf(path, sizeof path, "%s/%s", tmpdir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fwrite(text, 1, (size_t)(at - text), f);
  fputs(to, f);
  fputs(at + strlen(from), f);
  fclose(f);
  return path;
}

static int setup(void **st) {
  (void)st;
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **st) {
  char cmd[128];
  (void)st;
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
  return system(cmd) != 0;
}

/* Done-when: the alarm_set records of alarm-wake show their values. */
static void test_trace_text(void **st) {
  (void)st;
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json"), 0);
  assert_non_null(strstr(out, "t=1.000s agent alarm_set at=31.000s\n"));
  assert_non_null(strstr(out, "agent hook_begin fiber=2 pc=8 created_at=1.000s name=\"job\" snapshot={\"pc\":8}\n"));
  assert_non_null(strstr(out, "agent stash fiber=2 pc=2 txn=2 value={\"pc\":2}\n"));
}

/* Done-when: --format jsonl parses line by line. */
static void test_trace_jsonl(void **st) {
  (void)st;
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json --format jsonl"), 0);
  int lines = 0, alarms = 0;
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
    cJSON *o = cJSON_Parse(line);
    if (!o) fail_msg("line %d does not parse: %s", lines + 1, line);
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(o, "index")));
    assert_true(cJSON_IsNumber(cJSON_GetObjectItem(o, "t_us")));
    const cJSON *kind = cJSON_GetObjectItem(o, "kind");
    assert_true(cJSON_IsString(kind));
    if (!strcmp(kind->valuestring, "alarm_set")) {
      assert_true(cJSON_IsNumber(cJSON_GetObjectItem(o, "at_us")));
      assert_string_equal(cJSON_GetObjectItem(o, "actor")->valuestring, "agent");
      alarms++;
    }
    if (!strcmp(kind->valuestring, "hook_begin")) /* JSON fields are embedded */
      assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(o, "snapshot"), "pc")->valueint, 8);
    cJSON_Delete(o);
    lines++;
  }
  assert_true(lines > 50);
  assert_true(alarms >= 2);
}

static void test_trace_filter(void **st) {
  (void)st;
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json --case interval-2s "
                      "--filter 'alarm_* actor=agent from=2s to=8s'"), 0);
  int n = 0;
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"), n++) {
    double t;
    char actor[32], kind[32];
    assert_int_equal(sscanf(line, "t=%lfs %31s %31s", &t, actor, kind), 3);
    assert_true(t >= 2.0 && t <= 8.0);
    assert_string_equal(actor, "agent");
    assert_memory_equal(kind, "alarm_", 6);
  }
  assert_true(n >= 3);
  /* the case by index is the same run */
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json --case 1 --filter 'hook_begin'"), 0);
  assert_non_null(strstr(out, "t=5.000s agent hook_begin"));
  /* a field filter */
  assert_int_equal(rv("trace scenarios/examples/toolrun-stuck-child.json --filter 'toolrun_status status=interrupted'"), 0);
  assert_non_null(strstr(out, "status=interrupted"));
  assert_null(strstr(out, " status=running "));
}

static void test_trace_errors(void **st) {
  (void)st;
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json --filter 'alarm_sett'"), 2);
  assert_non_null(strstr(out, "unknown kind \"alarm_sett\"; did you mean \"alarm_set\"?"));
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json --filter 'actor=nobody'"), 2);
  assert_non_null(strstr(out, "unknown actor \"nobody\""));
  assert_null(strstr(out, "did you mean"));
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json --filter 'actor=agnet'"), 2);
  assert_non_null(strstr(out, "unknown actor \"agnet\"; did you mean \"agent\"? (the scenario's actors)"));
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json --filter 'colour=red'"), 2);
  assert_non_null(strstr(out, "no record kind has a field \"colour\""));
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json --filter 'snapshto=x'"), 2);
  assert_non_null(strstr(out, "field \"snapshto\"; did you mean \"snapshot\"?"));
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json --case nope"), 2);
  assert_non_null(strstr(out, "no case \"nope\""));
  assert_int_equal(rv("trace scenarios/examples/alarm-wake.json --format xml"), 2);
  assert_int_equal(rv("trace --help"), 0);
  assert_non_null(strstr(out, "--filter EXPR"));
  assert_int_equal(rv("--help"), 0);
  assert_non_null(strstr(out, "trace"));
}

/* A copy of an example with one fact's expected value changed fails and
** the report names the fact, quotes it with its line and shows the
** nearest records. */
static void test_changed_fact_fails(void **st) {
  (void)st;
  const char *p = mutate("scenarios/examples/alarm-wake.json", "\"snapshot\": {\"pc\": 8}",
                         "\"snapshot\": {\"pc\": 7}", "alarm-wake.json");
  assert_int_equal(rv("run %s --repro-dir %s", p, tmpdir), 1);
  assert_non_null(strstr(out, "fact \"the hook resumes from the last stash\" failed ("));
  assert_non_null(strstr(out, "alarm-wake.json:"));
  assert_non_null(strstr(out, "\"snapshot\":{\"pc\":7}"));
  assert_non_null(strstr(out, "nearest hook_begin records on agent:"));
  assert_non_null(strstr(out, "snapshot={\"pc\":8}"));

  p = mutate("scenarios/examples/recovery-drop.json", "\"eventually\": {\"actor\": \"resumer\"",
             "\"eventually\": {\"actor\": \"dropper\"", "recovery-drop.json");
  assert_int_equal(rv("run %s --repro-dir %s", p, tmpdir), 1);
  assert_non_null(strstr(out, "fact \"the resumed job finishes\" failed"));
  assert_null(strstr(out, "violation 1")); /* every invariant still holds */

  p = mutate("scenarios/examples/toolrun-stuck-child.json", "\"interrupted\"}, \"rows\": 2",
             "\"interrupted\"}, \"rows\": 1",
             "toolrun-stuck-child.json");
  assert_int_equal(rv("run %s --repro-dir %s", p, tmpdir), 1);
  assert_non_null(strstr(out, "fact \"both rows are terminal at the end\" failed"));
  assert_non_null(strstr(out, "found 2"));
}

/* JSON results carry every fact; the repro file carries the failed ones;
** replay re-runs it with -v, --json and --trace. */
static void test_reports_and_replay(void **st) {
  char json[300], repro[300], tr[300];
  (void)st;
  const char *p = mutate("scenarios/examples/alarm-wake.json", "\"snapshot\": {\"pc\": 8}",
                         "\"snapshot\": {\"pc\": 7}", "alarm-wake2.json");
  snprintf(json, sizeof json, "%s/r.json", tmpdir);
  assert_int_equal(rv("run %s --case interval-30s --json %s --repro-dir %s", p, json, tmpdir), 1);
  cJSON *doc = cJSON_Parse(slurp(json));
  assert_non_null(doc);
  const cJSON *facts = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "runs"), 0), "facts");
  assert_int_equal(cJSON_GetArraySize(facts), 6);
  int failed = 0;
  const cJSON *f;
  cJSON_ArrayForEach(f, facts) {
    if (cJSON_IsTrue(cJSON_GetObjectItem(f, "passed"))) continue;
    failed++;
    assert_string_equal(cJSON_GetObjectItem(f, "name")->valuestring, "the hook resumes from the last stash");
    assert_true(cJSON_GetObjectItem(f, "line")->valueint > 10);
    assert_string_equal(cJSON_GetObjectItem(f, "near")->valuestring, "candidates");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(f, "records")), 1);
  }
  assert_int_equal(failed, 1);
  cJSON_Delete(doc);

  snprintf(repro, sizeof repro, "%s/repro-alarm-wake-interval-30s-0x7.json", tmpdir);
  doc = cJSON_Parse(slurp(repro));
  assert_non_null(doc);
  assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "failed_facts")), 1);
  cJSON_Delete(doc);

  snprintf(json, sizeof json, "%s/replay.json", tmpdir);
  snprintf(tr, sizeof tr, "%s/replay.trace.json", tmpdir);
  assert_int_equal(rv("replay %s -v --json %s --trace %s", repro, json, tr), 0);
  assert_non_null(strstr(out, "REPRODUCED"));
  assert_non_null(strstr(out, "fact \"the hook resumes from the last stash\" failed"));
  doc = cJSON_Parse(slurp(json));
  assert_non_null(doc);
  assert_false(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "runs"), 0), "passed")));
  cJSON_Delete(doc);
  doc = cJSON_Parse(slurp(tr));
  assert_non_null(doc);
  cJSON_Delete(doc);
  assert_int_equal(rv("replay %s --bogus", repro), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trace_text),
      cmocka_unit_test(test_trace_jsonl),
      cmocka_unit_test(test_trace_filter),
      cmocka_unit_test(test_trace_errors),
      cmocka_unit_test(test_changed_fact_fails),
      cmocka_unit_test(test_reports_and_replay),
  };
  return cmocka_run_group_tests_name("trace", tests, setup, teardown) != 0;
}
