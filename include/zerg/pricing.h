/* pricing.h - executor.pricing: what a model's tokens cost (DESIGN §20),
 * for a cost the agent CLI does not report (Codex, Gemini, and every
 * Claude Code attempt killed before its result).
 *
 * An entry is "MODEL=IN/OUT/CACHE_READ/CACHE_WRITE", US dollars per
 * million tokens, e.g. "claude-opus-5-5=15/75/1.5/18.75"; MODEL may end
 * in '*' to match every model with that prefix ("claude-sonnet-*").  The
 * first matching entry wins.  Pure: no I/O. */
#ifndef ZERG_PRICING_H
#define ZERG_PRICING_H

#include <stddef.h>
#include <stdint.h>

struct zerg_argv;

struct zerg_price {
    double in, out, cache_read, cache_write; /* USD per million tokens */
};

/* Parses one entry; 0, or -1 with why ("the price 'x' is not a number")
 * filled.  model (may be NULL) gets the MODEL part. */
int zerg_pricing_parse(const char *entry, char *model, size_t model_n,
                       struct zerg_price *p, char *why, size_t why_n);
/* The price of model from the list: 1 found, 0 not (or model ""). */
int zerg_pricing_find(const struct zerg_argv *list, const char *model,
                      struct zerg_price *p);
/* What the tokens cost at p, in US dollars. */
double zerg_pricing_cost(const struct zerg_price *p, int64_t in, int64_t out,
                         int64_t cache_read, int64_t cache_write);

#endif
