#!/usr/bin/env bash
# test_bad_input.sh - malformed input through the real binary.
#
# Every row of TABLE below breaks one file of an otherwise valid project
# and is run through both `zerg -C DIR validate` and `zerg -C DIR rush
# --dry-run`.  Each must exit 2, name the file and what is wrong (the key
# words are matched literally), and leave nothing behind: no .zerg/state/
# entries, no monitor log.  Then a corrupt state file is given to
# `zerg status` and `zerg retry`: a clear error naming the file and its
# .bak, and the file byte-for-byte unchanged.
#
# Environment: ZERG (the binary, required), ZERG_SOURCE_DIR.
set -u

if [ -z "${ZERG:-}" ] || [ ! -x "$ZERG" ]; then
    echo "test_bad_input.sh: ZERG must name the zerg binary" \
        "(got '${ZERG:-}')" >&2
    exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zerg-bad-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export NO_COLOR=1
unset ZERG_FEATURE

passed=0
failed=0
proj=$tmp/p
G=.gsd/specs/f/task-graph.json
C=.zerg/config.yaml

VALID='{"feature": "f", "tasks": [
 {"id": "A-L1-001", "level": 1, "dependencies": []},
 {"id": "A-L2-001", "level": 2, "dependencies": ["A-L1-001"]}]}'
LONG_ID=$(printf 'x%.0s' $(seq 65))

# Generated contents too big to write inline (selected with @name).
generate() {
    case $1 in
    @big-id) # a 3 MB string where an id belongs
        printf '{"tasks": [{"id": "'
        head -c 3000000 /dev/zero | tr '\0' 'a'
        printf '", "level": 1}]}'
        ;;
    @big-level) # a 3 MB string where a level belongs
        printf '{"tasks": [{"id": "A", "level": "'
        head -c 3000000 /dev/zero | tr '\0' '9'
        printf '"}]}'
        ;;
    @big-config) # a 2 MB config file
        printf 'workers:\n  retry_attempts: 3\n'
        head -c 2000000 /dev/zero | tr '\0' '#'
        printf '\n'
        ;;
    @truncated) # a real graph cut in the middle
        printf '%s' "$VALID" | head -c 60
        ;;
    @nul-in-config)
        printf 'workers:\n  retry_attempts: 3\0\n'
        ;;
    @nul-in-graph) # a valid graph, then a NUL and more bytes
        printf '%s' "$VALID"
        printf '\0{"tasks": []}'
        ;;
    esac
}

