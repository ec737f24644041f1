/*
** test_sim_rng.c: the kernel's PRNG streams (sim/sim_rng.h).
**
** Known answers are computed here from the published algorithms
** (splitmix64, xoshiro256** by Blackman and Vigna), independently of
** sim_rng.c, and also pinned as golden constants so that an accidental change
** of the generator, the seeding or the stream derivation is caught.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim_rng.h"

/* ---- independent reference implementations ---------------------------- */

static uint64_t ref_rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}

/* xoshiro256** 1.0, transcribed from the reference C code (prng.di.unimi.it). */
static uint64_t ref_xoshiro_next(uint64_t s[4]) {
  const uint64_t result = ref_rotl(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = ref_rotl(s[3], 45);
  return result;
}

/* splitmix64, transcribed from the reference C code. */
static uint64_t ref_splitmix_next(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* ---- known answers ------------------------------------------------------ */

static void test_splitmix64_known_answer(void **state) {
  (void)state;
  /* Published first outputs of splitmix64 from state 0. */
  static const uint64_t want[3] = {0xe220a8397b1dcdafULL, 0x6e789e6aa1b965f4ULL,
                                   0x06c45d188009454fULL};
  uint64_t st = 0, ref = 0;
  for (int i = 0; i < 3; i++) {
    assert_int_equal(sim_splitmix64(&st), want[i]);
    assert_int_equal(ref_splitmix_next(&ref), want[i]);
    assert_int_equal(st, ref);
  }
  /* And over many arbitrary states. */
  st = ref = 0x0123456789abcdefULL;
  for (int i = 0; i < 1000; i++)
    assert_int_equal(sim_splitmix64(&st), ref_splitmix_next(&ref));
}

static void test_xoshiro_known_answer(void **state) {
  (void)state;
  /* The state {1, 2, 3, 4}: the reference sequence computed by the
  ** transcription above, and the same values as published test vectors
  ** (e.g. the rand_xoshiro crate's reference test). */
  static const uint64_t published[10] = {
      11520ULL,
      0ULL,
      1509978240ULL,
      1215971899390074240ULL,
      1216172134540287360ULL,
      607988272756665600ULL,
      16172922978634559625ULL,
      8476171486693032832ULL,
      10595114339597558777ULL,
      2904607092377533576ULL};
  sim_rng r = {{1, 2, 3, 4}};
  uint64_t ref[4] = {1, 2, 3, 4};
  for (int i = 0; i < 10; i++) {
    uint64_t want = ref_xoshiro_next(ref);
    assert_int_equal(want, published[i]);
    assert_int_equal(sim_rng_next(&r), want);
  }
  assert_memory_equal(r.s, ref, sizeof ref);

  /* Arbitrary states from splitmix: 16 states x 4096 outputs. */
  uint64_t sm = 99;
  for (int k = 0; k < 16; k++) {
    for (int j = 0; j < 4; j++) ref[j] = r.s[j] = ref_splitmix_next(&sm);
    for (int i = 0; i < 4096; i++)
      assert_int_equal(sim_rng_next(&r), ref_xoshiro_next(ref));
  }
}

static void test_seed_is_splitmix_of_seed(void **state) {
  (void)state;
  /* sim_rng_seed fills the four words with consecutive splitmix64 outputs. */
  static const uint64_t seeds[] = {0, 1, 42, 0xdeadbeefULL, UINT64_MAX};
  for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
    sim_rng r;
    uint64_t ref[4], sm = seeds[k];
    for (int j = 0; j < 4; j++) ref[j] = ref_splitmix_next(&sm);
    sim_rng_seed(&r, seeds[k]);
    assert_memory_equal(r.s, ref, sizeof ref);
    for (int i = 0; i < 100; i++)
      assert_int_equal(sim_rng_next(&r), ref_xoshiro_next(ref));
  }
}

static void test_golden_seed42(void **state) {
  (void)state;
  /* Pinned: changing any of these changes every recorded seed's run. */
  static const uint64_t seed42[4] = {0x15780b2e0c2ec716ULL, 0x6104d9866d113a7eULL,
                                     0xae17533239e499a1ULL, 0xecb8ad4703b360a1ULL};
  static const uint64_t workload42[4] = {0xd71007bd2bb51113ULL, 0xd8e1030ef16af2b1ULL,
                                         0x86aa459db45a57dbULL, 0xdd8351339ea72965ULL};
  sim_rng r;
  sim_rng_seed(&r, 42);
  for (int i = 0; i < 4; i++) assert_int_equal(sim_rng_next(&r), seed42[i]);
  sim_rng_stream(&r, 42, "workload");
  for (int i = 0; i < 4; i++) assert_int_equal(sim_rng_next(&r), workload42[i]);
  /* FNV-1a 64 published values. */
  assert_int_equal(sim_hash_str(""), 0xcbf29ce484222325ULL);
  assert_int_equal(sim_hash_str("a"), 0xaf63dc4c8601ec8cULL);
  assert_int_equal(sim_hash_str("foobar"), 0x85944171f73967e8ULL);
}

/* ---- streams ------------------------------------------------------------ */

#define NDRAW 2000

static void draw_n(sim_rng *r, uint64_t *out, int n) {
  for (int i = 0; i < n; i++) out[i] = sim_rng_next(r);
}

static void test_stream_independence(void **state) {
  (void)state;
  static const uint64_t seeds[] = {0, 1, 7, 42, 0xfeedfacecafebeefULL};
  static uint64_t alone[NDRAW], mixed[NDRAW];
  for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++) {
    uint64_t S = seeds[k];
    sim_rng w;
    sim_rng_stream(&w, S, "workload");
    draw_n(&w, alone, NDRAW);

    /* Same seed, but other streams are made first and drawn from heavily,
    ** and drawn from between every workload draw. */
    sim_rng evict, sched, crash, w2;
    sim_rng_stream(&evict, S, "fault.evict");
    for (int i = 0; i < 777; i++) (void)sim_rng_next(&evict);
    sim_rng_stream(&sched, S, "scheduler");
    for (int i = 0; i < 1234; i++) (void)sim_rng_below(&sched, 17);
    sim_rng_stream(&w2, S, "workload");
    sim_rng_stream(&crash, S, "fault.crash");
    for (int i = 0; i < NDRAW; i++) {
      (void)sim_rng_next(&evict);
      (void)sim_rng_chance_ppm(&crash, 300000);
      mixed[i] = sim_rng_next(&w2);
      (void)sim_rng_range(&sched, -5, 5);
    }
    assert_memory_equal(alone, mixed, sizeof alone);
  }
}

