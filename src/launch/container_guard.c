/* container_guard.c - what keeps a task in a worker container from changing
 * how zerg itself runs.
 *
 * The project is mounted read-write at /workspace, so without care a task
 * could edit .zerg/config.yaml (say, container.run_args: [--privileged])
 * and the next rush would hand it more power.  Two guards:
 *
 *   - The mounts: .zerg/ and .gsd/ are mounted read-only over the project,
 *     and only what the worker must write is mounted read-write over that:
 *     the feature's run directory .zerg/state/{feature}, .zerg/logs and the
 *     two monitor files.  Those sources must be real paths inside the
 *     project (no symbolic link anywhere below the project root), or a
 *     planted link would bind-mount some other host directory read-write.
 *   - container.run_args that widen a container's powers (privileges,
 *     devices, host namespaces, extra mounts, root) are refused unless the
 *     user allows each flag from outside the project tree, in the
 *     environment: ZERG_ALLOW_RUN_ARGS="--privileged --cap-add". */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/fsio.h"
#include "zerg/launcher.h"
#include "zerg/log.h"

/* ---- run_args ---- */

/* How a risky flag's value decides whether it is risky. */
enum { ANY, HOST_NS, ROOT_USER };

struct risky {
    const char *name;  /* canonical long form */
    const char *alias; /* another long form, or NULL */
    char shorthand;    /* one-letter form, or 0 */
    int when;
};

/* Flags of `docker run` / `podman run` that reach the host or lift the
 * container's limits.  Namespace flags are risky only with a host or
 * another container's namespace (--network none is a fine restriction). */
static const struct risky risky[] = {
    {"--privileged", NULL, 0, ANY},   {"--cap-add", NULL, 0, ANY},
    {"--device", NULL, 0, ANY},       {"--device-cgroup-rule", NULL, 0, ANY},
    {"--security-opt", NULL, 0, ANY}, {"--volume", NULL, 'v', ANY},
    {"--mount", NULL, 0, ANY},        {"--volumes-from", NULL, 0, ANY},
    {"--group-add", NULL, 0, ANY},    {"--network", "--net", 0, HOST_NS},
    {"--pid", NULL, 0, HOST_NS},      {"--ipc", NULL, 0, HOST_NS},
    {"--uts", NULL, 0, HOST_NS},      {"--userns", NULL, 0, HOST_NS},
    {"--cgroupns", NULL, 0, HOST_NS}, {"--user", NULL, 'u', ROOT_USER},
};
#define NRISKY (sizeof risky / sizeof *risky)

/* Short flags of `run` that take a value: in "-eFOO" the rest is the
 * value, not more flags. */
static const char short_with_value[] = "acehlmpuvw";

static int is_root_id(const char *s, size_t n)
{
    if (n == 4 && strncmp(s, "root", 4) == 0)
        return 1;
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] != '0')
            return 0;
    return 1; /* "0", "00": uid 0 */
}

static int value_risky(int when, const char *v)
{
    if (when == ANY)
        return 1;
    if (!v)
        return 1; /* no value to judge: the runtime would take the next */
    if (when == HOST_NS)
        return strcmp(v, "host") == 0 || strncmp(v, "container:", 10) == 0 ||
               strncmp(v, "ns:", 3) == 0;
    const char *colon = strchr(v, ':');
    size_t un = colon ? (size_t)(colon - v) : strlen(v);
    return is_root_id(v, un) ||
           (colon && is_root_id(colon + 1, strlen(colon + 1)));
}

/* The entry a long flag "--name[=v]" names, or NULL. */
static const struct risky *find_long(const char *arg, const char **eq)
{
    size_t n = strcspn(arg, "=");
    *eq = arg[n] == '=' ? arg + n + 1 : NULL;
    for (size_t i = 0; i < NRISKY; i++) {
        const struct risky *r = &risky[i];
        if ((strlen(r->name) == n && strncmp(arg, r->name, n) == 0) ||
            (r->alias && strlen(r->alias) == n &&
             strncmp(arg, r->alias, n) == 0))
            return r;
    }
    return NULL;
}

static const struct risky *find_short(char c)
{
    for (size_t i = 0; i < NRISKY; i++)
        if (risky[i].shorthand == c)
            return &risky[i];
    return NULL;
}

/* The risky flag args[i] uses, or NULL.  Every element is read as a
 * possible flag (also one that follows a value-taking flag): guessing
 * wrongly which elements are values could hide a flag, while reading a
 * value as a flag only refuses too much. */
static const struct risky *risky_at(const struct zerg_argv *args, size_t i)
{
    const char *a = args->v[i], *next = i + 1 < args->n ? args->v[i + 1] : NULL;
    if (a[0] != '-' || a[1] == '\0')
        return NULL;
    if (a[1] == '-') {
        const char *eq;
        const struct risky *r = find_long(a, &eq);
        return r && value_risky(r->when, eq ? eq : next) ? r : NULL;
    }
    for (const char *c = a + 1; *c; c++) {
        const struct risky *r = find_short(*c);
        if (r && value_risky(r->when, c[1] ? c + 1 + (c[1] == '=') : next))
            return r;
        if (strchr(short_with_value, *c))
            break;
    }
    return NULL;
}

