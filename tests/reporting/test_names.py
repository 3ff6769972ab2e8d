#!/usr/bin/python3
"""Names in the output: escaped like `ls -b` wherever a person reads them, exact
in --json-lines; removals reported; --json keeps stdout JSON only.

Every case is caused for real: files whose names hold a newline, terminal
escapes, a tab, a backslash, bytes that are not UTF-8 and a C1 control, run
through -v, --dry-run, --check, error lines (an unreadable file, run as uid
65534 since root ignores permissions), the "ran alone" note and the
messages about PATH arguments and merge-manifests inputs.
"""
import sys

sys.dont_write_bytecode = True
import os
import re

from pctest import (fast_levels, PCTestCase, entry_rel, load_json_strict, main, make_world_accessible, run, words_data,
                    write)

# name on disk -> how human output must show it (GNU `ls -b`, quoting style "escape").
ODD = {
    b"new\nline.js": "new\\nline.js",
    b"\x1b[31mred.js": "\\033[31mred.js",
    b"tab\there.js": "tab\\there.js",
    b"back\\slash.js": "back\\\\slash.js",
    b"bad\xff.js": "bad\\377.js",
    "caf\u00e9.js".encode(): "caf\u00e9.js",
    b"c1\xc2\x85.js": "c1\\302\\205.js",
    b"del\x7f.js": "del\\177.js",
    b"bel\x07bs\x08vt\x0bff\x0ccr\x0d.js": "bel\\abs\\bvt\\vff\\fcr\\r.js",
    b"ctl\x01\x1f.js": "ctl\\001\\037.js",
    b"sp ace.js": "sp ace.js",
    b"cut\xc3.js": "cut\\303.js",               # a lead byte without its continuation
    b"sur\xed\xa0\x80.js": "sur\\355\\240\\200.js",  # a UTF-16 surrogate, not UTF-8
    b"over\xc0\xaf.js": "over\\300\\257.js",      # an overlong '/'
    "\u65e5\u672c.js".encode(): "\u65e5\u672c.js",
}

# A name that, printed raw, would forge a -v line of its own. A name cannot
# hold '/', so the forged path is made of directories.
FORGE_DIRS = [b"x\ncompressed ", b"etc"]
FORGE_FILE = b"passwd (1 -> gz 1)"
FORGE_REL = b"/".join(FORGE_DIRS + [FORGE_FILE])
FORGE_SHOWN = "x\\ncompressed /etc/passwd (1 -> gz 1)"

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()


def assert_safe_text(tc, blob, what):
    """Output a person reads: valid UTF-8, no control byte but the newline, no C1 control."""
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError as e:
        tc.fail("%s is not valid UTF-8 (%s): %r" % (what, e, blob[-2000:]))
    bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f]
    tc.assertEqual(bad, [], "%s holds control characters: %r" % (what, blob[-2000:]))
    return text


def lines(blob):
    return [l for l in blob.split(b"\n") if l != b""]


class Base(PCTestCase):
    def odd_tree(self, forge=True, size=3000):
        """ODD's files (and the forging one), each with its own content so none is a copy."""
        root = self.path("site")
        os.makedirs(root)
        broot = os.fsencode(root)
        for i, n in enumerate(sorted(ODD)):
            write(os.path.join(broot, n), words_data(size + i, seed=100 + i))
        if forge:
            d = os.path.join(broot, *FORGE_DIRS)
            os.makedirs(d)
            write(os.path.join(d, FORGE_FILE), words_data(size + 99, seed=99))
        return root

    def shown(self, root):
        """{rel bytes: the full path as human output shows it}."""
        res = {n: "%s/%s" % (root, s) for n, s in ODD.items()}
        res[FORGE_REL] = "%s/%s" % (root, FORGE_SHOWN)
        return res

    def size(self, root, rel, ext=None):
        p = os.path.join(os.fsencode(root), rel)
        return os.path.getsize(p + b"." + ext.encode() if ext else p)


