/*
** cli_files.c: files and time for the command line: expands paths into
** scenario files (a directory is searched recursively for *.json files,
** in name order, except swarm baselines: *baseline.json), reads whole
** files, reads the wall clock for reports.
*/
#include <ctype.h>
#include <dirent.h>
#include <inttypes.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "scenarios/scn_json.h"

static int push_path(cli_paths *p, const char *path) {
  if (p->n == p->cap) {
    size_t nc = p->cap ? p->cap * 2 : 16;
    char **nv = realloc(p->v, nc * sizeof *nv);
    if (!nv) return -1;
    p->v = nv;
    p->cap = nc;
  }
  p->v[p->n] = strdup(path);
  return p->v[p->n++] ? 0 : -1;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* The directories a walk has entered, by device and inode: a directory
** met again through a symlink (a loop, or two links to one folder) is
** walked once, so no scenario runs twice. */
typedef struct dir_seen {
  struct dir_id {
    dev_t dev;
    ino_t ino;
  } *v;
  size_t n, cap;
} dir_seen;

/* 1 when st's directory was entered before, else marks it and returns 0
** (-1 out of memory). */
static int seen_before(dir_seen *seen, const struct stat *st) {
  for (size_t i = 0; i < seen->n; i++)
    if (seen->v[i].dev == st->st_dev && seen->v[i].ino == st->st_ino) return 1;
  if (seen->n == seen->cap) {
    size_t nc = seen->cap ? seen->cap * 2 : 16;
    struct dir_id *nv = realloc(seen->v, nc * sizeof *nv);
    if (!nv) return -1;
    seen->v = nv;
    seen->cap = nc;
  }
  seen->v[seen->n++] = (struct dir_id){st->st_dev, st->st_ino};
  return 0;
}

/* 1 if path is a JSON file revenant writes, not a scenario: a repro file
** ("revenant_repro"), a results document ("schema"), a Chrome trace
** ("traceEvents") or a swarm baseline ("revenant_baseline") as its first
** key. A walk leaves them out, so `run .` after a failure does not load its
** own revenant-out/repro-*.json. */
static int written_by_revenant(const char *path) {
  static const char *const keys[] = {"\"revenant_repro\"", "\"schema\"", "\"traceEvents\"",
                                     "\"revenant_baseline\"", NULL};
  char buf[64];
  FILE *f = scn_fopen_read(path);
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = 0;
  const char *p = buf + strspn(buf, " \t\r\n");
  if (*p++ != '{') return 0;
  p += strspn(p, " \t\r\n");
  for (int k = 0; keys[k]; k++)
    if (!strncmp(p, keys[k], strlen(keys[k]))) return 1;
  return 0;
}

/* Adds the *.json files below dir, in name order. A directory that cannot
** be read is named on stderr and the walk goes on (so every problem shows);
** returns -1 if one could not be, 0 otherwise. A subdirectory called
** revenant-out (where run, swarm and shrink write by default) is not
** entered: shrink's output there is a scenario, of a bug not yet fixed, and
** a later `run .` must not load it; named as a path, it is walked. */
static int walk(cli_paths *p, const char *dir, dir_seen *seen) {
  struct dirent **ents;
  int n = scandir(dir, &ents, NULL, alphasort);
  int rc = 0;
  if (n < 0) {
    fprintf(stderr, "revenant: %s: cannot read the directory: %s\n", dir, strerror(errno));
    return -1;
  }
  for (int i = 0; i < n; i++) {
    const char *name = ents[i]->d_name;
    char full[4096];
    struct stat st;
    if (name[0] != '.' && (size_t)snprintf(full, sizeof full, "%s/%s", dir, name) < sizeof full) {
      if (stat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
        int was = strcmp(name, CLI_OUT_DIR) ? seen_before(seen, &st) : 1; /* revenant-out: as if walked */
        if (was < 0 || (!was && walk(p, full, seen))) rc = -1;
      } else if (ends_with(name, ".json") && !ends_with(name, "baseline.json") && /* scenarios/swarm-baseline.json */
                 !written_by_revenant(full)) {
        if (push_path(p, full)) rc = -1;
      }
    }
    free(ents[i]);
  }
  free(ents);
  return rc;
}

int cli_output_not_input(const char *cmd, const char *opt, const char *out, char *const *in, size_t n) {
  struct stat so, si;
  if (!out || stat(out, &so) != 0 || !S_ISREG(so.st_mode)) return 0; /* new, or /dev/stdout */
  for (size_t i = 0; i < n; i++)
    if (stat(in[i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
      fprintf(stderr, "revenant %s: %s %s would overwrite the input %s\n", cmd, opt, out, in[i]);
      return 2;
    }
  return 0;
}

const char *cli_shell_word(const char *s, char *buf, size_t cap) {
  if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=@%+,-") == strlen(s))
    return s;
  size_t o = 0;
  if (cap < 3) return s;
  buf[o++] = '\'';
  for (; *s && o + 5 < cap; s++) {
    if (*s == '\'') {
      memcpy(buf + o, "'\\''", 4);
      o += 4;
    } else {
      buf[o++] = *s;
    }
  }
  buf[o++] = '\'';
  buf[o] = 0;
  return buf;
}

int cli_expand(cli_paths *p, const char *arg) {
  struct stat st;
  if (stat(arg, &st) != 0) {
    if (errno == ENOENT) fprintf(stderr, "revenant: %s: no such file or directory\n", arg);
    else fprintf(stderr, "revenant: %s: %s\n", arg, strerror(errno));
    return -1;
  }
  if (S_ISDIR(st.st_mode)) {
    dir_seen seen = {NULL, 0, 0};
    int rc = seen_before(&seen, &st) < 0 ? -1 : walk(p, arg, &seen);
    free(seen.v);
    return rc;
  }
  return push_path(p, arg);
}

void cli_paths_free(cli_paths *p) {
  for (size_t i = 0; i < p->n; i++) free(p->v[i]);
  free(p->v);
  p->v = NULL;
  p->n = p->cap = 0;
}

char *cli_read_file(const char *path) {
  FILE *f = scn_fopen_read(path); /* a named pipe must not block the open */
  if (!f) return NULL;
  char *buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n >= 0 && fseek(f, 0, SEEK_SET) == 0) buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  if (buf) buf[n] = 0;
  fclose(f);
  return buf;
}

double cli_wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- options, output files, signals --------------------------------------- */

int cli_is_flag(const char *v) {
  return v && v[0] == '-' && v[1] != 0;
}

static int out_fail(cli_out *o, int err) {
  fprintf(stderr, "revenant: cannot write %s: %s\n", o->path, strerror(err));
  return -1;
}

int cli_out_open(cli_out *o, const char *path) {
  struct stat st;
  memset(o, 0, sizeof *o);
  o->path = path;
  o->direct = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
  if (o->direct) {
    if (S_ISDIR(st.st_mode)) return out_fail(o, EISDIR);
    o->f = fopen(path, "w");
    return o->f ? 0 : out_fail(o, errno);
  }
  int n = snprintf(o->tmp, sizeof o->tmp, "%s.tmp-%ld", path, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof o->tmp) return out_fail(o, ENAMETOOLONG);
  o->f = fopen(o->tmp, "w");
  return o->f ? 0 : out_fail(o, errno);
}

int cli_out_commit(cli_out *o) {
  int err = 0;
  if (!o->f) return -1;
  if (fflush(o->f) != 0 || ferror(o->f)) err = errno ? errno : EIO;
  if (fclose(o->f) != 0 && !err) err = errno ? errno : EIO;
  o->f = NULL;
  if (!err && !o->direct && rename(o->tmp, o->path) != 0) err = errno;
  if (err && !o->direct) unlink(o->tmp);
  return err ? out_fail(o, err) : 0;
}

void cli_out_abort(cli_out *o) {
  if (o->f) fclose(o->f);
  o->f = NULL;
  if (!o->direct && o->tmp[0]) unlink(o->tmp);
}

volatile sig_atomic_t cli_stop;

static void on_stop_signal(int sig) {
  cli_stop = sig;
}

void cli_catch_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);  /* the terminal went away */
  sigaction(SIGPIPE, &sa, NULL); /* the reader of stdout went away (| head): stop, clean up */
}

