#!/usr/bin/python3
"""--output-dir DIR: outputs under DIR at each file's path below
its PATH, the PATH untouched.

A tree of its own (text of several sizes in nested directories, a file the keep
rule rejects, an empty file, random bytes, a .png on the skip list, and the user's
own x.js.gz beside x.js): every output under DIR is the oracle's bytes
(gzip.GzipFile(filename="", mtime=0, compresslevel=9), brotli.compress() at pctest.fast_levels()'s quality), decodes
to its source (.zst too when built), has its source's mode and mtime, and nothing
else is there; the source tree is the same, entry for entry (hash, mode, mtime,
inode, directories included); no temp file anywhere. Then: stale outputs removed
under DIR only; --manifest skips unchanged files, but not with a manifest written
in place or for another DIR; -n and --check create nothing; DIR inside the PATH is
not walked; DIR == PATH and DIR not a directory exit 2; of two PATHs' files
with one path below their PATH, the second fails and the first keeps the outputs; a
symlink planted in DIR at a subdirectory is never followed (that file fails, the
others are written), one at an output name is replaced; --cache-dir, --shard and
a file PATH; a killed run's temp in DIR is reaped, one in the PATH left alone.
"""
import sys

sys.dont_write_bytecode = True
import os
import random
import shutil
import stat

from pctest import (fast_levels, PCTestCase, classify, decode, expected_outputs, fsb, have_zstd_build, listing,
                    load_json_strict, load_manifest, main, run, temp_leftovers, walk_all, words_data)

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()


def files_of(root):
    """{rel: lstat} of every non-directory under root."""
    return {rel: st for rel, st in walk_all(root).items() if not stat.S_ISDIR(st.st_mode)}


def contents(root):
    """{rel: bytes} of every regular file under root."""
    res = {}
    for rel, st in files_of(root).items():
        if stat.S_ISREG(st.st_mode):
            with open(os.path.join(fsb(root), rel), "rb") as f:
                res[rel] = f.read()
    return res


class OutputDirBase(PCTestCase):
    def setUp(self):
        super().setUp()
        os.environ.pop("PRECOMPRESS_CACHE_DIR", None)  # no cache from the environment
        self.src = self.make_tree(self.path("src"))
        self.out = self.path("out")

    def make_tree(self, root, seed=7):
        r = random.Random(seed)
        files = {
            "index.html": words_data(6000, seed),
            "css/app.css": words_data(20000, seed + 1),
            "js/lib/deep/big.js": words_data(400000, seed + 2),  # past the whole-read limit (256 KiB)
            "js/small.js": words_data(300, seed + 3),
            "tiny.txt": b"ab",  # output larger than the source: no output (ratio)
            "empty.txt": b"",
            "data/random.bin": bytes(r.getrandbits(8) for _ in range(4000)),  # ratio
            "img/logo.png": words_data(3000, seed + 4),  # skip list
            "x.js": words_data(4000, seed + 5),
            "x.js.gz": b"the user's own file, not ours\n",  # beside x.js: left alone
        }
        for rel, data in files.items():
            full = os.path.join(root, rel)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as f:
                f.write(data)
        # Distinct modes and old mtimes, so that copying them is checked.
        for k, rel in enumerate(sorted(files)):
            full = os.path.join(root, rel)
            os.chmod(full, 0o640 if k % 2 else 0o604)
            os.utime(full, ns=(1600000000123456789 + k * 1000000007, 1500000000987654321 + k * 999999937))
        return root

    def assertOutputsMatch(self, src, out, cls, formats=("gz", "br"), extra=()):
        """Exactly the outputs the rules call for under out (and `extra`, not checked here:
        another PATH's), each the oracle's bytes (gz, br), decoding to its source, with its
        source's mode and mtime."""
        want = expected_outputs(cls)
        got = {rel: st for rel, st in files_of(out).items() if rel not in extra}
        if "zst" not in formats:
            self.assertFalse(any(r.endswith(b".zst") for r in got))
        self.assertEqual(sorted(r for r in got if not r.endswith(b".zst")), sorted(want),
                         "files under DIR differ from what the keep rule calls for")
        for rel, st in got.items():
            self.assertTrue(stat.S_ISREG(st.st_mode), "%r is not a regular file" % rel)
            fmt = rel.rsplit(b".", 1)[1].decode()
            srel = rel[: -len(fmt) - 1]
            sfull = os.path.join(fsb(src), srel)
            with open(sfull, "rb") as f:
                data = f.read()
            full = os.path.join(fsb(out), rel)
            if fmt in ("gz", "br"):
                with open(full, "rb") as f:
                    self.assertTrue(f.read() == want[rel], "%r: bytes differ from the oracle" % rel)
            self.assertTrue(decode(fmt, full) == data, "%r does not decode to its source" % rel)
            sst = os.stat(sfull)
            self.assertEqual(st.st_mtime_ns, sst.st_mtime_ns, "%r: mtime is not its source's" % rel)
            self.assertEqual(stat.S_IMODE(st.st_mode), stat.S_IMODE(sst.st_mode), "%r: mode" % rel)

    def run_json(self, args, rc=0, **kw):
        r = run(["--json"] + args, **kw)
        self.assertEqual(r.rc, rc, r)
        return r.summary()


