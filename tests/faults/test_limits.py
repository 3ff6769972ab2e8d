#!/usr/bin/python3
"""Resource limits: few descriptors (ulimit -n), little address space
(ulimit -v), more jobs than cores (-j 64 on 2 cores).

Under a limit the run either completes (exit 0, every output the rules call
for, the oracle's bytes) or fails cleanly: exit 1 or 2 with a message on
stderr, never a crash signal, and whatever output exists is whole (no partial
output, no temp file). The limits are set with prlimit(1) on the program
alone. The address-space cases are skipped in sanitizer builds (ASan and TSan
reserve terabytes of address space at start).
"""
import sys

sys.dont_write_bytecode = True
import os
import random
import re
import shutil
import stat
import subprocess
import unittest

from pctest import (PROGRAM, PCTestCase, child_env, classify, decode, gz_oracle, listing, load_json_strict,
                    main, run, sanitized_build, source_snapshot, walk_all, words_data)

HAVE_PRLIMIT = shutil.which("prlimit") is not None
HAVE_TASKSET = shutil.which("taskset") is not None
MB = 1 << 20


def gen_tree(root, n=2000, seed=11):
    """n different text files of 1-8 KiB in 20 directories."""
    r = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join(r.choice(letters) for _ in range(r.randint(2, 11))) for _ in range(3000)]
    for i in range(n):
        d = os.path.join(root, "d%02d" % (i % 20))
        os.makedirs(d, exist_ok=True)
        size = r.randint(1024, 8192)
        parts, k = [], 0
        while k < size:
            line = " ".join(r.choices(vocab, k=r.randint(4, 16))) + ".\n"
            parts.append(line)
            k += len(line)
        with open(os.path.join(d, "f%04d.js" % i), "wb") as f:
            f.write("".join(parts).encode()[:size])


class LimitCase(PCTestCase):
    def setUp(self):
        super().setUp()
        if not HAVE_PRLIMIT:
            self.skipTest("prlimit (util-linux) is missing")
        os.environ.pop("PRECOMPRESS_CACHE_DIR", None)

    def limited(self, limits, args, timeout=300):
        """The program under prlimit, with --json: its counts on stdout, stderr errors alone."""
        return run(limits + ["--", PROGRAM, "--json"] + args, program="prlimit", timeout=timeout)

    def assertCleanOutcome(self, r, root, snap):
        """Completed, or failed cleanly; nothing partial either way. Each exit status as the
        summary says it: 0 no file failed and no other error; 1 the summary counts what failed;
        2 nothing could run (one line saying why, no summary, no output written)."""
        self.assertGreaterEqual(r.rc, 0, "killed by signal %d: %r" % (-r.rc, r))
        self.assertIn(r.rc, (0, 1, 2), r)
        if r.rc != 0:
            self.assertTrue([l for l in r.err_lines if l.startswith("precompress: ")], "failed without a message: %r" % r)
        if r.rc in (0, 1):
            s = r.summary()
            self.assertEqual(s["failed"] + s["errors"] > 0, r.rc == 1, r)
        else:
            self.assertEqual(r.out, "", "exit 2, yet a summary: %r" % r)
        for l in r.err_lines:
            self.assertTrue(l.startswith("precompress: "), "a line that is not ours on stderr: %r" % l)
        n = 0
        for rel, st in walk_all(root).items():
            for fmt in ("gz", "br", "zst"):
                if rel.endswith(b"." + fmt.encode()) and rel[: -len(fmt) - 1] in snap:
                    full = os.path.join(os.fsencode(root), rel)
                    self.assertTrue(stat.S_ISREG(st.st_mode), rel)
                    with open(full[: -len(fmt) - 1], "rb") as f:
                        self.assertEqual(decode(fmt, full), f.read(), "%r does not decode to its source" % rel)
                    n += 1
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)
        if r.rc == 2:
            self.assertEqual(n, 0, "exit 2 (nothing could run), yet outputs were written: %r" % r)
        return n


