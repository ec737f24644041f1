/*
** scn_shrink.c: delta debugging of a failing scenario (`revenant shrink`).
**
** The predicate: case 0 of the candidate, run with the same seed and
** strategy, still violates the kept invariant, and its expectation (the
** case's "hold" list plus that invariant) gives the same verdict as for the
** original. Reductions are tried in rounds until a round changes nothing
** (or the caller's budget runs out): the duration (binary search down to
** just after the violation), faults, workload items and stale rows (ddmin:
** chunks of n, n/2, ..., 1 removed), actors that nothing references but
** child lists, repeats of workload items (binary search on the count),
** fault times moved earlier or rounded, fault rates halved, and program
** steps. Everything here is deterministic; the wall-clock budget is the
** caller's stop callback.
*/
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios/scn.h"

#define US_PER_S 1000000LL

typedef struct shr {
  scn_scenario *cur, *cand;     /* heap: 400 KB each */
  uint64_t seed;
  sim_strategy st;
  int inv;                      /* the invariant kept violated */
  uint32_t hold, violate;       /* the written expectation */
  int want_pass;                /* its verdict on the original run */
  const scn_shrink_opts *o;
  scn_shrink_stats *stats;
  int stop;
  int64_t viol_t;               /* first violation time of inv in cur */
} shr;

static int verdict(const shr *sh, uint32_t seen) {
  return !(seen & sh->hold) && (seen & sh->violate) == sh->violate;
}

/* Runs case 0 of s; *seen gets the violated invariants, *t the time of
** the first violation of inv (or -1). Returns 0, or -1 on a run error. */
static int run_seen(shr *sh, const scn_scenario *s, uint32_t *seen, int64_t *t) {
  scn_result r;
  *seen = 0;
  *t = -1;
  sh->stats->runs++;
  if (scn_run_case(s, 0, sh->seed, sh->st, &r) != 0) {
    scn_result_free(&r);
    return -1;
  }
  for (size_t i = 0; i < chk_violation_count(r.checks); i++) {
    const chk_violation *v = chk_violation_at(r.checks, i);
    if ((int)v->inv == sh->inv && *t < 0) *t = v->t_us;
    *seen |= scn_inv_bit(s, (int)v->inv);
  }
  scn_result_free(&r);
  return 0;
}

/* Tests sh->cand; on success it becomes sh->cur. Returns 1 if kept. */
static int try_cand(shr *sh) {
  uint32_t seen;
  int64_t t;
  if (sh->stop || (sh->o && sh->o->stop && sh->o->stop(sh->o->stop_ctx))) {
    sh->stop = 1;
    return 0;
  }
  if (run_seen(sh, sh->cand, &seen, &t) != 0) return 0;
  if (!(seen & scn_inv_bit(sh->cand, sh->inv)) || verdict(sh, seen) != sh->want_pass) return 0;
  scn_scenario *x = sh->cur;
  sh->cur = sh->cand;
  sh->cand = x;
  sh->viol_t = t;
  sh->stats->accepted++;
  return 1;
}

static scn_scenario *cand_fresh(shr *sh) {
  scn_copy(sh->cand, sh->cur);
  return sh->cand;
}

/* Removes len elements at `at` from an array of n elements of size esz. */
static void remove_range(void *arr, int *n, size_t esz, int at, int len) {
  char *a = arr;
  memmove(a + (size_t)at * esz, a + (size_t)(at + len) * esz, (size_t)(*n - at - len) * esz);
  *n -= len;
}

/* ---- duration -------------------------------------------------------------- */

static int64_t round_up(int64_t v, int64_t g) { return (v + g - 1) / g * g; }

static int pass_duration(shr *sh) {
  int kept = 0;
  int64_t hi = sh->cur->duration_us;
  int64_t lo = sh->viol_t > 0 && sh->viol_t < hi ? sh->viol_t : 0;
  while (!sh->stop) {
    int64_t g = hi > 60 * US_PER_S ? US_PER_S : 1000;
    int64_t mid = round_up(lo + (hi - lo) / 2, g);
    if (mid >= hi || mid <= 0 || hi - lo <= g) break;
    scn_truncate(cand_fresh(sh), mid);
    if (try_cand(sh)) {
      hi = mid;
      kept++;
    } else {
      lo = mid;
    }
  }
  return kept;
}

