/*
** cli_files.c: files and time for the command line: expands paths into
** scenario files (a directory is searched recursively for *.json files,
** in name order), reads whole files, reads the wall clock for reports.
*/
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cli/cli.h"

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

static int walk(cli_paths *p, const char *dir) {
  struct dirent **ents;
  int n = scandir(dir, &ents, NULL, alphasort);
  int rc = 0;
  if (n < 0) return -1;
  for (int i = 0; i < n; i++) {
    const char *name = ents[i]->d_name;
    char full[4096];
    struct stat st;
    if (name[0] == '.' || rc) {
      free(ents[i]);
      continue;
    }
    snprintf(full, sizeof full, "%s/%s", dir, name);
    if (stat(full, &st) == 0 && S_ISDIR(st.st_mode))
      rc = walk(p, full);
    else if (ends_with(name, ".json"))
      rc = push_path(p, full);
    free(ents[i]);
  }
  free(ents);
  return rc;
}

int cli_expand(cli_paths *p, const char *arg) {
  struct stat st;
  if (stat(arg, &st) != 0) {
    fprintf(stderr, "revenant: %s: no such file or directory\n", arg);
    return -1;
  }
  if (S_ISDIR(st.st_mode)) return walk(p, arg);
  return push_path(p, arg);
}

void cli_paths_free(cli_paths *p) {
  for (size_t i = 0; i < p->n; i++) free(p->v[i]);
  free(p->v);
  p->v = NULL;
  p->n = p->cap = 0;
}

char *cli_read_file(const char *path) {
  FILE *f = fopen(path, "rb");
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
