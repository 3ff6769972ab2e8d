#!/usr/bin/python3
"""Issue 13's structure checks, on the built library's objects and on src/:

1. No circle between files at the symbol level: file A depends on file B
   when one of A's undefined symbols is defined in B (nm), and no set of
   files may depend on each other round a loop (the include graph alone
   does not show one: run.c -> walk.c -> run.c was a circle of calls).
2. No function in src/ longer than MAX_LINES, from the line that opens it
   to its closing brace; the functions that were longer when this check came
   are listed in LONG with the length they had, which they may not exceed
   (each one split is taken off the list).

    check_structure.py NM OBJDIR SRCDIR
"""
import collections
import glob
import os
import re
import subprocess
import sys

MAX_LINES = 80

# Longer than MAX_LINES when the check came, with the length they had, a
# ceiling: "file:function": lines. Issue 13 item 2 split them all; a function
# that must stay longer is listed here with the reason.
LONG = {}


def symbols(nm, obj):
    out = subprocess.run([nm, obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRCV":
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
    return defined, undefined


def circles(nm, objdir):
    objs = sorted(glob.glob(os.path.join(objdir, "*.o")))
    if not objs:
        return ["no objects in %s" % objdir]
    defs, undefs = {}, {}
    for o in objs:
        name = os.path.basename(o)[:-len(".o")]
        defs[name], undefs[name] = symbols(nm, o)
    owner = {s: f for f, d in defs.items() for s in d}
    deps = collections.defaultdict(set)
    for f, u in undefs.items():
        for s in u:
            if s in owner and owner[s] != f:
                deps[f].add(owner[s])
    # Tarjan's strongly connected components: any with two files is a circle.
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(defs):
        if v not in index:
            visit(v)
    return ["files that depend on each other round a loop: %s (%s)"
            % (" <-> ".join(c), "; ".join("%s -> %s" % (a, ", ".join(sorted(deps[a] & set(c)))) for a in c))
            for c in found]


def functions(path):
    """(name, first line, length) of every function defined in a C file: a
    line at column 0 whose signature (over at most 8 lines) ends in ") {",
    to the next "}" at column 0."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    out, k = [], 0
    while k < len(lines):
        line = lines[k]
        if not line or line[0] in " \t#}/*{" or "(" not in line:
            k += 1
            continue
        j = k
        while j < len(lines) - 1 and not lines[j].rstrip().endswith(("{", ";")) and j - k < 8:
            j += 1
        sig = " ".join(lines[k:j + 1])
        if not lines[j].rstrip().endswith(") {") or "=" in sig.split("(")[0]:
            k += 1
            continue
        end = j + 1
        while end < len(lines) and lines[end] != "}":
            end += 1
        out.append((re.search(r"(\w+)\s*\(", sig).group(1), k + 1, end - k + 1))
        k = end + 1
    return out


def lengths(srcdir):
    failed, seen = [], set()
    for path in sorted(glob.glob(os.path.join(srcdir, "*.c")) + glob.glob(os.path.join(srcdir, "*", "*.c"))):
        rel = os.path.relpath(path, srcdir)
        for name, line, n in functions(path):
            key = "%s:%s" % (rel, name)
            ceiling = LONG.get(key, MAX_LINES)
            seen.add(key)
            if n > ceiling:
                failed.append("src/%s:%d: %s() is %d lines (at most %d)" % (rel, line, name, n, ceiling))
    for key in sorted(set(LONG) - seen):
        failed.append("LONG lists %s, which no longer exists: take it off" % key)
    return failed


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    nm, objdir, srcdir = sys.argv[1:]
    failed = circles(nm, objdir) + lengths(srcdir)
    for f in failed:
        print("check_structure: " + f)
    print("check_structure: %d problem(s)" % len(failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
