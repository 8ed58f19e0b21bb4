-- lua/util.lua - small helpers shared by the bundled policies and the
-- REPL; `require("zerg.util")`.
local M = {}

-- Keys of t sorted (numbers before strings), so every walk over a table
-- gives the same order on every run.
function M.sorted_keys(t)
    local keys = {}
    for k in pairs(t) do
        keys[#keys + 1] = k
    end
    table.sort(keys, function(a, b)
        local ta, tb = type(a), type(b)
        if ta ~= tb then
            return ta < tb
        end
        if ta == "number" or ta == "string" then
            return a < b
        end
        return tostring(a) < tostring(b)
    end)
    return keys
end

-- n from a task id of the form `*-L{n}-*`, else nil.
function M.level_from_id(id)
    local n = tonumber(string.match(id, "%-L(%d+)%-") or "")
    if n and n >= 1 then
        return math.tointeger(n)
    end
    return nil
end

-- Task statuses that end a task (a level is complete when all its tasks
-- are terminal).
M.TERMINAL = { complete = true, failed = true, blocked = true }

return M
