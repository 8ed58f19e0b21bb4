# lib-container.sh - sourced by the container integration tests, alone or
# after lib.sh (whose project and rush helpers it complements):
#
#   . "$(dirname "$0")/lib.sh"              # optional: new_project, rush_bg
#   . "$(dirname "$0")/lib-container.sh"
#   zc_setup                      # podman works (or exit 1), image is built
#   proj=$(zc_project auth)       # a bare project for feature "auth", or
#   new_project p1; proj=$PROJ    # lib.sh's project with its fast timings
#   zc_config "$proj" 'memory: "256m"'   # container: section (+ extra keys)
#   "$ZERG" -C "$proj" rush --mode container ...
#   zc_containers "$proj" auth    # names of the feature's containers
#   zc_assert_no_containers "$proj" auth
#   zc_run --rm "$ZC_IMAGE" zerg --version   # podman run, test settings
#
# Needs $ZERG (the zerg binary under test; ctest sets it) and finds the
# source tree from $ZERG_SOURCE_DIR or from this file's location.
# Container tests never skip: a missing or broken podman is a failure with
# the command that fixes it.
#
# What it sets up:
#   CONTAINERS_CONF  tests/containers.conf (runc, fixed ulimits: the
#                    settings CI-like hosts need, see that file)
#   ZC_RUNTIME       podman
#   ZC_IMAGE         $ZERG_TEST_IMAGE or zerg-worker-test, built from $ZERG
#                    by scripts/build-image.sh once per binary: the image
#                    label zerg.binary.sha256 is compared with the binary's
#                    checksum, and a lock serializes parallel tests.
# At exit, every container whose zerg.project label lies under this test's
# temp roots ($ZC_TMP, and lib.sh's $TEST_ROOT) is removed, then the exit
# handler that was installed before (lib.sh's) runs with the same status.

: "${ZERG:?set ZERG to the zerg binary under test}"
ZERG_SOURCE_DIR=${ZERG_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export CONTAINERS_CONF="$ZERG_SOURCE_DIR/tests/containers.conf"
ZC_RUNTIME=podman
ZC_IMAGE=${ZERG_TEST_IMAGE:-zerg-worker-test}
ZC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/zerg-ct.XXXXXX")

zc_fail() {
    echo "FAIL: $(basename "$0"): $*" >&2
    exit 1
}

zc_log() {
    echo "# $*" >&2
}

zc_require_podman() {
    command -v podman >/dev/null 2>&1 ||
        zc_fail "podman is not installed; container tests need it (they are never skipped). Install: scripts/install-deps.sh container"
    command -v runc >/dev/null 2>&1 ||
        zc_fail "runc is not installed (tests/containers.conf selects it). Install: scripts/install-deps.sh container"
    local err
    err=$(timeout 30 podman info 2>&1 >/dev/null) ||
        zc_fail "\`podman info\` fails with CONTAINERS_CONF=$CONTAINERS_CONF: $err"
}

# The checksum label of the image, "" when the image does not exist.
zc_image_sum() {
    podman image inspect --format '{{index .Labels "zerg.binary.sha256"}}' \
        "$ZC_IMAGE" 2>/dev/null || true
}

zc_build_image() {
    local sum lock
    [ -x "$ZERG" ] || zc_fail "ZERG=$ZERG is not an executable"
    sum=$(sha256sum "$ZERG" | cut -d' ' -f1)
    lock=${TMPDIR:-/tmp}/zerg-test-image.lock
    (
        flock -w 600 9 || zc_fail "timed out waiting for $lock"
        if [ "$(zc_image_sum)" = "$sum" ]; then
            zc_log "image $ZC_IMAGE is current for $ZERG"
            exit 0
        fi
        ZERG_IMAGE=$ZC_IMAGE ZERG_RUNTIME=podman \
            "$ZERG_SOURCE_DIR/scripts/build-image.sh" "$ZERG" >&2 ||
            zc_fail "scripts/build-image.sh $ZERG failed (output above)"
    ) 9>"$lock" || exit 1
    [ "$(zc_image_sum)" = "$sum" ] ||
        zc_fail "image $ZC_IMAGE does not carry the checksum of $ZERG after the build"
}

zc_setup() {
    zc_require_podman
    zc_build_image
}

# podman run with the test settings; arguments as for `podman run`.
zc_run() {
    timeout 120 podman run "$@"
}

# Makes a bare temp project with .gsd/specs/FEATURE/ and .zerg/state/;
# prints its absolute path.  The test writes the task graph.
zc_project() {
    local feature=$1 dir
    dir=$(mktemp -d "$ZC_TMP/$feature.XXXXXX")
    mkdir -p "$dir/.gsd/specs/$feature" "$dir/.zerg/state"
    echo "$feature" >"$dir/.gsd/.current-feature"
    echo "$dir"
}

# Puts a container: section with the test runtime and image (and any
# further "key: value" lines given) at the top of DIR/.zerg/config.yaml,
# keeping what is there, so lib.sh's config_append still extends workers:.
zc_config() {
    local dir=$1 cfg rest=""
    shift
    cfg=$dir/.zerg/config.yaml
    mkdir -p "$dir/.zerg"
    [ -f "$cfg" ] && rest=$(cat "$cfg")
    {
        echo "container:"
        echo "  runtime: $ZC_RUNTIME"
        echo "  image: $ZC_IMAGE"
        for line in "$@"; do
            echo "  $line"
        done
        if [ -n "$rest" ]; then
            printf '%s\n' "$rest"
        fi
    } >"$cfg"
}

# Names of the containers zerg made for FEATURE in project DIR (any state).
zc_containers() {
    podman ps -a --filter "label=zerg.feature=$2" \
        --filter "label=zerg.project=$1" --format '{{.Names}}'
}

# Fails unless project DIR has no container left for FEATURE.
zc_assert_no_containers() {
    local left
    left=$(zc_containers "$1" "$2")
    [ -z "$left" ] || zc_fail "containers left behind for $2: $left"
}

# Removes every zerg container whose project lies under one of our roots.
zc_remove_containers() {
    local name project root
    podman ps -a --filter label=zerg.project \
        --format '{{.Names}} {{index .Labels "zerg.project"}}' 2>/dev/null |
        while read -r name project; do
            for root in "$ZC_TMP" "${TEST_ROOT:-}"; do
                [ -n "$root" ] || continue
                case $project in
                "$root"/*) podman rm -f "$name" >/dev/null 2>&1 || true ;;
                esac
            done
        done
}

# The exit handler installed before this file (lib.sh's on_exit), if any.
ZC_PREV_EXIT=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
zc_teardown() {
    local rc=$?
    set +e # cleanup is best effort; the test's status is rc
    zc_remove_containers
    rm -rf "$ZC_TMP"
    if [ -n "$ZC_PREV_EXIT" ]; then
        (exit "$rc")
        eval "$ZC_PREV_EXIT"
    fi
    exit "$rc"
}
trap zc_teardown EXIT
