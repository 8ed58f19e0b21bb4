/* test_launcher_slurm.c - the pure parts of slurm mode: the srun argv (the
 * worker command shared with the subprocess launcher), job names and
 * comments, which squeue lines are leftovers to cancel, how srun's end
 * maps to an exit (signals and Slurm's causes take the crash path), and
 * which probe answers are permanent spawn failures.  Slurm itself is
 * exercised by tests/integration/test_slurm_*.sh. */
#include "testutil.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "zerg/config.h"
#include "zerg/launcher.h"

#define EXITED(c) ((c) << 8)

static const struct zerg_spawn_req REQ = {
    .slot = 2,
    .epoch = 17,
    .feature = "feat",
    .run_id = "R1",
    .project = "/p/proj",
    .zerg_bin = "/usr/bin/zerg",
};

static int index_of(const struct zerg_argv *a, const char *s)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->v[i], s))
            return (int)i;
    return -1;
}

static void test_srun_argv_defaults(void **state)
{
    (void)state;
    struct zerg_config cfg;
    struct zerg_argv a;
    zerg_config_defaults(&cfg);
    assert_int_equal(zerg_slurm_srun_argv(&cfg, &REQ, &a), 0);
    const char *want[] = {"srun",
                          "--unbuffered",
                          "--job-name",
                          "zerg-feat-w2",
                          "--comment",
                          "zerg-run=R1 zerg-project=",
                          "-N1",
                          "-n1",
                          "/usr/bin/zerg",
                          "worker",
                          "-C",
                          "/p/proj",
                          "--feature",
                          "feat",
                          "--slot",
                          "2",
                          "--epoch",
                          "17",
                          "--run-id",
                          "R1"};
    assert_int_equal(a.n, sizeof want / sizeof *want);
    for (size_t i = 0; i < a.n; i++)
        if (i == 5) /* the comment: its prefix, then the epoch */
            assert_true(!strncmp(a.v[i], want[i], strlen(want[i])) &&
                        strstr(a.v[i], " zerg-epoch=17"));
        else
            assert_string_equal(a.v[i], want[i]);
    assert_null(a.v[a.n]);
    assert_int_equal(index_of(&a, "--partition"), -1);
    zerg_container_argv_free(&a);
    zerg_config_free(&cfg);
}

static void test_srun_argv_settings_before_command(void **state)
{
    (void)state;
    struct zerg_config cfg;
    struct zerg_argv a;
    const char *yaml = "slurm:\n  partition: gpu\n  account: lab\n"
                       "  time_limit: \"1:00:00\"\n"
                       "  extra_args: [--qos, high]\n";
    zerg_config_defaults(&cfg);
    assert_int_equal(zerg_config_load_string(&cfg, "t", yaml, strlen(yaml),
                                             NULL, NULL, NULL),
                     0);
    assert_int_equal(zerg_slurm_srun_argv(&cfg, &REQ, &a), 0);
    int part = index_of(&a, "--partition"), acct = index_of(&a, "--account");
    int tl = index_of(&a, "--time"), qos = index_of(&a, "--qos");
    int n1 = index_of(&a, "-N1"), bin = index_of(&a, "/usr/bin/zerg");
    assert_true(part > 0 && acct > 0 && tl > 0 && qos > 0);
    assert_string_equal(a.v[part + 1], "gpu");
    assert_string_equal(a.v[acct + 1], "lab");
    assert_string_equal(a.v[tl + 1], "1:00:00");
    assert_string_equal(a.v[qos + 1], "high");
    /* srun options end before -N1 -n1 and the worker command. */
    assert_true(qos < n1 && n1 + 2 == bin);
    zerg_container_argv_free(&a);
    zerg_config_free(&cfg);
}

static void test_worker_cmd_shared(void **state)
{
    (void)state;
    struct zerg_worker_cmd c;
    zerg_worker_cmd_init(&c, &REQ);
    assert_string_equal(c.argv[0], "/usr/bin/zerg");
    assert_string_equal(c.argv[7], "2");
    assert_string_equal(c.argv[9], "17");
    assert_string_equal(c.argv[11], "R1");
    assert_null(c.argv[ZERG_WORKER_ARGC]);
}