/* ---- lists: faults, workload, stale rows, program steps -------------------- */

typedef struct lst {
  void *arr;
  int *n;
  size_t esz;
  int min;                      /* fewest elements allowed */
} lst;

enum { L_FAULTS, L_WORK, L_STALE, L_STEPS };

static lst list_of(scn_scenario *s, int which, int p) {
  switch (which) {
    case L_FAULTS: return (lst){s->faults, &s->n_faults, sizeof s->faults[0], 0};
    case L_WORK: return (lst){s->work, &s->n_work, sizeof s->work[0], 0};
    case L_STALE: return (lst){s->stale, &s->n_stale, sizeof s->stale[0], 0};
    default: return (lst){s->steps[p], &s->programs[p].n_steps, sizeof s->steps[0][0], 1};
  }
}

/* 0 if s is no longer a valid scenario (a stale snapshot past the end of
** its shortened program). */
static int still_valid(const scn_scenario *s) {
  for (int i = 0; i < s->n_stale; i++) {
    const scn_stale *st = &s->stale[i];
    if (!st->is_toolrun && st->snapshot > s->programs[st->program].n_steps) return 0;
  }
  return 1;
}

/* ddmin by complements: remove chunks of n, n/2, ..., 1 elements. */
static int pass_list(shr *sh, int which, int p) {
  int kept = 0, n = *list_of(sh->cur, which, p).n;
  for (int size = n; size >= 1 && !sh->stop; size /= 2) {
    for (int start = 0; !sh->stop;) {
      lst c = list_of(sh->cur, which, p);
      if (start >= *c.n) break;
      int len = size < *c.n - start ? size : *c.n - start;
      if (*c.n - len < c.min) {
        start += len;
        continue;
      }
      lst d = list_of(cand_fresh(sh), which, p);
      remove_range(d.arr, d.n, d.esz, start, len);
      if (still_valid(sh->cand) && try_cand(sh))
        kept++;
      else
        start += len;
    }
  }
  return kept;
}

static int program_used(const scn_scenario *s, int p);

static int pass_steps(shr *sh) {
  int kept = 0;
  for (int p = 0; p < sh->cur->n_programs && !sh->stop; p++)
    if (program_used(sh->cur, p)) kept += pass_list(sh, L_STEPS, p);
  return kept;
}

/* ---- programs and actors ----------------------------------------------------- */

static int program_used(const scn_scenario *s, int p) {
  for (int i = 0; i < s->n_work; i++)
    if (s->work[i].kind == SCN_W_FIBER && s->work[i].program == p) return 1;
  for (int i = 0; i < s->n_stale; i++)
    if (!s->stale[i].is_toolrun && s->stale[i].program == p) return 1;
  for (uint32_t a = 0; a < s->n_actors; a++)
    for (int k = 0; k < s->actors[a].n_policies; k++)
      if (!strcmp(s->actors[a].policies[k].fiber_name, s->programs[p].name)) return 1;
  return 0;
}

/* Drops programs nothing uses (no run needed: they never reach a world). */
static void prune_programs(scn_scenario *s) {
  for (int p = s->n_programs - 1; p >= 0; p--) {
    if (program_used(s, p)) continue;
    memmove(&s->programs[p], &s->programs[p + 1], (size_t)(s->n_programs - p - 1) * sizeof s->programs[0]);
    memmove(s->steps[p], s->steps[p + 1], (size_t)(s->n_programs - p - 1) * sizeof s->steps[0]);
    s->n_programs--;
    for (int i = 0; i < s->n_programs; i++) s->programs[i].steps = s->steps[i];
    for (int i = 0; i < s->n_work; i++)
      if (s->work[i].program > p) s->work[i].program--;
    for (int i = 0; i < s->n_stale; i++)
      if (s->stale[i].program > p) s->stale[i].program--;
  }
}

