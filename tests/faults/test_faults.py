#!/usr/bin/python3
"""Systematic fault injection (suite 'slow'), the way SQLite tests its I/O errors: each call
of each system call listed is made to fail in turn, and no such run may leave a wrong output.

Two scenarios over a small tree (a 300 KiB text, small texts, an
incompressible file, an empty file, two files with the same bytes, a
subdirectory), each with --manifest and --cache-dir, -j1, gzip and brotli
(quality 5: the codecs' speed is not what is tested):

  cold  no outputs, no cache directory, no manifest yet;
  warm  after a clean run, with one file changed, one emptied (its outputs
        must go), one new file whose bytes the cache holds, a killed run's
        temp file to reap, --fsync, and --cache-max-size 300k (the cache is
        trimmed at the end);
  big   a 1.5 MiB text whose outputs pass 1 MiB, under --memory-limit 4M
        (outputs spilled to their temps, cache entries written from them);
        each run compresses it twice, so every 3rd N only (1 and the last
        always).

For every system call in SYSCALLS that a clean run makes, and every N from
1 to the most calls of it any one thread makes in that clean run, the run is
repeated on a fresh copy under
    strace -f -e inject=SYSCALL:error=ERRNO:when=N
(the errnos listed for the call, taken in turn by N). strace counts calls per
thread, so the Nth call of every thread that makes N fails. The program is
stopped once the dynamic loader is done (tests/faults/stop.c, preloaded) and
strace attaches there: the loader's own opens and reads are neither counted
nor failed. Which calls failed is read back from strace's log (-y names each
descriptor's file).

After each injected run:
  - no crash: no signal, no sanitizer report; exit 0, 1 or 2;
  - exit 0 only with every output of a clean run there and right;
  - non-zero: a "precompress: ...: <strerror>" line for the injected error
    (unless the write that failed was that very line to stderr);
  - no temp file (".NAME.XXXXXX.tmp") in the tree, the cache or beside the
    manifest (a killed run's planted one may stay if the failure hit its
    removal);
  - every output under a final name decodes to its source's current bytes;
  - the sources are untouched (hash, mode, mtime), a manifest there is JSON;
  - then a clean run exits 0 with exactly the outputs of a clean run, right,
    and no temp file anywhere.

libuv's own wake-up descriptors (its signal pipe, the eventfd of uv_async)
are not ours: libuv aborts by design when a write or read on them fails.
A run whose only failures were there and that ended in SIGABRT is counted
apart ("libuv"), its tree still checked for sources, outputs and the clean
run after it. A run in which the injection hit nothing (a thread made fewer
calls than in the clean run) is counted as "not reached".

MallocFailure (below) does the same for the Nth allocation.

PC_FAULT_MAX_RUNS (default 1500) caps the runs: above it, each call's N are
taken every k-th (the same k for all scenarios, times 3 for big; 1 and the
last always), which is deterministic. The closing lines give, per call, the runs tried, held,
libuv and not reached.
"""
import sys

sys.dont_write_bytecode = True
import errno
import gzip
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time

from pctest import (PROGRAM, PCTestCase, brotli, child_env, load_json_strict, main, sha256, walk_all,
                    words_data)

STOP_SO = os.environ.get("PC_FAULT_STOP_SO", "")
MALLOC_SO = os.environ.get("PC_FAULT_MALLOC_SO", "")
MAX_RUNS = int(os.environ.get("PC_FAULT_MAX_RUNS", "1500"))

