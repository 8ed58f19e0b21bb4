#!/bin/sh
# install-agent.sh - installs a pinned agent CLI for the agent tests.
#   scripts/install-agent.sh claude|codex|gemini   # prints the binary's path last
# The CLI comes from the npm registry into a cache directory,
# ${ZERG_TOOLS_DIR:-$HOME/.cache/zerg-tools}/NAME-VERSION, and is reused
# while `BIN --version` there prints the pinned version, so a second run
# costs a process start, not a download.  The versions are pinned because
# docs/wiki/Agents.md and the test fixtures record what exactly these
# versions print; a new version is a deliberate change of all three.
# Exits 1 with a message when npm is missing or the install fails.
set -eu

die() {
    echo "install-agent.sh: $*" >&2
    exit 1
}

case "${1:-}" in
claude) version=2.1.332 package=@anthropic-ai/claude-code name=claude-code bin=claude ;;
codex) version=0.171.0 package=@openai/codex name=codex bin=codex ;;
gemini) version=0.61.0 package=@google/gemini-cli name=gemini-cli bin=gemini ;;
*) die "usage: install-agent.sh claude|codex|gemini" ;;
esac

tools=${ZERG_TOOLS_DIR:-${HOME:-/root}/.cache/zerg-tools}
dir="$tools/$name-$version"
path="$dir/node_modules/.bin/$bin"

# installed: true when the cached binary answers with the pinned version
# (claude prints "2.1.332 (Claude Code)", codex "codex-cli 0.171.0").
installed() {
    [ -x "$path" ] || return 1
    out=$("$path" --version 2>/dev/null) || return 1
    case " $out " in
    *" $version "*) return 0 ;;
    esac
    return 1
}

if installed; then
    echo "$path"
    exit 0
fi

command -v npm >/dev/null 2>&1 ||
    die "npm is not installed; run: scripts/install-deps.sh test (Debian: apt-get install nodejs npm)"

mkdir -p "$dir" || die "cannot create $dir"
# A package.json of its own keeps npm from walking up to an unrelated
# project; native executables come in optional dependencies, which npm
# installs with the package.
[ -f "$dir/package.json" ] ||
    printf '{"name":"zerg-%s","private":true}\n' "$name" > "$dir/package.json"
echo "Installing $package@$version into $dir" >&2
if ! (cd "$dir" && npm install --no-audit --no-fund --loglevel=error \
    "$package@$version" >&2); then
    die "npm install $package@$version failed (is the npm registry reachable?)"
fi
installed ||
    die "$path does not print version $version after the install"
echo "$path"
