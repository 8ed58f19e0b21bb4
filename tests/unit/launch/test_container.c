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

#include "launch/container_internal.h"
#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/launcher.h"
#include "zerg/text.h"

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
    "run) [ -n \"$FAKE_RUN_ERR\" ] && echo \"$FAKE_RUN_ERR\" >&2\n"
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
    "FAKE_CALLS",     "FAKE_VERSION",  "FAKE_INFO_FAIL", "FAKE_RUN_ERR",
    "FAKE_RUN_BLOCK", "FAKE_RUN_EXIT", "FAKE_OOM",       "FAKE_KILL_EXIT",
};

struct fx {
    char dir[PATH_MAX];
    char calls[PATH_MAX + 16];
    char path_env[8192];
    struct zerg_config cfg;
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

    /* Docker puts a usage hint below the cause; the cause is the detail. */
    zerg_container_exit_info(W_EXITCODE(125, 0), 0, NULL,
                             "docker: Error response from daemon: runc "
                             "create failed: unable to apply caps\n\n"
                             "Run 'docker run --help' for more "
                             "information\n",
                             &info);
    assert_true(tu_contains(info.detail, "(exit 125): docker: Error response "
                                         "from daemon: runc create failed"));
    /* A task's own line that looks alike stays when it is not last. */
    zerg_container_exit_info(W_EXITCODE(3, 0), 0, NULL,
                             "Run 'x --help' first\nreal cause\n", &info);
    assert_string_equal(info.detail, "exited with code 3: real cause");
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
    zerg_last_line("a\n  second line  \n\n \n", buf, sizeof buf);
    assert_string_equal(buf, "second line");
    zerg_last_line("", buf, sizeof buf);
    assert_string_equal(buf, "");
    zerg_last_line(NULL, buf, sizeof buf);
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

/* Worktree isolation: the worker's worktree holds a repository of its
 * own, so of the host's git dir only the objects are mounted, read-only,
 * at the path the host found (in a project below a directory named
 * "worktrees" too), and the worker is told where they are; nothing
 * mounts the git dir itself writable; a worktree whose .git a task
 * rewrote to name another host directory chooses no mount (DESIGN §19). */
static void test_argv_git_dir_from_host(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt = {
        .path = "/usr/bin/podman", .name = "podman", .podman = 1};
    struct zerg_argv a;
    struct zerg_err err = {0};
    char wt[PATH_MAX];
    snprintf(wt, sizeof wt, "%s", tu_mkdtemp());
    tu_write(wt, ".git", "gitdir: /etc/worktrees/x\n");
    struct zerg_spawn_req r = req_for("/srv/worktrees/proj", "auth");
    r.workspace = wt;
    r.git_dir = "/srv/worktrees/proj/.git";
    assert_int_equal(
        zerg_container_run_argv(&f->cfg, &rt, &r, 1000, 1001, &a, &err), 0);
    assert_true(find_arg(&a, "--volume=/srv/worktrees/proj/.git/objects:"
                             "/srv/worktrees/proj/.git/objects:ro") > 0);
    ssize_t at = find_arg(&a, "--objects");
    assert_true(at > 0);
    assert_string_equal(a.v[at + 1], "/srv/worktrees/proj/.git/objects");
    for (size_t i = 0; i < a.n; i++) {
        assert_null(strstr(a.v[i], "/etc"));
        assert_null(strstr(a.v[i], "/srv/worktrees/proj/.git:"));
    }
    zerg_container_argv_free(&a);
    tu_rmtree(wt);
}

/* Without worktrees the project's own .git is in /workspace: mounted
 * over it read-only (DESIGN §19). */
static void test_argv_dotgit_read_only(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt = {
        .path = "/usr/bin/podman", .name = "podman", .podman = 1};
    struct zerg_argv a;
    struct zerg_err err = {0};
    char proj[PATH_MAX], want[2 * PATH_MAX], top[2 * PATH_MAX];
    snprintf(proj, sizeof proj, "%s", tu_mkdtemp());
    tu_write(proj, ".git/HEAD", "ref: refs/heads/main\n");
    struct zerg_spawn_req r = req_for(proj, "auth");
    assert_int_equal(
        zerg_container_run_argv(&f->cfg, &rt, &r, 1000, 1001, &a, &err), 0);
    snprintf(want, sizeof want, "--volume=%s/.git:/workspace/.git:ro", proj);
    snprintf(top, sizeof top, "--volume=%s:/workspace", proj);
    ssize_t at = find_arg(&a, want), ws = find_arg(&a, top);
    assert_true(at > 0);
    assert_true(ws > 0 && ws < at); /* over the project's mount */
    zerg_container_argv_free(&a);
    tu_rmtree(proj);
}

/* A gate's container (DESIGN §19): the gate worktree at /workspace, the
 * git dir read-only, the project's subdirectory as the workdir, the
 * workers' limits and run_args, the image, and sh -c with the command as
 * one argument; nothing of .zerg or the project root. */
static void test_gate_argv(void **state)
{
    struct fx *f = *state;
    struct container c = {
        .rt = {.path = "podman", .name = "podman", .podman = 1}};
    char *extra[] = {"--network", "none", NULL};
    struct zerg_argv a;
    struct zerg_err err = {0};
    char handle[160];
    c.base.cfg = &f->cfg;
    f->cfg.container_image = "zw:1";
    f->cfg.container_memory = "1g";
    f->cfg.container_run_args.v = extra;
    f->cfg.container_run_args.n = 2;
    struct zerg_gate_req r = {
        .feature = "auth",
        .run_id = "20260203T054155Z-4242",
        .project = "/srv/worktrees/p",
        .name = "tests",
        .level = 2,
        .dir = "/srv/worktrees/p/.zerg-worktrees/auth/gate/sub",
        .top = "/srv/worktrees/p/.zerg-worktrees/auth/gate",
        .git_dir = "/srv/worktrees/p/.git",
        .command = "make test; echo $HOME",
    };
    assert_int_equal(ct_gate_argv(&c.base, &r, &a, handle, sizeof handle, &err),
                     0);
    assert_string_equal(a.v[0], "podman");
    assert_string_equal(a.v[1], "run");
    const char *must[] = {
        "--rm",
        "--init",
        "--label=zerg.feature=auth",
        "--label=zerg.run=20260203T054155Z-4242",
        "--label=zerg.gate=tests",
        "--label=zerg.project=/srv/worktrees/p",
        "--volume=/srv/worktrees/p/.zerg-worktrees/auth/gate:/workspace",
        "--volume=/srv/worktrees/p/.git:/srv/worktrees/p/.git:ro",
        "--workdir=/workspace/sub",
        "--env=ZERG_GATE=tests",
        "--env=ZERG_LEVEL=2",
        "--memory=1g",
        "--network",
        "zw:1"};
    for (size_t i = 0; i < sizeof must / sizeof *must; i++)
        assert_true(find_arg(&a, must[i]) > 0);
    assert_string_equal(a.v[a.n - 3], "/bin/sh");
    assert_string_equal(a.v[a.n - 2], "-c");
    assert_string_equal(a.v[a.n - 1], "make test; echo $HOME");
    assert_true(find_arg(&a, "--image") < 0);
    for (size_t i = 0; i < a.n; i++)
        assert_null(strstr(a.v[i], "/.zerg:"));
    ssize_t nm = find_arg(&a, "--name");
    assert_string_equal(a.v[nm + 1], handle);
    assert_int_equal(strncmp(handle, "zerg-auth-", 10), 0);
    zerg_container_argv_free(&a);

    r.dir = "/elsewhere";
    assert_true(ct_gate_argv(&c.base, &r, &a, handle, sizeof handle, &err) < 0);
    r.dir = r.top = "/srv/a:b/gate";
    assert_int_equal(ct_gate_argv(&c.base, &r, &a, handle, sizeof handle, &err),
                     ZERG_EINVAL_INPUT);
}

static void test_argv_full(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt = {
        .path = "/opt/bin/podman", .name = "podman", .podman = 1};
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
    assert_int_equal(
        zerg_container_run_argv(&f->cfg, &rt, &r, 1000, 1001, &a, &err), 0);
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
        "--volume=/home/u/proj/.zerg:/workspace/.zerg:ro",
        "--volume=/home/u/proj/.zerg/state/auth:/workspace/.zerg/state/auth:rw",
        "--volume=/home/u/proj/.zerg/logs:/workspace/.zerg/logs:rw",
        "--volume=/home/u/proj/.zerg/monitor.log:"
        "/workspace/.zerg/monitor.log:rw",
        "--volume=/home/u/proj/.zerg/monitor.jsonl:"
        "/workspace/.zerg/monitor.jsonl:rw",
        "--volume=/home/u/proj/.gsd:/workspace/.gsd:ro",
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
    assert_true(strncmp(a.v[nm + 1], "zerg-auth-", 10) == 0);
    assert_string_equal(a.v[nm + 1] + 18, "-w2-e7");

    /* run_args verbatim, in order, after the limits and before the image;
     * then the image and the worker command, and nothing after it. */
    ssize_t ra = find_arg(&a, "--network");
    assert_string_equal(a.v[ra + 1], "none");
    assert_string_equal(a.v[ra + 2], "-e");
    assert_string_equal(a.v[ra + 3], "A=1 2");
    assert_true(ra > find_arg(&a, "--pids-limit=100"));
    const char *tail[] = {"registry.local/zw:1",
                          "zerg",
                          "worker",
                          "-C",
                          "/workspace",
                          "--feature",
                          "auth",
                          "--slot",
                          "2",
                          "--epoch",
                          "7",
                          "--run-id",
                          "20260203T054155Z-4242"};
    size_t nt = sizeof tail / sizeof *tail;
    assert_int_equal(a.n, (size_t)ra + 4 + nt);
    for (size_t i = 0; i < nt; i++)
        assert_string_equal(a.v[a.n - nt + i], tail[i]);

    /* zerg decides restarts and runs unprivileged; no shell anywhere. */
    assert_false(has_arg_prefix(&a, "--rm"));
    assert_false(has_arg_prefix(&a, "--restart"));
    assert_false(has_arg_prefix(&a, "--privileged"));
    for (size_t i = 0; i < a.n; i++) {
        assert_string_not_equal(a.v[i], "sh");
        assert_string_not_equal(a.v[i], "-c");
    }
    zerg_container_argv_free(&a);
    assert_null(a.v);
}

static void test_argv_defaults_docker_root(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt = {.path = "docker", .name = "docker"};
    struct zerg_argv a;
    struct zerg_spawn_req r = req_for("/srv/p", "f1");

    assert_int_equal(zerg_container_run_argv(&f->cfg, &rt, &r, 0, 0, &a, NULL),
                     0);
    assert_string_equal(a.v[0], "docker");
    assert_true(find_arg(&a, "--user=0:0") > 0);
    assert_true(find_arg(&a, "zerg-worker") > 0);
    /* No limits, no keep-id (docker, and root under podman needs none). */
    assert_false(has_arg_prefix(&a, "--userns"));
    assert_false(has_arg_prefix(&a, "--memory"));
    assert_false(has_arg_prefix(&a, "--cpus"));
    assert_false(has_arg_prefix(&a, "--pids-limit"));
    zerg_container_argv_free(&a);

    rt.podman = 1;
    assert_int_equal(zerg_container_run_argv(&f->cfg, &rt, &r, 0, 0, &a, NULL),
                     0);
    assert_false(has_arg_prefix(&a, "--userns"));
    zerg_container_argv_free(&a);
}

static void test_argv_bad_project(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt = {.path = "podman", .name = "podman"};
    struct zerg_argv a;
    struct zerg_err err = {0};
    struct zerg_spawn_req r = req_for("/home/u/a:b", "f");

    assert_int_equal(zerg_container_run_argv(&f->cfg, &rt, &r, 0, 0, &a, &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "project path '/home/u/a:b' contains "
                                     "':'"));
    assert_null(a.v);

    r = req_for("rel/proj", "f");
    assert_int_equal(zerg_container_run_argv(&f->cfg, &rt, &r, 0, 0, &a, &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "'rel/proj' is not absolute"));
}

static void test_name_fits(void **state)
{
    (void)state;
    char feat[65], name[sizeof((struct zerg_proc *)0)->name];
    memset(feat, 'x', 64);
    feat[64] = '\0';
    struct zerg_spawn_req r = req_for("/p", feat);
    r.epoch = UINT64_MAX;
    r.slot = 999;
    zerg_container_name(name, sizeof name, &r);
    assert_int_equal(strlen(name), sizeof name - 1);
    assert_true(strncmp(name, "zerg-xxxx", 9) == 0);
    assert_true(tu_contains(name, "-w999-e18446744073709551615"));

    /* Same run -> same tag; another run -> another. */
    char a[96], b[96];
    r = req_for("/p", "f");
    zerg_container_name(a, sizeof a, &r);
    r.run_id = "20260203T054155Z-4243";
    zerg_container_name(b, sizeof b, &r);
    assert_string_not_equal(a, b);
    assert_int_equal(strlen(a), strlen("zerg-f-01234567-w2-e7"));
}

/* ---- running a command ---- */

static void test_exec_capture_and_status(void **state)
{
    (void)state;
    char out[16], err[16];
    int st = -1;
    char *argv[] = {"/bin/sh", "-c",
                    "echo 0123456789abcdefXYZ; echo first >&2; "
                    "echo the-last-line >&2; exit 4",
                    NULL};
    assert_int_equal(zerg_container_exec(argv, 10 * 1000000000LL, out,
                                         sizeof out, err, sizeof err, &st),
                     0);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 4);
    assert_string_equal(out, "0123456789abcde");   /* the head */
    assert_string_equal(err, "\nthe-last-line\n"); /* the tail */

