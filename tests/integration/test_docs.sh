#!/usr/bin/env bash
# Documentation that stays true (FR-10): every event name the code emits
# is in docs/wiki/Log-Events.md; every config key the loader knows is in
# Configuration-Reference.md and config.example.yaml and nothing
# documented is unknown (the unit test test_config checks the key tables
# from C; this checks the shipped files through the real binary); the
# example config loads without a warning; every command has --help text
# that the man page and README mention.
source "$(dirname "$0")/lib.sh"
src=${ZERG_SOURCE_DIR:?}

python3 - "$src" <<'PY' || fail "event names in the code and Log-Events.md differ"
import glob, re, sys
src = sys.argv[1]
code = set()
for f in glob.glob(src + "/src/**/*.c", recursive=True):
    text = open(f).read()
    for m in re.finditer(r"(?<!void )zerg_log_event\(", text):
        # The 4th argument: split the call at top-level commas.
        depth, args, cur, i = 0, [], "", m.end()
        while i < len(text) and len(args) < 4:
            c = text[i]
            if c == '"':
                j = i + 1
                while text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                cur += text[i:j + 1]
                i = j + 1
                continue
            if c in "([{": depth += 1
            if c in ")]}":
                if depth == 0: break
                depth -= 1
            if c == "," and depth == 0:
                args.append(cur); cur = ""
            else:
                cur += c
            i += 1
        if len(args) < 4:
            continue
        names = re.findall(r'"([a-z_]+)"', args[3])
        if not names and args[3].strip() != "event":
            sys.exit("%s: cannot read the event name in %r" % (f, args[3]))
        code.update(names)
    # Helpers that take the event name as an argument.
    code.update(re.findall(r'level_log\(o, "([a-z_]+)"', text))
    code.update(re.findall(r'judge\(o, t, r, ZERG_SCOPE_[A-Z]+, "([a-z_]+)"', text))
    code.update(re.findall(r'landed_event\(o, r, &r->[a-z]+, "([a-z_]+)"', text))
doc = set(re.findall(r"^\| `([a-z_]+)` \|", open(src + "/docs/wiki/Log-Events.md").read(), re.M))
missing, stale = code - doc, doc - code
if missing: print("emitted but not documented:", sorted(missing))
if stale: print("documented but never emitted:", sorted(stale))
sys.exit(1 if missing or stale else 0)
PY
for ev in worker_spawn worker_spawn_retry worker_spawn_failed worker_ready worker_exit worker_crash \
    worker_respawn task_claimed task_started task_complete task_failed task_timeout task_reassigned \
    heartbeat_stale heartbeat_recovered state_reconcile_start state_reconcile_fix \
    state_reconcile_complete level_check level_start level_complete policy_error rush_start \
    rush_complete rush_failed; do
    grep -q "^| \`$ev\` |" "$src/docs/wiki/Log-Events.md" || fail "DESIGN event $ev not documented"
done
pass "every emitted event is documented, and every DESIGN event exists"

new_project docs
cp "$src/config.example.yaml" "$PROJ/.zerg/config.yaml"
gen_graph 1 1 true
zerg validate > "$PROJ/v.out" 2> "$PROJ/v.err" || fail "validate with config.example.yaml: $(cat "$PROJ/v.err")"
[ ! -s "$PROJ/v.err" ] || fail "config.example.yaml warns: $(cat "$PROJ/v.err")"
pass "config.example.yaml loads cleanly"

keys=$(zerg lua -e 'local out = {}
for section, t in pairs(config) do
  if type(t) == "table" then for k in pairs(t) do out[#out + 1] = section .. "." .. k end end
end
table.sort(out)
return table.concat(out, "\n")')
[ -n "$keys" ] || fail "zerg lua could not list the config keys"
for k in $keys; do
    grep -q "\`$k\`" "$src/docs/wiki/Configuration-Reference.md" || fail "$k missing from Configuration-Reference.md"
    leaf=${k#*.}
    grep -qE "^\s*#?\s*$leaf:" "$src/config.example.yaml" || fail "$k missing from config.example.yaml"
done
pass "every config key is in the reference and the example"

for cmd in rush status stop retry logs lua validate; do
    "$ZERG" "$cmd" --help > "$PROJ/help.txt" || fail "zerg $cmd --help exited $?"
    grep -q "zerg $cmd" "$PROJ/help.txt" || fail "zerg $cmd --help lacks a usage line"
    grep -q "zerg $cmd\|\\\\fB$cmd\\\\fR\|^\.SS $cmd\|$cmd" "$src/docs/zerg.1" || fail "man page lacks $cmd"
    grep -q "zerg $cmd" "$src/README.md" || fail "README lacks zerg $cmd"
done
pass "every command has --help, a man page entry and a README mention"

# README's command list carries every option each command's usage names,
# and the top-level help lists every command README shows.
"$ZERG" --help > "$PROJ/help-all.txt" || fail "zerg --help exited $?"
for cmd in rush status stop retry logs report lua validate cleanup; do
    grep -q "^  $cmd " "$PROJ/help-all.txt" || fail "zerg --help does not list $cmd"
    "$ZERG" "$cmd" --help > "$PROJ/help.txt" || fail "zerg $cmd --help exited $?"
    python3 - "$PROJ/help.txt" "$src/README.md" "$cmd" <<'PY' || fail "README's usage of zerg $cmd lags its --help"
import re, sys
help_text, readme, cmd = open(sys.argv[1]).read(), open(sys.argv[2]).read(), sys.argv[3]
usage = help_text.split("\n\n")[0]                 # the usage paragraph
block = readme.split("## Commands", 1)[1].split("\n\n", 2)[1]
mine = "\n".join(re.findall(r"^    zerg %s .*(?:\n {10,}.*)*" % cmd, block, re.M))
lacking = sorted(set(re.findall(r"--[a-z][a-z-]*", usage)) - set(re.findall(r"--[a-z][a-z-]*", mine)))
if not mine or lacking:
    print("README's zerg %s lacks %s" % (cmd, lacking or "a usage line"))
    sys.exit(1)
PY
done
pass "README's command list matches every command's --help"
echo "$TESTS_PASSED passed, 0 failed"

# The architecture page's map of the orchestrator names every file of it.
for f in "$src"/src/orch/*.c; do
    b=$(basename "$f")
    grep -qE "^ +$b " "$src/docs/wiki/Resilience-Architecture.md" ||
        fail "Resilience-Architecture.md's map lacks src/orch/$b"
done
pass "the architecture page maps every orchestrator file"
