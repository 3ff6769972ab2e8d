#!/usr/bin/python3
"""Exit status 0, 1, 2 (and 130/143), each caused for real; error lines on stderr."""
import sys

sys.dont_write_bytecode = True
import os
import re
import shutil
import signal
import subprocess
import time
import unittest

from pctest import (fast_levels, full_only, wait_open, HERE, NOBODY, PCTestCase, PROGRAM, Result, decode, listing, load_manifest, main,
                    make_world_accessible, manifest_by_path, project_version, run, source_snapshot,
                    temp_leftovers, walk_all, words_data)

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

HAVE_SETPRIV = shutil.which("setpriv") is not None
MAN = os.path.join(os.path.dirname(HERE), "man")


def option_reference():
    """man/options.md, the one source of --help, the man page and the reference's option
    table, read by man/gen_options.py's own parser (imported from its file, as
    tests/unit/check_docs.py does)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen_options", os.path.join(MAN, "gen_options.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen.parse(os.path.join(MAN, "options.md"))


class Usage(PCTestCase):
    def test_bad_usage_exits_2_and_touches_nothing(self):
        root = self.copy_site()
        before = listing(root)
        cases = [
            ["--bogus", root],
            ["-Z", root],
            [],
            ["-q"],
            ["--gzip-level", "10", root],
            ["--gzip-level", "0", root],
            ["--gzip-level", "nine", root],
            ["--gzip-level", "9x", root],
            ["--brotli-quality", "12", root],
            ["--brotli-quality", "-1", root],
            ["--zstd-level", "20", root],
            ["--max-ratio", "abc", root],
            ["--max-ratio", "-0.5", root],
            ["--max-ratio", "0.5x", root],
            ["--max-ratio", "", root],
            ["--progress", "sometimes", root],
            ["--formats", "gz,lz4", root],
            ["--jobs", "many", root],
            ["--min-size", "-3", root],
            ["--min-size", "4kk", root],
            ["--min-size", "4ib", root],
            ["--min-size", "4 k", root],
            ["--min-size", "4kbb", root],
            [root, "--gzip-level"],
            ["--no-gzip", "--no-brotli", root],
        ]
        for args in cases:
            with self.subTest(args=args):
                r = run(args, timeout=30)
                self.assertEqual(r.rc, 2, r)
                self.assertEqual(len(r.err_lines), 1, "bad usage: exactly one line on stderr: %r" % r)
                line = r.err_lines[0]
                self.assertTrue(line.startswith("precompress: "), line)
                self.assertIn("precompress --help", line)
                self.assertEqual(r.out, "")
                self.assertEqual(listing(root), before, "a usage error must not touch the tree")

    def test_nonexistent_path_exits_2_before_any_work(self):
        root = self.copy_site()
        before = listing(root)
        missing = os.path.join(self.tmp, "no-such-dir")
        r = run([root, missing], timeout=30)
        self.assertEqual(r.rc, 2, r)
        self.assertIn("precompress: %s: No such file or directory" % missing, r.err_lines)
        self.assertEqual(listing(root), before, "exit 2 must come before any work")

    def test_whitenoise_positional_extensions_get_a_hint(self):
        # `python -m whitenoise.compress DIR jpg png`: the trailing words are its skip list.
        # Here they are PATHs: exit 2 before any work, each named, then one line naming
        # --skip-ext with the words that look like extensions (not no/such.js, not a dir).
        root = self.copy_site()
        before = listing(root)
        hint = ("precompress: hint: every argument but the options is a PATH; to skip extensions "
                "as 'python -m whitenoise.compress DIR EXT...' does, use --skip-ext %s")
        cases = [
            (["site", "jpg", "png"], "jpg,png"),
            (["--no-brotli", "site", "woff2", "no/such.js", "MP4"], "woff2,MP4"),
            (["-q", "site", "jpg", "css"], "jpg,css"),
        ]
        os.mkdir(self.path("cwd"))
        os.symlink(root, self.path("cwd", "site"))
        for args, exts in cases:
            with self.subTest(args=args):
                r = run(args, timeout=30, cwd=self.path("cwd"))
                self.assertEqual(r.rc, 2, r)
                for a in args[args.index("site") + 1:]:
                    self.assertIn("precompress: %s: No such file or directory" % a, r.err_lines)
                self.assertEqual(r.err_lines[-1], hint % exts, r)
                self.assertEqual(r.out, "")
                self.assertEqual(listing(root), before, "exit 2 must come before any work")
        # An existing PATH that looks like an extension is a PATH; a missing one that does
        # not look like one (a dot, a slash, too long) gets no hint.
        os.mkdir(self.path("cwd", "js"))
        for args in (["js"], ["site", "app.js"], ["site", "a/b"], ["site", "abcdefghijk"]):
            with self.subTest(args=args):
                r = run(args, timeout=30, cwd=self.path("cwd"))
                self.assertFalse(any("hint:" in l for l in r.err_lines), r)
                self.assertEqual(r.rc, 0 if args == ["js"] else 2, r)

    def test_ok_exits_0(self):
        root = self.copy_site()
        r = run([root])
        self.assertEqual(r.rc, 0, r)
        self.assertTrue(os.path.isfile(os.path.join(root, "css", "app.css.gz")))
        r = run(["--version"])
        self.assertEqual(r.rc, 0, r)
        self.assertRegex(r.out, r"^precompress \d+\.\d+\.\d+ \(zlib [^,]+, brotli [^,]+, libuv [^,)]+(, zstd [^)]+)?\)\n$")
        # The one version: include/precompress.h's, as dist/version.py reads it for meson, the
        # wheel and the release script.
        self.assertEqual(r.out.split()[1], project_version(), r)

    def test_help_lists_every_option_of_the_reference(self):
        """The options are those of man/options.md (read by gen_options.py's own parser), not a
        list kept here: each has its line in --help (short name, long name, meta-variable and
        the start of its text) under its group's heading, and --help lists no other."""
        ref = option_reference()
        opts = ref.options()
        self.assertGreaterEqual(len(opts), 30, "man/options.md: too few options read: %d" % len(opts))
        r = run(["--help"])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err, "", r)
        lines = r.out.split("\n")
        heads = []
        for g in ref.groups:
            self.assertIn(g.name + ":", lines, "--help has no heading for the group %r" % g.name)
            heads.append(lines.index(g.name + ":"))
        self.assertEqual(heads, sorted(heads), "--help's groups are not in the reference's order")
        for g, start, end in zip(ref.groups, heads, heads[1:] + [len(lines)]):
            for o in g.options:
                tag = "  " + ("%s, " % o.short if o.short else "    ") + o.long + (" " + o.metavar if o.metavar else "")
                mine = [i for i, l in enumerate(lines) if l == tag or l.startswith(tag + "  ")]
                with self.subTest(option=o.long):
                    self.assertEqual(len(mine), 1, "--help has not one line %r:\n%s" % (tag, r.out))
                    self.assertTrue(start < mine[0] < end, "%s is not under %r in --help" % (o.long, g.name))
                    # A name too long for the column has its text on the next line.
                    text = lines[mine[0]] if lines[mine[0]] != tag else lines[mine[0] + 1]
                    self.assertIn(o.help[0].split("{")[0].strip(), text, o.long)
        listed = [m.group(1) for m in (re.match(r"^  (?:-[A-Za-z], |    )(--[a-z][a-z-]*)", l) for l in lines) if m]
        self.assertEqual(sorted(listed), sorted(o.long for o in opts), "--help's options and the reference's")
        for ext in ("woff2", "3gpp", "wmv", "avif", "flac", "lzma"):
            self.assertIn(ext, r.out, "--help does not print the skip list (" + ext + ")")


