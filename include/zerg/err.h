/* err.h - error reporting shared by every module.
 *
 * Functions return 0 on success and a negative value on failure (-errno
 * where the failure came from the OS, ZERG_E* otherwise).  Where a user must
 * see *why* (config line:col, graph task id, policy traceback) the caller
 * passes a struct zerg_err and the callee writes a sentence into it. */
#ifndef ZERG_ERR_H
#define ZERG_ERR_H

#include <stddef.h>

/* Process exit codes: DESIGN.md section 10. */
enum {
    ZERG_EXIT_OK = 0,     /* all tasks complete */
    ZERG_EXIT_FAIL = 1,   /* failed/blocked tasks or a runtime failure */
    ZERG_EXIT_USAGE = 2,  /* usage, config, graph or policy-load error */
    ZERG_EXIT_LOCKED = 3, /* another rush holds the feature's lock */
};

/* Non-errno error codes (all below -4095 so they never clash with -errno). */
enum {
    ZERG_EINVAL_INPUT =
        -5000,              /* user input (config, graph, state) is invalid */
    ZERG_ECORRUPT = -5001,  /* a file exists but cannot be parsed */
    ZERG_ELOCKED = -5002,   /* lock held by another process */
    ZERG_ENOTFOUND = -5003, /* a named thing does not exist */
    ZERG_EPOLICY = -5004,   /* a policy failed (syntax, runtime, budget) */
    ZERG_ESTALE = -5005,    /* a fenced message from a dead incarnation */
    ZERG_ENOTREG = -5006,   /* a FIFO, socket or device where a file is due */
    ZERG_ESYMLINK = -5007,  /* a symbolic link where zerg follows none */
    ZERG_EOUTSIDE = -5008,  /* a path that resolves outside the project */
};

#define ZERG_ERR_MSG_MAX 2048

struct zerg_err {
    int code;                   /* last error code, 0 when none */
    char msg[ZERG_ERR_MSG_MAX]; /* human sentence, "" when none */
};

/* Records code and a printf-style message; returns code so callers can
 * `return zerg_err_set(err, -EIO, "...")`.  err may be NULL. */
int zerg_err_set(struct zerg_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepends "prefix: " to an existing message (context while unwinding). */
void zerg_err_prefix(struct zerg_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void zerg_err_clear(struct zerg_err *err);

/* Short text for a code: strerror for -errno, a name for ZERG_E*. */
const char *zerg_strerror(int code);

#endif
