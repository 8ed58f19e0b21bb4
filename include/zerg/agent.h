/* agent.h - what an agent executor reports, and why an attempt failed.
 *
 * Two pure pieces for agent executors (DESIGN §14), with no process
 * plumbing in them, so the worker and the orchestrator share one reading
 * of the Claude Code CLI's output and one failure taxonomy:
 *
 *   stream  - one line of `claude --print --output-format stream-json
 *             --verbose` becomes a struct zerg_agent_event; a
 *             zerg_agent_summary folds a whole run's lines into what the
 *             attempt records (outcome, session, cost, tokens, the error
 *             the CLI gave, a usage-limit reset time).
 *   failure - the failure classes (task, timeout, crash, conflict,
 *             environment, rate_limit) and zerg_failure_classify, which
 *             turns a failed stage's exit status and output into a class,
 *             a one-line reason and, for `environment`, the fix.
 *
 * Every field and pattern is what Claude Code 2.1.332 was measured to print
 * (docs/wiki/Agents.md, "What Claude Code reports"; the lines themselves are
 * in tests/fixtures/claude/).  Nothing here allocates except the text of
 * an event, released by zerg_agent_event_close. */
#ifndef ZERG_AGENT_H
#define ZERG_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "zerg/failure.h"

struct zerg_json;

/* ---- the agent CLIs (DESIGN §20) ----------------------------------- */

/* Each CLI zerg drives is a row of one table (src/agent/adapter.c): how
 * it is run, how its stream reads, what its failures mean.  Adding a CLI
 * is adding a row, its stream reader and their tests. */
enum zerg_agent_cli {
    ZERG_AGENT_CLAUDE, /* Claude Code: --output-format stream-json */
    ZERG_AGENT_CODEX,  /* Codex CLI: exec --json */
    ZERG_AGENT_GEMINI, /* Gemini CLI: --output-format stream-json */
    ZERG_AGENT_NCLIS
};

struct zerg_agent_adapter {
    enum zerg_agent_cli cli;
    const char *name;    /* "claude": executor.kind and the config key
                            executor.NAME that names the binary */
    const char *product; /* "Claude Code", for messages */
    /* The arguments after the binary, before executor.args; the prompt
     * goes on stdin (no argv limit), `stdin_arg` last when the CLI needs
     * an argument to read it ("-"), else nothing. */
    const char *const *args;
    const char *stdin_arg;
    /* Set in the CLI's environment (NAME=VALUE), NULL-terminated. */
    const char *const *env;
    /* The session's continuation: these arguments then the session id,
     * before `args`' prompt; NULL when the CLI cannot resume. */
    const char *const *resume;
    /* Credentials: any of these set in the environment means a key is
     * given; else `login` (arguments after the binary) must exit 0, or
     * NULL when the CLI has no such check. */
    const char *const *key_env;
    const char *const *login;
    const char *fix_login;   /* no credentials */
    const char *fix_key;     /* a key the API refused */
    const char *fix_install; /* the binary is missing */
};

/* The adapter of a CLI, or NULL. */
const struct zerg_agent_adapter *zerg_agent_adapter(enum zerg_agent_cli cli);
/* By name ("claude", "codex", "gemini"), or NULL. */
const struct zerg_agent_adapter *zerg_agent_adapter_named(const char *name);
struct zerg_config;
/* The CLI executor.kind names, or NULL for kind command; the binary its
 * executor.NAME key says to run (the CLI's name by default), and that
 * key's name. */
const struct zerg_agent_adapter *zerg_agent_for(const struct zerg_config *c);
const char *zerg_agent_bin(const struct zerg_config *c,
                           const struct zerg_agent_adapter *ad);
const char *zerg_agent_bin_key(const struct zerg_agent_adapter *ad);

/* ---- stream-json events ------------------------------------------- */

/* Lines longer than this are not parsed (they are ZERG_AGENT_EV_OTHER).
 * The measured lines are 0.3-7 KB; a result whose answer is long (the
 * agent's final message) can take megabytes and carries the cost, so the
 * limit is generous. */
#define ZERG_AGENT_LINE_MAX (16 * 1024 * 1024)
/* Longest text kept from a result or an assistant error message. */
#define ZERG_AGENT_TEXT_MAX 4096

enum zerg_agent_event_type {
    ZERG_AGENT_EV_OTHER,      /* malformed, over-long, or an unknown type */
    ZERG_AGENT_EV_SYSTEM,     /* "system": subtype "init", "api_retry" */
    ZERG_AGENT_EV_ASSISTANT,  /* one model message (text, tool_use) */
    ZERG_AGENT_EV_USER,       /* tool results going back to the model */
    ZERG_AGENT_EV_RESULT,     /* the last line of a run */
    ZERG_AGENT_EV_RATE_LIMIT, /* "rate_limit_event" (subscription limits) */
    ZERG_AGENT_EV_STREAM,     /* "stream_event": a partial message
                                 (--include-partial-messages) */
};

