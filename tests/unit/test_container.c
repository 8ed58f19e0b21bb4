/* test_container.c - container mode: the run argv, runtime resolution
 * against fake runtimes, exit classification, and the launcher ops driving
 * a fake runtime (shell scripts in a temp dir that answer like a working or
 * broken docker/podman and record how they were called). */
#include "testutil.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/launcher.h"

/* One fake CLI; its behaviour comes from FAKE_* variables so a test sets
 * only what it needs.  Every call is appended to $FAKE_CALLS. */
static const char fake_script[] =
    "#!/bin/sh\n"
    "echo \"$*\" >> \"${FAKE_CALLS:-/dev/null}\"\n"
    "case \"$1\" in\n"
    "--version) echo \"${FAKE_VERSION:-podman version 9.9.9}\" ;;\n"
    "info) if [ -n \"$FAKE_INFO_FAIL\" ]; then\n"
    "        echo \"$FAKE_INFO_FAIL\" >&2; exit 1; fi ;;\n"
    "image) if [ \"$5\" != zerg-worker ]; then\n"
    "        echo \"Error: inspecting object: $5: image not known\" >&2\n"
    "        exit 125; fi; echo sha256:0123 ;;\n"
    "run) echo \"RUN $*\"\n"
    "     [ -n \"$FAKE_RUN_ERR\" ] && echo \"$FAKE_RUN_ERR\" >&2\n"
    "     [ -n \"$FAKE_RUN_BLOCK\" ] && exec /bin/sleep 30\n"
    "     exit \"${FAKE_RUN_EXIT:-0}\" ;;\n"
    "container) echo \"${FAKE_OOM:-false}\" ;;\n"
    "rm) echo \"$3\" ;;\n"
    "kill) exit \"${FAKE_KILL_EXIT:-0}\" ;;\n"
    "ps) case \"$*\" in\n"
    "    *zerg.run=R1*) echo zerg-current ;;\n"
    "    *) printf 'zerg-old1\\nzerg-current\\nzerg-old2\\n' ;; esac ;;\n"
    "esac\n";

static const char *fake_vars[] = {
    "FAKE_CALLS", "FAKE_VERSION", "FAKE_INFO_FAIL", "FAKE_RUN_ERR",
    "FAKE_RUN_BLOCK", "FAKE_RUN_EXIT", "FAKE_OOM", "FAKE_KILL_EXIT",
};

struct fx {
    char dir[PATH_MAX];
    char calls[PATH_MAX + 16];
    char path_env[8192];
    struct zerg_config cfg;
    char *argv_store[4];
};

static void install_fake(struct fx *f, const char *name)
{
    char path[PATH_MAX + 64];
    tu_write(f->dir, name, fake_script);
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    assert_int_equal(chmod(path, 0755), 0);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "%s", tu_mkdtemp());
    snprintf(f->calls, sizeof f->calls, "%s/calls", f->dir);
    const char *p = getenv("PATH");
    snprintf(f->path_env, sizeof f->path_env, "%s", p ? p : "");
    setenv("FAKE_CALLS", f->calls, 1);
    f->cfg.container_image = "zerg-worker";
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    for (size_t i = 0; i < sizeof fake_vars / sizeof *fake_vars; i++)
        unsetenv(fake_vars[i]);
    setenv("PATH", f->path_env, 1);
    tu_rmtree(f->dir);
    free(f);
    return 0;
}

/* Only the fake dir on PATH: the real podman/docker must not be found. */
static void path_only_fakes(struct fx *f)
{
    setenv("PATH", f->dir, 1);
}

static int count_lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *s = text; s && (s = strstr(s, needle)); s++)
        n++;
    return n;
}

/* ---- exit classification ---- */

static void test_exit_status_plain(void **state)
{
    (void)state;
    struct zerg_exit_info info;

    zerg_exit_info_from_status(W_EXITCODE(0, 0), &info);
    assert_int_equal(info.exit_code, 0);
    assert_int_equal(info.signal, 0);
    assert_string_equal(info.detail, "");

    zerg_exit_info_from_status(W_EXITCODE(3, 0), &info);
    assert_int_equal(info.exit_code, 3);
    assert_string_equal(info.detail, "exited with code 3");

    zerg_exit_info_from_status(W_EXITCODE(0, SIGKILL), &info);
    assert_int_equal(info.exit_code, -1);
    assert_int_equal(info.signal, SIGKILL);
    assert_true(tu_contains(info.detail, "killed by signal 9"));
}

