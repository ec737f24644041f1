/*
** sim_rng.h: seeded pseudo-random streams for the simulation kernel.
**
** The generator is xoshiro256** (Blackman and Vigna, 2018), seeded through
** splitmix64. A run has one 64-bit seed; every purpose (scheduler, workload,
** each fault kind) draws from its own named stream. A stream's state depends
** only on (run seed, stream name), never on how many other streams exist or
** in which order they were made, so switching a fault on cannot shift the
** workload's draws.
*/
#ifndef SIM_RNG_H
#define SIM_RNG_H

#include <stdint.h>

typedef struct sim_rng {
  uint64_t s[4];
} sim_rng;

/* One splitmix64 step: advances *state and returns a well-mixed value. */
uint64_t sim_splitmix64(uint64_t *state);

/* 64-bit FNV-1a of a NUL-terminated string (used to key stream names). */
uint64_t sim_hash_str(const char *s);

/* Seeds r from a single 64-bit value through splitmix64. */
void sim_rng_seed(sim_rng *r, uint64_t seed);

/* Seeds r as the stream `name` of the run seeded with `seed`. Pure function
** of (seed, name). */
void sim_rng_stream(sim_rng *r, uint64_t seed, const char *name);

/* Next 64 random bits (xoshiro256**). Inline: the kernel's event loop and
** the workload draw on every event. */
static inline uint64_t sim_rng_next(sim_rng *r) {
  uint64_t *s = r->s;
  const uint64_t m = s[1] * 5;
  const uint64_t result = ((m << 7) | (m >> 57)) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = (s[3] << 45) | (s[3] >> 19);
  return result;
}

/* Uniform integer in [0, n); n must be > 0. Unbiased (rejection sampling):
** draws until x < limit, the largest multiple of n that fits, and returns
** x % n. limit exceeds UINT64_MAX - n, so a draw at most that is accepted
** without computing limit (one division fewer; the same values). Inline:
** a constant n (a bound in microseconds, 1,000,000 for ppm) then costs no
** division at all. */
static inline uint64_t sim_rng_below(sim_rng *r, uint64_t n) {
  for (;;) {
    const uint64_t x = sim_rng_next(r);
    if (x <= UINT64_MAX - n || x < UINT64_MAX - UINT64_MAX % n) return x % n;
  }
}

/* Uniform integer in [lo, hi] inclusive; requires lo <= hi. */
int64_t sim_rng_range(sim_rng *r, int64_t lo, int64_t hi);

/* 1 with probability ppm / 1,000,000 (integer probability, no floats). */
int sim_rng_chance_ppm(sim_rng *r, uint32_t ppm);

#endif
