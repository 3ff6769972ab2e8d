#!/usr/bin/python3
"""--shard K/N and merge-manifests: four shards give the trees and, merged, the
manifest of one run over the whole job, byte for byte."""
import sys

sys.dont_write_bytecode = True
import hashlib
import os
import shutil

from pctest import PCTestCase, SITE, main, run, words_data

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)


def tree_digest(root):
    """{relative bytes path: (sha256, mode, mtime_ns)} of every regular file."""
    out = {}
    broot = os.fsencode(root)
    for dirpath, _, files in os.walk(broot):
        for f in files:
            p = os.path.join(dirpath, f)
            if os.path.islink(p):
                continue
            st = os.stat(p)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, broot)] = (hashlib.sha256(fh.read()).hexdigest(), st.st_mode,
                                                 st.st_mtime_ns)
    return out


class Shards(PCTestCase):
    def make_job(self):
        """Two roots: the fixtures, and a tree of many small files plus a
        name that is not UTF-8 (it must merge through path_hex)."""
        job = self.path("job")
        shutil.copytree(SITE, os.path.join(job, "site"), symlinks=True)
        many = os.path.join(job, "many")
        for i in range(120):
            d = os.path.join(many, "d%02d" % (i % 7))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "f%03d.txt" % i), "wb") as f:
                f.write(words_data(300 + 37 * i, seed=i))
        with open(os.path.join(os.fsencode(many), b"bad\xff name.txt"), "wb") as f:
            f.write(words_data(2000, seed=999))
        pristine = self.path("pristine")
        shutil.copytree(job, pristine, symlinks=True)
        return job, pristine

    def test_four_shards_equal_one_run(self):
        job, pristine = self.make_job()
        roots = [os.path.join(job, "site"), os.path.join(job, "many")]
        single = self.path("single.json")
        self.run_ok(["-q", "--no-brotli", "--zstd" if os.environ.get("PC_HAVE_ZSTD") == "1" else "--no-brotli",
                     "--manifest", single] + roots)
        want_tree = tree_digest(job)
        with open(single, "rb") as f:
            want_manifest = f.read()

        shutil.rmtree(job)
        shutil.copytree(pristine, job, symlinks=True)
        parts = []
        counts = []
        for k in range(1, 5):
            m = self.path("shard-%d.json" % k)
            self.run_ok(["-q", "--no-brotli", "--zstd" if os.environ.get("PC_HAVE_ZSTD") == "1" else "--no-brotli",
                         "--shard", "%d/4" % k, "--manifest", m] + roots)
            parts.append(m)
            with open(m, "rb") as f:
                counts.append(f.read().count(b'"path": '))
        # Every shard took a real part: the split is not all-or-nothing.
        for c in counts:
            self.assertGreater(c, 10, counts)
        merged = self.path("merged.json")
        r = run(["merge-manifests", merged] + parts)
        self.assertEqual(r.rc, 0, r)
        with open(merged, "rb") as f:
            self.assertEqual(f.read(), want_manifest, "merged manifest differs from the single run's")
        self.assertEqual(tree_digest(job), want_tree, "shards wrote other outputs than one run")
        self.assertIn(b"path_hex", want_manifest)

    def test_shards_partition_the_files(self):
        job, _ = self.make_job()
        seen = []
        for k in range(1, 4):
            r = run(["-v", "-n", "--no-brotli", "--shard", "%d/3" % k, job])
            self.assertEqual(r.rc, 0, r)
            seen.append({l.split(" ", 1)[1].rsplit(" (", 1)[0] for l in r.out_lines
                         if l.startswith(("compressed ", "skipped "))})
        every = run(["-v", "-n", "--no-brotli", job])
        allfiles = {l.split(" ", 1)[1].rsplit(" (", 1)[0] for l in every.out_lines
                    if l.startswith(("compressed ", "skipped "))}
        self.assertEqual(set().union(*seen), allfiles)
        self.assertEqual(sum(len(s) for s in seen), len(allfiles), "a file was taken by two shards")

    def test_merge_refuses_overlap_and_mismatch(self):
        job, _ = self.make_job()
        a, b, c = self.path("a.json"), self.path("b.json"), self.path("c.json")
        self.run_ok(["-q", "--no-brotli", "--shard", "1/2", "--manifest", a, job])
        self.run_ok(["-q", "--no-brotli", "--gzip-level", "6", "--shard", "2/2", "--manifest", b, job])
        out = self.path("out.json")
        r = run(["merge-manifests", out, a, a])
        self.assertEqual(r.rc, 1, r)
        self.assertIn("overlap", r.err)
        r = run(["merge-manifests", out, a, b])
        self.assertEqual(r.rc, 1, r)
        self.assertIn(b, r.err)
        with open(c, "w") as f:
            f.write("{not json")
        r = run(["merge-manifests", out, a, c])
        self.assertEqual(r.rc, 1, r)
        self.assertIn(c, r.err)
        self.assertFalse(os.path.exists(out), "a failed merge wrote its output")
        r = run(["merge-manifests", out])
        self.assertEqual(r.rc, 2, r)

    def test_merge_to_stdout(self):
        """merge-manifests - IN...: the merged bytes on stdout, the same as
        a merge into a file; no file named '-' anywhere; nothing else on
        stdout; a bad input still fails with nothing written."""
        job, _ = self.make_job()
        a, b = self.path("a.json"), self.path("b.json")
        self.run_ok(["-q", "--no-brotli", "--shard", "1/2", "--manifest", a, job])
        self.run_ok(["-q", "--no-brotli", "--shard", "2/2", "--manifest", b, job])
        out = self.path("out.json")
        self.run_ok(["merge-manifests", out, a, b])
        with open(out, "rb") as f:
            want = f.read()
        r = run(["merge-manifests", "-", a, b], cwd=self.tmp)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.out_b, want, "stdout is not the merged manifest")
        self.assertEqual(r.err, "", r)
        self.assertFalse(os.path.lexists(self.path("-")), "a file named '-' was written")
        # A failing merge writes nothing to stdout either.
        r = run(["merge-manifests", "-", a, a], cwd=self.tmp)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.out_b, b"", r)
        self.assertIn("overlap", r.err)
        self.assertFalse(os.path.lexists(self.path("-")))

    def test_bad_shard_values_are_usage_errors(self):
        root = self.copy_site()
        for bad in ("0/4", "5/4", "1/0", "x/4", "1/4x", "14"):
            r = run(["--shard", bad, root])
            self.assertEqual(r.rc, 2, (bad, r))
            self.assertEqual(len(r.err_lines), 1, r)
            self.assertIn("--shard", r.err)


if __name__ == "__main__":
    main()
