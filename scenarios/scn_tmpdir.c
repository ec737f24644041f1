/*
** scn_tmpdir.c: the temporary directories of swarms and SIGKILL runs.
**
** A directory is named "revenant-KIND-PID-XXXXXX" after the process that
** made it. A process killed by SIGKILL cannot remove its own, so each new
** one first removes the leftovers of processes that no longer exist: a pid
** for which kill(pid, 0) says ESRCH, in a directory this user owns. A live
** process's directory (or one whose pid was reused) is never touched.
*/
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "scenarios/scn_internal.h"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st;
  (void)flag;
  (void)f;
  remove(path);
  return 0;
}

void scn__tmpdir_remove(const char *dir) {
  if (dir && *dir) nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* The pid in a name "PREFIX<pid>-XXXXXX", or 0 if name is not one. */
static long leftover_pid(const char *name, const char *prefix) {
  size_t n = strlen(prefix);
  if (strncmp(name, prefix, n)) return 0;
  char *end;
  long pid = strtol(name + n, &end, 10);
  return end != name + n && *end == '-' && pid > 0 ? pid : 0;
}

/* Removes base/PREFIX<pid>-* of dead processes. */
static void sweep(const char *base, const char *prefix) {
  DIR *d = opendir(base);
  if (!d) return;
  struct dirent *e;
  char path[700];
  while ((e = readdir(d))) {
    long pid = leftover_pid(e->d_name, prefix);
    if (!pid || pid == (long)getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", base, e->d_name);
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid())
      scn__tmpdir_remove(path);
  }
  closedir(d);
}

/* The base directory: $TMPDIR when set, else /dev/shm when it is a
** writable directory (a memory file system: no inode churn on a disk, which
** was a third of a SIGKILL cycle, and a process kill keeps what its files
** hold just as a disk's page cache does), else /tmp. */
static const char *tmp_base(void) {
  const char *t = getenv("TMPDIR");
  struct stat st;
  if (t && *t) return t;
  if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK | X_OK) == 0)
    return "/dev/shm";
  return "/tmp";
}

/* 1 the first time this process asks for base/prefix (then it sweeps);
** 0 after that: a process's own directories are removed by the runs that
** made them, so one sweep per process finds every dead process's (a
** sigkill run makes a directory per run: reading a shared /dev/shm each
** time cost a few hundredths of a millisecond per run). */
static int first_sweep(const char *base, const char *prefix) {
  static char seen[8][300];
  static pid_t seen_by;
  static int n_seen;
  char key[300];
  snprintf(key, sizeof key, "%s/%s", base, prefix);
  if (seen_by != getpid()) { /* a forked process sweeps for itself */
    seen_by = getpid();
    n_seen = 0;
  }
  for (int i = 0; i < n_seen; i++)
    if (!strcmp(seen[i], key)) return 0;
  if (n_seen < 8) snprintf(seen[n_seen++], sizeof seen[0], "%s", key);
  return 1;
}

int scn__tmpdir_make(char *dir, size_t cap, const char *kind) {
  const char *bases[2] = {tmp_base(), "/tmp"};
  char prefix[64];
  snprintf(prefix, sizeof prefix, "revenant-%s-", kind);
  for (int i = 0; i < 2; i++) {
    if (first_sweep(bases[i], prefix)) sweep(bases[i], prefix);
    int n = snprintf(dir, cap, "%s/%s%ld-XXXXXX", bases[i], prefix, (long)getpid());
    if (n > 0 && (size_t)n < cap && mkdtemp(dir)) return 0; /* a too long $TMPDIR: /tmp */
  }
  dir[0] = 0;
  return -1;
}
