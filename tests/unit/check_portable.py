#!/usr/bin/python3
"""A -Dportable=true build takes the POSIX path of every Linux-only call
(docs/design.md, "Platforms"): run on a copy of fixtures/site under strace, it
makes no openat2 or sched_getaffinity(0, ...) call, opens nothing O_PATH, reads no
cgroup CPU quota; its library calls neither syscall() (openat2, getdents64)
nor strerrordesc_np, sched_getaffinity or getrandom (nm). Fails when the
option stops forcing any of them; skipped (77) in a plain build, without
strace, or where strace cannot trace.

    check_portable.py PROGRAM LIBRARY FIXTURES PORTABLE(true|false) [NM]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

prog, lib, fixtures, portable, *rest = sys.argv[1:]
nm = rest[0] if rest else None
if portable != "true":
    print("skipped: not a -Dportable=true build (the Linux paths are meant here)")
    sys.exit(77)
strace = shutil.which("strace")
if strace is None:
    print("skipped: strace is not installed (apt-get install strace)")
    sys.exit(77)

# The calls a portable build must not make (strace's line starts), and what
# each says when it does. sched_getaffinity(0, ...) is pc_default_jobs()'s:
# glibc's pthread_getattr_np(), which the sanitizers call on every new thread,
# asks for the thread's own id.
FORBIDDEN_CALLS = {
    r"openat2\(": "src/fs/below.c opened a directory with openat2 (PC_HAVE_OPENAT2)",
    r"sched_getaffinity\(0,": "src/common/machine.c read the affinity mask (PC_HAVE_SCHED_GETAFFINITY)",
}
# Undefined symbols of the library (nm): syscall() is how openat2 and
# getdents64 are reached; the rest are glibc's names.
FORBIDDEN_SYMBOLS = {
    "syscall": "a raw syscall() (openat2 in src/fs/below.c or getdents64 in src/walk/walk.c)",
    "strerrordesc_np": "src/common/error.c (PC_HAVE_STRERRORDESC_NP)",
    "sched_getaffinity": "src/common/machine.c (PC_HAVE_SCHED_GETAFFINITY)",
    "__sched_cpucount": "CPU_COUNT in src/common/machine.c (PC_HAVE_SCHED_GETAFFINITY)",
    "getrandom": "src/fs/out.c (PC_HAVE_GETRANDOM)",
}

failed = []
tmp = tempfile.mkdtemp(prefix="pc-portable-")
try:
    env = dict(os.environ)
    # LeakSanitizer cannot run under ptrace (it aborts at exit).
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    opened = 0
    # Once as it comes (jobs open their directories one component at a time)
    # and once with --follow (one openat of the whole path).
    for extra in ([], ["--follow"]):
        root = os.path.join(tmp, "site" + "".join(extra).replace("-", ""))
        shutil.copytree(os.path.join(fixtures, "site"), root, symlinks=True)
        deep = os.path.join(root, "a", "b", "c")
        os.makedirs(deep)
        with open(os.path.join(deep, "deep.js"), "w") as f:
            f.write("function deep() { return 'deep'; }\n" * 200)
        log = os.path.join(tmp, "strace.log")
        # Default -j: pc_default_jobs() runs.
        cmd = [strace, "-f", "-qq", "-o", log, "-e", "trace=%file,sched_getaffinity",
               prog] + extra + [root]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        trace = open(log).read() if os.path.exists(log) else ""
        if p.returncode != 0 and "open" not in trace:
            print("skipped: strace could not trace here: %s" % p.stderr[-300:])
            sys.exit(77)
        if p.returncode != 0:
            failed.append("%s exited %d: %s" % (" ".join(extra) or "run", p.returncode,
                                                 p.stderr[-500:]))
        if not os.path.exists(os.path.join(deep, "deep.js.gz")):
            failed.append("%s: a/b/c/deep.js.gz was not written" % (" ".join(extra) or "run"))
        for call, what in FORBIDDEN_CALLS.items():
            n = len(re.findall(r"^\d+\s+" + call, trace, re.M))
            if n:
                failed.append("%d %s call(s): %s" % (n, call.split("\\")[0], what))
        for line in trace.splitlines():
            if re.search(r"\bopen(at)?\(", line) and "O_PATH" in line:
                failed.append("opened O_PATH (PC_O_PATH): %s" % line.strip())
                break
        for line in trace.splitlines():
            if re.search(r'"[^"]*/(cpu\.max|cpu\.cfs_quota_us)"', line):
                failed.append("read a cgroup CPU quota (PC_HAVE_CGROUPS): %s" % line.strip())
                break
        # The harness sees the threads' opens: the test tests something.
        opened += len(re.findall(r'openat\([^)]*deep\.js"', trace))
    if opened == 0:
        failed.append("strace saw no open of a/b/c/deep.js: the trace tested nothing")

    if nm is not None:
        p = subprocess.run([nm, "-D" if lib.endswith(".so") or ".so." in lib else "-g",
                            "--undefined-only", lib], capture_output=True, text=True)
        if p.returncode != 0:
            failed.append("nm %s: %s" % (lib, p.stderr.strip()))
        undefined = {line.split()[-1].split("@")[0] for line in p.stdout.splitlines()
                     if line.strip()}
        for sym, what in FORBIDDEN_SYMBOLS.items():
            if sym in undefined:
                failed.append("%s uses %s: %s" % (os.path.basename(lib), sym, what))
    else:
        print("note: no nm; the library's symbols were not checked")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

for f in failed:
    print("FAIL:", f)
print("%s" % ("portable paths taken" if not failed else "%d failure(s)" % len(failed)))
sys.exit(1 if failed else 0)
