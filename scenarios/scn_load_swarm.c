/*
** scn_load_swarm.c: the top-level "swarm" object of a scenario file (the
** fault allowance) and the modes of expected violations (docs/swarm.md,
** "Fault allowances and swarm modes"; docs/scenarios.md "swarm").
**
**   "swarm": {"faults": {"evict": true, "crash": {"after_write": false},
**                        "storage_fail": {"max_ppm": 10000},
**                        "stuck_child": {"off": "why it cannot apply"}},
**             "violations": "once"}
**
** With "faults", the swarm draws only the kinds listed (and not "off"),
** within their bounds. The mission's faults (evict, restart, crash,
** storage_fail, and stuck_child when an actor is somebody's child) must be
** listed: allowed, or "off" with the reason, so an allowance cannot hollow a
** file out unnoticed.
*/
#include "scenarios/scn_load_internal.h"

/* The kinds of the swarm's mix (scn_swarm_mix), in draw order. */
static const flt_kind mix_kinds[] = {FLT_EVICT, FLT_RESTART, FLT_CRASH, FLT_STORAGE_FAIL,
                                     FLT_RPC_DELAY, FLT_RPC_DROP, FLT_ALARM_DELAY, FLT_STUCK_CHILD};
#define N_MIX ((int)(sizeof mix_kinds / sizeof mix_kinds[0]))

static const char *const swarm_fields[] = {"faults", "violations", NULL};
static const char *const f_rated[] = {"max_rate", "off", NULL};
static const char *const f_death[] = {"max_rate", "after_write", "off", NULL};
static const char *const f_ppm[] = {"max_ppm", "off", NULL};
static const char *const f_delay[] = {"max_delay", "off", NULL};

static const char *const mode_names[] = {"every", "once", "report", NULL};

/* A mode string at obj[key] into *mode, with a did-you-mean; 1 if absent. */
static int get_mode(ld *L, const cJSON *obj, const char *key, const char *what, int *mode) {
  const char *s;
  char q[96];
  int rc = scn_get_string(L->d, obj, key, &s, L->err);
  if (rc != 0) return rc;
  for (int k = 0; mode_names[k]; k++)
    if (!strcmp(s, mode_names[k])) {
      *mode = k;
      return 0;
    }
  const char *best = scn_suggest(s, mode_names);
  if (best)
    return scn_errf(L->err, L->d, ld_get(obj, key), "\"%s\": unknown swarm mode \"%s\"; did you mean \"%s\"?",
                    what, ld_quote(q, sizeof q, s), best);
  return scn_errf(L->err, L->d, ld_get(obj, key),
                  "\"%s\": unknown swarm mode \"%s\"; expected every (each seed must violate), once "
                  "(at least one seed: a reproduction) or report (only reported)",
                  what, ld_quote(q, sizeof q, s));
}

static int has_child(const scn_scenario *sc) {
  for (uint32_t p = 0; p < sc->n_actors; p++)
    if (sc->actors[p].n_children > 0) return 1;
  return 0;
}

/* 1 if kind k is one of the mission's faults for this scenario. */
static int mission_kind(const scn_scenario *sc, flt_kind k) {
  return k == FLT_EVICT || k == FLT_RESTART || k == FLT_CRASH || k == FLT_STORAGE_FAIL ||
         (k == FLT_STUCK_CHILD && has_child(sc));
}

static const char *const *kind_fields(flt_kind k) {
  switch (k) {
    case FLT_EVICT: return f_rated;
    case FLT_RESTART: case FLT_CRASH: return f_death;
    case FLT_STORAGE_FAIL: case FLT_RPC_DROP: return f_ppm;
    default: return f_delay;
  }
}