/* ---- repro file names ------------------------------------------------------- */

/* A path component from a name: [A-Za-z0-9._-] kept (no leading dot),
** anything else (slashes, "..", spaces) becomes '_'; never empty. */
static void path_part(char *d, size_t cap, const char *src) {
  size_t i = 0;
  for (; src && *src && i + 1 < cap; src++) {
    int ok = isalnum((unsigned char)*src) || *src == '-' || *src == '_' || (*src == '.' && i > 0);
    d[i++] = ok ? *src : '_';
  }
  if (i == 0 && cap > 1) d[i++] = '_';
  d[i] = 0;
}

static char **given_paths; /* handed out by this process: never twice */
static size_t n_given, cap_given;

static int path_given(const char *p) {
  for (size_t i = 0; i < n_given; i++)
    if (!strcmp(given_paths[i], p)) return 1;
  return 0;
}

static void remember_path(const char *p) {
  if (n_given == cap_given) {
    size_t nc = cap_given ? cap_given * 2 : 16;
    char **v = realloc(given_paths, nc * sizeof *v);
    if (!v) return;
    given_paths = v;
    cap_given = nc;
  }
  if ((given_paths[n_given] = strdup(p))) n_given++;
}

void cli_repro_path(char *out, size_t cap, const char *dir, const char *kind, const char *file,
                    const char *name, const char *label, uint64_t seed, const char *extra) {
  char stem[128], nm[128], cs[80], base[1100];
  const char *slash = file ? strrchr(file, '/') : NULL;
  path_part(stem, sizeof stem, slash ? slash + 1 : file);
  size_t n = strlen(stem);
  if (n > 5 && !strcmp(stem + n - 5, ".json")) stem[n - 5] = 0;
  path_part(nm, sizeof nm, name);
  path_part(cs, sizeof cs, label);
  int same = !strcmp(stem, nm); /* the usual case: say the name once */
  snprintf(base, sizeof base, "%.300s/%s-%s%s%s-%s-0x%" PRIx64 "%s", dir, kind, stem, same ? "" : "-",
           same ? "" : nm, cs, seed, extra ? extra : "");
  snprintf(out, cap, "%s.json", base);
  for (int k = 2; path_given(out) && k < 1000; k++) snprintf(out, cap, "%s-%d.json", base, k);
  remember_path(out);
}
