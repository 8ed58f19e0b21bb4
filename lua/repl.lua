-- lua/repl.lua - the helpers `zerg lua` puts in scope next to the data
-- (state, graph, config, heartbeats, policies, feature).
-- require("zerg.repl").install(env, events) is called once by the REPL;
-- `events(id)` is the C reader of .zerg/monitor.jsonl.
local util = require("zerg.util")
local inspect = require("zerg.inspect")

local M = {}

M.HELP = {
    { "state", "the run's state document (.zerg/state/FEATURE.json), "
               .. "nil before the first run" },
    { "graph", "the task graph (.gsd/specs/FEATURE/task-graph.json)" },
    { "config", "the effective configuration (durations in seconds)" },
    { "heartbeats", "the workers' heartbeats, by worker id" },
    { "policies", "the policy modules in force, overrides included" },
    { "feature", "the feature's name (nil when none was found)" },
    { "tasks([status])", "sorted ids of the tasks with that status "
                         .. "(all tasks without one)" },
    { "task(id)", "one task: its graph entry merged with its state" },
    { "levels()", "each level with its status and task counts" },
    { "history(id)", "the task's events from .zerg/monitor.jsonl" },
    { "inspect(v)", "v as readable text" },
    { "help()", "this list" },
}

local function graph_tasks(env)
    local g = env.graph
    return g and g.tasks or {}
end

local function state_tasks(env)
    local s = env.state
    return s and s.tasks
end

local function tasks(env, status)
    local ids = {}
    local st = state_tasks(env)
    if st then
        for id, t in pairs(st) do
            if status == nil or t.status == status then
                ids[#ids + 1] = id
            end
        end
    else -- before the first run every task is pending
        for _, t in ipairs(graph_tasks(env)) do
            if status == nil or status == "pending" then
                ids[#ids + 1] = t.id
            end
        end
    end
    table.sort(ids)
    return ids
end

local function task(env, id)
    local out
    for _, t in ipairs(graph_tasks(env)) do
        if t.id == id then
            out = {}
            for k, v in pairs(t) do
                out[k] = v
            end
            break
        end
    end
    local st = state_tasks(env)
    if st and st[id] then
        out = out or { id = id }
        for k, v in pairs(st[id]) do
            out[k] = v
        end
    end
    return out
end

local function level_status(env, n)
    local lv = env.state and env.state.levels
    local entry = lv and (lv[n] or lv[tostring(n)])
    return entry and entry.status or "pending"
end

local function levels(env)
    local by = {}
    local function count(id, level, status)
        level = level or util.level_from_id(id) or 0
        local row = by[level] or { level = level, total = 0 }
        by[level] = row
        row.total = row.total + 1
        row[status] = (row[status] or 0) + 1
    end
    local st = state_tasks(env)
    if st then
        for id, t in pairs(st) do
            count(id, t.level, t.status or "pending")
        end
    else
        for _, t in ipairs(graph_tasks(env)) do
            count(t.id, t.level, "pending")
        end
    end
    local rows = {}
    for _, n in ipairs(util.sorted_keys(by)) do
        by[n].status = level_status(env, n)
        rows[#rows + 1] = by[n]
    end
    return rows
end

function M.install(env, events)
    env.tasks = function(status) return tasks(env, status) end
    env.task = function(id) return task(env, id) end
    env.levels = function() return levels(env) end
    env.history = function(id)
        if type(id) ~= "string" then
            error("history(id): id must be a task id string", 2)
        end
        return events(id)
    end
    env.inspect = inspect.format
    env.help = function()
        for _, row in ipairs(M.HELP) do
            print(string.format("  %-16s %s", row[1], row[2]))
        end
    end
end

return M