class HumanOutput(Base):
    def test_verbose_lines_are_escaped(self):
        root = self.odd_tree()
        r = run(["-v", "--progress", "never", root])
        self.assertEqual(r.rc, 0, r)
        out = assert_safe_text(self, r.out_b, "-v's stdout")
        assert_safe_text(self, r.err_b, "stderr")
        want = sorted("compressed %s (%d -> gz %d, br %d)" % (s, self.size(root, rel), self.size(root, rel, "gz"),
                                                             self.size(root, rel, "br"))
                      for rel, s in self.shown(root).items())
        self.assertEqual(sorted(out.split("\n")[:-1]), want)

    def test_a_name_cannot_forge_a_line(self):
        root = self.odd_tree()
        r = run(["-v", root])
        self.assertEqual(r.rc, 0, r)
        got = lines(r.out_b)
        # One line per file, each about a file under root: nothing a name could add.
        self.assertEqual(len(got), len(ODD) + 1, r)
        prefix = ("compressed %s/" % root).encode()
        for l in got:
            self.assertTrue(l.startswith(prefix), l)
        about = [l for l in got if b"passwd" in l]
        self.assertEqual(about, [("compressed %s/%s (%d -> gz %d, br %d)" % (
            root, FORGE_SHOWN, self.size(root, FORGE_REL), self.size(root, FORGE_REL, "gz"),
            self.size(root, FORGE_REL, "br"))).encode()])
        self.assertFalse([l for l in got if l.startswith(b"compressed /etc/")], r)

    def test_dry_run_and_check_lines_are_escaped(self):
        root = self.odd_tree()
        shown = self.shown(root)
        r = run(["--dry-run", root])
        self.assertEqual(r.rc, 0, r)
        out = assert_safe_text(self, r.out_b, "--dry-run's stdout")
        want = sorted("would write %s.%s" % (s, ext) for s in shown.values() for ext in ("gz", "br"))
        self.assertEqual(sorted(out.split("\n")[:-1]), want)

        r = run(["--check", root])
        self.assertEqual(r.rc, 1, r)
        out = assert_safe_text(self, r.out_b, "--check's stdout")
        want = sorted("missing %s.%s" % (s, ext) for s in shown.values() for ext in ("gz", "br"))
        self.assertEqual(sorted(out.split("\n")[:-1]), want)

        self.run_ok(["-q", root])
        # Plant an unwanted output: a ratio-skipped file with an old .gz beside it.
        broot = os.fsencode(root)
        write(os.path.join(broot, b"rnd\x1b]0;x\x07.js"), os.urandom(3000))
        write(os.path.join(broot, b"rnd\x1b]0;x\x07.js.gz"), b"old")
        r = run(["--check", root])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.out_b, ("unwanted %s/rnd\\033]0;x\\a.js.gz\n" % root).encode())

    def test_error_lines_are_escaped(self):
        """An unreadable file fails with one line on stderr, its name escaped (as uid 65534)."""
        self.use_nobody()
        root = self.odd_tree()
        make_world_accessible(root)
        broot = os.fsencode(root)
        unreadable = [b"\x1b[31mred.js", b"new\nline.js", b"bad\xff.js", b"c1\xc2\x85.js", FORGE_REL]
        for rel in unreadable:
            os.chmod(os.path.join(broot, rel), 0)
        shown = self.shown(root)
        r = self.run_nobody(["-v", "--json", "--progress", "never", root])
        self.assertEqual(r.rc, 1, r)
        err = assert_safe_text(self, r.err_b, "stderr")
        assert_safe_text(self, r.out_b, "stdout")
        # --json: no summary line, every line on stderr is an error
        self.assertEqual(sorted(err.split("\n")[:-1]),
                         sorted("precompress: %s: Permission denied" % shown[rel] for rel in unreadable))
        self.assertEqual(len([l for l in err.split("\n") if "passwd" in l]), 1, r)
        self.assertEqual(r.summary()["failed"], len(unreadable), r)
        # The other files still have their -v lines (then the summary); the failed ones have none.
        self.assertEqual(len(lines(r.out_b)) - 1, len(ODD) + 1 - len(unreadable), r)

    def test_ran_alone_note_is_escaped(self):
        # Files over 64 KiB are units of their own, so each one runs alone under a 1 KiB limit.
        root = self.odd_tree(forge=False, size=70000)
        shown = self.shown(root)
        r = run(["-v", "--json", "--memory-limit", "1k", root])
        self.assertEqual(r.rc, 0, r)
        err = assert_safe_text(self, r.err_b, "stderr")
        notes = sorted(err.split("\n")[:-1])  # --json: no summary line, the notes alone
        self.assertEqual(notes, sorted("precompress: %s: ran alone: its encoders need more than the 1.0 KiB memory "
                                       "limit by themselves" % shown[n] for n in ODD))

    def test_path_arguments_are_escaped(self):
        missing = os.fsencode(self.path("gone")) + b"/no\nsuch\x1b[2J\xff"
        r = run([missing])
        self.assertEqual(r.rc, 2, r)
        self.assertEqual(r.err_b, b"precompress: " + os.fsencode(self.path("gone")) +
                         b"/no\\nsuch\\033[2J\\377: No such file or directory\n")
        self.assertEqual(r.out_b, b"")

    def test_merge_manifests_names_are_escaped(self):
        out = os.fsencode(self.path("out.json"))
        first = os.fsencode(self.path("in\n1\x1b.json"))
        r = run(["merge-manifests", out, first])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.err_b, b"precompress: " + os.fsencode(self.path("")) +
                         b"in\\n1\\033.json: No such file or directory\n")

        # Two shards of different jobs: both names in one line.
        root = self.odd_tree(forge=False)
        m1, m2 = self.path("m\t1.json"), self.path("m\x1b2.json")
        self.run_ok(["-q", "--shard", "1/2", "--manifest", m1, root])
        self.run_ok(["-q", "--shard", "2/2", "--no-brotli", "--manifest", m2, root])
        r = run(["merge-manifests", out, m1, m2])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.err_b, ("precompress: %s: written with other options or roots than %s: not a shard of "
                                   "the same job\n" % (self.path("m\\0332.json"), self.path("m\\t1.json"))).encode())