/* 1 if anything but a child list names actor a. */
static int actor_referenced(const scn_scenario *s, uint32_t a) {
  for (int i = 0; i < s->n_stale; i++)
    if (s->stale[i].actor == a || (s->stale[i].is_toolrun == 1 && s->stale[i].child == a)) return 1;
  for (int i = 0; i < s->n_work; i++)
    if (s->work[i].actor == a ||
        ((s->work[i].kind == SCN_W_TOOLRUN || s->work[i].kind == SCN_W_TOOL_ABORT ||
          s->work[i].chat_tool) &&
         s->work[i].child == a))
      return 1;
  for (int i = 0; i < s->n_faults; i++)
    if (s->faults[i].actor == a) return 1;
  for (int p = 0; p < s->n_programs; p++)
    for (int k = 0; k < s->programs[p].n_steps; k++)
      if (s->steps[p][k].kind == RT_STEP_CALL && s->steps[p][k].target == a) return 1;
  return 0;
}

static void reindex(uint32_t *v, uint32_t gone) {
  if (*v != RT_NO_ACTOR && *v > gone) (*v)--;
}

/* Drops actor a's script slot and moves the later actors' slots down with
** their actors (the slots are indexed by actor). */
static void remove_actor_script(scn_scenario *s, uint32_t a) {
  scn_actor_script *as = s->actor_scripts;
  if (as[a].name[0]) s->n_actor_scripts--;
  if (!s->actor_scripts_borrowed) {
    free(as[a].text);
    free(as[a].fns);
  }
  memmove(&as[a], &as[a + 1], (s->n_actors - a - 1) * sizeof as[0]);
  memset(&as[s->n_actors - 1], 0, sizeof as[0]);
}

/* Removes actor a (and every child-list entry naming it); renumbers. */
static void remove_actor(scn_scenario *s, uint32_t a) {
  for (uint32_t i = 0; i < s->n_actors; i++) {
    rt_actor_spec *sp = &s->actors[i];
    for (int k = sp->n_children - 1; k >= 0; k--)
      if (sp->children[k] == a) remove_range(sp->children, &sp->n_children, sizeof sp->children[0], k, 1);
    for (int k = 0; k < sp->n_children; k++) reindex(&sp->children[k], a);
  }
  memmove(&s->actors[a], &s->actors[a + 1], (s->n_actors - a - 1) * sizeof s->actors[0]);
  remove_actor_script(s, a);
  s->n_actors--;
  for (int i = 0; i < s->n_stale; i++) {
    reindex(&s->stale[i].actor, a);
    reindex(&s->stale[i].child, a);
  }
  for (int i = 0; i < s->n_work; i++) {
    reindex(&s->work[i].actor, a);
    reindex(&s->work[i].child, a);
  }
  for (int i = 0; i < s->n_faults; i++) reindex(&s->faults[i].actor, a);
  for (int p = 0; p < s->n_programs; p++)
    for (int k = 0; k < s->programs[p].n_steps; k++) reindex(&s->steps[p][k].target, a);
}

static int pass_actors(shr *sh) {
  int kept = 0;
  for (uint32_t a = sh->cur->n_actors; a-- > 0 && sh->cur->n_actors > 1 && !sh->stop;) {
    if (a >= sh->cur->n_actors || actor_referenced(sh->cur, a)) continue;
    remove_actor(cand_fresh(sh), a);
    kept += try_cand(sh);
  }
  return kept;
}

/* ---- repeats, fault times and rates -------------------------------------- */

/* Fewest arrivals of repeating workload item i (binary search). */
static int shrink_repeat(shr *sh, int i) {
  const scn_work *w = &sh->cur->work[i];
  int64_t lo = 0, hi = (w->until_us - w->at_us) / w->every_us + 1, kept = 0;
  while (hi - lo > 1 && !sh->stop) {
    int64_t mid = lo + (hi - lo) / 2;
    scn_work *c = &cand_fresh(sh)->work[i];
    if (mid == 1) {
      c->every_us = 0;
      c->until_us = sh->cand->duration_us;
    } else {
      c->until_us = c->at_us + (mid - 1) * c->every_us;
    }
    if (try_cand(sh)) {
      hi = mid;
      kept++;
    } else {
      lo = mid;
    }
  }
  return (int)kept;
}

