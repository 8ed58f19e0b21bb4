# lib-container.sh - sourced by the container integration tests, alone or
# after lib.sh (whose project and rush helpers it complements):
#
#   . "$(dirname "$0")/lib.sh"              # optional: new_project, rush_bg
#   . "$(dirname "$0")/lib-container.sh"
#   zc_setup                      # the runtime works (or exit 1), image built
#   proj=$(zc_project auth)       # a bare project for feature "auth", or
#   new_project p1; proj=$PROJ    # lib.sh's project with its fast timings
#   zc_config "$proj" 'memory: "256m"'   # container: section (+ extra keys)
#   "$ZERG" -C "$proj" rush --mode container ...
#   zc_containers "$proj" auth    # names of the feature's containers
#   zc_assert_no_containers "$proj" auth
#   zc_run --rm "$ZC_IMAGE" zerg --version   # RUNTIME run, test settings
#   zc_rt ps -a                   # the runtime CLI, pointed at the test engine
#   PATH=$(zc_path_without docker) "$ZERG" ...   # as if docker were absent
#
# Needs $ZERG (the zerg binary under test; ctest sets it) and finds the
# source tree from $ZERG_SOURCE_DIR or from this file's location.
# Container tests never skip: a missing or broken runtime is a failure with
# the command that fixes it.
#
# The runtime is $ZC_RUNTIME: podman (the default) or docker; ctest runs
# every test_container_*.sh once with each.
#
#   podman   CONTAINERS_CONF=tests/containers.conf (runc, fixed ulimits:
#            the settings CI-like hosts need, see that file).  The image is
#            built by scripts/build-image.sh once per binary: the label
#            zerg.binary.sha256 is compared with the binary's checksum, and
#            a lock serializes parallel tests.
#   docker   a private dockerd for this test alone (its own data root, exec
#            root, pid file and unix socket in a temp dir; no bridge, no
#            iptables rules, its own containerd namespace), DOCKER_HOST
#            pointing at it, so zerg's `docker` calls reach it through the
#            environment.  The image is built with it once per binary and
#            saved under the build dir; later tests `docker load` it.  The
#            daemon is stopped and its directory removed at exit.
#
#   ZC_IMAGE         $ZERG_TEST_IMAGE or zerg-worker-test
# At exit, every container whose zerg.project label lies under this test's
# temp roots ($ZC_TMP, and lib.sh's $TEST_ROOT) is removed, then the exit
# handler that was installed before (lib.sh's) runs with the same status.

: "${ZERG:?set ZERG to the zerg binary under test}"
ZERG_SOURCE_DIR=${ZERG_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export CONTAINERS_CONF="$ZERG_SOURCE_DIR/tests/containers.conf"
ZC_RUNTIME=${ZC_RUNTIME:-podman}
ZC_IMAGE=${ZERG_TEST_IMAGE:-zerg-worker-test}
ZC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/zerg-ct.XXXXXX")
ZC_DOCKERD=""  # the private daemon's directory, while it runs

zc_fail() {
    echo "FAIL: $(basename "$0") [$ZC_RUNTIME]: $*" >&2
    exit 1
}

zc_log() {
    echo "# $*" >&2
}

case $ZC_RUNTIME in
podman | docker) ;;
*) zc_fail "ZC_RUNTIME=$ZC_RUNTIME: use podman or docker" ;;
esac

# The runtime CLI with the test settings (DOCKER_HOST / CONTAINERS_CONF
# are in the environment).
zc_rt() {
    "$ZC_RUNTIME" "$@"
}

zc_need() {
    command -v "$1" >/dev/null 2>&1 ||
        zc_fail "$1 is not installed; the $ZC_RUNTIME container tests need it (they are never skipped). Install: scripts/install-deps.sh container"
}

zc_require_podman() {
    zc_need podman
    zc_need runc # tests/containers.conf selects it
    local err
    err=$(timeout 30 podman info 2>&1 >/dev/null) ||
        zc_fail "\`podman info\` fails with CONTAINERS_CONF=$CONTAINERS_CONF: $err"
}

