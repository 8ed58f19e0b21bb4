/* transcript.c - an agent attempt's log as people read it (DESIGN §21).
 *
 * The log of an agent attempt is mostly the CLI's stream-json events, one
 * JSON object a line; a person wants what happened: what the agent said,
 * which tool it called on what (the path, the command), what came back,
 * how it ended and what it cost.  Each event line becomes at most one
 * short line; lines that are no event (zerg's stage headers, stderr, the
 * verification's output) are kept as they are.  Partial-message deltas and
 * status lines say nothing a reader needs and are left out.  `zerg logs
 * --task ID --raw` prints the file as it is.
 *
 * Claude Code's events are read whole (they hold the tool results); a
 * Codex or Gemini log, told apart by its first event's type, goes through
 * that CLI's own stream reader (src/agent/) into the same lines: the
 * session, what the agent said (Gemini's pieces joined), each tool call,
 * the CLI's retries and the result with its tokens. */
#include "cli/transcript.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/agent.h"
#include "zerg/json.h"

#define TEXT_SHOWN 300 /* of a message or a tool result */
#define ARG_SHOWN 160  /* of a tool's key argument */

static const char *str(const zerg_json *o, const char *key)
{
    return zerg_json_as_str(zerg_json_get(o, key));
}

/* s, its first line only and at most max bytes, "..." when cut. */
static void put_short(FILE *out, const char *s, size_t max)
{
    size_t n = strcspn(s, "\n"), shown = n < max ? n : max;
    fprintf(out, "%.*s%s", (int)shown, s, shown < strlen(s) ? " ..." : "");
}

static void assistant(FILE *out, const zerg_json *doc)
{
    const zerg_json *content =
        zerg_json_get(zerg_json_get(doc, "message"), "content");
    for (size_t i = 0; i < zerg_json_len(content); i++) {
        const zerg_json *b = zerg_json_at(content, i);
        const char *t = str(b, "type");
        if (t && !strcmp(t, "text") && str(b, "text")) {
            fputs("agent: ", out);
            put_short(out, str(b, "text"), TEXT_SHOWN);
            fputc('\n', out);
        } else if (t && !strcmp(t, "tool_use")) {
            fprintf(out, "tool:  %s ", str(b, "name") ? str(b, "name") : "?");
            put_short(out, zerg_agent_tool_arg(zerg_json_get(b, "input")),
                      ARG_SHOWN);
            fputc('\n', out);
        }
    }
}

/* A tool result's text: a string, or the first text block of a list. */
static const char *result_text(const zerg_json *b)
{
    const zerg_json *c = zerg_json_get(b, "content");
    if (zerg_json_as_str(c))
        return zerg_json_as_str(c);
    for (size_t i = 0; i < zerg_json_len(c); i++)
        if (str(zerg_json_at(c, i), "text"))
            return str(zerg_json_at(c, i), "text");
    return "";
}

static void user(FILE *out, const zerg_json *doc)
{
    const zerg_json *content =
        zerg_json_get(zerg_json_get(doc, "message"), "content");
    for (size_t i = 0; i < zerg_json_len(content); i++) {
        const zerg_json *b = zerg_json_at(content, i);
        const char *t = str(b, "type");
        if (!t || strcmp(t, "tool_result"))
            continue;
        const zerg_json *err = zerg_json_get(b, "is_error");
        int failed = err && err->type == ZERG_JSON_BOOL && err->u.boolean;
        fputs(failed ? "  -> error: " : "  -> ", out);
        put_short(out, result_text(b), TEXT_SHOWN);
        fputc('\n', out);
    }
}