    char *missing[] = {"zerg-no-such-runtime-xyz", "info", NULL};
    assert_int_equal(
        zerg_container_exec(missing, 1000000000LL, NULL, 0, NULL, 0, &st),
        -ENOENT);
}

static void test_exec_timeout(void **state)
{
    (void)state;
    int st = 0;
    char *argv[] = {"/bin/sleep", "30", NULL};
    /* The deadline is the behaviour under test: 50 ms, not 30 s. */
    assert_int_equal(
        zerg_container_exec(argv, 50 * 1000000LL, NULL, 0, NULL, 0, &st),
        -ETIMEDOUT);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
}

/* ---- runtime resolution with fake runtimes ---- */

static void test_resolve_none_on_path(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt;
    char why[1024];

    path_only_fakes(f);
    assert_int_equal(zerg_container_resolve("auto", &rt, why, sizeof why),
                     ZERG_ENOTFOUND);
    assert_string_equal(why, "no working container runtime: podman: not "
                             "found on PATH; docker: not found on PATH");
}

static void test_resolve_docker_without_daemon(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt;
    char why[1024];

    install_fake(f, "docker");
    path_only_fakes(f);
    setenv("FAKE_VERSION", "Docker version 24.0.7, build afdd53b", 1);
    setenv("FAKE_INFO_FAIL",
           "Cannot connect to the Docker daemon at "
           "unix:///var/run/docker.sock. Is the docker "
           "daemon running?",
           1);
    assert_int_equal(zerg_container_resolve(NULL, &rt, why, sizeof why),
                     ZERG_ENOTFOUND);
    assert_true(tu_contains(why, "podman: not found on PATH"));
    assert_true(tu_contains(why, "docker: client found but no daemon "
                                 "(Cannot connect to the Docker daemon"));

    /* Asked for by name: the same verdict. */
    assert_int_equal(zerg_container_resolve("docker", &rt, why, sizeof why),
                     ZERG_ENOTFOUND);
    assert_true(tu_contains(why, "docker: client found but no daemon"));

    /* zerg_container_available says the same for --mode auto. */
    f->cfg.container_runtime = "auto";
    assert_int_equal(zerg_container_available(&f->cfg, why, sizeof why), 0);
    assert_true(tu_contains(why, "client found but no daemon"));
}

