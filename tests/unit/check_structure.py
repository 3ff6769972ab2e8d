#!/usr/bin/python3
"""The shape of src/ (src/cli/ included), checked on the built library's
objects and on the sources:

1. No loop between files at the symbol level: file A depends on file B
   when one of A's undefined symbols is defined in B (nm), and no set of
   files may depend on each other round a loop. The include lines alone do
   not show one: two files can call each other through headers that include
   nothing of each other.
2. No loop between modules at the include level. A module is a header and
   the files that implement it: x.h with x.c beside it; a header without a
   .c of its name belongs to the module whose files define the functions it
   declares (store/storeint.h: the store's), or is a module of its own when
   it declares none (work/work.h: types and inline helpers); a .c without a
   header of its name belongs to the module whose header declares its
   functions (run/setup.c, run/dispatch.c, run/record.c: run/run.h's).
   Module A depends on B when a file of A includes a header of B. The
   symbol check does not show this: a header's types are no symbols.
3. No function in src/ longer than MAX_LINES, from the line that opens it
   to its closing brace; one that must stay longer is listed in LONG with
   its length and the reason, a ceiling.
4. The layers. Every file of src/ lives in a folder named in LAYERS, which
   lists them lowest first, and a file includes (`#include "..."`) only
   headers of its own folder and of folders listed before it. The library
   spells each such include by its path from src/ ("fs/out.h"), also
   within its own folder; the program's files (cli/), built with include/
   and not src/ on their path, include their own headers beside them.
   Headers outside src/ (precompress.h, the generated pc_config.h and
   options_help.h) are not checked.
5. The layers hold at the symbol level too: a folder depends on another
   when a file in it uses a symbol that a file in the other defines (nm),
   and no folders depend on each other round a loop, nor does a folder use
   a symbol of a folder listed after it (a function declared in a lower
   folder's header but defined higher up would pass 4 and fail here).
6. The program uses the library only through include/precompress.h: no
   object of the program (PROGDIR, the objects of src/cli/) uses a symbol
   named pc__, the library's internal prefix. The library is linked into
   the program as a static archive, so the linker would let it.

Before reading the tree, the checks of 4 and 5 are run on a small made-up
tree with a planted upward include, an unqualified include and a loop
between folders, and 6 on a made-up object's symbols; the script fails if
they are not caught.

    check_structure.py NM OBJDIR SRCDIR PROGDIR
"""
import collections
import glob
import os
import re
import subprocess
import sys

MAX_LINES = 80

# Functions allowed past MAX_LINES, each a ceiling with the reason:
# "folder/file.c:function": lines.
LONG = {}

# The folders of src/, lowest layer first (src/README.md): a file may use
# its own folder and the folders before it.
LAYERS = ["common", "fs", "codec", "store", "walk", "manifest", "serverconf", "work", "run", "cli"]

# Folders whose files include their own headers beside them, unqualified:
# the program, which has only include/ (the public header) on its path.
BESIDE = {"cli"}


def symbols(nm, objs):
    """{object: (defined, undefined)} for the objects, read by one nm (which heads each
    object's list with "OBJECT:" when given several)."""
    if not objs:
        return {}
    out = subprocess.run([nm] + list(objs), capture_output=True, text=True, check=True).stdout
    res = {o: (set(), set()) for o in objs}
    cur = res[objs[0]] if len(objs) == 1 else None
    for line in out.splitlines():
        if line.endswith(":") and line[:-1] in res:
            cur = res[line[:-1]]
            continue
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRCV":
            cur[0].add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            cur[1].add(parts[1])
    return res


def file_deps(nm, objdir, srcdir):
    """(files, deps): the library's .c files (relative to srcdir) and file ->
    the files whose symbols it uses. meson names the object of src/F/x.c
    F_x.c.o; an object of no source found is reported by name."""
    objs = sorted(glob.glob(os.path.join(objdir, "*.o")))
    source = {rel.replace("/", "_") + ".o": rel for rel in sources(srcdir) if rel.endswith(".c")}
    defs, undefs = {}, {}
    for o, (d, u) in symbols(nm, objs).items():
        name = source.get(os.path.basename(o), os.path.basename(o))
        defs[name], undefs[name] = d, u
    owner = {s: f for f, d in defs.items() for s in d}
    deps = collections.defaultdict(set)
    for f, u in undefs.items():
        for s in u:
            if s in owner and owner[s] != f:
                deps[f].add(owner[s])
    return sorted(defs), deps


