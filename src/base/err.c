/* err.c - the error struct every module fills in (see zerg/err.h).
 *
 * Messages are sentences a user reads; they are truncated, never overflowed,
 * at ZERG_ERR_MSG_MAX bytes. */
#include "zerg/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int zerg_err_set(struct zerg_err *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
    return code;
}

/* Copies a then b into dst, at most room bytes in all; returns the count. */
static size_t append(char *dst, size_t room, const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    na = na < room ? na : room;
    memcpy(dst, a, na);
    nb = nb < room - na ? nb : room - na;
    memcpy(dst + na, b, nb);
    return na + nb;
}

void zerg_err_prefix(struct zerg_err *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[ZERG_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);

    /* Build into a copy: the old message is an input of the new one. */
    char old[ZERG_ERR_MSG_MAX];
    memcpy(old, err->msg, sizeof old);
    old[sizeof old - 1] = '\0';
    size_t cap = sizeof err->msg - 1, n = strlen(prefix);
    memcpy(err->msg, prefix, n);
    if (old[0])
        n += append(err->msg + n, cap - n, ": ", old);
    err->msg[n] = '\0';
}

void zerg_err_clear(struct zerg_err *err)
{
    if (!err)
        return;
    err->code = 0;
    err->msg[0] = '\0';
}

const char *zerg_strerror(int code)
{
    switch (code) {
    case 0:
        return "Success";
    case ZERG_EINVAL_INPUT:
        return "invalid input";
    case ZERG_ECORRUPT:
        return "corrupt file";
    case ZERG_ELOCKED:
        return "locked by another process";
    case ZERG_ENOTFOUND:
        return "not found";
    case ZERG_EPOLICY:
        return "policy failed";
    case ZERG_ESTALE:
        return "stale message";
    case ZERG_ENOTREG:
        return "not a regular file";
    case ZERG_ESYMLINK:
        return "a symbolic link, not followed";
    case ZERG_EOUTSIDE:
        return "outside the project";
    }
    if (code < 0 && code > -4096)
        return strerror(-code);
    return "unknown error";
}