class Outputs(OutputDirBase):
    def test_outputs_are_the_oracle_and_the_tree_is_untouched(self):
        before = listing(self.src)
        cls = classify(self.src)
        # The tree must exercise every kind of file, or this proves little.
        self.assertEqual(cls[b"tiny.txt"]["skip"], "ratio")
        self.assertEqual(cls[b"data/random.bin"]["skip"], "ratio")
        self.assertEqual(cls[b"empty.txt"]["skip"], "empty")
        self.assertEqual(cls[b"img/logo.png"]["skip"], "extension")
        self.assertNotIn(b"x.js.gz", cls)  # beside x.js: taken for an output, never an input
        self.assertIn(b"js/lib/deep/big.js.br", expected_outputs(cls))

        r = run(["-q", "--output-dir", self.out, self.src])
        self.assertEqual((r.rc, r.out, r.err), (0, "", ""), r)
        self.assertOutputsMatch(self.src, self.out, cls)
        self.assertEqual(listing(self.src), before, "the source tree changed")
        self.assertEqual(temp_leftovers(self.out), [])
        # A directory whose files keep nothing gets none (made by the first output only).
        self.assertFalse(os.path.exists(os.path.join(self.out, "img")))
        self.assertFalse(os.path.exists(os.path.join(self.out, "data")))

    def test_zstd(self):
        if not have_zstd_build():
            self.skipTest("built without zstd")
        before = listing(self.src)
        self.run_ok(["-q", "--zstd", "--output-dir", self.out, self.src])
        zst = sorted(r for r in files_of(self.out) if r.endswith(b".zst"))
        self.assertIn(b"js/lib/deep/big.js.zst", zst)
        self.assertOutputsMatch(self.src, self.out, classify(self.src), formats=("gz", "br", "zst"))
        self.assertEqual(listing(self.src), before)

    def test_second_run_same_bytes_and_verbose_names(self):
        self.run_ok(["-q", "--output-dir", self.out, self.src])
        first = contents(self.out)
        r = self.run_ok(["-v", "--output-dir", self.out, self.src])
        self.assertEqual(contents(self.out), first)
        # -v names the sources; nothing of the tree's own x.js.gz.
        self.assertIn("compressed %s/x.js (" % self.src, r.out)
        self.assertNotIn("x.js.gz", r.out)

    def test_stale_output_removed_under_dir_only(self):
        self.run_ok(["-q", "--output-dir", self.out, self.src])
        self.assertTrue(os.path.exists(os.path.join(self.out, "css", "app.css.gz")))
        # css/app.css becomes incompressible: its outputs no longer match it. A user's own
        # css/app.css.gz in the tree is not ours.
        with open(os.path.join(self.src, "css", "app.css"), "wb") as f:
            f.write(random.Random(3).randbytes(5000))
        with open(os.path.join(self.src, "css", "app.css.gz"), "wb") as f:
            f.write(b"user's\n")
        before = listing(self.src)
        j = self.run_json(["--output-dir", self.out, self.src])
        self.assertEqual(j["removed"], 2, j)
        self.assertFalse(os.path.lexists(os.path.join(self.out, "css", "app.css.gz")))
        self.assertFalse(os.path.lexists(os.path.join(self.out, "css", "app.css.br")))
        self.assertEqual(listing(self.src), before, "the source tree changed")
        self.assertOutputsMatch(self.src, self.out, classify(self.src))

    def test_removed_lines_name_the_outputs_under_dir(self):
        self.run_ok(["-q", "--output-dir", self.out, self.src])
        with open(os.path.join(self.src, "index.html"), "wb") as f:
            f.write(b"")
        r = self.run_ok(["-v", "--output-dir", self.out, self.src])
        self.assertIn("removed %s/index.html.gz" % self.out, r.out_lines)
        self.assertIn("removed %s/index.html.br" % self.out, r.out_lines)
        self.assertTrue(os.path.exists(os.path.join(self.src, "x.js.gz")))

    def test_json_lines_say_where_the_outputs_are(self):
        r = run(["--json-lines", "--output-dir", self.out, self.src])
        self.assertEqual(r.rc, 0, r)
        lines = [load_json_strict(l) for l in r.out_lines]
        summary = lines[-1]
        self.assertEqual(summary["type"], "summary")
        self.assertEqual(summary["output_dir"], self.out)
        kept = 0
        for line in lines[:-1]:
            for fmt, o in line["outputs"].items():
                full = os.path.join(summary["output_dir"], line["path"] + "." + fmt)
                if o["state"] != "kept":
                    self.assertFalse(os.path.lexists(full), full)
                    continue
                kept += 1
                with open(os.path.join(line["root"], line["path"]), "rb") as f:
                    self.assertTrue(decode(fmt, full) == f.read(), full)
        self.assertEqual(kept, len(expected_outputs(classify(self.src))))
        # In place, the summary has no such member: the outputs are beside the files.
        r = run(["--json", "-n", self.src])
        self.assertNotIn("output_dir", r.summary())

    def test_file_path(self):
        self.run_ok(["-q", "--output-dir", self.out, os.path.join(self.src, "css", "app.css")])
        self.assertEqual(sorted(files_of(self.out)), [b"app.css.br", b"app.css.gz"])
        cls = {b"app.css": classify(self.src)[b"css/app.css"]}
        self.assertOutputsMatch(os.path.join(self.src, "css"), self.out, cls)

    def test_dir_made_like_mkdir_p(self):
        out = self.path("a", "b", "c")
        self.run_ok(["-q", "--output-dir", out, self.src], umask=0o027)
        self.assertOutputsMatch(self.src, out, classify(self.src))
        for d in (self.path("a"), self.path("a", "b"), out, os.path.join(out, "css")):
            self.assertEqual(stat.S_IMODE(os.stat(d).st_mode), 0o750, d)


