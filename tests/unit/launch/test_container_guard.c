/* test_container_guard.c - what keeps a container task from changing how
 * zerg runs: the read-only mounts over .zerg/ and .gsd/ with only the
 * worker's own files writable, the checks on their sources (no symbolic
 * link may redirect a read-write mount), and the container.run_args that
 * need ZERG_ALLOW_RUN_ARGS. */
#include "testutil.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerg/config.h"
#include "zerg/err.h"
#include "zerg/launcher.h"

/* ---- run_args ---- */

/* Checks args (NULL-terminated) against allow; the return code. */
static int check(const char *allow, char *allowed, size_t size,
                 struct zerg_err *err, char **args)
{
    struct zerg_argv a = {args, 0};
    while (args[a.n])
        a.n++;
    return zerg_container_check_run_args(&a, allow, allowed, size, err);
}

static void test_run_args_harmless_pass(void **state)
{
    (void)state;
    char allowed[128] = "x";
    struct zerg_err err = {0};
    /* Restricting the container, passing environment, limits, and values
     * that only look like risky short flags ("-eFOOv": the v is FOO's). */
    char *args[] = {"--network",
                    "none",
                    "-e",
                    "ANTHROPIC_API_KEY",
                    "-eFOOv",
                    "-it",
                    "--net=bridge",
                    "--pid=private",
                    "--user",
                    "1000:1000",
                    "-u2000",
                    "--userns=keep-id",
                    "--read-only",
                    "--cap-drop=ALL",
                    "--tmpfs",
                    "/run",
                    NULL};
    assert_int_equal(check(NULL, allowed, sizeof allowed, &err, args), 0);
    assert_string_equal(allowed, "");
    char *none[] = {NULL};
    assert_int_equal(check(NULL, NULL, 0, &err, none), 0);
    assert_int_equal(zerg_container_check_run_args(NULL, NULL, NULL, 0, &err),
                     0);
}

static void test_run_args_risky_refused(void **state)
{
    (void)state;
    /* Each case: the run_args, the flag the message must name. */
    struct {
        char *args[3];
        const char *arg, *flag;
    } cases[] = {
        {{"--privileged"}, "--privileged", "--privileged"},
        {{"--privileged=true"}, "--privileged=true", "--privileged"},
        {{"--cap-add", "SYS_ADMIN"}, "--cap-add", "--cap-add"},
        {{"--cap-add=ALL"}, "--cap-add=ALL", "--cap-add"},
        {{"--device=/dev/sda"}, "--device=/dev/sda", "--device"},
        {{"--security-opt", "seccomp=unconfined"},
         "--security-opt",
         "--security-opt"},
        {{"-v", "/:/host"}, "-v", "--volume"},
        {{"-v/:/host"}, "-v/:/host", "--volume"},
        {{"-itv", "/:/host"}, "-itv", "--volume"},
        {{"--volume=/var/run/docker.sock:/s"},
         "--volume=/var/run/docker.sock:/s",
         "--volume"},
        {{"--mount", "type=bind,src=/,dst=/h"}, "--mount", "--mount"},
        {{"--volumes-from=other"}, "--volumes-from=other", "--volumes-from"},
        {{"--group-add", "docker"}, "--group-add", "--group-add"},
        {{"--network=host"}, "--network=host", "--network"},
        {{"--net", "host"}, "--net", "--network"},
        {{"--network", "container:db"}, "--network", "--network"},
        {{"--pid=host"}, "--pid=host", "--pid"},
        {{"--pid", "ns:/proc/1/ns/pid"}, "--pid", "--pid"},
        {{"--ipc=host"}, "--ipc=host", "--ipc"},
        {{"--uts=host"}, "--uts=host", "--uts"},
        {{"--userns=host"}, "--userns=host", "--userns"},
        {{"--cgroupns=host"}, "--cgroupns=host", "--cgroupns"},
        {{"--user=0"}, "--user=0", "--user"},
        {{"--user", "root"}, "--user", "--user"},
        {{"-u", "1000:0"}, "-u", "--user"},
        {{"-u0:0"}, "-u0:0", "--user"},
        /* A value that is a risky flag is still read as one. */
        {{"-e", "--privileged"}, "--privileged", "--privileged"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct zerg_err err = {0};
        char want[128];
        assert_int_equal(check(NULL, NULL, 0, &err, cases[i].args),
                         ZERG_EINVAL_INPUT);
        snprintf(want, sizeof want, "'%s'", cases[i].arg);
        if (!tu_contains(err.msg, want))
            fail_msg("case %zu: '%s' not in: %s", i, want, err.msg);
        snprintf(want, sizeof want, "ZERG_ALLOW_RUN_ARGS=\"%s\" zerg rush",
                 cases[i].flag);
        if (!tu_contains(err.msg, want))
            fail_msg("case %zu: '%s' not in: %s", i, want, err.msg);
        /* Allowing that flag (and only it) lets it through. */
        char allowed[128];
        assert_int_equal(
            check(cases[i].flag, allowed, sizeof allowed, &err, cases[i].args),
            0);
        assert_string_equal(allowed, cases[i].flag);
    }
}

static void test_run_args_allow_list(void **state)
{
    (void)state;
    char allowed[128];
    struct zerg_err err = {0};
    char *args[] = {
        "--privileged", "-v",        "/srv:/srv", "--cap-add=NET_ADMIN",
        "--privileged", "--network", "none",      NULL};

    /* One flag short: the first one not allowed is named. */
    assert_int_equal(
        check("--privileged --volume", allowed, sizeof allowed, &err, args),
        ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "'--cap-add=NET_ADMIN'"));
    /* Spaces or commas; a short form allows its long one; each flag is
     * listed once. */
    assert_int_equal(check("--privileged,-v, --cap-add", allowed,
                           sizeof allowed, &err, args),
                     0);
    assert_string_equal(allowed, "--privileged --volume --cap-add");
    /* Allowing --net allows --network; a prefix allows nothing. */
    char *host[] = {"--network=host", NULL};
    assert_int_equal(check("--net", allowed, sizeof allowed, &err, host), 0);
    assert_int_equal(check("--netw --priv", NULL, 0, &err, host),
                     ZERG_EINVAL_INPUT);
    assert_int_equal(check("", NULL, 0, &err, args), ZERG_EINVAL_INPUT);
}

