/* stream.c - reads the Claude Code CLI's stream-json output.
 *
 * `claude --print --output-format stream-json --verbose` prints one JSON
 * object a line: system/init, then assistant and user lines alternating
 * per tool turn, system/api_retry for each retry of an API request,
 * rate_limit_event when a subscription limit is reported, and a result
 * line last.  The field names read here are the ones Claude Code 2.1.332
 * printed in the runs recorded in tests/fixtures/claude/ (see
 * docs/wiki/Agents.md); anything else in a line is ignored, so a later
 * version that adds fields still parses.  Text goes through the project's
 * JSON layer (include/zerg/json.h). */
#include "zerg/agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/json.h"
#include "zerg/text.h"

/* ---- field readers ------------------------------------------------ */

static void copy_str(char *dst, size_t cap, const zerg_json *v)
{
    const char *s = zerg_json_as_str(v);
    snprintf(dst, cap, "%s", s ? s : "");
}

/* An owned copy of at most ZERG_AGENT_TEXT_MAX bytes, NULL if not a
 * string (or out of memory: the text is informative, never required). */
static char *dup_text(const zerg_json *v)
{
    const char *s = zerg_json_as_str(v);
    if (!s)
        return NULL;
    size_t n =
        v->u.str.len < ZERG_AGENT_TEXT_MAX ? v->u.str.len : ZERG_AGENT_TEXT_MAX;
    return strndup(s, n);
}

/* Numbers as integers; a missing, null or non-number field reads 0. */
static int64_t get_int(const zerg_json *obj, const char *key)
{
    double d = zerg_json_as_num(zerg_json_get(obj, key), 0);
    if (!(d > -ZERG_JSON_INT_LIMIT && d < ZERG_JSON_INT_LIMIT))
        return 0; /* also NaN */
    return (int64_t)d;
}

static void read_usage(const zerg_json *u, struct zerg_agent_usage *out)
{
    out->input_tokens = get_int(u, "input_tokens");
    out->output_tokens = get_int(u, "output_tokens");
    out->cache_read_tokens = get_int(u, "cache_read_input_tokens");
    out->cache_creation_tokens = get_int(u, "cache_creation_input_tokens");
}

/* ---- tool calls --------------------------------------------------- */

const char *zerg_agent_tool_arg(const zerg_json *input)
{
    static const char *const keys[] = {"file_path",   "command", "path",
                                       "pattern",     "url",     "query",
                                       "description", "cmd"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        const char *s = zerg_json_as_str(zerg_json_get(input, keys[i]));
        if (s)
            return s;
    }
    return "";
}

void zerg_agent_tool_label(const char *name, const zerg_json *input, char *buf,
                           size_t size)
{
    const char *arg = zerg_agent_tool_arg(input);
    int n = snprintf(buf, size, "%s%s%.*s", name ? name : "tool",
                     arg[0] ? " " : "", (int)strcspn(arg, "\n"), arg);
    if (n >= (int)size && size > 4) {
        /* cut inside the argument: never inside a UTF-8 sequence */
        char tmp[256];
        zerg_text_cut(tmp, sizeof tmp, buf, size - 4);
        snprintf(buf, size, "%s...", tmp);
    }
}

/* ---- per type ----------------------------------------------------- */

/* {"type":"result","subtype":"success","is_error":true,
 *  "result":"Not logged in · Please run /login","total_cost_usd":0,
 *  "usage":{...},"num_turns":1,"duration_ms":101,
 *  "terminal_reason":"api_error","api_error_status":null,...} */
static void read_result(const zerg_json *doc, struct zerg_agent_event *ev)
{
    const zerg_json *err = zerg_json_get(doc, "is_error");
    ev->is_error = err && err->type == ZERG_JSON_BOOL && err->u.boolean;
    ev->text = dup_text(zerg_json_get(doc, "result"));
    ev->total_cost_usd =
        zerg_json_as_num(zerg_json_get(doc, "total_cost_usd"), 0);
    read_usage(zerg_json_get(doc, "usage"), &ev->usage);
    ev->num_turns = get_int(doc, "num_turns");
    ev->duration_ms = get_int(doc, "duration_ms");
    copy_str(ev->terminal_reason, sizeof ev->terminal_reason,
             zerg_json_get(doc, "terminal_reason"));
    ev->api_error_status = (int)get_int(doc, "api_error_status");
}

/* An API failure comes as a synthetic assistant message:
 * {"type":"assistant","message":{"model":"<synthetic>","content":[{"type":
 *  "text","text":"API Error: ..."}]},"error":"rate_limit",
 *  "is_api_error_message":true,"api_error_status":429} */
/* A model message's id, model and usage (assistant events, and the
 * stream's message_start). */