def parse_json_lines(tc, r):
    """Every stdout line is one JSON object (strict RFC 8259); returns them."""
    tc.assertTrue(r.out_b.endswith(b"\n"), r)
    objs = []
    for l in r.out_b.split(b"\n")[:-1]:
        try:
            objs.append(load_json_strict(l))
        except ValueError as e:
            tc.fail("not a JSON line (%s): %r" % (e, l))
        tc.assertIsInstance(objs[-1], dict)
    tc.assertGreater(len(objs), 0, r)
    return objs


class JsonLines(Base):
    def build(self):
        root = self.odd_tree()
        broot = os.fsencode(root)
        write(os.path.join(broot, b"empty\n.css"), b"")
        write(os.path.join(broot, b"logo\xff.png"), words_data(2000, seed=7))
        write(os.path.join(broot, b"random.bin"), os.urandom(4000))
        write(os.path.join(broot, "line\u2028sep.js".encode()), words_data(4000, seed=9))
        write(os.path.join(broot, b"twin-a.js"), words_data(5000, seed=8))
        write(os.path.join(broot, b"twin-b.js"), words_data(5000, seed=8))
        return root

    def test_stream_one_object_per_file_then_summary(self):
        root = self.build()
        broot = os.fsencode(root)
        r = run(["--json-lines", "-j", "1", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err_b, b"", r)
        objs = parse_json_lines(self, r)
        files, summary = objs[:-1], objs[-1]
        self.assertEqual([o["type"] for o in files], ["file"] * len(files))
        self.assertEqual(list(summary)[0], "type")
        self.assertEqual(summary["type"], "summary")

        # The summary is --json's object with "type" first.
        j = load_json_strict(run(["--json", "--dry-run", root]).out_b)
        self.assertEqual(list(summary)[1:], list(j))
        self.assertEqual(summary["files"], len(files))
        self.assertEqual(summary["dry_run"], False)

        byrel = {}
        for o in files:
            rel = entry_rel(o)
            self.assertNotIn(rel, byrel, "a file reported twice")
            byrel[rel] = o
        sep = "line\u2028sep.js".encode()
        want = set(ODD) | {FORGE_REL, sep, b"empty\n.css", b"logo\xff.png", b"random.bin", b"twin-a.js",
                           b"twin-b.js"}
        self.assertEqual(set(byrel), want)
        status = {rel: o["status"] for rel, o in byrel.items()}
        # One of the twins is compressed, the other gets copies of its outputs.
        self.assertEqual(sorted([status.pop(b"twin-a.js"), status.pop(b"twin-b.js")]), ["compressed", "copied"])
        want = {rel: "compressed" for rel in set(ODD) | {FORGE_REL, sep}}
        want.update({b"empty\n.css": "skipped", b"logo\xff.png": "skipped", b"random.bin": "skipped"})
        self.assertEqual(status, want)
        self.assertEqual(byrel[b"empty\n.css"]["skip"], "empty")
        self.assertEqual(byrel[b"logo\xff.png"]["skip"], "extension")
        self.assertEqual(byrel[b"random.bin"]["skip"], "ratio")
        for rel, o in byrel.items():
            self.assertEqual(o["root"], root)
            self.assertEqual("skip" in o, o["status"] == "skipped", o)
            self.assertNotIn("error", o)
            st = os.stat(os.path.join(broot, rel))
            self.assertEqual(o["size"], st.st_size, rel)
            self.assertEqual(o["mtime_ns"], st.st_mtime_ns, rel)
            self.assertEqual(list(o["outputs"]), ["gz", "br"], rel)
            for ext, out in o["outputs"].items():
                p = os.path.join(broot, rel) + b"." + ext.encode()
                if o["status"] in ("compressed", "copied"):
                    self.assertEqual(out, {"state": "kept", "size": os.path.getsize(p), "action": "create"})
                elif o.get("skip") == "ratio":
                    self.assertEqual(out, {"state": "ratio", "action": "none"})
                    self.assertFalse(os.path.lexists(p))
                else:
                    self.assertEqual(out, {"state": "off", "action": "none"})

        # Names: exact when UTF-8, else U+FFFD in "path" and the bytes in "path_hex".
        bad = byrel[b"bad\xff.js"]
        self.assertEqual(bad["path"], "bad\ufffd.js")
        self.assertEqual(bad["path_hex"], "626164ff2e6a73")
        self.assertEqual(byrel[b"c1\xc2\x85.js"]["path"], "c1\u0085.js")
        self.assertEqual(byrel["caf\u00e9.js".encode()]["path"], "caf\u00e9.js")
        self.assertEqual(byrel[b"new\nline.js"]["path"], "new\nline.js")
        for rel, o in byrel.items():
            try:
                rel.decode("utf-8")
                self.assertNotIn("path_hex", o, rel)
            except UnicodeDecodeError:
                self.assertEqual(o["path_hex"], rel.hex(), rel)
        # The stream itself is safe on a terminal (no control byte, no C1 control) and in
        # JavaScript (U+2028 escaped).
        assert_safe_text(self, r.out_b, "--json-lines' stdout")
        self.assertIn(b'"path":"\\u001b[31mred.js"', r.out_b)
        self.assertIn(b'"path":"c1\\u0085.js"', r.out_b)
        self.assertIn(b'"path":"line\\u2028sep.js"', r.out_b)

    def test_root_that_is_not_utf8(self):
        broot = os.fsencode(self.tmp) + b"/r\xff\n"
        os.makedirs(broot)
        write(os.path.join(broot, b"a.js"), words_data(3000, seed=3))
        objs = parse_json_lines(self, self.run_ok(["--json-lines", broot]))
        self.assertEqual(len(objs), 2)
        o = objs[0]
        self.assertEqual((o["root"], o["root_hex"], o["path"]), (self.tmp + "/r\ufffd\n", broot.hex(), "a.js"))
        self.assertNotIn("path_hex", o)

    def test_a_second_run_refreshes_and_a_stricter_ratio_removes(self):
        root = self.odd_tree(forge=False)
        self.run_ok(["-q", root])
        objs = parse_json_lines(self, self.run_ok(["--json-lines", root]))
        for o in objs[:-1]:
            self.assertEqual({e: v["action"] for e, v in o["outputs"].items()}, {"gz": "refresh", "br": "refresh"})
        r = self.run_ok(["--json-lines", "--max-ratio", "0.000000001", root])
        objs = parse_json_lines(self, r)
        for o in objs[:-1]:
            self.assertEqual((o["status"], o["skip"]), ("skipped", "ratio"))
            self.assertEqual(o["outputs"], {"gz": {"state": "ratio", "action": "remove"},
                                            "br": {"state": "ratio", "action": "remove"}})
        self.assertEqual(objs[-1]["removed"], 2 * len(ODD))

    def test_failed_file(self):
        self.use_nobody()
        root = self.odd_tree(forge=False)
        make_world_accessible(root)
        os.chmod(os.path.join(os.fsencode(root), b"bad\xff.js"), 0)
        r = self.run_nobody(["--json-lines", root])
        self.assertEqual(r.rc, 1, r)
        objs = parse_json_lines(self, r)
        failed = [o for o in objs[:-1] if o["status"] == "failed"]
        self.assertEqual(len(failed), 1, r)
        self.assertEqual(failed[0]["path_hex"], b"bad\xff.js".hex())
        self.assertEqual(failed[0]["error"], "Permission denied")
        self.assertNotIn("skip", failed[0])
        self.assertEqual(failed[0]["outputs"], {"gz": {"state": "failed", "action": "none"},
                                                "br": {"state": "failed", "action": "none"}})
        self.assertEqual(objs[-1]["failed"], 1)
        self.assertEqual(objs[-1]["exit"], 1)
        # The error line is still on stderr, for people.
        self.assertEqual(r.err_b, ("precompress: %s/bad\\377.js: Permission denied\n" % root).encode())

    def test_dry_run_and_check_print_json_only(self):
        root = self.odd_tree(forge=False)
        for opt in ("--dry-run", "--check"):
            with self.subTest(opt=opt):
                r = run([opt, "--json-lines", root])
                self.assertEqual(r.rc, 1 if opt == "--check" else 0, r)
                objs = parse_json_lines(self, r)
                self.assertEqual(len(objs), len(ODD) + 1)
                for o in objs[:-1]:
                    self.assertEqual({e: v["action"] for e, v in o["outputs"].items()},
                                     {"gz": "create", "br": "create"})
                self.assertEqual(objs[-1]["changes"], 2 * len(ODD))
                self.assertEqual(objs[-1]["dry_run"], True)
        self.assertEqual(len(os.listdir(root)), len(ODD), "a dry run wrote something")

    def test_usage_errors(self):
        root = self.odd_tree(forge=False)
        for args in (["--json-lines", "-v"], ["-v", "--json-lines"], ["--json-lines", "--json"],
                     ["--json", "--json-lines"], ["--json-lines", "--verbose"]):
            with self.subTest(args=args):
                r = run(args + [root])
                self.assertEqual(r.rc, 2, r)
                self.assertEqual(r.out_b, b"")
                self.assertEqual(len(r.err_lines), 1, r)
                self.assertRegex(r.err, r"^precompress: --json-lines and (-v/--verbose|--json) cannot be used together "
                                        r"\(see 'precompress --help'\)\n$")
        self.assertEqual(len(os.listdir(root)), len(ODD), "a usage error wrote something")


class Removed(Base):
    def test_removed_lines_and_count(self):
        root = self.odd_tree()
        shown = self.shown(root)
        self.run_ok(["-q", root])
        r = self.run_ok(["-v", "--json", "--max-ratio", "0.000000001", root])
        out = assert_safe_text(self, r.out_b, "stdout").split("\n")[:-2]  # the last: --json's summary
        # Each file's line, then one "removed" line per output it lost.
        self.assertEqual(len(out), 3 * len(shown), r)
        for i in range(0, len(out), 3):
            m = re.match(r"^skipped (.*) \(ratio\)$", out[i])
            self.assertIsNotNone(m, out[i])
            self.assertIn(m.group(1), shown.values())
            self.assertEqual(out[i + 1:i + 3], ["removed %s.gz" % m.group(1), "removed %s.br" % m.group(1)])
        s = r.summary()
        self.assertEqual((s["failed"], s["removed"]), (0, 2 * len(shown)), r)
        for rel in shown:
            for ext in (b".gz", b".br"):
                self.assertFalse(os.path.lexists(os.path.join(os.fsencode(root), rel) + ext))

    def test_emptied_file_and_count_without_v(self):
        root = self.odd_tree(forge=False)
        self.run_ok(["-q", root])
        name = b"\x1b[31mred.js"
        write(os.path.join(os.fsencode(root), name), b"")
        r = self.run_ok(["-v", "--json", root])
        got = [l for l in lines(r.out_b) if b"red.js" in l]
        self.assertEqual(got, [("skipped %s/\\033[31mred.js (empty)" % root).encode(),
                               ("removed %s/\\033[31mred.js.gz" % root).encode(),
                               ("removed %s/\\033[31mred.js.br" % root).encode()])
        self.assertEqual(r.summary()["removed"], 2)
        # Nothing left to remove (the summary line then leaves the count out: test_manifest.py)
        r = self.run_ok(["--json", root])
        self.assertEqual(len(r.out_lines), 1, r)
        self.assertEqual(r.summary()["removed"], 0)

    def test_count_without_v(self):
        root = self.odd_tree(forge=False)
        self.run_ok(["-q", root])
        r = self.run_ok(["--json", "--max-ratio", "0.000000001", root])
        self.assertEqual(len(r.out_lines), 1, "no line but the summary without -v: %r" % r)
        self.assertEqual(r.summary()["removed"], 2 * len(ODD), r)

    def test_dry_run_says_would_remove_only(self):
        root = self.odd_tree(forge=False)
        self.run_ok(["-q", root])
        # A real run would print "removed" lines and count them (test above); a dry run lists
        # "would remove" and counts them among its changes instead.
        r = self.run_ok(["-v", "-n", "--json", "--max-ratio", "0.000000001", root])
        s = r.summary()
        self.assertIs(s["dry_run"], True)
        self.assertEqual((s["changes"], s["removed"]), (2 * len(ODD), 2 * len(ODD)), r)
        r = self.run_ok(["-v", "--json", "--max-ratio", "0.000000001", root])
        self.assertEqual(r.summary()["removed"], 2 * len(ODD), r)
        self.run_ok(["-q", root])
        # the listing (no --json, which leaves it out; the summary line is test_manifest.py's)
        r = self.run_ok(["-v", "-n", "--max-ratio", "0.000000001", root])
        out = lines(r.out_b)
        self.assertFalse([l for l in out if l.startswith(b"removed ")], r)
        self.assertEqual(len([l for l in out if l.startswith(b"would remove ")]), 2 * len(ODD), r)

    def test_count_follows_other_errors(self):
        """N failed, N other errors, N removed: a directory nobody can read gives the other error."""
        self.use_nobody()
        root = self.odd_tree(forge=False)
        os.makedirs(os.path.join(root, "closed"))
        write(os.path.join(root, "closed", "a.js"), words_data(3000, seed=5))
        self.run_ok(["-q", root])
        make_world_accessible(root)
        os.chmod(os.path.join(root, "closed"), 0)
        r = self.run_nobody(["--json", "--max-ratio", "0.000000001", root])
        self.assertEqual(r.rc, 1, r)
        s = r.summary()
        self.assertEqual((s["failed"], s["errors"], s["removed"], s["exit"]), (0, 1, 2 * len(ODD), 1), r)


class JsonStdout(Base):
    def test_check_and_dry_run_json_print_one_object(self):
        root = self.odd_tree()
        for args, rc in ((["--check", "--json"], 1), (["--dry-run", "--json"], 0), (["-n", "-v", "--json"], 0)):
            with self.subTest(args=args):
                r = run(args + [root])
                self.assertEqual(r.rc, rc, r)
                out = r.out_b
                if "-v" in args:
                    # -v's lines were asked for; the listing lines were not.
                    vl = lines(out)[:-1]
                    self.assertEqual(len(vl), len(ODD) + 1)
                    self.assertFalse([l for l in vl if l.startswith(b"would ")], r)
                    out = lines(out)[-1] + b"\n"
                self.assertEqual(out.count(b"\n"), 1, r)
                j = load_json_strict(out)
                self.assertEqual(j["changes"], 2 * (len(ODD) + 1))
                self.assertEqual(j["exit"], rc)
                self.assertTrue(j["dry_run"])
        # Up to date: still exactly the object.
        self.run_ok(["-q", root])
        r = run(["--check", "--json", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.out_b.count(b"\n"), 1, r)
        self.assertEqual(load_json_strict(r.out_b)["changes"], 0)


if __name__ == "__main__":
    main()
