#!/bin/sh
# check-format.sh - fails when a tracked C file is not as .clang-format
# says (`make check` runs it first, so CI holds the whole tree to it).
# `clang-format -i FILE` fixes one; `make format` all of them.
set -eu
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null 2>&1 || {
    echo "check-format: clang-format is missing (scripts/install-deps.sh test installs it)" >&2
    exit 1
}
bad=$(git ls-files '*.c' '*.h' | while read -r f; do
    clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [ -n "$bad" ]; then
    echo "check-format: not formatted as .clang-format says (clang-format -i FILE, or make format):" >&2
    echo "$bad" | sed 's/^/  /' >&2
    exit 1
fi
echo "check-format: $(git ls-files '*.c' '*.h' | wc -l) C files formatted"
