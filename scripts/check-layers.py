#!/usr/bin/env python3
"""check-layers.py - fails when a file of src/ includes a layer above its own.

The layers, each using only the ones below it (DESIGN §2, docs/wiki/
Resilience-Architecture.md "Layout"):

    cli -> orch -> worker -> agent, launch, lua -> git -> model -> base

A public header include/zerg/NAME.h belongs to the folder whose C files
define the functions it declares; an internal one ("git/ws_internal.h",
"orch_internal.h") to its own folder.  `make check` runs this first.
"""
import collections
import glob
import os
import re
import sys

LAYERS = ["base", "model", "git", ("agent", "launch", "lua"), "worker",
          "orch", "cli"]
RANK = {}
for i, l in enumerate(LAYERS):
    for name in (l if isinstance(l, tuple) else (l,)):
        RANK[name] = i


def owner_of(header, sources):
    """The src/ folder defining most of the functions header declares."""
    names = set(re.findall(r"\b(zerg_[a-z0-9_]+)\s*\(", open(header).read()))
    count = collections.Counter()
    for path, text in sources.items():
        folder = path.split(os.sep)[1]
        for n in names:
            if re.search(r"^[a-z][^;\n]*\b%s\s*\([^;]*$" % n, text, re.M):
                count[folder] += 1
    return count.most_common(1)[0][0] if count else None


def main(root):
    os.chdir(root)
    sources = {p: open(p).read() for p in glob.glob("src/*/*.c")}
    owners = {}
    for h in sorted(glob.glob("include/zerg/*.h")):
        owners["zerg/" + os.path.basename(h)] = owner_of(h, sources)
    bad = []
    for path in sorted(glob.glob("src/*/*.[ch]")):
        folder = path.split(os.sep)[1]
        if folder not in RANK:
            bad.append("%s: the folder %s is in no layer" % (path, folder))
            continue
        for m in re.finditer(r'^#include "([A-Za-z0-9_/]+\.h)"', open(path).read(), re.M):
            inc = m.group(1)
            if inc.startswith("zerg/"):
                owner = owners.get(inc)
            elif "/" in inc:
                owner = inc.split("/")[0]
            else:
                continue
            if owner is None:
                bad.append("%s: no folder of src/ defines what %s declares" % (path, inc))
            elif RANK.get(owner, -1) > RANK[folder]:
                bad.append("%s includes %s, of %s: a layer above %s" % (path, inc, owner, folder))
    if bad:
        print("check-layers: an include goes upward:", file=sys.stderr)
        for b in bad:
            print("  " + b, file=sys.stderr)
        return 1
    print("check-layers: %d files of src/ include only their own layer and those below"
          % len(glob.glob("src/*/*.[ch]")))
    return 0


if __name__ == "__main__":
    sys.exit(main(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")))
