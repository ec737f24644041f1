/*
** bench_memory.c: the memory of long seed ranges (issue #17 item 4): the
** maximum resident set of `revenant run --seeds` with every streamed report
** (--json, --junit) over 2,000 and 20,000 seeds, and of `revenant swarm`
** over 20,000 seeds. A streamed run keeps nothing per seed, so the 20k and
** 2k figures should be about equal (the ratio near 1; before the streaming
** reports, 20,000 seeds took 456 MB and then crashed).
**
** Prints, one figure a line:
**   max_rss_run_seeds_2k_mb: X MB
**   max_rss_run_seeds_20k_mb: X MB
**   run_seeds_rss_growth_ratio: X x     20k / 2k
**   run_seeds_rss_target_ratio: X x     the growth against 1.5 (<= 1 meets it)
**   max_rss_swarm_20k_mb: X MB          the parent process, -j 2
** Run from the repository root after `make` (`make bench` does both).
*/
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define SCN "tests/corpus/cli/passing.json"

/* Runs ./revenant argv with output discarded; returns the child's maximum
** resident set in MB, or -1 if it could not run or exited with status >= 2. */
static double max_rss_mb(char *const argv[]) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(127);
    execv("./revenant", argv);
    _exit(127);
  }
  int st = 0;
  struct rusage ru;
  if (wait4(pid, &st, 0, &ru) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) >= 2) return -1;
  return (double)ru.ru_maxrss / 1024.0;
}

int main(void) {
  if (access("./revenant", X_OK) != 0) {
    fprintf(stderr, "bench_memory: ./revenant not found: run `make` first, from the repository root\n");
    return 1;
  }
  char *run2k[] = {"revenant", "run", SCN, "--seeds", "1..2000", "-q", "--json", "/dev/null",
                   "--junit", "/dev/null", NULL};
  char *run20k[] = {"revenant", "run", SCN, "--seeds", "1..20000", "-q", "--json", "/dev/null",
                    "--junit", "/dev/null", NULL};
  char *swarm20k[] = {"revenant", "swarm", SCN, "--seeds", "20000", "-j", "2", "-q",
                      "--repro-dir", "/tmp/revenant-bench-memory-repro", NULL};
  double a = max_rss_mb(run2k), b = max_rss_mb(run20k), c = max_rss_mb(swarm20k);
  if (system("rm -rf /tmp/revenant-bench-memory-repro") != 0) fprintf(stderr, "bench_memory: cleanup failed\n");
  if (a < 0 || b < 0 || c < 0) {
    fprintf(stderr, "bench_memory: a revenant command failed\n");
    return 1;
  }
  printf("max_rss_run_seeds_2k_mb: %.1f MB\n", a);
  printf("max_rss_run_seeds_20k_mb: %.1f MB\n", b);
  printf("run_seeds_rss_growth_ratio: %.3f x\n", b / a);
  printf("run_seeds_rss_target_ratio: %.3f x\n", b / a / 1.5);
  printf("max_rss_swarm_20k_mb: %.1f MB\n", c);
  return 0;
}