static void test_resolve_auto_prefers_working_podman(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt;
    char why[1024];

    install_fake(f, "podman");
    path_only_fakes(f);
    assert_int_equal(zerg_container_resolve("auto", &rt, why, sizeof why), 0);
    assert_string_equal(rt.path, "podman");
    assert_string_equal(rt.name, "podman");
    assert_true(rt.podman);
    assert_string_equal(rt.version, "podman version 9.9.9");
    char *calls = tu_read(f->calls);
    assert_true(tu_contains(calls, "--version\ninfo\n"));
    free(calls);
}

static void test_resolve_broken_podman_falls_back(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt;
    char why[1024];
    char dockerdir[PATH_MAX + 16], newpath[2 * PATH_MAX + 32];

    /* podman whose info fails; docker in another dir that works. */
    install_fake(f, "podman");
    snprintf(dockerdir, sizeof dockerdir, "%s/d", f->dir);
    tu_write(dockerdir, "docker",
             "#!/bin/sh\n"
             "case \"$1\" in --version) echo Docker version 24 ;; esac\n");
    snprintf(newpath, sizeof newpath, "%s/docker", dockerdir);
    chmod(newpath, 0755);
    snprintf(newpath, sizeof newpath, "%s:%s", f->dir, dockerdir);
    setenv("PATH", newpath, 1);
    setenv("FAKE_INFO_FAIL", "Error: cannot set up namespace", 1);

    assert_int_equal(zerg_container_resolve("auto", &rt, why, sizeof why), 0);
    assert_string_equal(rt.name, "docker");
    assert_false(rt.podman);
    assert_true(tu_contains(why, "podman: found but `podman info` fails "
                                 "(Error: cannot set up namespace)"));
}

