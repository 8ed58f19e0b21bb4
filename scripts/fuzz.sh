#!/usr/bin/env bash
# fuzz.sh - runs the libFuzzer targets of the config and graph loaders.
#   scripts/fuzz.sh BUILD_DIR SECONDS
# Each target runs for SECONDS on a copy of its committed seed corpus
# (tests/fuzz/corpus/<name>/) in a temp dir, so new inputs never dirty the
# tree.  Prints one summary line per target; exits 1 if any target found a
# crash, leak, timeout or out-of-memory, naming the saved input, which is
# kept under BUILD_DIR/fuzz-artifacts/ with the full log next to it.
set -euo pipefail

targets="fuzz_config fuzz_graph"

usage() {
    echo "usage: $0 BUILD_DIR SECONDS" >&2
    exit 2
}
[ $# -eq 2 ] || usage
# 0 would mean "no limit" to libFuzzer.
case $2 in '' | *[!0-9]* | 0) usage ;; esac
build=$(cd "$1" 2>/dev/null && pwd) || {
    echo "fuzz: no build directory '$1' (run: make fuzz)" >&2
    exit 1
}
seconds=$2
root=$(cd "$(dirname "$0")/.." && pwd)

# Fail before fuzzing anything if a target was not built: a missing binary
# must never read as "no crashes found".
for t in $targets; do
    if [ ! -x "$build/tests/fuzz/$t" ]; then
        echo "fuzz: $build/tests/fuzz/$t is missing; configure with" \
            "CC=clang -DZERG_FUZZ=ON and build target $t" >&2
        exit 1
    fi
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/zerg-fuzz.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Prints "execs=N cov=N ft=N corpus=N" from a libFuzzer log: the last
# status line has the coverage, -print_final_stats the exec count.
summarize() {
    awk '/^stat::number_of_executed_units:/ { execs = $2 }
         / cov: [0-9]/ {
             for (i = 1; i < NF; i++) {
                 if ($i == "cov:") cov = $(i + 1)
                 if ($i == "ft:") ft = $(i + 1)
                 if ($i == "corp:") { corp = $(i + 1); sub("/.*", "", corp) }
             }
         }
         END {
             printf "execs=%s cov=%s ft=%s corpus=%s\n", execs ? execs : "?",
                    cov ? cov : "?", ft ? ft : "?", corp ? corp : "?"
         }' "$1"
}

# Runs one target; returns non-zero when it found something.
run_target() {
    local t=$1 name=${1#fuzz_}
    local seeds=$root/tests/fuzz/corpus/$name
    local corpus=$tmp/corpus-$name log=$tmp/$t.log
    local artifacts=$build/fuzz-artifacts/$t
    if [ ! -d "$seeds" ]; then
        echo "fuzz: $t: no seed corpus at $seeds" >&2
        return 1
    fi
    mkdir -p "$corpus" "$artifacts"
    cp -R "$seeds/." "$corpus/"
    local rc=0
    "$build/tests/fuzz/$t" -max_total_time="$seconds" -max_len=65536 \
        -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts/" "$corpus" >"$log" 2>&1 || rc=$?
    if [ "$rc" -eq 0 ]; then
        echo "fuzz: $t: ok, ${seconds}s, $(summarize "$log")"
        return 0
    fi
    cp "$log" "$artifacts/$t.log"
    local input
    input=$(sed -n 's/.*Test unit written to //p' "$log" | tail -1)
    echo "fuzz: $t: FAILED (exit $rc), $(summarize "$log")" >&2
    # The report: from the sanitizer's first line to its SUMMARY line
    # (the stack is in between), at most 60 lines; the log has the rest.
    local report
    report=$(awk '/^==[0-9]+== ?ERROR|runtime error:/ { on = 1 }
                  on && n++ < 60 { print }
                  on && /^SUMMARY:/ { exit }' "$log")
    [ -n "$report" ] || report=$(tail -20 "$log")
    printf '%s\n' "$report" >&2
    echo "fuzz: $t: crashing input: ${input:-none saved}" >&2
    echo "fuzz: $t: full log: $artifacts/$t.log" >&2
    [ -n "$input" ] && echo "fuzz: $t: reproduce: $build/tests/fuzz/$t $input" >&2
    return 1
}

failed=""
for t in $targets; do
    run_target "$t" || failed="$failed $t"
done
if [ -n "$failed" ]; then
    echo "fuzz: FAILED:$failed" >&2
    exit 1
fi