class Manifest(OutputDirBase):
    def test_second_run_skips_unchanged_files(self):
        man = self.path("m.json")
        j1 = self.run_json(["--manifest", man, "--output-dir", self.out, self.src])
        self.assertGreater(j1["compressed"], 4)
        m = load_manifest(man)[0]
        self.assertEqual(m["options"]["output_dir"], self.out)
        paths = sorted(e["path"] for e in m["files"])
        self.assertIn("css/app.css", paths)  # relative to the PATH, as in place
        self.assertNotIn("x.js.gz", paths)
        first = contents(self.out)
        j2 = self.run_json(["--manifest", man, "--output-dir", self.out, self.src])
        self.assertEqual(j2["compressed"], 0)
        self.assertEqual(j2["unchanged"], j1["compressed"] + j1["skipped"]["ratio"])
        self.assertEqual(contents(self.out), first)
        # A deleted output under DIR breaks its record: that file only is compressed again.
        os.unlink(os.path.join(self.out, "css", "app.css.br"))
        j3 = self.run_json(["--manifest", man, "--output-dir", self.out, self.src])
        self.assertEqual(j3["compressed"], 1)
        self.assertOutputsMatch(self.src, self.out, classify(self.src))

    def test_in_place_manifest_is_not_used(self):
        man = self.path("m.json")
        # In place first: outputs beside the files, and a manifest that records them.
        self.run_ok(["-q", "--manifest", man, self.src])
        self.assertTrue(os.path.exists(os.path.join(self.src, "css", "app.css.gz")))
        self.assertNotIn("output_dir", load_manifest(man)[0]["options"])
        j = self.run_json(["--manifest", man, "--output-dir", self.out, self.src])
        self.assertEqual(j["unchanged"], 0)
        self.assertGreater(j["compressed"], 4)
        self.assertEqual(load_manifest(man)[0]["options"]["output_dir"], self.out)
        # And one written for another DIR is not used either.
        out2 = self.path("out2")
        j = self.run_json(["--manifest", man, "--output-dir", out2, self.src])
        self.assertEqual(j["unchanged"], 0)
        self.assertOutputsMatch(self.src, out2, classify(self.src))
        # Back to in place: the DIR manifest says nothing about the outputs in the tree.
        j = self.run_json(["--manifest", man, self.src])
        self.assertEqual(j["unchanged"], 0)


