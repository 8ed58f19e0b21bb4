/* testutil.c - helpers shared by the unit tests (see testutil.h). */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zerg/err.h"
#include "zerg/json.h"
#include "zerg/log.h"

const char *tu_mkdtemp(void)
{
    static char buf[PATH_MAX];
    const char *base = getenv("TMPDIR");
    snprintf(buf, sizeof buf, "%s/zerg-unit-XXXXXX", base ? base : "/tmp");
    if (!mkdtemp(buf))
        fail_msg("mkdtemp: %s", strerror(errno));
    return buf;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

void tu_rmtree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void mkparents(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        mkdir(path, 0755);
        *p = '/';
    }
}

void tu_write(const char *dir, const char *rel, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    mkparents(path);
    FILE *f = fopen(path, "w");
    if (!f)
        fail_msg("open %s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

char *tu_read(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

int tu_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

int tu_contains(const char *haystack, const char *needle)
{
    if (haystack && needle && strstr(haystack, needle))
        return 1;
    print_error("expected to find \"%s\" in:\n%s\n", needle ? needle : "(null)",
                haystack ? haystack : "(null)");
    return 0;
}

void tu_check_doc_table(const char *doc, const char *name, const char *want)
{
    char path[1024], begin[64], end[64];
    snprintf(path, sizeof path, "%s/%s", ZERG_TEST_SOURCE_DIR, doc);
    snprintf(begin, sizeof begin, "<!-- begin %s table -->\n", name);
    snprintf(end, sizeof end, "<!-- end %s table -->", name);
    char *text = tu_read(path);
    assert_non_null(text);
    char *a = strstr(text, begin), *b = a ? strstr(a, end) : NULL;
    if (!a || !b)
        fail_msg("%s lacks the markers %s...%s", path, begin, end);
    a += strlen(begin);
    size_t have = (size_t)(b - a);
    if (getenv("ZERG_UPDATE_DOCS")) {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        fwrite(text, 1, (size_t)(a - text), f);
        fputs(want, f);
        fputs(b, f);
        fclose(f);
    } else if (have != strlen(want) || memcmp(a, want, have) != 0) {
        fprintf(stderr,
                "%s: the %s table differs from the code; it should "
                "read:\n%s\n(ZERG_UPDATE_DOCS=1 rewrites it)\n",
                path, name, want);
        fail();
    }
    free(text);
}

/* ---- policy test projects ---------------------------------------------- */

static void count_policy_errors(void *ud, const struct zerg_log_rec *rec)
{
    struct tu_policy_project *pp = ud;
    if (strcmp(rec->event, "policy_error") != 0)
        return;
    pp->nerrors++;
    char *s = rec->data ? zerg_json_encode(rec->data, NULL, NULL) : NULL;
    snprintf(pp->last_data, sizeof pp->last_data, "%s", s ? s : "");
    free(s);
}

void tu_policy_project_open(struct tu_policy_project *pp)
{
    char zdir[sizeof pp->dir + 8];
    struct zerg_err err = {0};
    memset(pp, 0, sizeof *pp);
    snprintf(pp->dir, sizeof pp->dir, "%s", tu_mkdtemp());
    snprintf(pp->ovdir, sizeof pp->ovdir, "%s/.zerg/policies", pp->dir);
    snprintf(zdir, sizeof zdir, "%s/.zerg", pp->dir);
    mkdir(zdir, 0755);
    mkdir(pp->ovdir, 0755);
    pp->lg = zerg_log_open(zdir, NULL, &err);
    if (!pp->lg)
        fail_msg("zerg_log_open: %s", err.msg);
    zerg_log_set_observer(pp->lg, count_policy_errors, pp);
}

void tu_policy_project_close(struct tu_policy_project *pp)
{
    zerg_log_close(pp->lg);
    pp->lg = NULL;
    tu_rmtree(pp->dir);
}

extern char **environ;

void tu_git(const char *dir, const char *const *args)
{
    const char *argv[40] = {
        "git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"};
    size_t n = 7;
    for (size_t i = 0; args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    pid_t pid;
    int st;
    assert_int_equal(
        posix_spawnp(&pid, "git", NULL, NULL, (char *const *)argv, environ), 0);
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        fail_msg("git %s failed", args[0]);
}

void tu_git_repo(const char *repo, const char *const *files)
{
    assert_int_equal(mkdir(repo, 0755), 0);
    TU_GIT(repo, "init", "-q", "-b", "main");
    for (size_t i = 0; files[i] && files[i + 1]; i += 2)
        tu_write(repo, files[i], files[i + 1]);
    TU_GIT(repo, "add", "-A");
    TU_GIT(repo, "commit", "-q", "-m", "init");
}
