#!/usr/bin/python3
"""Safe output: stale removal, mode and times, temp files, collisions (links: selection/test_links.py)."""
import sys

sys.dont_write_bytecode = True
import os
import stat

from pctest import (PCTestCase, classify, decode, load_json_strict,
                    load_manifest, main, manifest_by_path, read, run, source_snapshot, walk_all, write)


class StaleOutputs(PCTestCase):
    def test_output_removed_when_source_no_longer_compresses(self):
        root = self.copy_site()
        self.run_ok(["-q", root])
        js = os.path.join(root, "js", "app.js")
        self.assertTrue(os.path.isfile(js + ".gz") and os.path.isfile(js + ".br"))
        write(js, os.urandom(3000))
        man = self.path("m.json")
        r = self.run_ok(["--json", "--manifest", man, root])
        j = load_json_strict(r.out)
        self.assertEqual(j["removed"], 2, "two stale outputs removed")
        self.assertFalse(os.path.lexists(js + ".gz"), "stale app.js.gz left beside a new app.js")
        self.assertFalse(os.path.lexists(js + ".br"), "stale app.js.br left beside a new app.js")
        e = manifest_by_path(load_manifest(man)[0])[b"js/app.js"]
        self.assertEqual(e.get("gz"), {"skipped": "ratio"})
        self.assertTrue(os.path.isfile(os.path.join(root, "css", "app.css.gz")))

    def test_outputs_found_among_many_names_sharing_a_prefix(self):
        # The walk finds NAME.gz beside NAME in the sorted listing by looking
        # at NAME's neighbours first: names like NAME-00 sort between the two
        # ('-' < '.'), more of them than it looks at before searching. Stale
        # outputs of an incompressible NAME must still be seen and removed,
        # and garbage at a kept output's name replaced, with --manifest too.
        root = self.path("tree")
        os.mkdir(root)
        text = b"function f(a, b) { return a + b; }\n" * 40
        write(os.path.join(root, "x"), os.urandom(2000))        # never kept
        write(os.path.join(root, "y.js"), text)                  # always kept
        for name in ("x", "y.js"):
            for k in range(20):
                write(os.path.join(root, "%s-%02d" % (name, k)), text + b"%d" % k)
            for ext in ("gz", "br"):
                write(os.path.join(root, "%s.%s" % (name, ext)), b"garbage, not an output")
            write(os.path.join(root, name + ".a"), text)
        man = ["--manifest", self.path("m.json")]
        for args in ([], man, man):  # no records; none yet; the records
            r = self.run_ok(["-q"] + args + [root])
            for ext in ("gz", "br"):
                self.assertFalse(os.path.lexists(os.path.join(root, "x." + ext)), "stale x.%s left: %r" % (ext, r))
                out = os.path.join(root, "y.js." + ext)
                self.assertEqual(decode(ext, out), text, out)
            for ext in ("gz", "br"):
                write(os.path.join(root, "x." + ext), b"garbage again")
        m = manifest_by_path(load_manifest(self.path("m.json"))[0])
        self.assertNotIn(b"y.js.gz", m, "an output of ours recorded as an input")
        self.assertEqual(m[b"x"]["gz"], {"skipped": "ratio"})
        self.assertIn("size", m[b"y.js"]["gz"])

    def test_output_removed_by_a_stricter_max_ratio(self):
        root = self.copy_site()
        self.run_ok(["-q", root])
        before = set(walk_all(root))
        cls = classify(root, num=30, den=100)
        self.run_ok(["-q", "--max-ratio", "0.3", root])
        for rel, c in cls.items():
            for fmt in ("gz", "br"):
                out = rel + b"." + fmt.encode()
                full = os.path.join(os.fsencode(root), out)
                if c["out"].get(fmt) is not None:
                    self.assertEqual(read(full), c["out"][fmt], out)
                else:
                    self.assertFalse(os.path.lexists(full), "%r should have been removed at --max-ratio 0.3" % out)
        # some were removed, some stayed: the case is not degenerate
        after = set(walk_all(root))
        self.assertTrue(before - after)
        self.assertTrue(any(c["out"].get("br") for c in cls.values()))

    def test_disabled_format_left_untouched(self):
        root = self.copy_site()
        self.run_ok(["-q", root])
        js = os.path.join(root, "js", "app.js")
        st_br = os.stat(js + ".br")
        br_bytes = read(js + ".br")
        write(js, os.urandom(3000))
        self.run_ok(["-q", "--no-brotli", root])
        self.assertFalse(os.path.lexists(js + ".gz"), "enabled format: stale .gz must be removed")
        st2 = os.stat(js + ".br")
        self.assertEqual(read(js + ".br"), br_bytes, "--no-brotli touched an existing .br")
        self.assertEqual((st2.st_ino, st2.st_mtime_ns, st2.st_mode), (st_br.st_ino, st_br.st_mtime_ns, st_br.st_mode))
        # and the other way round
        css = os.path.join(root, "css", "app.css")
        gz_bytes = read(css + ".gz")
        write(css, os.urandom(3000))
        self.run_ok(["-q", "--no-gzip", root])
        self.assertFalse(os.path.lexists(css + ".br"))
        self.assertEqual(read(css + ".gz"), gz_bytes, "--no-gzip touched an existing .gz")


