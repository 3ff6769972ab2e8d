#!/usr/bin/python3
"""Dedupe: files with the same bytes are compressed once, every copy gets its own outputs.

Each copy's outputs are regular files of their own (not hardlinks) with the
copy's own mode and atime/mtime (ns), byte-identical to the oracle. The summary says how many
were copied (--json "deduped": N, read here; the summary line's `N copied from identical files`
is test_manifest.py's), -v `copied PATH (...)` for the copies. Which copy leads depends on scheduling: only counts are asserted, never names.
"""
import sys

sys.dont_write_bytecode = True
import hashlib
import os
import shutil
import stat
from collections import defaultdict

from pctest import (fast_levels, full_only, SITE, PCTestCase, classify, decode, expected_outputs, fsb, gz_oracle, have_zstd_build,
                    kinds, listing, load_manifest, main, manifest_by_path, read, run, source_snapshot,
                    walk_all, words_data)

# These runs are about the tree and the manifest alone: no content cache from the environment.
os.environ.pop("PRECOMPRESS_CACHE_DIR", None)

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

TWIN = "static/js/app.js"
TWIN_HASHED = "static/js/app.3f2a1b9c8d7e.js"
BASE_NS = 1_700_000_000_000_000_000


def write(path, data, mode=0o644, mtime_ns=None, atime_ns=None):
    d = os.path.dirname(path)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    if mtime_ns is not None:
        os.utime(path, ns=(atime_ns if atime_ns is not None else mtime_ns + 500_000_001, mtime_ns))


def content_groups(root, rels):
    g = defaultdict(list)
    for rel in rels:
        g[hashlib.sha256(read(os.path.join(fsb(root), rel))).hexdigest()].append(rel)
    return g


def source_meta(root):
    """{rel: (mode, atime_ns, mtime_ns)} of every regular file, taken before a run."""
    res = {}
    for rel, st in walk_all(root).items():
        if stat.S_ISREG(st.st_mode):
            res[rel] = (stat.S_IMODE(st.st_mode), st.st_atime_ns, st.st_mtime_ns)
    return res


def restore_times(root, meta):
    """Put back the times taken by source_meta() before the test read the files (the oracle,
    the grouping): the program must find atimes a read may still move (relatime), as in a
    freshly copied tree, and stamp each output with its source's times as they were."""
    for rel, (mode, atime, mtime) in meta.items():
        os.utime(os.path.join(fsb(root), rel), ns=(atime, mtime))


