/* failure.c - the failure classes of DESIGN §14, decided in one place.
 *
 * A failed stage becomes one of task, timeout, crash, conflict,
 * environment or rate_limit.  The class decides what happens next:
 * environment fails the rush fast with the fix in the message, rate_limit
 * pauses the pool until the reset time or a backoff, and neither charges
 * the task's retry budget; the others go to the retry policy.  So the
 * rules lean towards `task` whenever the evidence is not specific: a
 * wrong environment or rate_limit would stop or stall a whole rush.
 *
 * The agent's patterns are what Claude Code 2.1.332 printed when run
 * against tests/agent/fake_messages_api.py (the lines are in
 * tests/fixtures/claude/, the runs in docs/wiki/Agents.md); each rule
 * names the fixture it comes from. */
#include "zerg/agent.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const STAGE_NAMES[] = {
    [ZERG_STAGE_COMMAND] = "command",
    [ZERG_STAGE_VERIFICATION] = "verification",
    [ZERG_STAGE_SETUP] = "setup",
};
#define N_STAGES (sizeof STAGE_NAMES / sizeof STAGE_NAMES[0])

const char *zerg_failure_stage_name(enum zerg_failure_stage s)
{
    return (unsigned)s < N_STAGES ? STAGE_NAMES[s] : NULL;
}

int zerg_failure_stage_parse(const char *name, enum zerg_failure_stage *out)
{
    for (size_t i = 0; name && i < N_STAGES; i++)
        if (strcmp(name, STAGE_NAMES[i]) == 0) {
            *out = (enum zerg_failure_stage)i;
            return 0;
        }
    return -EINVAL;
}

/* ---- the fixes users see ------------------------------------------ */

/* Each CLI's own words are its adapter's (src/agent/adapter.c). */
static const struct zerg_agent_adapter *cli_of(const struct zerg_failure_in *in)
{
    const struct zerg_agent_adapter *ad =
        zerg_agent_adapter(in->agent ? in->agent->cli : in->cli);
    return ad ? ad : zerg_agent_adapter(ZERG_AGENT_CLAUDE);
}

#define FIX_ROOT                                                               \
    "set IS_SANDBOX=1 in the worker's environment (container mode does "       \
    "so) or run zerg as a user other than root (see docs/wiki/Agents.md)"
#define FIX_SETUP                                                              \
    "the attempt's workspace or log could not be prepared: see the "           \
    "worker's output above"

/* ---- evidence ----------------------------------------------------- */

