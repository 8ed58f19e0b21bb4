# lib-stop.sh - the tasks and checks of the graceful-stop tests
# (test_rush_stop_grace.sh and its container and slurm twins; sourced
# after lib.sh).

# The task: done at once when go exists; else it traps TERM with a
# handler that takes half a second to write its marker, says it is ready,
# and waits forever.
trapping_graph() {
    graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "G-L1-001", "level": 1, "command": "[ -f go ] && exit 0; trap 'sleep 0.5; echo handled > marker; exit 0' TERM; touch ready; while :; do sleep 0.1; done"},
 {"id": "G-L2-001", "level": 2, "dependencies": ["G-L1-001"], "command": "true"}]}
JSON
}

# The task ignores TERM (and so does its sleep) and records its pid.
ignoring_graph() {
    graph <<'JSON'
{"feature": "f", "tasks": [
 {"id": "G-L1-001", "level": 1, "command": "trap '' TERM; echo $$ > task.pid; while :; do sleep 0.1; done"}]}
JSON
}

# After a stop: the rush says stopped, the task is pending and was not
# charged, nothing of the project runs.
check_stopped() {
    [ "$(state_field status)" = stopped ] || fail "state status $(state_field status)"
    [ "$(task_status G-L1-001)" = pending ] || fail "the stopped task is $(task_status G-L1-001), want pending"
    [ "$(task_status G-L1-001 retry_count)" = 0 ] || fail "the stop was charged: retry_count $(task_status G-L1-001 retry_count)"
    has_event task_failed && fail "a stop logged task_failed"
    grep -q "Stopped: continue with \`zerg rush --resume\`" "$PROJ/rush.out" ||
        fail "no stopped summary: $(cat "$PROJ/rush.out")"
    no_procs
}