static void test_leftover_lines(void **state)
{
    (void)state;
    char comment[256], line[400];
    long id = 0;
    zerg_slurm_comment(comment, sizeof comment, "/p/proj", "OLD", 3);
    snprintf(line, sizeof line, "41|zerg-feat-w0|%s", comment);
    assert_int_equal(zerg_slurm_leftover(line, "/p/proj", "feat", "NEW", &id),
                     1);
    assert_int_equal(id, 41);
    /* This run's own job, another project's, another feature's, a
     * look-alike name and a job without zerg's comment stay. */
    assert_int_equal(zerg_slurm_leftover(line, "/p/proj", "feat", "OLD", &id),
                     0);
    assert_int_equal(zerg_slurm_leftover(line, "/p/other", "feat", "NEW", &id),
                     0);
    assert_int_equal(zerg_slurm_leftover(line, "/p/proj", "fea", "NEW", &id),
                     0);
    snprintf(line, sizeof line, "42|zerg-feat-w0x|%s", comment);
    assert_int_equal(zerg_slurm_leftover(line, "/p/proj", "feat", "NEW", &id),
                     0);
    assert_int_equal(zerg_slurm_leftover("43|zerg-feat-w1|(null)", "/p/proj",
                                         "feat", "", &id),
                     0);
    /* "" or NULL: every run of the project's feature. */
    snprintf(line, sizeof line, "44|zerg-feat-w12|%s", comment);
    assert_int_equal(zerg_slurm_leftover(line, "/p/proj", "feat", "", &id), 1);
    assert_int_equal(id, 44);
    assert_int_equal(zerg_slurm_leftover(line, "/p/proj", "feat", NULL, &id),
                     1);
}

static void test_exit_signals_and_causes(void **state)
{
    (void)state;
    struct zerg_exit_info info;
    zerg_slurm_exit_info(EXITED(143),
                         "slurmstepd: error: *** STEP 5.0 ON vm "
                         "CANCELLED AT 2026 ***\n",
                         &info);
    assert_int_equal(info.exit_code, -1);
    assert_int_equal(info.signal, SIGTERM);
    assert_true(tu_contains(info.detail, "cancelled"));
    zerg_slurm_exit_info(EXITED(137), NULL, &info);
    assert_int_equal(info.signal, SIGKILL);
    assert_true(tu_contains(info.detail, "signal 9"));
    /* srun may exit 0 on a lost node: still a killed worker. */
    zerg_slurm_exit_info(EXITED(0), "srun: error: Node failure on vm\n", &info);
    assert_int_equal(info.exit_code, -1);
    assert_int_equal(info.signal, SIGKILL);
    assert_true(tu_contains(info.detail, "node failure"));
    zerg_slurm_exit_info(EXITED(3), "zerg worker: cannot read graph\n", &info);
    assert_int_equal(info.exit_code, 3);
    assert_int_equal(info.signal, 0);
    assert_true(tu_contains(info.detail, "cannot read graph"));
    zerg_slurm_exit_info(EXITED(0), "", &info);
    assert_int_equal(info.exit_code, 0);
    assert_string_equal(info.detail, "");
}

static void test_probe_classes(void **state)
{
    (void)state;
    assert_int_equal(
        zerg_slurm_probe_permanent(EXITED(1), "srun: error: invalid partition "
                                              "specified: nope\n"),
        1);
    assert_int_equal(zerg_slurm_probe_permanent(
                         EXITED(255), "srun: unrecognized option '--x'\n"),
                     1);
    assert_int_equal(
        zerg_slurm_probe_permanent(EXITED(1), "srun: error: Unable to contact "
                                              "slurm controller (connect "
                                              "failure)\n"),
        0);
}

static void test_job_name_cut(void **state)
{
    (void)state;
    char buf[20];
    zerg_slurm_job_name(buf, sizeof buf, "a-very-long-feature-name", 12);
    assert_int_equal(strlen(buf), sizeof buf - 1);
    assert_string_equal(buf + strlen(buf) - 4, "-w12");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_srun_argv_defaults),
        cmocka_unit_test(test_srun_argv_settings_before_command),
        cmocka_unit_test(test_worker_cmd_shared),
        cmocka_unit_test(test_leftover_lines),
        cmocka_unit_test(test_exit_signals_and_causes),
        cmocka_unit_test(test_probe_classes),
        cmocka_unit_test(test_job_name_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
