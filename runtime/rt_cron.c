/*
** rt_cron.c: cron expressions with the rules of the npm package
** cron-schedule, which the Agents SDK's getNextCronTime uses (rt_cron.h).
** parse_element follows parseElement() of src/cron-parser.ts; rt_cron_next
** follows Cron.getNextDate() of src/cron.ts, walking days instead of months
** (same result: the first allowed second after the start).
*/
#include "runtime/rt_inject.h" /* first: wraps allocation and SQLite calls */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "runtime/rt_cron.h"

typedef struct constraint {
  int min, max;
  const char *const *aliases; /* names for min.. in order, or NULL */
} constraint;

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                          "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const weekday_names[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun", NULL};

static const constraint C_SEC = {0, 59, NULL}, C_MIN = {0, 59, NULL}, C_HOUR = {0, 23, NULL},
                        C_DAY = {1, 31, NULL}, C_MONTH = {1, 12, month_names},
                        C_WEEKDAY = {0, 7, weekday_names};

/* JavaScript parseInt(s, 10): optional blanks and sign, then the leading
** digits; 0 with *ok 0 when there are none (NaN). Saturates. */
static int64_t js_parse_int(const char *s, size_t len, int *ok) {
  size_t i = 0;
  int neg = 0;
  int64_t v = 0;
  while (i < len && isspace((unsigned char)s[i])) i++;
  if (i < len && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
  *ok = i < len && isdigit((unsigned char)s[i]);
  for (; i < len && isdigit((unsigned char)s[i]); i++)
    if (v < 1000000000LL) v = v * 10 + (s[i] - '0');
  return neg ? -v : v;
}

/* parseSingleElement: an alias or a number within the constraint. */
static int parse_single(const char *whole, size_t wlen, const char *s, size_t len,
                        const constraint *c, int64_t *out, char *err, size_t n) {
  int ok;
  char tok[64];
  snprintf(tok, sizeof tok, "%.*s", (int)(len < 63 ? len : 63), s);
  if (c->aliases) /* jan = 1 .. dec = 12, mon = 1 .. sun = 7 */
    for (int k = 0; c->aliases[k]; k++)
      if (strlen(c->aliases[k]) == len && strncasecmp(c->aliases[k], s, len) == 0) {
        *out = 1 + k;
        return 0;
      }
  *out = js_parse_int(s, len, &ok);
  if (!ok) {
    snprintf(err, n, "Failed to parse %.*s: %s is NaN.", (int)wlen, whole, tok);
    return -1;
  }
  if (*out < c->min || *out > c->max) {
    snprintf(err, n, "Failed to parse %.*s: %s is outside of constraint range of %d - %d.",
             (int)wlen, whole, tok, c->min, c->max);
    return -1;
  }
  return 0;
}

static int is_alnum_run(const char *s, size_t len) {
  if (!len) return 0;
  for (size_t i = 0; i < len; i++)
    if (!isalnum((unsigned char)s[i])) return 0;
  return 1;
}

/* parseElement(element, constraint): the set of allowed values as bits. */
static int parse_element(const char *e, size_t len, const constraint *c, uint64_t *set, char *err,
                         size_t n) {
  int64_t a, b, step = 1;
  const char *comma = memchr(e, ',', len);
  if (len == 1 && e[0] == '*') {
    for (int i = c->min; i <= c->max; i++) *set |= 1ULL << (c == &C_WEEKDAY ? i % 7 : i);
    return 0;
  }
  if (comma) { /* a list: each element on its own */
    size_t start = 0;
    for (size_t i = 0; i <= len; i++)
      if (i == len || e[i] == ',') {
        if (parse_element(e + start, i - start, c, set, err, n)) return -1;
        start = i + 1;
      }
    return 0;
  }
  /* ^((([0-9a-zA-Z]+)-([0-9a-zA-Z]+))|\*)(\/([0-9]+))?$ */
  const char *slash = memchr(e, '/', len);
  size_t head = slash ? (size_t)(slash - e) : len;
  int range = 0, ok_step = 1;
  const char *dash = memchr(e, '-', head);
  if (slash) {
    size_t sl = len - head - 1;
    ok_step = sl > 0;
    for (size_t i = head + 1; i < len; i++)
      if (!isdigit((unsigned char)e[i])) ok_step = 0;
  }
  if (ok_step && head == 1 && e[0] == '*')
    range = 1;
  else if (ok_step && dash && is_alnum_run(e, (size_t)(dash - e)) &&
           is_alnum_run(dash + 1, head - (size_t)(dash - e) - 1))
    range = 2;
  if (!range) { /* a single element, read as parseInt reads it */
    if (parse_single(e, len, e, len, c, &a, err, n)) return -1;
    *set |= 1ULL << (c == &C_WEEKDAY ? a % 7 : a);
    return 0;
  }
  if (range == 1) {
    a = c->min;
    b = c->max;
  } else if (parse_single(e, len, e, (size_t)(dash - e), c, &a, err, n) ||
             parse_single(e, len, dash + 1, head - (size_t)(dash - e) - 1, c, &b, err, n)) {
    return -1;
  }
  if (c == &C_WEEKDAY && a == 7 && b != 7) a = 0; /* "sun-sat" */
  if (a > b) {
    snprintf(err, n, "Failed to parse %.*s: Invalid range (start: %lld, end: %lld).", (int)len, e,
             (long long)a, (long long)b);
    return -1;
  }
  if (slash) {
    int ok;
    step = js_parse_int(slash + 1, len - head - 1, &ok);
    if (step < 1) {
      snprintf(err, n, "Failed to parse step: Expected %.*s to be greater than 0.",
               (int)(len - head - 1), slash + 1);
      return -1;
    }
  }
  for (int64_t i = a; i <= b; i += step) *set |= 1ULL << (c == &C_WEEKDAY ? i % 7 : i);
  return 0;
}

static const struct {
  const char *name, *expr;
} nicknames[] = {
    {"@yearly", "0 0 1 1 *"},  {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"},  {"@daily", "0 0 * * *"},    {"@hourly", "0 * * * *"},
    {"@minutely", "* * * * *"},
};

int rt_cron_parse(const char *expr, rt_cron *out, char *err, size_t n) {
  const char *el[7];
  size_t len[7];
  int k = 0;
  uint64_t sets[6] = {0};
  static const constraint *const cs[6] = {&C_SEC, &C_MIN, &C_HOUR, &C_DAY, &C_MONTH, &C_WEEKDAY};
  if (!expr) {
    snprintf(err, n, "Invalid cron expression: must be of type string.");
    return -1;
  }
  for (size_t i = 0; i < sizeof nicknames / sizeof nicknames[0]; i++)
    if (strcasecmp(expr, nicknames[i].name) == 0) expr = nicknames[i].expr;
  for (const char *p = expr; *p;) { /* split(' ').filter(e => e.length > 0) */
    const char *sp = strchr(p, ' ');
    size_t l = sp ? (size_t)(sp - p) : strlen(p);
    if (l > 0) {
      if (k == 7) break;
      el[k] = p;
      len[k++] = l;
    }
    p += l + (sp != NULL);
  }
  if (k < 5 || k > 6) {
    snprintf(err, n, "Invalid cron expression: expected 5 or 6 elements.");
    return -1;
  }
  for (int f = 0; f < 6; f++) {
    int at = k == 6 ? f : f - 1;
    if (at < 0) {
      sets[0] = 1; /* second 0 */
      continue;
    }
    if (parse_element(el[at], len[at], cs[f], &sets[f], err, n)) return -1;
  }
  out->seconds = sets[0];
  out->minutes = sets[1];
  out->hours = (uint32_t)sets[2];
  out->days = (uint32_t)sets[3];
  out->months = (uint16_t)sets[4];
  out->weekdays = (uint8_t)sets[5];
  return 0;
}

/* ---- civil time (UTC, proleptic Gregorian) -------------------------------- */

static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int *y, int *m, int *d) {
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

void rt_cron_civil(int64_t t, int *year, int *month, int *day, int *hour, int *min, int *sec,
                   int *wday) {
  int64_t days = floor_div(t, 86400), rem = t - days * 86400;
  civil_from_days(days, year, month, day);
  *hour = (int)(rem / 3600);
  *min = (int)(rem / 60 % 60);
  *sec = (int)(rem % 60);
  *wday = (int)((days % 7 + 11) % 7); /* 1970-01-01 was a Thursday (4) */
}

int64_t rt_cron_unix(int year, int month, int day, int hour, int min, int sec) {
  return days_from_civil(year, month, day) * 86400 + hour * 3600 + min * 60 + sec;
}

static int popcount64(uint64_t x) {
  int c = 0;
  for (; x; x &= x - 1) c++;
  return c;
}

static int day_allowed(const rt_cron *c, int day, int wday) {
  int days_restricted = popcount64(c->days >> 1) != 31;
  int weekdays_restricted = popcount64(c->weekdays) != 7;
  int by_day = (c->days >> day) & 1, by_weekday = (c->weekdays >> wday) & 1;
  if (days_restricted && weekdays_restricted) return by_day || by_weekday;
  if (days_restricted) return by_day;
  if (weekdays_restricted) return by_weekday;
  return 1;
}

/* The first allowed time of day at or after second-of-day from, or -1. */
static int64_t time_from(const rt_cron *c, int64_t from) {
  for (int h = (int)(from / 3600); h < 24; h++) {
    if (!((c->hours >> h) & 1)) continue;
    for (int m = h == from / 3600 ? (int)(from / 60 % 60) : 0; m < 60; m++) {
      if (!((c->minutes >> m) & 1)) continue;
      int s0 = h == from / 3600 && m == from / 60 % 60 ? (int)(from % 60) : 0;
      for (int s = s0; s < 60; s++)
        if ((c->seconds >> s) & 1) return h * 3600 + m * 60 + s;
    }
  }
  return -1;
}

int64_t rt_cron_next(const rt_cron *c, int64_t after_s) {
  int64_t t = after_s + 1, day0 = floor_div(t, 86400);
  for (int64_t d = day0; d < day0 + 5 * 366 + 31; d++) {
    int y, mo, dd, h, mi, s, wd;
    rt_cron_civil(d * 86400, &y, &mo, &dd, &h, &mi, &s, &wd);
    if (!((c->months >> mo) & 1) || !day_allowed(c, dd, wd)) continue;
    int64_t tod = time_from(c, d == day0 ? t - day0 * 86400 : 0);
    if (tod >= 0) return d * 86400 + tod;
  }
  return -1;
}

int64_t rt_cron_next_expr(const char *expr, int64_t now_s, char *err, size_t n) {
  rt_cron c;
  if (rt_cron_parse(expr, &c, err, n)) return -1;
  int64_t t = rt_cron_next(&c, now_s);
  if (t < 0) snprintf(err, n, "No valid next date was found.");
  return t;
}
