#!/usr/bin/python3
"""Issues 13 and 24's structure checks, on the built library's objects and
on src/ (src/cli/ included):

1. No circle between files at the symbol level: file A depends on file B
   when one of A's undefined symbols is defined in B (nm), and no set of
   files may depend on each other round a loop (the include graph alone
   does not show one: run.c -> walk.c -> run.c was a circle of calls).
2. No circle between modules at the include level. A module is a header
   and the files that implement it: x.h with x.c beside it; a header
   without a .c of its name belongs to the module whose files define the
   functions it declares (storeint.h: the store's), or is a module of its
   own when it declares none (work.h: types and inline helpers); a .c
   without a header of its name belongs to the module whose header
   declares its functions (setup.c, dispatch.c, record.c: run.h's).
   Module A depends on B when a file of A includes a header of B (the
   symbol check does not show one: a header's types are no symbols, and
   manifest.c including run.h, whose run.c reads manifests, was a circle).
3. No function in src/ longer than MAX_LINES, from the line that opens it
   to its closing brace; the functions that were longer when this check came
   are listed in LONG with the length they had, which they may not exceed
   (each one split is taken off the list).
4. No file in src/ longer than MAX_FILE_LINES lines (one job per file);
   a file that must stay longer is listed in LONG_FILES with the reason.

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

MAX_FILE_LINES = 700

# Files of src/ (relative to it) allowed past MAX_FILE_LINES, each with the
# reason: "file": (ceiling, "why"). Issue 24 split them all.
LONG_FILES = {}


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
    return ["files that depend on each other round a loop: %s (%s)"
            % (" <-> ".join(c), "; ".join("%s -> %s" % (a, ", ".join(sorted(deps[a] & set(c)))) for a in c))
            for c in loops(sorted(defs), deps)]


def loops(nodes, deps):
    """Tarjan's strongly connected components of deps (node -> set of
    nodes): each with two nodes or more, sorted, is a circle."""
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

    for v in nodes:
        if v not in index:
            visit(v)
    return found


def sources(srcdir):
    """The C files of src/ and src/cli/, relative to srcdir."""
    return sorted(os.path.relpath(p, srcdir) for p in
                  glob.glob(os.path.join(srcdir, "*.[ch]")) + glob.glob(os.path.join(srcdir, "*", "*.[ch]")))


def code_of(path):
    """The file's text with its comments blanked (line numbers kept)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    return re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


def modules(srcdir, files):
    """file -> its module (see 2. above)."""
    code = {f: code_of(os.path.join(srcdir, f)) for f in files}
    stem = {f: os.path.splitext(f)[0] for f in files}
    has_c = {stem[f] for f in files if f.endswith(".c")}
    has_h = {stem[f] for f in files if f.endswith(".h")}
    declared = {}  # function -> the header that declares it
    for f in files:
        if f.endswith(".h"):
            for m in re.finditer(r"^[A-Za-z_][^;{}#]*?\b(pc_\w+)\s*\([^;{]*\)\s*;", code[f], re.M):
                declared.setdefault(m.group(1), f)
    defined = {}  # .c file -> the functions it defines, not static
    for f in files:
        if f.endswith(".c"):
            defined[f] = [m.group(1) for m in re.finditer(
                r"^(?!static\b)[A-Za-z_][^;{}#=]*?\b(pc_\w+)\s*\([^;{]*\)\s*\{", code[f], re.M)]

    def most(counter):
        return max(sorted(counter), key=lambda k: counter[k]) if counter else None

    mod = {}
    for f in files:  # a .c: its header's module, else its functions' header's
        if f.endswith(".c"):
            # A header with a .c of its own names a module; one without
            # (a module's private header) is only taken when no other is.
            hs = collections.Counter(declared[d] for d in defined[f] if d in declared)
            real = collections.Counter({h: n for h, n in hs.items() if stem[h] in has_c})
            mod[f] = stem[f] if stem[f] in has_h else stem[most(real or hs)] if hs else stem[f]
    for f in files:  # a header: its .c's module, else its implementers'
        if f.endswith(".h"):
            impl = collections.Counter(mod[c] for c in defined for d in defined[c]
                                       if declared.get(d) == f)
            mod[f] = stem[f] if stem[f] in has_c else most(impl) or stem[f]
    return mod, code


def include_circles(srcdir):
    files = sources(srcdir)
    mod, code = modules(srcdir, files)
    deps, why = collections.defaultdict(set), {}
    for f in files:
        for m in re.finditer(r'^\s*#\s*include\s*"([^"]+)"', code[f], re.M):
            # Resolved as the compiler does: beside the file, then in src/.
            for cand in (os.path.normpath(os.path.join(os.path.dirname(f), m.group(1))), m.group(1)):
                if cand in mod:
                    a, b = mod[f], mod[cand]
                    if a != b:
                        deps[a].add(b)
                        why.setdefault((a, b), "%s includes %s" % (f, m.group(1)))
                    break
    return ["modules that include each other round a loop: %s (%s)"
            % (" <-> ".join(c), "; ".join(why[(a, b)] for a in c for b in sorted(deps[a] & set(c))))
            for c in loops(sorted(set(mod.values())), deps)]


def file_lengths(srcdir):
    failed, seen = [], set()
    for rel in sources(srcdir):
        with open(os.path.join(srcdir, rel), encoding="utf-8", errors="replace") as f:
            n = f.read().count("\n")
        ceiling = LONG_FILES.get(rel, (MAX_FILE_LINES, ""))[0]
        seen.add(rel)
        if n > ceiling:
            failed.append("src/%s is %d lines (at most %d): split it along its seams" % (rel, n, ceiling))
    for rel in sorted(set(LONG_FILES) - seen):
        failed.append("LONG_FILES lists %s, which no longer exists: take it off" % rel)
    return failed


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
    failed = circles(nm, objdir) + include_circles(srcdir) + lengths(srcdir) + file_lengths(srcdir)
    for f in failed:
        print("check_structure: " + f)
    print("check_structure: %d problem(s)" % len(failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
