#!/usr/bin/env bash
# run.sh - zerg's benchmark suite (`make bench`).
#
#   bench/run.sh [--quick] [-o PAGE] [--workdir DIR] [--keep] ZERG
#
# Runs every benchmark against the zerg binary ZERG, each in scratch
# projects under DIR (default $TMPDIR; its filesystem's fsync latency is
# part of what is measured), and writes the figures into the generated
# section of PAGE.  A full run takes about 20 minutes (dag.py, the
# schedules' makespans on 70 real graphs, about 4 of them; scale.py, up to
# 100,000 tasks, about 7) and writes docs/wiki/Performance.md; --quick
# takes about 2 minutes (one repetition, 2,000 tasks; the scale curve at
# 1,000 and 10,000) and, unless -o is given, writes its page into the
# results directory instead, so quick figures never replace full ones by
# accident.
#
# A benchmark that fails is reported on the page and in the exit status
# (1); the others still run.  Each benchmark also runs alone, e.g.
# `bench/dispatch.py build/zerg --quick` (see the top of each file).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PAGE=""
QUICK=()
PASS=()
usage() {
    sed -n '4,5p' "$0" | sed 's/^# *//' >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --quick) QUICK=(--quick) ;;
    -o) [ $# -ge 2 ] || usage; PAGE=$2; shift ;;
    --workdir) [ $# -ge 2 ] || usage; PASS+=(--workdir "$2"); shift ;;
    --keep) PASS+=(--keep) ;;
    -h | --help) usage ;;
    -*) echo "run.sh: unknown option $1" >&2; usage ;;
    *) break ;;
    esac
    shift
done
[ $# -eq 1 ] || usage
ZERG=$1
[ -x "$ZERG" ] || { echo "run.sh: $ZERG is not an executable (run \`make build\` first)" >&2; exit 2; }

# Debian's python3 (standard library only); any python3 as a fallback.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
for tool in xargs make df; do
    command -v "$tool" >/dev/null || { echo "run.sh: $tool is missing" >&2; exit 2; }
done

export PYTHONDONTWRITEBYTECODE=1
RESULTS=$(mktemp -d "${TMPDIR:-/tmp}/zerg-bench-results-XXXXXX")
TEMPLATE="$HERE/../docs/wiki/Performance.md"
if [ -z "$PAGE" ]; then
    if [ ${#QUICK[@]} -gt 0 ]; then
        PAGE="$RESULTS/Performance.md"
        cp "$TEMPLATE" "$PAGE"
    else
        PAGE=$TEMPLATE
    fi
fi

start=$(date +%s)
failed=()
for bench in machine cpu stream dispatch scale reconcile kill stale dag; do
    echo "== $bench"
    t0=$(date +%s)
    if ! "$PY" "$HERE/$bench.py" "$ZERG" ${QUICK[@]+"${QUICK[@]}"} \
        ${PASS[@]+"${PASS[@]}"} --out "$RESULTS/$bench.json"; then
        failed+=("$bench")
        [ -s "$RESULTS/$bench.json" ] ||
            printf '{"error": "bench/%s.py exited with an error; see its output"}\n' \
                "$bench" > "$RESULTS/$bench.json"
    fi
    echo "   ($(( $(date +%s) - t0 )) s)"
done

"$PY" "$HERE/render.py" "$RESULTS" "$PAGE"
echo "== wrote $PAGE ($(( $(date +%s) - start )) s in all; raw results in $RESULTS)"
if [ ${#failed[@]} -gt 0 ]; then
    echo "run.sh: failed: ${failed[*]}" >&2
    exit 1
fi