static int pass_repeats(shr *sh) {
  int kept = 0;
  for (int i = 0; i < sh->cur->n_work && !sh->stop; i++)
    if (sh->cur->work[i].every_us > 0) kept += shrink_repeat(sh, i);
  return kept;
}

/* Fixed faults: at 0, or at their time rounded; rated: half the rate. */
static int pass_moves(shr *sh) {
  int kept = 0;
  for (int i = 0; i < sh->cur->n_faults && !sh->stop; i++) {
    int64_t at = sh->cur->faults[i].at_us;
    if (at < 0) {
      while (sh->cur->faults[i].per_day > 1 && !sh->stop) {
        cand_fresh(sh)->faults[i].per_day /= 2;
        if (!try_cand(sh)) break;
        kept++;
      }
      continue;
    }
    int64_t tries[4] = {0, at / US_PER_S * US_PER_S, round_up(at, US_PER_S), at / 1000 * 1000};
    for (int k = 0; k < 4 && at > 0 && !sh->stop; k++) {
      if (tries[k] == at || tries[k] > sh->cur->duration_us) continue;
      cand_fresh(sh)->faults[i].at_us = tries[k];
      if (try_cand(sh)) {
        kept++;
        break;
      }
    }
  }
  return kept;
}

/* ---- entry point ------------------------------------------------------------- */

/* Chooses the invariant to keep from the original run's violations (seen:
** bits of sc's masks; first_seen: an invariant number). */
static int choose_invariant(const scn_scenario *sc, const scn_case *cs, uint32_t seen, int first_seen) {
  for (int k = 0; k < 32; k++)
    if (seen & cs->hold_mask & (1u << k)) return scn_inv_of_bit(sc, k);
  if (seen & cs->violate_mask & scn_inv_bit(sc, first_seen)) return first_seen;
  for (int k = 0; k < 32; k++)
    if (seen & cs->violate_mask & (1u << k)) return scn_inv_of_bit(sc, k);
  return first_seen;
}

static void expect_text(const scn_scenario *sc, scn_case *c) {
  size_t o = 0, cap = sizeof c->expect_text;
  c->expect_text[0] = 0;
  for (int l = 0; l < 2; l++) {
    uint32_t m = l ? c->violate_mask : c->hold_mask;
    int first = 1;
    for (int k = 0; k < 32 && o < cap; k++) {
      if (!(m & (1u << k)) || scn_inv_of_bit(sc, k) < 0) continue;
      o += (size_t)snprintf(c->expect_text + o, cap - o, "%s%s %s", first && o ? "; " : "",
                            first ? (l ? "violate:" : "hold:") : ",",
                            chk_invariant_name((chk_invariant)scn_inv_of_bit(sc, k)));
      first = 0;
    }
  }
}

/* The first run: picks the invariant and the expectation; 0 or -1. */
static int shrink_setup(shr *sh, const scn_case *cs, int want_inv, char *err, size_t errlen) {
  scn_result r;
  uint32_t seen = 0;
  int first = -1;
  int64_t first_t[32]; /* by bit of the scenario's masks */
  sh->stats->runs++;
  if (scn_run_case(sh->cur, 0, sh->seed, sh->st, &r) != 0) {
    snprintf(err, errlen, "cannot run case \"%s\": %s", cs->label, r.failure);
    scn_result_free(&r);
    return -1;
  }
  for (size_t i = 0; i < chk_violation_count(r.checks); i++) {
    const chk_violation *v = chk_violation_at(r.checks, i);
    uint32_t bit = scn_inv_bit(sh->cur, (int)v->inv);
    if (!bit) continue; /* (every invariant of a run is its scenario's) */
    if (first < 0) first = (int)v->inv;
    if (!(seen & bit)) first_t[__builtin_ctz(bit)] = v->t_us;
    seen |= bit;
  }
  scn_result_free(&r);
  if (!seen) {
    snprintf(err, errlen, "case \"%s\" with seed 0x%" PRIx64 " violates no invariant: nothing to shrink",
             cs->label, sh->seed);
    return -1;
  }
  sh->inv = want_inv >= 0 ? want_inv : choose_invariant(sh->cur, cs, seen, first);
  uint32_t bit = scn_inv_bit(sh->cur, sh->inv);
  if (!(seen & bit)) {
    snprintf(err, errlen, "case \"%s\" with seed 0x%" PRIx64 " does not violate %s", cs->label,
             sh->seed, chk_invariant_name((chk_invariant)sh->inv));
    return -1;
  }
  sh->hold = cs->hold_mask;
  sh->violate = (cs->hold_mask & bit) ? 0 : bit;
  sh->want_pass = verdict(sh, seen);
  sh->viol_t = first_t[__builtin_ctz(bit)];
  return 0;
}

