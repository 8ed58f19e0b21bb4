-- policies/stale.lua - when a task or a worker counts as stale.
--
-- Times are seconds (floats) on the orchestrator's monotonic clock, so an
-- age is `now - then`; no wall clock, no file mtimes.
--
--   task(task, now, opts) -> stale, reason
--     task: id, worker, started, last_progress, step, progress_pct
--     true when no progress was seen for opts.task_stale_timeout seconds.
--   worker(hb, now, opts) -> stale, reason
--     hb: worker, seq, last_change (when the heartbeat last changed)
--     true when the heartbeat has not changed for
--     opts.heartbeat_stale_threshold seconds.
local M = {}

function M.task(task, now, opts)
    local since = task.last_progress or task.started
    local age = now - since
    if age >= opts.task_stale_timeout then
        return true, string.format("no progress for %.1fs (timeout %gs)",
                                   age, opts.task_stale_timeout)
    end
    return false
end

function M.worker(hb, now, opts)
    local age = now - hb.last_change
    if age >= opts.heartbeat_stale_threshold then
        return true, string.format("heartbeat unchanged for %.1fs "
                                   .. "(threshold %gs)", age,
                                   opts.heartbeat_stale_threshold)
    end
    return false
end

return M
