#!/usr/bin/python3
"""Every dynamic symbol libprecompress exports starts with pc_, and every function the
public header declares is exported. Usage: check_symbols.py NM LIBRARY HEADER"""
import re
import subprocess
import sys

# Linker-made symbols some toolchains export from any shared object.
LINKER = {"_init", "_fini", "_edata", "_end", "__bss_start", "_etext", "__end__"}


def main():
    nm, lib, header = sys.argv[1:4]
    p = subprocess.run([nm, "-D", "--defined-only", lib], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    if p.returncode != 0:
        print("nm failed: " + p.stderr)
        return 1
    syms = set()
    for line in p.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            syms.add(parts[2].split("@")[0])
    failed = 0
    bad = sorted(s for s in syms if not s.startswith("pc_") and s not in LINKER)
    for s in bad:
        print("exported without the pc_ prefix: " + s)
    failed += len(bad)
    leaked = sorted(s for s in syms if s.startswith("pc__"))
    for s in leaked:
        print("internal pc__ symbol exported (must be hidden): " + s)
    failed += len(leaked)
    decl = set(re.findall(r"PC_EXTERN[^;(]*?\b(pc_\w+)\s*\(", open(header).read()))
    missing = sorted(decl - syms)
    for s in missing:
        print("declared in precompress.h but not exported: " + s)
    failed += len(missing)
    checks = len(syms) + len(decl)
    print("%d exported symbols, %d declared in the header" % (len(syms), len(decl)))
    print("%d passed, %d failed" % (checks - failed, failed))
    return 1 if failed or not decl else 0


if __name__ == "__main__":
    sys.exit(main())
