-- policies/reconcile.lua - divergences between the state and the truth,
-- and the fix for each.
--
--   check(snapshot, opts) -> list of {task = id | level = n, fix, reason,
--   level}
--
-- snapshot (built by the orchestrator; times are monotonic seconds):
--   thorough       true on the full check (at start, on --resume), false on
--                  the periodic light one
--   current_level  the level being run
--   tasks = {[id] = {status, level (0/nil when unknown), graph_level,
--                    worker, worker_alive, deps = {ids}}}
--   levels = {[n] = {status}}
--
-- Fixes, in this order for a deterministic answer (tasks by id, then
-- levels by number):
--   requeue        claimed/in_progress task whose worker is not alive
--   set_level      task without a level: its graph level, else `-L{n}-`
--   block          pending task with a failed or blocked dependency
--   reopen_level   level marked complete while one of its tasks is not
--                  terminal
--   complete_level (thorough only) level whose tasks are all terminal but
--                  which is not marked complete
local util = require("zerg.util")

local M = {}

local RUNNING = { claimed = true, in_progress = true }

local function level_for(id, t)
    if t.graph_level and t.graph_level >= 1 then
        return math.tointeger(t.graph_level) or t.graph_level
    end
    return util.level_from_id(id)
end

local function check_task(fixes, tasks, id, t)
    local lv = t.level
    if not lv or lv < 1 then
        lv = level_for(id, t)
        if lv then
            fixes[#fixes + 1] = { task = id, fix = "set_level", level = lv,
                                  reason = "task has no level" }
        end
    end
    if RUNNING[t.status] and t.worker_alive ~= true then
        fixes[#fixes + 1] = {
            task = id, fix = "requeue", level = lv,
            reason = string.format("%s but worker %s is not alive",
                                   t.status, tostring(t.worker)) }
    end
    if t.status == "pending" then
        for _, dep in ipairs(t.deps or {}) do
            local d = tasks[dep]
            if d and (d.status == "failed" or d.status == "blocked") then
                fixes[#fixes + 1] = {
                    task = id, fix = "block", level = lv,
                    reason = string.format("dependency %s is %s", dep,
                                           d.status) }
                break
            end
        end
    end
    return lv
end

local function check_levels(fixes, snapshot, by_level)
    local marks = snapshot.levels or {}
    local all = {}
    for n in pairs(by_level) do
        all[n] = true
    end
    for n in pairs(marks) do
        all[n] = true
    end
    for _, n in ipairs(util.sorted_keys(all)) do
        local marked = marks[n] and marks[n].status == "complete"
        local group = by_level[n]
        if marked and group and group.open then
            fixes[#fixes + 1] = {
                level = n, fix = "reopen_level",
                reason = string.format("level %d is marked complete but %s "
                                       .. "is %s", n, group.open,
                                       group.open_status) }
        elseif snapshot.thorough and not marked and group
            and not group.open then
            fixes[#fixes + 1] = {
                level = n, fix = "complete_level",
                reason = string.format("all %d tasks of level %d are "
                                       .. "terminal", group.total, n) }
        end
    end
end

function M.check(snapshot, opts)
    local fixes = {}
    local tasks = snapshot.tasks or {}
    local by_level = {}
    for _, id in ipairs(util.sorted_keys(tasks)) do
        local t = tasks[id]
        local lv = check_task(fixes, tasks, id, t)
        if lv then
            local group = by_level[lv] or { total = 0 }
            by_level[lv] = group
            group.total = group.total + 1
            if not group.open and not util.TERMINAL[t.status] then
                group.open, group.open_status = id, t.status
            end
        end
    end
    check_levels(fixes, snapshot, by_level)
    return fixes
end

return M