static void test_stream_names_and_seeds_differ(void **state) {
  (void)state;
  static const char *const names[] = {"workload", "scheduler", "fault.evict",
                                      "fault.crash", "fault.sigkill", "a",
                                      "b", "", "workload2", "Workload"};
  enum { NN = sizeof names / sizeof names[0] };
  uint64_t first[NN][4];
  for (int i = 0; i < NN; i++) {
    sim_rng r;
    sim_rng_stream(&r, 42, names[i]);
    draw_n(&r, first[i], 4);
  }
  for (int i = 0; i < NN; i++)
    for (int j = i + 1; j < NN; j++)
      for (int k = 0; k < 4; k++) assert_true(first[i][k] != first[j][k]);

  /* Pure function of (seed, name). */
  sim_rng a, b;
  sim_rng_stream(&a, 42, "workload");
  sim_rng_stream(&b, 42, "workload");
  assert_memory_equal(a.s, b.s, sizeof a.s);
  /* Different seeds, same name: different streams. */
  for (uint64_t s = 0; s < 64; s++) {
    sim_rng_stream(&a, s, "workload");
    sim_rng_stream(&b, s + 1, "workload");
    assert_true(sim_rng_next(&a) != sim_rng_next(&b));
  }
  /* A stream is not the plain seed stream. */
  sim_rng_seed(&a, 42);
  sim_rng_stream(&b, 42, "workload");
  assert_true(sim_rng_next(&a) != sim_rng_next(&b));
}