static void test_exit_container_table(void **state)
{
    (void)state;
    struct zerg_exit_info info;
    const char *tail = "worker starting\nError: short-name \"zw\" did not "
                       "resolve to an alias\n\n";

    zerg_container_exit_info(W_EXITCODE(125, 0), 0, NULL, tail, &info);
    assert_true(info.runtime_error);
    assert_int_equal(info.exit_code, 125);
    assert_true(tu_contains(info.detail, "container runtime failed (exit "
                                         "125): Error: short-name"));

    zerg_container_exit_info(W_EXITCODE(126, 0), 0, NULL,
                             "exec: \"/etc/passwd\": permission denied\n",
                             &info);
    assert_true(info.runtime_error);
    assert_true(tu_contains(info.detail, "cannot be run in the image"));
    assert_true(tu_contains(info.detail, "permission denied"));

    zerg_container_exit_info(W_EXITCODE(127, 0), 0, NULL, NULL, &info);
    assert_true(info.runtime_error);
    assert_string_equal(info.detail, "the worker command was not found in "
                                     "the image (exit 127)");

    zerg_container_exit_info(W_EXITCODE(137, 0), 0, NULL, NULL, &info);
    assert_false(info.runtime_error);
    assert_int_equal(info.exit_code, -1);
    assert_int_equal(info.signal, 9);
    assert_false(info.oom_killed);
    assert_true(tu_contains(info.detail, "container killed by signal 9"));

    zerg_container_exit_info(W_EXITCODE(143, 0), 0, NULL, NULL, &info);
    assert_int_equal(info.signal, SIGTERM);

    zerg_container_exit_info(W_EXITCODE(0, 0), 0, NULL, "bye\n", &info);
    assert_int_equal(info.exit_code, 0);
    assert_int_equal(info.signal, 0);
    assert_false(info.runtime_error);
    assert_string_equal(info.detail, "");

    zerg_container_exit_info(W_EXITCODE(3, 0), 0, NULL,
                             "cannot read task graph x.json\n", &info);
    assert_int_equal(info.exit_code, 3);
    assert_false(info.runtime_error);
    assert_string_equal(info.detail,
                        "exited with code 3: cannot read task graph x.json");

    zerg_container_exit_info(W_EXITCODE(1, 0), 0, NULL, "", &info);
    assert_int_equal(info.exit_code, 1);
    assert_string_equal(info.detail, "exited with code 1");
}

static void test_exit_container_oom(void **state)
{
    (void)state;
    struct zerg_exit_info info;

    zerg_container_exit_info(W_EXITCODE(137, 0), 1, "64m", NULL, &info);
    assert_true(info.oom_killed);
    assert_int_equal(info.signal, 9);
    assert_string_equal(info.detail, "killed by the kernel OOM killer "
                                     "(container.memory 64m)");

    /* Not reported, but a SIGKILL under a memory limit gets the hint. */
    zerg_container_exit_info(W_EXITCODE(137, 0), 0, "64m", NULL, &info);
    assert_false(info.oom_killed);
    assert_true(tu_contains(info.detail, "memory limit 64m: possibly out "
                                         "of memory"));

    /* The client itself killed by signal 9 counts the same. */
    zerg_container_exit_info(W_EXITCODE(0, SIGKILL), 0, NULL, NULL, &info);
    assert_int_equal(info.signal, 9);
    assert_false(info.runtime_error);
}

static void test_last_line(void **state)
{
    (void)state;
    char buf[64];
    zerg_container_last_line("a\n  second line  \n\n \n", buf, sizeof buf);
    assert_string_equal(buf, "second line");
    zerg_container_last_line("", buf, sizeof buf);
    assert_string_equal(buf, "");
    zerg_container_last_line(NULL, buf, sizeof buf);
    assert_string_equal(buf, "");
}

/* ---- the run argv ---- */

static struct zerg_spawn_req req_for(const char *project, const char *feat)
{
    struct zerg_spawn_req r = {
        .slot = 2,
        .epoch = 7,
        .feature = feat,
        .run_id = "20260203T054155Z-4242",
        .project = project,
        .zerg_bin = "/usr/bin/zerg",
    };
    return r;
}

static ssize_t find_arg(const struct zerg_argv *a, const char *s)
{
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], s) == 0)
            return (ssize_t)i;
    print_error("argument \"%s\" missing\n", s);
    return -1;
}

static int has_arg_prefix(const struct zerg_argv *a, const char *prefix)
{
    for (size_t i = 0; i < a->n; i++)
        if (strncmp(a->v[i], prefix, strlen(prefix)) == 0)
            return 1;
    return 0;
}

static void test_argv_full(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt = {.path = "/opt/bin/podman",
                                   .name = "podman", .podman = 1};
    char *extra[] = {"--network", "none", "-e", "A=1 2", NULL};
    struct zerg_argv a;
    struct zerg_err err = {0};
    struct zerg_spawn_req r = req_for("/home/u/proj", "auth");

    f->cfg.container_image = "registry.local/zw:1";
    f->cfg.container_memory = "512m";
    f->cfg.container_cpus = 1.5;
    f->cfg.container_pids_limit = 100;
    f->cfg.container_run_args.v = extra;
    f->cfg.container_run_args.n = 4;
    assert_int_equal(zerg_container_run_argv(&f->cfg, &rt, &r, 1000, 1001, &a,
                                             &err), 0);
    assert_null(a.v[a.n]);
    assert_string_equal(a.v[0], "/opt/bin/podman");
    assert_string_equal(a.v[1], "run");

    const char *must[] = {
        "--init",
        "--label=zerg.feature=auth",
        "--label=zerg.run=20260203T054155Z-4242",
        "--label=zerg.worker=2",
        "--label=zerg.epoch=7",
        "--label=zerg.project=/home/u/proj",
        "--user=1000:1001",
        "--userns=keep-id",
        "--volume=/home/u/proj:/workspace",
        "--volume=/home/u/proj/.zerg/state:/workspace/.zerg/state:rw",
        "--volume=/home/u/proj/.gsd/specs/auth:/workspace/.gsd/specs/auth:ro",
        "--env=ZERG_FEATURE=auth",
        "--env=ZERG_WORKER_ID=2",
        "--env=ZERG_EPOCH=7",
        "--env=ZERG_RUN_ID=20260203T054155Z-4242",
        "--memory=512m",
        "--cpus=1.5",
        "--pids-limit=100",
    };
    for (size_t i = 0; i < sizeof must / sizeof *must; i++)
        assert_true(find_arg(&a, must[i]) > 0);
    ssize_t wd = find_arg(&a, "--workdir");
    assert_string_equal(a.v[wd + 1], "/workspace");
    ssize_t nm = find_arg(&a, "--name");
    assert_string_equal(a.v[nm + 1], "zerg-auth-");
}