# The call and the errnos it is failed with, in turn by N.
SYSCALLS = (
    ("openat", ("EACCES", "EMFILE")),
    ("openat2", ("EACCES", "EMFILE", "ENOSYS")),
    ("read", ("EIO",)),
    ("pread64", ("EIO",)),
    ("write", ("ENOSPC", "EIO")),
    ("pwrite64", ("ENOSPC", "EIO")),
    ("rename", ("EIO",)),
    ("renameat", ("EIO", "ENOSPC")),
    ("renameat2", ("EIO", "ENOSPC")),
    # An unnamed output's link (src/fs/out.c): ENOENT and EEXIST are its two
    # ways back (name the descriptor through /proc; a temp name and a rename).
    ("linkat", ("EIO", "ENOSPC", "ENOENT", "EEXIST")),
    ("fsync", ("EIO",)),
    ("fdatasync", ("EIO",)),
    ("fchmod", ("EPERM",)),
    ("utimensat", ("EPERM",)),
    ("unlink", ("EACCES", "EIO")),
    ("unlinkat", ("EACCES", "EIO")),
    ("mkdir", ("EACCES", "ENOSPC")),
    ("mkdirat", ("EACCES", "ENOSPC")),
    ("close", ("EIO",)),
    ("getdents64", ("EIO",)),
)

TMP_RE = re.compile(rb"^\..+\.[A-Za-z0-9]{6}\.tmp$")
CALL_RE = re.compile(r"^(\d+) +([a-z0-9_]+)\(")
INJECTED_RE = re.compile(r"^(\d+) +([a-z0-9_]+)\((?:(\d+)<([^>]*)>)?.*\(INJECTED\)\s*$")
PLANTED = b".index.html.gz.Zq9Xw3.tmp"
BASE_ARGS = ["-j1", "--brotli-quality", "5", "--manifest", "m.json", "--cache-dir", "cache"]


def build_tree(root):
    """The tree (deterministic bytes) under root/t."""
    import random
    r = random.Random(11)
    t = os.path.join(root, "t")
    os.makedirs(os.path.join(t, "sub", "deep"))
    index = words_data(5000, seed=2)
    files = {
        "app.js": words_data(300 << 10, seed=1),
        "index.html": index,
        "rand.bin": r.randbytes(20000),
        "sub/style.css": words_data(12000, seed=3),
        "sub/small.txt": b"hello hello hello hello hello hello hello\n",
        "sub/empty.txt": b"",
        "sub/deep/copy.html": index,
    }
    for rel, data in files.items():
        with open(os.path.join(t, rel), "wb") as f:
            f.write(data)


def outputs(t):
    """{output rel: source rel} for every NAME.gz/.br under t whose NAME is a regular file."""
    res = {}
    for rel, st in walk_all(t).items():
        for ext in (b".gz", b".br"):
            if rel.endswith(ext) and stat.S_ISREG(st.st_mode):
                src = os.path.join(os.fsencode(t), rel[: -len(ext)])
                if os.path.isfile(src) and not os.path.islink(src):
                    res[rel] = rel[: -len(ext)]
    return res


def temps(root):
    return sorted(rel for rel in walk_all(root) if TMP_RE.match(os.path.basename(rel)))


def snapshot(t):
    snap = {}
    for rel, st in walk_all(t).items():
        if stat.S_ISREG(st.st_mode) and not rel.endswith((b".gz", b".br")) and not TMP_RE.match(
                os.path.basename(rel)):
            snap[rel] = (sha256(os.path.join(os.fsencode(t), rel)), stat.S_IMODE(st.st_mode), st.st_mtime_ns)
    return snap


def strerror(name):
    return os.strerror(getattr(errno, name))


class Run:
    def __init__(self, rc, out, err, injected):
        self.rc = rc
        self.out = out.decode("utf-8", "replace")
        self.err = err.decode("utf-8", "replace")
        self.injected = injected  # [(syscall, fd or None, what)]

    def __repr__(self):
        return "<rc=%s injected=%r\n--- stderr\n%s>" % (self.rc, self.injected, self.err[-3000:])