/* ---- bounded draws ------------------------------------------------------ */

static void test_below_in_range(void **state) {
  (void)state;
  static const uint64_t ns[] = {1,  2,    3,          7,           10,
                                64, 1000, 1000000007, 1ULL << 63, (1ULL << 63) + 1,
                                UINT64_MAX - 1, UINT64_MAX};
  sim_rng r;
  sim_rng_seed(&r, 2024);
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    uint64_t maxseen = 0;
    for (int i = 0; i < 20000; i++) {
      uint64_t v = sim_rng_below(&r, ns[k]);
      assert_true(v < ns[k]);
      if (v > maxseen) maxseen = v;
    }
    if (ns[k] == 1) assert_int_equal(maxseen, 0);
    if (ns[k] >= 2 && ns[k] <= 1000) assert_int_equal(maxseen, ns[k] - 1);
    /* Large n: the draws cover the upper half too. */
    if (ns[k] > 1000000) assert_true(maxseen > ns[k] / 2);
  }
}

static void test_below_chi_square(void **state) {
  (void)state;
  /* n = 10 and n = 37, 200,000 draws each; chi-square with 9 and 36 degrees
  ** of freedom. Bounds are generous (p < 1e-6), the seed is fixed. */
  static const struct { uint64_t n; double bound; } cases[] = {{10, 50.0}, {37, 95.0}};
  for (size_t c = 0; c < 2; c++) {
    uint64_t n = cases[c].n;
    uint64_t counts[64] = {0};
    const int draws = 200000;
    sim_rng r;
    sim_rng_stream(&r, 12345, "chi");
    for (int i = 0; i < draws; i++) counts[sim_rng_below(&r, n)]++;
    double expect = (double)draws / (double)n, chi = 0;
    for (uint64_t v = 0; v < n; v++) {
      double d = (double)counts[v] - expect;
      chi += d * d / expect;
    }
    assert_true(chi < cases[c].bound);
  }
}

static void test_below_unbiased_large_n(void **state) {
  (void)state;
  /* n ~ 2/3 * 2^64: a plain `x % n` would make the lower half of [0, n) come
  ** up about 2/3 of the time instead of 1/2. */
  const uint64_t n = 0xAAAAAAAAAAAAAAABULL;
  sim_rng r;
  sim_rng_seed(&r, 77);
  int low = 0;
  const int draws = 40000;
  for (int i = 0; i < draws; i++)
    if (sim_rng_below(&r, n) < n / 2) low++;
  assert_in_range(low, draws * 47 / 100, draws * 53 / 100);
}

/* The rejection rule as first written (one division for the limit on
** every call): sim_rng_below skips that division when the draw is clearly
** below the limit, and must give the same values from the same draws. */
static uint64_t limit_rule_draws;    /* draws below_by_limit has made */

static uint64_t below_by_limit(sim_rng *r, uint64_t n) {
  uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
  uint64_t x;
  do {
    x = sim_rng_next(r);
    limit_rule_draws++;
  } while (x >= limit);
  return x % n;
}

static void test_below_same_values_as_limit_rule(void **state) {
  (void)state;
  /* Small and constant bounds, powers of two, and bounds above 2^63
  ** where about half the draws are rejected. */
  static const uint64_t ns[] = {1, 2, 3, 7, 1000, 1000000, 1ull << 32,
                                (1ull << 63) - 1, 1ull << 63, (1ull << 63) + 1,
                                0xc000000000000000ull, UINT64_MAX - 1,
                                UINT64_MAX};
  sim_rng a, b;
  sim_rng_stream(&a, 7, "below");
  sim_rng_stream(&b, 7, "below");
  for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
    limit_rule_draws = 0;
    for (int k = 0; k < 20000; k++) {
      assert_int_equal(sim_rng_below(&a, ns[i]), below_by_limit(&b, ns[i]));
      assert_memory_equal(a.s, b.s, sizeof a.s);   /* as many draws */
    }
    /* above 2^63 the rejection loop really ran */
    if (ns[i] == (1ull << 63) + 1) assert_true(limit_rule_draws > 30000);
  }
  /* A constant bound, as the inline version folds it. */
  for (int k = 0; k < 100000; k++)
    assert_int_equal(sim_rng_below(&a, 1000000), below_by_limit(&b, 1000000));
}