struct zerg_agent_usage {
    int64_t input_tokens;
    int64_t output_tokens;
    int64_t cache_read_tokens;     /* usage.cache_read_input_tokens */
    int64_t cache_creation_tokens; /* usage.cache_creation_input_tokens */
};

/* One parsed line.  Fields an event type does not have stay 0 / "". */
struct zerg_agent_event {
    enum zerg_agent_event_type type;
    char subtype[32];    /* system: "init", "api_retry"; result: "success",
                            "error_max_turns", ... (see is_error) */
    char session_id[64]; /* every event of the CLI carries it */
    char model[64];      /* system init, assistant (not "<synthetic>"),
                            stream message_start */
    char tool[80];       /* assistant: the tool it calls and on what, as
                            zerg_agent_tool_label puts it ("" if none) */
    int text_delta;      /* assistant (Gemini): text is a piece of the
                            message, to be appended to what came before */
    char message_id[64]; /* assistant, stream message_start: the model
                            message this event belongs to */
    int usage_delta;     /* stream message_delta: usage.output_tokens is
                            the message's output so far */
    /* result.  Note: a failed run says subtype "success" with is_error
     * true (measured: not logged in, 429, 529), so read is_error. */
    int is_error;
    char *text; /* result: "result"; assistant with error: its first text
                   block ("Not logged in · Please run /login"); else NULL.
                   Owned, at most ZERG_AGENT_TEXT_MAX bytes. */
    double total_cost_usd;
    struct zerg_agent_usage usage;
    int64_t num_turns;
    int64_t duration_ms;
    char terminal_reason[32]; /* result: "completed", "api_error", ... */
    int api_error_status;     /* result/assistant: HTTP status, 0 if null */
    /* assistant: "error" ("authentication_failed", "rate_limit",
     * "server_error"); system api_retry: its "error" ("rate_limit",
     * "overloaded", "unknown"). */
    char error[48];
    /* result, assistant, stream message_start/delta: see usage above. */
    /* system api_retry: the CLI's own retry of one API request. */
    int retry_attempt;
    int retry_max;
    int64_t retry_delay_ms;
    int retry_status; /* error_status: 429, 529, 0 when null (timeout) */
    /* rate_limit_event: rate_limit_info. */
    char rate_limit_status[16]; /* "allowed", "rejected", ... */
    char rate_limit_type[32];   /* "five_hour", "seven_day", ... */
    int64_t resets_at_s;        /* resetsAt, wall seconds; 0 if absent */
};

/* Parses one line of the CLI's stream (without or with its trailing
 * newline) into *ev, which is overwritten without being closed first.
 * zerg_agent_event_parse reads Claude Code's; zerg_agent_parse reads
 * any CLI's (Codex and Gemini lines map onto the same event types: see
 * src/agent/stream_codex.c and stream_gemini.c).  Never fails: a line that is
 * not a JSON object with a known "type", is longer than
 * ZERG_AGENT_LINE_MAX or cannot be parsed for want of memory gives
 * ZERG_AGENT_EV_OTHER.  Returns ev->type. */
enum zerg_agent_event_type zerg_agent_event_parse(const char *line, size_t len,
                                                  struct zerg_agent_event *ev);
enum zerg_agent_event_type zerg_agent_parse(enum zerg_agent_cli cli,
                                            const char *line, size_t len,
                                            struct zerg_agent_event *ev);
enum zerg_agent_event_type zerg_agent_codex_parse(const char *line, size_t len,
                                                  struct zerg_agent_event *ev);
enum zerg_agent_event_type zerg_agent_gemini_parse(const char *line, size_t len,
                                                   struct zerg_agent_event *ev);
/* What the readers share: *ev zeroed, and the line's JSON object (caller
 * frees), or NULL when it is no event (plain output, over-long, a NUL). */
struct zerg_json *zerg_agent_line_doc(const char *line, size_t len,
                                      struct zerg_agent_event *ev);
/* 1 when the event shows the agent working: any known event but the
 * CLI's own retries of a request (system api_retry), which are waiting,
 * not work. */
int zerg_agent_event_is_progress(const struct zerg_agent_event *ev);

/* "Write src/a.c", "Bash: make test": the tool's name and the argument
 * that says what the call is about (a path, a command, a pattern, ...),
 * its first line, cut to fit buf.  The argument is the first of the
 * input's keys names[] (file_path, command, path, pattern, url, query,
 * description, cmd) that is a string; input may be NULL. */
void zerg_agent_tool_label(const char *name, const struct zerg_json *input,
                           char *buf, size_t size);
/* The input key zerg_agent_tool_label shows, or "" (a borrowed string). */
const char *zerg_agent_tool_arg(const struct zerg_json *input);

/* Frees ev->text and zeroes *ev; safe on a zeroed or closed event. */
void zerg_agent_event_close(struct zerg_agent_event *ev);

/* "system", "assistant", "user", "result", "rate_limit_event", "other". */
const char *zerg_agent_event_type_name(enum zerg_agent_event_type t);