/* Does the allow list (flags separated by spaces or commas) name r? */
static int allowed_by(const char *allow, const struct risky *r)
{
    char shortname[3] = {'-', r->shorthand, '\0'};
    const char *s = allow ? allow : "";
    while (*s) {
        size_t n = strcspn(s, " ,\t");
        if (n > 0 &&
            ((strlen(r->name) == n && !strncmp(s, r->name, n)) ||
             (r->alias && strlen(r->alias) == n && !strncmp(s, r->alias, n)) ||
             (r->shorthand && n == 2 && !strncmp(s, shortname, 2))))
            return 1;
        s += n;
        s += strspn(s, " ,\t");
    }
    return 0;
}

/* Appends name to the space-separated list unless it is there. */
static void list_add(char *list, size_t size, const char *name)
{
    size_t len = strlen(list), n = strlen(name);
    for (const char *s = list; (s = strstr(s, name)); s += n)
        if ((s == list || s[-1] == ' ') && (s[n] == ' ' || !s[n]))
            return;
    snprintf(list + len, size - len, "%s%s", len ? " " : "", name);
}

int zerg_container_check_run_args(const struct zerg_argv *args,
                                  const char *allow, char *allowed,
                                  size_t allowed_size, struct zerg_err *err)
{
    if (allowed && allowed_size)
        allowed[0] = '\0';
    for (size_t i = 0; args && i < args->n; i++) {
        const struct risky *r = risky_at(args, i);
        if (!r)
            continue;
        if (!allowed_by(allow, r))
            return zerg_err_set(
                err, ZERG_EINVAL_INPUT,
                "container.run_args has '%s', which would give tasks more "
                "power over the host than a worker container has; zerg "
                "refuses it unless you allow it outside the project: "
                "ZERG_ALLOW_RUN_ARGS=\"%s\" zerg rush ...",
                args->v[i], r->name);
        if (allowed && allowed_size)
            list_add(allowed, allowed_size, r->name);
    }
    return 0;
}

int zerg_container_run_args_ok(const struct zerg_config *cfg,
                               struct zerg_log *log, struct zerg_err *err)
{
    char allowed[256];
    const char *allow = getenv("ZERG_ALLOW_RUN_ARGS");
    int rc = zerg_container_check_run_args(&cfg->container_run_args, allow,
                                           allowed, sizeof allowed, err);
    if (rc == 0 && allowed[0])
        zerg_log_event(log, ZERG_LOG_ORCH, ZERG_LOG_WARN,
                       "container_run_args_allowed", NULL, NULL,
                       "container.run_args passes %s, allowed by "
                       "ZERG_ALLOW_RUN_ARGS: tasks in the worker containers "
                       "get that much more power over this host",
                       allowed);
    return rc;
}

/* ---- the mounts' sources ---- */

/* path (project + rel) must resolve to exactly itself below the project's
 * real path: no link on the way, so the mount is of the project's own
 * directory or file. */
static int check_real(const char *real_project, const char *project,
                      const char *rel, struct zerg_err *err)
{
    char path[PATH_MAX], want[PATH_MAX], got[PATH_MAX];
    if (zerg_fsio_path(path, sizeof path, "%s/%s", project, rel) < 0 ||
        zerg_fsio_path(want, sizeof want, "%s/%s", real_project, rel) < 0)
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "project path too long");
    if (!realpath(path, got))
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "cannot mount %s into the worker container: %s",
                            path, strerror(errno));
    if (strcmp(got, want) != 0)
        return zerg_err_set(err, ZERG_EINVAL_INPUT,
                            "cannot mount %s into the worker container: it "
                            "leads to %s through a symbolic link (it must be "
                            "the project's own %s)",
                            path, got, rel);
    return 0;
}

/* Creates what the worker writes through its own mounts (a bind mount
 * needs its source, and a missing mount point cannot be made inside the
 * read-only .zerg). */
static int make_sources(const char *project, const char *feature,
                        struct zerg_err *err)
{
    static const char *const files[] = {"monitor.log", "monitor.jsonl"};
    char path[PATH_MAX];
    int rc = zerg_fsio_path(path, sizeof path, "%s/.zerg/state/%s", project,
                            feature);
    if (rc == 0)
        rc = zerg_fsio_mkdirs(path, 0755);
    if (rc == 0)
        rc = zerg_fsio_path(path, sizeof path, "%s/.zerg/logs", project);
    if (rc == 0)
        rc = zerg_fsio_mkdirs(path, 0755);
    if (rc < 0)
        return zerg_err_set(err, rc, "cannot create %s: %s", path,
                            zerg_strerror(rc));
    for (size_t i = 0; i < 2; i++) {
        if (zerg_fsio_path(path, sizeof path, "%s/.zerg/%s", project,
                           files[i]) < 0)
            return zerg_err_set(err, ZERG_EINVAL_INPUT,
                                "project path too long");
        int fd = zerg_fsio_open_append(path, err);
        if (fd < 0)
            return fd;
        close(fd);
    }
    return 0;
}

int zerg_container_prepare_mounts(const char *project, const char *feature,
                                  struct zerg_err *err)
{
    char real[PATH_MAX], rel[PATH_MAX];
    int rc = make_sources(project, feature, err);
    if (rc < 0)
        return rc;
    if (!realpath(project, real))
        return zerg_err_set(err, ZERG_EINVAL_INPUT, "cannot resolve %s: %s",
                            project, strerror(errno));
    const char *const fixed[] = {".zerg", ".zerg/logs", ".zerg/monitor.log",
                                 ".zerg/monitor.jsonl", ".gsd"};
    for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
        if ((rc = check_real(real, project, fixed[i], err)) < 0)
            return rc;
    snprintf(rel, sizeof rel, ".zerg/state/%s", feature);
    return check_real(real, project, rel, err);
}
