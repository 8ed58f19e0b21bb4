/* worker_task.c - the pure parts of running a task on a worker: what an
 * assignment means, the executor prompt and argv, the stage environment
 * and the progress file format.  No I/O here, so all of it is unit-tested
 * by passing values (tests/unit/test_worker.c); src/worker.c does the
 * processes and files. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/worker.h"

enum zerg_assign_action zerg_worker_decide(const struct zerg_assign *a,
                                           uint64_t epoch,
                                           const char *last_task,
                                           int last_attempt)
{
    /* Fencing on this side too: an assignment written for an earlier or a
     * later incarnation of this slot is not ours to act on. */
    if (a->epoch != epoch)
        return ZERG_ASSIGN_IGNORE;
    if (a->task[0] && (strcmp(a->task, last_task ? last_task : "") != 0 ||
                       a->attempt != last_attempt))
        return ZERG_ASSIGN_RUN;
    return a->stop ? ZERG_ASSIGN_STOP : ZERG_ASSIGN_IGNORE;
}

/* ---- prompt --------------------------------------------------------- */

static void put_section(FILE *f, const char *heading, const char *text)
{
    if (text && *text)
        fprintf(f, "\n## %s\n%s\n", heading, text);
}

static void put_list(FILE *f, const char *label, const struct zerg_strlist *l,
                     const char *bullet)
{
    if (!l->n)
        return;
    if (label)
        fprintf(f, "%s\n", label);
    for (size_t i = 0; i < l->n; i++)
        fprintf(f, "%s%s\n", bullet, l->v[i]);
}

static void put_files(FILE *f, const struct zerg_task *t)
{
    if (!t->files_create.n && !t->files_modify.n && !t->files_read.n)
        return;
    fprintf(f, "\n## Files\n");
    put_list(f, "Create:", &t->files_create, "  - ");
    put_list(f, "Modify:", &t->files_modify, "  - ");
    put_list(f, "Read (do not change them):", &t->files_read, "  - ");
}

/* What went wrong last time (DESIGN §21, bounded by the caller to about
 * 4 KB): the class, the error, the conflicting paths, the agent's final
 * message and the end of the failing verification's output (or of the
 * command's plain output), so a retry does not repeat it; never raw
 * events, never an earlier prompt. */
static void put_retry(FILE *f, const struct zerg_prompt_retry *r)
{
    if (!r || r->attempt < 1)
        return;
    if (r->review_note && *r->review_note)
        fprintf(f,
                "\n## What the reviewer asked\nA reviewer read an earlier "
                "attempt's change and asked for it to be done again:\n%s\n",
                r->review_note);
    if (r->cls && !strcmp(r->cls, "review"))
        return; /* that attempt passed: the note is all there is to say */
    fprintf(f, "\n## What went wrong last time\nAttempt %d failed", r->attempt);
    if (r->cls && *r->cls)
        fprintf(f, " (%s)", r->cls);
    fprintf(f, "%s%s.\n", r->error && *r->error ? ": " : "",
            r->error ? r->error : "");
    if (r->conflicts && *r->conflicts)
        fprintf(f,
                "Its changes conflicted with work merged meanwhile in: %s\n"
                "Start from the current files; keep what others added.\n",
                r->conflicts);
    if (r->final_msg && *r->final_msg)
        fprintf(f, "Its final message:\n%s\n", r->final_msg);
    if (r->verify_cmd && *r->verify_cmd)
        fprintf(f, "The verification `%s` printed (last lines):\n%s\n",
                r->verify_cmd,
                r->output_tail && *r->output_tail ? r->output_tail
                                                  : "(nothing)");
    else if (r->output_tail && *r->output_tail)
        fprintf(f, "The last lines of its output:\n%s\n", r->output_tail);
}

char *zerg_worker_prompt(const struct zerg_task *t, const char *feature,
                         const struct zerg_prompt_retry *retry)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    fprintf(f, "You are implementing task %s of the feature \"%s\".\n", t->id,
            feature ? feature : "");
    if (t->context && *t->context)
        fprintf(f, "\n%s\n", t->context);
    fprintf(f, "\n# Task: %s\n\nTask %s: %s\n",
            t->title && *t->title ? t->title : "(untitled)", t->id,
            t->title && *t->title ? t->title : "(untitled)");
    put_section(f, "Description", t->description);
    put_files(f, t);
    if (t->acceptance.n) {
        fprintf(f, "\n## Acceptance criteria\n");
        put_list(f, NULL, &t->acceptance, "- ");
    }
    if (t->verify_command && *t->verify_command)
        fprintf(f,
                "\n## Verification\nWhen you are done, this command must exit "
                "0 when run from the project root:\n  %s\n",
                t->verify_command);
    fprintf(f, "\n## Instructions\nWork only on this task: change only the "
               "files it names, and finish with the work complete and the "
               "verification passing.\n");
    put_retry(f, retry);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* ---- argv and environment ------------------------------------------- */

void zerg_worker_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

