# lib-container.sh - sourced by the container integration tests.
#
#   . "$(dirname "$0")/lib-container.sh"
#   zc_setup                      # podman works (or exit 1), image is built
#   proj=$(zc_project auth)       # temp project for feature "auth"
#   zc_config "$proj" 'memory: "256m"'   # container mode config (+ extra keys)
#   zc_containers "$proj" auth    # names of the feature's containers
#   zc_run --rm "$ZC_IMAGE" zerg --version   # podman run with our settings
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
# Every project made by zc_project is removed at exit, with the containers
# labelled for it.

: "${ZERG:?set ZERG to the zerg binary under test}"
ZERG_SOURCE_DIR=${ZERG_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export CONTAINERS_CONF="$ZERG_SOURCE_DIR/tests/containers.conf"
ZC_RUNTIME=podman
ZC_IMAGE=${ZERG_TEST_IMAGE:-zerg-worker-test}
ZC_DIRS=()

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
    trap zc_teardown EXIT
}

# podman run with the test settings; arguments as for `podman run`.
zc_run() {
    timeout 120 podman run "$@"
}

# Makes a temp project with .gsd/specs/FEATURE/ and .zerg/state/; prints
# its absolute path.  A task graph can be written there by the test.
zc_project() {
    local feature=$1 dir
    dir=$(mktemp -d "${TMPDIR:-/tmp}/zerg-ct.XXXXXX")
    mkdir -p "$dir/.gsd/specs/$feature" "$dir/.zerg/state"
    echo "$feature" >"$dir/.gsd/.current-feature"
    ZC_DIRS+=("$dir")
    echo "$dir"
}

# Writes .zerg/config.yaml for container mode with the test image; extra
# arguments are more lines for the container: section.
zc_config() {
    local dir=$1
    shift
    {
        echo "workers:"
        echo "  mode: container"
        echo "container:"
        echo "  runtime: $ZC_RUNTIME"
        echo "  image: $ZC_IMAGE"
        for line in "$@"; do
            echo "  $line"
        done
    } >"$dir/.zerg/config.yaml"
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

zc_teardown() {
    local rc=$? dir name
    for dir in "${ZC_DIRS[@]}"; do
        for name in $(podman ps -a --filter "label=zerg.project=$dir" \
                          --format '{{.Names}}' 2>/dev/null); do
            podman rm -f "$name" >/dev/null 2>&1 || true
        done
        rm -rf "$dir"
    done
    exit "$rc"
}
