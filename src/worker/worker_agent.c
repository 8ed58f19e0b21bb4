/* worker_agent.c - what an attempt of an agent executor needs around its
 * command stage (DESIGN §14): the prompt (with what went wrong last time
 * for a retry) saved beside the attempt's log, the executor's argv by
 * executor.kind, and afterwards the reading of its stream-json output
 * (session, cost, tokens) and the failure class of a failed stage.  The
 * parsing and the taxonomy are src/agent/; this file only feeds them. */
#include "worker_agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zerg/agent.h"
#include "zerg/fsio.h"
#include "zerg/pricing.h"
#include "zerg/text.h"

#define TAIL_LINES 30
#define SCAN_BYTES (512 * 1024) /* the end of a log read for the result */
/* Linux's MAX_ARG_STRLEN: the longest single argument execve takes. */
#define ARG_ONE_MAX (128 * 1024)

/* A line zerg or the stream wrote, not the task's own words: an event,
 * zerg's stage header and footer, the command line it echoed. */
static int not_words(const char *l, size_t n)
{
    return (n && l[0] == '{') || (n >= 10 && !strncmp(l, "==== zerg:", 10)) ||
           (n >= 2 && !strncmp(l, "$ ", 2));
}

/* The last `lines` plain lines of text (from its part after the last
 * verification header when want_verify), at most cap bytes, into out. */
static void plain_tail(const char *text, size_t len, int want_verify,
                       size_t lines, char *out, size_t cap)
{
    static const char HDR[] = "==== zerg: verification of task";
    const char *from = text;
    for (const char *p = text; want_verify && p && p < text + len;) {
        const char *hit =
            memmem(p, (size_t)(text + len - p), HDR, sizeof HDR - 1);
        if (hit)
            from = hit;
        p = hit ? hit + 1 : NULL;
    }
    /* Keep the plain lines, newest last, into a scratch buffer. */
    size_t kept = 0, k = 0;
    const char *starts[64];
    size_t lens[64];
    for (const char *l = from; l < text + len;) {
        const char *nl = memchr(l, '\n', (size_t)(text + len - l));
        size_t n = nl ? (size_t)(nl - l) : (size_t)(text + len - l);
        if (n && !not_words(l, n)) {
            starts[k % 64] = l, lens[k % 64] = n;
            k++;
        }
        l = nl ? nl + 1 : text + len;
    }
    size_t first = k > lines ? k - lines : 0, off = 0;
    out[0] = '\0';
    for (size_t i = first; i < k && off + 2 < cap; i++, kept++) {
        size_t n = lens[i % 64];
        if (n > cap - off - 2)
            n = cap - off - 2;
        memcpy(out + off, starts[i % 64], n);
        off += n;
        out[off++] = '\n';
        out[off] = '\0';
    }
    (void)kept;
}

char *wk_agent_prompt(const struct worker *w, const struct zerg_task *t,
                      const struct zerg_assign *a, const char *log_dir)
{
    struct zerg_prompt_retry retry = {0};
    char prev[PATH_MAX], tail[2048] = "", final[1024] = "", *text = NULL;
    size_t len = 0;
    if (a->attempt > 1) {
        retry.attempt = a->attempt - 1;
        retry.cls = a->last_class;
        retry.error = a->last_error;
        retry.conflicts = a->last_conflicts;
        retry.review_note = a->review_note;
        struct zerg_err ignored = {0};
        if (!zerg_fsio_path(prev, sizeof prev, "%s/attempt-%d.log", log_dir,
                            a->attempt - 1)) {
            int fd = zerg_fsio_open_read(prev, ZERG_FSIO_NOFOLLOW, &ignored);
            if (fd >= 0 && zerg_fsio_read_end(fd, SCAN_BYTES, &text, &len) < 0)
                text = NULL;
            if (fd >= 0)
                close(fd);
        }
    }
    if (text) {
        struct zerg_agent_summary s;
        const struct zerg_agent_adapter *ad = zerg_agent_for(&w->cfg);
        zerg_agent_summary_init_cli(&s, ad ? ad->cli : ZERG_AGENT_CLAUDE);
        zerg_agent_summary_feed_text(&s, text, len);
        if (s.has_result && s.result.text)
            snprintf(final, sizeof final, "%s", s.result.text);
        zerg_agent_summary_close(&s);
        int verify =
            memmem(text, len, "==== zerg: verification of task", 31) != NULL;
        plain_tail(text, len, verify, TAIL_LINES, tail, sizeof tail);
        retry.verify_cmd = verify ? t->verify_command : NULL;
        retry.final_msg = final;
        retry.output_tail = tail;
    }
    char *prompt = zerg_worker_prompt(t, w->o->feature, &retry);
    free(text);
    return prompt;
}