class DryRunCheck(OutputDirBase):
    def test_dry_run_and_check_make_nothing(self):
        out = self.path("missing", "out")
        before = listing(self.src)
        r = run(["-n", "--output-dir", out, self.src])
        self.assertEqual(r.rc, 0, r)
        self.assertIn("would write %s/css/app.css.gz" % out, r.out_lines)
        self.assertFalse(os.path.lexists(self.path("missing")))
        r = run(["--check", "--output-dir", out, self.src])
        self.assertEqual(r.rc, 1, r)
        self.assertIn("missing %s/js/lib/deep/big.js.br" % out, r.out_lines)
        n = len(expected_outputs(classify(self.src)))
        self.assertEqual(len([l for l in r.out_lines if l.startswith("missing ")]), n)
        self.assertFalse(os.path.lexists(self.path("missing")))
        self.assertEqual(listing(self.src), before)
        # After a real run there is nothing to report.
        self.run_ok(["-q", "--output-dir", out, self.src])
        r = self.run_ok(["--check", "--output-dir", out, self.src])
        self.assertEqual([l for l in r.out_lines if not l.startswith("precompress")], [])
        # A mirror directory missing under an existing DIR: its outputs only are missing.
        shutil.rmtree(os.path.join(out, "css"))
        r = run(["--check", "--output-dir", out, self.src])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(sorted(r.out_lines), ["missing %s/css/app.css.br" % out, "missing %s/css/app.css.gz" % out])
        self.assertFalse(os.path.lexists(os.path.join(out, "css")))


