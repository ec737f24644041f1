/*
** sim_rng.c: xoshiro256** streams seeded through splitmix64. See sim_rng.h.
*/
#include "sim_rng.h"

uint64_t sim_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t sim_hash_str(const char *s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (; *s; s++) {
    h ^= (unsigned char)*s;
    h *= 0x100000001b3ULL;
  }
  return h;
}

void sim_rng_seed(sim_rng *r, uint64_t seed) {
  uint64_t st = seed;
  for (int i = 0; i < 4; i++) r->s[i] = sim_splitmix64(&st);
  if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 1;
}

void sim_rng_stream(sim_rng *r, uint64_t seed, const char *name) {
  uint64_t st = seed ^ sim_hash_str(name);
  sim_rng_seed(r, sim_splitmix64(&st));
}

int64_t sim_rng_range(sim_rng *r, int64_t lo, int64_t hi) {
  uint64_t span = (uint64_t)hi - (uint64_t)lo;
  if (span == UINT64_MAX) return (int64_t)sim_rng_next(r);
  return (int64_t)((uint64_t)lo + sim_rng_below(r, span + 1));
}

int sim_rng_chance_ppm(sim_rng *r, uint32_t ppm) {
  if (ppm == 0) return 0;
  if (ppm >= 1000000) return 1;
  return sim_rng_below(r, 1000000) < ppm;
}