char *wk_agent_resume_prompt(const struct worker *w, const struct zerg_task *t,
                             const struct zerg_assign *a, const char *log_dir)
{
    (void)w, (void)log_dir;
    char *p = NULL;
    if (asprintf(&p,
                 "Task-ID: %s\n\nYour previous attempt at this task "
                 "(attempt %d) was interrupted before it finished: its worker "
                 "stopped, not because of anything you did.  Continue where "
                 "you left off; what you wrote is still in the working "
                 "directory.  Finish the task as it was given to you above, "
                 "then say that it is done.\n",
                 t->id, a->attempt - 1) < 0)
        return NULL;
    return p;
}

void wk_agent_save_prompt(const char *log_dir, int attempt, const char *prompt)
{
    char path[PATH_MAX];
    if (zerg_fsio_path(path, sizeof path, "%s/attempt-%d.prompt", log_dir,
                       attempt) == 0)
        zerg_fsio_write_atomic(path, prompt, strlen(prompt), ZERG_FSIO_NOSYNC,
                               NULL);
}

int wk_agent_prompt_fd(const char *log_dir, int attempt)
{
    char path[PATH_MAX];
    if (zerg_fsio_path(path, sizeof path, "%s/attempt-%d.prompt", log_dir,
                       attempt))
        return -1;
    return open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
}

char **wk_agent_argv(const struct worker *w, const char *prompt, int on_stdin,
                     const char *session)
{
    const struct zerg_agent_adapter *ad = zerg_agent_for(&w->cfg);
    if (ad)
        return zerg_worker_agent_argv(&w->cfg, ad, zerg_agent_bin(&w->cfg, ad),
                                      session, on_stdin ? NULL : prompt);
    return zerg_worker_executor_argv(&w->cfg.executor, prompt);
}

/* Claude Code keeps a session under ~/.claude/projects/, in a directory
 * named after the working directory with every character but letters and
 * digits made '-': a session of another directory (another worker's
 * worktree) cannot be resumed here. */
static int claude_has_session(const char *cwd, const char *sid)
{
    char dir[PATH_MAX], path[PATH_MAX + 128];
    const char *home = getenv("HOME");
    size_t n = 0;
    if (!home || !cwd || strlen(cwd) >= sizeof dir)
        return 0;
    for (const char *c = cwd; *c; c++)
        dir[n++] = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                           (*c >= '0' && *c <= '9')
                       ? *c
                       : '-';
    dir[n] = '\0';
    if (zerg_fsio_path(path, sizeof path, "%s/.claude/projects/%s/%s.jsonl",
                       home, dir, sid))
        return 0;
    return access(path, F_OK) == 0;
}

