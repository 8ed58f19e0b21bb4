/* testutil.h - helpers shared by the cmocka unit tests: temp dirs, file
 * helpers, and the includes cmocka needs in the right order. */
#ifndef ZERG_TESTUTIL_H
#define ZERG_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

/* Creates a fresh temp directory (removed by tu_rmtree); returns a static
 * buffer valid until the next call. */
const char *tu_mkdtemp(void);
void tu_rmtree(const char *path);

/* Writes text to dir/rel (creating parent directories); aborts the test on
 * failure. */
void tu_write(const char *dir, const char *rel, const char *text);

/* Reads a whole file (caller frees) or NULL if missing. */
char *tu_read(const char *path);

/* Number of entries in a directory (0 if missing), excluding . and .. */
int tu_count_entries(const char *dir);

/* 1 if haystack contains needle; on failure prints both. */
int tu_contains(const char *haystack, const char *needle);

/* Fails unless the doc (relative to the source tree) holds `want` between
 * "<!-- begin NAME table -->\n" and "<!-- end NAME table -->"; with
 * ZERG_UPDATE_DOCS=1 in the environment it rewrites that part instead. */
void tu_check_doc_table(const char *doc, const char *name, const char *want);

/* A project for policy tests: defaults in cfg, an empty .zerg/policies
 * (ovdir) and a monitor log whose policy_error events are counted, the
 * last one's data kept as JSON text. */
struct zerg_log;
struct tu_policy_project {
    char dir[2048];   /* the project */
    char ovdir[4096]; /* its .zerg/policies */
    struct zerg_log *lg;
    int nerrors;
    char last_data[4096];
};
void tu_policy_project_open(struct tu_policy_project *pp);
void tu_policy_project_close(struct tu_policy_project *pp);

/* The plain git (not zerg's) in dir with a test identity, args
 * NULL-terminated; fails the test unless it exits 0.  TU_GIT(dir, "add",
 * "x") for short. */
void tu_git(const char *dir, const char *const *args);
#define TU_GIT(dir, ...) tu_git(dir, (const char *const[]){__VA_ARGS__, NULL})

/* repo made (mode 0755) a repository on main whose one commit, "init",
 * holds files: (path, text) pairs, NULL-terminated.  TU_GIT_REPO(repo,
 * "a.txt", "one\n") for short. */
void tu_git_repo(const char *repo, const char *const *files);
#define TU_GIT_REPO(repo, ...)                                                 \
    tu_git_repo(repo, (const char *const[]){__VA_ARGS__, NULL})

#endif