class ModeAndTimes(PCTestCase):
    def test_mode_and_times_copied(self):
        root = self.copy_site()
        cases = {
            "css/app.css": (0o640, 1_600_000_000_123_456_789),
            "index.html": (0o604, 1_500_000_000_000_000_001),
            "js/app.js": (0o755, 1_700_000_001_999_999_999),
        }
        now = 1_750_000_000_000_000_000
        want = {}
        for rel, (mode, mtime) in cases.items():
            p = os.path.join(root, rel)
            os.chmod(p, mode)
            atime = now + 777_777_777  # after mtime: relatime leaves it alone when the tool reads
            os.utime(p, ns=(atime, mtime))
            st = os.stat(p)
            want[rel] = (mode, st.st_atime_ns, st.st_mtime_ns)
            self.assertEqual(st.st_mtime_ns, mtime, "filesystem lacks ns timestamps")
        self.run_ok(["-q", root], umask=0o077)  # mode comes from the source, not the umask
        for rel, (mode, atime, mtime) in want.items():
            for ext in ("gz", "br"):
                out = os.path.join(root, rel + "." + ext)
                st = os.lstat(out)
                self.assertTrue(stat.S_ISREG(st.st_mode), out)
                self.assertEqual(oct(stat.S_IMODE(st.st_mode)), oct(mode), out + ": mode")
                self.assertEqual(st.st_mtime_ns, mtime, out + ": mtime_ns")
                self.assertEqual(st.st_atime_ns, atime, out + ": atime_ns")


class TempFiles(PCTestCase):
    def test_leftover_temp_files_removed(self):
        root = self.copy_site()
        temps = [os.path.join(root, "css", ".app.css.gz.AbC123.tmp"),
                 os.path.join(root, "js", ".app.js.br.Xy9Zq1.tmp"),
                 os.path.join(root, ".index.html.zst.000000.tmp"),
                 os.path.join(root, "docs", ".gone.css.gz.q1w2e3.tmp")]   # its source is gone too
        for t in temps:
            write(t, b"half-written output of a killed run")
        user = [os.path.join(root, "notes.tmp"), os.path.join(root, ".hidden.tmp")]
        for u in user:
            write(u, b"a user's own file, not ours\n" * 20)
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, root])
        for t in temps:
            self.assertFalse(os.path.lexists(t), "leftover temp file not removed: " + t)
        for u in user:
            self.assertTrue(os.path.isfile(u), "a file that is not ours was removed: " + u)
        paths = [e["path"] for e in load_manifest(man)[0]["files"]]
        self.assertFalse([p for p in paths if p.endswith(".tmp") and "notes" not in p and "hidden" not in p], paths)
        self.assertIn("notes.tmp", paths)
        self.assertTrue(os.path.isfile(os.path.join(root, "css", "app.css.gz")))


class Collision(PCTestCase):
    def test_output_name_taken_by_a_directory(self):
        root = self.copy_site()
        d = os.path.join(root, "css", "app.css.gz")
        os.mkdir(d)
        snap = source_snapshot(root)
        man = self.path("m.json")
        r = run(["--json", "--manifest", man, root])
        self.assertEqual(r.rc, 1, r)
        errs = r.error_lines()
        self.assertEqual(len(errs), 1, "one line per failure: %r" % r)
        self.assertTrue(errs[0].startswith("precompress: "), errs[0])
        self.assertIn("css/app.css", errs[0])
        self.assertIn("output name is taken by a directory", errs[0])
        self.assertTrue(os.path.isdir(d), "the directory in the way was removed")
        e = manifest_by_path(load_manifest(man)[0])[b"css/app.css"]
        self.assertIn("error", e)
        self.assertEqual(r.summary()["failed"], 1)
        for other in ("index.html", "js/app.js", "data/config.json"):
            self.assertTrue(os.path.isfile(os.path.join(root, other + ".gz")), other)
            self.assertTrue(os.path.isfile(os.path.join(root, other + ".br")), other)
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)


if __name__ == "__main__":
    main()