int wk_agent_session(const struct worker *w, const char *log_dir, int attempt,
                     const char *cwd, char *sid, size_t n)
{
    const struct zerg_agent_adapter *ad = zerg_agent_for(&w->cfg);
    char prev[PATH_MAX], *text = NULL;
    size_t len = 0;
    struct zerg_err ignored = {0};
    sid[0] = '\0';
    if (!ad || !ad->resume || attempt < 2 ||
        zerg_fsio_path(prev, sizeof prev, "%s/attempt-%d.log", log_dir,
                       attempt - 1))
        return 0;
    int fd = zerg_fsio_open_read(prev, ZERG_FSIO_NOFOLLOW, &ignored);
    if (fd >= 0 && zerg_fsio_read_end(fd, SCAN_BYTES, &text, &len) < 0)
        text = NULL;
    if (fd >= 0)
        close(fd);
    struct zerg_agent_summary s;
    zerg_agent_summary_init_cli(&s, ad->cli);
    if (text)
        zerg_agent_summary_feed_text(&s, text, len);
    int ok =
        s.session_id[0] != '\0' &&
        strspn(s.session_id, "0123456789abcdefABCDEF-") ==
            strlen(s.session_id) &&
        (ad->cli != ZERG_AGENT_CLAUDE || claude_has_session(cwd, s.session_id));
    if (ok)
        snprintf(sid, n, "%s", s.session_id);
    zerg_agent_summary_close(&s);
    free(text);
    return ok;
}

int wk_agent_too_long(const struct worker *w, const char *prompt, int on_stdin,
                      struct zerg_result *r)
{
    (void)w;
    size_t n = strlen(prompt);
    if (on_stdin || n < ARG_ONE_MAX)
        return 0;
    snprintf(r->stage, sizeof r->stage, "command");
    zerg_result_set_class(r, ZERG_FAILURE_TASK);
    snprintf(r->error, sizeof r->error,
             "the prompt is %zu KiB, more than the %d KiB one argument of a "
             "command can hold (execve: E2BIG), so workers.executor was not "
             "run: shorten the task's description or use an agent "
             "executor.kind (claude, codex, gemini): they read it on stdin",
             n >> 10, ARG_ONE_MAX >> 10);
    r->exit_code = -1;
    return 1;
}

void wk_agent_stream_start(struct worker *w, int log_fd, off_t from)
{
    const struct zerg_agent_adapter *ad = zerg_agent_for(&w->cfg);
    if (ad)
        wk_stream_open(&w->stream, ad->cli, log_fd, from);
}

/* The end of the attempt's log (malloc'd), or NULL.  The log is open
 * write-only (O_APPEND), so it is read through a read-only open of the
 * same file: /proc/self/fd names the inode the task wrote, not whatever
 * the path holds by now. */