/* One member of "faults": true, false is refused (say why with "off"), or
** an object of bounds. */
static int one_kind(ld *L, const cJSON *m, flt_kind k) {
  scn_allow *al = &L->sc->allow;
  const char *why = NULL;
  int64_t v;
  char what[64];
  snprintf(what, sizeof what, "swarm.faults.%s", m->string);
  if (cJSON_IsTrue(m)) {
    al->kinds |= 1u << k;
    return 0;
  }
  if (cJSON_IsFalse(m))
    return scn_errf(L->err, L->d, m, "\"%s\": to switch a kind off, say why: {\"off\": \"the reason\"}",
                    what);
  if (!cJSON_IsObject(m))
    return scn_errf(L->err, L->d, m, "\"%s\": expected true or an object of bounds such as "
                    "{\"max_ppm\": 10000} or {\"off\": \"why\"}, found %s", what, scn_type_name(m));
  if (ld_obj_fields(L, m, what, kind_fields(k)) < 0) return -1;
  int rc = scn_get_string(L->d, m, "off", &why, L->err);
  if (rc < 0) return -1;
  if (rc == 0) {
    if (cJSON_GetArraySize(m) > 1)
      return ld_key_errf(L, m, "\"%s\": a kind that is \"off\" takes no bounds", what);
    if (strlen(why) < 8)
      return scn_errf(L->err, L->d, ld_get(m, "off"),
                      "\"%s.off\": give the reason in a few words (why the expectations cannot "
                      "survive this fault)", what);
    snprintf(al->off[k], sizeof al->off[k], "%s", why);
    return 0;
  }
  al->kinds |= 1u << k;
  if (ld_get(m, "max_rate") && ld_get_rate(L, m, "max_rate", &al->max_per_day[k]) < 0) return -1;
  int aw = 1;
  if (scn_get_bool(L->d, m, "after_write", &aw, L->err) < 0) return -1;
  if (!aw) al->no_after_write |= 1u << k;
  v = 0;
  if (scn_get_int(L->d, m, "max_ppm", 1, MAX_PPM, &v, L->err) < 0) return -1;
  al->max_ppm[k] = (uint32_t)v;
  if (ld_get(m, "max_delay") && ld_get_dur(L, m, "max_delay", 1, &al->max_delay_us[k]) < 0) return -1;
  return 0;
}

static int load_allow(ld *L, const cJSON *fs) {
  scn_scenario *sc = L->sc;
  const char *names[N_MIX + 1];
  const cJSON *m;
  char q[96];
  if (scn_expect_type(L->d, fs, cJSON_Object, "swarm.faults", L->err) < 0) return -1;
  for (int i = 0; i < N_MIX; i++) names[i] = flt_kind_name(mix_kinds[i]);
  names[N_MIX] = NULL;
  sc->allow.given = 1;
  cJSON_ArrayForEach(m, fs) {
    int i = 0;
    while (i < N_MIX && strcmp(names[i], m->string)) i++;
    if (i == N_MIX) {
      const char *best = scn_suggest(m->string, names);
      list l = {{0}, 0, 0};
      if (best)
        return ld_key_errf(L, m, "\"swarm.faults\": the swarm draws no fault \"%s\"; did you mean \"%s\"?",
                           ld_quote(q, sizeof q, m->string), best);
      for (int k = 0; k < N_MIX; k++) ld_list_add(&l, names[k]);
      return ld_key_errf(L, m, "\"swarm.faults\": the swarm draws no fault \"%s\"; its kinds are: %s",
                         ld_quote(q, sizeof q, m->string), l.s);
    }
    if (one_kind(L, m, mix_kinds[i]) < 0) return -1;
  }
  for (int i = 0; i < N_MIX; i++) {
    flt_kind k = mix_kinds[i];
    if (!mission_kind(sc, k) || ld_get(fs, names[i])) continue;
    return scn_errf(L->err, L->d, fs,
                    "\"swarm.faults\": the mission's fault \"%s\" applies to this scenario and is not "
                    "listed: allow it (true, or bounds) or switch it off with {\"off\": \"why\"}",
                    names[i]);
  }
  return 0;
}

int ld_load_swarm(ld *L) {
  const cJSON *sw = ld_get(L->root, "swarm");
  int mode = SCN_SWARM_EVERY;
  L->swarm_default = SCN_SWARM_EVERY;
  if (!sw) return 0;
  if (ld_obj_fields(L, sw, "swarm", swarm_fields) < 0) return -1;
  if (ld_get(sw, "faults") && load_allow(L, ld_get(sw, "faults")) < 0) return -1;
  if (get_mode(L, sw, "violations", "swarm.violations", &mode) < 0) return -1;
  L->swarm_default = mode;
  return 0;
}

int ld_swarm_mode(ld *L, const cJSON *ex, scn_case *c) {
  int mode = L->swarm_default;
  int rc = get_mode(L, ex, "swarm", "expect.swarm", &mode);
  if (rc < 0) return -1;
  if (rc == 0 && !c->violate_mask)
    return scn_errf(L->err, L->d, ld_get(ex, "swarm"),
                    "\"expect.swarm\": a swarm mode applies to expected violations; this "
                    "expectation has no \"violate\" list");
  c->swarm_mode = c->violate_mask ? mode : SCN_SWARM_EVERY;
  return 0;
}
