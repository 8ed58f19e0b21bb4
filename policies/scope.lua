-- policies/scope.lua - what a task's paths mean beyond "it passed": paths
-- changed outside its declared files (DESIGN section 13), zerg's own
-- configuration changed, declared outputs that were never made (section
-- 18).  Three hooks, one shape:
--
--   decide(task, paths, opts) -> verdict, reason
--     paths: what the attempt's commit changed outside files.create and
--     files.modify (worktree isolation only).  Default "warn".
--   config(task, paths, opts) -> verdict, reason
--     paths: what the attempt's commit changed of zerg's own
--     configuration, .zerg/config.yaml and .zerg/policies/ (worktree
--     isolation only; declared or not).  Default "warn": the change is
--     committed like any other, and the run's summary says it "changes
--     zerg's own configuration: review before merging".
--   missing(task, paths, opts) -> verdict, reason
--     paths: the task's files.create paths that do not exist after the
--     attempt passed (in its worktree, or in the project under isolation
--     none).  Default "fail": the attempt fails with reason
--     missing_output, class "task", charged and retried like any task
--     failure.
--
--     task: id, title ("" when absent), level, files = {create, modify,
--     read} (lists of paths as the task graph writes them).
--     paths: relative to the project (the repository's top for decide
--     and config in a monorepo), sorted; never empty when the core asks.
--     opts: listed (how many paths a reason names, 3).
--   verdict: "allow" (nothing is reported), "warn" (an event is logged:
--   scope_violation, config_change or missing_output, and the work is
--   kept) or "fail" (the same event, and the attempt fails).  reason: a
--   string for the log and the summary, cut at 255 bytes.
--
-- decide warns by default: a task graph rarely lists every file a change
-- touches (a lock file, a generated header), and failing on the first
-- stray path would turn an incomplete graph into a failed run.  A project
-- that wants the boundary enforced overrides this in
-- .zerg/policies/scope.lua; an override that defines only decide keeps
-- the bundled config and missing.
local M = {}

-- "a, b, c and N more"
local function listing(paths, listed)
    local shown = {}
    for i = 1, math.min(#paths, listed) do
        shown[i] = paths[i]
    end
    local more = ""
    if #paths > #shown then
        more = string.format(" and %d more", #paths - #shown)
    end
    return table.concat(shown, ", ") .. more
end

function M.decide(task, paths, opts)
    local n = #paths
    local noun = n == 1 and "path" or "paths"
    if n == 0 then
        return "warn", "0 paths out of scope"
    end
    return "warn", string.format("%d %s out of scope: %s", n, noun,
                                 listing(paths, opts.listed))
end

function M.config(task, paths, opts)
    return "warn", "changes zerg's own configuration: review before " ..
                   "merging (" .. listing(paths, opts.listed) .. ")"
end

function M.missing(task, paths, opts)
    return "fail", "missing_output: files.create not made: " ..
                   listing(paths, opts.listed)
end

return M
