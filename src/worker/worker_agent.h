/* worker_agent.h - the agent side of an attempt (worker_agent.c), used
 * by worker_run.c around the command stage. */
#ifndef ZERG_WORKER_AGENT_H
#define ZERG_WORKER_AGENT_H

#include "worker_state.h"

/* The prompt of attempt a of t: a retry says what went wrong last time
 * (the assignment's last_* and the end of the previous attempt's log in
 * log_dir).  malloc'd, NULL on out-of-memory. */
char *wk_agent_prompt(const struct worker *w, const struct zerg_task *t,
                      const struct zerg_assign *a, const char *log_dir);
/* The prompt of a resumed attempt: the session has the task already, so
 * only that it was interrupted and should go on.  malloc'd or NULL. */
char *wk_agent_resume_prompt(const struct worker *w, const struct zerg_task *t,
                             const struct zerg_assign *a, const char *log_dir);
/* Saves it as log_dir/attempt-{n}.prompt (best effort). */
void wk_agent_save_prompt(const char *log_dir, int attempt, const char *prompt);
/* log_dir/attempt-{n}.prompt open for reading (the CLI's stdin), or -1. */
int wk_agent_prompt_fd(const char *log_dir, int attempt);
/* The executor's argv for prompt by executor.kind (free with
 * zerg_worker_argv_free), NULL on out-of-memory or an empty executor;
 * on_stdin: the prompt goes on stdin, not in the argv. */
char **wk_agent_argv(const struct worker *w, const char *prompt, int on_stdin,
                     const char *session);
/* A resumed attempt (DESIGN §21): the session of attempt-1's log in
 * log_dir into sid when the CLI can resume it from cwd (Claude Code: its
 * session file is there).  1 when there is one, else 0 (the attempt
 * starts afresh). */
int wk_agent_session(const struct worker *w, const char *log_dir, int attempt,
                     const char *cwd, char *sid, size_t n);
/* 1 (r says why) when prompt must go in the argv and is longer than one
 * argument may be (execve's E2BIG), so nothing is started. */
int wk_agent_too_long(const struct worker *w, const char *prompt, int on_stdin,
                      struct zerg_result *r);
/* The model a run used: its stream's, else the one executor.args names
 * (--model M, -m M: Codex names none). */
const char *wk_agent_model(const struct zerg_config *cfg,
                           const struct zerg_agent_summary *s);
/* The cost of tokens u of model from executor.pricing: 1 (usd set) when
 * the model is priced, else 0. */
int wk_agent_estimate(const struct zerg_config *cfg, const char *model,
                      const struct zerg_agent_usage *u, double *usd);
/* Reads the stage's output as it comes for an agent CLI (its adapter's
 * stream): progress, terminal event, ledger (worker_stream.c). */
void wk_agent_stream_start(struct worker *w, int log_fd, off_t from);
/* After a stage: an agent run's session, model, cost and tokens into r; for a
 * failed stage (failed != 0) its failure class (r->cls, r->fix, r->reset_at_s;
 * r->error for environment and rate limits). */
void wk_agent_finish(const struct worker *w, int log_fd, int is_executor,
                     int failed, struct zerg_result *r);

#endif