static void test_resolve_explicit_path(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt;
    char why[1024], path[PATH_MAX + 32];

    install_fake(f, "my-podman");
    snprintf(path, sizeof path, "%s/my-podman", f->dir);
    path_only_fakes(f);
    assert_int_equal(zerg_container_resolve(path, &rt, why, sizeof why), 0);
    assert_string_equal(rt.path, path);
    assert_string_equal(rt.name, "my-podman");
    assert_true(rt.podman);

    snprintf(path, sizeof path, "%s/absent", f->dir);
    assert_int_equal(zerg_container_resolve(path, &rt, why, sizeof why),
                     ZERG_ENOTFOUND);
    assert_string_equal(why, "absent: no such file");
}

static void test_image_exists(void **state)
{
    struct fx *f = *state;
    struct zerg_container_rt rt;
    char why[1024], path[PATH_MAX + 32];

    install_fake(f, "podman");
    snprintf(path, sizeof path, "%s/podman", f->dir);
    assert_int_equal(zerg_container_resolve(path, &rt, why, sizeof why), 0);
    assert_int_equal(
        zerg_container_image_exists(&rt, "zerg-worker", why, sizeof why), 1);
    assert_int_equal(
        zerg_container_image_exists(&rt, "nosuch", why, sizeof why), 0);
    assert_string_equal(why, "image 'nosuch' not found for podman: build it "
                             "with `make image` (or set container.image)");

    f->cfg.container_runtime = path;
    f->cfg.container_image = "nosuch";
    assert_int_equal(zerg_container_available(&f->cfg, why, sizeof why), 0);
    assert_true(tu_contains(why, "podman works but image 'nosuch' not found"));
    f->cfg.container_image = "zerg-worker";
    assert_int_equal(zerg_container_available(&f->cfg, why, sizeof why), 1);
    assert_true(tu_contains(why, "image 'zerg-worker' is present"));
}

