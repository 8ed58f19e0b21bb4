#!/usr/bin/env bash
# A policy override that hangs inside one C library call: a pattern that
# backtracks 2^30 times in string.find.  The count hook never runs inside
# a C function; the sandbox's bounded matcher charges each step to the
# budget instead (docs/wiki/Policy-API.md, "Sandbox and
# budgets").  At a file's top level `zerg validate` must report it and
# exit 2; inside a hook the rush goes on with the bundled decision and
# logs policy_error.  Each command has a timeout well under the test's.
source "$(dirname "$0")/lib.sh"

HOSTILE='local s = string.rep("a", 30) .. "b"
local p = string.rep("a?", 30) .. string.rep("a", 30)'

new_project top
graph <<'JSON'
{"feature": "f", "tasks": [{"id": "T-L1-001", "title": "t", "level": 1, "command": "true"}]}
JSON
mkdir -p "$PROJ/.zerg/policies"
cat > "$PROJ/.zerg/policies/retry.lua" <<EOF
$HOSTILE
local hit = s:find(p)
return {}
EOF
rc=0
timeout 60 "$ZERG" -C "$PROJ" validate > "$PROJ/v.out" 2> "$PROJ/v.err" || rc=$?
[ "$rc" -eq 2 ] || fail "validate exited $rc, want 2: $(cat "$PROJ/v.err")"
grep -q "retry.lua:3:" "$PROJ/v.err" || fail "validate does not name retry.lua:3: $(cat "$PROJ/v.err")"
grep -q "budget exceeded" "$PROJ/v.err" || fail "validate does not say why: $(cat "$PROJ/v.err")"
pass "a catastrophic pattern at a policy's top level: validate exits 2"

new_project hook
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "H-L1-001", "title": "fails once", "level": 1,
  "command": "test -f once || { touch once; exit 1; }"}
]}
JSON
mkdir -p "$PROJ/.zerg/policies"
cat > "$PROJ/.zerg/policies/retry.lua" <<EOF
$HOSTILE
return {decide = function(task, failure, opts)
    return {retry = s:find(p) ~= nil, charge = true}
end}
EOF
timeout 60 "$ZERG" -C "$PROJ" validate > "$PROJ/v.out" 2>&1 || fail "validate of the hook project: $(cat "$PROJ/v.out")"
rc=0
timeout 120 "$ZERG" -C "$PROJ" rush --workers 1 > "$PROJ/rush.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "rush exited $rc: $(cat "$PROJ/rush.out")"
[ "$(task_status H-L1-001)" = complete ] || fail "H-L1-001 is $(task_status H-L1-001)"
grep '"event":"policy_error"' "$PROJ/.zerg/monitor.jsonl" > "$PROJ/errors.jsonl" ||
    fail "no policy_error event"
grep -q 'retry.decide' "$PROJ/errors.jsonl" || fail "policy_error does not name retry.decide"
grep -q 'budget exceeded' "$PROJ/errors.jsonl" || fail "policy_error does not say why"
grep -q '"used":"bundled"' "$PROJ/errors.jsonl" || fail "the bundled decision was not used"
pass "a catastrophic pattern inside retry.decide: the bundled decision, policy_error logged"