static char *read_end(int log_fd, size_t *len)
{
    char self[64], *text = NULL;
    snprintf(self, sizeof self, "/proc/self/fd/%d", log_fd);
    int fd = log_fd < 0 ? -1 : open(self, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    if (zerg_fsio_read_end(fd, SCAN_BYTES, &text, len) < 0)
        text = NULL;
    close(fd);
    return text;
}

/* The model executor.args name (--model M, -m M, --model=M), for a CLI
 * whose stream does not (Codex), or "". */
static const char *args_model(const struct zerg_config *cfg)
{
    const struct zerg_argv *a = &cfg->executor_args;
    for (size_t i = 0; i < a->n; i++) {
        if (!strncmp(a->v[i], "--model=", 8))
            return a->v[i] + 8;
        if ((!strcmp(a->v[i], "--model") || !strcmp(a->v[i], "-m")) &&
            i + 1 < a->n)
            return a->v[i + 1];
    }
    return "";
}

const char *wk_agent_model(const struct zerg_config *cfg,
                           const struct zerg_agent_summary *s)
{
    return s->model[0] ? s->model : args_model(cfg);
}

/* The attempt's ledger (DESIGN §20): the result's usage and cost when
 * the run got that far, else the tokens its messages streamed. */
static void record_run(const struct zerg_config *cfg,
                       const struct zerg_agent_summary *s,
                       struct zerg_result *r)
{
    struct zerg_agent_usage u;
    snprintf(r->session_id, sizeof r->session_id, "%s", s->session_id);
    snprintf(r->model, sizeof r->model, "%s", wk_agent_model(cfg, s));
    zerg_agent_summary_usage(s, &u);
    r->input_tokens = u.input_tokens;
    r->output_tokens = u.output_tokens;
    r->cache_read_tokens = u.cache_read_tokens;
    r->cache_write_tokens = u.cache_creation_tokens;
    if (s->has_result) {
        r->cost_usd =
            s->result.total_cost_usd > 0 ? s->result.total_cost_usd : 0;
        r->num_turns = s->result.num_turns;
    }
    if (r->cost_usd <= 0)
        r->cost_estimated =
            wk_agent_estimate(cfg, r->model, &u, &r->cost_usd) == 1;
}

int wk_agent_estimate(const struct zerg_config *cfg, const char *model,
                      const struct zerg_agent_usage *u, double *usd)
{
    struct zerg_price p;
    if (!zerg_pricing_find(&cfg->executor_pricing, model, &p))
        return 0;
    *usd = zerg_pricing_cost(&p, u->input_tokens, u->output_tokens,
                             u->cache_read_tokens, u->cache_creation_tokens);
    return *usd > 0;
}

static void classify(const struct worker *w, const struct zerg_agent_summary *s,
                     const char *tail, int is_executor, struct zerg_result *r)
{
    const struct zerg_agent_adapter *ad = zerg_agent_for(&w->cfg);
    struct zerg_failure_in in = {
        .exit_code = r->exit_code,
        .signal = r->timed_out ? 0 : r->signal,
        .timed_out = r->timed_out,
        .is_executor = is_executor,
        .executor = ad ? zerg_agent_bin(&w->cfg, ad)
                       : (w->cfg.executor.n ? w->cfg.executor.v[0] : NULL),
        .cli = ad ? ad->cli : ZERG_AGENT_CLAUDE,
        .agent = is_executor ? s : NULL,
        .output_tail = tail,
    };
    zerg_failure_stage_parse(r->stage, &in.stage);
    struct zerg_failure_out out;
    zerg_failure_classify(&in, &out);
    zerg_result_set_class(r, out.cls);
    snprintf(r->fix, sizeof r->fix, "%s", out.fix);
    r->reset_at_s = out.reset_at_s;
    /* The CLI's own account beats "exited with code 1": an environment
     * or rate limit always, a task failure when the CLI ended in an
     * error result of its own (never the model's words). */
    int cli_error = s && s->has_result && s->result.is_error;
    if (out.reason[0] && (out.cls == ZERG_FAILURE_ENVIRONMENT ||
                          out.cls == ZERG_FAILURE_RATE_LIMIT ||
                          (out.cls == ZERG_FAILURE_TASK && cli_error)))
        snprintf(r->error, sizeof r->error, "%s", out.reason);
}

void wk_agent_finish(const struct worker *w, int log_fd, int is_executor,
                     int failed, struct zerg_result *r)
{
    struct zerg_agent_summary s;
    size_t len = 0;
    const struct zerg_agent_adapter *ad = zerg_agent_for(&w->cfg);
    int agent = is_executor && ad != NULL; /* an agent's stream */
    /* The stream read while the stage ran holds every event; the log's
     * end is read only without it (it could not be opened). */
    const struct zerg_agent_summary *live =
        agent && w->stream.sum.events ? &w->stream.sum : NULL;
    if (!agent && !failed)
        return; /* nothing to read the log for */
    /* The log's end: for the classifier's tail, or without the stream. */
    char *text = failed || !live ? read_end(log_fd, &len) : NULL;
    zerg_agent_summary_init_cli(&s, ad ? ad->cli : ZERG_AGENT_CLAUDE);
    if (text && agent && !live)
        zerg_agent_summary_feed_text(&s, text, len);
    if (agent)
        record_run(&w->cfg, live ? live : &s, r);
    if (failed)
        classify(w, live ? live : &s,
                 text ? text + zerg_text_tail_start(text, len, TAIL_LINES)
                      : NULL,
                 is_executor, r);
    zerg_agent_summary_close(&s);
    free(text);
}