/* ---- the launcher ops against a fake runtime ---- */

static struct zerg_launcher *fake_launcher(struct fx *f, char *project,
                                           size_t size)
{
    static char rt_path[PATH_MAX + 32];
    struct zerg_err err = {0};

    install_fake(f, "podman");
    snprintf(rt_path, sizeof rt_path, "%s/podman", f->dir);
    f->cfg.container_runtime = rt_path;
    snprintf(project, size, "%s/proj", f->dir);
    tu_write(project, ".gsd/specs/feat/task-graph.json", "{}");
    struct zerg_launcher *l = zerg_launcher_container_new(&f->cfg, NULL, &err);
    assert_non_null(l);
    assert_string_equal(l->ops->name, "container");
    assert_string_equal(zerg_container_runtime_name(l), "podman");
    return l;
}

static int spawn_and_wait(struct zerg_launcher *l, const char *project,
                          uint64_t epoch, struct zerg_proc *p)
{
    struct zerg_spawn_req r = req_for(project, "feat");
    struct zerg_err err = {0};
    int cls = 0, st = 0;
    r.epoch = epoch;
    assert_int_equal(l->ops->spawn(l, &r, p, &cls, &err), 0);
    assert_true(p->pid > 0);
    assert_int_equal(waitpid(p->pid, &st, 0), p->pid);
    return st;
}