# ---- docker: a private daemon ----

# Stops the daemon of directory $1 and removes the directory.
zc_dockerd_down() {
    local dir=$1 pid i
    pid=$(cat "$dir/docker.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
        for i in $(seq 1 150); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    # Its containerd, should the daemon have died without stopping it.
    pid=$(cat "$dir/exec/containerd/containerd.pid" 2>/dev/null || true)
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    # Mounts it may have left (overlays, netns): never delete through them.
    awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts |
        sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
    rm -rf "$dir" 2>/dev/null || true
}

zc_dockerd_stop() {
    [ -n "$ZC_DOCKERD" ] || return 0
    zc_dockerd_down "$ZC_DOCKERD"
    ZC_DOCKERD=""
}

# Daemon directories of tests that were killed before their exit handler
# ran (a ctest timeout): their owner is gone.
zc_dockerd_reap() {
    local dir owner
    for dir in /tmp/zerg-dockerd.*; do
        [ -d "$dir" ] || continue
        owner=$(cat "$dir/owner" 2>/dev/null || true)
        [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null || continue
        zc_log "removing the daemon of a killed test: $dir"
        zc_dockerd_down "$dir"
    done
}

zc_dockerd_start() {
    local dir i
    zc_need docker
    zc_need dockerd
    zc_need containerd
    zc_need runc
    zc_need setpriv
    # A unix socket path must stay short: the directory is in /tmp.
    zc_dockerd_reap
    dir=$(mktemp -d /tmp/zerg-dockerd.XXXXXX)
    ZC_DOCKERD=$dir
    echo $$ >"$dir/owner"
    # The daemon gets SIGTERM (and stops its containers) should this shell
    # be killed without running its exit handler.
    setpriv --pdeathsig TERM dockerd --data-root "$dir/data" --exec-root "$dir/exec" \
        --pidfile "$dir/docker.pid" -H "unix://$dir/docker.sock" \
        --containerd-namespace "zerg-test-$$" \
        --containerd-plugins-namespace "zerg-test-$$-plugins" \
        --bridge=none --iptables=false --ip-masq=false --ip-forward=false \
        --userland-proxy=false >"$dir/dockerd.log" 2>&1 </dev/null &
    export DOCKER_HOST="unix://$dir/docker.sock"
    for i in $(seq 1 300); do
        timeout 10 docker info >/dev/null 2>&1 && break
        [ -f "$dir/docker.pid" ] || kill -0 $! 2>/dev/null ||
            zc_fail "dockerd exited at start: $(tail -n 5 "$dir/dockerd.log")"
        sleep 0.1
    done
    timeout 10 docker info >/dev/null 2>&1 ||
        zc_fail "the private dockerd did not answer within 30 s: $(tail -n 5 "$dir/dockerd.log")"
    zc_log "private dockerd up at $DOCKER_HOST"
}

# ---- the image ----

# The checksum label of the image, "" when the image does not exist.
zc_image_sum() {
    local fmt='{{index .Labels "zerg.binary.sha256"}}'
    [ "$ZC_RUNTIME" = docker ] && fmt='{{index .Config.Labels "zerg.binary.sha256"}}'
    zc_rt image inspect --format "$fmt" "$ZC_IMAGE" 2>/dev/null || true
}

zc_build() {
    ZERG_IMAGE=$ZC_IMAGE ZERG_RUNTIME=$ZC_RUNTIME \
        "$ZERG_SOURCE_DIR/scripts/build-image.sh" "$ZERG" >&2 ||
        zc_fail "scripts/build-image.sh $ZERG failed (output above)"
}

# Podman's store is shared by every test: build in place, under a lock.
zc_build_podman() {
    local sum=$1 lock=${TMPDIR:-/tmp}/zerg-test-image.lock
    (
        flock -w 600 9 || zc_fail "timed out waiting for $lock"
        if [ "$(zc_image_sum)" = "$sum" ]; then
            zc_log "image $ZC_IMAGE is current for $ZERG"
            exit 0
        fi
        zc_build
    ) 9>"$lock" || exit 1
}

# Each docker test has a fresh daemon: the first one builds the image and
# saves it under the build dir, the others load that archive.
zc_build_docker() {
    local sum=$1 cache tar
    cache=${ZERG_BUILD_DIR:-${TMPDIR:-/tmp}}/test-images
    mkdir -p "$cache"
    tar=$cache/$ZC_IMAGE-docker-$sum.tar
    (
        flock -w 600 9 || zc_fail "timed out waiting for $cache/lock"
        if [ -s "$tar" ] && docker load -i "$tar" >/dev/null 2>&1 &&
            [ "$(zc_image_sum)" = "$sum" ]; then
            zc_log "image $ZC_IMAGE loaded from $tar"
            exit 0
        fi
        zc_build
        rm -f "$cache/$ZC_IMAGE"-docker-*.tar
        docker save -o "$tar.tmp" "$ZC_IMAGE" && mv "$tar.tmp" "$tar" ||
            zc_fail "docker save $ZC_IMAGE failed"
    ) 9>"$cache/lock" || exit 1
}

zc_build_image() {
    local sum
    [ -x "$ZERG" ] || zc_fail "ZERG=$ZERG is not an executable"
    sum=$(sha256sum "$ZERG" | cut -d' ' -f1)
    "zc_build_$ZC_RUNTIME" "$sum"
    [ "$(zc_image_sum)" = "$sum" ] ||
        zc_fail "image $ZC_IMAGE does not carry the checksum of $ZERG after the build"
}

zc_setup() {
    if [ "$ZC_RUNTIME" = docker ]; then
        zc_dockerd_start
    else
        zc_require_podman
    fi
    zc_build_image
}

# RUNTIME run with the test settings; arguments as for `run`.
zc_run() {
    timeout 120 "$ZC_RUNTIME" run "$@"
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
    zc_rt ps -a --filter "label=zerg.feature=$2" \
        --filter "label=zerg.project=$1" --format '{{.Names}}'
}

# Fails unless project DIR has no container left for FEATURE.
zc_assert_no_containers() {
    local left
    left=$(zc_containers "$1" "$2")
    [ -z "$left" ] || zc_fail "containers left behind for $2: $left"
}

# A temp dir standing for $PATH without the named programs: links to every
# program on $PATH (the first of each name, as PATH lookup finds it) but
# those.  For PATH=$(zc_path_without docker), docker is absent.
zc_path_without() {
    local dir d prog
    dir=$(mktemp -d "$ZC_TMP/path.XXXXXX")
    local IFS=:
    for d in $PATH; do
        [ -d "$d" ] && ln -s "$d"/* "$dir"/ 2>/dev/null || true
    done
    for prog in "$@"; do
        rm -f "$dir/$prog"
    done
    echo "$dir"
}

# Removes every zerg container whose project lies under one of our roots.
zc_remove_containers() {
    local name project root fmt='{{.Names}} {{index .Labels "zerg.project"}}'
    [ "$ZC_RUNTIME" = docker ] && fmt='{{.Names}} {{.Label "zerg.project"}}'
    zc_rt ps -a --filter label=zerg.project --format "$fmt" 2>/dev/null |
        while read -r name project; do
            for root in "$ZC_TMP" "${TEST_ROOT:-}"; do
                [ -n "$root" ] || continue
                case $project in
                "$root"/*) zc_rt rm -f "$name" >/dev/null 2>&1 || true ;;
                esac
            done
        done
}

# The exit handler installed before this file (lib.sh's on_exit), if any.
ZC_PREV_EXIT=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
zc_teardown() {
    local rc=$?
    set +e # cleanup is best effort; the test's status is rc
    if [ "$ZC_RUNTIME" = podman ] || [ -n "$ZC_DOCKERD" ]; then
        zc_remove_containers
    fi
    zc_dockerd_stop
    rm -rf "$ZC_TMP"
    if [ -n "$ZC_PREV_EXIT" ]; then
        (exit "$rc")
        eval "$ZC_PREV_EXIT"
    fi
    exit "$rc"
}
trap zc_teardown EXIT
