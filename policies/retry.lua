-- policies/retry.lua - what a task failure costs and whether it runs again.
--
--   decide(task, failure, opts) -> {retry, delay, charge, resume, reason}
--     task: id, retry_count (charged failures so far), crash_count
--     (uncharged crashes so far), attempt.
--     failure: kind, class (DESIGN §14: "task", "timeout", "crash" or
--     "conflict"; environment failures and rate limits never reach this
--     policy: they charge nothing), exit_code (nil when none), signal
--     (nil when none).
--     opts: retry_attempts, max_task_crashes, backoff = {strategy, base,
--     max, kind = "task"}.
--
-- A worker crash or a stale heartbeat is not the task's fault: it is
-- requeued at once without charging a retry, until the task has crashed
-- max_task_crashes times ("crash_loop").  A real failure (the command or
-- its verification exited non-zero, or it timed out) is charged and
-- retried after backoff.delay(retry_count + 1) until retry_attempts are
-- used up ("retries_exhausted").
--
-- resume (DESIGN §21): the next attempt continues the agent's session on
-- the dead attempt's files instead of starting over, where the CLI can
-- (Claude Code --resume, Codex exec resume).  Yes after a crash, whose
-- agent was working when its worker died; no after a stale heartbeat or
-- any failure of the task itself (a session that failed its verification
-- or went silent is no better a start than a fresh one).  An attempt
-- interrupted by a stop or a rate limit resumes without asking here.
local backoff = require("policies.backoff")

local M = {}

local UNCHARGED = { crash = true, heartbeat_stale = true }

function M.decide(task, failure, opts)
    if UNCHARGED[failure.kind] then
        if task.crash_count < opts.max_task_crashes then
            return { retry = true, delay = 0, charge = false,
                     resume = failure.kind == "crash",
                     reason = failure.kind }
        end
        return { retry = false, delay = 0, charge = false,
                 reason = "crash_loop" }
    end
    if task.retry_count < opts.retry_attempts then
        return { retry = true, charge = true, reason = failure.kind,
                 delay = backoff.delay(task.retry_count + 1, opts.backoff) }
    end
    return { retry = false, delay = 0, charge = true,
             reason = "retries_exhausted" }
end

return M
