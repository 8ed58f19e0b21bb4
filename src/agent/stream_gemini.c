/* stream_gemini.c - reads the Gemini CLI's `--output-format stream-json`.
 *
 * One JSON object a line.  Gemini CLI 0.61.0 writes (its bundle's
 * StreamJsonFormatter; the first two were printed by the real CLI here,
 * the rest come in the recorded streams of tests/fixtures/gemini/):
 *
 *   {"type":"init","session_id":"afad..","model":"auto"}   -> system init
 *   {"type":"message","role":"user","content":".."}        -> user
 *   {"type":"message","role":"assistant","content":"..",
 *    "delta":true}                                         -> assistant
 *   {"type":"tool_use","tool_name":"write_file","tool_id":"..",
 *    "parameters":{..}}                                    -> assistant
 *   {"type":"tool_result","tool_id":"..","status":"success"} -> user
 *   {"type":"error","severity":"warning","message":".."}   -> system
 *   {"type":"result","status":"success"|"error",
 *    "error":{"type":"..","message":".."},
 *    "stats":{"input_tokens":..,"output_tokens":..,"cached":..,
 *             "input":..,"duration_ms":..,"tool_calls":..,
 *             "models":{"gemini-2.5-pro":{..}}}}           -> result
 *
 * Gemini reports no cost: the ledger prices its tokens from
 * executor.pricing, for the model its stats name.  Its input_tokens
 * include the cached ones (stats.input is what was not cached).  A
 * failure without any stream (no credentials: exit 41, an untrusted
 * folder: exit 55) is read from the exit code (src/agent/failure.c). */
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

static void copy(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s ? s : "");
}

static void result(const zerg_json *doc, struct zerg_agent_event *ev)
{
    const zerg_json *st = zerg_json_get(doc, "stats");
    const char *status = str_at(doc, "status");
    ev->type = ZERG_AGENT_EV_RESULT;
    ev->is_error = !status || strcmp(status, "success") != 0;
    copy(ev->subtype, sizeof ev->subtype, status);
    const zerg_json *err = zerg_json_get(doc, "error");
    if (err && str_at(err, "message"))
        ev->text = strndup(str_at(err, "message"), ZERG_AGENT_TEXT_MAX);
    int64_t in = int_at(st, "input_tokens"), cached = int_at(st, "cached");
    ev->usage.input_tokens = in > cached ? in - cached : 0;
    ev->usage.cache_read_tokens = cached;
    ev->usage.output_tokens = int_at(st, "output_tokens");
    ev->duration_ms = int_at(st, "duration_ms");
    ev->num_turns = int_at(st, "tool_calls") + 1;
    const zerg_json *models = zerg_json_get(st, "models");
    if (zerg_json_is(models, ZERG_JSON_OBJECT) && zerg_json_len(models) > 0)
        copy(ev->model, sizeof ev->model, zerg_json_key_at(models, 0));
}

static void message(const zerg_json *doc, struct zerg_agent_event *ev)
{
    const char *role = str_at(doc, "role");
    if (role && !strcmp(role, "assistant")) {
        ev->type = ZERG_AGENT_EV_ASSISTANT;
        const char *c = str_at(doc, "content");
        ev->text = c ? strndup(c, ZERG_AGENT_TEXT_MAX) : NULL;
        const zerg_json *d = zerg_json_get(doc, "delta");
        ev->text_delta = d && d->type == ZERG_JSON_BOOL && d->u.boolean;
    } else {
        ev->type = ZERG_AGENT_EV_USER;
    }
}

enum zerg_agent_event_type zerg_agent_gemini_parse(const char *line, size_t len,
                                                   struct zerg_agent_event *ev)
{
    zerg_json *doc = zerg_agent_line_doc(line, len, ev);
    const char *type = str_at(doc, "type");
    if (!type) {
        /* not an event */
    } else if (!strcmp(type, "init")) {
        ev->type = ZERG_AGENT_EV_SYSTEM;
        copy(ev->subtype, sizeof ev->subtype, "init");
        copy(ev->session_id, sizeof ev->session_id, str_at(doc, "session_id"));
        copy(ev->model, sizeof ev->model, str_at(doc, "model"));
        if (!strcmp(ev->model, "auto"))
            ev->model[0] = '\0'; /* the stats name the model used */
    } else if (!strcmp(type, "message")) {
        message(doc, ev);
    } else if (!strcmp(type, "tool_use")) {
        ev->type = ZERG_AGENT_EV_ASSISTANT;
        copy(ev->subtype, sizeof ev->subtype, "tool_use");
        zerg_agent_tool_label(str_at(doc, "tool_name"),
                              zerg_json_get(doc, "parameters"), ev->tool,
                              sizeof ev->tool);
    } else if (!strcmp(type, "tool_result")) {
        ev->type = ZERG_AGENT_EV_USER;
        copy(ev->subtype, sizeof ev->subtype, "tool_result");
    } else if (!strcmp(type, "error")) {
        ev->type = ZERG_AGENT_EV_SYSTEM;
        copy(ev->subtype, sizeof ev->subtype, "error");
    } else if (!strcmp(type, "result")) {
        result(doc, ev);
    }
    zerg_json_free(doc);
    return ev->type;
}
