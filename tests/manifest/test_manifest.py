#!/usr/bin/python3
"""Manifest: valid JSON, sorted, deterministic at any -j, odd names; --json; summary line.

SummaryLine is the one test of the summary line's text (the other tests read their counts
from --json): every part of it, each caused for real, against the line the man page's
SUMMARY LINE describes, made here from the --json summary of a twin run.
"""
import sys

sys.dont_write_bytecode = True
import json
import os
import random
import re
import time

from pctest import (full_only, PCTestCase, REASONS, classify, entry_rel, load_json_strict, load_manifest, main,
                    manifest_by_path, manifest_counts, run, walk_all, words_data)

TEXT = b"some compressible text, repeated to make it worth it. " * 30


class Manifest(PCTestCase):
    def build(self):
        root = self.copy_site()
        broot = os.fsencode(root)
        odd = [b"bad\xff.txt", b"docs/latin1-caf\xe9.css", b'we"ird\\name.txt', b"tab\there.txt",
               b"ctl\x01char.txt", "snow ☃.txt".encode(),
               # byte order differs from a per-directory walk order: b"x-y" < b"x/y", b"Z" < b"a"
               b"x/y.txt", b"x-y.txt", b"Z.txt"]
        os.makedirs(os.path.join(broot, b"x"))
        for n in odd:
            with open(os.path.join(broot, n), "wb") as f:
                f.write(TEXT + n)
        return root, odd

    def test_j1_and_j4_give_identical_manifests(self):
        root, _ = self.build()
        m1, m4, m4b = self.path("m1.json"), self.path("m4.json"), self.path("m4b.json")
        self.run_ok(["-q", "-j", "1", "--manifest", m1, root])
        outs1 = {k: open(os.path.join(os.fsencode(root), k), "rb").read()
                 for k in walk_all(root) if k.endswith((b".gz", b".br"))}
        self.run_ok(["-q", "-j", "4", "--manifest", m4, root])
        self.run_ok(["-q", "--jobs", "4", "--manifest", m4b, root])
        a, b, c = (open(p, "rb").read() for p in (m1, m4, m4b))
        self.assertEqual(a, b, "manifest differs between -j1 and -j4")
        self.assertEqual(b, c, "manifest differs between two -j4 runs")
        outs4 = {k: open(os.path.join(os.fsencode(root), k), "rb").read()
                 for k in walk_all(root) if k.endswith((b".gz", b".br"))}
        self.assertEqual(outs1, outs4, "outputs differ between -j1 and -j4")

    def test_manifest_content(self):
        root, odd = self.build()
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, root])
        m, raw = load_manifest(man)  # strict: UTF-8, no NaN, no duplicate keys, no raw control chars
        self.assertEqual(m["precompress"], 1)
        self.assertEqual(m["options"], {"formats": ["gz", "br"], "gzip_level": 9, "brotli_quality": 11,
                                        "max_ratio": 0.95, "min_size": 1})
        self.assertNotIn("roots", m)
        rels = [entry_rel(e) for e in m["files"]]
        self.assertEqual(rels, sorted(rels), "files not sorted by path bytes")
        self.assertEqual(len(rels), len(set(rels)), "duplicate entries")
        cls = classify(root)
        self.assertEqual(sorted(rels), sorted(cls), "manifest must list every file once, and no output")
        broot = os.fsencode(root)
        for e in m["files"]:
            rel = entry_rel(e)
            st = os.stat(os.path.join(broot, rel))
            self.assertEqual(e["size"], st.st_size, rel)
            self.assertEqual(e["mtime_ns"], st.st_mtime_ns, rel)
            for fmt in ("gz", "br"):
                out = os.path.join(broot, rel + b"." + fmt.encode())
                if "size" in e.get(fmt, {}):
                    self.assertEqual(e[fmt]["size"], os.path.getsize(out), rel)
                else:
                    self.assertFalse(os.path.lexists(out), rel)
        # names that are not UTF-8: lossy "path" plus exact "path_hex"
        byp = manifest_by_path(m)
        e = byp[b"bad\xff.txt"]
        self.assertEqual(e["path_hex"], b"bad\xff.txt".hex())
        self.assertEqual(e["path"], "bad\ufffd.txt")
        e = byp[b"docs/latin1-caf\xe9.css"]
        self.assertEqual(e["path_hex"], b"docs/latin1-caf\xe9.css".hex())
        self.assertEqual(e["path"], "docs/latin1-caf\ufffd.css")
        self.assertTrue(os.path.isfile(os.path.join(broot, b"bad\xff.txt.gz")))
        # valid UTF-8 names are plain strings, escaped as JSON requires
        for n in (b'we"ird\\name.txt', b"tab\there.txt", b"ctl\x01char.txt", "snow ☃.txt".encode(),
                  "docs/café – menü.css".encode()):
            self.assertNotIn("path_hex", byp[n], n)
            self.assertEqual(byp[n]["path"], n.decode())
        self.assertIn(b"tab\\there.txt", raw)
        self.assertIn(b"ctl\\u0001char.txt", raw)
        # one entry per line
        lines = [l.strip().rstrip(b",") for l in raw.split(b"\n") if l.strip().startswith(b'{"path"')]
        self.assertEqual(len(lines), len(m["files"]), "each file entry must be on its own line")
        for l in lines:
            json.loads(l)
        # totals agree with the entries
        c = manifest_counts(m, ["gz", "br"])
        t = m["totals"]
        self.assertEqual(t["files"], c["files"])
        self.assertEqual(t["bytes"], c["bytes"])
        self.assertEqual(t.get("failed", 0), 0)
        for fmt in ("gz", "br"):
            self.assertEqual(t[fmt], {"files": c["formats"][fmt]["files"], "bytes": c["formats"][fmt]["bytes_out"]})

    def test_two_roots(self):
        a = self.copy_site("a")
        b = self.path("b")
        os.makedirs(os.path.join(b, "js"))
        with open(os.path.join(b, "js", "b.js"), "wb") as f:
            f.write(TEXT)
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, b, a])
        m, _ = load_manifest(man)
        self.assertEqual(len(m["roots"]), 2)
        keys = [(e["root"], entry_rel(e)) for e in m["files"]]
        self.assertEqual(keys, sorted(keys))
        ib = [i for i, r in enumerate(m["roots"]) if r.rstrip("/").endswith("/b") or r.rstrip("/") == "b"]
        self.assertEqual(len(ib), 1, m["roots"])
        self.assertEqual([entry_rel(e) for e in m["files"] if e["root"] == ib[0]], [b"js/b.js"])
        self.assertTrue(os.path.isfile(os.path.join(b, "js", "b.js.gz")))
        self.assertTrue(os.path.isfile(os.path.join(a, "css", "app.css.gz")))

    def test_file_path_records_base_name(self):
        root = self.copy_site()
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, os.path.join(root, "css", "app.css")])
        m, _ = load_manifest(man)
        self.assertEqual([e["path"] for e in m["files"]], ["app.css"])
        self.assertIn("size", m["files"][0]["gz"])

    def test_manifest_inside_the_tree_is_not_an_input(self):
        root = self.copy_site()
        man = os.path.join(root, "manifest.json")
        self.run_ok(["-q", "--manifest", man, root])
        self.run_ok(["-q", "--manifest", man, root])
        m, _ = load_manifest(man)
        self.assertNotIn("manifest.json", [e["path"] for e in m["files"]])
        self.assertFalse(os.path.lexists(man + ".gz"))
        self.assertFalse(os.path.lexists(man + ".br"))
        self.assertEqual([n for n in os.listdir(root) if n.startswith(".manifest")], [])


