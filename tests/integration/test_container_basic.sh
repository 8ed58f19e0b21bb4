#!/bin/bash
# test_container_basic.sh - the worker image and the container settings
# zerg relies on, with the real runtime ($ZC_RUNTIME: podman or docker):
# the image built from $ZERG runs `zerg --version`; the mounts zerg passes
# give a worker its project, a writable run directory, logs and monitor
# files, and a read-only .zerg/ and .gsd/ (FR-7: the graph is readable,
# never writable); files come out owned by the invoking user; labels find
# the containers again.  Fails (never skips) when the runtime is missing.
set -euo pipefail
. "$(dirname "$0")/lib-container.sh"

zc_setup

# --- the image runs the binary under test ---
want=$("$ZERG" --version)
got=$(zc_run --rm --init "$ZC_IMAGE" zerg --version) ||
    zc_fail "\`$ZC_RUNTIME run $ZC_IMAGE zerg --version\` failed: $got"
[ "$got" = "$want" ] ||
    zc_fail "zerg --version in the image says '$got', the binary says '$want'"
zc_log "image $ZC_IMAGE runs: $got"

# --- the mounts and user the container launcher passes (FR-7) ---
proj=$(zc_project feat)
echo '{"feature":"feat","tasks":[]}' >"$proj/.gsd/specs/feat/task-graph.json"
mkdir -p "$proj/.zerg/state/feat" "$proj/.zerg/logs"
echo "workers: {}" >"$proj/.zerg/config.yaml"
touch "$proj/.zerg/monitor.log" "$proj/.zerg/monitor.jsonl"
uid=1000
gid=1000
chown -R "$uid:$gid" "$proj" 2>/dev/null || { uid=$(id -u); gid=$(id -g); }
out=$(zc_run --init --name "zerg-feat-basic-$$" \
    --label=zerg.feature=feat --label=zerg.run=basic-$$ \
    --label=zerg.worker=0 --label=zerg.epoch=1 --label="zerg.project=$proj" \
    --user="$uid:$gid" \
    --volume="$proj:/workspace" \
    --volume="$proj/.zerg:/workspace/.zerg:ro" \
    --volume="$proj/.zerg/state/feat:/workspace/.zerg/state/feat:rw" \
    --volume="$proj/.zerg/logs:/workspace/.zerg/logs:rw" \
    --volume="$proj/.zerg/monitor.log:/workspace/.zerg/monitor.log:rw" \
    --volume="$proj/.zerg/monitor.jsonl:/workspace/.zerg/monitor.jsonl:rw" \
    --volume="$proj/.gsd:/workspace/.gsd:ro" \
    --workdir /workspace --env=ZERG_FEATURE=feat \
    "$ZC_IMAGE" sh -c '
        cat .gsd/specs/feat/task-graph.json
        echo "state:$ZERG_FEATURE" > .zerg/state/feat/probe
        echo log > .zerg/logs/probe
        echo line >> .zerg/monitor.log
        echo work > made-by-task
        for f in .gsd/specs/feat/written .zerg/config.yaml .zerg/new \
                 .zerg/state/feat.json; do
            if touch "$f" 2>/dev/null; then echo "WRITABLE:$f"; fi
        done
        echo "pwd=$(pwd) uid=$(id -u)"
    ' 2>&1) || zc_fail "the mount check container failed: $out"

case $out in
*'"feature":"feat"'*) ;;
*) zc_fail "task-graph.json is not readable inside: $out" ;;
esac
case $out in
*WRITABLE:*) zc_fail "read-only paths are writable inside: $out" ;;
esac
case $out in
*"pwd=/workspace uid=$uid"*) ;;
*) zc_fail "expected pwd=/workspace uid=$uid inside, got: $out" ;;
esac
[ "$(cat "$proj/.zerg/state/feat/probe")" = "state:feat" ] ||
    zc_fail ".zerg/state/feat/probe was not written through the rw mount"
[ "$(stat -c %u:%g "$proj/.zerg/state/feat/probe")" = "$uid:$gid" ] ||
    zc_fail ".zerg/state/feat/probe is owned by $(stat -c %u:%g "$proj/.zerg/state/feat/probe"), not $uid:$gid"
[ "$(cat "$proj/.zerg/logs/probe")" = log ] || zc_fail ".zerg/logs is not writable inside"
[ "$(cat "$proj/.zerg/monitor.log")" = line ] || zc_fail ".zerg/monitor.log is not writable inside"
[ "$(cat "$proj/made-by-task")" = work ] || zc_fail "the project is not writable inside"
[ "$(cat "$proj/.zerg/config.yaml")" = "workers: {}" ] || zc_fail ".zerg/config.yaml changed"
[ ! -e "$proj/.gsd/specs/feat/written" ] && [ ! -e "$proj/.zerg/new" ] &&
    [ ! -e "$proj/.zerg/state/feat.json" ] ||
    zc_fail "a file appeared in a read-only directory"
zc_log "mounts: graph readable, run dir/logs/monitor writable, .zerg and .gsd read-only, uid $uid"

# --- labels find it again, and it can be removed ---
names=$(zc_containers "$proj" feat)
[ "$names" = "zerg-feat-basic-$$" ] ||
    zc_fail "label lookup found '$names', expected zerg-feat-basic-$$"
zc_rt rm -f "zerg-feat-basic-$$" >/dev/null
zc_assert_no_containers "$proj" feat

# --- a runtime failure is exit 125 with the reason on stderr ---
set +e
err=$(zc_run --rm --pull=never "$ZC_IMAGE-does-not-exist" true 2>&1)
rc=$?
set -e
[ "$rc" -eq 125 ] || zc_fail "missing image: expected exit 125, got $rc ($err)"

echo "ok: $ZC_RUNTIME: image $ZC_IMAGE, FR-7 mounts, user, labels, runtime errors"