char **zerg_worker_executor_argv(const struct zerg_argv *executor,
                                 const char *prompt)
{
    if (!executor || executor->n == 0 || !prompt)
        return NULL;
    char **v = calloc(executor->n + 2, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < executor->n; i++) {
        if (!(v[i] = strdup(executor->v[i])))
            goto oom;
    }
    if (!(v[executor->n] = strdup(prompt)))
        goto oom;
    return v;
oom:
    zerg_worker_argv_free(v);
    return NULL;
}

/* Appends copies of the NULL-terminated list to v at *n. */
static int push_all(char **v, size_t *n, const char *const *list)
{
    for (size_t i = 0; list && list[i]; i++)
        if (!(v[(*n)++] = strdup(list[i])))
            return -1;
    return 0;
}

static size_t count(const char *const *list)
{
    size_t n = 0;
    while (list && list[n])
        n++;
    return n;
}

char **zerg_worker_agent_argv(const struct zerg_config *cfg,
                              const struct zerg_agent_adapter *ad,
                              const char *bin, const char *session,
                              const char *prompt)
{
    size_t n = 0, extra = cfg->executor_args.n;
    int resume = session && *session && ad->resume;
    char **v =
        calloc(count(ad->args) + count(ad->resume) + extra + 6, sizeof *v);
    if (!v || !(v[n++] = strdup(bin && *bin ? bin : ad->name)))
        goto oom;
    /* After the CLI's own arguments: Claude's option (--resume ID),
     * Codex's subcommand of exec (exec [OPTIONS] resume ID). */
    if (push_all(v, &n, ad->args))
        goto oom;
    if (resume && (push_all(v, &n, ad->resume) || !(v[n++] = strdup(session))))
        goto oom;
    for (size_t i = 0; i < extra; i++)
        if (!(v[n++] = strdup(cfg->executor_args.v[i])))
            goto oom;
    if (prompt ? !(v[n++] = strdup(prompt))
               : ad->stdin_arg && !(v[n++] = strdup(ad->stdin_arg)))
        goto oom;
    return v;
oom:
    zerg_worker_argv_free(v);
    return NULL;
}

static const char *const task_env_names[] = {
    "ZERG_TASK_ID", "ZERG_WORKER_ID", "ZERG_FEATURE",       "ZERG_ATTEMPT",
    "ZERG_EPOCH",   "ZERG_RUN_ID",    "ZERG_PROGRESS_FILE", "ZERG_REVIEW_NOTE",
};
#define TASK_ENV_N (sizeof task_env_names / sizeof task_env_names[0])

/* 1 if entry ("NAME=value") sets one of the task variables. */
static int is_task_var(const char *entry)
{
    for (size_t i = 0; i < TASK_ENV_N; i++) {
        size_t n = strlen(task_env_names[i]);
        if (strncmp(entry, task_env_names[i], n) == 0 && entry[n] == '=')
            return 1;
    }
    return 0;
}

/* 1 if entry ("NAME=value") names a variable one of list sets. */
static int set_by(const char *const *list, const char *entry)
{
    size_t n = strcspn(entry, "=");
    for (size_t i = 0; list && list[i]; i++)
        if (!strncmp(list[i], entry, n) && list[i][n] == '=')
            return 1;
    return 0;
}

static char *env_entry(const char *name, const char *value)
{
    char *s = NULL;
    return asprintf(&s, "%s=%s", name, value ? value : "") < 0 ? NULL : s;
}

char **zerg_worker_task_env(char *const *base, const struct zerg_task_env *e)
{
    char num[3][24];
    snprintf(num[0], sizeof num[0], "%d", e->worker_id);
    snprintf(num[1], sizeof num[1], "%d", e->attempt);
    snprintf(num[2], sizeof num[2], "%" PRIu64, e->epoch);
    const char *values[TASK_ENV_N] = {
        e->task_id, num[0],    e->feature,       num[1],
        num[2],     e->run_id, e->progress_file, e->review_note,
    };
    size_t nbase = 0, n = 0;
    while (base && base[nbase])
        nbase++;
    char **v = calloc(nbase + TASK_ENV_N + count(e->extra) + 1, sizeof *v);
    if (!v)
        return NULL;
    for (size_t i = 0; i < nbase; i++) {
        if (is_task_var(base[i]) || set_by(e->extra, base[i]))
            continue;
        if (!(v[n++] = strdup(base[i])))
            goto oom;
    }
    for (size_t i = 0; i < TASK_ENV_N; i++) {
        if (!(v[n++] = env_entry(task_env_names[i], values[i])))
            goto oom;
    }
    if (push_all(v, &n, e->extra))
        goto oom;
    return v;
oom:
    zerg_worker_argv_free(v);
    return NULL;
}

/* ---- progress ------------------------------------------------------- */

int zerg_worker_parse_progress(const char *text)
{
    if (!text)
        return -1;
    while (*text == ' ' || *text == '\t' || *text == '\n' || *text == '\r')
        text++;
    if (*text < '0' || *text > '9')
        return -1;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno || end - text > 3)
        return -1;
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    return *end || v > 100 ? -1 : (int)v;
}
