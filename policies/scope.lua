-- policies/scope.lua - what to do when a task changed paths outside its
-- declared files (DESIGN section 13, worktree isolation only).
--
--   decide(task, paths, opts) -> verdict, reason
--     task: id, title ("" when absent), level, files = {create, modify,
--     read} (lists of paths as the task graph writes them).
--     paths: the paths the task's attempt changed outside files.create and
--     files.modify, relative to the project, sorted; never empty when the
--     core asks.
--     opts: listed (how many paths a reason names, 3).
--   verdict: "allow" (nothing is reported), "warn" (scope_violation is
--   logged and the commit is kept) or "fail" (scope_violation is logged
--   and the attempt fails).  reason: a string for the log, cut at 255
--   bytes.
--
-- The default warns: a task graph rarely lists every file a change
-- touches (a lock file, a generated header), and failing on the first
-- stray path would turn an incomplete graph into a failed run.  A project
-- that wants the boundary enforced overrides this in
-- .zerg/policies/scope.lua.
local M = {}

function M.decide(task, paths, opts)
    local n = #paths
    local noun = n == 1 and "path" or "paths"
    if n == 0 then
        return "warn", "0 paths out of scope"
    end
    local shown = {}
    for i = 1, math.min(n, opts.listed) do
        shown[i] = paths[i]
    end
    local more = ""
    if n > #shown then
        more = string.format(" and %d more", n - #shown)
    end
    return "warn", string.format("%d %s out of scope: %s%s", n, noun,
                                 table.concat(shown, ", "), more)
end

return M
