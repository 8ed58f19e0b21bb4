/* clock.h - the one time type and an injectable clock.
 *
 * All times are int64_t nanoseconds.  Monotonic time measures ages and
 * deadlines; wall time is only for timestamps users read.  Pure decision
 * code takes `now_ns` as an argument; only the loop reads the clock, and
 * tests pass a fake one (zerg_clock_fake). */
#ifndef ZERG_CLOCK_H
#define ZERG_CLOCK_H

#include <stdint.h>
#include <stddef.h>

#define ZERG_NS_PER_MS INT64_C(1000000)
#define ZERG_NS_PER_S INT64_C(1000000000)

struct zerg_clock {
    int64_t (*mono_ns)(void *ctx);
    int64_t (*wall_ns)(void *ctx); /* ns since the Unix epoch, UTC */
    void *ctx;
};

/* The real clock (CLOCK_MONOTONIC / CLOCK_REALTIME). */
extern const struct zerg_clock zerg_clock_system;

/* A fake for tests: both clocks read the fields; advance them by hand. */
struct zerg_clock_fake {
    int64_t mono_ns;
    int64_t wall_ns;
};
struct zerg_clock zerg_clock_fake(struct zerg_clock_fake *fake);

static inline int64_t zerg_clock_mono(const struct zerg_clock *c)
{
    return c->mono_ns(c->ctx);
}
static inline int64_t zerg_clock_wall(const struct zerg_clock *c)
{
    return c->wall_ns(c->ctx);
}

/* Formats wall time as ISO-8601 UTC with milliseconds:
 * "2026-02-03T05:41:55.123Z".  buf must hold ZERG_TS_MAX bytes. */
#define ZERG_TS_MAX 32
char *zerg_clock_iso8601(int64_t wall_ns, char buf[ZERG_TS_MAX]);

/* Parses the format above (also without milliseconds, or with "+00:00");
 * returns 0 and sets *wall_ns, -EINVAL, or -ERANGE for a time outside
 * 1677..2262 (what nanoseconds in an int64_t hold). */
int zerg_clock_parse_iso8601(const char *s, int64_t *wall_ns);

static inline double zerg_ns_to_s(int64_t ns)
{
    return (double)ns / 1e9;
}
static inline int64_t zerg_s_to_ns(double s)
{
    return (int64_t)(s * 1e9);
}

#endif