# TABLE: name | file (relative to the project) | content | key words
# (several key words separated by ';;').  Content starting with @ is
# generated.  The graph is $VALID unless the row replaces it.
TABLE=$(
    cat <<EOF
yaml syntax error|$C|workers: [|config.yaml:2:1: YAML syntax error
yaml tab indentation|$C|workers:\n\tretry_attempts: 2|tabs cannot indent YAML
yaml wrong type int|$C|workers:\n  spawn_retry_attempts: many|workers.spawn_retry_attempts: found 'many';;expected an integer in 0..100
yaml wrong type bool|$C|workers:\n  auto_respawn: maybe|workers.auto_respawn: found 'maybe';;expected true or false
yaml section not a mapping|$C|resilience: 3|resilience: found '3', expected a mapping
yaml zero duration|$C|workers:\n  spawn_backoff_base_seconds: 0|workers.spawn_backoff_base_seconds: found '0';;expected a number of seconds
yaml negative duration|$C|workers:\n  heartbeat_interval_seconds: -5|workers.heartbeat_interval_seconds: found '-5'
yaml absurd duration|$C|workers:\n  backoff_max_seconds: 1e12|workers.backoff_max_seconds: found '1e12'
yaml unknown strategy|$C|workers:\n  backoff_strategy: quadratic|found 'quadratic', expected one of exponential|linear|fixed
yaml unknown spawn strategy|$C|workers:\n  spawn_backoff_strategy: random|workers.spawn_backoff_strategy: found 'random'
yaml argv not a list|$C|workers:\n  launch_prefix: nice|workers.launch_prefix: found 'nice', expected a list of strings
yaml base above max|$C|workers:\n  spawn_backoff_base_seconds: 10\n  spawn_backoff_max_seconds: 5|expected at most workers.spawn_backoff_max_seconds
yaml duplicate key|$C|workers:\n  retry_attempts: 1\n  retry_attempts: 2|workers.retry_attempts: found a duplicate key
yaml multi-megabyte file|$C|@big-config|config.yaml;;expected at most 1 MiB
yaml NUL byte|$C|@nul-in-config|config.yaml;;found a NUL byte
json syntax error|$G|{"tasks": [|task-graph.json: invalid JSON
json truncated|$G|@truncated|task-graph.json: invalid JSON
json empty file|$G||task-graph.json: invalid JSON
json top level array|$G|[1]|the top level must be an object with a "tasks" array
json no tasks|$G|{"feature": "f"}|task-graph.json: no "tasks" array
json tasks not an array|$G|{"tasks": {"A": {}}}|"tasks" must be an array, not object
json empty task list|$G|{"tasks": []}|"tasks" is empty
json non-object task|$G|{"tasks": [42]}|tasks[0]: must be an object, not number
json task without id|$G|{"tasks": [{"level": 1}]}|tasks[0]: has no "id"
json id not a string|$G|{"tasks": [{"id": 7, "level": 1}]}|tasks[0]: id must be a string, not number
json duplicate ids|$G|{"tasks": [{"id": "A", "level": 1}, {"id": "A", "level": 1}]}|tasks[1]: duplicate id "A" (also tasks[0])
json unknown dependency|$G|{"tasks": [{"id": "A", "level": 1, "dependencies": ["Z"]}]}|task A: unknown dependency "Z"
json non-string dependency|$G|{"tasks": [{"id": "A", "level": 1, "dependencies": [1]}]}|task A: dependencies[0] must be a string, not number
json dependencies not a list|$G|{"tasks": [{"id": "A", "level": 1, "dependencies": "B"}]}|task A: dependencies must be an array of strings
json self dependency|$G|{"tasks": [{"id": "A", "level": 1, "dependencies": ["A"]}]}|task A: depends on itself
json cycle|$G|{"tasks": [{"id": "A", "level": 1, "dependencies": ["B"]}, {"id": "B", "level": 1, "dependencies": ["A"]}]}|dependency cycle: A -> B -> A
json dependency on a higher level|$G|{"tasks": [{"id": "A", "level": 1, "dependencies": ["B"]}, {"id": "B", "level": 2}]}|task A: depends on B at level 2, a higher level than its own (1)
json id with ../|$G|{"tasks": [{"id": "../x", "level": 1}]}|tasks[0]: invalid id "../x"
json id with a space|$G|{"tasks": [{"id": "a b", "level": 1}]}|invalid id "a b": it has characters outside [A-Za-z0-9._-]
json id with shell metacharacters|$G|{"tasks": [{"id": "a;rm -rf \$HOME", "level": 1}]}|invalid id "a;rm -rf \$HOME"
json id with backquotes|$G|{"tasks": [{"id": "\`id\`", "level": 1}]}|invalid id "\`id\`"
json id too long|$G|{"tasks": [{"id": "$LONG_ID", "level": 1}]}|it is longer than 64 characters
json id with NUL|$G|{"tasks": [{"id": "A\\\\u0000B", "level": 1}]}|it contains a NUL byte
json level zero|$G|{"tasks": [{"id": "A", "level": 0}]}|task A: level must be an integer >= 1, not 0
json level negative|$G|{"tasks": [{"id": "A", "level": -1}]}|task A: level must be an integer >= 1, not -1
json level fractional|$G|{"tasks": [{"id": "A", "level": 1.5}]}|level must be an integer >= 1, not 1.5
json level absurd|$G|{"tasks": [{"id": "A", "level": 1e9}]}|task A: level 1e+09 is too large
json level of wrong type|$G|{"tasks": [{"id": "A", "level": "one"}]}|level must be an integer >= 1, not string
json no level anywhere|$G|{"tasks": [{"id": "A"}]}|task A: no level: give it a "level" or an id of the form *-L{n}-*
json negative timeout|$G|{"tasks": [{"id": "A", "level": 1, "verification": {"command": "true", "timeout_seconds": -1}}]}|task A: verification.timeout_seconds must be a number > 0
json absurd timeout|$G|{"tasks": [{"id": "A", "level": 1, "verification": {"command": "true", "timeout_seconds": 1e300}}]}|verification.timeout_seconds must be a number > 0 and at most a year
json zero timeout|$G|{"tasks": [{"id": "A", "level": 1, "verification": {"command": "true", "timeout_seconds": 0}}]}|verification.timeout_seconds must be a number > 0
json files not an object|$G|{"tasks": [{"id": "A", "level": 1, "files": "a.txt"}]}|task A: files must be an object, not string
json command not a string|$G|{"tasks": [{"id": "A", "level": 1, "command": 42}]}|task A: command must be a string, not number
json multi-megabyte id|$G|@big-id|tasks[0]: invalid id;;it is longer than 64 characters
json multi-megabyte level|$G|@big-level|task A: level must be an integer >= 1, not string
json NUL byte after the document|$G|@nul-in-graph|task-graph.json: contains a NUL byte at byte offset ${#VALID}
feature name with ../|.gsd/.current-feature|../../etc|invalid feature name "../../etc" (from .gsd/.current-feature)
feature name with a space|.gsd/.current-feature|my feature|invalid feature name "my feature"
feature name with a leading dash|.gsd/.current-feature|-rf|invalid feature name "-rf"
policy syntax error|.zerg/policies/backoff.lua|return {|policies/backoff.lua:1:;;near <eof>
policy unknown hook|.zerg/policies/backoff.lua|local M = {} function M.dealy() end return M|'dealy' is not a hook of the backoff policy;;did you mean 'delay'
policy unknown policy|.zerg/policies/nonsense.lua|return {}|no policy is called 'nonsense'
policy error at load|.zerg/policies/retry.lua|error("boom")|policies/retry.lua:1: boom
policy returns no table|.zerg/policies/retry.lua|return 42|must return a table of hooks
policy sandbox escape|.zerg/policies/stale.lua|os.execute("touch pwned") return {}|unknown global 'os'
policy runaway load|.zerg/policies/stale.lua|while true do end|instruction budget exceeded
EOF
)

# setup FILE CONTENT: a fresh valid project with FILE replaced.
setup() {
    rm -rf "$proj"
    mkdir -p "$proj/.gsd/specs/f"
    printf '%s\n' "$VALID" >"$proj/$G"
    mkdir -p "$(dirname "$proj/$1")"
    case $2 in
    @*) generate "$2" >"$proj/$1" ;;
    *) printf -- "${2//%/%%}" >"$proj/$1" ;;
    esac
}

# check ROWNAME WORDS CMD...: exit 2, "zerg CMD: " first, each key word in
# stderr, nothing written.
check() {
    local row=$1 words=$2
    shift 2
    local sub=$1
    [ "$sub" = "rush" ] || [ "$sub" = "validate" ] || return 1
    local err rc why=""
    err=$(cd "$tmp" && timeout 60 "$ZERG" -C "$proj" "$@" 2>&1 >/dev/null)
    rc=$?
    [ "$rc" = 2 ] || why="exit $rc, expected 2"
    [ -n "$why" ] || [ "${err#zerg $sub: }" != "$err" ] ||
        why="message does not start with 'zerg $sub: '"
    local list w
    readarray -t list <<<"${words//;;/$'\n'}"
    for w in "${list[@]}"; do
        [ -n "$why" ] || printf '%s' "$err" | grep -qF -- "$w" ||
            why="message lacks '$w'"
    done
    if [ -z "$why" ] && [ -d "$proj/.zerg/state" ] &&
        [ -n "$(ls -A "$proj/.zerg/state")" ]; then
        why="wrote $(ls -A "$proj/.zerg/state" | tr '\n' ' ')"
    fi
    if [ -z "$why" ] && [ -e "$proj/.zerg/monitor.log" ]; then
        why="wrote .zerg/monitor.log"
    fi
    if [ -n "$why" ]; then
        echo "FAIL: $row ($*): $why" >&2
        printf '  stderr: %s\n' "$(printf '%s' "$err" | head -c 600)" >&2
        failed=$((failed + 1))
    else
        passed=$((passed + 1))
        echo "ok: $row ($*)"
    fi
}

rows=0
while IFS='|' read -r row file content words; do
    [ -n "$row" ] || continue
    rows=$((rows + 1))
    # read gives the last field the rest of the line, '|' included.
    setup "$file" "$content"
    check "$row" "$words" validate
    setup "$file" "$content"
    check "$row" "$words" rush --dry-run
done <<<"$TABLE"
[ "$rows" -ge 30 ] || {
    echo "FAIL: the table has only $rows rows" >&2
    failed=$((failed + 1))
}

# ---- a corrupt state file ----------------------------------------------

state_ok='{"version": 1, "feature": "f", "status": "failed",
 "tasks": {"A-L1-001": {"status": "failed", "level": 1},
           "A-L2-001": {"status": "blocked", "level": 2}}}'

corrupt_case() { # NAME CONTENT WORDS CMD...
    local row=$1 content=$2 words=$3
    shift 3
    setup "$G" "$VALID"
    mkdir -p "$proj/.zerg/state"
    printf '%s' "$content" >"$proj/.zerg/state/f.json"
    printf '%s\n' "$state_ok" >"$proj/.zerg/state/f.json.bak"
    local before after err rc why=""
    before=$(cksum <"$proj/.zerg/state/f.json")
    err=$(timeout 60 "$ZERG" -C "$proj" "$@" 2>&1 >/dev/null)
    rc=$?
    after=$(cksum <"$proj/.zerg/state/f.json")
    [ "$rc" = 2 ] || why="exit $rc, expected 2"
    for w in "$proj/.zerg/state/f.json is corrupt" \
        "$proj/.zerg/state/f.json.bak" "It was not modified" "$words"; do
        [ -n "$why" ] || printf '%s' "$err" | grep -qF -- "$w" ||
            why="message lacks '$w'"
    done
    [ -n "$why" ] || [ "$before" = "$after" ] || why="the file changed"
    [ -n "$why" ] || [ ! -e "$proj/.zerg/state/f.json.tmp" ] ||
        why="left a temp file"
    if [ -n "$why" ]; then
        echo "FAIL: corrupt state: $row ($*): $why" >&2
        printf '  stderr: %s\n' "$(printf '%s' "$err" | head -c 600)" >&2
        failed=$((failed + 1))
    else
        passed=$((passed + 1))
        echo "ok: corrupt state: $row ($*)"
    fi
}

truncated=$(printf '%s' "$state_ok" | head -c 70)
for cmd in "status" "status --json" "retry --all-failed" "retry A-L1-001"; do
    # shellcheck disable=SC2086
    corrupt_case "truncated" "$truncated" "premature EOF at character" $cmd
    # shellcheck disable=SC2086
    corrupt_case "tasks of the wrong type" \
        '{"version": 1, "feature": "f", "tasks": [1, 2]}' "tasks" $cmd
    # shellcheck disable=SC2086
    corrupt_case "unknown status" \
        '{"version": 1, "feature": "f", "tasks": {"A-L1-001": {"status": "donee"}}}' \
        "donee" $cmd
done

# More workers than the user's inotify instances allow: refused up front
# with the limit named, not run quietly with fewer workers.
rm -rf "$proj"
mkdir -p "$proj/.gsd/specs/f"
printf '%s' "$VALID" >"$proj/$G"
limit=$(cat /proc/sys/fs/inotify/max_user_instances)
out=$("$ZERG" -C "$proj" rush --workers 256 2>&1)
rc=$?
if [ "$limit" -lt 256 ]; then
    if [ $rc -eq 2 ] && printf '%s' "$out" | grep -q "max_user_instances" &&
        [ ! -e "$proj/.zerg/state/f.json" ]; then
        passed=$((passed + 1))
        echo "ok: --workers 256 over the inotify limit ($limit) exits 2"
    else
        failed=$((failed + 1))
        echo "FAIL: --workers 256 over the inotify limit $limit: rc $rc: $out"
    fi
else
    # A machine that allows them: the check must not stand in the way.
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
        echo "ok: --workers 256 within the inotify limit ($limit) runs"
    else
        failed=$((failed + 1))
        echo "FAIL: --workers 256 within the inotify limit $limit: rc $rc: $out"
    fi
fi

echo "test_bad_input.sh: $passed passed, $failed failed ($rows table rows)"
[ "$failed" = 0 ]
