/* container_argv.c - the pieces every container run command is built from
 * (see container_internal.h): a growable argv, the user and limit flags,
 * the run-id tag of container names, and one call of the runtime CLI. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "container_internal.h"

const char *ct_image_of(const struct zerg_config *cfg)
{
    return cfg->container_image && cfg->container_image[0]
               ? cfg->container_image
               : DEFAULT_IMAGE;
}

void ct_push(struct argv_buf *b, const char *s)
{
    if (b->oom)
        return;
    if (b->a.n + 2 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        char **v = realloc(b->a.v, cap * sizeof *v);
        if (!v) {
            b->oom = 1;
            return;
        }
        b->a.v = v;
        b->cap = cap;
    }
    char *copy = strdup(s);
    if (!copy) {
        b->oom = 1;
        return;
    }
    b->a.v[b->a.n++] = copy;
    b->a.v[b->a.n] = NULL;
}

void ct_pushf(struct argv_buf *b, const char *fmt, ...)
{
    char buf[PATH_MAX + 256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf)
        b->oom = 1; /* paths were length-checked: cannot happen */
    else
        ct_push(b, buf);
}

void ct_push_pair(struct argv_buf *b, const char *flag, const char *val)
{
    ct_push(b, flag);
    ct_push(b, val);
}

void ct_push_limits(struct argv_buf *b, const struct zerg_config *cfg)
{
    if (cfg->container_memory && cfg->container_memory[0])
        ct_pushf(b, "--memory=%s", cfg->container_memory);
    if (cfg->container_cpus > 0)
        ct_pushf(b, "--cpus=%g", cfg->container_cpus);
    if (cfg->container_pids_limit > 0)
        ct_pushf(b, "--pids-limit=%d", cfg->container_pids_limit);
    for (size_t i = 0; i < cfg->container_run_args.n; i++)
        ct_push(b, cfg->container_run_args.v[i]);
}

/* Files written in the project belong to the user who ran zerg.  Rootless
 * podman maps that user to root inside unless told to keep ids. */
void ct_push_user(struct argv_buf *b, const struct zerg_container_rt *rt,
                  uid_t uid, gid_t gid)
{
    ct_pushf(b, "--user=%u:%u", (unsigned)uid, (unsigned)gid);
    if (rt->podman && uid != 0)
        ct_push(b, "--userns=keep-id");
}

void zerg_container_argv_free(struct zerg_argv *a)
{
    for (size_t i = 0; a->v && i < a->n; i++)
        free(a->v[i]);
    free(a->v);
    a->v = NULL;
    a->n = 0;
}

uint32_t ct_run_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; s && *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

int ct_rt_call(struct container *c, const char *const *args, int64_t timeout_ns,
               char *out, size_t out_size)
{
    char *argv[16];
    size_t n = 0;
    int st = 0;

    argv[n++] = c->rt.path;
    for (; args[n - 1] && n < 15; n++)
        argv[n] = (char *)args[n - 1];
    argv[n] = NULL;
    int rc = zerg_container_exec(argv, timeout_ns, out, out_size, NULL, 0, &st);
    if (rc < 0)
        return rc;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}
