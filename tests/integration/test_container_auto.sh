#!/usr/bin/env bash
# `--mode auto` / `container.runtime: auto` with the real runtimes, run once
# per $ZC_RUNTIME (podman, docker; never skipped).  A runtime is made
# absent by a PATH without it (zc_path_without):
#   - $ZC_RUNTIME alone: auto picks it, and the workers run through it;
#   - neither: auto falls back to subprocess mode and says why, while
#     `--mode container` fails loudly (exit 1) with what each one lacked;
#   - both present: auto prefers podman (docker variant: both really work;
#     an image podman lacks shows the choice without a run), and an explicit
#     `container.runtime` picks the one named.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lib-container.sh"
zc_setup

other=docker
[ "$ZC_RUNTIME" = docker ] && other=podman
set_cfg() { sed -i "s|^  $1: .*|  $1: \"$2\"|" "$PROJ/.zerg/config.yaml"; }
last_mode() { grep '"event":"mode_selected"' "$PROJ/.zerg/monitor.jsonl" | tail -1; }

# --- only $ZC_RUNTIME on PATH ---
new_project alone
zc_config "$PROJ"
set_cfg runtime auto
gen_graph 1 1 "echo in-container > where.txt"
alone=$(zc_path_without "$other")
PATH=$alone zerg rush --mode auto --workers 1 > "$PROJ/out.txt" 2>&1 ||
    fail "auto rush with only $ZC_RUNTIME exited $?: $(cat "$PROJ/out.txt")"
last_mode | grep -q "using container ($ZC_RUNTIME works and image '$ZC_IMAGE' is present)" ||
    fail "auto did not pick $ZC_RUNTIME: $(last_mode)"
grep -q "container zerg-f-.* via $ZC_RUNTIME ===" "$PROJ/.zerg/logs/f/worker-0.log" ||
    fail "the worker did not run through $ZC_RUNTIME"
[ "$(cat "$PROJ/where.txt")" = in-container ] || fail "the task did not run"
if [ "$ZC_RUNTIME" = docker ]; then
    grep -q "Mode auto: using container (docker works" "$PROJ/.zerg/monitor.log" ||
        fail "no mode_selected line for docker"
fi
zc_assert_no_containers "$PROJ" f
pass "$ZC_RUNTIME alone: auto picks it and the workers run through it"

# --- neither on PATH ---
new_project neither
zc_config "$PROJ"
set_cfg runtime auto
gen_graph 1 1 "echo subprocess > where.txt"
none=$(zc_path_without docker podman)
PATH=$none zerg rush --mode auto --workers 1 > "$PROJ/out.txt" 2>&1 ||
    fail "auto rush without runtimes exited $?: $(cat "$PROJ/out.txt")"
last_mode | grep -q "using subprocess (no working container runtime: podman: not found on PATH; docker: not found on PATH)" ||
    fail "auto without runtimes does not say why: $(last_mode)"
[ "$(cat "$PROJ/where.txt")" = subprocess ] || fail "the task did not run"
rc=0
PATH=$none zerg rush --fresh --mode container --workers 1 > "$PROJ/out.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "--mode container without runtimes: expected exit 1, got $rc"
grep -q "container mode needs a working docker or podman: no working container runtime: podman: not found on PATH; docker: not found on PATH" \
    "$PROJ/out.txt" || fail "no loud message: $(cat "$PROJ/out.txt")"
pass "neither runtime: auto falls back and says why; --mode container fails loudly"

# --- both on PATH ---
new_project both
zc_config "$PROJ"
set_cfg runtime auto
set_cfg image zerg-image-nobody-has
gen_graph 1 1 "true"
zerg rush --mode auto --workers 1 > "$PROJ/out.txt" 2>&1 ||
    fail "auto rush exited $?: $(cat "$PROJ/out.txt")"
last_mode | grep -q "using subprocess (podman works but image 'zerg-image-nobody-has' not found for podman" ||
    fail "auto with both present did not prefer podman: $(last_mode)"
if [ "$ZC_RUNTIME" = docker ]; then
    docker info > /dev/null 2>&1 && podman info > /dev/null 2>&1 ||
        fail "both runtimes should work here"
    # Named explicitly, docker is used although podman works too.
    set_cfg runtime docker
    set_cfg image "$ZC_IMAGE"
    gen_graph 1 1 "echo via-docker > where.txt"
    zerg rush --fresh --mode auto --workers 1 > "$PROJ/out.txt" 2>&1 ||
        fail "rush with runtime docker exited $?: $(cat "$PROJ/out.txt")"
    last_mode | grep -q "using container (docker works" || fail "docker not used: $(last_mode)"
    grep -q "via docker ===" "$PROJ/.zerg/logs/f/worker-0.log" || fail "the worker did not run through docker"
    [ "$(cat "$PROJ/where.txt")" = via-docker ] || fail "the task did not run"
    zc_assert_no_containers "$PROJ" f
fi
pass "both present: auto prefers podman; container.runtime picks the one named"
echo "$TESTS_PASSED passed, 0 failed"
