/* failure_class.c - the rows of ZERG_FAILURE_CLASSES (zerg/failure.h) as
 * lookups.  The table is the only place a class is named. */
#include "zerg/failure.h"

#include <errno.h>
#include <string.h>

struct row {
    const char *name;
    int charged;
    enum zerg_failure_route route;
    const char *message;
};

static const struct row ROWS[ZERG_FAILURE_CLASS_COUNT] = {
#define ZERG_FC_ROW(id, nm, ch, rt, msg)                                       \
    [ZERG_FAILURE_##id] = {nm, ch, ZERG_ROUTE_##rt, msg},
    ZERG_FAILURE_CLASSES(ZERG_FC_ROW)
#undef ZERG_FC_ROW
};

static const struct row *row_of(enum zerg_failure_class c)
{
    return &ROWS[(unsigned)c < ZERG_FAILURE_CLASS_COUNT ? c
                                                        : ZERG_FAILURE_TASK];
}

const char *zerg_failure_class_name(enum zerg_failure_class c)
{
    return (unsigned)c < ZERG_FAILURE_CLASS_COUNT ? ROWS[c].name : NULL;
}

int zerg_failure_class_parse(const char *name, enum zerg_failure_class *out)
{
    for (int i = 0; name && i < ZERG_FAILURE_CLASS_COUNT; i++)
        if (strcmp(name, ROWS[i].name) == 0) {
            *out = (enum zerg_failure_class)i;
            return 0;
        }
    return -EINVAL;
}

int zerg_failure_class_charged(enum zerg_failure_class c)
{
    return row_of(c)->charged;
}

enum zerg_failure_route zerg_failure_class_route(enum zerg_failure_class c)
{
    return row_of(c)->route;
}

const char *zerg_failure_class_message(enum zerg_failure_class c)
{
    return row_of(c)->message;
}

enum zerg_failure_class zerg_failure_class_of_kind(const char *kind)
{
    static const struct {
        const char *kind;
        enum zerg_failure_class cls;
    } KINDS[] = {
        {"timeout", ZERG_FAILURE_TIMEOUT},
        {"crash", ZERG_FAILURE_CRASH},
        {"heartbeat_stale", ZERG_FAILURE_CRASH},
        {"conflict", ZERG_FAILURE_CONFLICT},
        {"environment", ZERG_FAILURE_ENVIRONMENT},
        {"rate_limit", ZERG_FAILURE_RATE_LIMIT},
    }; /* every other kind (exit, verification, scope, ...) is task's */
    for (size_t i = 0; kind && i < sizeof KINDS / sizeof *KINDS; i++)
        if (strcmp(kind, KINDS[i].kind) == 0)
            return KINDS[i].cls;
    return ZERG_FAILURE_TASK;
}