static void test_launcher_new_refuses_run_args(void **state)
{
    (void)state;
    struct zerg_config cfg = {0};
    struct zerg_err err = {0};
    char *args[] = {"--privileged"};
    cfg.container_run_args.v = args;
    cfg.container_run_args.n = 1;
    unsetenv("ZERG_ALLOW_RUN_ARGS");
    /* Refused before any runtime is even probed. */
    cfg.container_runtime = "/nonexistent/podman";
    assert_null(zerg_launcher_container_new(&cfg, NULL, &err));
    assert_int_equal(err.code, ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "'--privileged'"));

    setenv("ZERG_ALLOW_RUN_ARGS", "--privileged", 1);
    assert_null(zerg_launcher_container_new(&cfg, NULL, &err));
    assert_int_equal(err.code, ZERG_ENOTFOUND); /* got as far as the probe */
    unsetenv("ZERG_ALLOW_RUN_ARGS");
}

/* ---- the mounts ---- */

static void test_argv_mounts_keep_control_files_read_only(void **state)
{
    (void)state;
    struct zerg_config cfg = {0};
    struct zerg_container_rt rt = {.path = "docker", .name = "docker"};
    struct zerg_spawn_req r = {
        .slot = 0, .epoch = 1, .feature = "f", .run_id = "R", .project = "/p"};
    struct zerg_argv a;
    assert_int_equal(zerg_container_run_argv(&cfg, &rt, &r, 0, 0, &a, NULL), 0);
    /* Every mount, in order; nothing else of the project is writable. */
    const char *want[] = {
        "--volume=/p:/workspace",
        "--volume=/p/.zerg:/workspace/.zerg:ro",
        "--volume=/p/.zerg/state/f:/workspace/.zerg/state/f:rw",
        "--volume=/p/.zerg/logs:/workspace/.zerg/logs:rw",
        "--volume=/p/.zerg/monitor.log:/workspace/.zerg/monitor.log:rw",
        "--volume=/p/.zerg/monitor.jsonl:/workspace/.zerg/monitor.jsonl:rw",
        "--volume=/p/.gsd:/workspace/.gsd:ro",
    };
    size_t k = 0;
    for (size_t i = 0; i < a.n; i++)
        if (strncmp(a.v[i], "--volume", 8) == 0) {
            assert_true(k < sizeof want / sizeof *want);
            assert_string_equal(a.v[i], want[k++]);
        }
    assert_int_equal(k, sizeof want / sizeof *want);
    zerg_container_argv_free(&a);
}

static void test_prepare_mounts(void **state)
{
    (void)state;
    char proj[PATH_MAX], path[PATH_MAX + 64], other[PATH_MAX + 16];
    struct zerg_err err = {0};
    struct stat st;

    snprintf(proj, sizeof proj, "%s", tu_mkdtemp());
    tu_write(proj, ".gsd/specs/f/task-graph.json", "{}");
    tu_write(proj, ".zerg/config.yaml", "");
    assert_int_equal(zerg_container_prepare_mounts(proj, "f", &err), 0);
    /* The read-write mounts' sources exist now. */
    const char *made[] = {".zerg/state/f", ".zerg/logs", ".zerg/monitor.log",
                          ".zerg/monitor.jsonl"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", proj, made[i]);
        assert_int_equal(lstat(path, &st), 0);
    }
    /* A link planted where a read-write mount's source is: refused, so it
     * cannot redirect the mount to another host directory. */
    snprintf(other, sizeof other, "%s/elsewhere", proj);
    assert_int_equal(mkdir(other, 0755), 0);
    snprintf(path, sizeof path, "%s/.zerg/logs", proj);
    tu_rmtree(path);
    assert_int_equal(symlink(other, path), 0);
    assert_int_equal(zerg_container_prepare_mounts(proj, "f", &err),
                     ZERG_EINVAL_INPUT);
    assert_true(tu_contains(err.msg, "through a symbolic link"));
    assert_int_equal(unlink(path), 0);

    /* Also a link further up (the state directory), and a linked monitor
     * file, which the no-follow open refuses. */
    snprintf(path, sizeof path, "%s/.zerg/state", proj);
    tu_rmtree(path);
    assert_int_equal(symlink(other, path), 0);
    assert_true(zerg_container_prepare_mounts(proj, "f", &err) < 0);
    assert_int_equal(unlink(path), 0);
    snprintf(path, sizeof path, "%s/.zerg/monitor.log", proj);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(symlink("/etc/passwd", path), 0);
    assert_true(zerg_container_prepare_mounts(proj, "f", &err) < 0);
    assert_int_equal(unlink(path), 0);
    assert_int_equal(zerg_container_prepare_mounts(proj, "f", &err), 0);
    tu_rmtree(proj);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_run_args_harmless_pass),
        cmocka_unit_test(test_run_args_risky_refused),
        cmocka_unit_test(test_run_args_allow_list),
        cmocka_unit_test(test_launcher_new_refuses_run_args),
        cmocka_unit_test(test_argv_mounts_keep_control_files_read_only),
        cmocka_unit_test(test_prepare_mounts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
