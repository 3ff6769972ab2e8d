#!/usr/bin/python3
"""Crash safety, tested by killing it (suite 'slow').

A generated tree of 2,500 text files (1-32 KiB) and four of 2-6 MiB, all
different, made from a seeded PRNG. KillAtRandom starts precompress on it,
SIGKILLs it at a seeded random moment (>= 50 seeds; gzip alone for most runs,
brotli on the whole tree at quality 5 or on a subdirectory at quality 11 for
some, zstd for some when the build has it), then checks that every .gz/.br/
.zst under a final name decodes to its source's current bytes (a .gz is also
the oracle's bytes), that no source changed (hash, size, mode, mtime, inode)
and that nothing but sources, outputs and our temp files is in the tree; then
runs it again to completion: exit 0, every output there and decoding, no temp
file anywhere. SignalStop does the same with SIGINT and SIGTERM (a dozen each,
with -v and --manifest): exit 130/143 within a second of the signal, no temp
file, the outputs on disk exactly those -v reported, at most -j files
finished after the signal, and a valid manifest marked incomplete that lists
exactly the finished files. KillOutputDir kills runs with --output-dir the
same way: the tree keeps its sources alone, every output under a final name in
DIR decodes, and the next run completes with no temp file left in DIR.
"""
import sys

sys.dont_write_bytecode = True
import gzip
import hashlib
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time

from pctest import (PROGRAM, TEMP_RE, PCTestCase, brotli, child_env, entry_sum, sanitized_build, store_rows,
                    gz_oracle, have_zstd_build, keeps, load_json_strict, main, walk_all)

NFILES = 2500
NDIRS = 40
BIG = ((b"d00", b"big0.js", 2), (b"d02", b"big1.css", 3), (b"d03", b"big2.html", 4), (b"d05", b"big3.txt", 6))
KILL_SEEDS = int(os.environ.get("PC_KILL_SEEDS", "60"))
SIGNAL_RUNS = int(os.environ.get("PC_SIGNAL_RUNS", "12"))
JOBS = 2


