/* pricing.c - executor.pricing entries parsed and applied (pricing.h). */
#include "zerg/pricing.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/config.h"

#define PRICE_MAX 1e6 /* USD per million tokens: beyond is a typo */

static int price_of(const char *s, size_t n, double *out, char *why,
                    size_t why_n)
{
    char buf[64], *end;
    if (n == 0 || n >= sizeof buf) {
        snprintf(why, why_n, "a price is empty or too long");
        return -1;
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    double v = strtod(buf, &end);
    if (errno || *end || !isfinite(v) || v < 0 || v > PRICE_MAX) {
        snprintf(why, why_n,
                 "the price '%s' is not a number of dollars in "
                 "0..1000000",
                 buf);
        return -1;
    }
    *out = v;
    return 0;
}

int zerg_pricing_parse(const char *entry, char *model, size_t model_n,
                       struct zerg_price *p, char *why, size_t why_n)
{
    const char *eq = entry ? strchr(entry, '=') : NULL;
    if (!eq || eq == entry) {
        snprintf(why, why_n, "no MODEL= before the prices");
        return -1;
    }
    if (model && (size_t)(eq - entry) >= model_n) {
        snprintf(why, why_n, "the model name is too long");
        return -1;
    }
    double *f[] = {&p->in, &p->out, &p->cache_read, &p->cache_write};
    const char *s = eq + 1;
    for (size_t i = 0; i < 4; i++) {
        const char *slash = strchr(s, '/');
        size_t n = slash && i < 3 ? (size_t)(slash - s) : strlen(s);
        if ((i < 3 && !slash) || (i == 3 && strchr(s, '/'))) {
            snprintf(why, why_n, "expected four prices separated by '/'");
            return -1;
        }
        if (price_of(s, n, f[i], why, why_n))
            return -1;
        s += n + 1;
    }
    if (model)
        snprintf(model, model_n, "%.*s", (int)(eq - entry), entry);
    return 0;
}

static int matches(const char *pattern, const char *model)
{
    size_t n = strlen(pattern);
    if (n && pattern[n - 1] == '*')
        return !strncmp(pattern, model, n - 1);
    return !strcmp(pattern, model);
}

int zerg_pricing_find(const struct zerg_argv *list, const char *model,
                      struct zerg_price *p)
{
    char name[128], why[128];
    if (!list || !model)
        return 0; /* "" (a CLI that names no model) matches only "*" */
    for (size_t i = 0; i < list->n; i++)
        if (!zerg_pricing_parse(list->v[i], name, sizeof name, p, why,
                                sizeof why) &&
            matches(name, model))
            return 1;
    return 0;
}

double zerg_pricing_cost(const struct zerg_price *p, int64_t in, int64_t out,
                         int64_t cache_read, int64_t cache_write)
{
    return ((double)in * p->in + (double)out * p->out +
            (double)cache_read * p->cache_read +
            (double)cache_write * p->cache_write) /
           1e6;
}
