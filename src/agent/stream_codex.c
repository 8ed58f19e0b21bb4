/* stream_codex.c - reads the Codex CLI's `exec --json` output.
 *
 * One JSON object a line, as Codex CLI 0.171.0 printed them against the
 * scripted Responses API of tests/agent/fake_responses_api.py (see
 * docs/wiki/Agents.md, "Codex CLI"):
 *
 *   {"type":"thread.started","thread_id":"01a2..."}     -> system init
 *   {"type":"turn.started"}                             -> system turn
 *   {"type":"item.started"|"item.updated"|"item.completed",
 *    "item":{"type":"agent_message","text":".."}}       -> assistant
 *    (command_execution, file_change, mcp_tool_call,
 *     web_search, reasoning, ...: the agent working)    -> assistant
 *   {"type":"error","message":"Reconnecting... 2/5 .."} -> system api_retry
 *   {"type":"turn.completed","usage":{"input_tokens":200,
 *    "cached_input_tokens":80,"cache_write_input_tokens":0,
 *    "output_tokens":14,"reasoning_output_tokens":0}}  -> result
 *   {"type":"turn.failed","error":{"message":
 *    "unexpected status 401 Unauthorized: .."}}         -> result, error
 *
 * The thread id is the session (`codex exec resume ID`).  Codex reports
 * no cost and no model: the ledger prices its tokens from
 * executor.pricing.  Its input_tokens include the cached ones; the
 * ledger's input is what was not cached.  A failed turn's HTTP status is
 * in the CLI's own error message ("unexpected status 401", "last status:
 * 429"), the one place Codex gives it. */
#include "zerg/agent.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zerg/json.h"

static const char *str_at(const zerg_json *obj, const char *key)
{
    return zerg_json_as_str(zerg_json_get(obj, key));
}

static int64_t int_at(const zerg_json *obj, const char *key)
{
    double d = zerg_json_as_num(zerg_json_get(obj, key), 0);
    return d > 0 && d < ZERG_JSON_INT_LIMIT ? (int64_t)d : 0;
}

static char *text_of(const char *s)
{
    return s ? strndup(s, ZERG_AGENT_TEXT_MAX) : NULL;
}

/* The status in "unexpected status 401 Unauthorized: .." or "exceeded
 * retry limit, last status: 429 Too Many Requests", else 0. */
static int status_in(const char *msg)
{
    static const char *const marks[] = {"unexpected status ", "last status: "};
    for (size_t i = 0; msg && i < sizeof marks / sizeof *marks; i++) {
        const char *p = strstr(msg, marks[i]);
        if (p && p[strlen(marks[i])] >= '1' && p[strlen(marks[i])] <= '5')
            return atoi(p + strlen(marks[i]));
    }
    return 0;
}

static void failed_turn(const zerg_json *doc, struct zerg_agent_event *ev)
{
    const char *msg = str_at(zerg_json_get(doc, "error"), "message");
    ev->is_error = 1;
    snprintf(ev->subtype, sizeof ev->subtype, "error");
    ev->text = text_of(msg ? msg : "the turn failed");
    ev->api_error_status = status_in(msg);
    int st = ev->api_error_status;
    snprintf(ev->error, sizeof ev->error, "%s",
             st == 401 || st == 403 ? "authentication_failed"
             : st == 429            ? "rate_limit"
             : st >= 500            ? "server_error"
                                    : "");
}

static void turn_usage(const zerg_json *doc, struct zerg_agent_event *ev)
{
    const zerg_json *u = zerg_json_get(doc, "usage");
    int64_t in = int_at(u, "input_tokens"),
            cached = int_at(u, "cached_input_tokens");
    snprintf(ev->subtype, sizeof ev->subtype, "success");
    ev->usage.input_tokens = in > cached ? in - cached : 0;
    ev->usage.cache_read_tokens = cached;
    ev->usage.cache_creation_tokens = int_at(u, "cache_write_input_tokens");
    ev->usage.output_tokens = int_at(u, "output_tokens");
    ev->num_turns = 1;
}

static void item(const zerg_json *doc, const char *type,
                 struct zerg_agent_event *ev)
{
    const zerg_json *it = zerg_json_get(doc, "item");
    const char *kind = str_at(it, "type");
    ev->type = ZERG_AGENT_EV_ASSISTANT;
    snprintf(ev->subtype, sizeof ev->subtype, "%s", kind ? kind : "item");
    if (kind && !strcmp(kind, "agent_message") &&
        !strcmp(type, "item.completed"))
        ev->text = text_of(str_at(it, "text"));
    /* A tool call, counted once: when it starts. */
    if (kind && !strcmp(type, "item.started") &&
        (!strcmp(kind, "command_execution") || !strcmp(kind, "file_change") ||
         !strcmp(kind, "mcp_tool_call") || !strcmp(kind, "web_search")))
        zerg_agent_tool_label(!strcmp(kind, "command_execution") ? "shell"
                                                                 : kind,
                              it, ev->tool, sizeof ev->tool);
}

enum zerg_agent_event_type zerg_agent_codex_parse(const char *line, size_t len,
                                                  struct zerg_agent_event *ev)
{
    zerg_json *doc = zerg_agent_line_doc(line, len, ev);
    const char *type = str_at(doc, "type");
    if (!type) {
        /* not an event */
    } else if (!strcmp(type, "thread.started")) {
        ev->type = ZERG_AGENT_EV_SYSTEM;
        snprintf(ev->subtype, sizeof ev->subtype, "init");
        snprintf(ev->session_id, sizeof ev->session_id, "%s",
                 str_at(doc, "thread_id") ? str_at(doc, "thread_id") : "");
    } else if (!strcmp(type, "turn.started")) {
        ev->type = ZERG_AGENT_EV_SYSTEM;
        snprintf(ev->subtype, sizeof ev->subtype, "turn");
    } else if (!strncmp(type, "item.", 5)) {
        item(doc, type, ev);
    } else if (!strcmp(type, "error")) {
        ev->type = ZERG_AGENT_EV_SYSTEM;
        snprintf(ev->subtype, sizeof ev->subtype, "api_retry");
        ev->retry_status = status_in(str_at(doc, "message"));
    } else if (!strcmp(type, "turn.completed")) {
        ev->type = ZERG_AGENT_EV_RESULT;
        turn_usage(doc, ev);
    } else if (!strcmp(type, "turn.failed")) {
        ev->type = ZERG_AGENT_EV_RESULT;
        failed_turn(doc, ev);
    }
    zerg_json_free(doc);
    return ev->type;
}