/* Copies at most max bytes of s into dst without cutting a UTF-8 sequence
** (the loader rejects invalid UTF-8). */
static void utf8_prefix(char *dst, const char *s, size_t max) {
  size_t n = strlen(s);
  if (n > max) {
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--;
  }
  memcpy(dst, s, n);
  dst[n] = 0;
}

/* The shrunk scenario: one case with the kept expectation, a new name. */
static void shrink_finish(shr *sh, const scn_scenario *in, const scn_case *cs, scn_scenario *out) {
  scn_copy(out, sh->cur);
  scn_case *c = &out->cases[0];
  c->hold_mask = sh->hold;
  c->violate_mask = sh->violate;
  expect_text(out, c);
  char name[120], file[201];
  utf8_prefix(name, in->name, sizeof name - 1);
  utf8_prefix(file, in->file, sizeof file - 1);
  snprintf(out->name, sizeof out->name, "%s-shrunk", name);
  snprintf(out->description, sizeof out->description,
           "Shrunk by revenant shrink from %s case %s, seed 0x%" PRIx64 ": %s is %s.", file, cs->label,
           sh->seed, chk_invariant_name((chk_invariant)sh->inv),
           sh->violate ? "violated (as the case expects)" : "violated (a bug)");
  out->source = scn_write_string(out);
}

int scn_shrink(const scn_scenario *in, int ci, uint64_t seed, sim_strategy strategy,
               const scn_shrink_opts *opts, scn_scenario *out, scn_shrink_stats *stats,
               char *err, size_t errlen) {
  shr sh = {0};
  memset(stats, 0, sizeof *stats);
  memset(out, 0, sizeof *out);
  sh.cur = malloc(sizeof *sh.cur);
  sh.cand = malloc(sizeof *sh.cand);
  sh.seed = seed;
  sh.st = strategy;
  sh.o = opts;
  sh.stats = stats;
  int rc = -1;
  if (!sh.cur || !sh.cand || ci < 0 || ci >= in->n_cases) {
    snprintf(err, errlen, sh.cur && sh.cand ? "no case %d" : "out of memory", ci);
    goto done;
  }
  scn_copy(sh.cur, in);
  sh.cur->cases[0] = in->cases[ci];
  sh.cur->n_cases = 1;
  sh.cur->n_facts = 0; /* facts pin the file's own run (and name actors that
                          shrinking drops); the shrunk case keeps one invariant */
  sh.cur->seed = seed;
  sh.cur->strategy = strategy;
  scn_size_of(sh.cur, &stats->before);
  if (shrink_setup(&sh, &in->cases[ci], opts ? opts->invariant : -1, err, errlen)) goto done;
  sh.cur->cases[0].hold_mask = sh.hold;
  sh.cur->cases[0].violate_mask = sh.violate;
  for (int before = -1; before != stats->accepted && !sh.stop;) {
    before = stats->accepted;
    prune_programs(sh.cur);
    pass_duration(&sh);
    pass_list(&sh, L_FAULTS, 0);
    pass_list(&sh, L_WORK, 0);
    pass_list(&sh, L_STALE, 0);
    pass_actors(&sh);
    pass_repeats(&sh);
    pass_moves(&sh);
    pass_steps(&sh);
  }
  prune_programs(sh.cur);
  stats->invariant = sh.inv;
  stats->stopped = sh.stop;
  shrink_finish(&sh, in, &in->cases[ci], out);
  scn_size_of(out, &stats->after);
  rc = 0;
done:
  free(sh.cur);
  free(sh.cand);
  return rc;
}