class Placement(OutputDirBase):
    def test_dir_inside_path_is_not_walked(self):
        out = os.path.join(self.src, "_out")
        j1 = self.run_json(["--output-dir", out, self.src])
        j2 = self.run_json(["--output-dir", out, self.src])
        self.assertEqual(j2["files"], j1["files"], "DIR's files were walked as sources")
        got = files_of(out)
        self.assertFalse(any(rel.startswith(b"_out/") for rel in got), sorted(got))
        self.assertFalse(any(rel.endswith((b".gz.gz", b".br.gz", b".gz.br", b".br.br")) for rel in got))
        self.assertOutputsMatch(self.src, out, classify(self.src))

    def test_dir_same_as_path_exits_2(self):
        before = listing(self.src)
        os.symlink(self.src, self.path("link"))
        for d in (self.src, self.src + "/.", self.path("link")):
            r = run(["--output-dir", d, self.src])
            self.assertEqual(r.rc, 2, r)
            self.assertIn("omit --output-dir", r.err)
        self.assertEqual(listing(self.src), before)

    def test_dir_not_a_directory_exits_2(self):
        with open(self.out, "w") as f:
            f.write("a file\n")
        r = run(["--output-dir", self.out, self.src])
        self.assertEqual(r.rc, 2, r)
        self.assertIn("%s: Not a directory" % self.out, r.err)
        r = run(["--output-dir", os.path.join(self.out, "sub"), self.src])
        self.assertEqual(r.rc, 2, r)

    def test_two_paths_one_output_path(self):
        # other holds css/app.css too (other bytes) and a file of its own.
        other = self.path("other")
        os.makedirs(os.path.join(other, "css"))
        with open(os.path.join(other, "css", "app.css"), "wb") as f:
            f.write(words_data(9000, 99))
        with open(os.path.join(other, "own.js"), "wb") as f:
            f.write(words_data(5000, 98))
        before = listing(other)
        man = self.path("m.json")
        for attempt in range(2):  # the second with the manifest's records: the same outcome
            r = run(["--json", "--manifest", man, "--output-dir", self.out, self.src, other])
            self.assertEqual(r.rc, 1, r)
            self.assertEqual(r.error_lines(),
                             ["precompress: %s/css/app.css: a file of an earlier PATH has the same path: its "
                              "outputs in the output directory are that file's" % other], r)
            self.assertEqual(r.summary()["failed"], 1)
            # The outputs are the first PATH's file's, the other PATH's own file has its own.
            self.assertOutputsMatch(self.src, self.out, classify(self.src), extra=(b"own.js.gz", b"own.js.br"))
            self.assertOutputsMatch(other, self.out, {b"own.js": classify(other)[b"own.js"]},
                                    extra=tuple(expected_outputs(classify(self.src))))
            self.assertEqual(listing(other), before)
        m = load_manifest(man)[0]
        self.assertEqual(m["roots"], [self.src, other])
        bad = [e for e in m["files"] if "error" in e]
        self.assertEqual([(e["root"], e["path"]) for e in bad], [(1, "css/app.css")])

    def test_symlink_dir_given_as_dir_is_followed(self):
        real = self.path("real")
        os.mkdir(real)
        os.symlink(real, self.out)
        self.run_ok(["-q", "--output-dir", self.out, self.src])
        self.assertOutputsMatch(self.src, real, classify(self.src))


class Symlinks(OutputDirBase):
    def test_symlink_at_a_mirror_directory_is_never_followed(self):
        outside = self.path("outside")
        os.mkdir(outside)
        os.makedirs(os.path.join(self.out, "js", "lib"))
        os.symlink(outside, os.path.join(self.out, "css"))  # before the first run
        os.symlink(outside, os.path.join(self.out, "js", "lib", "deep"))
        r = run(["-q", "--output-dir", self.out, self.src])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(os.listdir(outside), [], "written through a symlink in DIR")
        errs = r.error_lines()
        self.assertEqual(len(errs), 2, errs)
        self.assertIn("precompress: %s/css: a symlink or non-directory in the output directory's tree "
                      "(never followed)" % self.out, errs)
        self.assertTrue(any(l.startswith("precompress: %s/js/lib/deep: " % self.out) for l in errs), errs)
        # The others are written.
        for rel in ("index.html.gz", "js/small.js.br", "x.js.gz"):
            self.assertTrue(os.path.isfile(os.path.join(self.out, rel)), rel)
        self.assertTrue(os.path.islink(os.path.join(self.out, "css")))
        # A file at a directory's name is not one either.
        os.unlink(os.path.join(self.out, "css"))
        with open(os.path.join(self.out, "css"), "w") as f:
            f.write("not a directory\n")
        r = run(["-q", "--output-dir", self.out, self.src])
        self.assertEqual(r.rc, 1, r)
        self.assertTrue(any("%s/css: a symlink or non-directory" % self.out in l for l in r.error_lines()))
        self.assertEqual(os.listdir(outside), [])

    def test_symlink_planted_after_a_run(self):
        self.run_ok(["-q", "--output-dir", self.out, self.src])
        outside = self.path("outside")
        os.mkdir(outside)
        with open(os.path.join(outside, "app.css.gz"), "wb") as f:
            f.write(b"victim\n")
        before = listing(outside)
        shutil.rmtree(os.path.join(self.out, "css"))
        os.symlink(outside, os.path.join(self.out, "css"))
        os.utime(os.path.join(self.src, "css", "app.css"))  # changed: to be written again
        r = run(["-q", "--output-dir", self.out, self.src])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(listing(outside), before, "the directory behind the link changed")

    def test_symlink_at_an_output_name_is_replaced(self):
        self.run_ok(["-q", "--output-dir", self.out, self.src])
        victim = self.path("victim")
        with open(victim, "wb") as f:
            f.write(b"keep me\n")
        name = os.path.join(self.out, "index.html.gz")
        os.unlink(name)
        os.symlink(victim, name)
        self.run_ok(["-q", "--output-dir", self.out, self.src])
        self.assertFalse(os.path.islink(name))
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), b"keep me\n")
        self.assertOutputsMatch(self.src, self.out, classify(self.src))