static void read_message(const zerg_json *msg, struct zerg_agent_event *ev)
{
    const char *model = zerg_json_as_str(zerg_json_get(msg, "model"));
    if (model && strcmp(model, "<synthetic>") != 0)
        copy_str(ev->model, sizeof ev->model, zerg_json_get(msg, "model"));
    copy_str(ev->message_id, sizeof ev->message_id, zerg_json_get(msg, "id"));
    read_usage(zerg_json_get(msg, "usage"), &ev->usage);
}

static void read_assistant(const zerg_json *doc, struct zerg_agent_event *ev)
{
    read_message(zerg_json_get(doc, "message"), ev);
    const zerg_json *blocks =
        zerg_json_get(zerg_json_get(doc, "message"), "content");
    for (size_t i = 0; i < zerg_json_len(blocks); i++) {
        const zerg_json *b = zerg_json_at(blocks, i);
        const char *bt = zerg_json_as_str(zerg_json_get(b, "type"));
        if (bt && !strcmp(bt, "tool_use"))
            zerg_agent_tool_label(zerg_json_as_str(zerg_json_get(b, "name")),
                                  zerg_json_get(b, "input"), ev->tool,
                                  sizeof ev->tool);
    }
    copy_str(ev->error, sizeof ev->error, zerg_json_get(doc, "error"));
    ev->api_error_status = (int)get_int(doc, "api_error_status");
    if (!ev->error[0])
        return;
    const zerg_json *content =
        zerg_json_get(zerg_json_get(doc, "message"), "content");
    for (size_t i = 0; i < zerg_json_len(content); i++) {
        const zerg_json *b = zerg_json_at(content, i);
        const char *bt = zerg_json_as_str(zerg_json_get(b, "type"));
        if (bt && strcmp(bt, "text") == 0) {
            ev->text = dup_text(zerg_json_get(b, "text"));
            return;
        }
    }
}

/* {"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,
 *  "retry_delay_ms":1178,"error_status":429,"error":"rate_limit"} */
static void read_system(const zerg_json *doc, struct zerg_agent_event *ev)
{
    if (strcmp(ev->subtype, "init") == 0)
        copy_str(ev->model, sizeof ev->model, zerg_json_get(doc, "model"));
    if (strcmp(ev->subtype, "api_retry") != 0)
        return;
    ev->retry_attempt = (int)get_int(doc, "attempt");
    ev->retry_max = (int)get_int(doc, "max_retries");
    ev->retry_delay_ms = get_int(doc, "retry_delay_ms");
    ev->retry_status = (int)get_int(doc, "error_status");
    copy_str(ev->error, sizeof ev->error, zerg_json_get(doc, "error"));
}

/* {"type":"rate_limit_event","rate_limit_info":{"status":"rejected",
 *  "resetsAt":1796127213,"rateLimitType":"five_hour",...}} */
static void read_rate_limit(const zerg_json *doc, struct zerg_agent_event *ev)
{
    const zerg_json *info = zerg_json_get(doc, "rate_limit_info");
    copy_str(ev->rate_limit_status, sizeof ev->rate_limit_status,
             zerg_json_get(info, "status"));
    copy_str(ev->rate_limit_type, sizeof ev->rate_limit_type,
             zerg_json_get(info, "rateLimitType"));
    ev->resets_at_s = get_int(info, "resetsAt");
}

/* {"type":"stream_event","event":{"type":"message_start","message":{
 *  "id":"msg_..","model":"..","usage":{...}}}} and
 * {"type":"stream_event","event":{"type":"message_delta",
 *  "usage":{"output_tokens":50}}}; the rest (text deltas) is progress
 * only. */
static void read_stream(const zerg_json *doc, struct zerg_agent_event *ev)
{
    const zerg_json *e = zerg_json_get(doc, "event");
    const char *t = zerg_json_as_str(zerg_json_get(e, "type"));
    if (t && strcmp(t, "message_start") == 0) {
        read_message(zerg_json_get(e, "message"), ev);
    } else if (t && strcmp(t, "message_delta") == 0) {
        ev->usage.output_tokens =
            get_int(zerg_json_get(e, "usage"), "output_tokens");
        ev->usage_delta = 1;
    }
}

static const struct {
    const char *name;
    enum zerg_agent_event_type type;
    void (*read)(const zerg_json *doc, struct zerg_agent_event *ev);
} EVENT_TYPES[] = {
    {"system", ZERG_AGENT_EV_SYSTEM, read_system},
    {"assistant", ZERG_AGENT_EV_ASSISTANT, read_assistant},
    {"user", ZERG_AGENT_EV_USER, NULL},
    {"result", ZERG_AGENT_EV_RESULT, read_result},
    {"rate_limit_event", ZERG_AGENT_EV_RATE_LIMIT, read_rate_limit},
    {"stream_event", ZERG_AGENT_EV_STREAM, read_stream},
};
#define N_EVENT_TYPES (sizeof EVENT_TYPES / sizeof EVENT_TYPES[0])