/* ---- a whole run -------------------------------------------------- */

/* What a run's lines add up to.  Caller-allocated: _init, _feed each
 * line, _close. */
struct zerg_agent_summary {
    enum zerg_agent_cli cli;        /* whose stream this is */
    int64_t events;                 /* lines that parsed as a known event */
    int64_t api_retries;            /* system api_retry lines */
    int has_result;                 /* a result line was seen */
    struct zerg_agent_event result; /* the last result line (owned) */
    char session_id[64];            /* from the first event that has one */
    char agent_error[48];           /* the last assistant "error", "" if none */
    int api_error_status; /* the last non-zero one of assistant/result */
    /* The reset time of the last rejected rate_limit_event, wall
     * seconds, 0 when none: the CLI's "You've hit your 5-hour limit ·
     * resets 12:13pm (UTC)" comes with resetsAt in this event. */
    int64_t resets_at_s;
    char model[64]; /* the first model named */
    /* What the model messages cost as they streamed: the messages done,
     * and the one streaming (its id, its usage so far).  A run killed
     * before its result keeps these. */
    struct zerg_agent_usage done;
    struct zerg_agent_usage cur;
    char cur_id[64];
    /* The agent's last message (Codex, Gemini: their result carries no
     * text; it becomes the result's).  Owned, or NULL. */
    char *last_text;
    char tool[80];      /* the last tool call, "" before the first */
    int64_t tool_calls; /* tool calls so far: the agent's turns */
};

/* A summary of Claude Code's stream; _init_cli for another CLI's. */
void zerg_agent_summary_init(struct zerg_agent_summary *s);
void zerg_agent_summary_init_cli(struct zerg_agent_summary *s,
                                 enum zerg_agent_cli cli);
/* The run's tokens: the result's usage when it has one, else what the
 * messages streamed so far add up to. */
void zerg_agent_summary_usage(const struct zerg_agent_summary *s,
                              struct zerg_agent_usage *out);
/* Parses one line and folds it in; returns its event type, so a caller
 * can count every known event as progress. */
enum zerg_agent_event_type zerg_agent_summary_feed(struct zerg_agent_summary *s,
                                                   const char *line,
                                                   size_t len);
/* The same; *progress (may be NULL) says whether the line shows the
 * agent working (zerg_agent_event_is_progress). */
enum zerg_agent_event_type zerg_agent_summary_take(struct zerg_agent_summary *s,
                                                   const char *line, size_t len,
                                                   int *progress);
/* Feeds every line of text (a log tail; a partial first line is just
 * OTHER). */
void zerg_agent_summary_feed_text(struct zerg_agent_summary *s,
                                  const char *text, size_t len);
void zerg_agent_summary_close(struct zerg_agent_summary *s);

/* ---- failure classes ---------------------------------------------- */

/* The classes themselves are zerg/failure.h's table. */

enum zerg_failure_stage {
    ZERG_STAGE_COMMAND,      /* the task's command or the executor */
    ZERG_STAGE_VERIFICATION, /* verification.command */
    ZERG_STAGE_SETUP,        /* workspace and log set-up before both */
};
const char *zerg_failure_stage_name(enum zerg_failure_stage s);
/* "command" / "verification" / "setup" (struct zerg_result's stage). */
int zerg_failure_stage_parse(const char *name, enum zerg_failure_stage *out);

/* What is known about a failed stage.  Zero-initialise and fill what is
 * known: every pointer may be NULL. */
struct zerg_failure_in {
    enum zerg_failure_stage stage;
    int exit_code;           /* the exit status; ignored when signal != 0 */
    int signal;              /* the signal that ended it, 0 if it exited */
    int timed_out;           /* it was stopped for running past its timeout */
    int exec_failed;         /* it could not be executed at all (spawn ENOENT or
                                EACCES); exit 127/126 of the executor count too */
    int is_executor;         /* the command stage ran the configured executor
                                (no `command` in the task); only then do exit
                                127/126 and the agent's messages say environment */
    int conflict;            /* the merge after the attempt found conflicts */
    const char *executor;    /* argv[0] of the executor, for the reason */
    enum zerg_agent_cli cli; /* the agent CLI the executor is (its fixes,
                                its exit codes); Claude Code by default */
    /* The run's events as the worker read them, or NULL: then the
     * classifier folds output_tail itself. */
    const struct zerg_agent_summary *agent;
    const char *output_tail; /* the last lines of stdout+stderr */
};

struct zerg_failure_out {
    enum zerg_failure_class cls;
    char reason[256];   /* one line: "Not logged in · Please run /login" */
    char fix[256];      /* environment: what the user must do; else "" */
    int64_t reset_at_s; /* rate_limit: when the limit resets (wall
                           seconds) if the output says, else 0 */
};

/* Decides the class of a failed stage; fills every field of *out. */
void zerg_failure_classify(const struct zerg_failure_in *in,
                           struct zerg_failure_out *out);

#endif
