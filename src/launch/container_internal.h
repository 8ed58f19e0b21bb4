/* container_internal.h - what the container files of src/launch share: the
 * container launcher object, the growable argv the run commands are built
 * in, and one runtime call.  launcher_container.c runs workers with them,
 * container_gate.c quality gates. */
#ifndef ZERG_CONTAINER_INTERNAL_H
#define ZERG_CONTAINER_INTERNAL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "zerg/clock.h"
#include "zerg/config.h"
#include "zerg/graph.h"
#include "zerg/launcher.h"

#define KILL_TIMEOUT_NS (3 * ZERG_NS_PER_S)
#define INSPECT_TIMEOUT_NS (5 * ZERG_NS_PER_S)
#define RM_TIMEOUT_NS (10 * ZERG_NS_PER_S)
#define PS_TIMEOUT_NS (10 * ZERG_NS_PER_S)
#define DEFAULT_IMAGE "zerg-worker"

enum { IMAGE_UNKNOWN, IMAGE_PRESENT, IMAGE_MISSING };

struct container {
    struct zerg_launcher base;
    struct zerg_container_rt rt;
    int image_state; /* probed by the first spawn only */
    char image_why[512];
    char project[PATH_MAX];        /* "" until set_project or a spawn */
    char feature[ZERG_ID_MAX + 1]; /* of the first spawn */
};

static inline struct container *ct(struct zerg_launcher *l)
{
    return (struct container *)l;
}

/* container.image, or zerg-worker. */
const char *ct_image_of(const struct zerg_config *cfg);

/* A growable argv; every push copies.  A failed push marks it broken so
 * the builder can check once at the end. */
struct argv_buf {
    struct zerg_argv a;
    size_t cap;
    int oom;
};
void ct_push(struct argv_buf *b, const char *s);
void ct_pushf(struct argv_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ct_push_pair(struct argv_buf *b, const char *flag, const char *val);
/* --memory, --cpus, --pids-limit and container.run_args. */
void ct_push_limits(struct argv_buf *b, const struct zerg_config *cfg);
/* --user UID:GID, and --userns=keep-id for rootless podman. */
void ct_push_user(struct argv_buf *b, const struct zerg_container_rt *rt,
                  uid_t uid, gid_t gid);

/* FNV-1a: a short, stable tag of the run id for container names (the full
 * id is in the zerg.run label). */
uint32_t ct_run_hash(const char *s);

/* Runs `RUNTIME args...` with a timeout; 0 when it exited 0.  out (may be
 * NULL) gets its stdout. */
int ct_rt_call(struct container *c, const char *const *args, int64_t timeout_ns,
               char *out, size_t out_size);

/* container_gate.c: the launcher's gate ops (see zerg/launcher.h). */
int ct_gate_argv(struct zerg_launcher *l, const struct zerg_gate_req *req,
                 struct zerg_argv *out, char *handle, size_t handle_n,
                 struct zerg_err *err);
void ct_gate_stop(struct zerg_launcher *l, const char *handle);

#endif
