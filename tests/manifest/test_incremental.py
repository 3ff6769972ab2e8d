#!/usr/bin/python3
"""Incremental runs with --manifest: files unchanged since the earlier run are not read again.

The contract: a file whose size and mtime_ns match its record in the
earlier manifest (same formats, levels and max ratio), whose recorded outputs are all
there with the recorded sizes and the source's mtime, and none of whose non-kept outputs
exist, is left alone: `unchanged` in -v, "unchanged" in the --json summary (where the runs
here read their counts), its manifest entry carried over. --force ignores the records.
"""
import sys

sys.dont_write_bytecode = True
import fcntl
import os
import shutil
import signal
import stat
import subprocess
import time
import unittest

from pctest import (F_SETPIPE_SZ, fast_levels, PCTestCase, PROGRAM, classify, decode, expected_outputs, fsb, kinds, listing,
                    load_manifest, main, make_world_accessible, manifest_by_path, read, run, skipped_total,
                    source_snapshot, walk_all, write)

# These runs are about the tree and the manifest alone: no content cache from the environment.
os.environ.pop("PRECOMPRESS_CACHE_DIR", None)

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

HAVE_SETPRIV = shutil.which("setpriv") is not None


def output_stats(root):
    """{rel: (ino, mtime_ns, ctime_ns, size, mode)} of every .gz/.br/.zst in the tree."""
    res = {}
    for rel, st in walk_all(root).items():
        if rel.endswith((b".gz", b".br", b".zst")) and stat.S_ISREG(st.st_mode):
            res[rel] = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size, stat.S_IMODE(st.st_mode))
    return res


class Base(PCTestCase):
    def first(self, root, man, extra=()):
        """The first run: -v, with the manifest. Returns (kinds, manifest bytes)."""
        self.assertFalse(os.path.exists(man))
        r = run(["-v", "--json", "--manifest", man] + list(extra) + [root])
        self.assertEqual(r.rc, 0, r)
        k = kinds(r, root)
        self.assertEqual(r.summary()["unchanged"], 0, "first run, no manifest yet: %r" % r)
        self.assertNotIn("unchanged", k.values(), r)
        return k, read(man)

    def assertOracleOutputs(self, root, rels):
        """rel's outputs (gz and br) are there, equal the oracle and carry the source's mtime."""
        cls = classify(root)
        broot = fsb(root)
        for rel in rels:
            rel = os.fsencode(rel)
            src = os.path.join(broot, rel)
            data = read(src)
            sst = os.stat(src)
            for fmt, blob in cls[rel]["out"].items():
                out = src + b"." + fmt.encode()
                if blob is None:
                    self.assertFalse(os.path.lexists(out), "%r: an output the keep rule rejects" % out)
                    continue
                self.assertTrue(os.path.isfile(out), "%r missing" % out)
                self.assertEqual(read(out), blob, "%r: bytes differ from the oracle" % out)
                self.assertEqual(decode(fmt, out), data, "%r does not decode to its source" % out)
                self.assertEqual(os.stat(out).st_mtime_ns, sst.st_mtime_ns, "%r: mtime is not the source's" % out)


