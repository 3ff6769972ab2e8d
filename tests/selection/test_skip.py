#!/usr/bin/python3
"""Every skip reason, in the manifest, in the -v lines and in the summary counts."""
import sys

sys.dont_write_bytecode = True
import json
import os
import socket
import stat

from pctest import (fast_levels, PCTestCase, REASONS, classify, load_manifest, main,
                    manifest_by_path, manifest_counts, parse_verbose, run, source_snapshot, walk_all)

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

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


class FilesFrom(PCTestCase):
    """--files-from FILE: only the files it names (one a line, or NUL-separated), by their
    path below the one PATH; the rest of the tree is not compressed, recorded or touched; a
    name not found is an error about it; the manifest is rooted at PATH."""

    def tree(self):
        root = self.path("t")
        for rel in ("a/x.js", "a/b/y.js", "c/z.js", "top.js", "a.js", "a-b/w.js", "ab/v.js"):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "wb") as f:
                f.write(TEXT + rel.encode())
        # An output of a file not listed, stale: left alone.
        with open(os.path.join(root, "c/z.js.gz"), "wb") as f:
            f.write(b"stale")
        return root

    def outputs(self, root):
        return sorted(os.fsdecode(r) for r in walk_all(root) if r.endswith((b".gz", b".br")))

    def test_lists(self):
        root = self.tree()
        man = self.path("m.json")
        for sep, listing in (("\n", "a/b/y.js\n./top.js\n\na-b/w.js\n"),
                             ("\0", "a/b/y.js\0top.js\0a-b/w.js\0")):
            with self.subTest(repr(sep)):
                lst = self.path("list")
                with open(lst, "w") as f:
                    f.write(listing)
                r = run(["-v", "--manifest", man, "--files-from", lst, root])
                self.assertEqual(r.rc, 0, r)
                m, _ = load_manifest(man)
                self.assertNotIn("roots", m)
                self.assertEqual([e["path"] for e in m["files"]], ["a-b/w.js", "a/b/y.js", "top.js"])
                self.assertEqual(self.outputs(root), sorted(
                    ["a-b/w.js.br", "a-b/w.js.gz", "a/b/y.js.br", "a/b/y.js.gz", "c/z.js.gz",
                     "top.js.br", "top.js.gz"]))
                with open(os.path.join(root, "c/z.js.gz"), "rb") as f:
                    self.assertEqual(f.read(), b"stale")
        # Standard input, and the manifest's records: the second run reads nothing again.
        r = run(["--json", "--manifest", man, "--files-from", "-", root], stdin=b"top.js\na/b/y.js\n")
        self.assertEqual((r.rc, r.summary()["unchanged"], r.summary()["files"]), (0, 2, 2), r)

    def test_missing_names_and_refusals(self):
        root = self.tree()
        r = run(["-q", "--files-from", "-", root], stdin=b"top.js\nnope.js\na\n")
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(sorted(r.error_lines()), sorted([
            "precompress: %s/nope.js: No such file or directory" % root,
            "precompress: %s/a: No such file or directory" % root]), r)
        self.assertTrue(os.path.exists(os.path.join(root, "top.js.gz")))
        for stdin, args, says in (
                (b"/etc/passwd\n", [root], "--files-from: a name that is empty, absolute"),
                (b"a/../top.js\n", [root], "--files-from: a name that is empty, absolute"),
                (b"top.js\n", [root, root + "/a"], "--files-from takes one PATH"),
                (b"top.js\n", [os.path.join(root, "top.js")], "Not a directory")):
            r = run(["--files-from", "-"] + args, stdin=stdin)
            self.assertEqual(r.rc, 2, (stdin, r))
            self.assertIn(says, r.err, (stdin, r))
        r = run(["--files-from", self.path("none"), root])
        self.assertEqual((r.rc, r.err), (2, "precompress: %s: No such file or directory\n" % self.path("none")), r)


if __name__ == "__main__":
    main()