@unittest.skipUnless(HAVE_SETPRIV, "setpriv (util-linux) is missing: cannot run as an unprivileged user")
class AsNobody(PCTestCase):
    """Root ignores permissions, so these run the program as nobody."""

    def setUp(self):
        super().setUp()
        self.use_nobody()

    def test_unreadable_file_exits_1(self):
        root = self.copy_site()
        make_world_accessible(root)
        bad = os.path.join(root, "js", "app.js")
        os.chmod(bad, 0)
        snap = source_snapshot(root)
        man = self.path("m.json")
        r = self.run_nobody(["--json", "--manifest", man, root])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.error_lines(), ["precompress: %s: Permission denied" % bad], r)
        self.assertEqual((r.summary()["failed"], r.summary()["exit"]), (1, 1), r)
        e = manifest_by_path(load_manifest(man)[0])[b"js/app.js"]
        self.assertEqual(e.get("error"), "Permission denied")
        self.assertEqual(load_manifest(man)[0]["totals"].get("failed"), 1)
        self.assertFalse(os.path.lexists(bad + ".gz"))
        for other in ("css/app.css", "index.html", "vendor/lib/deep/x.js"):
            self.assertEqual(decode("gz", os.path.join(root, other + ".gz")),
                             open(os.path.join(root, other), "rb").read())
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)

    def test_read_only_directory_exits_1(self):
        root = self.copy_site()
        ro = os.path.join(root, "ro")
        os.makedirs(ro)
        with open(os.path.join(ro, "page.html"), "wb") as f:
            f.write(b"<p>a page in a directory we may not write to</p>\n" * 50)
        make_world_accessible(root)
        os.chmod(ro, 0o755)  # owned by root: nobody cannot create files here
        os.chmod(os.path.join(ro, "page.html"), 0o644)
        snap = source_snapshot(root)
        r = self.run_nobody(["-q", root])
        self.assertEqual(r.rc, 1, r)
        errs = r.error_lines()
        # One line for the directory, found before its file is read
        self.assertEqual(errs, ["precompress: %s: cannot write outputs in this directory (Permission denied): its files are "
                                "not compressed" % ro], r)
        self.assertEqual(os.listdir(ro), ["page.html"])
        self.assertTrue(os.path.isfile(os.path.join(root, "css", "app.css.gz")))
        self.assertTrue(os.path.isfile(os.path.join(root, "css", "app.css.br")))
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)


