-- policies/reconcile.lua - divergences between the state and the truth,
-- and the fix for each.
--
--   check(snapshot, opts) -> list of {task = id | level = n, fix, reason,
--   level}
--
-- snapshot (built by the orchestrator; times are monotonic seconds):
--   thorough       true on the full check (at start, on --resume, before
--                  each level transition), false on the periodic light one
--   current_level  the level being run
--   isolation      "worktree" under worktree isolation, else nil
--   branch         the integration branch (worktree isolation)
--   tasks = {[id] = {status, level (0/nil when unknown), graph_level,
--                    worker (-1/nil when none), worker_alive,
--                    deps = {ids}, commit, merged}}
--                  light: claimed and in_progress tasks and tasks
--                  without a level; thorough: those, plus every task a
--                  fix below can concern: failed and blocked tasks,
--                  pending tasks with a failed or blocked dependency, and
--                  (worktree) complete tasks whose commit is not on the
--                  branch.  Complete tasks whose work is on the branch and
--                  pending tasks with nothing failed below them are left
--                  out (they have no fix to get); `levels` counts them.
--                  commit/merged (thorough, worktree only): the task's
--                  recorded commit on the integration branch, and whether
--                  the branch still holds it (nil when git could not say)
--   levels = {[n] = {status, tasks, unfinished}}
--                  tasks/unfinished: counts over the whole level (so a
--                  light check sees a level's open tasks without listing
--                  them); when absent they are counted from `tasks`
--
-- Fixes, in this order for a deterministic answer (tasks by id, then
-- levels by number):
--   requeue        claimed/in_progress task whose worker is not alive
--   set_level      task without a level: its graph level, else `-L{n}-`
--   block          pending task with a failed or blocked dependency
--   rerun          (thorough, worktree only) complete task whose commit is
--                  not on the integration branch: someone reset or
--                  rewrote it and the work is gone.  Its dependents are
--                  not rerun: their own commits are on the branch and
--                  hold their work (a reset that dropped them too reruns
--                  them by this same rule)
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

-- rerun: the state says complete with a commit the branch no longer has.
local function check_commit(fixes, snapshot, id, t, lv)
    if not snapshot.thorough or snapshot.isolation ~= "worktree"
        or t.status ~= "complete" or type(t.commit) ~= "string"
        or t.commit == "" or t.merged ~= false then
        return
    end
    local branch = snapshot.branch
    if type(branch) ~= "string" or branch == "" then
        branch = "the integration branch"
    end
    fixes[#fixes + 1] = {
        task = id, fix = "rerun", level = lv,
        reason = string.format("complete but its commit %s is not on %s",
                               string.sub(t.commit, 1, 12), branch) }
end

local function check_task(fixes, snapshot, tasks, id, t)
    local lv = t.level
    if not lv or lv < 1 then
        lv = level_for(id, t)
        if lv then
            fixes[#fixes + 1] = { task = id, fix = "set_level", level = lv,
                                  reason = "task has no level" }
        end
    end
    if RUNNING[t.status] and t.worker_alive ~= true then
        local who = "no worker holds it"
        if t.worker and t.worker >= 0 then
            who = string.format("worker %d is not alive", t.worker)
        end
        fixes[#fixes + 1] = { task = id, fix = "requeue", level = lv,
                              reason = t.status .. " but " .. who }
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
    check_commit(fixes, snapshot, id, t, lv)
    return lv
end

-- What is known of level n: marked complete?  open (a non-terminal task,
-- or the orchestrator's unfinished count)?  how many tasks?
local function level_facts(mark, group)
    local facts = { marked = mark ~= nil and mark.status == "complete" }
    facts.total = (mark and mark.tasks) or (group and group.total) or 0
    if group and group.open then
        facts.open = string.format("%s is %s", group.open, group.open_status)
    elseif mark and mark.unfinished and mark.unfinished > 0 then
        facts.open = string.format("%d of its tasks are unfinished",
                                   mark.unfinished)
    end
    return facts
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
        local f = level_facts(marks[n], by_level[n])
        if f.marked and f.open then
            fixes[#fixes + 1] = {
                level = n, fix = "reopen_level",
                reason = string.format("level %d is marked complete but %s",
                                       n, f.open) }
        elseif snapshot.thorough and not f.marked and not f.open
            and f.total > 0 then
            fixes[#fixes + 1] = {
                level = n, fix = "complete_level",
                reason = string.format("all %d tasks of level %d are "
                                       .. "terminal", f.total, n) }
        end
    end
end

function M.check(snapshot, opts)
    local fixes = {}
    local tasks = snapshot.tasks or {}
    local by_level = {}
    for _, id in ipairs(util.sorted_keys(tasks)) do
        local t = tasks[id]
        local lv = check_task(fixes, snapshot, tasks, id, t)
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
