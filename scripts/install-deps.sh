#!/bin/sh
# install-deps.sh - installs the Debian packages zerg needs, if missing.
#   scripts/install-deps.sh build     # to build zerg
#   scripts/install-deps.sh test      # + what the test suite needs
#   scripts/install-deps.sh container # + Podman and Docker, for container mode
# As root it runs apt-get; otherwise it prints the exact command to run.
set -eu

build="build-essential cmake pkg-config git liblua5.4-dev libyajl-dev libyaml-dev libedit-dev"
# libclang-rt-dev: libFuzzer and the sanitizer runtimes (clang only
# recommends it, and recommends are not installed here).
test="$build libcmocka-dev clang clang-format libclang-rt-dev python3 ninja-build procps util-linux chromium tmux nodejs npm slurm-wlm"
# Podman is installed with its recommends, as documented for these
# machines (catatonit for `run --init`, netavark/iptables for the default
# network, uidmap, fuse-overlayfs); the ones zerg relies on are also
# listed so that a Podman installed without them gets them.  docker.io
# brings dockerd, containerd, runc and docker-init (tini for `run --init`);
# the test suite starts its own private daemon, so no service is needed.
container="$test podman runc busybox-static catatonit iptables docker.io containerd"

case "${1:-build}" in
build) want=$build ;;
test) want=$test ;;
container) want=$container ;;
*) echo "usage: $0 build|test|container" >&2; exit 2 ;;
esac

# A Node.js from elsewhere (NodeSource's nodejs package bundles npm and
# conflicts with Debian's) satisfies nodejs and npm by its commands.
have_command() {
    case $1 in
    nodejs) command -v node >/dev/null 2>&1 ;;
    npm) command -v npm >/dev/null 2>&1 ;;
    *) return 1 ;;
    esac
}

missing=""
for p in $want; do
    have_command "$p" && continue
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "zerg needs these Debian packages:$missing" >&2
    echo "Run: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "Installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Podman with its recommends (see above); everything else, Docker included
# (whose recommends are apparmor, git, needrestart and the like), without.
with="" without=""
for p in $missing; do
    case "${1:-build}:$p" in
    container:podman | container:catatonit) with="$with $p" ;;
    *) without="$without $p" ;;
    esac
done
# shellcheck disable=SC2086
[ -z "$with" ] || apt-get install -y -qq $with >/dev/null
# shellcheck disable=SC2086
[ -z "$without" ] || apt-get install -y -qq --no-install-recommends $without >/dev/null