class Base(PCTestCase):
    def build(self, name, dup=True):
        """fixtures/site as a/ (and b/ with its own modes and times), plus a hashed twin."""
        root = self.path(name)
        os.makedirs(root)
        shutil.copytree(SITE, os.path.join(root, "a"), symlinks=True)
        twin = words_data(30000, seed=4242)
        write(os.path.join(root, TWIN), twin, 0o644, BASE_NS + 111_111_111, BASE_NS + 900_000_000_123)
        if dup:
            b = os.path.join(root, "b")
            shutil.copytree(SITE, b, symlinks=True)
            for i, (rel, st) in enumerate(sorted(walk_all(b).items())):
                if stat.S_ISREG(st.st_mode):
                    p = os.path.join(fsb(b), rel)
                    os.chmod(p, 0o640 if i % 2 else 0o604)
                    os.utime(p, ns=(BASE_NS + 5_000_000_000 + i * 1_000_003, BASE_NS + i * 7_777_777 + 1))
            write(os.path.join(root, TWIN_HASHED), twin, 0o600, BASE_NS + 222_222_223, BASE_NS + 800_000_000_321)
        return root

    def prepare(self, root, formats=("gz", "br")):
        """Oracle and content groups, then the times put back as they were: (cls, groups, meta)."""
        meta = source_meta(root)
        cls = classify(root, formats=formats)
        groups = content_groups(root, [rel for rel, c in cls.items() if c["skip"] is None])
        restore_times(root, meta)
        return cls, groups, meta

    def assertDedupedRun(self, root, r, cls, groups, meta):
        """Outputs are the oracle's, regular files of their own with their source's mode and times;
        counts: one compressed per content, the rest copied."""
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        k = kinds(r, root)
        n_out = sum(1 for c in cls.values() if c["skip"] is None)
        extra = sum(len(v) - 1 for v in groups.values())
        self.assertGreater(extra, 0, "the tree must hold duplicates")
        s = r.summary()
        self.assertEqual(s["compressed"], n_out, "copies count as compressed: %r" % r)
        self.assertEqual(s["deduped"], extra, "deduped must equal the extra copies with outputs: %r" % r)
        self.assertEqual((s["failed"], s["cached"]), (0, 0), r)
        for h, rels in groups.items():
            got = sorted(k.get(rel) for rel in rels)
            self.assertEqual(got, sorted(["compressed"] + ["copied"] * (len(rels) - 1)),
                             "identical files %r: one compressed, the rest copied" % rels)
        self.assertEqual(list(k.values()).count("copied"), extra, r)
        self.assertEqual(list(k.values()).count("compressed"), len(groups), r)
        self.assertOutputsOwn(root, cls, meta, k)

    def assertOutputsOwn(self, root, cls, meta, k=None):
        """Stats every output before reading any (a read may move an atime), then checks it."""
        want = expected_outputs(cls)
        broot = fsb(root)
        inodes = set()
        stats = {}
        for rel in want:
            full = os.path.join(broot, rel)
            self.assertTrue(os.path.lexists(full), "%r missing" % rel)
            stats[rel] = os.lstat(full)
        bad_atime = []
        for rel, blob in sorted(want.items()):
            full = os.path.join(broot, rel)
            st = stats[rel]
            self.assertTrue(stat.S_ISREG(st.st_mode), "%r is not a regular file" % rel)
            self.assertEqual(st.st_nlink, 1, "%r is a hardlink (st_nlink %d)" % (rel, st.st_nlink))
            self.assertNotIn(st.st_ino, inodes, "%r shares an inode" % rel)
            inodes.add(st.st_ino)
            got = read(full)
            if got != blob:
                self.fail("%r: bytes differ from the oracle (got %d bytes, oracle %d)" % (rel, len(got), len(blob)))
            fmt = rel.rsplit(b".", 1)[1].decode()
            src = rel[: -len(fmt) - 1]
            self.assertEqual(decode(fmt, full), read(os.path.join(broot, src)), "%r does not decode" % rel)
            mode, atime, mtime = meta[src]
            self.assertEqual(oct(stat.S_IMODE(st.st_mode)), oct(mode), "%r: mode is not its source's" % rel)
            self.assertEqual(st.st_mtime_ns, mtime, "%r: mtime_ns is not its source's" % rel)
            if st.st_atime_ns != atime:
                bad_atime.append("%s (source %s): atime_ns %d, source's %d" % (
                    os.fsdecode(rel), (k or {}).get(src, "?"), st.st_atime_ns, atime))
        self.assertEqual(bad_atime, [], "outputs whose atime_ns is not their source's (as before the run)")