static void test_range_inclusive(void **state) {
  (void)state;
  sim_rng r;
  sim_rng_seed(&r, 5);
  int seen[7] = {0};
  for (int i = 0; i < 10000; i++) {
    int64_t v = sim_rng_range(&r, -3, 3);
    assert_true(v >= -3 && v <= 3);
    seen[v + 3]++;
  }
  for (int i = 0; i < 7; i++) assert_true(seen[i] > 1000);

  for (int i = 0; i < 100; i++) assert_int_equal(sim_rng_range(&r, 5, 5), 5);

  /* Top end of the int64 range: both ends reached. */
  int lo_seen = 0, hi_seen = 0;
  for (int i = 0; i < 1000; i++) {
    int64_t v = sim_rng_range(&r, INT64_MAX - 1, INT64_MAX);
    assert_true(v == INT64_MAX - 1 || v == INT64_MAX);
    if (v == INT64_MAX) hi_seen = 1; else lo_seen = 1;
  }
  assert_true(lo_seen && hi_seen);
  lo_seen = hi_seen = 0;
  for (int i = 0; i < 1000; i++) {
    int64_t v = sim_rng_range(&r, INT64_MIN, INT64_MIN + 1);
    assert_true(v == INT64_MIN || v == INT64_MIN + 1);
    if (v == INT64_MIN) lo_seen = 1; else hi_seen = 1;
  }
  assert_true(lo_seen && hi_seen);

  /* Full span: both signs come up. */
  int neg = 0, pos = 0;
  for (int i = 0; i < 1000; i++) {
    int64_t v = sim_rng_range(&r, INT64_MIN, INT64_MAX);
    if (v < 0) neg++; else pos++;
  }
  assert_true(neg > 400 && pos > 400);
}

static void test_chance_ppm(void **state) {
  (void)state;
  sim_rng r;
  sim_rng_seed(&r, 9);
  int hits0 = 0, hitsall = 0, hitsover = 0, half = 0, one = 0;
  for (int i = 0; i < 100000; i++) {
    hits0 += sim_rng_chance_ppm(&r, 0);
    hitsall += sim_rng_chance_ppm(&r, 1000000);
    hitsover += sim_rng_chance_ppm(&r, UINT32_MAX);
    half += sim_rng_chance_ppm(&r, 500000);
    one += sim_rng_chance_ppm(&r, 1);
  }
  assert_int_equal(hits0, 0);
  assert_int_equal(hitsall, 100000);
  assert_int_equal(hitsover, 100000);
  assert_in_range(half, 48500, 51500);
  assert_in_range(one, 0, 5);   /* expected 0.1 */
  /* 999,999 ppm: almost always. */
  int miss = 0;
  for (int i = 0; i < 100000; i++) miss += !sim_rng_chance_ppm(&r, 999999);
  assert_in_range(miss, 0, 5);
  /* Results are 0 or 1 exactly. */
  for (int i = 0; i < 1000; i++) {
    int v = sim_rng_chance_ppm(&r, 300000);
    assert_true(v == 0 || v == 1);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_splitmix64_known_answer),
      cmocka_unit_test(test_xoshiro_known_answer),
      cmocka_unit_test(test_seed_is_splitmix_of_seed),
      cmocka_unit_test(test_golden_seed42),
      cmocka_unit_test(test_stream_independence),
      cmocka_unit_test(test_stream_names_and_seeds_differ),
      cmocka_unit_test(test_below_in_range),
      cmocka_unit_test(test_below_chi_square),
      cmocka_unit_test(test_below_unbiased_large_n),
      cmocka_unit_test(test_below_same_values_as_limit_rule),
      cmocka_unit_test(test_range_inclusive),
      cmocka_unit_test(test_chance_ppm),
  };
  return cmocka_run_group_tests_name("sim_rng", tests, NULL, NULL) != 0;
}
