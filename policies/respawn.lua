-- policies/respawn.lua - whether to replace a worker that exited.
--
--   decide(slot, opts) -> respawn, reason
--     slot: id, respawn_count (respawns of this slot so far), exit =
--     {code, signal}, uptime (seconds), was_ready, work_left (tasks still
--     to run).  opts: auto_respawn, max_respawn_attempts.
local M = {}

function M.decide(slot, opts)
    if not opts.auto_respawn then
        return false, "auto_respawn disabled"
    end
    if slot.respawn_count >= opts.max_respawn_attempts then
        return false, "respawn cap reached"
    end
    local left = slot.work_left
    if not left or left == 0 then
        return false, "no work left"
    end
    return true, "work left"
end

return M
