/*
** bench_swarm.c: throughput of `revenant swarm` and time of `revenant
** shrink` on the #1595 incident (scenarios/incidents/issue-1595.json),
** measured by running the ./revenant binary (run from the repository root,
** after `make`; `make bench` does both).
**
** Prints, one figure a line:
**   swarm_seeds_per_s: X 1/s            every case of the file, -j 2
**   swarm_seeds_per_s_deferred: X 1/s   the fixed variant only
**   swarm_seeds_per_s_gated: X 1/s      the wedging variant only
**   swarm_seeds_target_ratio: X         against 100 seeds/s
**   swarm_seeds_per_s_1h: X 1/s         every case, runs cut at 1 h (--duration)
**   swarm_seeds_1h_target_ratio: X      against 3,000 seeds/s
**   shrink_seconds: X s                 shrink --case gated
**   shrink_target_ratio: X              against 60 s (<= 1 meets it)
** A seed of the whole file is one run of each of its two cases. The
** analysis of what dominates is in docs/swarm.md ("Performance").
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INCIDENT "scenarios/incidents/issue-1595.json"
#define TARGET_SEEDS_PER_S 100.0     /* issue #18: 7-day #1595, both cases, -j 2 */
#define TARGET_SEEDS_PER_S_1H 3000.0  /* issue #18: the same cut at 1 h */
#define TARGET_SHRINK_S 60.0

static char g_tmp[64];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs ./revenant with argv (NULL-terminated), output discarded; returns
** the wall seconds, or -1 if it could not run or exited with status 2. */
static double run_bin(char *const argv[]) {
  double t0 = now();
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(127);
    execv("./revenant", argv);
    _exit(127);
  }
  int st = 0;
  if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) >= 2) return -1;
  return now() - t0;
}

/* Seeds per second of a swarm over `seeds` seeds of one case (or all),
** runs cut at `duration` (NULL: the scenario's 7 days). */
static double swarm_rate(const char *only_case, const char *duration, int seeds) {
  char n[32], dir[128];
  char *argv[16] = {"revenant", "swarm", INCIDENT, "--seeds", n, "-j", "2", "-q", "--repro-dir", dir};
  int k = 10;
  snprintf(n, sizeof n, "%d", seeds);
  snprintf(dir, sizeof dir, "%s/repro", g_tmp);
  if (only_case) {
    argv[k++] = "--case";
    argv[k++] = (char *)only_case;
  }
  if (duration) {
    argv[k++] = "--duration";
    argv[k++] = (char *)duration;
  }
  argv[k] = NULL;
  double t = run_bin(argv);
  return t > 0 ? seeds / t : -1;
}

static double shrink_seconds(void) {
  char out[128];
  snprintf(out, sizeof out, "%s/shrunk.json", g_tmp);
  char *argv[] = {"revenant", "shrink", INCIDENT, "--case", "gated", "-o", out, NULL};
  return run_bin(argv);
}

int main(void) {
  if (access("./revenant", X_OK) != 0) {
    fprintf(stderr, "bench_swarm: ./revenant not found: run `make` first, from the repository root\n");
    return 1;
  }
  snprintf(g_tmp, sizeof g_tmp, "/tmp/revenant-bench-swarm-XXXXXX");
  if (!mkdtemp(g_tmp)) return 1;
  double all = swarm_rate(NULL, NULL, 40);
  double deferred = swarm_rate("deferred", NULL, 1000);
  double gated = swarm_rate("gated", NULL, 40);
  double hour = swarm_rate(NULL, "1h", 2000);
  double shrink = shrink_seconds();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_tmp);
  if (system(cmd) != 0) fprintf(stderr, "bench_swarm: could not remove %s\n", g_tmp);
  if (all < 0 || deferred < 0 || gated < 0 || hour < 0 || shrink < 0) {
    fprintf(stderr, "bench_swarm: a revenant command failed\n");
    return 1;
  }
  printf("swarm_seeds_per_s: %.1f 1/s\n", all); /* issue-1595, both cases, -j 2 */
  printf("swarm_seeds_per_s_deferred: %.1f 1/s\n", deferred);
  printf("swarm_seeds_per_s_gated: %.1f 1/s\n", gated);
  printf("swarm_seeds_target_ratio: %.4f x\n", all / TARGET_SEEDS_PER_S);
  printf("swarm_seeds_per_s_1h: %.1f 1/s\n", hour); /* both cases, --duration 1h */
  printf("swarm_seeds_1h_target_ratio: %.4f x\n", hour / TARGET_SEEDS_PER_S_1H);
  printf("shrink_seconds: %.2f s\n", shrink); /* issue-1595 --case gated */
  printf("shrink_target_ratio: %.4f x\n", shrink / TARGET_SHRINK_S);
  return 0;
}
