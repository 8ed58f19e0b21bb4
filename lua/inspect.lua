-- lua/inspect.lua - values as readable Lua text, for the REPL:
-- `require("zerg.inspect").format(v)`.
--
-- Keys are sorted (array part first, in order), nested tables indented
-- once they no longer fit on one line, a table that contains itself is
-- shown as <cycle>, and nesting deeper than MAX_DEPTH as {...}.
local util = require("zerg.util")

local M = {}

local MAX_DEPTH = 8
local WIDTH = 78

local KEYWORDS = {}
for w in string.gmatch("and break do else elseif end false for function "
                       .. "goto if in local nil not or repeat return then "
                       .. "true until while", "%a+") do
    KEYWORDS[w] = true
end

local function quote(s)
    return '"' .. string.gsub(s, '[%c"\\]', function(c)
        local named = { ["\n"] = "\\n", ["\t"] = "\\t", ["\r"] = "\\r",
                        ['"'] = '\\"', ["\\"] = "\\\\" }
        return named[c] or string.format("\\%03d", string.byte(c))
    end) .. '"'
end

local function scalar(v)
    if type(v) == "string" then
        return quote(v)
    elseif math.type(v) == "float" and v == math.floor(v)
        and v > -1e15 and v < 1e15 then
        return string.format("%.1f", v)
    elseif type(v) == "number" or type(v) == "boolean" or v == nil then
        return tostring(v)
    end
    return "<" .. tostring(v) .. ">"
end

local function key_text(k)
    if type(k) == "string" and string.match(k, "^[%a_][%w_]*$")
        and not KEYWORDS[k] then
        return k
    end
    return "[" .. scalar(k) .. "]"
end

local render

local function parts_of(t, depth, path, indent)
    local parts = {}
    local n = rawlen(t)
    for i = 1, n do
        parts[#parts + 1] = render(rawget(t, i), depth + 1, path,
                                   indent .. "  ")
    end
    for _, k in ipairs(util.sorted_keys(t)) do
        if not (math.type(k) == "integer" and k >= 1 and k <= n) then
            -- a key that pairs() gives but rawget does not: a view with
            -- __pairs, such as the read-only library tables
            local v = rawget(t, k)
            if v == nil then
                v = t[k]
            end
            parts[#parts + 1] = key_text(k) .. " = "
                .. render(v, depth + 1, path, indent .. "  ")
        end
    end
    return parts
end

function render(v, depth, path, indent)
    if type(v) ~= "table" then
        return scalar(v)
    end
    if path[v] then
        return "<cycle>"
    end
    if depth >= MAX_DEPTH then
        return "{...}"
    end
    path[v] = true
    local parts = parts_of(v, depth, path, indent)
    path[v] = nil
    if #parts == 0 then
        return "{}"
    end
    local line = "{" .. table.concat(parts, ", ") .. "}"
    if #line + #indent <= WIDTH and not string.find(line, "\n", 1, true) then
        return line
    end
    local inner = indent .. "  "
    return "{\n" .. inner .. table.concat(parts, ",\n" .. inner) .. "\n"
        .. indent .. "}"
end

-- v as Lua-like text.
function M.format(v)
    return render(v, 0, {}, "")
end

-- What the REPL prints for a result: strings as they are, the rest
-- formatted.
function M.show(v)
    if type(v) == "string" then
        return v
    end
    return M.format(v)
end

return M
