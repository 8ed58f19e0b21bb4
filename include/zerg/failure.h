/* failure.h - the failure taxonomy (DESIGN §14, §20, §22), one table.
 *
 * Every failed attempt carries one class.  The worker and the agent
 * adapters decide it (src/agent/failure.c), the result file carries its
 * name, and the orchestrator reads the name once, at the protocol
 * boundary, into the enum: nothing past that compares class names.
 *
 * X(ID, name, charged, route, message):
 *   charged - whether the class charges the task's retry budget by
 *             default (the retry policy may decide otherwise);
 *   route   - where the orchestrator sends it before any policy runs:
 *             RETRY  the retry policy decides (retry, delay, charge);
 *             CRASH  the crash path: reassigned without charge, capped
 *                    by workers.max_task_crashes;
 *             STOP   the pool stops claiming: the fix is the user's;
 *             PAUSE  the pool pauses claims until the limit resets and
 *                    the task is requeued without charge;
 *   message - what the class means, for docs and `zerg logs`. */
#ifndef ZERG_FAILURE_H
#define ZERG_FAILURE_H

#define ZERG_FAILURE_CLASSES(X)                                                \
    X(TASK, "task", 1, RETRY,                                                  \
      "the work failed: its exit code or its verification")                    \
    X(TIMEOUT, "timeout", 1, RETRY, "a stage ran past its timeout")            \
    X(CRASH, "crash", 0, CRASH,                                                \
      "a process died of a signal, or zerg's own git was killed under it")     \
    X(CONFLICT, "conflict", 0, RETRY,                                          \
      "the work conflicts with work merged since it started")                  \
    X(ENVIRONMENT, "environment", 0, STOP,                                     \
      "the executor is missing, not logged in, or refuses to run as root")     \
    X(RATE_LIMIT, "rate_limit", 0, PAUSE,                                      \
      "the API said 429, a usage limit or overloaded")

enum zerg_failure_class {
#define ZERG_FC_ENUM(id, name, charged, route, msg) ZERG_FAILURE_##id,
    ZERG_FAILURE_CLASSES(ZERG_FC_ENUM)
#undef ZERG_FC_ENUM
        ZERG_FAILURE_CLASS_COUNT
};

enum zerg_failure_route {
    ZERG_ROUTE_RETRY,
    ZERG_ROUTE_CRASH,
    ZERG_ROUTE_STOP,
    ZERG_ROUTE_PAUSE,
};

/* "task", "timeout", ...; NULL for a value out of range. */
const char *zerg_failure_class_name(enum zerg_failure_class c);
/* The class named name; -EINVAL (and *out untouched) for another name. */
int zerg_failure_class_parse(const char *name, enum zerg_failure_class *out);
/* The class's row; a value out of range reads as ZERG_FAILURE_TASK's. */
int zerg_failure_class_charged(enum zerg_failure_class c);
enum zerg_failure_route zerg_failure_class_route(enum zerg_failure_class c);
const char *zerg_failure_class_message(enum zerg_failure_class c);
/* The class of a failure kind the orchestrator names ("exit", "timeout",
 * "heartbeat_stale", ...) when no class came with it; another kind, or
 * NULL, is a task failure. */
enum zerg_failure_class zerg_failure_class_of_kind(const char *kind);

#endif
