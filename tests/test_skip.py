#!/usr/bin/python3
"""Every skip reason, in the manifest, in the -v lines and in the summary counts."""
import sys

sys.dont_write_bytecode = True
import json
import os
import socket
import stat

from pctest import (PCTestCase, REASONS, classify, load_manifest, main,
                    manifest_by_path, manifest_counts, parse_verbose, run, source_snapshot, walk_all)

TEXT = b"body { color: red; margin: 0 auto; padding: 1rem 2rem; }\n" * 40


class SkipReasons(PCTestCase):
    def build(self):
        root = self.copy_site()
        with open(os.path.join(root, "img", "APP.JPG"), "wb") as f:
            f.write(TEXT)  # compressible: only its extension can keep it out
        with open(os.path.join(root, "img", "Banner.WebP"), "wb") as f:
            f.write(TEXT)
        with open(os.path.join(root, "archive.tar.gz"), "wb") as f:
            f.write(TEXT)  # lone .gz (no archive.tar beside it)
        with open(os.path.join(root, "data", "blob.zst"), "wb") as f:
            f.write(TEXT)
        with open(os.path.join(root, "small.txt"), "wb") as f:
            f.write(b"tiny file\n")  # 10 bytes, under --min-size 16
        os.mkfifo(os.path.join(root, "pipe.css"))
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(os.path.join(root, "sock.js"))
        self.addCleanup(s.close)
        os.symlink("missing-target.js", os.path.join(root, "js", "dead.js"))
        os.symlink("loop.js", os.path.join(root, "js", "loop.js"))
        return root

    EXPECT = {
        b"img/photo.png": "extension",
        b"img/APP.JPG": "extension",
        b"img/Banner.WebP": "extension",
        b"fonts/inter.woff2": "extension",
        b"archive.tar.gz": "extension",
        b"data/blob.zst": "extension",
        b"js/app.js.map": "excluded",
        b"vendor/lib/deep/x.js": "excluded",
        b"empty.txt": "empty",
        b"small.txt": "min-size",
        b"pipe.css": "special",
        b"sock.js": "special",
        b"js/dead.js": "broken-link",
        b"js/loop.js": "broken-link",
        b"robots.txt": "ratio",
        b"assets/random.bin": "ratio",
    }
    ARGS = ["--min-size", "16", "--exclude", "*.map", "--exclude", "vendor/**"]

    def test_reasons_in_manifest_verbose_and_summary(self):
        root = self.build()
        snap = source_snapshot(root)
        cls = classify(root, min_size=16)
        # The oracle agrees on the reasons it can judge (it knows no globs).
        for rel, reason in self.EXPECT.items():
            if reason != "excluded":
                self.assertEqual(cls[rel]["skip"], reason, rel)
        man = self.path("m.json")
        r = run(self.ARGS + ["-v", "--json", "-j", "2", "--manifest", man, root], timeout=60)
        self.assertEqual(r.rc, 0, r)
        m, _ = load_manifest(man)
        byp = manifest_by_path(m)
        self.assertEqual(sorted(byp), sorted(cls), "manifest must record exactly the files of the tree")
        verbose = parse_verbose(r, root)
        self.assertEqual(sorted(verbose), sorted(cls), "-v must print one line per recorded file")
        counts = {x: 0 for x in REASONS}
        for rel in sorted(cls):
            e = byp[rel]
            want = self.EXPECT.get(rel)
            if want == "ratio":
                self.assertNotIn("skipped", e, rel)
                self.assertEqual(e.get("gz"), {"skipped": "ratio"}, rel)
                self.assertEqual(e.get("br"), {"skipped": "ratio"}, rel)
                self.assertEqual(verbose[rel], ("skipped", "ratio"), rel)
            elif want:
                self.assertEqual(e.get("skipped"), want, rel)
                self.assertNotIn("gz", e, rel)
                self.assertEqual(verbose[rel], ("skipped", want), rel)
            else:
                self.assertNotIn("skipped", e, rel)
                self.assertIn("size", e.get("gz", {}), rel)
                self.assertEqual(verbose[rel], ("compressed", "%d -> gz %d, br %d" % (
                    e["size"], e["gz"]["size"], e["br"]["size"])), rel)
            if want:
                counts[want] += 1
        for rel, reason in self.EXPECT.items():
            if reason != "ratio":
                for ext in ("gz", "br"):
                    self.assertFalse(os.path.lexists(os.path.join(root, os.fsdecode(rel) + "." + ext)), rel)
        s = r.summary()  # --json: after the -v lines
        self.assertEqual(s["files"], len(cls))
        self.assertEqual(s["skipped"], counts)
        self.assertEqual(s["compressed"], len(cls) - len(self.EXPECT))
        self.assertEqual(s["failed"], 0)
        c = manifest_counts(m, ["gz", "br"])
        self.assertEqual(c["skipped"], counts)
        self.assertSourcesUnchanged(snap, root)

    def test_min_size_boundary(self):
        root = self.path("t")
        os.makedirs(root)
        for name, n in (("at.txt", 40), ("below.txt", 39)):
            with open(os.path.join(root, name), "wb") as f:
                f.write(b"a" * n)
        man = self.path("m.json")
        self.run_ok(["--min-size", "40", "--manifest", man, root])
        byp = manifest_by_path(load_manifest(man)[0])
        self.assertEqual(byp[b"below.txt"].get("skipped"), "min-size")
        self.assertNotIn("skipped", byp[b"at.txt"])  # size == --min-size is compressed
        self.assertTrue(os.path.isfile(os.path.join(root, "at.txt.gz")))

    def test_device_is_special(self):
        root = self.path("t")
        os.makedirs(root)
        dev = os.path.join(root, "null.js")
        try:
            os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        except OSError as e:
            self.skipTest("cannot create a device node here: %s" % e)
        man = self.path("m.json")
        r = run(["-v", "--manifest", man, root], timeout=60)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(manifest_by_path(load_manifest(man)[0])[b"null.js"].get("skipped"), "special")
        self.assertEqual(parse_verbose(r, root)[b"null.js"], ("skipped", "special"))
        self.assertEqual(sorted(os.listdir(root)), ["null.js"])

    def test_include_excludes_everything_else(self):
        root = self.copy_site()
        man = self.path("m.json")
        r = run(["-v", "--json", "--include", "css/**", "--include", "*.html", "--manifest", man, root], timeout=60)
        self.assertEqual(r.rc, 0, r)
        m, _ = load_manifest(man)
        byp = manifest_by_path(m)
        files = sorted(rel for rel, st in walk_all(root).items() if os.path.isfile(os.path.join(os.fsencode(root), rel))
                       and not rel.endswith((b".gz", b".br")))
        for rel in files:
            e = byp[rel]
            if rel in (b"css/app.css", b"index.html"):
                self.assertNotIn("skipped", e, rel)
                self.assertTrue(os.path.isfile(os.path.join(root, os.fsdecode(rel) + ".gz")), rel)
            else:
                # excluded is checked before extension and empty
                self.assertEqual(e.get("skipped"), "excluded", rel)
                self.assertFalse(os.path.exists(os.path.join(root, os.fsdecode(rel) + ".gz")), rel)
        s = r.summary()
        self.assertEqual({k: v for k, v in s["skipped"].items() if v}, {"excluded": len(files) - 2}, s)

    def test_glob_double_star_and_anchoring(self):
        root = self.copy_site()
        man = self.path("m.json")

        def excluded(glob):
            r = run(["--no-brotli", "--exclude", glob, "--manifest", man, root], timeout=60)
            self.assertEqual(r.rc, 0, r)
            byp = manifest_by_path(load_manifest(man)[0])
            return sorted(os.fsdecode(k) for k, e in byp.items() if e.get("skipped") == "excluded")

        x = "vendor/lib/deep/x.js"
        self.assertEqual(excluded("**/deep/*.js"), [x])
        self.assertEqual(excluded("vendor/**/x.js"), [x])
        self.assertEqual(excluded("vendor/**"), [x])
        self.assertEqual(excluded("**/x.js"), [x])
        self.assertEqual(excluded("**/index.html"), ["index.html"])   # '**/' matches zero directories
        self.assertEqual(excluded("lib/deep/*.js"), [])               # a glob with '/' is anchored at the root
        self.assertEqual(excluded("vendor/*.js"), [])                 # '*' does not cross '/'
        self.assertEqual(excluded("vendor/lib/deep/?.js"), [x])
        self.assertEqual(excluded("x.js"), [x])                       # no '/': matched on the base name
        self.assertEqual(excluded("docs/*.txt"), ["docs/read me.txt"])
        self.assertEqual(excluded("[a-c]*.css"), ["css/app.css", "docs/café – menü.css"])
        self.assertEqual(excluded("[!a-z]*"), [])

    def test_skip_ext_replaces_the_list(self):
        root = self.copy_site()
        with open(os.path.join(root, "archive.tar.gz"), "wb") as f:
            f.write(TEXT)
        man = self.path("m.json")
        r = run(["--skip-ext", "css,MAP", "--manifest", man, root], timeout=60)
        self.assertEqual(r.rc, 0, r)
        byp = manifest_by_path(load_manifest(man)[0])
        self.assertEqual(byp[b"css/app.css"].get("skipped"), "extension")
        self.assertEqual(byp["docs/café – menü.css".encode()].get("skipped"), "extension")
        self.assertEqual(byp[b"js/app.js.map"].get("skipped"), "extension")
        # png is no longer on the list: compressed, and it saves too little
        self.assertNotIn("skipped", byp[b"img/photo.png"])
        self.assertEqual(byp[b"img/photo.png"].get("gz"), {"skipped": "ratio"})
        # a lone .gz is never an input, whatever the list
        self.assertEqual(byp[b"archive.tar.gz"].get("skipped"), "extension")
        self.assertFalse(os.path.exists(os.path.join(root, "css", "app.css.gz")))
        self.assertTrue(os.path.exists(os.path.join(root, "js", "app.js.gz")))


if __name__ == "__main__":
    main()