const char *zerg_agent_event_type_name(enum zerg_agent_event_type t)
{
    for (size_t i = 0; i < N_EVENT_TYPES; i++)
        if (EVENT_TYPES[i].type == t)
            return EVENT_TYPES[i].name;
    return "other";
}

/* ---- one line ----------------------------------------------------- */

zerg_json *zerg_agent_line_doc(const char *line, size_t len,
                               struct zerg_agent_event *ev)
{
    memset(ev, 0, sizeof *ev);
    while (line && len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        len--;
    /* Every event is an object: a line not starting with "{" is plain
     * output (the root refusal, a shell's "not found"), not worth a
     * parse.  A NUL is never in a line the CLI writes (JSON escapes it),
     * and the parser would stop reading at it and accept the prefix. */
    if (!line || len == 0 || len > ZERG_AGENT_LINE_MAX || line[0] != '{' ||
        memchr(line, '\0', len))
        return NULL;
    return zerg_json_parse(line, len, NULL);
}

enum zerg_agent_event_type zerg_agent_event_parse(const char *line, size_t len,
                                                  struct zerg_agent_event *ev)
{
    zerg_json *doc = zerg_agent_line_doc(line, len, ev);
    const char *type = zerg_json_as_str(zerg_json_get(doc, "type"));
    for (size_t i = 0; type && i < N_EVENT_TYPES; i++) {
        if (strcmp(type, EVENT_TYPES[i].name) != 0)
            continue;
        ev->type = EVENT_TYPES[i].type;
        copy_str(ev->subtype, sizeof ev->subtype,
                 zerg_json_get(doc, "subtype"));
        copy_str(ev->session_id, sizeof ev->session_id,
                 zerg_json_get(doc, "session_id"));
        if (EVENT_TYPES[i].read)
            EVENT_TYPES[i].read(doc, ev);
        break;
    }
    zerg_json_free(doc);
    return ev->type;
}

void zerg_agent_event_close(struct zerg_agent_event *ev)
{
    if (!ev)
        return;
    free(ev->text);
    memset(ev, 0, sizeof *ev);
}

/* ---- a whole run -------------------------------------------------- */

void zerg_agent_summary_init(struct zerg_agent_summary *s)
{
    memset(s, 0, sizeof *s);
}

void zerg_agent_summary_init_cli(struct zerg_agent_summary *s,
                                 enum zerg_agent_cli cli)
{
    memset(s, 0, sizeof *s);
    s->cli = (unsigned)cli < ZERG_AGENT_NCLIS ? cli : ZERG_AGENT_CLAUDE;
}

void zerg_agent_summary_close(struct zerg_agent_summary *s)
{
    if (!s)
        return;
    zerg_agent_event_close(&s->result);
    free(s->last_text);
    memset(s, 0, sizeof *s);
}

enum zerg_agent_event_type zerg_agent_parse(enum zerg_agent_cli cli,
                                            const char *line, size_t len,
                                            struct zerg_agent_event *ev)
{
    switch (cli) {
    case ZERG_AGENT_CODEX:
        return zerg_agent_codex_parse(line, len, ev);
    case ZERG_AGENT_GEMINI:
        return zerg_agent_gemini_parse(line, len, ev);
    default:
        return zerg_agent_event_parse(line, len, ev);
    }
}

int zerg_agent_event_is_progress(const struct zerg_agent_event *ev)
{
    return ev->type != ZERG_AGENT_EV_OTHER &&
           !(ev->type == ZERG_AGENT_EV_SYSTEM &&
             strcmp(ev->subtype, "api_retry") == 0);
}

/* The agent's last message, for a CLI whose result has no text of its
 * own: a whole message replaces it, a piece (Gemini's deltas) is added
 * to it until a tool's turn starts the next message. */
static void keep_text(struct zerg_agent_summary *s,
                      const struct zerg_agent_event *ev)
{
    if (s->cli == ZERG_AGENT_CLAUDE)
        return;
    if (ev->type == ZERG_AGENT_EV_USER) {
        free(s->last_text);
        s->last_text = NULL;
        return;
    }
    if (ev->type != ZERG_AGENT_EV_ASSISTANT || !ev->text || ev->error[0])
        return;
    size_t have = ev->text_delta && s->last_text ? strlen(s->last_text) : 0;
    size_t add = strlen(ev->text);
    if (have + add > ZERG_AGENT_TEXT_MAX)
        add = have < ZERG_AGENT_TEXT_MAX ? ZERG_AGENT_TEXT_MAX - have : 0;
    char *t = malloc(have + add + 1);
    if (!t)
        return;
    memcpy(t, have ? s->last_text : "", have);
    memcpy(t + have, ev->text, add);
    t[have + add] = '\0';
    free(s->last_text);
    s->last_text = t;
}

static void add_usage(struct zerg_agent_usage *to,
                      const struct zerg_agent_usage *u)
{
    to->input_tokens += u->input_tokens;
    to->output_tokens += u->output_tokens;
    to->cache_read_tokens += u->cache_read_tokens;
    to->cache_creation_tokens += u->cache_creation_tokens;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* A message's usage as it streams: one message shows up in several
 * events (its start, one assistant event per content block, its delta),
 * each with its usage so far; a new id closes the one before. */
static void fold_usage(struct zerg_agent_summary *s,
                       const struct zerg_agent_event *ev)
{
    struct zerg_agent_usage *c = &s->cur;
    if (ev->usage_delta) {
        c->output_tokens = max64(c->output_tokens, ev->usage.output_tokens);
        return;
    }
    if (!ev->message_id[0])
        return;
    if (strcmp(ev->message_id, s->cur_id) != 0) {
        add_usage(&s->done, c);
        memset(c, 0, sizeof *c);
        memcpy(s->cur_id, ev->message_id, sizeof s->cur_id);
    }
    c->input_tokens = max64(c->input_tokens, ev->usage.input_tokens);
    c->output_tokens = max64(c->output_tokens, ev->usage.output_tokens);
    c->cache_read_tokens =
        max64(c->cache_read_tokens, ev->usage.cache_read_tokens);
    c->cache_creation_tokens =
        max64(c->cache_creation_tokens, ev->usage.cache_creation_tokens);
}

void zerg_agent_summary_usage(const struct zerg_agent_summary *s,
                              struct zerg_agent_usage *out)
{
    const struct zerg_agent_usage *r = &s->result.usage;
    if (s->has_result && (r->input_tokens || r->output_tokens ||
                          r->cache_read_tokens || r->cache_creation_tokens)) {
        *out = *r;
        return;
    }
    *out = s->done;
    add_usage(out, &s->cur);
}

static void fold(struct zerg_agent_summary *s, struct zerg_agent_event *ev)
{
    s->events++;
    keep_text(s, ev);
    if (ev->tool[0]) {
        memcpy(s->tool, ev->tool, sizeof s->tool);
        s->tool_calls++;
    }
    if (!s->model[0] && ev->model[0])
        memcpy(s->model, ev->model, sizeof s->model);
    if (ev->type == ZERG_AGENT_EV_ASSISTANT || ev->type == ZERG_AGENT_EV_STREAM)
        fold_usage(s, ev);
    if (!s->session_id[0] && ev->session_id[0])
        memcpy(s->session_id, ev->session_id, sizeof s->session_id);
    if (ev->api_error_status)
        s->api_error_status = ev->api_error_status;
    switch (ev->type) {
    case ZERG_AGENT_EV_SYSTEM:
        s->api_retries += strcmp(ev->subtype, "api_retry") == 0;
        break;
    case ZERG_AGENT_EV_ASSISTANT:
        if (ev->error[0])
            memcpy(s->agent_error, ev->error, sizeof s->agent_error);
        break;
    case ZERG_AGENT_EV_RATE_LIMIT:
        if (strcmp(ev->rate_limit_status, "rejected") == 0 &&
            ev->resets_at_s > 0)
            s->resets_at_s = ev->resets_at_s;
        break;
    case ZERG_AGENT_EV_RESULT:
        /* The summary takes the event over, text and all; a result with
         * no text of its own says the agent's last message. */
        zerg_agent_event_close(&s->result);
        s->result = *ev;
        s->has_result = 1;
        if (!s->result.text && s->last_text && !s->result.is_error)
            s->result.text = strdup(s->last_text);
        memset(ev, 0, sizeof *ev);
        break;
    default:
        break;
    }
}

enum zerg_agent_event_type zerg_agent_summary_take(struct zerg_agent_summary *s,
                                                   const char *line, size_t len,
                                                   int *progress)
{
    struct zerg_agent_event ev;
    enum zerg_agent_event_type t = zerg_agent_parse(s->cli, line, len, &ev);
    if (progress)
        *progress = zerg_agent_event_is_progress(&ev);
    if (t != ZERG_AGENT_EV_OTHER)
        fold(s, &ev);
    zerg_agent_event_close(&ev);
    return t;
}

enum zerg_agent_event_type zerg_agent_summary_feed(struct zerg_agent_summary *s,
                                                   const char *line, size_t len)
{
    return zerg_agent_summary_take(s, line, len, NULL);
}

void zerg_agent_summary_feed_text(struct zerg_agent_summary *s,
                                  const char *text, size_t len)
{
    while (text && len > 0) {
        const char *nl = memchr(text, '\n', len);
        size_t n = nl ? (size_t)(nl - text) : len;
        zerg_agent_summary_feed(s, text, n);
        if (!nl)
            break;
        len -= n + 1;
        text = nl + 1;
    }
}
