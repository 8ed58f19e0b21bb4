#!/usr/bin/env bash
# Nothing a task produces is lost, and "complete" means its work landed
# (DESIGN §18), on real git repositories with worktree isolation: outputs
# under .gsd/ and .zerg/ reach the integration branch, a change to
# .zerg/config.yaml lands and the summary flags it, a missing files.create
# fails the attempt as missing_output and passes on the retry that makes
# it, a declared file .gitignore ignores is committed and noted, an
# undeclared one is not and is counted once, not again for the next task
# on the same worktree (the reset keeps ignored files); zerg's run files never enter a commit; under
# isolation none a missing output fails the task too.
source "$(dirname "$0")/lib.sh"

on_branch() { G cat-file -e "zerg/f/integration:$1" 2>/dev/null; }

new_project outputs
G init -q -b main
G config user.name tester
G config user.email tester@example.com
printf '*.log\nbuild/\ncache/\n' > "$PROJ/.gitignore"
echo base > "$PROJ/README"
# The project's config is tracked, as a team shares it.
G add README .gitignore .zerg/config.yaml
G commit -qm base
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "O-L1-001", "title": "spec notes and wiki", "level": 1,
  "command": "mkdir -p .gsd/specs/f .zerg/wiki .zerg/state .zerg/logs && echo notes > .gsd/specs/f/notes.md && echo page > .zerg/wiki/page.md && echo '{}' > .zerg/state/mine.json && echo x > .zerg/logs/mine.txt && git add -f .zerg/logs/mine.txt",
  "files": {"create": [".gsd/specs/f/notes.md", ".zerg/wiki/page.md", ".zerg/state/mine.json"]}},
 {"id": "O-L1-002", "title": "tune the config", "level": 1,
  "command": "echo '# tuned by a task' >> .zerg/config.yaml",
  "files": {"modify": [".zerg/config.yaml"]}},
 {"id": "O-L1-003", "title": "made on the second try", "level": 1,
  "command": "if [ \"$ZERG_ATTEMPT\" -ge 2 ]; then echo made > made.txt; fi",
  "files": {"create": ["made.txt"]}},
 {"id": "O-L2-001", "title": "ignored files", "level": 2,
  "dependencies": ["O-L1-001"],
  "command": "mkdir -p build cache && echo out > build/out.log && echo d > debug.log && echo a > cache/a.bin && echo b > cache/b.bin",
  "files": {"create": ["build/out.log"]}},
 {"id": "O-L3-001", "title": "after the ignored files", "level": 3,
  "dependencies": ["O-L2-001"], "command": "echo three > three.txt",
  "files": {"create": ["three.txt"]}}
]}
JSON
zerg rush --workers 1 > "$PROJ/out.txt" 2>&1 || fail "rush exited $?: $(cat "$PROJ/out.txt")"
pass "a rush whose tasks write under .gsd/, .zerg/ and ignored paths completes"

[ "$(G show zerg/f/integration:.gsd/specs/f/notes.md)" = notes ] || fail ".gsd/specs/f/notes.md is not on the integration branch"
[ "$(G show zerg/f/integration:.zerg/wiki/page.md)" = page ] || fail ".zerg/wiki/page.md is not on the integration branch"
pass "outputs under .gsd/ and .zerg/ land on the integration branch"

if G log --name-only --format= main..zerg/f/integration | grep -E '^\.zerg/(state|logs)/'; then
    fail "zerg's run files entered a commit"
fi
grep '"event":"output_not_committed"' "$PROJ/.zerg/monitor.jsonl" | grep -q '.zerg/state/mine.json' ||
    fail "a declared run file was not said to stay out of the commit"
pass ".zerg/state/ and .zerg/logs/ never enter a commit, even declared or staged by the task"

G show zerg/f/integration:.zerg/config.yaml | grep -q '^# tuned by a task$' || fail "the config change did not land"
grep -q "Task O-L1-002: changes zerg's own configuration: review before merging (.zerg/config.yaml)" "$PROJ/out.txt" ||
    fail "the summary does not flag the config change: $(cat "$PROJ/out.txt")"
grep '"event":"config_change"' "$PROJ/.zerg/monitor.jsonl" | grep -q '"task":"O-L1-002"' || fail "no config_change event"
if grep -q "Task O-L1-001: changes zerg" "$PROJ/out.txt"; then fail "a wiki page was flagged as configuration"; fi
pass "a change to .zerg/config.yaml lands and the summary flags it"

grep '"event":"missing_output"' "$PROJ/.zerg/monitor.jsonl" | grep '"task":"O-L1-003"' | grep -q 'made.txt' ||
    fail "no missing_output event naming made.txt"
[ "$(G show zerg/f/integration:made.txt)" = made ] || fail "made.txt is not on the integration branch"
[ "$(task_status O-L1-003 retry_count)" = 1 ] || fail "the missing output was not charged: retry_count $(task_status O-L1-003 retry_count)"
G log --format=%B --grep='^Task-ID: O-L1-003$' main..zerg/f/integration | grep -qx 'Attempt: 2' ||
    fail "O-L1-003 did not land from its second attempt: $(G log --format=%B main..zerg/f/integration)"
pass "a missing files.create fails the attempt as missing_output; the retry that makes it lands"

on_branch build/out.log || fail "the declared build/out.log (ignored) is not on the integration branch"
grep '"event":"output_forced"' "$PROJ/.zerg/monitor.jsonl" | grep -q 'build/out.log' || fail "no output_forced event"
grep -q '1 declared file ignored by .gitignore was committed anyway (build/out.log)' "$PROJ/out.txt" ||
    fail "the summary does not note the declared ignored file: $(cat "$PROJ/out.txt")"
pass "a declared file .gitignore ignores is committed and noted"

if on_branch debug.log || on_branch cache/a.bin; then fail "an undeclared ignored file was committed"; fi
grep -q '2 ignored paths were left out of the commits of 1 task, not declared (cache/, ...)' "$PROJ/out.txt" ||
    fail "the summary does not count the undeclared ignored paths: $(cat "$PROJ/out.txt")"
grep '"event":"output_ignored"' "$PROJ/.zerg/monitor.jsonl" | grep -q 'debug.log' || fail "no output_ignored event listing debug.log"
pass "undeclared ignored files stay out of the commit and the summary counts them"

# ---- isolation none: the output must exist in the project itself
new_project none
cat >> "$PROJ/.zerg/config.yaml" <<'YAML'
  retry_attempts: 1
rush:
  isolation: none
YAML
graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "N-L1-001", "title": "forgets its output", "level": 1,
  "command": "echo other > other.txt", "files": {"create": ["wanted.txt"]}}
]}
JSON
if zerg rush --workers 1 > "$PROJ/out.txt" 2>&1; then fail "a rush whose task never made its output succeeded"; fi
[ "$(events missing_output)" = 2 ] || fail "expected a missing_output per attempt (2), got $(events missing_output)"
[ "$(task_status N-L1-001)" = failed ] || fail "N-L1-001 is $(task_status N-L1-001), not failed"
pass "under isolation none a missing files.create fails the task, retried first"

echo "$TESTS_PASSED passed, 0 failed"
