/* clock.c - the system and fake clocks, and ISO-8601 timestamps.
 *
 * Timestamps users read are UTC with milliseconds,
 * "2026-02-03T05:41:55.123Z".  Conversion is done with days-from-civil
 * arithmetic rather than gmtime/timegm so it is pure, thread-safe and has
 * no dependence on TZ. */
#include "zerg/clock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int64_t read_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * ZERG_NS_PER_S + ts.tv_nsec;
}

static int64_t system_mono(void *ctx)
{
    (void)ctx;
    return read_clock(CLOCK_MONOTONIC);
}

static int64_t system_wall(void *ctx)
{
    (void)ctx;
    return read_clock(CLOCK_REALTIME);
}

const struct zerg_clock zerg_clock_system = {
    .mono_ns = system_mono,
    .wall_ns = system_wall,
    .ctx = NULL,
};

static int64_t fake_mono(void *ctx)
{
    return ((struct zerg_clock_fake *)ctx)->mono_ns;
}

static int64_t fake_wall(void *ctx)
{
    return ((struct zerg_clock_fake *)ctx)->wall_ns;
}

struct zerg_clock zerg_clock_fake(struct zerg_clock_fake *fake)
{
    return (struct zerg_clock){
        .mono_ns = fake_mono, .wall_ns = fake_wall, .ctx = fake};
}

/* Floor division: the calendar math below needs it for pre-1970 times. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
 * days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = floor_div(y, 400);
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = floor_div(z, 146097);
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* v (0 <= v < 10^n) as exactly n digits. */
static void put_digits(char *out, int v, int n)
{
    for (int i = n - 1; i >= 0; i--) {
        out[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

char *zerg_clock_iso8601(int64_t wall_ns, char buf[ZERG_TS_MAX])
{
    int64_t ms = floor_div(wall_ns, ZERG_NS_PER_MS);
    int64_t secs = floor_div(ms, 1000);
    int64_t days = floor_div(secs, 86400);
    int64_t sod = secs - days * 86400;
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    if (y < 0 || y > 9999) {
        /* Formatted through a roomy buffer: such years do not fit. */
        char tmp[96];
        snprintf(tmp, sizeof tmp, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ",
                 (long long)y, m, d, (int)(sod / 3600), (int)(sod / 60 % 60),
                 (int)(sod % 60), (int)(ms - secs * 1000));
        memcpy(buf, tmp, ZERG_TS_MAX - 1);
        buf[ZERG_TS_MAX - 1] = '\0';
        return buf;
    }
    /* By hand: every log line and every task of a checkpoint has one, and
     * printf's format parsing was most of the cost. */
    put_digits(buf, (int)y, 4);
    buf[4] = '-';
    put_digits(buf + 5, m, 2);
    buf[7] = '-';
    put_digits(buf + 8, d, 2);
    buf[10] = 'T';
    put_digits(buf + 11, (int)(sod / 3600), 2);
    buf[13] = ':';
    put_digits(buf + 14, (int)(sod / 60 % 60), 2);
    buf[16] = ':';
    put_digits(buf + 17, (int)(sod % 60), 2);
    buf[19] = '.';
    put_digits(buf + 20, (int)(ms - secs * 1000), 3);
    buf[23] = 'Z';
    buf[24] = '\0';
    return buf;
}

/* Reads exactly n digits at *s into *out; advances *s. */
static int digits(const char **s, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*s)[i];
        if (c < '0' || c > '9')
            return -EINVAL;
        v = v * 10 + (c - '0');
    }
    *s += n;
    *out = v;
    return 0;
}

static int expect(const char **s, char c)
{
    if (**s != c)
        return -EINVAL;
    (*s)++;
    return 0;
}

static int days_in_month(int y, int m)
{
    static const int dim[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : dim[m - 1];
}

/* Optional ".mmm" (1 to 9 digits, scaled to nanoseconds). */
static int fraction(const char **s, int64_t *ns)
{
    *ns = 0;
    if (**s != '.')
        return 0;
    (*s)++;
    int64_t scale = ZERG_NS_PER_S, v = 0;
    int n = 0;
    while (**s >= '0' && **s <= '9' && n < 9) {
        v = v * 10 + (**s - '0');
        scale /= 10;
        (*s)++, n++;
    }
    if (n == 0 || (**s >= '0' && **s <= '9'))
        return -EINVAL;
    *ns = v * scale;
    return 0;
}

/* "Z", "+00:00" or "-00:00": only UTC is written, so only UTC is read. */
static int utc_suffix(const char *s)
{
    if (strcmp(s, "Z") == 0 || strcmp(s, "+00:00") == 0 ||
        strcmp(s, "-00:00") == 0)
        return 0;
    return -EINVAL;
}

int zerg_clock_parse_iso8601(const char *s, int64_t *wall_ns)
{
    int y, mo, d, h, mi, sec;
    int64_t frac;
    if (!s || digits(&s, 4, &y) || expect(&s, '-') || digits(&s, 2, &mo) ||
        expect(&s, '-') || digits(&s, 2, &d) || expect(&s, 'T') ||
        digits(&s, 2, &h) || expect(&s, ':') || digits(&s, 2, &mi) ||
        expect(&s, ':') || digits(&s, 2, &sec) || fraction(&s, &frac) ||
        utc_suffix(s))
        return -EINVAL;
    /* No leap seconds: 60 is rejected like any other bad field. */
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
        mi > 59 || sec > 59)
        return -EINVAL;
    int64_t days = days_from_civil(y, mo, d);
    int64_t secs = days * 86400 + h * 3600 + mi * 60 + sec;
    /* Nanoseconds in an int64_t reach 1677-09-21 .. 2262-04-11. */
    if (secs >= INT64_MAX / ZERG_NS_PER_S || secs <= INT64_MIN / ZERG_NS_PER_S)
        return -ERANGE;
    *wall_ns = secs * ZERG_NS_PER_S + frac;
    return 0;
}