class CacheShardTemps(OutputDirBase):
    def test_cache_warm_run_on_a_fresh_dir(self):
        cache = self.path("cache")
        j1 = self.run_json(["--cache-dir", cache, "--output-dir", self.out, self.src])
        self.assertEqual(j1["cached"], 0)
        out2 = self.path("out2")
        j2 = self.run_json(["--cache-dir", cache, "--output-dir", out2, self.src])
        self.assertEqual(j2["cached"], j2["compressed"])
        self.assertEqual(j2["compressed"], j1["compressed"])
        self.assertEqual(contents(out2), contents(self.out))
        self.assertOutputsMatch(self.src, out2, classify(self.src))

    def test_shards_into_one_dir_equal_one_run(self):
        # The same names in two places, so that the manifests' output_dir and root agree.
        one, two = self.path("one"), self.path("two")
        for d in (one, two):
            os.mkdir(d)
            self.make_tree(os.path.join(d, "src"))
        self.run_ok(["-q", "--manifest", "all.json", "--output-dir", "out", "src"], cwd=one)
        for k in (1, 2):
            self.run_ok(["-q", "--shard", "%d/2" % k, "--manifest", "s%d.json" % k, "--output-dir", "out", "src"],
                        cwd=two)
        self.assertEqual(contents(os.path.join(two, "out")), contents(os.path.join(one, "out")))
        self.run_ok(["merge-manifests", "merged.json", "s1.json", "s2.json"], cwd=two)
        with open(os.path.join(two, "merged.json"), "rb") as a, open(os.path.join(one, "all.json"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        self.assertEqual(temp_leftovers(os.path.join(two, "out")), [])
        # A shard written for another DIR is not a shard of this job.
        self.run_ok(["-q", "--shard", "2/2", "--manifest", "s2-other.json", "--output-dir", "other", "src"], cwd=two)
        r = run(["merge-manifests", "bad.json", "s1.json", "s2-other.json"], cwd=two)
        self.assertEqual(r.rc, 1, r)
        self.assertFalse(os.path.lexists(os.path.join(two, "bad.json")))

    def test_killed_runs_temp_reaped_in_dir_only(self):
        self.run_ok(["-q", "--output-dir", self.out, self.src])
        in_dir = os.path.join(self.out, "css", ".app.css.gz.AbC123.tmp")
        top = os.path.join(self.out, ".index.html.br.XyZ789.tmp")
        in_tree = os.path.join(self.src, "css", ".app.css.gz.QwE456.tmp")
        for p in (in_dir, top, in_tree):
            with open(p, "wb") as f:
                f.write(b"partial")
        before = listing(self.src)
        j = self.run_json(["--output-dir", self.out, self.src])
        self.assertFalse(os.path.lexists(in_dir), "a killed run's temp in DIR stayed")
        self.assertFalse(os.path.lexists(top), "a killed run's temp in DIR stayed")
        self.assertEqual(listing(self.src), before, "the source tree changed")
        self.assertEqual(j["failed"], 0)
        # -n reaps nothing.
        with open(in_dir, "wb") as f:
            f.write(b"partial")
        self.run_ok(["-q", "-n", "--output-dir", self.out, self.src])
        self.assertTrue(os.path.lexists(in_dir))

    def test_fsync(self):
        self.run_ok(["-q", "--fsync", "--output-dir", self.out, self.src])
        self.assertOutputsMatch(self.src, self.out, classify(self.src))


if __name__ == "__main__":
    main()
