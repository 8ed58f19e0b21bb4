#!/usr/bin/env bash
# Two features, f and g, with the same task ids, rushed at the same time
# in one project, five times over (a race shows only now and then).  Each
# task appends "FEATURE TASK EPOCH ATTEMPT" from its environment to its
# feature's ledger; the checks hold each feature's state, `zerg status`
# and `zerg logs` to what that feature's own workers ran.
source "$(dirname "$0")/lib.sh"

IDS="T-L1-000 T-L1-001 T-L1-002 T-L2-000 T-L2-001 T-L2-002"

# two_graphs: f and g get the same six task ids (two levels of three).
two_graphs() {
    local feat
    for feat in f g; do
        mkdir -p "$PROJ/.gsd/specs/$feat"
        python3 - "$feat" > "$PROJ/.gsd/specs/$feat/task-graph.json" <<'PY'
import json, sys
feat = sys.argv[1]
tasks = []
for l in (1, 2):
    for i in range(3):
        tid = "T-L%d-%03d" % (l, i)
        tasks.append({"id": tid, "level": l,
                      "dependencies": ["T-L1-%03d" % i] if l == 2 else [],
                      "command": "sleep 0.0%d; echo \"$ZERG_FEATURE $ZERG_TASK_ID "
                                 "$ZERG_EPOCH $ZERG_ATTEMPT\" >> ledger-%s" % (i + 1, feat)})
print(json.dumps({"feature": feat, "tasks": tasks}))
PY
    done
}

# state_of FEAT TASK FIELD
state_of() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tasks"][sys.argv[2]][sys.argv[3]])' \
        "$PROJ/.zerg/state/$1.json" "$2" "$3"
}
run_id_of() {
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$PROJ/.zerg/state/$1.json"
}

# check_feature FEAT OTHER: FEAT's tasks complete, each with an epoch and
# attempt that FEAT's ledger shows its own worker ran, never OTHER's.
check_feature() {
    local feat=$1 other=$2 t e a
    for t in $IDS; do
        [ "$(state_of "$feat" "$t" status)" = complete ] ||
            fail "round $round: $feat/$t is $(state_of "$feat" "$t" status)"
        e=$(state_of "$feat" "$t" epoch)
        a=$(state_of "$feat" "$t" attempt)
        grep -qx "$feat $t $e $a" "$PROJ/ledger-$feat" ||
            fail "round $round: $feat/$t complete with epoch $e attempt $a, which no worker of $feat ran"
        ! grep -q " $t $e " "$PROJ/ledger-$other" ||
            fail "round $round: $feat/$t was marked complete by $other's run (epoch $e)"
    done
    ! grep -qv "^$feat " "$PROJ/ledger-$feat" || fail "round $round: ledger-$feat has runs of another feature"
}

# check_status FEAT: `zerg status --feature FEAT` describes FEAT's run.
check_status() {
    local feat=$1 js
    js=$(zerg status --feature "$feat" --json) || fail "round $round: status --feature $feat failed"
    python3 - "$feat" "$(run_id_of "$feat")" "$js" <<'PY' || fail "round $round: status --feature $feat shows another run"
import json, sys
feat, run_id, d = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
assert d["feature"] == feat, d["feature"]
assert d["run_id"] == run_id, (d["run_id"], run_id)
assert d["status"] == "complete", d["status"]
assert d["tasks"]["complete"] == 6, d["tasks"]
PY
    zerg status --feature "$feat" | grep -q "^Feature $feat: complete" ||
        fail "round $round: status --feature $feat text does not name $feat"
}

# check_logs: `zerg logs --feature F --event task_complete` shows F's six
# completions (each with F's epoch) and nothing else: no completion of the
# other feature's run, which has the same task ids.
check_logs() {
    local feat other out
    for feat in f g; do
        other=g
        [ "$feat" = f ] || other=f
        out=$(zerg logs --feature "$feat" --event task_complete --json) ||
            fail "round $round: logs --feature $feat failed"
        python3 - "$PROJ" "$feat" "$other" "$out" <<'PY' ||
import json, sys
proj, feat, other, out = sys.argv[1:5]
def epochs(f):
    st = json.load(open("%s/.zerg/state/%s.json" % (proj, f)))
    return {t: v["epoch"] for t, v in st["tasks"].items()}
mine, theirs = epochs(feat), epochs(other)
shown = {}
lines = [json.loads(l) for l in out.split("\n") if l]
for e in lines:
    assert e["feature"] == feat, "an event of %s shown for %s: %s" % (e["feature"], feat, e)
    shown.setdefault(e["task"], set()).add(e["data"]["epoch"])
for t, ep in mine.items():
    assert ep in shown.get(t, ()), "%s's completion of %s (epoch %d) not shown" % (feat, t, ep)
for t, ep in theirs.items():
    assert ep not in shown.get(t, ()), "%s's completion of %s shown for %s" % (other, t, feat)
assert len(lines) == len(mine), "%d lines, not %s's %d completions" % (len(lines), feat, len(mine))
PY
            fail "round $round: zerg logs --feature $feat"
    done
}

for round in 1 2 3 4 5; do
    new_project "two-$round"
    rm "$PROJ/.gsd/.current-feature"
    two_graphs
    timeout 60 "$ZERG" -C "$PROJ" --feature f rush --workers 2 > "$PROJ/f.out" 2>&1 & pf=$!
    timeout 60 "$ZERG" -C "$PROJ" --feature g rush --workers 2 > "$PROJ/g.out" 2>&1 & pg=$!
    rf=0; wait $pf || rf=$?
    rg=0; wait $pg || rg=$?
    [ $rf -eq 0 ] || fail "round $round: rush f exited $rf: $(tail -5 "$PROJ/f.out")"
    [ $rg -eq 0 ] || fail "round $round: rush g exited $rg: $(tail -5 "$PROJ/g.out")"
    check_feature f g
    check_feature g f
    [ "$(run_id_of f)" != "$(run_id_of g)" ] || fail "round $round: f and g share a run id"
    check_status f
    check_status g
    check_logs
    no_procs
done
pass "two features with the same ids, rushed at once 5 times: own results, status and logs"
echo "$TESTS_PASSED passed, 0 failed"
