-- policies/backoff.lua - how long to wait before retry number `attempt`.
--
-- The core asks this before re-spawning a worker that failed to start
-- (kind = "spawn", config workers.spawn_backoff_*) and, through retry.lua,
-- before re-running a failed task (kind = "task", workers.backoff_*).
--
--   delay(attempt, opts) -> seconds (a number; the core clamps it to
--   [0, 3600]).  attempt >= 1 (1 = the first retry).  opts:
--     strategy  "exponential" | "linear" | "fixed"
--     base, max seconds (fractions allowed)
--     kind      "spawn" | "task"
--
-- With the defaults (exponential, base 2, max 30) spawn retries 1-3 wait
-- 2, 4 and 8 s.  The result never exceeds max, so base > max gives max.
local M = {}

function M.delay(attempt, opts)
    local n = attempt
    if n < 1 then
        n = 1
    end
    local d
    if opts.strategy == "linear" then
        d = opts.base * n
    elseif opts.strategy == "fixed" then
        d = opts.base
    else
        -- exponential; 2^(n-1) overflows to inf past n ~ 1024, and the cap
        -- below turns inf into max.
        d = opts.base * 2.0 ^ (n - 1)
    end
    if d > opts.max then
        d = opts.max
    end
    return d
end

return M