class Summary(PCTestCase):
    def test_json_summary_matches_manifest(self):
        root = self.copy_site()
        man = self.path("m.json")
        t0 = time.monotonic()
        r = run(["--json", "--manifest", man, root])
        self.took = time.monotonic() - t0
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err, "", "--json replaces the summary line: %r" % r)
        j = load_json_strict(r.out)
        self.assertIsInstance(j, dict)
        m, _ = load_manifest(man)
        c = manifest_counts(m, ["gz", "br"])
        for k in ("files", "bytes", "compressed", "failed"):
            self.assertEqual(j[k], c[k], k)
        self.assertEqual(j["skipped"], c["skipped"])
        self.assertEqual(sorted(j["formats"]), ["br", "gz"])
        for fmt in ("gz", "br"):
            self.assertEqual(j["formats"][fmt], c["formats"][fmt], fmt)
        self.assertIs(j["dry_run"], False)
        self.assertEqual(j["exit"], 0)
        self.assertEqual(j["changes"], c["formats"]["gz"]["files"] + c["formats"]["br"]["files"])
        self.assertEqual(j["removed"], 0)
        # The run's own times: within the time the test saw it take, and its CPU within what
        # its jobs could use in that time.
        self.assertIsInstance(j["wall_s"], float)
        self.assertIsInstance(j["cpu_s"], float)
        self.assertGreater(j["wall_s"], 0)
        self.assertLessEqual(j["wall_s"], self.took + 0.01, j)
        self.assertLessEqual(j["cpu_s"], self.took * (os.cpu_count() or 1) + 0.05, j)

    def test_summary_line_unless_quiet(self):
        root = self.copy_site()
        r = run([root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.out, "", "nothing on stdout without -v/--json")
        self.assertEqual(len(r.err_lines), 1, "exactly one summary line expected: %r" % r)
        self.assertTrue(r.err_lines[0].startswith("precompress: "), r)  # its text: SummaryLine
        r = run(["-q", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err, "", "-q must silence the summary")
        self.assertEqual(r.out, "")

    def test_progress(self):
        root = self.path("t")
        os.makedirs(root)
        for i in range(2):
            with open(os.path.join(root, "part%d.txt" % i), "wb") as f:
                f.write(words_data(1024 * 1024, seed=i))
        # Brotli 9: long enough for frames (one each 100 ms), not the bytes' point.
        fast = ["--brotli-quality", "9"]
        bar = run(fast + ["--progress", "always", root])
        self.assertEqual(bar.rc, 0, bar)
        self.assertIn("\r", bar.err, "--progress always drew no bar")
        self.assertTrue(bar.err.endswith("\n"))
        for mode in ("never", "auto"):  # auto: stderr is a pipe here, so no bar
            r = run(fast + ["--progress", mode, root])
            self.assertEqual(r.rc, 0, r)
            self.assertNotIn("\r", r.err, "--progress %s drew a bar on a pipe" % mode)
            self.assertEqual(len(r.err_lines), 1, r)
        # the bar cleared, the summary line is left: the same as without a bar (but its time)
        self.assertEqual(len(bar.err_lines), 1, bar)
        self.assertEqual(bar.err_lines[0].rsplit("; ", 1)[0], r.err_lines[0].rsplit("; ", 1)[0], bar)
        r = run(fast + ["-q", "--progress", "auto", root])
        self.assertEqual(r.err, "")

    @full_only("more than a second of brotli 11, one file at a time")
    def test_progress_eta_waits(self):
        """No time left is shown before a twentieth of the bytes is done (and a second has
        passed): the first files' rate says little of the rest's. 24 files one at a time, so the
        bar moves in steps of about 4%."""
        root = self.path("t")
        os.makedirs(root)
        for i in range(24):
            with open(os.path.join(root, "f%02d.txt" % i), "wb") as f:
                f.write(words_data(96 * 1024, seed=i))
        bar = run(["--progress", "always", "-j", "1", "--no-gzip", root])
        self.assertEqual(bar.rc, 0, bar)
        frames = [f for f in re.split(r"[\r\n]", bar.err) if "%" in f]
        self.assertGreater(len(frames), 5, bar.err[-500:])
        etas = [f for f in frames if re.search(r"ETA \d+:\d\d", f)]
        self.assertTrue(etas, "no ETA shown at all: %r" % frames[-3:])
        for f in frames:
            pct = int(re.search(r"(\d+)%", f).group(1))
            if re.search(r"ETA \d+:\d\d", f):
                self.assertGreaterEqual(pct, 5, "an ETA before a twentieth was done: %r" % f)



UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def human(n):
    """A size as the summary line shows it (cli_human_bytes): bytes under 1 KiB, else one
    decimal, moving up a unit when that would read 1024.0."""
    if n < 1024:
        return "%d B" % n
    v, u = n / 1024.0, 0
    while v >= 1023.95 and u + 1 < len(UNITS):
        v, u = v / 1024.0, u + 1
    return "%.1f %s" % (v, UNITS[u])


def summary_line(j):
    """The summary line the man page (SUMMARY LINE) describes for the --json summary j, without
    its last part (the time)."""
    reasons = [(n, i, r) for i, (r, n) in enumerate(j["skipped"].items()) if n]
    reasons = ", ".join("%d %s" % (n, r) for n, i, r in sorted(reasons, key=lambda t: (-t[0], t[1])))
    line = "precompress: %s%d file%s, %d compressed" % ("dry run: " if j["dry_run"] else "", j["files"],
                                                        "" if j["files"] == 1 else "s", j["compressed"])
    how = (["%d copied from identical files" % j["deduped"]] if j["deduped"] else []) + \
          (["%d from the cache" % j["cached"]] if j["cached"] else [])
    if how:
        line += " (%s)" % ", ".join(how)
    line += ", "
    if j["unchanged"]:
        line += "%d unchanged, " % j["unchanged"]
    line += "%d skipped%s, %d failed" % (sum(j["skipped"].values()), " (%s)" % reasons if reasons else "",
                                         j["failed"])
    if j["errors"]:
        line += ", %d other error%s" % (j["errors"], "" if j["errors"] == 1 else "s")
    if j["removed"] and not j["dry_run"]:
        line += ", %d removed" % j["removed"]
    if j["dry_run"]:
        line += ", %d change%s" % (j["changes"], "" if j["changes"] == 1 else "s")
    return line + "; " + ", ".join("%s %s -> %s" % (f, human(v["bytes_in"]), human(v["bytes_out"]))
                                   for f, v in j["formats"].items())


class SummaryLine(PCTestCase):
    """The one test of the summary line's text: for each case, two identical trees go through
    the same steps; the last run is made without --json on one (its line) and with --json on
    the other (the figures the line must show)."""

    def twins(self, prepare, args, rc=0):
        res = {}
        for twin in ("line", "json"):
            root = self.copy_site(twin)
            aux = self.path(twin + "-aux")
            os.makedirs(aux)
            prepare(root, aux)
            res[twin] = run((["--json"] if twin == "json" else []) + [a.format(aux=aux) for a in args] + [root])
            self.assertEqual(res[twin].rc, rc, res[twin])
        line, j = res["line"], res["json"].summary()
        if "-n" not in args:  # a dry run lists on stdout
            self.assertEqual(line.out, "", line)
        self.assertEqual(len(line.err_lines), len(res["json"].err_lines) + 1, "the errors, then one line: %r" % line)
        m = re.match(r"^(.*); (\d+\.\d\d) s$", line.err_lines[-1])
        self.assertIsNotNone(m, "the summary line does not end in '; N.NN s': %r" % line)
        self.assertEqual(m.group(1), summary_line(j), "the summary line (the figures of --json: %s)" % j)
        return j

    def test_fresh_tree(self):
        j = self.twins(lambda root, aux: None, [])
        self.assertGreater(sum(1 for n in j["skipped"].values() if n), 1, j)  # reasons, largest first

    def test_one_file_one_change(self):
        def prepare(root, aux):
            self.run_ok(["-q", root])
            for d, dirs, names in os.walk(root):  # all but index.html
                for n in names:
                    if n != "index.html" and not n.startswith("index.html."):
                        os.unlink(os.path.join(d, n))
            os.unlink(os.path.join(root, "index.html.br"))
        j = self.twins(prepare, ["-n"], rc=0)
        self.assertEqual((j["files"], j["changes"]), (1, 1), j)

    def test_copies_cache_unchanged_and_removed(self):
        def prepare(root, aux):
            self.run_ok(["-q", "--cache-dir", aux + "/cache", "--manifest", aux + "/m.json", root])
            p = os.path.join(root, "js", "app.js")  # touched: its outputs come from the cache
            st = os.stat(p)
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
            os.makedirs(os.path.join(root, "new"))  # two new identical files: one copied
            for name in ("a.txt", "b.txt"):
                with open(os.path.join(root, "new", name), "wb") as f:
                    f.write(words_data(5000, seed=7))
            with open(os.path.join(root, "css", "app.css"), "wb") as f:  # incompressible: outputs removed
                f.write(random.Random(3).randbytes(3000))
        j = self.twins(prepare, ["--cache-dir", "{aux}/cache", "--manifest", "{aux}/m.json"])
        self.assertEqual((j["deduped"], j["cached"], j["removed"]), (1, 1, 2), j)
        self.assertGreater(j["unchanged"], 5, j)

    def test_failed_and_other_error(self):
        def prepare(root, aux):
            os.makedirs(os.path.join(root, "css", "app.css.gz"))  # the file fails
            with open(os.path.join(aux, "m.json"), "w") as f:  # cannot be read: an error, not a file's
                f.write('{"precompress": 2, "future": true}\n')
        j = self.twins(prepare, ["--manifest", "{aux}/m.json"], rc=1)
        self.assertEqual((j["failed"], j["errors"]), (1, 1), j)

    def test_dry_run_with_removals_and_an_error(self):
        def prepare(root, aux):
            self.run_ok(["-q", root])
            with open(os.path.join(root, "css", "app.css"), "wb") as f:
                f.write(random.Random(4).randbytes(3000))
            with open(os.path.join(root, "js", "app.js"), "ab") as f:
                f.write(b"// one more line\n")
            with open(os.path.join(aux, "package.json"), "w") as f:  # not a manifest: an error
                f.write('{"name": "site"}\n')
        j = self.twins(prepare, ["-n", "--manifest", "{aux}/package.json"], rc=1)
        self.assertEqual((j["dry_run"], j["errors"], j["removed"]), (True, 1, 2), j)
        self.assertEqual(j["changes"], 2 + 2, j)  # app.css's two removals, app.js's two outputs

if __name__ == "__main__":
    main()