static int starts(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Copies s as one line: newlines and tabs become spaces. */
static void set_line(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s ? s : "");
    for (char *p = dst; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
}

/* The last non-empty line of the tail, for reasons that quote output. */
static void last_line(const char *tail, char *dst, size_t cap)
{
    dst[0] = '\0';
    if (!tail)
        return;
    size_t end = strlen(tail);
    while (end > 0 && (tail[end - 1] == '\n' || tail[end - 1] == '\r'))
        end--;
    size_t start = end;
    while (start > 0 && tail[start - 1] != '\n')
        start--;
    size_t n = end - start < cap - 1 ? end - start : cap - 1;
    memcpy(dst, tail + start, n);
    dst[n] = '\0';
}

static void verdict(struct zerg_failure_out *out, enum zerg_failure_class c,
                    const char *reason, const char *fix)
{
    out->cls = c;
    set_line(out->reason, sizeof out->reason, reason);
    set_line(out->fix, sizeof out->fix, fix);
}

/* The executor itself was not there: a spawn that failed, or the
 * shell's 127 ("sh: 1: claude: not found") / 126 (not executable). */
static int executor_missing(const struct zerg_failure_in *in)
{
    if (in->exec_failed)
        return 1;
    if (!in->is_executor || in->signal)
        return 0;
    return in->exit_code == 127 || in->exit_code == 126;
}

/* ---- the agent's own account -------------------------------------- */

/* 1 when a line of text that is no event of the stream (the CLI's own
 * stderr, never a tool's output, which only ever comes inside an event)
 * holds needle. */
static int plain_line_has(const char *text, const char *needle)
{
    for (const char *l = text; l && *l;) {
        const char *nl = strchr(l, '\n');
        size_t n = nl ? (size_t)(nl - l) : strlen(l);
        if (l[0] != '{' && n >= strlen(needle) &&
            memmem(l, n, needle, strlen(needle)))
            return 1;
        l = nl ? nl + 1 : NULL;
    }
    return 0;
}

/* The result's text when the CLI wrote it itself (is_error), never the
 * model's answer, which may quote anything. */
static const char *cli_text(const struct zerg_agent_summary *a)
{
    return a->has_result && a->result.is_error ? a->result.text : NULL;
}

/* The error the CLI gave: Claude's assistant event, Codex's failed turn. */
static const char *agent_error(const struct zerg_agent_summary *a)
{
    if (a->agent_error[0])
        return a->agent_error;
    return a->has_result ? a->result.error : "";
}

/* Environment failures the CLI reports; 1 when one matched.  Only
 * structured fields decide (DESIGN §20): the assistant event's error, the
 * HTTP status, the CLI's own error result, and its plain stderr line. */
static int agent_environment(const struct zerg_agent_summary *a,
                             const struct zerg_agent_adapter *ad,
                             const char *tail, struct zerg_failure_out *out)
{
    const char *text = cli_text(a);
    char why[256];
    /* root-refusal.stderr: plain stderr, no stream-json line, exit 1. */
    if (a->cli == ZERG_AGENT_CLAUDE &&
        plain_line_has(tail, "--dangerously-skip-permissions cannot be used "
                             "with root/sudo privileges")) {
        verdict(out, ZERG_FAILURE_ENVIRONMENT,
                "Claude Code refuses --dangerously-skip-permissions as root",
                FIX_ROOT);
        return 1;
    }
    /* not-logged-in.jsonl: assistant "error":"authentication_failed",
     * result "Not logged in · Please run /login", no request sent. */
    if (a->cli == ZERG_AGENT_CLAUDE && starts(text, "Not logged in")) {
        verdict(out, ZERG_FAILURE_ENVIRONMENT, text, ad->fix_login);
        return 1;
    }
    /* invalid-api-key.jsonl: the same error after an HTTP 401, result
     * "Invalid API key · Fix external API key"; Codex: a turn.failed
     * "unexpected status 401 Unauthorized" (codex/unauthorized.jsonl). */
    if (strcmp(agent_error(a), "authentication_failed") == 0 ||
        a->api_error_status == 401) {
        snprintf(why, sizeof why, "%s: authentication failed", ad->product);
        verdict(out, ZERG_FAILURE_ENVIRONMENT, text ? text : why,
                a->api_error_status == 401 ? ad->fix_key : ad->fix_login);
        return 1;
    }
    return 0;
}

/* Rate limits and overload; 1 when one matched. */
static int agent_rate_limit(const struct zerg_agent_summary *a,
                            struct zerg_failure_out *out)
{
    const char *text = cli_text(a);
    /* rate-limit-given-up.jsonl: 429 after CLAUDE_CODE_MAX_RETRIES
     * retries, assistant "error":"rate_limit", api_error_status 429.
     * usage-limit.jsonl: a subscription limit, no retries, result
     * "You've hit your 5-hour limit · resets 12:13pm (UTC)" after a
     * rejected rate_limit_event carrying resetsAt.
     * overloaded.jsonl: 529, assistant "error":"server_error" (not
     * "overloaded": only api_retry lines say that), status 529. */
    int limited = strcmp(agent_error(a), "rate_limit") == 0 ||
                  a->api_error_status == 429 || a->api_error_status == 529 ||
                  a->resets_at_s > 0 || starts(text, "You've hit your");
    if (!limited)
        return 0;
    verdict(out, ZERG_FAILURE_RATE_LIMIT,
            text ? text : "Claude Code: rate limited", NULL);
    out->reset_at_s = a->resets_at_s;
    return 1;
}

/* The agent's words for a failure that stays `task`: API errors other
 * than the above (api-error.jsonl: "API Error: 500 ..."), an API timeout
 * (timeout.jsonl: "Request timed out. ... set API_TIMEOUT_MS above
 * 3000."), or the model's own last message. */
static int agent_task(const struct zerg_agent_summary *a,
                      struct zerg_failure_out *out)
{
    if (!a->has_result || !a->result.text || !a->result.text[0])
        return 0;
    char reason[256];
    snprintf(reason, sizeof reason, "%s%s",
             a->result.is_error ? "" : "the agent ended: ", a->result.text);
    verdict(out, ZERG_FAILURE_TASK, reason, NULL);
    return 1;
}

/* ---- the decision ------------------------------------------------- */

static void classify_exit(const struct zerg_failure_in *in,
                          struct zerg_failure_out *out)
{
    const char *stage = zerg_failure_stage_name(in->stage);
    char reason[256], line[160];
    last_line(in->output_tail, line, sizeof line);
    snprintf(reason, sizeof reason, "%s exited %d%s%s", stage ? stage : "stage",
             in->exit_code, line[0] ? ": " : "", line);
    verdict(out, ZERG_FAILURE_TASK, reason, NULL);
}

/* Exit codes that mean something (Gemini CLI 0.61.0, measured): 41 no
 * or bad credentials, 55 a folder it does not trust; both before any
 * stream.  42 (bad input) and 53 (turn limit) stay the task's. */
static int gemini_exit(const struct zerg_failure_in *in,
                       struct zerg_failure_out *out)
{
    const struct zerg_agent_adapter *ad = cli_of(in);
    if (ad->cli != ZERG_AGENT_GEMINI || in->signal)
        return 0;
    if (in->exit_code == 41) {
        verdict(out, ZERG_FAILURE_ENVIRONMENT,
                "Gemini CLI has no usable credentials (exit 41)",
                ad->fix_login);
        return 1;
    }
    if (in->exit_code == 55) {
        verdict(out, ZERG_FAILURE_ENVIRONMENT,
                "Gemini CLI does not trust the worktree (exit 55)",
                "set GEMINI_CLI_TRUST_WORKSPACE=true in the worker's "
                "environment (zerg sets it for executor.kind: gemini)");
        return 1;
    }
    return 0;
}

static int classify_agent(const struct zerg_failure_in *in,
                          struct zerg_failure_out *out)
{
    struct zerg_agent_summary own;
    const struct zerg_agent_summary *a = in->agent;
    if (gemini_exit(in, out))
        return 1;
    if (!a) {
        zerg_agent_summary_init_cli(&own, in->cli);
        if (in->output_tail)
            zerg_agent_summary_feed_text(&own, in->output_tail,
                                         strlen(in->output_tail));
        a = &own;
    }
    int done = agent_environment(a, cli_of(in), in->output_tail, out) ||
               agent_rate_limit(a, out) || agent_task(a, out);
    if (a == &own)
        zerg_agent_summary_close(&own);
    return done;
}

/* The process-level classes, which need no output: 1 when one matched. */
static int classify_process(const struct zerg_failure_in *in,
                            struct zerg_failure_out *out)
{
    char reason[256];
    const char *stage = zerg_failure_stage_name(in->stage);
    if (!stage)
        stage = "stage";
    if (in->conflict) {
        verdict(out, ZERG_FAILURE_CONFLICT,
                "the work conflicts with work merged meanwhile", NULL);
    } else if (in->timed_out) {
        snprintf(reason, sizeof reason, "%s timed out", stage);
        verdict(out, ZERG_FAILURE_TIMEOUT, reason, NULL);
    } else if (in->stage == ZERG_STAGE_COMMAND && executor_missing(in)) {
        snprintf(reason, sizeof reason, "the executor %s%s%scould not be run",
                 in->executor ? "\"" : "", in->executor ? in->executor : "",
                 in->executor ? "\" " : "");
        verdict(out, ZERG_FAILURE_ENVIRONMENT, reason, cli_of(in)->fix_install);
    } else if (in->signal) {
        snprintf(reason, sizeof reason, "%s killed by signal %d (%s)", stage,
                 in->signal, strsignal(in->signal));
        verdict(out, ZERG_FAILURE_CRASH, reason, NULL);
    } else if (in->stage == ZERG_STAGE_SETUP) {
        /* Nothing of the task ran, and a retry in the same environment
         * sets up the same way. */
        char line[200];
        last_line(in->output_tail, line, sizeof line);
        snprintf(reason, sizeof reason, "setup failed%s%s", line[0] ? ": " : "",
                 line);
        verdict(out, ZERG_FAILURE_ENVIRONMENT, reason, FIX_SETUP);
    } else {
        return 0;
    }
    return 1;
}

void zerg_failure_classify(const struct zerg_failure_in *in,
                           struct zerg_failure_out *out)
{
    memset(out, 0, sizeof *out);
    if (classify_process(in, out))
        return;
    if (in->stage == ZERG_STAGE_COMMAND && in->is_executor &&
        classify_agent(in, out))
        return;
    classify_exit(in, out);
}