class FaultBase(PCTestCase):
    """The scenarios, the runs and the checks both kinds of injection share."""

    # -- running ------------------------------------------------------------

    def traced(self, cwd, args, strace_args, log):
        """Runs the program under strace; returns (rc, out, err). With the
        stop library, strace attaches after the loader (see the docstring)."""
        env = child_env()
        cmd = [PROGRAM] + args
        # A sanitizer build: LeakSanitizer cannot work under ptrace (the
        # rest of ASan and UBSan do).
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        if not STOP_SO:
            p = subprocess.run(["strace", "-f", "-qq", "-o", log] + strace_args + cmd, cwd=cwd, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=120)
            err = p.stderr
            return p.returncode, p.stdout, err
        env["LD_PRELOAD"] = STOP_SO
        env["PC_FAULT_STOP"] = "1"
        # A sanitizer build: the stop library comes before its runtime.
        env["ASAN_OPTIONS"] += ":verify_asan_link_order=0"
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        try:
            _, status = os.waitpid(p.pid, os.WUNTRACED)
            if not os.WIFSTOPPED(status):
                self.fail("the program did not stop after loading (status %#x)" % status)
            s = subprocess.Popen(["strace", "-f", "-q", "-o", log] + strace_args + ["-p", str(p.pid)],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            # -q still says nothing of attaching; wait until the tracer holds
            # the process (TracerPid), then let it go on.
            deadline = time.monotonic() + 20
            while True:
                with open("/proc/%d/status" % p.pid) as f:
                    tracer = re.search(r"^TracerPid:\s*(\d+)", f.read(), re.M)
                if tracer and int(tracer.group(1)) == s.pid:
                    break
                if time.monotonic() > deadline or s.poll() is not None:
                    self.fail("strace did not attach: %r" % (s.stderr.read() if s.poll() is not None else b""))
                time.sleep(0.002)
            # The seize and interrupt are done when TracerPid shows; give
            # strace the moment it takes to see the group-stop.
            time.sleep(0.01)
            os.kill(p.pid, signal.SIGCONT)
            out, err = p.communicate(timeout=120)
            s.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        return p.returncode, out, err

    def injected_calls(self, log):
        calls = []
        with open(log, errors="replace") as f:
            for line in f:
                if "(INJECTED)" not in line:
                    continue
                m = INJECTED_RE.match(line)
                if m:
                    fd = int(m.group(3)) if m.group(3) is not None else None
                    calls.append((m.group(2), fd, m.group(4) or ""))
                else:
                    calls.append(("?", None, line.strip()))
        return calls

    @staticmethod
    def libuv_fd(fd, what):
        return fd is not None and fd > 2 and (what.startswith("pipe:") or what == "anon_inode:[eventfd]")

    # -- scenarios ----------------------------------------------------------

    def make_cold(self, base):
        build_tree(base)
        return BASE_ARGS + ["t"]

    def make_big(self, base):
        """A text whose outputs pass 1 MiB: they spill to their temp files
        and, under a 4M --memory-limit (no copy kept for identical files),
        go into the cache read back from the temp's descriptor, header last
        (pwrite)."""
        import base64
        import random
        t = os.path.join(base, "t", "sub")
        os.makedirs(t)
        with open(os.path.join(t, "big.txt"), "wb") as f:
            f.write(base64.encodebytes(random.Random(5).randbytes(1150 << 10)))
        with open(os.path.join(base, "t", "index.html"), "wb") as f:
            f.write(words_data(5000, seed=2))
        return BASE_ARGS + ["--memory-limit", "4M", "t"]

    def make_warm(self, base):
        build_tree(base)
        r = subprocess.run([PROGRAM, "-q"] + BASE_ARGS + ["t"], cwd=base, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        self.assertEqual(r.returncode, 0, r.stderr)
        t = os.path.join(base, "t")
        with open(os.path.join(t, "app.js"), "rb") as f:
            old_app = f.read()
        with open(os.path.join(t, "sub", "new.css"), "wb") as f:
            f.write(old_app)  # in the cache already
        with open(os.path.join(t, "app.js"), "ab") as f:
            f.write(words_data(7000, seed=9))
        with open(os.path.join(t, "sub", "small.txt"), "wb"):
            pass  # emptied: its outputs must go
        planted = os.path.join(t, os.fsdecode(PLANTED))
        with open(planted, "wb") as f:
            f.write(b"a killed run's partial output")
        old = time.time() - 3600
        os.utime(planted, (old, old))
        # A cache small enough that the run's end trims it.
        return BASE_ARGS + ["--fsync", "--cache-max-size", "300k", "t"]

    # -- checks ---------------------------------------------------------------

    def check_tree(self, work, snap, what, allow_planted=False, allow_temps=False, stale_ok=None):
        """The invariants of any run's end; returns the outputs' names.
        stale_ok(rel, blob): an output that does not match its source may
        stay (the warm scenario starts with two; a run that failed before
        it reached their files leaves them as they were)."""
        t = os.path.join(work, "t")
        left = [x for x in temps(work) if not (allow_planted and os.path.basename(x) == PLANTED)]
        if not allow_temps:
            self.assertEqual(left, [], "%s: temp files left" % what)
        self.assertEqual(snapshot(t), snap, "%s: sources changed" % what)
        outs = outputs(t)
        for rel, src in outs.items():
            with open(os.path.join(os.fsencode(t), src), "rb") as f:
                want = f.read()
            with open(os.path.join(os.fsencode(t), rel), "rb") as f:
                blob = f.read()
            if stale_ok is not None and stale_ok(rel, blob):
                continue
            try:
                got = gzip.decompress(blob) if rel.endswith(b".gz") else brotli.decompress(blob)
            except Exception as ex:  # noqa: BLE001 - any decoder error is the finding
                self.fail("%s: %r under its final name does not decode: %s" % (what, rel, ex))
            self.assertTrue(got == want, "%s: %r does not decode to its source's bytes" % (what, rel))
        m = os.path.join(work, "m.json")
        if os.path.exists(m):
            with open(m, "rb") as f:
                try:
                    load_json_strict(f.read())
                except ValueError as ex:
                    self.fail("%s: the manifest is not valid JSON: %s" % (what, ex))
        return set(outs)

    def fresh(self, template):
        work = os.path.join(self.tmp, "w")
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(template, work, symlinks=True)
        return work

    def check_run(self, work, args, r, snap, ref, stale, what, errtexts, excused):
        """The invariants after one injected run r (see the docstring).
        excused: why a death by a signal or an exit code above 2 is not
        ours (a library that aborts or exits by design), or None."""
        for bad in ("AddressSanitizer", "LeakSanitizer", "ThreadSanitizer", "runtime error:"):
            self.assertNotIn(bad, r.err, what)

        def stale_ok(rel, blob):
            # Left exactly as the run found it, and the run said nothing
            # about its file: a failed file must lose its old outputs.
            if stale.get(rel) != blob:
                return False
            src = "precompress: t/" + os.fsdecode(rel).rsplit(".", 1)[0]
            return not any(l == src or l.startswith(src + ":") or l.startswith(src + ".")
                           for l in r.err.split("\n"))
        kind = "held"
        if r.rc < 0 or r.rc > 2:
            self.assertTrue(excused, "exit %s (negative: a signal): %s" % (r.rc, what))
            kind = excused
            # Such an end leaves its temps, as a kill does: the clean run
            # reaps them.
            self.check_tree(work, snap, what, allow_temps=True, stale_ok=stale_ok)
        else:
            outs = self.check_tree(work, snap, what, allow_planted=True,
                                   stale_ok=None if r.rc == 0 else stale_ok)
            if r.rc == 0:
                self.assertEqual(outs, ref, "exit 0 but the outputs are not a clean run's: " + what)
            elif errtexts:
                lines = [l for l in r.err.split("\n") if l.startswith("precompress: ")
                         and any(l.endswith(": " + e) or (": " + e + " ") in l or (": " + e + ";") in l
                                 or l == "precompress: " + e for e in errtexts)]
                self.assertTrue(lines, "no line names the error: " + what)
        # A clean run after it completes, with every output right.
        c = subprocess.run([PROGRAM, "-q"] + args, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, env=child_env(), timeout=120)
        self.assertEqual(c.returncode, 0, "clean run after %s: %r" % (what, c.stderr))
        outs = self.check_tree(work, snap, "clean run after " + what)
        self.assertEqual(outs, ref, "clean run after %s: not a clean run's outputs" % what)
        return kind

    def one_point(self, template, args, snap, ref, stale, sc, n, err_name, log):
        # A run whose only failures hit libuv's descriptors tested nothing
        # of ours: once more (libuv's wake-ups vary with timing), twice.
        for attempt in range(3):
            work = self.fresh(template)
            rc, out, err = self.traced(work, args, ["-y", "-e", "trace=" + sc,
                                                    "-e", "inject=%s:error=%s:when=%d" % (sc, err_name, n)], log)
            r = Run(rc, out, err, self.injected_calls(log))
            what = "%s:%s=%d %r" % (sc, err_name, n, r)
            if not r.injected:
                self.assertEqual(rc, 0, "nothing injected, yet: " + what)
                return "not reached"
            libuv = [c for c in r.injected if self.libuv_fd(c[1], c[2])]
            # libuv aborts when a read or write of its own fails.
            excused = "libuv" if rc == -signal.SIGABRT and libuv else None
            if excused is None or attempt == 2:
                break
        # The injected call's message, unless what failed was that very
        # line's write to stderr.
        errtexts = [] if any(c[1] in (1, 2) for c in r.injected) else [strerror(err_name)]
        return self.check_run(work, args, r, snap, ref, stale, what, errtexts, excused)

    def malloc_point(self, template, args, snap, ref, stale, n):
        work = self.fresh(template)
        site_file = os.path.join(self.tmp, "site.txt")
        if os.path.exists(site_file):
            os.unlink(site_file)
        env = child_env()
        env.update(LD_PRELOAD=MALLOC_SO, PC_FAULT_MALLOC=str(n), PC_FAULT_MALLOC_SITE=site_file)
        p = subprocess.run([PROGRAM] + args, cwd=work, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
        site = ""
        if os.path.exists(site_file):
            with open(site_file) as f:
                site = f.read().strip()
        r = Run(p.returncode, p.stdout, p.stderr, [("malloc", None, site)] if site else [])
        what = "malloc=%d %r" % (n, r)
        if not site:
            self.assertEqual(r.rc, 0, "nothing failed, yet: " + what)
            return "not reached", site
        # Libraries that end the process by design when an allocation of
        # theirs fails: brotli's encoder (1.0.9) exit()s (libuv's exit
        # handler then aborts, its pool threads still running), libuv
        # aborts (uv__io_start, its loop's watcher array).
        # jansson (2.14) may take an allocation failing in its lexer for bad
        # JSON ("invalid token": the manifest is then refused as not one,
        # exit 2) or crash on it (SIGSEGV in json_loadb): its bugs, not
        # ours; the other checks still apply.
        frames = site.split("\n")
        caller = frames[1] if len(frames) > 1 else ""
        excused = None
        errtexts = ["Cannot allocate memory", "out of memory",
                    strerror("EAGAIN")]  # pthread_create() says EAGAIN
        # (libuv's pool aborts when it cannot start a thread: pthread_create's
        # allocation is then inside the loader, libuv a few frames up.)
        if "/libbrotlienc" in site or ("/libuv" in site and r.rc == -signal.SIGABRT):
            excused = "library"
        elif "/libjansson" in caller:
            errtexts = []
            if r.rc == -signal.SIGSEGV:
                excused = "library"
        return self.check_run(work, args, r, snap, ref, stale, what, errtexts, excused), site

    def scenario(self, name, make, count_calls=True):
        base = os.path.join(self.tmp, name)
        os.makedirs(base)
        args = make(base)
        # The sources as the injected runs must leave them, and the outputs
        # there before the run that no longer match their sources.
        t = os.path.join(base, "t")
        snap = snapshot(t)
        stale = {}
        for rel, src in outputs(t).items():
            with open(os.path.join(os.fsencode(t), rel), "rb") as f:
                stale[rel] = f.read()
        # The reference: a clean run's outputs, and its calls per thread.
        ref_dir = os.path.join(self.tmp, name + "-ref")
        shutil.copytree(base, ref_dir, symlinks=True)
        log = os.path.join(self.tmp, name + "-count.log")
        names = ",".join(sc for sc, _ in SYSCALLS)
        if count_calls:
            rc, out, err = self.traced(ref_dir, args, ["-e", "trace=" + names], log)
        else:
            p = subprocess.run([PROGRAM] + args, cwd=ref_dir, env=child_env(), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            rc, err = p.returncode, p.stderr
            open(log, "w").close()
        self.assertEqual(rc, 0, err)
        ref = self.check_tree(ref_dir, snap, name + " clean")
        self.assertTrue(ref, "the clean run wrote nothing")
        counts = {}
        with open(log, errors="replace") as f:
            for line in f:
                m = CALL_RE.match(line)
                if m:
                    key = (m.group(2), m.group(1))
                    counts[key] = counts.get(key, 0) + 1
        most = {}
        for (sc, _), k in counts.items():
            most[sc] = max(most.get(sc, 0), k)
        return base, args, snap, ref, stale, most

class StraceInjection(FaultBase):
    """Every system call of SYSCALLS failed in turn (see the docstring)."""

    def setUp(self):
        super().setUp()
        if shutil.which("strace") is None:
            self.skipTest("strace is not installed (apt-get install strace)")
        v = subprocess.run(["strace", "-V"], stdout=subprocess.PIPE, text=True).stdout
        m = re.search(r"version (\d+)\.(\d+)", v)
        if not m or (int(m.group(1)), int(m.group(2))) < (4, 22):
            self.skipTest("strace too old for inject=...:when= with -y: %r" % v.strip())
        try:
            with open("/proc/sys/kernel/yama/ptrace_scope") as f:
                scope = int(f.read())
        except (OSError, ValueError):
            scope = 0
        if STOP_SO and scope >= 1 and os.geteuid() != 0:
            self.skipTest("kernel.yama.ptrace_scope=%d: strace -p cannot attach to a process it did not "
                          "start (run as root, or set it to 0)" % scope)
        probe = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "-e", "inject=close:error=EIO:when=99",
                                "true"], stderr=subprocess.PIPE)
        if probe.returncode != 0:
            self.skipTest("strace cannot trace here (ptrace not permitted?): %r" % probe.stderr)

    def test_strace_injection(self):
        scen = []
        for name, make, stride in (("cold", self.make_cold, 1), ("warm", self.make_warm, 1),
                                   ("big", self.make_big, 3)):
            scen.append((name, stride) + self.scenario(name, make))
        total = sum(-(-s[-1].get(sc, 0) // s[1]) for s in scen for sc, _ in SYSCALLS)
        step = max(1, -(-total // MAX_RUNS))
        log = os.path.join(self.tmp, "inject.log")
        summary = []
        failures = []
        total = {"held": 0, "libuv": 0, "not reached": 0, "failed": 0}
        for name, stride, base, args, snap, ref, stale, most in scen:
            for sc, errs in SYSCALLS:
                top = most.get(sc, 0)
                if top == 0:
                    summary.append("%s %-10s not called" % (name, sc))
                    continue
                ns = sorted(set(list(range(1, top + 1, step * stride)) + [top]))
                tally = {"held": 0, "libuv": 0, "not reached": 0, "failed": 0}
                for n in ns:
                    e = errs[(n - 1) % len(errs)]
                    try:
                        tally[self.one_point(base, args, snap, ref, stale, sc, n, e, log)] += 1
                    except AssertionError as ex:
                        tally["failed"] += 1
                        failures.append(str(ex)[:4000])
                        print("FAILED " + str(ex)[:1500].replace("\n", " | "))
                for k in total:
                    total[k] += tally[k]
                summary.append("%s %-10s N=1..%d (%d runs): %d held, %d libuv, %d not reached, %d failed" % (
                    name, sc, top, len(ns), tally["held"], tally["libuv"], tally["not reached"],
                    tally["failed"]))
        print("\n".join(summary))
        print("fault injection: %d points tried (%s), %d held, %d ended in libuv's abort (excused), "
              "%d not reached, %d failed" % (
                  sum(total.values()), "every N, big every 3rd" if step == 1 else
                  "N in steps of %d, big of %d" % (step, 3 * step), total["held"], total["libuv"],
                  total["not reached"], total["failed"]))
        sys.stdout.flush()
        if failures:
            self.fail("%d injection points failed; the first ones:\n%s" % (
                len(failures), "\n\n".join(failures[:5])))


class MallocFailure(FaultBase):
    """The Nth allocation of the run fails: malloc(), calloc() or realloc()
    of any library or the program, through tests/faults/malloc.c preloaded
    (the code base calls malloc at some sixty places and its libraries at
    many more: an LD_PRELOAD shim reaches them all with no hook in the
    program). Cold and warm scenarios, N from 1 to the count of a clean run
    (about 300 and 470); PC_FAULT_MALLOC_MAX (default 250) caps the runs of
    each scenario: every k-th N above it (1 and the last always). The
    count is over all threads, so which site the Nth is varies a little
    from run to run. The same checks as the strace runs; a failure shows
    the frames of the failed call (module+offset: addr2line -f -e MODULE
    OFFSET). Excused, as the libraries' design or bugs: brotli 1.0.9
    exit()s when its own allocation fails (libuv then aborts at exit),
    libuv aborts when its loop's arrays cannot grow, jansson 2.14 may take
    its failure for bad JSON or crash on it."""

    def setUp(self):
        PCTestCase.setUp(self)
        if not MALLOC_SO:
            self.skipTest("a static program cannot preload the allocation hook")
        with open(PROGRAM, "rb") as f:
            if b"__asan_init" in f.read():
                self.skipTest("a sanitizer build has its own allocator")

    def test_malloc_failure(self):
        summary, failures = [], []
        total = {"held": 0, "library": 0, "not reached": 0, "failed": 0}
        for name, make in (("cold", self.make_cold), ("warm", self.make_warm)):
            base, args, snap, ref, stale, _ = self.scenario(name, make, count_calls=False)
            work = self.fresh(base)
            count_file = os.path.join(self.tmp, "count.txt")
            env = child_env()
            env.update(LD_PRELOAD=MALLOC_SO, PC_FAULT_MALLOC_COUNT=count_file)
            p = subprocess.run([PROGRAM, "-q"] + args, cwd=work, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(count_file) as f:
                top = int(f.read())
            self.assertGreater(top, 10, "the allocation hook saw nothing")
            step = max(1, -(-top // int(os.environ.get("PC_FAULT_MALLOC_MAX", "250"))))
            tally = {"held": 0, "library": 0, "not reached": 0, "failed": 0}
            for n in sorted(set(list(range(1, top + 1, step)) + [top])):
                try:
                    kind, _ = self.malloc_point(base, args, snap, ref, stale, n)
                    tally[kind] += 1
                except AssertionError as ex:
                    tally["failed"] += 1
                    failures.append(str(ex)[:4000])
                    print("FAILED " + str(ex)[:1500].replace("\n", " | "))
            for k in total:
                total[k] += tally[k]
            summary.append("%s malloc N=1..%d (%d runs): %d held, %d library exits, %d not reached, %d failed" % (
                name, top, sum(tally.values()), tally["held"], tally["library"], tally["not reached"],
                tally["failed"]))
        print("\n".join(summary))
        print("allocation failures: %d points tried, %d held, %d ended by a library (excused), "
              "%d not reached, %d failed" % (sum(total.values()), total["held"], total["library"],
                                             total["not reached"], total["failed"]))
        sys.stdout.flush()
        if failures:
            self.fail("%d allocation failures broke the run; the first ones:\n%s" % (
                len(failures), "\n\n".join(failures[:5])))


if __name__ == "__main__":
    main()