class SecondRun(Base):
    def test_unchanged_tree_reports_everything_unchanged_and_writes_nothing(self):
        root = self.copy_site()
        man = self.path("m.json")
        k1, raw1 = self.first(root, man)
        compressed = sorted(rel for rel, k in k1.items() if k == "compressed")
        ratio = sorted(rel for rel, k in k1.items() if k == "skipped (ratio)")
        other = sorted(rel for rel, k in k1.items() if k not in ("compressed", "skipped (ratio)"))
        self.assertGreaterEqual(len(compressed), 10, k1)
        self.assertIn(b"robots.txt", ratio)
        self.assertIn(b"img/photo.png", other)
        before = listing(root)
        outs = output_stats(root)
        self.assertEqual(len(outs), len(expected_outputs(classify(root))))
        snap = source_snapshot(root)
        mst = os.stat(man)
        time.sleep(0.05)  # a rewrite or re-stamp would show in ctime past its granularity

        r = run(["-v", "--json", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        k2 = kinds(r, root)
        for rel in compressed + ratio:
            self.assertEqual(k2.get(rel), "unchanged", "%r on an unchanged tree: %r" % (rel, r))
        for rel in other:
            self.assertEqual(k2.get(rel), k1[rel], "%r (skipped by rule) must be reported as before" % rel)
        self.assertEqual(sorted(k2), sorted(k1), "the second run must report the same files")
        s = r.summary()
        self.assertEqual(s["unchanged"], len(compressed) + len(ratio), r)
        self.assertEqual(s["compressed"], 0, r)
        self.assertEqual(s["failed"], 0, r)
        self.assertEqual(s["files"], len(k1), r)

        self.assertEqual(read(man), raw1, "the manifest of an unchanged run must be byte-identical")
        st = os.stat(man)
        self.assertEqual((st.st_ino, st.st_mtime_ns, st.st_ctime_ns), (mst.st_ino, mst.st_mtime_ns, mst.st_ctime_ns),
                         "a manifest that comes out the same must be left as it is, not rewritten")
        self.assertEqual(output_stats(root), outs,
                         "outputs were rewritten or re-stamped (inode, mtime, ctime, size, mode)")
        self.assertEqual(listing(root), before, "the unchanged run changed the tree")
        self.assertSourcesUnchanged(snap, root)

        r = run(["--json", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        j = r.summary()
        self.assertEqual(j["unchanged"], len(compressed) + len(ratio), r.out)
        self.assertEqual(j["compressed"], 0, r.out)
        self.assertEqual(j["changes"], 0, r.out)
        self.assertEqual(read(man), raw1)
        self.assertEqual(output_stats(root), outs)

    def test_manifest_rewritten_only_when_its_bytes_change(self):
        root = self.copy_site()
        man = self.path("m.json")
        _, raw1 = self.first(root, man)

        # The same document with trailing whitespace (still valid, all of it
        # equal up to there): rewritten to the run's exact bytes.
        write(man, raw1 + b"\n\n")
        ino = os.stat(man).st_ino
        r = run(["--json", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        s = r.summary()
        self.assertEqual(s["unchanged"], s["files"] - skipped_total(s), r)
        self.assertEqual(read(man), raw1)
        self.assertNotEqual(os.stat(man).st_ino, ino, "a longer old manifest must be replaced (temp + rename)")

        # A symlink to a file with the very bytes: replaced by a regular file,
        # its target left alone.
        target = self.path("elsewhere.json")
        write(target, raw1)
        os.unlink(man)
        os.symlink(target, man)
        r = run(["--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        self.assertFalse(os.path.islink(man), "a symlink at the manifest's name is replaced, never kept")
        self.assertEqual(read(man), raw1)
        self.assertEqual(read(target), raw1)

        # One file changes (a line of the same length): rewritten.
        ino = os.stat(man).st_ino
        p = os.path.join(root, "js", "app.js")
        st = os.stat(p)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        r = run(["--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        raw2 = read(man)
        self.assertEqual(len(raw2), len(raw1))
        self.assertNotEqual(raw2, raw1)
        self.assertNotEqual(os.stat(man).st_ino, ino)
        m2 = manifest_by_path(load_manifest(man)[0])
        self.assertEqual(m2[b"js/app.js"]["mtime_ns"], st.st_mtime_ns + 1)

    def test_without_manifest_option_everything_is_compressed(self):
        # The records are only used when --manifest names them.
        root = self.copy_site()
        man = self.path("m.json")
        k1, _ = self.first(root, man)
        r = run(["-v", root])
        self.assertEqual(r.rc, 0, r)
        k2 = kinds(r, root)
        self.assertNotIn("unchanged", k2.values(), r)
        self.assertEqual(k2, k1)


@unittest.skipUnless(HAVE_SETPRIV, "setpriv (util-linux) is missing: cannot run as an unprivileged user")
class NotRead(Base):
    """An unchanged file is not even opened: unreadable to the second run, and still fine."""

    def setUp(self):
        super().setUp()
        self.use_nobody()

    def test_unreadable_unchanged_file_is_not_read(self):
        root = self.copy_site()
        make_world_accessible(root)
        man = self.path("m.json")
        r = run(["-v", "--json", "--manifest", man, root], as_nobody=True, program=self.prog)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(kinds(r, root).get(b"js/app.js"), "compressed", r)
        raw1 = read(man)
        bad = os.path.join(root, "js", "app.js")
        data = read(bad)
        os.chmod(bad, 0)  # ctime changes, size and mtime do not
        outs = output_stats(root)

        r = run(["-v", "--json", "--manifest", man, root], as_nobody=True, program=self.prog)
        self.assertEqual(r.rc, 0, "an unchanged file must not be opened: %r" % r)
        self.assertEqual(r.error_lines(), [], r)
        k = kinds(r, root)
        self.assertEqual(k.get(b"js/app.js"), "unchanged", r)
        self.assertNotIn("compressed", k.values(), r)
        self.assertEqual(r.summary()["failed"], 0, r)
        self.assertEqual(read(man), raw1)
        self.assertEqual(output_stats(root), outs)
        self.assertEqual(decode("gz", bad + ".gz"), data)

        # Control: the file really is unreadable to nobody, so the pass above proves no read.
        r = run(["-q", "--force", "--manifest", self.path("m2.json"), root], as_nobody=True, program=self.prog)
        self.assertEqual(r.rc, 1, "control: nobody should fail to read a mode 000 file: %r" % r)
        self.assertIn("precompress: %s: Permission denied" % bad, r.error_lines())


class WhatBreaksTheRecord(Base):
    def test_touched_source_is_recompressed_others_unchanged(self):
        root = self.copy_site()
        man = self.path("m.json")
        k1, _ = self.first(root, man)
        m1 = manifest_by_path(load_manifest(man)[0])
        p = os.path.join(root, "js", "app.js")
        st = os.stat(p)
        new_mtime = st.st_mtime_ns + 3_000_000_007
        os.utime(p, ns=(st.st_atime_ns, new_mtime))
        others = {rel: v for rel, v in output_stats(root).items() if not rel.startswith(b"js/app.js.")}

        r = run(["-v", "--json", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        k2 = kinds(r, root)
        self.assertEqual(k2.get(b"js/app.js"), "compressed", r)
        want_unchanged = [rel for rel, k in k1.items() if k in ("compressed", "skipped (ratio)") and rel != b"js/app.js"]
        for rel in want_unchanged:
            self.assertEqual(k2.get(rel), "unchanged", "%r: %r" % (rel, r))
        self.assertEqual(r.summary()["unchanged"], len(want_unchanged), r)
        self.assertEqual(r.summary()["compressed"], 1, r)
        self.assertOracleOutputs(root, ["js/app.js"])
        now = {rel: v for rel, v in output_stats(root).items() if not rel.startswith(b"js/app.js.")}
        self.assertEqual(now, others, "outputs of unchanged files were touched")

        m2 = manifest_by_path(load_manifest(man)[0])
        self.assertEqual(m2[b"js/app.js"]["mtime_ns"], new_mtime, "the manifest must record the new mtime")
        self.assertEqual({k: v for k, v in m2.items() if k != b"js/app.js"},
                         {k: v for k, v in m1.items() if k != b"js/app.js"}, "carried-over entries changed")

        # and once more: now it is unchanged too
        r = run(["-v", "--json", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(kinds(r, root).get(b"js/app.js"), "unchanged", r)
        self.assertEqual(r.summary()["unchanged"], len(want_unchanged) + 1, r)

    def test_edit_keeping_size_and_mtime_stays_unchanged(self):
        # Documented limit: size + mtime_ns is the contract, the file is not read.
        root = self.copy_site()
        man = self.path("m.json")
        self.first(root, man)
        p = os.path.join(root, "css", "app.css")
        old = read(p)
        st = os.stat(p)
        new = bytearray(old)
        new[100] = ord("X") if new[100] != ord("X") else ord("Y")
        new = bytes(new)
        write(p, new)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        self.assertEqual((os.stat(p).st_size, os.stat(p).st_mtime_ns), (st.st_size, st.st_mtime_ns))
        outs = output_stats(root)

        r = run(["-v", "--json", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(kinds(r, root).get(b"css/app.css"), "unchanged", r)
        self.assertEqual(r.summary()["compressed"], 0, r)
        self.assertEqual(output_stats(root), outs)
        self.assertEqual(decode("gz", p + ".gz"), old, "the outputs are the old content's, by contract")
        self.assertNotEqual(decode("gz", p + ".gz"), new)

    def output_case(self, change):
        """First run, change() the outputs of index.html, second run: index.html is recompressed."""
        root = self.copy_site()
        man = self.path("m.json")
        k1, raw1 = self.first(root, man)
        src = os.path.join(root, "index.html")
        change(src)
        others = {rel: v for rel, v in output_stats(root).items() if not rel.startswith(b"index.html.")}
        r = run(["-v", "--json", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        k2 = kinds(r, root)
        self.assertEqual(k2.get(b"index.html"), "compressed", r)
        want_unchanged = [rel for rel, k in k1.items() if k in ("compressed", "skipped (ratio)") and rel != b"index.html"]
        for rel in want_unchanged:
            self.assertEqual(k2.get(rel), "unchanged", "%r: %r" % (rel, r))
        self.assertEqual(r.summary()["unchanged"], len(want_unchanged), r)
        self.assertOracleOutputs(root, ["index.html"])
        for ext in ("gz", "br"):
            st = os.lstat(src + "." + ext)
            self.assertTrue(stat.S_ISREG(st.st_mode), ext)
        now = {rel: v for rel, v in output_stats(root).items() if not rel.startswith(b"index.html.")}
        self.assertEqual(now, others, "outputs of unchanged files were touched")
        self.assertEqual(read(man), raw1, "restored outputs: the manifest is as before")

    def test_deleted_output_is_restored(self):
        self.output_case(lambda src: os.unlink(src + ".br"))

    def test_output_size_changed_is_restored(self):
        def grow(src):
            out = src + ".gz"
            st = os.stat(out)
            with open(out, "ab") as f:
                f.write(b"junk")
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime as stamped: only the size differs
        self.output_case(grow)

    def test_output_mtime_changed_is_restored(self):
        def touch(src):
            out = src + ".br"
            st = os.stat(out)
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # same bytes, 1 ns off
        self.output_case(touch)

    def test_output_replaced_by_symlink_is_restored(self):
        def link(src):
            # A symlink at the output name whose own lstat size (the length of its target) and
            # mtime both equal the recorded output's, pointing at a file that matches too:
            # only "is it a regular file" tells it from the output the tool wrote.
            out = src + ".gz"
            st = os.stat(out)
            real = self.path("elsewhere")
            while st.st_size - len(real) > 210:  # leaves at least 10 for the last part
                real += "/" + "d" * 200
            real += "/" + "x" * (st.st_size - len(real) - 1 - len(".gz")) + ".gz"
            self.assertEqual(len(real), st.st_size)
            os.makedirs(os.path.dirname(real))
            os.rename(out, real)
            os.utime(real, ns=(st.st_atime_ns, st.st_mtime_ns))
            os.symlink(real, out)
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns), follow_symlinks=False)
            lst = os.lstat(out)
            self.assertEqual((lst.st_size, lst.st_mtime_ns), (st.st_size, st.st_mtime_ns))
            self.assertEqual(os.stat(out).st_size, st.st_size)
        self.output_case(link)

    def test_stale_output_of_ratio_skipped_file_is_removed(self):
        root = self.copy_site()
        man = self.path("m.json")
        k1, raw1 = self.first(root, man)
        self.assertEqual(k1[b"robots.txt"], "skipped (ratio)")
        self.assertEqual(k1[b"assets/random.bin"], "skipped (ratio)")
        stale = os.path.join(root, "robots.txt.gz")
        write(stale, b"not a gzip file, left by someone else")
        src_st = os.stat(os.path.join(root, "robots.txt"))
        os.utime(stale, ns=(src_st.st_atime_ns, src_st.st_mtime_ns))
        r = run(["-v", "--json", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        k2 = kinds(r, root)
        self.assertEqual(k2.get(b"robots.txt"), "skipped (ratio)", "robots.txt must be examined again: %r" % r)
        self.assertFalse(os.path.lexists(stale), "the stale output must be removed")
        self.assertFalse(os.path.lexists(stale[:-3] + ".br"))
        self.assertEqual(k2.get(b"assets/random.bin"), "unchanged", r)
        self.assertEqual(k2.get(b"css/app.css"), "unchanged", r)
        self.assertEqual(read(man), raw1)


class ChangedBetweenRuns(Base):
    """Files the earlier manifest records reach a worker without a stat on the walk's side (the
    worker stats them and their outputs): every way such a file can change between runs must
    end as it would without a manifest."""

    def test_emptied_shrunk_grown_deleted_replaced(self):
        from pctest import words_data
        root = self.copy_site()
        os.makedirs(os.path.join(root, "many"))
        for i in range(40):
            write(os.path.join(root, "many", "f%02d.js" % i), words_data(2000 + 37 * i, seed=i))
        man = self.path("m.json")
        k1, _ = self.first(root, man, ["--min-size", "300"])
        for i in range(7):
            self.assertEqual(k1[b"many/f%02d.js" % i], "compressed")
        many = os.path.join(root, "many")
        write(os.path.join(many, "f00.js"), b"")                                  # emptied
        write(os.path.join(many, "f01.js"), b"x" * 120)                           # under --min-size
        write(os.path.join(many, "f02.js"), words_data(300 * 1024, seed=77))      # grown past a unit
        os.unlink(os.path.join(many, "f03.js"))                                   # deleted
        os.unlink(os.path.join(many, "f04.js"))                                   # now a directory
        os.makedirs(os.path.join(many, "f04.js"))
        write(os.path.join(many, "f04.js", "inner.css"), words_data(3000, seed=5))
        os.unlink(os.path.join(many, "f05.js"))                                   # now a symlink
        os.symlink("f10.js", os.path.join(many, "f05.js"))
        write(os.path.join(many, "f06.js"), words_data(2000 + 37 * 6, seed=999))  # same size, new bytes
        st = os.stat(os.path.join(many, "f06.js"))
        os.utime(os.path.join(many, "f06.js"), ns=(st.st_atime_ns, st.st_mtime_ns + 1))

        r = run(["-v", "--json", "--manifest", man, "--min-size", "300", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [], r)
        k2 = kinds(r, root)
        self.assertEqual(k2.get(b"many/f00.js"), "skipped (empty)", r)
        self.assertEqual(k2.get(b"many/f01.js"), "skipped (min-size)", r)
        self.assertEqual(k2.get(b"many/f02.js"), "compressed", r)
        self.assertNotIn(b"many/f03.js", k2)
        self.assertEqual(k2.get(b"many/f04.js/inner.css"), "compressed", r)
        self.assertEqual(k2.get(b"many/f05.js"), "compressed", r)
        self.assertEqual(k2.get(b"many/f06.js"), "compressed", r)
        for i in range(7, 40):
            self.assertEqual(k2.get(b"many/f%02d.js" % i), "unchanged", r)
        # Outputs of what is skipped now are stale and gone; the rest are the oracle's.
        for name in ("f00.js", "f01.js"):
            for ext in (".gz", ".br"):
                self.assertFalse(os.path.lexists(os.path.join(many, name + ext)), name + ext)
        self.assertOracleOutputs(root, ["many/f02.js", "many/f04.js/inner.css", "many/f05.js", "many/f06.js"])
        m = manifest_by_path(load_manifest(man)[0])
        self.assertNotIn(b"many/f03.js", m)
        self.assertEqual(m[b"many/f02.js"]["size"], 300 * 1024)
        self.assertEqual(m[b"many/f00.js"].get("skipped"), "empty", m[b"many/f00.js"])
        # A third run: everything that still has outputs is unchanged.
        r = run(["-v", "--json", "--manifest", man, "--min-size", "300", root])
        self.assertEqual(r.rc, 0, r)
        k3 = kinds(r, root)
        for rel in (b"many/f02.js", b"many/f04.js/inner.css", b"many/f05.js", b"many/f06.js", b"many/f20.js"):
            self.assertEqual(k3.get(rel), "unchanged", (rel, r))


    def test_emptied_or_shrunk_file_loses_its_outputs_without_a_manifest(self):
        from pctest import words_data
        root = self.path("t")
        os.makedirs(root)
        for name in ("a.js", "b.js", "c.js"):
            write(os.path.join(root, name), words_data(5000, seed=len(name) + ord(name[0])))
        r = run(["-q", root])
        self.assertEqual(r.rc, 0, r)
        write(os.path.join(root, "a.js"), b"")
        write(os.path.join(root, "b.js"), b"tiny")
        r = run(["--check", "--min-size", "100", root])
        self.assertEqual(r.rc, 1, r)
        for name in ("a.js", "b.js"):
            for ext in ("gz", "br"):
                self.assertIn("unwanted %s.%s" % (os.path.join(root, name), ext), r.out_lines, r)
        self.assertTrue(os.path.exists(os.path.join(root, "a.js.gz")), "--check changed the tree")
        r = run(["-v", "--min-size", "100", root])
        self.assertEqual(r.rc, 0, r)
        k = kinds(r, root)
        self.assertEqual((k.get(b"a.js"), k.get(b"b.js")), ("skipped (empty)", "skipped (min-size)"), r)
        self.assertEqual(sorted(os.listdir(root)), ["a.js", "b.js", "c.js", "c.js.br", "c.js.gz"])


class Options(Base):
    def test_different_options_nothing_unchanged(self):
        cases = [["--gzip-level", "6"], ["--brotli-quality", "10"], ["--no-brotli"], ["--no-gzip"],
                 ["--max-ratio", "0.9"]]
        for opts in cases:
            with self.subTest(opts=opts):
                root = self.copy_site("site-" + "-".join(o.strip("-") for o in opts))
                man = self.path("m-%d.json" % cases.index(opts))
                k1, raw1 = self.first(root, man)
                r = run(["-v", "--json", "--manifest", man] + opts + [root])
                self.assertEqual(r.rc, 0, r)
                k2 = kinds(r, root)
                self.assertNotIn("unchanged", k2.values(), "%r: options differ from the manifest's: %r" % (opts, r))
                self.assertEqual(r.summary()["unchanged"], 0, r)
                self.assertGreaterEqual(r.summary()["compressed"], 8, r)
                for rel, k in k1.items():
                    if k == "compressed":
                        self.assertIn(k2.get(rel), ("compressed", "skipped (ratio)"), rel)
                self.assertNotEqual(read(man), raw1, "the manifest must record the new options")
                # the new manifest's options now match: a third run with them is all unchanged
                r = run(["-v", "--json", "--manifest", man] + opts + [root])
                self.assertEqual(r.rc, 0, r)
                k3 = kinds(r, root)
                self.assertNotIn("compressed", k3.values(), r)
                self.assertGreater(r.summary()["unchanged"], 0, r)
                # and back to the defaults: all compressed again
                r = run(["-v", "--json", "--manifest", man, root])
                self.assertEqual(r.rc, 0, r)
                self.assertNotIn("unchanged", kinds(r, root).values(), "back to defaults: %r" % r)
                self.assertOracleOutputs(root, [rel for rel, k in k1.items() if k == "compressed"])

    def test_force_ignores_the_records(self):
        root = self.copy_site()
        man = self.path("m.json")
        k1, raw1 = self.first(root, man)
        outs = output_stats(root)
        r = run(["-v", "--json", "--force", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        k2 = kinds(r, root)
        self.assertEqual(k2, k1, "--force: every file as in a first run")
        self.assertEqual(r.summary()["unchanged"], 0, r)
        self.assertEqual(r.summary()["compressed"], list(k1.values()).count("compressed"))
        after = output_stats(root)
        self.assertEqual(sorted(after), sorted(outs))
        for rel in outs:
            self.assertNotEqual(after[rel][0], outs[rel][0], "--force: %r was not written again" % rel)
        self.assertEqual(read(man), raw1)
        self.assertOracleOutputs(root, [rel for rel, k in k1.items() if k == "compressed"])

    def test_corrupt_manifest_is_refused_and_an_empty_one_is_none(self):
        # What is not a manifest may not be replaced: the run is refused before any work (exit 2),
        # the file left as it is. A dry run replaces nothing: it says so (exit 1) and reads no
        # records. An empty file (mktemp) is no manifest at all: every file compressed, no error.
        cases = {"truncated": None, "garbage": b"this is not JSON\n", "empty": b"",
                 "binary": b"\x00\xff\xfe{\n"}
        for name, content in cases.items():
            with self.subTest(manifest=name):
                root = self.copy_site("site-" + name)
                man = self.path("m-%s.json" % name)
                k1, raw1 = self.first(root, man)
                bad = raw1[: len(raw1) // 2] if content is None else content
                write(man, bad)
                for p in walk_all(root):
                    if p.endswith((b".gz", b".br")):
                        os.unlink(os.path.join(fsb(root), p))
                before = listing(root)
                r = run(["-n", "-v", "--json", "--manifest", man, root])
                self.assertEqual(r.rc, 0 if content == b"" else 1, r)
                errs = r.error_lines()
                if content != b"":
                    self.assertEqual(errs, ["precompress: %s: not a precompress manifest (invalid JSON)" % man], r)
                self.assertEqual(listing(root), before)
                r = run(["-v", "--json", "--manifest", man, root])
                if content != b"":
                    self.assertEqual(r.rc, 2, r)
                    self.assertEqual(r.error_lines(),
                                     ["precompress: %s: refusing to replace: not a precompress manifest" % man], r)
                    self.assertEqual(listing(root), before, "a refused run must not touch the tree")
                    self.assertEqual(read(man), bad)
                    continue
                self.assertEqual(r.rc, 0, r)
                self.assertEqual(r.error_lines(), [], r)
                k2 = kinds(r, root)
                self.assertNotIn("unchanged", k2.values(), r)
                self.assertEqual(k2, k1, "every file compressed as in a first run")
                s = r.summary()
                self.assertEqual((s["unchanged"], s["compressed"]),
                                 (0, list(k1.values()).count("compressed")), r)
                self.assertOracleOutputs(root, [rel for rel, k in k1.items() if k == "compressed"])
                self.assertEqual(read(man), raw1)


class CheckWithManifest(Base):
    def test_check_uses_records_and_still_sees_missing_outputs(self):
        root = self.copy_site()
        man = self.path("m.json")
        _, raw1 = self.first(root, man)
        before = listing(root)
        r = run(["-q", "--check", "--manifest", man, root])
        self.assertEqual(r.rc, 0, "--check on an unchanged tree: %r" % r)
        self.assertEqual(r.out, "", r)
        self.assertEqual(r.error_lines(), [], r)
        self.assertEqual(listing(root), before)
        self.assertEqual(read(man), raw1, "--check must not write the manifest")

        os.unlink(os.path.join(root, "index.html.br"))
        before = listing(root)
        r = run(["--check", "--manifest", man, root])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.out_lines, ["missing %s/index.html.br" % root], r)
        self.assertEqual(listing(root), before, "--check changed the tree")
        self.assertEqual(read(man), raw1)

        # a touched source is stale even though its record exists
        p = os.path.join(root, "data", "config.json")
        st = os.stat(p)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        r = run(["--check", "--manifest", man, root])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(sorted(r.out_lines), sorted(["missing %s/index.html.br" % root,
                                                      "stale %s/data/config.json.gz" % root,
                                                      "stale %s/data/config.json.br" % root]), r)


class CopiedTree(PCTestCase):
    """A tree and its manifest copied by a tool that keeps times to the microsecond or the
    second only: the records still hold (compared at the precision the copy kept), so the
    next run and --check read nothing; a file changed since is still found."""

    def test_times_cut_by_a_copy(self):
        for unit in (1000, 10**9):
            with self.subTest(unit):
                root = self.copy_site()
                man = self.path("m%d.json" % unit)
                self.assertEqual(run(["-q", "--manifest", man, root]).rc, 0)
                for rel, st in walk_all(root).items():
                    if stat.S_ISREG(st.st_mode):
                        p = os.path.join(fsb(root), rel)
                        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns - st.st_mtime_ns % unit))
                r = run(["--json", "--check", "--manifest", man, root])
                self.assertEqual((r.rc, r.summary()["compressed"]), (0, 0), r)
                r = run(["--json", "--manifest", man, root])
                self.assertEqual(r.rc, 0, r)
                self.assertEqual(r.summary()["compressed"], 0, r)
                self.assertGreater(r.summary()["unchanged"], 5, r)
                # A file changed since (another size): compressed again.
                with open(os.path.join(root, "index.html"), "ab") as f:
                    f.write(b"<!-- more -->\n")
                r = run(["--json", "--manifest", man, root])
                self.assertEqual(r.summary()["compressed"], 1, r)
                shutil.rmtree(root)


class Interrupted(PCTestCase):
    """A run stopped part way (| head, Ctrl-C, a cancelled CI job, SIGKILL) keeps the earlier
    manifest's records of the files it did not reach: the next run reads only the files that
    changed and that the stopped run did not do."""

    # The run may get ahead of the reader by what the pipe holds, and by no more: the pipe is
    # cut to one page (F_SETPIPE_SZ), so a few hundred files leave most of them undone.
    N = 400

    def tree(self):
        root = self.path("t")
        os.makedirs(root)
        for i in range(self.N):
            write(os.path.join(root, "f%04d.js" % i), (b"function f%d() { return %d; }\n" % (i, i)) * 40)
        man = self.path("m.json")
        r = run(["-q", "--no-brotli", "--gzip-level", "1", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(load_manifest(man)[0]["files"]), self.N)
        # Every file touched: each one is to be compressed again.
        for name in os.listdir(root):
            if name.endswith(".js"):
                os.utime(os.path.join(root, name), ns=(1, 2 * 10**18))
                os.utime(os.path.join(root, name + ".gz"), ns=(1, 2 * 10**18))
        self.args = ["--no-brotli", "--gzip-level", "1", "--manifest", man, root]
        return root, man

    def stopped(self, root, man, how):
        """Runs the program -v with the manifest, stopped `how` once it has printed 50 lines;
        its exit status."""
        p = subprocess.Popen([PROGRAM, "-v", "-j", "1"] + self.args, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        fcntl.fcntl(p.stdout.fileno(), F_SETPIPE_SZ, 4096)
        for _ in range(50):
            p.stdout.readline()
        if how == "pipe":
            p.stdout.close()  # its next write: SIGPIPE
        else:
            p.send_signal(how)
            p.stdout.read()
        return p.wait(timeout=120)

    def check_next_run(self, man, carried):
        """The manifest lists every file; the next run compresses exactly the files whose
        record is still the earlier one (carried), and leaves the rest alone."""
        recs = load_manifest(man)[0]["files"]
        self.assertEqual(len(recs), self.N)
        old = [e for e in recs if e["mtime_ns"] != 2 * 10**18]
        if carried:
            self.assertGreater(len(old), 0)
            self.assertLess(len(old), self.N - 40)
        r = run(["--json"] + self.args)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual((r.summary()["compressed"], r.summary()["unchanged"]),
                         (len(old), self.N - len(old)), r)
        r = run(["--json"] + self.args)
        self.assertEqual(r.summary()["unchanged"], self.N, r)

    def test_sigpipe(self):
        root, man = self.tree()
        self.assertEqual(self.stopped(root, man, "pipe"), 128 + signal.SIGPIPE)
        self.assertTrue(load_manifest(man)[0].get("incomplete"))
        self.check_next_run(man, carried=True)

    def test_sigint_and_sigterm(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(sig):
                root, man = self.tree()
                self.assertEqual(self.stopped(root, man, sig), 128 + sig)
                self.check_next_run(man, carried=True)
                shutil.rmtree(root)
                os.unlink(man)

    def test_sigkill(self):
        # No manifest is written: the earlier one stands whole, and the files the killed
        # run did are compressed once more (their records are the earlier ones).
        root, man = self.tree()
        before = read(man)
        self.assertEqual(self.stopped(root, man, signal.SIGKILL), -signal.SIGKILL)
        self.assertEqual(read(man), before)
        self.check_next_run(man, carried=False)


if __name__ == "__main__":
    main()