class ChangedDuringRead(PCTestCase):
    """A big file (streamed, brotli q11 takes seconds) is changed while the tool reads it."""

    def change(self, how):
        root = self.copy_site()
        big = os.path.join(root, "js", "bundle.js")
        with open(big, "wb") as f:
            f.write(words_data(int(4.5 * 1024 * 1024), seed=11))
        args = ["--json", root]
        p = subprocess.Popen([PROGRAM] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertTrue(wait_open(p.pid, big), "the run never opened %s" % big)
        time.sleep(0.05)
        how(big)
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("precompress did not finish")
        r = Result(args, p.returncode, out, err)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.error_lines(), ["precompress: %s: file changed while being read" % big], r)
        self.assertEqual(r.summary()["failed"], 1, r)
        for ext in ("gz", "br"):
            self.assertFalse(os.path.lexists(big + "." + ext), "an output was kept for a changed source")
            self.assertTrue(os.path.isfile(os.path.join(root, "css", "app.css." + ext)))
        self.assertNoTemps(root)

    @full_only("a 4.5 MiB file at brotli 11, changed while it is read")
    def test_file_grows_while_read(self):
        def grow(p):
            with open(p, "ab") as f:
                f.write(b"\n/* appended while precompress was reading */\n")
        self.change(grow)

    def test_file_truncated_while_read(self):
        self.change(lambda p: os.truncate(p, 1000))


class Signals(PCTestCase):
    def interrupt(self, sig, want_rc):
        root = self.path("big")
        os.makedirs(root)
        for i in range(3):
            with open(os.path.join(root, "part%d.txt" % i), "wb") as f:
                f.write(words_data(1536 * 1024, seed=i))
        p = subprocess.Popen([PROGRAM, "-q", "-j", "2", root], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # mid-work: a part is open (its brotli 11 takes seconds)
        self.assertTrue(wait_open(p.pid, root + "/"), "the run never opened a file")
        time.sleep(0.05)
        p.send_signal(sig)
        try:
            out, err = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
            self.fail("precompress did not stop within 60 s of signal %d" % sig)
        self.assertEqual(p.returncode, want_rc, err)
        self.assertNoTemps(root)
        # whatever was written is whole
        for rel in walk_all(root):
            for fmt in ("gz", "br"):
                if rel.endswith(b"." + fmt.encode()):
                    full = os.path.join(os.fsencode(root), rel)
                    self.assertEqual(decode(fmt, full), open(full[: -len(fmt) - 1], "rb").read(), rel)

    def test_sigint_exits_130(self):
        self.interrupt(signal.SIGINT, 130)

    def test_sigterm_exits_143(self):
        self.interrupt(signal.SIGTERM, 143)


if __name__ == "__main__":
    main()
