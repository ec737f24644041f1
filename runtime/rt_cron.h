/*
** rt_cron.h: cron expressions as the Agents SDK evaluates them (issue #14).
**
** The SDK computes a cron schedule's next time with the npm package
** cron-schedule: getNextCronTime(cron) = parseCronExpression(cron)
** .getNextDate(), stored as Math.floor(ms / 1000) (schedule() and alarm(),
** reference A.10). This is a C rendering of that package's rules
** (cron-schedule 6.0.0, which packages/agents/package.json asks for as
** "^6.0.0": dist/cron-parser.js and dist/cron.js), evaluated in UTC, the
** time zone of a Worker:
**  - 5 fields "min hour dom month dow", or 6 with seconds first (5 fields:
**    second 0); fields are split on spaces, empty ones dropped;
**  - nicknames @yearly @annually @monthly @weekly @daily @hourly @minutely
**    (case-insensitive, the whole expression);
**  - an element is "*", a number, a name (jan..dec, sun..sat, any case),
**    "a-b", "*\/n", "a-b/n", or a comma list of those; a range needs
**    a <= b, a step needs n >= 1; numbers are read as JavaScript parseInt
**    reads them (leading digits: "5/2" is 5, "5x" is 5);
**  - weekday 0..7 with 7 = Sunday = 0 (the name sun is 7; a range that
**    starts at 7 and ends elsewhere starts at 0: "sun-sat" is every day);
**  - day of month and day of week: when both are restricted (not all 31
**    days, not all 7 weekdays) a day matching EITHER fires (vixie-cron's
**    OR rule); when one is restricted only it counts;
**  - the next time is strictly after the given second; a day past the
**    month's end never matches; no time within 5 years: none (the package
**    throws "No valid next date was found.").
** Pure functions: no clock, no allocation.
*/
#ifndef RT_CRON_H
#define RT_CRON_H

#include <stddef.h>
#include <stdint.h>

typedef struct rt_cron {
  uint64_t seconds;   /* bit s: second s allowed (0..59) */
  uint64_t minutes;   /* bit m (0..59) */
  uint32_t hours;     /* bit h (0..23) */
  uint32_t days;      /* bit d (1..31) */
  uint16_t months;    /* bit m (1..12) */
  uint8_t weekdays;   /* bit w (0..6, Sunday 0) */
} rt_cron;

/* Parses expr into out. Returns 0, or -1 with a message naming the bad
** element in err (room n), worded as the package words it. */
int rt_cron_parse(const char *expr, rt_cron *out, char *err, size_t n);

/* The first time (unix seconds, UTC) strictly after after_s that c
** allows, or -1 if none within 5 years. */
int64_t rt_cron_next(const rt_cron *c, int64_t after_s);

/* rt_cron_parse + rt_cron_next: the SDK's Math.floor(getNextCronTime(expr)
** / 1000) at unix second now_s. -1 with err filled on a bad expression
** or no next time. */
int64_t rt_cron_next_expr(const char *expr, int64_t now_s, char *err, size_t n);

/* Civil UTC date of unix second t (for tests and messages). */
void rt_cron_civil(int64_t t, int *year, int *month, int *day, int *hour, int *min, int *sec,
                   int *wday);

/* Unix second of a civil UTC date (month 1..12). */
int64_t rt_cron_unix(int year, int month, int day, int hour, int min, int sec);

#endif