static void test_launcher_spawn_reaped_clean(void **state)
{
    struct fx *f = *state;
    char project[PATH_MAX], logp[PATH_MAX + 64];
    struct zerg_proc p;
    struct zerg_exit_info info;

    struct zerg_launcher *l = fake_launcher(f, project, sizeof project);
    int st = spawn_and_wait(l, project, 7, &p);
    assert_int_equal(p.slot, 2);
    assert_int_equal(p.epoch, 7);
    assert_true(strncmp(p.name, "zerg-feat-", 10) == 0);
    l->ops->reaped(l, &p, st, &info);
    assert_int_equal(info.exit_code, 0);
    assert_false(info.runtime_error);

    /* The run's output is in the worker log, after this epoch's marker. */
    snprintf(logp, sizeof logp, "%s/.zerg/logs/feat/worker-2.log", project);
    char *log = tu_read(logp);
    assert_true(tu_contains(log, "=== zerg: worker 2 epoch 7 container "));
    free(log);

    /* One inspect and one rm for the exit; the image probed once. */
    char *calls = tu_read(f->calls);
    assert_true(tu_contains(calls, "run --init --name zerg-feat-"));
    char want[512];
    snprintf(want, sizeof want,
             "container inspect --format "
             "{{.State.OOMKilled}} %s\nrm --force %s\n",
             p.name, p.name);
    assert_true(tu_contains(calls, want));
    assert_int_equal(count_lines_with(calls, "image inspect"), 1);
    free(calls);

    spawn_and_wait(l, project, 8, &p);
    calls = tu_read(f->calls);
    assert_int_equal(count_lines_with(calls, "image inspect"), 1);
    assert_int_equal(count_lines_with(calls, "\nrun "), 2);
    free(calls);
    l->ops->free(l);
}

static void test_launcher_runtime_error_detail(void **state)
{
    struct fx *f = *state;
    char project[PATH_MAX];
    struct zerg_proc p;
    struct zerg_exit_info info;

    struct zerg_launcher *l = fake_launcher(f, project, sizeof project);
    setenv("FAKE_RUN_ERR", "old error from epoch 3", 1);
    setenv("FAKE_RUN_EXIT", "1", 1);
    int st = spawn_and_wait(l, project, 3, &p);
    l->ops->reaped(l, &p, st, &info);
    assert_string_equal(info.detail,
                        "exited with code 1: old error from epoch 3");

    /* A later incarnation that printed nothing is not blamed for it. */
    unsetenv("FAKE_RUN_ERR");
    st = spawn_and_wait(l, project, 33, &p);
    l->ops->reaped(l, &p, st, &info);
    assert_string_equal(info.detail, "exited with code 1");

    setenv("FAKE_RUN_ERR", "Error: mounting \"/x\": permission denied", 1);
    setenv("FAKE_RUN_EXIT", "125", 1);
    st = spawn_and_wait(l, project, 4, &p);
    assert_true(WIFEXITED(st));
    l->ops->reaped(l, &p, st, &info);
    assert_true(info.runtime_error);
    assert_string_equal(info.detail, "the container runtime failed (exit "
                                     "125): Error: mounting \"/x\": "
                                     "permission denied");

    unsetenv("FAKE_RUN_ERR");
    setenv("FAKE_RUN_EXIT", "137", 1);
    setenv("FAKE_OOM", "true", 1);
    f->cfg.container_memory = "64m";
    st = spawn_and_wait(l, project, 5, &p);
    l->ops->reaped(l, &p, st, &info);
    assert_true(info.oom_killed);
    assert_int_equal(info.signal, 9);
    assert_false(info.runtime_error);
    l->ops->free(l);
}

static void test_launcher_missing_image_permanent(void **state)
{
    struct fx *f = *state;
    char project[PATH_MAX];
    struct zerg_proc p;
    struct zerg_err err = {0};
    int cls = 0;

    f->cfg.container_image = "nosuch";
    struct zerg_launcher *l = fake_launcher(f, project, sizeof project);
    struct zerg_spawn_req r = req_for(project, "feat");
    for (int i = 0; i < 2; i++) {
        assert_true(l->ops->spawn(l, &r, &p, &cls, &err) < 0);
        assert_int_equal(cls, ZERG_SPAWN_PERMANENT);
        assert_string_equal(err.msg, "image 'nosuch' not found for podman: "
                                     "build it with `make image` (or set "
                                     "container.image)");
    }
    char *calls = tu_read(f->calls);
    assert_int_equal(count_lines_with(calls, "image inspect"), 1);
    assert_int_equal(count_lines_with(calls, "run "), 0);
    free(calls);
    l->ops->free(l);
}

