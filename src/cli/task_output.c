/* task_output.c - a task attempt's output where people look for it.
 *
 * The worker writes each attempt's output (command, then verification) to
 * .zerg/logs/{feature}/tasks/{id}/attempt-{n}.log.  `zerg logs --task ID`
 * prints it after the task's events, and the end of a failed rush prints
 * the last lines of each failed task's, so the real error is on the
 * screen, not only in a file.  Control characters other than newline and
 * tab are shown as '?': task output must not drive the terminal.  An
 * agent attempt's log is shown as its transcript (transcript.c) unless
 * raw output is asked for. */
#include "cli/task_output.h"
#include "cli/transcript.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerg/fsio.h"
#include "zerg/text.h"
#include "zerg/graph.h"
#include "zerg/state.h"

/* What is read of a log to show its end (a log can be huge). */
#define TAIL_READ_BYTES (256u << 10)
#define WHOLE_READ_BYTES (64u << 20)

/* The highest n of attempt-n.log in dir, or 0. */
static int last_attempt(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int best = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int n;
        char tail[8];
        if (sscanf(e->d_name, "attempt-%d.%7s", &n, tail) == 2 &&
            strcmp(tail, "log") == 0 && n > best)
            best = n;
    }
    closedir(d);
    return best;
}

int zerg_task_output_path(const struct zerg_cli *cli, const char *feature,
                          const char *task, int attempt, char *buf, size_t size)
{
    char dir[PATH_MAX];
    if (zerg_cli_path(cli, dir, sizeof dir, ".zerg/logs/%s/tasks/%s", feature,
                      task))
        return -ENAMETOOLONG;
    if (attempt <= 0 && (attempt = last_attempt(dir)) == 0)
        return -ENOENT;
    return zerg_fsio_path(buf, size, "%s/attempt-%d.log", dir, attempt);
}

static void put_clean(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        fputc(c == '\n' || c == '\t' || (c >= 0x20 && c != 0x7f) ? c : '?',
              out);
    }
}

/* The whole file, or with lines > 0 its last TAIL_READ_BYTES; malloc'd. */
static int read_end(const char *path, size_t lines, char **text, size_t *len)
{
    if (!lines)
        return zerg_fsio_read_file(path, WHOLE_READ_BYTES, ZERG_FSIO_NOFOLLOW,
                                   text, len, NULL);
    int fd = zerg_fsio_open_read(path, ZERG_FSIO_NOFOLLOW, NULL);
    if (fd < 0)
        return fd;
    int rc = zerg_fsio_read_end(fd, TAIL_READ_BYTES, text, len);
    close(fd);
    return rc;
}

/* An agent attempt's log as its transcript (transcript.c); with lines,
 * the cut first line of a tail read is dropped first. */
static void as_transcript(char **text, size_t *len, size_t lines)
{
    char *t = *text;
    size_t n = *len;
    if (lines && n >= TAIL_READ_BYTES) {
        const char *nl = memchr(t, '\n', n);
        size_t skip = nl ? (size_t)(nl - t) + 1 : n;
        t += skip, n -= skip;
    }
    size_t tl = 0;
    char *tr =
        zerg_transcript_has_events(t, n) ? zerg_transcript(t, n, &tl) : NULL;
    if (!tr)
        return;
    free(*text);
    *text = tr, *len = tl;
}

int zerg_task_output_print(FILE *out, const char *path, size_t lines,
                           const char *indent)
{
    return zerg_task_output_print_as(out, path, lines, indent, 0);
}

int zerg_task_output_print_as(FILE *out, const char *path, size_t lines,
                              const char *indent, int raw)
{
    char *text = NULL;
    size_t len = 0;
    int rc = read_end(path, lines, &text, &len);
    if (rc < 0)
        return rc;
    if (!raw)
        as_transcript(&text, &len, lines);
    size_t from = lines ? zerg_text_tail_start(text, len, lines) : 0;
    for (size_t i = from; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        fputs(indent, out);
        put_clean(out, text + i, n);
        fputc('\n', out);
        i += n + 1;
    }
    free(text);
    return 0;
}

/* Failed tasks shown with their output at the end of a rush. */
#define FAILURES_MAX 10
#define FAILURE_LINES 8

void zerg_task_output_failures(FILE *out, const struct zerg_cli *cli,
                               const char *feature, const struct zerg_graph *g,
                               const struct zerg_state *s)
{
    size_t shown = 0, failed = 0, blocked = 0;
    char path[PATH_MAX];
    for (size_t i = 0; i < s->ntasks && i < g->ntasks; i++) {
        const struct zerg_task_state *t = &s->tasks[i];
        blocked += t->status == ZERG_TASK_BLOCKED;
        if (t->status != ZERG_TASK_FAILED || failed++ >= FAILURES_MAX)
            continue;
        fprintf(out, "%s%s failed (%s): ", shown++ ? "\n" : "", g->tasks[i].id,
                t->reason ? t->reason : "failed");
        put_clean(out, t->error ? t->error : "",
                  t->error ? strlen(t->error) : 0);
        fputc('\n', out);
        if (zerg_task_output_path(cli, feature, g->tasks[i].id, t->attempt,
                                  path, sizeof path) == 0 &&
            zerg_task_output_print(out, path, FAILURE_LINES, "  | ") == 0)
            fprintf(out, "  (the whole output: %s)\n", path);
    }
    if (failed > FAILURES_MAX)
        fprintf(out, "... and %zu more failed task%s: `zerg status`\n",
                failed - FAILURES_MAX, failed - FAILURES_MAX == 1 ? "" : "s");
    if (blocked)
        fprintf(out, "%zu task%s blocked behind %s.\n", blocked,
                blocked == 1 ? " is" : "s are",
                failed == 1 ? "this failure" : "these failures");
}
