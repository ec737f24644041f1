/*
** rt_inject.c: the counting and targeting behind runtime/rt_inject.h
** (issue #16 item 7). Sites are kept in a small table looked up by file
** name and line only when armed; sorted by name and line when read.
*/
#include "runtime/rt_inject.h"

#include "runtime/rt.h"

#define SITES_MAX 1024

int rt__inject_armed;

static rt_inject_site sites[SITES_MAX];
static int n_sites, sorted;
static const char *t_file;
static int t_line, fired;
static uint64_t t_nth;

static void (*cold[8])(void);
static int n_cold;

void rt__inject_cold_hook(void (*fn)(void)) {
  for (int i = 0; i < n_cold; i++)
    if (cold[i] == fn) return;
  if (n_cold < 8) cold[n_cold++] = fn;
}

/* Every arming starts from a cold process: kept state (the storage pool,
** the JSON buffer) would make a run's calls depend on the runs before it. */
static void reset(void) {
  for (int i = 0; i < n_cold; i++) cold[i]();
  n_sites = 0;
  sorted = 0;
  fired = 0;
}

void rt_inject_count(void) {
  reset();
  t_file = NULL;
  rt__inject_armed = 1;
}

void rt_inject_target(const char *file, int line, uint64_t nth) {
  reset();
  t_file = file;
  t_line = line;
  t_nth = nth;
  rt__inject_armed = 1;
}

void rt_inject_off(void) { rt__inject_armed = 0; }

int rt_inject_fired(void) { return fired; }

/* The site of file:line, added when first seen; NULL when the table is full. */
static rt_inject_site *site_of(const char *file, int line) {
  for (int i = 0; i < n_sites; i++)
    if (sites[i].line == line && strcmp(sites[i].file, file) == 0) return &sites[i];
  if (n_sites == SITES_MAX) return NULL;
  sorted = 0;
  sites[n_sites] = (rt_inject_site){file, line, 0};
  return &sites[n_sites++];
}

int rt__inject_hit(const char *file, int line) {
  rt_inject_site *s = site_of(file, line);
  if (!s) return 0;
  s->calls++;
  if (!t_file || fired || s->line != t_line || strcmp(s->file, t_file) != 0 || s->calls != t_nth)
    return 0;
  fired = 1;
  return 1;
}

static int site_cmp(const void *a, const void *b) {
  const rt_inject_site *x = a, *y = b;
  int c = strcmp(x->file, y->file);
  return c ? c : (x->line > y->line) - (x->line < y->line);
}

int rt_inject_sites(const rt_inject_site **out) {
  if (!sorted) qsort(sites, (size_t)n_sites, sizeof *sites, site_cmp);
  sorted = 1;
  *out = sites;
  return n_sites;
}
