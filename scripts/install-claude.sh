#!/bin/sh
# install-claude.sh - installs the pinned Claude Code CLI for the agent tests.
#   scripts/install-claude.sh          # prints the path of `claude` last
# The CLI comes from the npm registry into a cache directory,
# ${ZERG_TOOLS_DIR:-$HOME/.cache/zerg-tools}/claude-code-VERSION, and is
# reused while `claude --version` there prints the pinned version, so a
# second run costs a process start, not a 400 MB download.  The version is
# pinned because docs/wiki/Agents.md and tests/fixtures/claude/ record what
# exactly this version prints; a new version is a deliberate change of all
# three.  Exits 1 with a message when npm is missing or the install fails.
set -eu

version=2.1.332
package="@anthropic-ai/claude-code@$version"
tools=${ZERG_TOOLS_DIR:-${HOME:-/root}/.cache/zerg-tools}
dir="$tools/claude-code-$version"
bin="$dir/node_modules/.bin/claude"

die() {
    echo "install-claude.sh: $*" >&2
    exit 1
}

# installed: true when the cached binary answers with the pinned version.
installed() {
    [ -x "$bin" ] || return 1
    out=$("$bin" --version 2>/dev/null) || return 1
    case "$out" in
    "$version "* | "$version") return 0 ;;
    esac
    return 1
}

if installed; then
    echo "$bin"
    exit 0
fi

command -v npm >/dev/null 2>&1 ||
    die "npm is not installed; run: scripts/install-deps.sh test (Debian: apt-get install nodejs npm)"

mkdir -p "$dir" || die "cannot create $dir"
# A package.json of its own keeps npm from walking up to an unrelated
# project; the native executable is in the package's optional dependency,
# which npm installs with it.
[ -f "$dir/package.json" ] ||
    printf '{"name":"zerg-claude-code","private":true}\n' > "$dir/package.json"
echo "Installing $package into $dir" >&2
if ! (cd "$dir" && npm install --no-audit --no-fund --loglevel=error \
    "$package" >&2); then
    die "npm install $package failed (is the npm registry reachable?)"
fi
installed ||
    die "$bin does not print version $version after the install"
echo "$bin"