# A sanitizer build runs the same code several times slower: the one-second
# bound of a signal is checked against 1 s in a plain build only.
STOP_LIMIT = 1.0 if not sanitized_build() else 3.0
# "Within a second" is judged by the CPU the process spends after the signal
# (at most STOP_LIMIT on each of its JOBS workers): a run that goes on
# compressing spends it whatever the load, and one that stops does not,
# however long other processes keep it off the CPU. Wall time only has to
# stay under this much, against a stop that waits instead of working.
STOP_WALL_LIMIT = 5 * STOP_LIMIT
CLK_TCK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU of every thread of pid so far (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def gen_text(r, vocab, size):
    parts = []
    n = 0
    while n < size:
        line = " ".join(r.choices(vocab, k=r.randint(4, 16))) + ".\n"
        parts.append(line)
        n += len(line)
    return "".join(parts).encode()[:size]


class Tree:
    """The pristine tree, made once per process, with its oracle."""

    def __init__(self, base, seed=20250104):
        self.root = os.path.join(base, "pristine")
        self.files = {}
        r = random.Random(seed)
        letters = "abcdefghijklmnopqrstuvwxyz"
        vocab = ["".join(r.choice(letters) for _ in range(r.randint(2, 11))) for _ in range(5000)]
        exts = [".js", ".css", ".html", ".txt", ".svg", ".json", ".xml", ".md"]
        for i in range(NFILES):
            rel = b"d%02d/s%d/f%04d%s" % (i % NDIRS, i % 7, i, r.choice(exts).encode())
            self.files[rel] = gen_text(r, vocab, int(1024 * 2 ** r.uniform(0, 4)))
        for d, name, mb in BIG:
            self.files[d + b"/" + name] = gen_text(r, vocab, mb << 20)
        for rel, data in self.files.items():
            full = os.path.join(os.fsencode(self.root), rel)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as f:
                f.write(data)
        self.sha = {rel: hashlib.sha256(d).digest() for rel, d in self.files.items()}
        self.gz = {rel: gz_oracle(d) for rel, d in self.files.items()}
        for rel, blob in self.gz.items():
            # Every file is well worth compressing, in any format: the rules call
            # for every output of every enabled format.
            assert keeps(len(blob), len(self.files[rel])) and len(blob) < 0.8 * len(self.files[rel]), rel
        self.total = sum(len(d) for d in self.files.values())


_TREE = None
_TREE_DIR = None


def scratch_base():
    """Where the trees go: PC_KILL_DIR, else /dev/shm when it has room (a tmpfs:
    the many complete runs are then not waiting on a disk), else the temp dir."""
    if os.environ.get("PC_KILL_DIR"):
        return os.environ["PC_KILL_DIR"]
    try:
        st = os.statvfs("/dev/shm")
        if st.f_bavail * st.f_frsize > (1 << 30) and os.access("/dev/shm", os.W_OK):
            return "/dev/shm"
    except OSError:
        pass
    return None


def tree():
    global _TREE, _TREE_DIR
    if _TREE is None:
        _TREE_DIR = tempfile.mkdtemp(prefix="pc-kill-tree-", dir=scratch_base())
        _TREE = Tree(_TREE_DIR)
    return _TREE


def tearDownModule():
    if _TREE_DIR is not None:
        shutil.rmtree(_TREE_DIR, ignore_errors=True)


OUT_RE = re.compile(rb"^(.+)\.(gz|br|zst)$")
VERBOSE_RE = re.compile(r"^compressed (.+) \((\d+) -> (.*)\)$")


class KillBase(PCTestCase):
    def setUp(self):
        super().setUp()
        self.tree = tree()
        self.w = os.path.join(tempfile.mkdtemp(prefix="pc-kill-", dir=scratch_base()), "w")
        self.addCleanup(shutil.rmtree, os.path.dirname(self.w), True)
        shutil.copytree(self.tree.root, self.w)
        self.bw = os.fsencode(self.w)
        self.snap = {}
        for rel in self.tree.files:
            st = os.lstat(os.path.join(self.bw, rel))
            self.snap[rel] = (st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns)
        self.verified = 0

    # -- running -------------------------------------------------------------

    def start(self, args):
        out = tempfile.TemporaryFile(dir=self.tmp)
        err = tempfile.TemporaryFile(dir=self.tmp)
        p = subprocess.Popen([PROGRAM] + args, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=child_env(cache=False))
        return p, out, err

    @staticmethod
    def collect(f):
        f.seek(0)
        data = f.read().decode("utf-8", "surrogateescape")
        f.close()
        return data

    def run_to_end(self, args, timeout=600):
        p, out, err = self.start(args)
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            self.fail("precompress did not finish within %d s: %r" % (timeout, args))
        return p.returncode, self.collect(out), self.collect(err)

    def remove_outputs(self):
        for rel in list(walk_all(self.w)):
            if OUT_RE.match(rel) and OUT_RE.match(rel).group(1) in self.tree.files:
                os.unlink(os.path.join(self.bw, rel))

    # -- checking ------------------------------------------------------------

    def scan(self, root=None):
        """{output rel: (source rel, fmt)}, [temp rels] in the tree, or below `root` (an
        output directory, where no source belongs); fails on anything else."""
        in_tree = root is None
        root = self.w if in_tree else root
        outs, temps = {}, []
        for rel, st in walk_all(root).items() if os.path.isdir(root) else ():
            if stat.S_ISDIR(st.st_mode) or (in_tree and rel in self.tree.files):
                continue
            m = OUT_RE.match(rel)
            if m and m.group(1) in self.tree.files:
                self.assertTrue(stat.S_ISREG(st.st_mode), "%r is not a regular file" % rel)
                outs[rel] = (m.group(1), m.group(2).decode())
                continue
            base = os.path.basename(rel)
            if TEMP_RE.match(base):
                # .NAME.EXT.XXXXXX.tmp beside NAME
                name = base[1:-len(b".XXXXXX.tmp")]
                src = os.path.join(os.path.dirname(rel), OUT_RE.match(name).group(1))
                self.assertIn(src, self.tree.files, "temp file %r of no source" % rel)
                temps.append(rel)
                continue
            self.fail("unexpected entry in %s: %r" % ("the tree" if in_tree else "DIR", rel))
        return outs, temps

    def check_sources(self):
        for rel, want in self.snap.items():
            full = os.path.join(self.bw, rel)
            st = os.lstat(full)
            self.assertEqual((st.st_ino, st.st_size, st.st_mode, st.st_mtime_ns), want,
                             "source %r changed (inode, size, mode or mtime)" % rel)
            with open(full, "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).digest(), self.tree.sha[rel], "source %r changed" % rel)

    def check_outputs(self, outs, root=None):
        """Every output decodes to its source's bytes (a .gz is the oracle's bytes); the
        outputs' rels are below root (bytes; default: the tree, in place)."""
        zst = []
        for rel, (src, fmt) in sorted(outs.items()):
            full = os.path.join(root or self.bw, rel)
            data = self.tree.files[src]  # the current bytes: check_sources() compared them
            if fmt == "zst":
                zst.append((full, data))
                continue
            with open(full, "rb") as f:
                blob = f.read()
            try:
                got = gzip.decompress(blob) if fmt == "gz" else brotli.decompress(blob)
            except Exception as e:  # noqa: BLE001 - any decoder error is the failure
                self.fail("%r (%d bytes) does not decode: %s" % (rel, len(blob), e))
            self.assertTrue(got == data, "%r decodes to %d bytes, not its source's %d" % (rel, len(got), len(data)))
            if fmt == "gz":
                self.assertTrue(blob == self.tree.gz[src], "%r: bytes differ from the oracle" % rel)
        if zst:
            # One zstd for all of them: the outputs concatenated must equal the sources concatenated.
            p = subprocess.run(["zstd", "-d", "-c", "-q", "--"] + [f for f, _ in zst], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=300)
            if p.returncode != 0 or p.stdout != b"".join(d for _, d in zst):
                for full, data in zst:
                    q = subprocess.run(["zstd", "-d", "-c", "-q", "--", full], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, timeout=60)
                    self.assertEqual(q.returncode, 0, "%r does not decode: %s" % (full, q.stderr))
                    self.assertTrue(q.stdout == data, "%r does not decode to its source" % full)
                self.fail("zstd -d over all .zst outputs failed: %s" % p.stderr)
        self.verified += len(outs)

    def check_tree(self, temps_ok):
        outs, temps = self.scan()
        if not temps_ok:
            self.assertEqual(temps, [], "temp files left behind")
        self.check_sources()
        self.check_outputs(outs)
        return outs, temps

    def check_complete(self, scope, formats, outs):
        """Every output the rules call for under scope (a dir rel or b'') exists."""
        missing = []
        for rel in self.tree.files:
            if scope and not rel.startswith(scope + b"/"):
                continue
            for fmt in formats:
                if rel + b"." + fmt.encode() not in outs:
                    missing.append(rel + b"." + fmt.encode())
        self.assertEqual(missing[:20], [], "%d outputs missing after a complete run" % len(missing))


class KillAtRandom(KillBase):
    def modes(self):
        zst = have_zstd_build()
        return {
            # name: (arguments, path below the tree or b"", formats written)
            "gz": (["--no-brotli"], b"", ("gz",)),
            "br5": (["--brotli-quality", "5"], b"", ("gz", "br")),
            "br11": ([], b"d01", ("gz", "br")),
            "zst": ((["--no-brotli", "--zstd", "--zstd-level", "6"], b"", ("gz", "zst")) if zst
                    else (["--no-brotli"], b"", ("gz",))),
        }

    def complete(self, mode, extra=()):
        args, scope, formats = self.modes()[mode]
        target = os.path.join(self.w, os.fsdecode(scope)) if scope else self.w
        t0 = time.monotonic()
        # -q: no summary line, so whatever stderr holds is an error
        rc, out, err = self.run_to_end(["-q", "-j", str(JOBS)] + args + list(extra) + [target])
        took = time.monotonic() - t0
        self.assertEqual(rc, 0, "the run after a kill must complete: %s\n%s" % (args, err[-3000:]))
        self.assertEqual([l for l in err.splitlines() if l], [], "error lines: %s" % err[-3000:])
        outs, temps = self.check_tree(temps_ok=False)
        self.check_complete(scope, formats, outs)
        return took

    def test_sigkill_at_random_moments(self):
        modes = self.modes()
        cycle = ["gz", "br5", "gz", "br11", "gz", "zst", "gz", "gz"]
        # Typical run time of each mode, from a complete run over a tree without outputs.
        typical = {}
        for mode in dict.fromkeys(cycle):
            self.remove_outputs()
            typical[mode] = self.complete(mode)
        print("typical run times: %s" % ", ".join("%s %.2f s" % kv for kv in typical.items()))
        # The same with a warm cache (a cache of its own, filled first): copies out of the
        # store are much faster than compressing, and a kill drawn from the times above would
        # mostly come after the end.
        warm = self.path("cache-typical")
        typical_cached = {}
        for mode in dict.fromkeys(cycle):
            self.remove_outputs()
            self.complete(mode, ["--cache-dir", warm])
            self.remove_outputs()
            typical_cached[mode] = self.complete(mode, ["--cache-dir", warm])
        print("with a warm cache: %s" % ", ".join("%s %.2f s" % kv for kv in typical_cached.items()))

        kills = early = temps_seen = with_temps = chained = 0
        # Every other seed runs with a content cache shared by all of them: the
        # store's writer is killed mid-batch too, and later runs copy outputs out of it.
        cache = self.path("cache")
        for seed in range(KILL_SEEDS):
            r = random.Random(seed)
            mode = cycle[seed % len(cycle)]
            extra = ["--cache-dir", cache] if seed % 2 else []
            args, scope, formats = modes[mode]
            target = os.path.join(self.w, os.fsdecode(scope)) if scope else self.w
            if r.random() < 0.5:
                self.remove_outputs()  # else: over the outputs of the last complete run
            # a gzip-only run is sometimes killed twice before the run that completes it
            rounds = 2 if mode == "gz" and r.random() < 0.3 else 1
            for k in range(rounds):
                delay = r.uniform(0.005, 0.85 * (typical_cached if extra else typical)[mode])
                with self.subTest(seed=seed, mode=mode, round=k, delay=round(delay, 3)):
                    p, out, err = self.start(["-j", str(JOBS)] + args + extra + [target])
                    time.sleep(delay)
                    if p.poll() is None:
                        p.kill()
                        kills += 1
                        chained += k
                    else:
                        early += 1
                    p.wait()
                    self.collect(out)
                    errtext = self.collect(err)
                    self.assertIn(p.returncode, (-signal.SIGKILL, 0), errtext)
                    outs, temps = self.check_tree(temps_ok=True)
                    temps_seen += len(temps)
                    with_temps += bool(temps)
            with self.subTest(seed=seed, mode=mode, step="complete"):
                self.complete(mode, extra)
        print("kills: %d, outputs verified: %d" % (kills, self.verified))
        rows = store_rows(cache)
        self.assertGreater(len(rows), 0, "no run stored anything in the cache")
        bad = [e["id"] for e in rows if e["sum"] != entry_sum(e["key"], e["lim"], e["data"])]
        self.assertEqual(bad, [], "entries whose bytes are wrong after the kills")
        print("cache entries after the kills: %d, all verified" % len(rows))
        print("(runs that finished before their kill: %d; kills that left temp files: %d, %d temp files in all; "
              "second kills before a complete run: %d)" % (early, with_temps, temps_seen, chained))
        self.assertGreaterEqual(kills, 50, "fewer than 50 runs were killed while running")
        self.assertGreater(with_temps, 0, "no kill ever left a temp file: the kills did not land mid-write")


class KillOutputDir(KillBase):
    """--output-dir: SIGKILL at random moments (gzip alone, or with brotli
    at quality 5), DIR sometimes removed first. After each kill the tree holds its sources
    alone, unchanged, and every output under a final name in DIR decodes to its source (a .gz
    is the oracle's bytes; temps of ours are allowed); then a run completes: exit 0, no error
    line, every output there, no temp file left in DIR."""
    SEEDS = max(12, KILL_SEEDS // 4)

    def setUp(self):
        super().setUp()
        self.out = os.path.join(os.path.dirname(self.w), "out")
        self.bout = os.fsencode(self.out)

    def check_dir(self, temps_ok):
        self.assertEqual(self.scan(), ({}, []), "written inside the PATH")
        self.check_sources()
        outs, temps = self.scan(self.out)
        if not temps_ok:
            self.assertEqual(temps, [], "temp files left in DIR")
        self.check_outputs(outs, self.bout)
        return outs, temps

    def complete(self, args):
        rc, _, err = self.run_to_end(["-q", "-j", str(JOBS), "--output-dir", self.out] + args + [self.w])
        self.assertEqual(rc, 0, "the run after a kill must complete: %s\n%s" % (args, err[-3000:]))
        self.assertEqual([l for l in err.splitlines() if l], [], "error lines: %s" % err[-3000:])
        outs, _ = self.check_dir(temps_ok=False)
        fmts = ("gz", "br") if "--no-brotli" not in args else ("gz",)
        missing = [rel + b"." + f.encode() for rel in self.tree.files for f in fmts
                   if rel + b"." + f.encode() not in outs]
        self.assertEqual(missing[:20], [], "%d outputs missing after a complete run" % len(missing))

    def test_sigkill_at_random_moments(self):
        modes = {"gz": ["--no-brotli"], "br5": ["--brotli-quality", "5"]}
        typical = {}
        for mode, args in modes.items():
            shutil.rmtree(self.out, ignore_errors=True)
            t0 = time.monotonic()
            self.complete(args)
            typical[mode] = time.monotonic() - t0
        kills = with_temps = 0
        for seed in range(self.SEEDS):
            r = random.Random(500 + seed)
            mode = "br5" if seed % 3 == 2 else "gz"
            args = modes[mode]
            if r.random() < 0.5:
                shutil.rmtree(self.out)  # else: over the outputs of the last complete run
            delay = r.uniform(0.005, 0.85 * typical[mode])
            with self.subTest(seed=seed, mode=mode, delay=round(delay, 3)):
                p, out, err = self.start(["-j", str(JOBS), "--output-dir", self.out] + args + [self.w])
                time.sleep(delay)
                if p.poll() is None:
                    p.kill()
                    kills += 1
                p.wait()
                self.collect(out)
                errtext = self.collect(err)
                self.assertIn(p.returncode, (-signal.SIGKILL, 0), errtext)
                _, temps = self.check_dir(temps_ok=True)
                with_temps += bool(temps)
            with self.subTest(seed=seed, mode=mode, step="complete"):
                self.complete(args)
        print("--output-dir kills: %d (%d left temp files in DIR), outputs verified: %d"
              % (kills, with_temps, self.verified))
        self.assertGreaterEqual(kills, self.SEEDS // 2, "too few runs were killed while running")


class SignalStop(KillBase):
    """SIGINT and SIGTERM: stop within a second, clean up, exit 130/143."""

    def one(self, sig, want_rc, seed):
        r = random.Random(1000 + seed)
        man = self.path("m.json")
        # One run in three with brotli 11 on the whole tree (with gzip, or
        # alone): a multi-MB file is then always in flight when the signal comes.
        heavy = seed % 3 == 0
        args = (["--no-gzip"] if seed % 6 == 3 else []) if heavy else ["--no-brotli"]
        delay = r.uniform(0.1, 2.5) if heavy else r.uniform(0.02, 0.7 * self.typical)
        for attempt in range(6):
            self.remove_outputs()
            if os.path.lexists(man):
                os.unlink(man)
            p, out, err = self.start(["-v", "--json", "-j", str(JOBS), "--manifest", man] + args + [self.w])
            time.sleep(delay)
            if p.poll() is None:
                break
            # finished before the signal (a busy machine is faster some moments): sooner
            self.collect(out)
            self.collect(err)
            delay /= 2
        else:
            self.fail("every run finished before its signal")
        cpu0 = cpu_seconds(p.pid)
        p.send_signal(sig)
        t_sent = time.time_ns()
        t0 = time.monotonic()
        deadline = t0 + 30
        while True:  # wait4: the child's CPU comes with its status
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                p.wait()
                self.fail("did not stop within 30 s of signal %d" % sig)
            time.sleep(0.005)
        took = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        cpu = usage.ru_utime + usage.ru_stime - cpu0
        self.stops.append((took, cpu, "heavy" if heavy else "gz"))
        out_s, err_s = self.collect(out), self.collect(err)
        self.assertEqual(p.returncode, want_rc, err_s[-2000:])
        self.assertLessEqual(cpu, JOBS * STOP_LIMIT,
                             "spent %.2f s of CPU after the signal (%.3f s wall)" % (cpu, took))
        self.assertLessEqual(took, STOP_WALL_LIMIT, "stopped %.3f s after the signal" % took)
        # --json: the summary is the last line of stdout, stderr holds the errors alone
        self.assertEqual([l for l in err_s.splitlines() if l], ["precompress: interrupted"], err_s[-2000:])
        out_lines = out_s.splitlines()
        self.assertTrue(out_lines and out_lines[-1].startswith("{"), "no --json summary: %r" % out_s[-2000:])
        summary = load_json_strict(out_lines.pop())
        self.assertEqual(summary["exit"], want_rc, summary)

        outs, temps = self.check_tree(temps_ok=False)

        # What -v reported is exactly what is on disk.
        reported = {}
        prefix = self.w + "/"
        for line in out_lines:
            m = VERBOSE_RE.match(line)
            self.assertTrue(m, "unexpected -v line %r" % line)
            path = m.group(1)
            self.assertTrue(path.startswith(prefix), line)
            rel = os.fsencode(path[len(prefix):])
            self.assertNotIn(rel, reported, "reported twice: %r" % line)
            fm = {}
            for part in m.group(3).split(", "):
                fmt, size = part.split(" ")
                fm[fmt] = int(size)
            reported[rel] = fm
        on_disk = {}
        for rel, (src, fmt) in outs.items():
            on_disk.setdefault(src, {})[fmt] = os.lstat(os.path.join(self.bw, rel)).st_size
        self.assertEqual(on_disk, reported, "the outputs on disk are not those -v reported")

        # At most one file per job finished after the signal (ctime: the commit).
        grace = 20 * 1000 * 1000
        late = sorted(src for src in on_disk
                      if max(os.lstat(os.path.join(self.bw, src + b"." + f.encode())).st_ctime_ns
                             for f in on_disk[src]) > t_sent + grace)
        self.assertLessEqual(len(late), JOBS, "files finished after the signal: %r" % late)

        # The manifest: valid JSON, incomplete, exactly the finished files.
        with open(man, "rb") as f:
            m = load_json_strict(f.read())
        self.assertIs(m.get("incomplete"), True)
        listed = {}
        for e in m["files"]:
            rel = os.fsencode(e["path"])
            self.assertNotIn("error", e)
            listed[rel] = {f: e[f]["size"] for f in ("gz", "br", "zst") if f in e and "size" in e[f]}
        self.assertEqual(listed, reported, "the manifest does not list exactly the finished files")
        self.assertEqual(m["totals"]["files"], len(reported))
        return took, len(reported), heavy

    def signal_runs(self, sig, want_rc):
        self.stops = []
        done = []
        # How long a complete gzip-only run takes, for the moments of the signals.
        self.remove_outputs()
        t0 = time.monotonic()
        rc, _, err = self.run_to_end(["-j", str(JOBS), "--no-brotli", self.w])
        self.typical = time.monotonic() - t0
        self.assertEqual(rc, 0, err)
        for seed in range(SIGNAL_RUNS):
            with self.subTest(signal=sig, seed=seed):
                took, n, heavy = self.one(sig, want_rc, seed)
                done.append(n)
        heavy = sorted((t, c) for t, c, kind in self.stops if kind == "heavy")
        light = sorted((t, c) for t, c, kind in self.stops if kind != "heavy")
        print("%s: %d runs; stop after the signal, wall s / CPU s (CPU limit %.1f s): gzip only (a run takes "
              "%.2f s), slowest %s; with brotli 11, %s; files finished per passing run: %s"
              % (signal.Signals(sig).name, len(self.stops), JOBS * STOP_LIMIT, self.typical,
                 "%.3f/%.2f" % max(light or [(0, 0)]), ", ".join("%.3f/%.2f" % tc for tc in heavy), done))
        print("outputs verified: %d" % self.verified)

    def test_sigint(self):
        self.signal_runs(signal.SIGINT, 130)

    def test_sigterm(self):
        self.signal_runs(signal.SIGTERM, 143)


if __name__ == "__main__":
    main()