static void test_launcher_kill(void **state)
{
    struct fx *f = *state;
    char project[PATH_MAX];
    struct zerg_proc p;
    struct zerg_err err = {0};
    int cls = 0, st = 0;

    struct zerg_launcher *l = fake_launcher(f, project, sizeof project);
    struct zerg_spawn_req r = req_for(project, "feat");
    setenv("FAKE_RUN_BLOCK", "1", 1);
    /* The runtime cannot kill it (not created yet, say): the client gets
     * the signal instead. */
    setenv("FAKE_KILL_EXIT", "1", 1);
    assert_int_equal(l->ops->spawn(l, &r, &p, &cls, &err), 0);
    assert_int_equal(l->ops->cancel(l, &p, SIGTERM), 0);
    assert_int_equal(waitpid(p.pid, &st, 0), p.pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGTERM);

    char *calls = tu_read(f->calls);
    char want[512];
    snprintf(want, sizeof want, "kill --signal SIGTERM %s\n", p.name);
    assert_true(tu_contains(calls, want));
    free(calls);

    /* The runtime delivered it: the client is not signalled a second time
     * (it would forward the signal into the container again). */
    setenv("FAKE_KILL_EXIT", "0", 1);
    assert_int_equal(l->ops->spawn(l, &r, &p, &cls, &err), 0);
    assert_int_equal(l->ops->cancel(l, &p, SIGTERM), 0);
    assert_int_equal(waitpid(p.pid, &st, WNOHANG), 0);
    kill(p.pid, SIGKILL);
    assert_int_equal(waitpid(p.pid, &st, 0), p.pid);

    /* SIGKILL goes to both, even when the runtime kill worked. */
    assert_int_equal(l->ops->spawn(l, &r, &p, &cls, &err), 0);
    assert_int_equal(l->ops->cancel(l, &p, SIGKILL), 0);
    assert_int_equal(waitpid(p.pid, &st, 0), p.pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGKILL);
    l->ops->free(l);
}

static void test_launcher_cleanup(void **state)
{
    struct fx *f = *state;
    char project[PATH_MAX];

    struct zerg_launcher *l = fake_launcher(f, project, sizeof project);
    zerg_container_set_project(l, "/srv/proj");
    assert_int_equal(l->ops->cleanup(l, "feat", "R1"), 2);
    char *calls = tu_read(f->calls);
    assert_true(tu_contains(calls, "ps --all --filter label=zerg.feature=feat "
                                   "--filter label=zerg.project=/srv/proj "
                                   "--format {{.Names}}\n"));
    assert_true(tu_contains(calls, "--filter label=zerg.run=R1"));
    assert_true(tu_contains(calls, "rm --force zerg-old1\n"));
    assert_true(tu_contains(calls, "rm --force zerg-old2\n"));
    assert_int_equal(count_lines_with(calls, "rm --force zerg-current"), 0);
    free(calls);

    /* No current run (zerg stop): every container of the feature goes. */
    assert_int_equal(l->ops->cleanup(l, "feat", NULL), 3);
    l->ops->free(l);
}

static void test_launcher_cleanup_project_from_cwd(void **state)
{
    struct fx *f = *state;
    char project[PATH_MAX], old[PATH_MAX], want[PATH_MAX + 64];

    struct zerg_launcher *l = fake_launcher(f, project, sizeof project);
    assert_non_null(getcwd(old, sizeof old));
    assert_int_equal(chdir(project), 0);
    int n = l->ops->cleanup(l, "feat", "R1");
    assert_int_equal(chdir(old), 0);
    assert_int_equal(n, 2);
    char *calls = tu_read(f->calls);
    snprintf(want, sizeof want, "--filter label=zerg.project=%s ", project);
    assert_true(tu_contains(calls, want));
    free(calls);
    l->ops->free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exit_status_plain),
        cmocka_unit_test(test_exit_container_table),
        cmocka_unit_test(test_exit_container_oom),
        cmocka_unit_test(test_last_line),
        cmocka_unit_test_setup_teardown(test_argv_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_gate_argv, setup, teardown),
        cmocka_unit_test_setup_teardown(test_argv_dotgit_read_only, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_argv_git_dir_from_host, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_argv_defaults_docker_root, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_argv_bad_project, setup, teardown),
        cmocka_unit_test(test_name_fits),
        cmocka_unit_test(test_exec_capture_and_status),
        cmocka_unit_test(test_exec_timeout),
        cmocka_unit_test_setup_teardown(test_resolve_none_on_path, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_resolve_docker_without_daemon,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            test_resolve_auto_prefers_working_podman, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_broken_podman_falls_back,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_resolve_explicit_path, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_image_exists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launcher_spawn_reaped_clean, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_launcher_runtime_error_detail,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_launcher_missing_image_permanent,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_launcher_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launcher_cleanup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_launcher_cleanup_project_from_cwd,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