static void result(FILE *out, const zerg_json *doc)
{
    const zerg_json *err = zerg_json_get(doc, "is_error");
    const zerg_json *u = zerg_json_get(doc, "usage");
    int failed = err && err->type == ZERG_JSON_BOOL && err->u.boolean;
    fprintf(
        out,
        "result: %s, %.0f turns, $%.4f, %.0f in / %.0f out tokens "
        "(cache %.0f read / %.0f written)\n",
        failed ? "error" : "success",
        zerg_json_as_num(zerg_json_get(doc, "num_turns"), 0),
        zerg_json_as_num(zerg_json_get(doc, "total_cost_usd"), 0),
        zerg_json_as_num(zerg_json_get(u, "input_tokens"), 0),
        zerg_json_as_num(zerg_json_get(u, "output_tokens"), 0),
        zerg_json_as_num(zerg_json_get(u, "cache_read_input_tokens"), 0),
        zerg_json_as_num(zerg_json_get(u, "cache_creation_input_tokens"), 0));
    if (str(doc, "result")) {
        fputs("final: ", out);
        put_short(out, str(doc, "result"), 4 * TEXT_SHOWN);
        fputc('\n', out);
    }
}

static void system_line(FILE *out, const zerg_json *doc)
{
    const char *sub = str(doc, "subtype");
    if (sub && !strcmp(sub, "init"))
        fprintf(out, "session %s, model %s\n",
                str(doc, "session_id") ? str(doc, "session_id") : "?",
                str(doc, "model") ? str(doc, "model") : "?");
    else if (sub && !strcmp(sub, "api_retry"))
        fprintf(out, "api retry %.0f of %.0f (status %.0f)\n",
                zerg_json_as_num(zerg_json_get(doc, "attempt"), 0),
                zerg_json_as_num(zerg_json_get(doc, "max_retries"), 0),
                zerg_json_as_num(zerg_json_get(doc, "error_status"), 0));
}

/* ---- Codex and Gemini: through their stream readers ------------------- */

/* Which CLI wrote the log: the first event line's type says. */
static enum zerg_agent_cli cli_of(const char *text, size_t len)
{
    for (const char *l = text; l && l < text + len;) {
        const char *nl = memchr(l, '\n', (size_t)(text + len - l));
        if (!strncmp(l, "{\"type\":\"", 9)) {
            const char *t = l + 9;
            if (!strncmp(t, "thread.", 7) || !strncmp(t, "turn.", 5) ||
                !strncmp(t, "item.", 5))
                return ZERG_AGENT_CODEX;
            if (!strncmp(t, "init\"", 5) || !strncmp(t, "message\"", 8) ||
                !strncmp(t, "tool_use\"", 9) ||
                !strncmp(t, "tool_result\"", 12))
                return ZERG_AGENT_GEMINI;
            if (!strncmp(t, "system\"", 7) || !strncmp(t, "assistant\"", 10))
                return ZERG_AGENT_CLAUDE;
        }
        l = nl ? nl + 1 : NULL;
    }
    return ZERG_AGENT_CLAUDE;
}

struct joined {
    char text[4 * TEXT_SHOWN];
    size_t n;
};

/* Gemini streams a message in pieces: one "agent:" line for them all. */
static void flush_text(FILE *out, struct joined *j)
{
    if (!j->n)
        return;
    fputs("agent: ", out);
    put_short(out, j->text, TEXT_SHOWN);
    fputc('\n', out);
    j->n = 0;
    j->text[0] = '\0';
}

static void other_result(FILE *out, const struct zerg_agent_event *ev)
{
    const struct zerg_agent_usage *u = &ev->usage;
    fprintf(out,
            "result: %s, %lld turn%s, %lld in / %lld out tokens (cache %lld "
            "read)\n",
            ev->is_error ? "error" : "success", (long long)ev->num_turns,
            ev->num_turns == 1 ? "" : "s", (long long)u->input_tokens,
            (long long)u->output_tokens, (long long)u->cache_read_tokens);
    if (ev->text) {
        fputs(ev->is_error ? "error: " : "final: ", out);
        put_short(out, ev->text, 4 * TEXT_SHOWN);
        fputc('\n', out);
    }
}

