/*
** bench_runs.c: one long run's speed and a dense run's memory.
**
** Prints, one figure a line:
**   events_per_s_gated_1595: X events/s   trace events of one run of the
**        #1595 gated case (7 virtual days, in-process, keeping no trace
**        records, as `run -q` does) / its wall time; best of 3
**   events_gated_1595_target_ratio: X     against 5,000,000 events/s
**   max_rss_dense_mb: X MB                max RSS of `./revenant run -q` of
**        a request every 1 ms over 1 virtual day (86.4 M requests)
**   max_rss_dense_target_ratio: X         against 256 MB (<= 1 meets it)
** Run from the repository root after `make` (`make bench` does both).
** Wall-clock time is read here only, to time the benchmark.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scenarios/scn.h"

#define INCIDENT "scenarios/incidents/issue-1595.json"
#define TARGET_EVENTS_PER_S 5000000.0
#define TARGET_RSS_MB 256.0

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double gated_events_per_s(void) {
  scn_scenario sc;
  char err[512];
  if (scn_load(INCIDENT, &sc, err, sizeof err)) {
    fprintf(stderr, "bench_runs: %s\n", err);
    return -1;
  }
  int ci = -1;
  for (int i = 0; i < sc.n_cases; i++)
    if (!strcmp(sc.cases[i].label, "gated")) ci = i;
  double best = -1;
  for (int rep = 0; ci >= 0 && rep < 3; rep++) {
    scn_result res;
    scn_run_opts o = {.lean = 1};
    double t0 = now();
    if (scn_run_case_ex(&sc, ci, sc.seed, sc.strategy, &o, &res)) break;
    double el = now() - t0;
    if (res.events / el > best) best = (double)res.events / el;
    scn_result_free(&res);
  }
  scn_free(&sc);
  return best;
}

/* Max RSS in MB of `./revenant run FILE -q`, or -1. */
static double dense_rss_mb(const char *file) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout)) _exit(127);
    execl("./revenant", "revenant", "run", file, "-q", (char *)NULL);
    _exit(127);
  }
  int st = 0;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) >= 2) return -1;
  return (double)ru.ru_maxrss / 1024.0;
}

int main(void) {
  static const char dense[] =
      "{\"name\": \"dense\", \"duration\": \"1d\", \"actors\": [{\"id\": \"a\"}],\n"
      " \"workload\": [{\"request\": \"a\", \"at\": \"0s\", \"every\": \"1ms\"}],\n"
      " \"cases\": [{\"name\": \"c\", \"expect\": {\"hold\": [\"no_wedge\"]}}]}\n";
  char path[] = "/tmp/revenant-bench-dense-XXXXXX.json";
  if (access("./revenant", X_OK) != 0) {
    fprintf(stderr, "bench_runs: ./revenant not found: run `make` first, from the repository root\n");
    return 1;
  }
  int fd = mkstemps(path, 5);
  if (fd < 0 || write(fd, dense, sizeof dense - 1) != (ssize_t)(sizeof dense - 1)) return 1;
  close(fd);
  double eps = gated_events_per_s();
  double rss = dense_rss_mb(path);
  unlink(path);
  if (eps < 0 || rss < 0) {
    fprintf(stderr, "bench_runs: a run failed\n");
    return 1;
  }
  printf("events_per_s_gated_1595: %.0f events/s\n", eps);
  printf("events_gated_1595_target_ratio: %.3f x\n", eps / TARGET_EVENTS_PER_S);
  printf("max_rss_dense_mb: %.1f MB\n", rss);
  printf("max_rss_dense_target_ratio: %.3f x\n", rss / TARGET_RSS_MB);
  return 0;
}
