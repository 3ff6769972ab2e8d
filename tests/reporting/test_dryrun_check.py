#!/usr/bin/python3
"""--dry-run writes nothing and lists what a run would do; --check gates CI."""
import sys

sys.dont_write_bytecode = True
import os
import time

from pctest import fast_levels, PCTestCase, classify, expected_outputs, listing, main, run, write

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()


class DryRun(PCTestCase):
    def test_dry_run_writes_nothing_and_lists_outputs(self):
        root = self.copy_site()
        tmpf = os.path.join(root, "css", ".app.css.gz.AbC123.tmp")
        write(tmpf, b"leftover")  # a dry run must not even clean this up
        cls = classify(root)
        before = listing(root)
        man = self.path("m.json")
        r = run(["-n", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(listing(root), before, "--dry-run changed the tree")
        self.assertFalse(os.path.exists(man), "--dry-run wrote a manifest")
        want = sorted("would write %s/%s" % (root, os.fsdecode(rel)) for rel in expected_outputs(cls))
        self.assertGreater(len(want), 10)
        self.assertEqual(sorted(r.out_lines), want)
        # the counts (--json, which prints no listing)
        r = run(["--dry-run", "--json", root])
        self.assertEqual(r.rc, 0, r)
        s = r.summary()
        self.assertEqual(len(r.out_lines), 1, r)
        self.assertIs(s["dry_run"], True, r)
        self.assertEqual(s["changes"], len(want), r)
        self.assertEqual(listing(root), before)

    def test_dry_run_after_a_run_lists_replace_and_remove(self):
        root = self.copy_site()
        self.run_ok(["-q", root])
        present = sorted(rel for rel in expected_outputs(classify(root)))
        write(os.path.join(root, "js", "app.js"), os.urandom(3000))
        before = listing(root)
        r = run(["--dry-run", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(listing(root), before, "--dry-run changed the tree")
        want = []
        for rel in present:
            rel = os.fsdecode(rel)
            verb = "would remove" if rel in ("js/app.js.gz", "js/app.js.br") else "would replace"
            want.append("%s %s/%s" % (verb, root, rel))
        self.assertEqual(sorted(r.out_lines), sorted(want))


class Check(PCTestCase):
    def test_check_clean_stale_missing_unwanted(self):
        root = self.copy_site()
        self.run_ok(["-q", root])
        r = run(["--check", root])
        self.assertEqual(r.rc, 0, "fresh tree must pass --check: %r" % r)
        self.assertEqual(r.out, "", "--check printed lines on a fresh tree")

        # edit a source: append text and bump its mtime
        css = os.path.join(root, "css", "app.css")
        write(css, b"\n.added { display: none; }\n", "ab")
        st = os.stat(css)
        os.utime(css, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
        before = listing(root)
        r = run(["--check", root])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(sorted(r.out_lines), ["stale %s/css/app.css.br" % root, "stale %s/css/app.css.gz" % root])
        self.assertEqual(listing(root), before, "--check changed the tree")

        # delete an output, plant an unwanted one
        os.unlink(os.path.join(root, "index.html.br"))
        write(os.path.join(root, "robots.txt.gz"), b"not a real gzip file")
        r = run(["--check", root])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(sorted(r.out_lines), sorted([
            "stale %s/css/app.css.br" % root, "stale %s/css/app.css.gz" % root,
            "missing %s/index.html.br" % root, "unwanted %s/robots.txt.gz" % root]))

        # a real run fixes all of it
        self.run_ok(["-q", root])
        self.assertFalse(os.path.lexists(os.path.join(root, "robots.txt.gz")))
        r = run(["--check", root])
        self.assertEqual((r.rc, r.out), (0, ""), r)

    def test_check_stale_by_mtime_alone(self):
        root = self.copy_site()
        self.run_ok(["-q", root])
        p = os.path.join(root, "data", "config.json")
        now = time.time_ns()
        os.utime(p, ns=(now, now))
        r = run(["--check", root])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(sorted(r.out_lines), ["stale %s/data/config.json.br" % root,
                                               "stale %s/data/config.json.gz" % root])


if __name__ == "__main__":
    main()