class Descriptors(LimitCase):
    def test_nofile_64_j64_fixtures(self):
        root = self.copy_site()
        before = listing(root)
        cls = classify(root)
        r = self.limited(["--nofile=64"], ["-j", "64", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        self.assertTreeMatchesOracle(root, before, cls)
        self.assertNoTemps(root)

    def test_nofile_64_j64_2000_files(self):
        root = self.path("tree")
        gen_tree(root)
        snap = source_snapshot(root)
        r = self.limited(["--nofile=64"], ["-j", "64", "--no-brotli", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        self.assertEqual(r.summary()["compressed"], 2000, r)
        for rel in snap:
            full = os.path.join(os.fsencode(root), rel)
            with open(full, "rb") as f, open(full + b".gz", "rb") as g:
                self.assertEqual(g.read(), gz_oracle(f.read()), rel)
        self.assertCleanOutcome(r, root, snap)

    def test_nofile_lower_still(self):
        """Below what the loop itself needs: complete, or one clean failure."""
        seen = {}
        for n in (32, 24, 16, 12, 10, 8, 6):
            with self.subTest(nofile=n):
                root = self.copy_site("site%d" % n)
                snap = source_snapshot(root)
                before = listing(root)
                cls = classify(root)
                r = self.limited(["--nofile=%d" % n], ["-j", "64", root], timeout=60)
                seen[n] = ("killed by signal %d" % -r.rc if r.rc < 0 else
                           "exit %d%s" % (r.rc, (": " + r.error_lines()[0]) if r.rc and r.error_lines() else ""))
                self.assertCleanOutcome(r, root, snap)
                if r.rc == 0:
                    self.assertEqual(r.error_lines(), [], r)
                    self.assertTreeMatchesOracle(root, before, cls)
        print("ulimit -n: " + "; ".join("%d: %s" % kv for kv in seen.items()))


class Cores(LimitCase):
    def test_j64_on_two_cores(self):
        if not HAVE_TASKSET:
            self.skipTest("taskset (util-linux) is missing")
        cpus = sorted(os.sched_getaffinity(0))[:2]
        root = self.path("tree")
        gen_tree(root, n=1000)
        snap = source_snapshot(root)
        m64, m1 = self.path("m64.json"), self.path("m1.json")
        args = ["--brotli-quality", "5", "--zstd"] if os.environ.get("PC_HAVE_ZSTD") == "1" else ["--brotli-quality", "5"]
        r = run(["-c", ",".join(map(str, cpus)), PROGRAM, "--json", "-j", "64", "--manifest", m64] + args + [root],
                program="taskset", timeout=300)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        self.assertEqual(r.summary()["compressed"], 1000, r)
        n = self.assertCleanOutcome(r, root, snap)
        self.assertEqual(n, 1000 * (2 + ("--zstd" in args)))
        for rel in snap:
            full = os.path.join(os.fsencode(root), rel)
            with open(full, "rb") as f, open(full + b".gz", "rb") as g:
                self.assertEqual(g.read(), gz_oracle(f.read()), rel)
        # the same result, byte for byte, as one job at a time
        self.run_ok(["-j", "1", "--force", "--manifest", m1] + args + [root])
        with open(m64, "rb") as a, open(m1, "rb") as b:
            self.assertEqual(a.read(), b.read(), "-j 64 and -j 1 manifests differ")


class AddressSpace(LimitCase):
    def setUp(self):
        super().setUp()
        if sanitized_build():
            self.skipTest("sanitizer build: ASan/TSan cannot start under ulimit -v")

    def test_ulimit_v(self):
        """ulimit -v of 200, 100 and 60 MB at -j 2, 8 and 64 over the fixtures and a 1 MiB
        file (brotli 11, 1 MiB window), and 80 MB over a 4.5 MiB one (8 MiB window):
        completes or fails cleanly."""
        cases = [(mb, jobs, MB) for mb in (200, 100, 60) for jobs in (2, 8, 64)] + [(80, 2, int(4.5 * MB))]
        seen = {}
        for mb, jobs, size in cases:
            name = "%d MB -j %d, %.1f MiB file" % (mb, jobs, size / MB)
            with self.subTest(ulimit_v="%d MB" % mb, jobs=jobs, bundle=size):
                root = self.copy_site("site-%d-%d-%d" % (mb, jobs, size))
                with open(os.path.join(root, "bundle.js"), "wb") as f:
                    f.write(words_data(size, seed=4))
                snap = source_snapshot(root)
                r = self.limited(["--as=%d" % (mb * MB)], ["-j", str(jobs), root])
                seen[name] = ("killed by signal %d" % -r.rc if r.rc < 0 else
                              "exit %d%s" % (r.rc, (": " + r.error_lines()[0]) if r.rc and r.error_lines() else ""))
                self.assertCleanOutcome(r, root, snap)
                if r.rc == 0:
                    self.assertEqual(r.error_lines(), [], r)
                    self.assertTrue(os.path.isfile(os.path.join(root, "bundle.js.br")), r)
        print("ulimit -v: " + "; ".join("%s: %s" % kv for kv in seen.items()))


def code_data(size, seed):
    """Minified-JavaScript-like tokens: brotli 11 takes more memory on them
    than on words_data()'s text (its peak RSS at 300 KiB was 16 MiB against
    3 MiB), as on real bundles."""
    r = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$"
    idents = ["".join(r.choice(letters) for _ in range(r.randint(1, 14))) for _ in range(20000)]
    ops = ["=", "(", ")", "{", "}", ";", ",", ".", "+", "&&", "||", "?", ":", "=>", "[", "]", "!", "===", "\n"]
    out, n = [], 0
    while n < size:
        k = r.random()
        if k < 0.55:
            t = r.choice(idents)
        elif k < 0.9:
            t = r.choice(ops)
        elif k < 0.97:
            t = str(r.randint(0, 1 << r.randint(1, 30)))
        else:
            t = '"%s"' % r.choice(idents)
        out.append(t)
        n += len(t)
    return "".join(out).encode()[:size]


class MemoryLimit(PCTestCase):
    """--memory-limit: what the files in flight may take together, by the
    scheduler's estimates (the JSON summary's "memory" object). Three files of
    700 KiB at brotli 10 each need ~20 MiB: a limit with room for two runs two
    at once, one with room for one never does, one below a single file runs
    each alone and says so; every output decodes to its source."""

    SIZE = 700 << 10

    def tree(self, name):
        root = self.path(name)
        os.makedirs(root)
        for k in range(3):
            with open(os.path.join(root, "big%d.js" % k), "wb") as f:
                f.write(words_data(self.SIZE, seed=40 + k))
        return root

    def run_json(self, root, *extra):
        r = run(["--json", "-j2", "--no-gzip", "--brotli-quality", "10"] + list(extra) + [root])
        self.assertEqual(r.rc, 0, r)
        for k in range(3):
            src = os.path.join(root, "big%d.js" % k)
            with open(src, "rb") as f:
                self.assertEqual(decode("br", src + ".br"), f.read(), src)
        # -v puts its per-file lines on stdout before the JSON object
        return r, r.summary()["memory"]

    def one_file_estimate(self):
        _, m = self.run_json(self.tree("one"), "-j1")
        # -j1: one file at a time, so the peak is one file's estimate
        self.assertGreater(m["peak_estimate"], 14 << 20, m)
        return m["peak_estimate"]

    def test_room_for_two(self):
        est = self.one_file_estimate()
        limit = est * 5 // 2
        _, m = self.run_json(self.tree("two"), "--memory-limit", str(limit))
        self.assertEqual(m["limit"], limit, m)
        self.assertEqual(m["source"], "--memory-limit", m)
        self.assertGreaterEqual(m["peak_estimate"], 2 * est, "two big files were never in flight at once: %r" % m)
        self.assertLessEqual(m["peak_estimate"], limit, m)
        self.assertEqual(m["ran_alone"], 0, m)

    def test_room_for_one(self):
        est = self.one_file_estimate()
        limit = est * 3 // 2
        _, m = self.run_json(self.tree("one-at-a-time"), "--memory-limit", str(limit))
        self.assertEqual(m["limit"], limit, m)
        self.assertLess(m["peak_estimate"], 2 * est, "two big files in flight at once under a limit for one: %r" % m)
        self.assertLessEqual(m["peak_estimate"], limit, m)
        self.assertEqual(m["ran_alone"], 0, m)

    def test_below_one_file_runs_each_alone(self):
        est = self.one_file_estimate()
        root = self.tree("alone")
        r, m = self.run_json(root, "--memory-limit", "4M", "-v")
        self.assertEqual(m["limit"], 4 << 20, m)
        self.assertEqual(m["ran_alone"], 3, m)
        # never two at once: the peak is one file's estimate
        self.assertLess(m["peak_estimate"], 2 * est, m)
        notes = [l for l in r.err_lines if "ran alone" in l]
        self.assertEqual(len(notes), 3, r.err)
        self.assertTrue(all("4.0 MiB memory limit" in l for l in notes), notes)

    def test_estimate_covers_the_peak_rss(self):
        # The estimates are what the limit is kept by: one file at a time,
        # the process's peak RSS above an empty run's must stay within the
        # file's estimate, brotli 11's blocks on huge pages included. GNU
        # time forks the program from its own small image: a child forked
        # from this Python would carry Python's RSS into ru_maxrss.
        if sanitized_build():
            self.skipTest("a sanitizer's shadow memory is not the program's")
        if not os.path.exists("/usr/bin/time"):
            self.skipTest("GNU time (Debian: time) is not installed")

        def peak(root, quality):
            p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", self.path("rss"), PROGRAM, "--json", "-j1",
                                "--no-gzip", "--brotli-quality", str(quality), root], env=child_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(self.path("rss")) as f:
                kib = int(f.read().split()[-1])
            return kib << 10, load_json_strict(p.stdout)["memory"]["peak_estimate"]

        base, _ = peak(self.tree_of("empty", None), 11)
        # 11, the default (measured table); 9 and 5, hash tables of 32 and 2 MiB beside what
        # grows with the input.
        for quality in (11, 9, 5):
            for size in (300 << 10, 1200 << 10, 5000 << 10):
                root = self.tree_of("q%d-%d" % (quality, size), size)
                rss, est = peak(root, quality)
                self.assertLessEqual(rss - base, est, "q%d, %d bytes: peak RSS %d KiB, an empty run's %d KiB" %
                                     (quality, size, rss >> 10, base >> 10))

    def tree_of(self, name, size):
        root = self.path(name)
        os.makedirs(root)
        if size is not None:
            with open(os.path.join(root, "a.js"), "wb") as f:
                f.write(code_data(size, seed=size))
        return root

    def test_default_and_none(self):
        root = self.tree("default")
        _, m = self.run_json(root)
        self.assertIn(m["source"], ("cgroup memory.max", "cgroup memory.high", "cgroup v1 memory.limit_in_bytes",
                                    "RLIMIT_AS", "RLIMIT_DATA", "MemAvailable", "none"), m)
        # -v: the summary line says which limit was taken and why (a text for people, so read
        # as text: the summary line is the last line on stderr)
        r = run(["-v", "--force", "--no-gzip", "--brotli-quality", "1", root])
        self.assertEqual(r.rc, 0, r)
        rest = r.err_lines[-1]
        if m["source"] == "none":
            self.assertIsNone(m["limit"], m)
            self.assertIn("no memory limit (none found", rest)
        else:
            self.assertEqual(m["limit"], m["found"] // 2, m)
            # MemAvailable moves between two runs: the figures are this run's own
            mm = re.search(r"memory limit ([0-9.]+ [KMGT]iB) \(half of (.+), ([0-9.]+ [KMGT]iB)\)", rest)
            self.assertIsNotNone(mm, rest)
            self.assertEqual(mm.group(2), m["source"], rest)
        self.assertIn(", peak estimate ", rest)
        _, m = self.run_json(root, "--memory-limit", "0")
        self.assertIsNone(m["limit"], m)
        r = run(["-v", "--memory-limit", "0", "--no-gzip", "--brotli-quality", "1", root])
        self.assertEqual(len(r.err_lines), 1, "the summary line alone on stderr: %r" % r)
        self.assertIn("; no memory limit (--memory-limit 0), peak estimate ", r.err_lines[-1])

    def test_bad_values(self):
        root = self.tree("bad")
        for v in ("", "-1", "12X", "1.5G", "18446744073709551616", "99999999999G"):
            with self.subTest(value=v):
                r = run(["--memory-limit", v, root])
                self.assertEqual(r.rc, 2, r)
                self.assertIn("invalid --memory-limit", r.err, r)

    @unittest.skipUnless(HAVE_PRLIMIT, "prlimit (util-linux) is missing")
    def test_rlimit_data_is_a_source(self):
        if sanitized_build():
            self.skipTest("sanitizer build: its runtime maps more than RLIMIT_DATA allows")
        root = self.tree("rlimit")
        r = run(["--data=%d" % (3 << 30), "--", PROGRAM, "--json", "-q", "--no-gzip", "--brotli-quality", "1", root],
                program="prlimit")
        self.assertEqual(r.rc, 0, r)
        m = r.summary()["memory"]
        if m["found"] is not None and m["found"] < (3 << 30) and m["source"] != "RLIMIT_DATA":
            self.skipTest("this machine has a smaller bound already: %r" % m)
        self.assertEqual((m["source"], m["found"], m["limit"]), ("RLIMIT_DATA", 3 << 30, 3 << 29), m)

if __name__ == "__main__":
    main()