class Duplicates(Base):
    def test_site_twice_and_hashed_twin(self):
        root = self.build("t")
        cls, groups, meta = self.prepare(root)
        self.assertIn(sorted([TWIN.encode(), TWIN_HASHED.encode()]),
                      [sorted(v) for v in groups.values()], "the hashed twin must be one group")
        self.assertGreaterEqual(sum(len(v) - 1 for v in groups.values()), 11)
        before = walk_all(root)
        snap = source_snapshot(root)
        restore_times(root, meta)
        man = self.path("m.json")
        r = run(["-v", "--json", "-j", "4", "--manifest", man, root])
        self.assertDedupedRun(root, r, cls, groups, meta)
        self.assertTreeMatchesOracle(root, before, cls)
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)
        m = manifest_by_path(load_manifest(man)[0])
        for rels in groups.values():
            ents = [{k: v for k, v in m[rel].items() if k not in ("path", "mtime_ns")} for rel in rels]
            self.assertTrue(all(e == ents[0] for e in ents), "identical files, different records: %r" % ents)

    def test_json_counts(self):
        root = self.build("t")
        cls = classify(root)
        groups = content_groups(root, [rel for rel, c in cls.items() if c["skip"] is None])
        extra = sum(len(v) - 1 for v in groups.values())
        r = run(["--json", root])
        self.assertEqual(r.rc, 0, r)
        j = r.summary()
        self.assertEqual(j["deduped"], extra, r.out)
        self.assertEqual(j["compressed"], sum(1 for c in cls.values() if c["skip"] is None), r.out)

    def test_manifest_identical_at_j1_j4_and_without_duplicates(self):
        root = self.build("t")
        m1, m4, m4b = self.path("m1.json"), self.path("m4.json"), self.path("m4b.json")
        r = run(["-q", "-j", "1", "--manifest", m1, root])
        self.assertEqual(r.rc, 0, r)
        r = run(["-q", "-j", "4", "--manifest", m4, root])
        self.assertEqual(r.rc, 0, r)
        r = run(["-q", "-j", "4", "--manifest", m4b, root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(read(m1), read(m4), "manifest differs between -j1 and -j4")
        self.assertEqual(read(m4), read(m4b), "manifest differs between two -j4 runs")

        solo = self.build("solo", dup=False)
        ms = self.path("ms.json")
        r = run(["-q", "-j", "4", "--manifest", ms, solo])
        self.assertEqual(r.rc, 0, r)
        dup_m, _ = load_manifest(m4)
        solo_m, _ = load_manifest(ms)
        self.assertEqual(dup_m["options"], solo_m["options"])
        by_dup = manifest_by_path(dup_m)
        by_solo = manifest_by_path(solo_m)
        self.assertGreater(len(by_solo), 10)
        for rel, e in by_solo.items():
            self.assertIn(rel, by_dup)
            self.assertEqual(by_dup[rel], e, "%r: entry differs from a run without duplicates" % rel)

    def test_same_size_different_content_is_not_copied(self):
        root = self.path("t")
        data = words_data(20000, seed=77)
        other = bytearray(data)
        other[12345] ^= 0x01
        other = bytes(other)
        self.assertEqual(len(data), len(other))
        write(os.path.join(root, "one.js"), data, 0o644, BASE_NS + 1)
        write(os.path.join(root, "two.js"), other, 0o600, BASE_NS + 2)
        # and a pair past the 1 MiB read-whole limit, differing in the last byte
        big = words_data(1024 * 1024 + 4096, seed=78)
        big2 = big[:-1] + bytes([big[-1] ^ 0x01])
        write(os.path.join(root, "big1.txt"), big, 0o644, BASE_NS + 3)
        write(os.path.join(root, "big2.txt"), big2, 0o640, BASE_NS + 4)
        cls, _, meta = self.prepare(root, formats=("gz",))
        r = run(["-v", "--json", "--no-brotli", "-j", "4", root], timeout=300)
        self.assertEqual(r.rc, 0, r)
        k = kinds(r, root)
        self.assertEqual(k, {b"one.js": "compressed", b"two.js": "compressed",
                             b"big1.txt": "compressed", b"big2.txt": "compressed"}, r)
        s = r.summary()
        self.assertEqual((s["compressed"], s["deduped"]), (4, 0), r)
        self.assertOutputsOwn(root, cls, meta, k)
        self.assertNotEqual(read(os.path.join(root, "one.js.gz")), read(os.path.join(root, "two.js.gz")))

    def test_three_and_more_copies(self):
        root = self.path("t")
        a = words_data(25000, seed=1)
        b = b"body { color: #333; margin: 0 auto; }\n" * 300
        for i in range(6):
            write(os.path.join(root, "d%d" % i, "lib.js"), a, (0o644, 0o600, 0o640, 0o604, 0o664, 0o444)[i],
                  BASE_NS + i * 1_000_000_007, BASE_NS + 10**12 + i * 13)
        for i in range(3):
            write(os.path.join(root, "css", "s%d.css" % i), b, 0o644 if i else 0o600, BASE_NS - i * 999)
        write(os.path.join(root, "unique.txt"), words_data(9000, seed=2), 0o644, BASE_NS)
        cls, groups, meta = self.prepare(root)
        self.assertEqual(sorted(len(v) for v in groups.values()), [1, 3, 6])
        before = walk_all(root)
        for jobs in ("1", "4"):
            with self.subTest(jobs=jobs):
                restore_times(root, meta)
                r = run(["-v", "--json", "-j", jobs, root])
                self.assertDedupedRun(root, r, cls, groups, meta)
                self.assertEqual(r.summary()["deduped"], 5 + 2)
                self.assertTreeMatchesOracle(root, before, cls)

    @full_only("450 files, three runs, each checked against the oracle")
    def test_many_small_copies_in_units_of_one_directory(self):
        # Small files travel in units of one directory (one worker runs them in turn): a leader
        # and its copies in one unit, in two units of one directory, and in other directories.
        root = self.path("t")
        bodies = [words_data(200 + 97 * i, seed=300 + i) for i in range(40)]
        n = 0
        for d in range(3):
            for i in range(150):
                body = bodies[(i * 7 + d) % len(bodies)] if i % 3 else words_data(300 + i * 11, seed=d * 1000 + i)
                write(os.path.join(root, "d%d" % d, "f%03d.js" % i), body, 0o644 if i % 2 else 0o640,
                      BASE_NS + n * 1_000_003)
                n += 1
        cls, groups, meta = self.prepare(root)
        self.assertGreater(max(len(v) for v in groups.values()), 5)
        before = walk_all(root)
        for jobs in ("1", "2", "4"):
            with self.subTest(jobs=jobs):
                for rel in list(walk_all(root)):
                    if rel.endswith((b".gz", b".br")):
                        os.unlink(os.path.join(fsb(root), rel))
                restore_times(root, meta)
                r = run(["-v", "--json", "-j", jobs, root])
                self.assertDedupedRun(root, r, cls, groups, meta)
                self.assertTreeMatchesOracle(root, before, cls)

    def test_stale_outputs_of_copies_are_replaced_and_removed(self):
        root = self.build("t")
        # wrong bytes at a copy's output name, and an output for a ratio-skipped copy
        write(os.path.join(root, "b", "css", "app.css.br"), b"stale", 0o644, BASE_NS)
        write(os.path.join(root, "b", "robots.txt.gz"), b"stale", 0o644, BASE_NS)
        write(os.path.join(root, "a", "robots.txt.br"), b"stale", 0o644, BASE_NS)
        cls, groups, meta = self.prepare(root)
        r = run(["-v", "--json", "-j", "4", root])
        self.assertDedupedRun(root, r, cls, groups, meta)
        for gone in ("b/robots.txt.gz", "a/robots.txt.br"):
            self.assertFalse(os.path.lexists(os.path.join(root, gone)), gone + " must be removed")
        k = kinds(r, root)
        self.assertEqual((k[b"a/robots.txt"], k[b"b/robots.txt"]), ("skipped (ratio)", "skipped (ratio)"))


class DryRun(Base):
    def test_dry_run_writes_nothing_and_reports_the_same_counts(self):
        root = self.build("t")
        cls = classify(root)
        before = listing(root)
        man = self.path("m.json")
        dry = run(["-v", "-n", "-j", "4", "--manifest", man, root])
        self.assertEqual(dry.rc, 0, dry)
        self.assertEqual(listing(root), before, "--dry-run changed the tree")
        self.assertFalse(os.path.exists(man), "--dry-run wrote a manifest")
        want = sorted("would write %s/%s" % (root, os.fsdecode(rel)) for rel in expected_outputs(cls))
        got = sorted(l for l in dry.out_lines if l.startswith("would "))
        self.assertEqual(got, want, "a dry run must list every copy's outputs")
        # the counts: --json (which prints no listing; the -v lines stay)
        dj = run(["-v", "-n", "--json", "-j", "4", root])
        self.assertEqual(dj.rc, 0, dj)
        ds = dj.summary()
        self.assertIs(ds["dry_run"], True, dj)
        self.assertEqual([l for l in dj.out_lines if l.startswith("would ")], [], dj)
        self.assertEqual(sorted(kinds(dj, root).values()), sorted(kinds(dry, root).values()), dj)
        self.assertEqual(listing(root), before)

        real = run(["-v", "--json", "-j", "4", root])
        self.assertEqual(real.rc, 0, real)
        rs = real.summary()
        for key in ("files", "compressed", "deduped", "skipped", "failed"):
            self.assertEqual(ds[key], rs[key], "%s: dry run %r, real run %r" % (key, dj, real))
        self.assertGreater(rs["deduped"], 0)
        self.assertEqual(ds["changes"], len(want))
        self.assertEqual(sorted(kinds(dry, root).values()), sorted(kinds(real, root).values()),
                         "-v kinds differ between the dry and the real run")


class Large(Base):
    def test_large_duplicate_pair(self):
        root = self.path("t")
        data = words_data(3 * 1024 * 1024, seed=31)
        write(os.path.join(root, "x", "bundle.js"), data, 0o644, BASE_NS + 5, BASE_NS + 10**12 + 5)
        write(os.path.join(root, "y", "bundle.0123abcd.js"), data, 0o600, BASE_NS + 6, BASE_NS + 10**12 + 6)
        cls, _, meta = self.prepare(root, formats=("gz",))
        r = run(["-v", "--json", "--no-brotli", "-j", "2", root], timeout=300)
        self.assertEqual(r.rc, 0, r)
        k = kinds(r, root)
        self.assertEqual(sorted(k.values()), ["compressed", "copied"], r)
        s = r.summary()
        self.assertEqual((s["compressed"], s["deduped"]), (2, 1), r)
        self.assertFalse(os.path.lexists(os.path.join(root, "x", "bundle.js.br")))
        self.assertOutputsOwn(root, cls, meta, k)
        want = gz_oracle(data)
        for p in ("x/bundle.js.gz", "y/bundle.0123abcd.js.gz"):
            self.assertEqual(read(os.path.join(root, p)), want, p + ": bytes differ from the oracle")

    def test_zstd_outputs_of_copies(self):
        if not have_zstd_build():
            self.skipTest("built without zstd")
        root = self.build("t")
        big = words_data(1536 * 1024, seed=9)
        write(os.path.join(root, "big", "one.txt"), big, 0o644, BASE_NS + 9)
        write(os.path.join(root, "big", "two.txt"), big, 0o600, BASE_NS + 10)
        cls, groups, meta = self.prepare(root, formats=("gz",))
        r = run(["-v", "--json", "-j", "4", "--formats", "gz,zst", root], timeout=300)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        k = kinds(r, root)
        extra = sum(len(v) - 1 for v in groups.values())
        s = r.summary()
        self.assertGreater(extra, 10)
        self.assertEqual(s["deduped"], extra, r)
        self.assertEqual(list(k.values()).count("copied"), extra, r)
        broot = fsb(root)
        stats = {}
        for rels_ in groups.values():
            for rel in rels_:
                out = os.path.join(broot, rel) + b".zst"
                self.assertTrue(os.path.isfile(out), out)
                stats[rel] = os.lstat(out)
        bad_atime = []
        n = 0
        for rels_ in groups.values():
            blobs = set()
            for rel in rels_:
                src = os.path.join(broot, rel)
                out = src + b".zst"
                st = stats[rel]
                self.assertEqual(st.st_nlink, 1, out)
                mode, atime, mtime = meta[rel]
                self.assertEqual((oct(stat.S_IMODE(st.st_mode)), st.st_mtime_ns), (oct(mode), mtime), out)
                if st.st_atime_ns != atime:
                    bad_atime.append("%s (source %s): atime_ns %d, source's %d" % (
                        os.fsdecode(rel) + ".zst", k.get(rel), st.st_atime_ns, atime))
                self.assertEqual(decode("zst", out), read(src), "%r does not decode to its source" % out)
                self.assertEqual(read(src + b".gz"), gz_oracle(read(src)), rel)
                self.assertFalse(os.path.lexists(src + b".br"))
                blobs.add(read(out))
                n += 1
            self.assertEqual(len(blobs), 1, "identical files, different .zst: %r" % rels_)
        self.assertGreater(n, 20)
        self.assertEqual(bad_atime, [], "outputs whose atime_ns is not their source's (as before the run)")


class WithManifest(Base):
    def test_duplicates_and_incremental_runs(self):
        root = self.build("t")
        man = self.path("m.json")
        r = run(["-v", "--json", "-j", "4", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        first = r.summary()
        self.assertGreater(first["deduped"], 0)
        raw = read(man)
        r = run(["-v", "--json", "-j", "4", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        s = r.summary()
        self.assertEqual((s["compressed"], s["deduped"]), (0, 0), r)
        self.assertNotIn("copied", kinds(r, root).values())
        self.assertEqual(read(man), raw)
        # touch both twins: one compressed, one copied; the rest unchanged
        meta = {}
        for i, rel in enumerate((TWIN, TWIN_HASHED)):
            p = os.path.join(root, rel)
            st = os.stat(p)
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + (i + 1) * 1_000_000_000))
            st = os.stat(p)
            meta[rel.encode()] = (stat.S_IMODE(st.st_mode), st.st_atime_ns, st.st_mtime_ns)
        r = run(["-v", "--json", "-j", "4", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        k = kinds(r, root)
        self.assertEqual(sorted([k[TWIN.encode()], k[TWIN_HASHED.encode()]]), ["compressed", "copied"], r)
        s = r.summary()
        self.assertEqual((s["compressed"], s["deduped"]), (2, 1), r)
        cls = classify(root)
        cls = {rel: c for rel, c in cls.items() if rel in meta}
        self.assertOutputsOwn(root, cls, meta, k)


if __name__ == "__main__":
    main()