def circles(files, deps):
    return ["files that depend on each other round a loop: %s (%s)"
            % (" <-> ".join(c), "; ".join("%s -> %s" % (a, ", ".join(sorted(deps[a] & set(c)))) for a in c))
            for c in loops(files, deps)]


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
    """The C files of src/ and its folders, relative to srcdir."""
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


def includes(files, code):
    """(file, line, spelled, path) for every `#include "..."` of files that
    names a file of src/: path is that file, relative to src/, found as the
    compiler finds it (beside the including file, then from src/). Includes
    of headers outside src/ are left out."""
    out = []
    for f in files:
        for m in re.finditer(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', code[f], re.M):
            line = code[f].count("\n", 0, m.start()) + 1
            beside = os.path.normpath(os.path.join(os.path.dirname(f), m.group(1)))
            if beside in code:
                out.append((f, line, m.group(1), beside))
            elif m.group(1) in code:
                out.append((f, line, m.group(1), m.group(1)))
    return out


def include_circles(files, mod, code):
    deps, why = collections.defaultdict(set), {}
    for f, _, spelled, target in includes(files, code):
        a, b = mod[f], mod[target]
        if a != b:
            deps[a].add(b)
            why.setdefault((a, b), "%s includes %s" % (f, spelled))
    return ["modules that include each other round a loop: %s (%s)"
            % (" <-> ".join(c), "; ".join(why[(a, b)] for a in c for b in sorted(deps[a] & set(c))))
            for c in loops(sorted(set(mod.values())), deps)]


def folder(rel):
    return rel.split("/")[0] if "/" in rel else None


def layer_rule(files, code):
    """4. above, on files (paths relative to src/) and code (path -> text,
    every file of src/ that an include may name)."""
    failed = []
    for f in files:
        if folder(f) not in LAYERS:
            failed.append("src/%s is in no folder of LAYERS: put it in its layer's folder "
                          "(or name a new folder in LAYERS, in its place)" % f)
    rank = {name: k for k, name in enumerate(LAYERS)}
    for f, line, spelled, target in includes(files, code):
        here, there = folder(f), folder(target)
        if here not in rank or there not in rank:
            continue
        if rank[there] > rank[here]:
            failed.append("src/%s:%d includes %s: %s/ is above %s/ (LAYERS), a lower layer uses "
                          "no higher one" % (f, line, spelled, there, here))
        elif spelled != target and here not in BESIDE:
            failed.append('src/%s:%d includes "%s": spell it from src/ ("%s")' % (f, line, spelled, target))
    return failed


def folder_rule(deps):
    """5. above, on deps (file -> the files whose symbols it uses)."""
    rank = {name: k for k, name in enumerate(LAYERS)}
    fdeps, why = collections.defaultdict(set), {}
    for a in sorted(deps):
        for b in sorted(deps[a]):
            fa, fb = folder(a), folder(b)
            if fa != fb:
                fdeps[fa].add(fb)
                why.setdefault((fa, fb), "%s uses %s" % (a, b))
    failed = ["folders that use each other's symbols round a loop: %s (%s)"
              % (" <-> ".join(c), "; ".join(why[(a, b)] for a in c for b in sorted(fdeps[a] & set(c))))
              for c in loops(sorted(set(fdeps) | {b for v in fdeps.values() for b in v}), fdeps)]
    for (fa, fb), w in sorted(why.items()):
        if fa in rank and fb in rank and rank[fb] > rank[fa]:
            failed.append("%s: %s/ uses a symbol of %s/, a folder above it (LAYERS)" % (w, fa, fb))
    return failed


def engine_rule(undefined):
    """6.: undefined maps a program's object to the symbols it uses."""
    return ["src/cli/%s uses %s, an internal of the library (only precompress.h's pc_ names)"
            % (o[:-len(".o")] if o.endswith(".o") else o, s)
            for o in sorted(undefined) for s in sorted(undefined[o]) if s.startswith("pc__")]


def program_symbols(nm, progdir):
    objs = sorted(glob.glob(os.path.join(progdir, "*.o")))
    return {os.path.basename(o): du[1] for o, du in symbols(nm, objs).items()}


def self_test():
    """4. and 5. on a made-up tree: each planted fault is caught, and the
    tree without them passes."""
    code = {
        "common/common.h": "",
        "common/buf.c": '#include "common/common.h"\n',
        "fs/out.h": '#include "common/common.h"\n',
        "fs/out.c": '#include "fs/out.h"\n',
        "run/run.h": '#include "fs/out.h"\n',
        "run/run.c": '#include "run/run.h"\n#include "precompress.h"\n',
        "cli/args.h": "",
        "cli/main.c": '#include "args.h"\n#include "precompress.h"\n',
    }
    problems = []
    if layer_rule(sorted(code), code):
        problems.append("a tree that keeps the rule fails it: %s" % layer_rule(sorted(code), code))
    planted = dict(code)
    planted["common/buf.c"] += '#include "run/run.h"\n'
    planted["fs/out.c"] += '#include "out.h"\n'
    planted["stray.c"] = ""
    got = layer_rule(sorted(planted), planted)
    for want in ("src/common/buf.c:2 includes run/run.h", 'src/fs/out.c:2 includes "out.h"', "src/stray.c"):
        if not any(g.startswith(want) for g in got):
            problems.append("layer rule: %r not caught (got %s)" % (want, got))
    if len(got) != 3:
        problems.append("layer rule: 3 faults planted, %d reported: %s" % (len(got), got))
    ok = {"fs/out.c": {"common/buf.c"}, "run/run.c": {"fs/out.c", "common/buf.c"}}
    if folder_rule(collections.defaultdict(set, ok)):
        problems.append("folders that use each other one way fail: %s" % folder_rule(collections.defaultdict(set, ok)))
    # No two files in a loop, but common/ and fs/ use each other.
    loop = dict(ok, **{"common/io.c": {"fs/below.c"}})
    got = folder_rule(collections.defaultdict(set, loop))
    if not any(g.startswith("folders that use each other's symbols round a loop: common <-> fs") for g in got) \
            or not any("common/ uses a symbol of fs/" in g for g in got):
        problems.append("folder rule: the loop common <-> fs not caught (got %s)" % got)
    prog = {"main.c.o": {"pc_run", "pc_strerror", "printf"}}
    if engine_rule(prog):
        problems.append("a program using only pc_ names fails: %s" % engine_rule(prog))
    prog["report.c.o"] = {"pc_file_t_size", "pc__delta_read"}
    if engine_rule(prog) != ["src/cli/report.c uses pc__delta_read, an internal of the library "
                             "(only precompress.h's pc_ names)"]:
        problems.append("engine rule: a planted pc__ use not caught (got %s)" % engine_rule(prog))
    return ["self-test: " + p for p in problems]


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
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    nm, objdir, srcdir, progdir = sys.argv[1:]
    failed = self_test()
    files, deps = file_deps(nm, objdir, srcdir)
    if not files:
        failed.append("no objects in %s" % objdir)
    unknown = [f for f in files if not f.endswith(".c")]
    failed += ["%s: an object of no source in src/ (is it named as meson names them?)" % f for f in unknown]
    src = sources(srcdir)
    mod, code = modules(srcdir, src)
    failed += (circles(files, deps) + include_circles(src, mod, code) + lengths(srcdir)
               + layer_rule(src, code) + folder_rule(deps))
    prog = program_symbols(nm, progdir)
    if not prog:
        failed.append("no objects of the program in %s" % progdir)
    failed += engine_rule(prog)
    for f in failed:
        print("check_structure: " + f)
    print("check_structure: %d files, %d objects, %d layers; %d problem(s)"
          % (len(src), len(files), len(LAYERS), len(failed)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
