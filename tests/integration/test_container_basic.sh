#!/bin/bash
# test_container_basic.sh - the worker image and the container settings
# zerg relies on, with the real podman: the image built from $ZERG runs
# `zerg --version`; the FR-7 mounts give a worker its project, a writable
# .zerg/state and a read-only spec directory; files come out owned by the
# invoking user; labels find the containers again.  Fails (never skips)
# when podman is missing.
set -euo pipefail
. "$(dirname "$0")/lib-container.sh"

zc_setup

# --- the image runs the binary under test ---
want=$("$ZERG" --version)
got=$(zc_run --rm --init "$ZC_IMAGE" zerg --version) ||
    zc_fail "\`podman run $ZC_IMAGE zerg --version\` failed: $got"
[ "$got" = "$want" ] ||
    zc_fail "zerg --version in the image says '$got', the binary says '$want'"
zc_log "image $ZC_IMAGE runs: $got"

# --- the mounts and user the container launcher passes (FR-7) ---
proj=$(zc_project feat)
echo '{"feature":"feat","tasks":[]}' >"$proj/.gsd/specs/feat/task-graph.json"
uid=1000
gid=1000
chown -R "$uid:$gid" "$proj" 2>/dev/null || { uid=$(id -u); gid=$(id -g); }
out=$(zc_run --init --name "zerg-feat-basic-$$" \
    --label=zerg.feature=feat --label=zerg.run=basic-$$ \
    --label=zerg.worker=0 --label=zerg.epoch=1 --label="zerg.project=$proj" \
    --user="$uid:$gid" \
    --volume="$proj:/workspace" \
    --volume="$proj/.zerg/state:/workspace/.zerg/state:rw" \
    --volume="$proj/.gsd/specs/feat:/workspace/.gsd/specs/feat:ro" \
    --workdir /workspace --env=ZERG_FEATURE=feat \
    "$ZC_IMAGE" sh -c '
        cat .gsd/specs/feat/task-graph.json
        echo "state:$ZERG_FEATURE" > .zerg/state/probe
        if touch .gsd/specs/feat/written 2>/dev/null; then
            echo SPECS-WRITABLE
        fi
        echo "pwd=$(pwd) uid=$(id -u)"
    ' 2>&1) || zc_fail "the mount check container failed: $out"

case $out in
*'"feature":"feat"'*) ;;
*) zc_fail "task-graph.json is not readable inside: $out" ;;
esac
case $out in
*SPECS-WRITABLE*) zc_fail ".gsd/specs/feat is writable inside; it must be read-only" ;;
esac
case $out in
*"pwd=/workspace uid=$uid"*) ;;
*) zc_fail "expected pwd=/workspace uid=$uid inside, got: $out" ;;
esac
[ "$(cat "$proj/.zerg/state/probe")" = "state:feat" ] ||
    zc_fail ".zerg/state/probe was not written through the rw mount"
[ "$(stat -c %u:%g "$proj/.zerg/state/probe")" = "$uid:$gid" ] ||
    zc_fail ".zerg/state/probe is owned by $(stat -c %u:%g "$proj/.zerg/state/probe"), not $uid:$gid"
[ ! -e "$proj/.gsd/specs/feat/written" ] ||
    zc_fail "a file appeared in the read-only spec directory"
zc_log "mounts: graph readable, state writable, specs read-only, uid $uid"

# --- labels find it again, and it can be removed ---
names=$(zc_containers "$proj" feat)
[ "$names" = "zerg-feat-basic-$$" ] ||
    zc_fail "label lookup found '$names', expected zerg-feat-basic-$$"
podman rm -f "zerg-feat-basic-$$" >/dev/null
zc_assert_no_containers "$proj" feat

# --- a runtime failure is exit 125 with the reason on stderr ---
set +e
err=$(zc_run --rm --pull=never "$ZC_IMAGE-does-not-exist" true 2>&1)
rc=$?
set -e
[ "$rc" -eq 125 ] || zc_fail "missing image: expected exit 125, got $rc ($err)"

echo "ok: image $ZC_IMAGE, FR-7 mounts, user, labels, runtime errors"
