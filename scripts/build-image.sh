#!/bin/sh
# build-image.sh - builds the zerg-worker container image offline.
#
#   scripts/build-image.sh build/zerg            # image "zerg-worker"
#   ZERG_IMAGE=my-worker scripts/build-image.sh build-check/zerg
#
# The image is made FROM scratch out of files already on this machine, so
# it needs no registry: busybox-static for /bin/sh and the usual commands,
# the zerg binary at /usr/local/bin/zerg, every shared library `ldd` lists
# for it (sanitizer runtimes included) plus the dynamic loader, minimal
# /etc/passwd and /etc/group, and /tmp.  The image carries the binary's
# SHA-256 in the label zerg.binary.sha256, so callers can tell whether it
# is current.
#
# The runtime is $ZERG_RUNTIME if set, else the first of podman and docker
# whose `info` answers (docker: the daemon DOCKER_HOST names, or the
# default one).  On CI-like hosts point CONTAINERS_CONF at
# tests/containers.conf for Podman (see docs/wiki/Container-Mode.md).
#
# git is copied in the same way, for worktree isolation.
#
# For an image with real task tools (compilers, the Claude CLI), build
# docker/Containerfile instead; see the comments in it.
set -eu

die() {
    echo "build-image.sh: $*" >&2
    exit 1
}

[ $# -eq 1 ] || die "usage: $0 PATH/TO/zerg   (image name: \$ZERG_IMAGE, default zerg-worker)"
bin=$1
image=${ZERG_IMAGE:-zerg-worker}
busybox=${ZERG_BUSYBOX:-/bin/busybox}

[ -x "$bin" ] || die "$bin: no such executable (build zerg first: make build)"
[ -x "$busybox" ] ||
    die "$busybox not found: install busybox-static (scripts/install-deps.sh container)"
if ldd "$busybox" >/dev/null 2>&1; then
    die "$busybox is dynamically linked: install busybox-static, not busybox"
fi

# --- the runtime: one that really answers, not just a binary on PATH ---
pick_runtime() {
    for rt in ${ZERG_RUNTIME:-podman docker}; do
        command -v "$rt" >/dev/null 2>&1 || continue
        if timeout 20 "$rt" info >/dev/null 2>&1; then
            echo "$rt"
            return 0
        fi
        echo "build-image.sh: $rt found but \`$rt info\` fails; skipping it" >&2
    done
    return 1
}
rt=$(pick_runtime) ||
    die "no working container runtime (tried: ${ZERG_RUNTIME:-podman docker}); install Podman or Docker: scripts/install-deps.sh container (Docker also needs its daemon running)"

work=$(mktemp -d "${TMPDIR:-/tmp}/zerg-image.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
root=$work/rootfs
mkdir -p "$root/bin" "$root/usr/bin" "$root/usr/local/bin" "$root/etc" \
         "$root/tmp" "$root/workspace" "$root/root"
chmod 1777 "$root/tmp"

# --- busybox: /bin/sh and every applet as a symlink ---
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
done

# --- zerg and its shared libraries, at the paths the loader expects ---
cp "$bin" "$root/usr/local/bin/zerg"
chmod 0755 "$root/usr/local/bin/zerg"
# A static build (or a script) has no libraries to copy.
if ! libs=$(ldd "$bin" 2>&1); then
    case $libs in
    *"not a dynamic executable"* | *"statically linked"*) libs="" ;;
    *) die "ldd $bin failed: $libs" ;;
    esac
fi
if echo "$libs" | grep -q "not found"; then
    die "ldd $bin: missing libraries:
$(echo "$libs" | grep "not found")"
fi
# "libm.so.6 => /lib/.../libm.so.6 (0x..)" and "/lib64/ld-linux-x86-64.so.2
# (0x..)" name files; "linux-vdso.so.1 (0x..)" is provided by the kernel.
nlibs=0
for lib in $(echo "$libs" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }
                                  $1 ~ /^\// { print $1 }'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
    nlibs=$((nlibs + 1))
done

# --- git, for worktree isolation: the worker resets its worktree and
# commits inside the container.  The builtins zerg calls are all in the
# one binary; it is also its own exec path (/usr/lib/git-core/git). ---
if git=$(command -v git); then
    for exe in "$git" /usr/lib/git-core/git; do
        [ -x "$exe" ] || continue
        mkdir -p "$root$(dirname "$exe")"
        cp -L "$exe" "$root$exe"
        for lib in $(ldd "$exe" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }
                                        $1 ~ /^\// { print $1 }'); do
            [ -e "$root$lib" ] && continue
            mkdir -p "$root$(dirname "$lib")"
            cp -L "$lib" "$root$lib"
            nlibs=$((nlibs + 1))
        done
    done
else
    echo "build-image.sh: warning: no git here; the image cannot run worktree isolation" >&2
fi

# --- users: root, nobody, and the building user (workers run as the
# invoking user with --user UID:GID; a passwd entry gives them a name and a
# writable HOME) ---
uid=$(id -u)
gid=$(id -g)
{
    echo "root:x:0:0:root:/root:/bin/sh"
    echo "nobody:x:65534:65534:nobody:/nonexistent:/bin/false"
    [ "$uid" -eq 0 ] || echo "zerg:x:$uid:$gid:zerg worker:/tmp:/bin/sh"
} >"$root/etc/passwd"
{
    echo "root:x:0:"
    echo "nogroup:x:65534:"
    [ "$gid" -eq 0 ] || echo "zerg:x:$gid:"
} >"$root/etc/group"

sum=$(sha256sum "$bin" | cut -d' ' -f1)
cat >"$work/Containerfile" <<EOF
FROM scratch
COPY rootfs/ /
ENV PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp
WORKDIR /workspace
LABEL zerg.binary.sha256="$sum"
CMD ["zerg", "--version"]
EOF

echo "Building image '$image' with $rt from $bin ..."
if ! out=$("$rt" build --label "zerg.binary.sha256=$sum" -t "$image" \
           -f "$work/Containerfile" "$work" 2>&1); then
    echo "$out" >&2
    die "$rt build failed (see above)"
fi

# Docker prints the id as "sha256:HEX", Podman as "HEX".
id=$("$rt" image inspect --format '{{.Id}}' "$image" 2>/dev/null |
     sed 's/^sha256://' | cut -c1-12)
size=$(du -sh "$root" | cut -f1)
echo "Built image '$image' ($rt, id $id, rootfs $size):"
echo "  /usr/local/bin/zerg   $bin (sha256 $(echo "$sum" | cut -c1-16)...)"
echo "  shared libraries      $nlibs (from ldd, with the loader)"
echo "  /bin/sh + applets     $busybox"

# A smoke run: the build can succeed on hosts where running cannot.
if ver=$(timeout 60 "$rt" run --rm --pull=never "$image" zerg --version 2>&1); then
    echo "Runs: $rt run --rm $image zerg --version -> $ver"
else
    echo "build-image.sh: warning: the image was built but \`$rt run\` fails here:" >&2
    echo "  $(echo "$ver" | tail -n 1)" >&2
    echo "  On hosts without CAP_SYS_RESOURCE or with hybrid cgroups (CI" >&2
    echo "  containers), set CONTAINERS_CONF=tests/containers.conf;" >&2
    echo "  see docs/wiki/Container-Mode.md, Troubleshooting." >&2
fi