static void other_event(FILE *out, const struct zerg_agent_event *ev,
                        struct joined *j)
{
    if (ev->type == ZERG_AGENT_EV_ASSISTANT && ev->text_delta && ev->text) {
        size_t k = strlen(ev->text);
        if (j->n + k >= sizeof j->text)
            k = sizeof j->text - j->n - 1;
        memcpy(j->text + j->n, ev->text, k);
        j->text[j->n += k] = '\0';
        return;
    }
    flush_text(out, j);
    if (ev->type == ZERG_AGENT_EV_SYSTEM && !strcmp(ev->subtype, "init"))
        fprintf(out, "session %s%s%s\n",
                ev->session_id[0] ? ev->session_id : "?",
                ev->model[0] ? ", model " : "", ev->model);
    else if (ev->type == ZERG_AGENT_EV_SYSTEM &&
             !strcmp(ev->subtype, "api_retry"))
        fprintf(out, "api retry (status %d)\n", ev->retry_status);
    else if (ev->type == ZERG_AGENT_EV_ASSISTANT && ev->tool[0])
        fprintf(out, "tool:  %s\n", ev->tool);
    else if (ev->type == ZERG_AGENT_EV_ASSISTANT && ev->text)
        (fputs("agent: ", out), put_short(out, ev->text, TEXT_SHOWN),
         fputc('\n', out));
    else if (ev->type == ZERG_AGENT_EV_RESULT)
        other_result(out, ev);
}

/* 1 when line was an event of cli (written or left out), 0 when plain. */
static int other_line(FILE *out, enum zerg_agent_cli cli, const char *line,
                      size_t n, struct joined *j)
{
    struct zerg_agent_event ev;
    if (zerg_agent_parse(cli, line, n, &ev) == ZERG_AGENT_EV_OTHER) {
        zerg_agent_event_close(&ev);
        return n && line[0] == '{' && !strncmp(line, "{\"type\":", 8);
    }
    other_event(out, &ev, j);
    zerg_agent_event_close(&ev);
    return 1;
}

/* ---- Claude Code ------------------------------------------------------ */

/* 1 when line was an event (written or left out), 0 when it is plain. */
static int event_line(FILE *out, const char *line, size_t n)
{
    if (!n || line[0] != '{')
        return 0;
    zerg_json *doc = zerg_json_parse(line, n, NULL);
    const char *type = str(doc, "type");
    if (!type) {
        zerg_json_free(doc);
        return 0;
    }
    if (!strcmp(type, "assistant"))
        assistant(out, doc);
    else if (!strcmp(type, "user"))
        user(out, doc);
    else if (!strcmp(type, "result"))
        result(out, doc);
    else if (!strcmp(type, "system"))
        system_line(out, doc);
    zerg_json_free(doc); /* stream_event, rate_limit_event: left out */
    return 1;
}

int zerg_transcript_has_events(const char *text, size_t len)
{
    for (const char *l = text; l && l < text + len;) {
        const char *nl = memchr(l, '\n', (size_t)(text + len - l));
        if (!strncmp(l, "{\"type\":", 8))
            return 1;
        l = nl ? nl + 1 : NULL;
    }
    return 0;
}

char *zerg_transcript(const char *text, size_t len, size_t *out_len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&buf, &n);
    if (!out)
        return NULL;
    enum zerg_agent_cli cli = cli_of(text, len);
    struct joined j = {.n = 0};
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t ln = nl ? (size_t)(nl - (text + i)) : len - i;
        int ev = cli == ZERG_AGENT_CLAUDE
                     ? event_line(out, text + i, ln)
                     : other_line(out, cli, text + i, ln, &j);
        if (!ev) {
            flush_text(out, &j);
            fwrite(text + i, 1, ln, out);
            fputc('\n', out);
        }
        i += ln + 1;
    }
    flush_text(out, &j);
    if (fclose(out)) {
        free(buf);
        return NULL;
    }
    *out_len = n;
    return buf;
}
