#!/usr/bin/python3
"""--dictionary-from (RFC 9842 deltas, docs/deltas.md): each file paired with
its predecessor in an earlier release (same path, or same name once a content
hash is set aside), FILE.<id>.dcz (and .dcb where the build has brotli 1.1)
written beside it; every .dcz decoded with the real zstd given the dictionary,
its header checked (magic, the dictionary's SHA-256); the keep rule against the
best plain output; identical predecessors get none; stale deltas removed;
bad dictionaries said and the rest of the run goes on."""
import sys

sys.dont_write_bytecode = True
import hashlib
import json
import os
import random
import shutil
import subprocess

from pctest import deltas_of, fast_levels, hashed, PCTestCase, main, make_world_accessible, read, run, store_rows, write

# Bytes are not this module's point (pctest.fast_levels).
fast_levels(zstd_level=3)

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)

DCZ_MAGIC = bytes([0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00])
DCB_MAGIC = bytes([0xFF, 0x44, 0x43, 0x42])


def version_line():
    return subprocess.run([os.environ["PRECOMPRESS"], "-V"], capture_output=True, text=True).stdout


def program(seed, n=3000, edits=15):
    """A script of n functions; release `seed` changes `edits` of them."""
    r = random.Random(7)
    lines = ["function f%d(a, b) { return a * %d + b + '%s'; }" % (i, r.randint(1, 99),
             "".join(r.choice("abcdefghijklmnop") for _ in range(r.randint(4, 12)))) for i in range(n)]
    rr = random.Random(seed)
    for _ in range(edits):
        k = rr.randrange(n)
        lines[k] = "function f%d(a, b) { return a - %d; }" % (k, rr.randint(100, 999))
    return ("\n".join(lines) + "\n").encode()


def make_release(root, seed):
    """A release as a build tool lays it out: Django- and webpack-hashed names,
    a Vite-style name, an unhashed file and a file the same in every release."""
    app = program(seed)
    vendor = program(seed + 100, n=2000, edits=3)
    vite = program(seed + 200, n=1500, edits=4)
    files = {
        "js/" + hashed("app.js", app): app,
        "js/" + hashed("vendor.js", vendor, 20): vendor,
        "assets/index-%sx.js" % hashlib.sha256(vite).hexdigest()[:7].upper(): vite,
        "css/site.css": program(seed + 300, n=800, edits=2),
        "js/same.js": b"console.log('the same in every release');\n" * 100,
    }
    for rel, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
        write(os.path.join(root, rel), data)
    return files


class Deltas(PCTestCase):
    def releases(self):
        r1, r2 = self.path("r1"), self.path("r2")
        f1, f2 = make_release(r1, 1), make_release(r2, 2)
        return r1, f1, r2, f2

    def check_dcz(self, path, dict_path, src_path):
        body = read(path)
        dict_bytes = read(dict_path)
        self.assertEqual(body[:8], DCZ_MAGIC, path)
        self.assertEqual(body[8:40], hashlib.sha256(dict_bytes).digest(), path)
        # The name carries the first 16 hex digits of that hash.
        self.assertEqual(path.rsplit(".", 2)[1], hashlib.sha256(dict_bytes).hexdigest()[:16])
        frame = self.path("frame.zst")
        write(frame, body[40:])
        out = subprocess.run(["zstd", "-q", "-d", "-c", "--long=31", "-D", dict_path, frame],
                             capture_output=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, read(src_path), path)

    def test_pairs_decode_and_keep_rule(self):
        r1, f1, r2, f2 = self.releases()
        man = self.path("m.json")
        r = run(["--zstd", "--json-lines", "--dictionary-from", r1, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        m = json.loads(read(man))
        self.assertEqual(m["dictionaries"], [r1])
        by = {e["path"]: e for e in m["files"]}
        pred = {  # each file of release 2 and its predecessor in release 1
            next(k for k in f2 if k.startswith("js/app.")): next(k for k in f1 if k.startswith("js/app.")),
            next(k for k in f2 if k.startswith("js/vendor.")): next(k for k in f1 if k.startswith("js/vendor.")),
            next(k for k in f2 if k.startswith("assets/")): next(k for k in f1 if k.startswith("assets/")),
            "css/site.css": "css/site.css",
            "js/same.js": "js/same.js",
        }
        for rel, old in pred.items():
            d = [x for x in by[rel]["deltas"] if x["format"] == "dcz"]
            self.assertEqual(len(d), 1, (rel, by[rel]))
            self.assertEqual(d[0]["dictionary"], old, rel)
            self.assertEqual(d[0]["from"], 0)
            self.assertEqual(d[0]["sha256"], hashlib.sha256(f1[old]).hexdigest())
        self.assertEqual(by["js/same.js"]["deltas"][0]["skipped"], "identical")
        made = [p for p in deltas_of(r2) if p.endswith(".dcz")]  # and .dcb where built
        kept = 0
        for rel, old in pred.items():
            d = [x for x in by[rel]["deltas"] if x["format"] == "dcz"][0]
            name = os.path.join(r2, rel) + ".%s.dcz" % d["sha256"][:16]
            if "size" in d:
                kept += 1
                self.assertIn(name, made)
                self.assertEqual(os.path.getsize(name), d["size"])
                self.check_dcz(name, os.path.join(r1, old), os.path.join(r2, rel))
                # The keep rule: at most 0.95 of the best plain output.
                best = min(by[rel][f]["size"] for f in ("gz", "br", "zst") if "size" in by[rel].get(f, {}))
                self.assertLessEqual(d["size"] * 100, best * 95, rel)
                self.assertLess(d["size"] * 20, best, "a delta of a 15-line edit is tiny: %s" % rel)
            else:
                self.assertNotIn(name, made)
        self.assertEqual(kept, 4, by)  # app, vendor, the Vite name, site.css
        self.assertEqual(len(made), kept)
        # The source's mode, and its mtime a whole 2 s earlier (the first DIR's .dcz: its
        # ETag on a server is its own, see test_mtimes_apart).
        for p in made:
            src = p.rsplit(".", 2)[0]
            self.assertEqual(os.stat(p).st_mtime_ns, os.stat(src).st_mtime_ns - 2 * 10**9)
            self.assertEqual(os.stat(p).st_mode, os.stat(src).st_mode)
        # --json-lines says what the manifest says.
        lines = [json.loads(l) for l in r.out.splitlines() if l.startswith("{")]
        summary = [l for l in lines if l.get("type") == "summary"][0]
        self.assertEqual(summary["deltas"]["dcz"]["files"], kept)
        self.assertEqual(summary["deltas"]["dcz"]["bytes_out"], sum(os.path.getsize(p) for p in made))

    def test_dcb_where_built(self):
        r1, f1, r2, f2 = self.releases()
        have = " dcb" in version_line()
        r = run(["--deltas", "dcb", "--dictionary-from", r1, r2])
        if not have:
            self.assertEqual(r.rc, 2, r)
            self.assertIn("brotli 1.1", r.err)
            return
        self.assertEqual(r.rc, 0, r)
        made = deltas_of(r2)
        self.assertEqual(len(made), 4, made)
        self.assertTrue(all(p.endswith(".dcb") for p in made), made)
        # Decoded by libbrotlidec 1.1 given the dictionary (dcb_decode checks
        # the magic and the dictionary's SHA-256 first).
        dec = os.environ.get("PC_DCB_DECODE")
        for p in made:
            src = p.rsplit(".", 2)[0]
            rel = os.path.relpath(src, r2)
            key = rel.split("/")[0] + "/" + os.path.basename(rel).split(".")[0].split("-")[0]
            old = [k for k in f1 if (k.split("/")[0] + "/" + os.path.basename(k).split(".")[0].split("-")[0]) == key]
            self.assertEqual(len(old), 1, (p, old))
            self.assertEqual(read(p)[:4], DCB_MAGIC)
            self.assertEqual(read(p)[4:36], hashlib.sha256(f1[old[0]]).digest())
            out = subprocess.run([dec, os.path.join(r1, old[0]), p], capture_output=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertEqual(out.stdout, read(src), p)

    def test_stale_deltas_go(self):
        r1, f1, r2, f2 = self.releases()
        self.assertEqual(run(["--dictionary-from", r1, r2]).rc, 0)
        before = deltas_of(r2)
        self.assertTrue(before)
        # The pairing goes: against a release with none of these files.
        empty = self.path("r0")
        os.makedirs(empty)
        r = run(["-v", "--dictionary-from", empty, r2])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(deltas_of(r2), [])
        self.assertIn("removed", r.out)
        # A file changed and compressed again without --dictionary-from loses
        # its deltas too: they would decode to its old bytes.
        self.assertEqual(run(["--dictionary-from", r1, r2]).rc, 0)
        app = next(p for p in deltas_of(r2) if "/app." in p)
        src = app.rsplit(".", 2)[0]
        with open(src, "ab") as f:
            f.write(b"// changed\n")
        self.assertEqual(run([r2]).rc, 0)
        self.assertFalse(os.path.exists(app))
        # A delta output is never compressed itself.
        self.assertEqual(run(["--dictionary-from", r1, r2]).rc, 0)
        for p in deltas_of(r2):
            self.assertFalse(os.path.exists(p + ".gz"), p)

    def test_mtimes_apart(self):
        """Each delta of a file has an mtime of its own: the file's less 1 + 2 * DIR index +
        (0 for .dcb, 1 for .dcz) seconds, so a server's ETag (mtime and size) tells two deltas
        of one size apart; the incremental check and --check take them, also after a copy
        that keeps times to the microsecond only."""
        r1, f1, r2, f2 = self.releases()
        r0 = self.path("r0")
        make_release(r0, 0)
        man = self.path("m.json")
        have_dcb = " dcb" in version_line()
        r = run(["--dictionary-from", r1, "--dictionary-from", r0, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        m = json.loads(read(man))
        seen = 0
        for e in m["files"]:
            src = os.stat(os.path.join(r2, e["path"])).st_mtime_ns
            stamps = set()
            for d in e.get("deltas", []):
                if "size" not in d:
                    continue
                name = os.path.join(r2, e["path"]) + ".%s.%s" % (d["sha256"][:16], d["format"])
                slot = 1 + 2 * d["from"] + (d["format"] == "dcz")
                self.assertEqual(os.stat(name).st_mtime_ns, src - slot * 10**9, name)
                stamps.add(os.stat(name).st_mtime_ns)
                seen += 1
            self.assertEqual(len(stamps), len([d for d in e.get("deltas", []) if "size" in d]))
        self.assertGreaterEqual(seen, 8 if have_dcb else 4)
        r = run(["-v", "--dictionary-from", r1, "--dictionary-from", r0, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.out.count("unchanged"), 5, r.out)
        r = run(["--check", "--dictionary-from", r1, "--dictionary-from", r0, r2])
        self.assertEqual((r.rc, r.out), (0, ""), r)
        # A copy that keeps microseconds (cp -p on a file system of microseconds, cpio -m):
        # the times of the files and their outputs cut alike.
        copy = self.path("copy")
        shutil.copytree(r2, copy)
        for d, _, names in os.walk(copy):
            for n in names:
                p = os.path.join(d, n)
                ns = os.stat(os.path.join(r2, os.path.relpath(p, copy))).st_mtime_ns
                os.utime(p, ns=(ns, ns - ns % 1000))
        r = run(["--check", "--dictionary-from", r1, "--dictionary-from", r0, copy])
        self.assertEqual((r.rc, r.out), (0, ""), r)
        r = run(["--check", copy])
        self.assertEqual((r.rc, r.out), (0, ""), r)

    def test_plain_run_leaves_valid_deltas(self):
        """A run asked for no deltas (no --dictionary-from), or --check, over a tree whose
        deltas another run wrote (the Django storage's): deltas that fit their file by mtime
        are left alone and listed as nothing to do; one whose file changed since goes."""
        r1, f1, r2, f2 = self.releases()
        self.assertEqual(run(["--dictionary-from", r1, r2]).rc, 0)
        made = deltas_of(r2)
        self.assertTrue(made)
        r = run(["--check", r2])
        self.assertEqual((r.rc, r.out), (0, ""), r)
        r = run(["-v", r2])
        self.assertEqual(r.rc, 0, r)
        self.assertNotIn("removed", r.out)
        self.assertEqual(deltas_of(r2), made)
        # With a manifest, twice: the second run leaves every file alone.
        man = self.path("m.json")
        self.assertEqual(run(["--manifest", man, r2]).rc, 0)
        r = run(["-v", "--manifest", man, r2])
        self.assertEqual(r.out.count("unchanged"), 5, r.out)
        self.assertEqual(deltas_of(r2), made)
        # The file changed (its mtime moved): its deltas decode to its old bytes.
        # Every format's delta of it goes (dcz, and dcb where brotli has dictionaries).
        apps = [p for p in made if "/app." in p]
        self.assertTrue(apps)
        src = apps[0].rsplit(".", 2)[0]
        with open(src, "ab") as f:
            f.write(b"// changed\n")
        r = run(["--check", r2])
        self.assertEqual(r.rc, 1, r)
        for app in apps:
            self.assertIn("unwanted %s" % app, r.out.splitlines())
        self.assertEqual(run([r2]).rc, 0)
        self.assertEqual(deltas_of(r2), [p for p in made if p not in apps])

    def test_incremental(self):
        r1, f1, r2, f2 = self.releases()
        # A dictionary whose SHA-256 has a zero byte: read back from the
        # manifest like any other (a hex decoder made for names refuses 00).
        app1 = next(k for k in f1 if k.startswith("js/app."))
        data, n = f1[app1], 0
        while b"\0" not in hashlib.sha256(data).digest():
            n += 1
            data = f1[app1] + b"// %d\n" % n
        write(os.path.join(r1, app1), data)
        man = self.path("m.json")
        args = ["--json", "--dictionary-from", r1, "--manifest", man, r2]
        r = run(args)
        self.assertEqual(r.rc, 0, r)
        first = json.loads(read(man))
        made = {p: os.stat(p).st_mtime_ns for p in deltas_of(r2)}
        # Again: every file unchanged, its deltas listed as they were.
        r = run(args)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(json.loads(r.out)["unchanged"], 5, r.out)
        self.assertEqual(json.loads(read(man))["files"], first["files"])
        # A dictionary changed (its mtime): that file only is compressed again.
        vendor1 = os.path.join(r1, next(k for k in f1 if k.startswith("js/vendor.")))
        os.utime(vendor1, ns=(1, 2))
        r = run(args)
        self.assertEqual((json.loads(r.out)["compressed"], json.loads(r.out)["unchanged"]), (1, 4), r.out)
        # A delta output gone: its file is compressed again, the delta back.
        gone = next(p for p in made if "/app." in p)
        os.unlink(gone)
        r = run(args)
        self.assertEqual((json.loads(r.out)["compressed"], json.loads(r.out)["unchanged"]), (1, 4), r.out)
        self.assertTrue(os.path.exists(gone))
        # Another delta output beside a file (a stale one): compressed again,
        # the stray removed.
        stray = os.path.join(r2, "css/site.css.0123456789abcdef.dcz")
        write(stray, b"stale")
        r = run(args)
        self.assertEqual(json.loads(r.out)["compressed"], 1, r.out)
        self.assertFalse(os.path.exists(stray))
        # A directory with a delta's name is not ours: left there, no error.
        odd = os.path.join(r2, "css/site.css.fedcba9876543210.dcz")
        os.makedirs(odd)
        r = run(args)
        self.assertEqual(r.rc, 0, r)
        self.assertTrue(os.path.isdir(odd))
        os.rmdir(odd)
        # Without --dictionary-from the records do not hold (other
        # "dictionaries"): every file again; the deltas, which still fit
        # their files, are left as they are.
        kept = deltas_of(r2)
        r = run(["--json", "--manifest", man, r2])
        self.assertEqual(json.loads(r.out)["unchanged"], 0, r.out)
        self.assertEqual(deltas_of(r2), kept)
        self.assertNotIn("dictionaries", json.loads(read(man)))

    def test_shards_merge(self):
        r1, f1, r2, f2 = self.releases()
        whole = self.path("whole.json")
        one = self.path("one")
        shutil.copytree(r2, one)
        self.assertEqual(run(["--dictionary-from", r1, "--manifest", whole, one]).rc, 0)
        parts = []
        for k in (1, 2):
            m = self.path("m%d.json" % k)
            r = run(["--shard", "%d/2" % k, "--dictionary-from", r1, "--manifest", m, r2])
            self.assertEqual(r.rc, 0, r)
            parts.append(m)
        merged = self.path("merged.json")
        r = run(["merge-manifests", merged] + parts)
        self.assertEqual(r.rc, 0, r)
        a, b = json.loads(read(whole)), json.loads(read(merged))
        self.assertEqual(b["dictionaries"], [r1])
        for e in a["files"] + b["files"]:  # the copy's mtimes are its own
            e.pop("mtime_ns")
        self.assertEqual(a["files"], b["files"])  # every delta listed, as one run lists it
        self.assertTrue(any("size" in x for e in b["files"] for x in e.get("deltas", [])))

    def test_cache(self):
        r1, f1, r2, f2 = self.releases()
        cache = self.path("cache")
        trees = []
        for k in range(3):
            t = self.path("t%d" % k)
            shutil.copytree(r2, t)
            trees.append(t)
        # Plain outputs first: the rows of the plain formats.
        self.assertEqual(run(["--cache-dir", cache, trees[0]]).rc, 0)
        plain = len(store_rows(cache))
        # With deltas: one row per delta made (kept: its bytes; not kept: a
        # rejection), keyed by the delta's format byte (16 + format).
        r = run(["--cache-dir", cache, "--dictionary-from", r1, trees[1]])
        self.assertEqual(r.rc, 0, r)
        rows = store_rows(cache)
        mine = [x for x in rows if x["key"][24] >= 16]
        self.assertEqual(len(rows), plain + len(mine))
        made = {os.path.relpath(p, trees[1]): read(p) for p in deltas_of(trees[1])}
        kept = [x for x in mine if x["data"] is not None and len(x["data"]) > 0]
        self.assertEqual(sorted(bytes(x["data"]) for x in kept), sorted(made.values()))
        # Again on a fresh tree: every delta from the cache (no new row),
        # byte for byte what was made.
        r = run(["--cache-dir", cache, "--dictionary-from", r1, trees[2]])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(len(store_rows(cache)), len(rows))
        self.assertEqual({os.path.relpath(p, trees[2]): read(p) for p in deltas_of(trees[2])}, made)
        for rel, body in made.items():
            if rel.endswith(".dcz"):
                src = os.path.join(r2, rel.rsplit(".", 2)[0])
                old = [k for k in f1 if k.split("/")[0] == rel.split("/")[0] and
                       os.path.basename(k).split(".")[0].split("-")[0] ==
                       os.path.basename(rel).split(".")[0].split("-")[0]]
                self.check_dcz(os.path.join(trees[2], rel), os.path.join(r1, old[0]), src)

    def test_same_content_twice(self):
        """Django keeps app.js beside app.<hash>.js, in each release: the two
        pairs have one content and one dictionary, and one delta (made once,
        deltashare.c) serves both names."""
        r1, r2 = self.path("r1"), self.path("r2")
        old, new = program(1), program(2)
        for root, data in ((r1, old), (r2, new)):
            os.makedirs(root)
            write(os.path.join(root, "app.js"), data)
            write(os.path.join(root, hashed("app.js", data)), data)
        r = run(["--dictionary-from", r1, r2])
        self.assertEqual(r.rc, 0, r)
        made = [p for p in deltas_of(r2) if p.endswith(".dcz")]
        self.assertEqual(len(made), 2, made)
        self.assertEqual(read(made[0]), read(made[1]))
        for p in made:
            self.check_dcz(p, os.path.join(r1, "app.js"), p.rsplit(".", 2)[0])
        # The second waits for the first (dedupe) and runs again: a stale
        # delta beside it goes, and nothing of its first pass is written
        # (an empty FILE.0000000000000000.dcb once was).
        for _ in range(5):
            stray = os.path.join(r2, "app.js.72c3fb59fa7c02db.dcz")
            write(stray, b"x")
            r = run(["-j2", "--formats", "gz", "--dictionary-from", r1, r2])
            self.assertEqual(r.rc, 0, r)
            self.assertFalse(os.path.exists(stray))
            self.assertEqual(sorted(p for p in deltas_of(r2) if p.endswith(".dcz")), sorted(made))
            self.assertFalse([p for p in os.listdir(r2) if "0000000000000000" in p])

    def test_check_and_dry_run(self):
        r1, f1, r2, f2 = self.releases()
        self.assertEqual(run(["--dictionary-from", r1, r2]).rc, 0)
        made = deltas_of(r2)
        # All current: --check says nothing and exits 0.
        r = run(["--check", "--dictionary-from", r1, r2])
        self.assertEqual((r.rc, r.out), (0, ""), r)
        # One missing: --check names it and exits 1; -n says it would write it.
        os.unlink(made[0])
        r = run(["--check", "--dictionary-from", r1, r2])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.out, "missing %s\n" % made[0])
        r = run(["-n", "--dictionary-from", r1, r2])
        self.assertIn("would write %s\n" % made[0], r.out)
        self.assertFalse(os.path.exists(made[0]))
        # The pairing gone: -n says which it would remove, and removes none.
        empty = self.path("r0")
        os.makedirs(empty)
        r = run(["-n", "--dictionary-from", empty, r2])
        for p in made[1:]:
            self.assertIn("would remove %s\n" % p, r.out)
            self.assertTrue(os.path.exists(p))

    def test_bad_dictionaries(self):
        r1, f1, r2, f2 = self.releases()
        # A missing directory (a project's first build: no earlier release yet): a one-line
        # warning, the run goes on without deltas against it, exit 0; -q says nothing.
        r = run(["--dictionary-from", self.path("nowhere"), "--dictionary-from", r1, r2])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual([l for l in r.err.splitlines() if "nowhere" in l],
                         ["precompress: %s: warning: no such directory (no earlier release yet?): "
                          "no deltas against it" % self.path("nowhere")], r.err)
        self.assertTrue(deltas_of(r2))
        self.assertTrue(os.path.exists(os.path.join(r2, "css/site.css.gz")))
        first = self.path("first")
        make_release(first, 3)
        r = run(["-q", "--dictionary-from", self.path("nowhere"), first])
        self.assertEqual((r.rc, r.out, r.err), (0, "", ""), r)
        self.assertEqual(deltas_of(first), [])
        # One that is there but cannot be opened (a file; one unreadable: see
        # test_unreadable_dictionary): an error before any work, exit 2, nothing written.
        fresh = self.path("fresh")
        make_release(fresh, 4)
        r = run(["--dictionary-from", os.path.join(r1, "css/site.css"), fresh])
        self.assertEqual(r.rc, 2, r)
        self.assertEqual(r.err, "precompress: %s: Not a directory\n" % os.path.join(r1, "css/site.css"))
        self.assertFalse(os.path.exists(os.path.join(fresh, "css/site.css.gz")))
        # A predecessor that is a symlink (here out of the release) is never read.
        secret = self.path("secret.css")
        write(secret, read(os.path.join(r2, "css/site.css")))
        os.unlink(os.path.join(r1, "css/site.css"))
        os.symlink(secret, os.path.join(r1, "css/site.css"))
        man = self.path("m.json")
        r = run(["--dictionary-from", r1, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        e = [x for x in json.loads(read(man))["files"] if x["path"] == "css/site.css"][0]
        self.assertEqual(e["deltas"][0]["skipped"], "link")
        self.assertNotIn("sha256", e["deltas"][0])
        # Usage errors: more than 8 directories, a bad template, an unknown
        # format. The first two only the library knows; the parse asks it, so
        # each is one line on stderr, exit 2, before anything is read.
        for argv, says in (
            (sum([["--dictionary-from", r1]] * 9, []), "at most 8 --dictionary-from"),
            (["--dictionary-from", r1, "--dictionary-name", "[hash].[ext]"],
             "--dictionary-name: a template is"),
            (["--dictionary-from", r1, "--deltas", "dcx"], "--deltas"),
        ):
            r = run(argv + ["-v", r2])
            self.assertEqual(r.rc, 2, r)
            self.assertEqual(r.out, "", r)
            self.assertEqual(r.err.count("\n"), 1, r)
            self.assertIn(says, r.err)
            self.assertIn("(see 'precompress --help')", r.err)

    def test_odd_predecessors(self):
        r1, f1, r2, f2 = self.releases()
        # A file whose predecessor is itself (the tree given as its own
        # earlier release): identical, no delta, nothing written.
        man = self.path("self.json")
        r = run(["--dictionary-from", r2, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(deltas_of(r2), [])
        for e in json.loads(read(man))["files"]:
            self.assertTrue(all(x["skipped"] == "identical" for x in e["deltas"]), e)
        # A binary predecessor: made, and decoded when kept (the keep rule
        # judges it as any other).
        site1 = os.path.join(r1, "css/site.css")
        write(site1, random.Random(5).randbytes(30000))
        # A dictionary over .dcb's 16 MiB window: no .dcb ("window"); .dcz's
        # window takes it. (The file grows too: a dictionary over 8 times its
        # file and 64 KiB is not used at all, "large".)
        vendor1 = os.path.join(r1, next(k for k in f1 if k.startswith("js/vendor.")))
        write(vendor1, f1[os.path.relpath(vendor1, r1)] + b"/*" + b"x" * (17 << 20) + b"*/")
        vendor2 = os.path.join(r2, next(k for k in f2 if k.startswith("js/vendor.")))
        write(vendor2, f2[os.path.relpath(vendor2, r2)] + b"/*" + b"y" * (5 << 19) + b"*/")
        man = self.path("odd.json")
        r = run(["--zstd-level", "3", "--brotli-quality", "5", "--dictionary-from", r1,
                 "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        by = {e["path"]: e for e in json.loads(read(man))["files"]}
        site = by["css/site.css"]["deltas"]
        for x in site:
            if "size" in x and x["format"] == "dcz":
                self.check_dcz(os.path.join(r2, "css/site.css") + ".%s.dcz" % x["sha256"][:16],
                               site1, os.path.join(r2, "css/site.css"))
        vendor = {x["format"]: x for x in by[next(k for k in f2 if k.startswith("js/vendor."))]["deltas"]}
        self.assertIn("size", vendor["dcz"])
        if "dcb" in vendor:
            self.assertEqual(vendor["dcb"]["skipped"], "window")

    def test_unreadable_dictionary(self):
        r1, f1, r2, f2 = self.releases()
        self.use_nobody()
        make_world_accessible(r1)
        make_world_accessible(r2)
        os.chmod(os.path.join(r1, "css/site.css"), 0)
        # The file is the running user's own and readable by it alone, so that
        # its readers (that user) may read the predecessor by its bits (one
        # they may not is never opened: "private", safety/test_earlier_release.py): the
        # open fails.
        os.chown(os.path.join(r2, "css/site.css"), 65534, 65534)
        os.chmod(os.path.join(r2, "css/site.css"), 0o600)
        man = self.path("m.json")
        r = run(["--dictionary-from", r1, "--manifest", man, r2], as_nobody=True, program=self.prog)
        self.assertEqual(r.rc, 1, r)
        self.assertIn("no delta against", r.err)
        self.assertIn("site.css", r.err)
        e = [x for x in json.loads(read(man))["files"] if x["path"] == "css/site.css"][0]
        self.assertEqual(e["deltas"][0]["skipped"], "error")
        self.assertIn("gz", e)  # its plain outputs stand
        self.assertTrue(any("/app." in p for p in deltas_of(r2)))
        # The DIR itself unreadable: an error before any work, exit 2.
        fresh = self.path("fresh")
        make_release(fresh, 4)
        make_world_accessible(fresh)
        os.chmod(r1, 0)
        r = run(["--dictionary-from", r1, fresh], as_nobody=True, program=self.prog)
        self.assertEqual((r.rc, r.err), (2, "precompress: %s: Permission denied\n" % r1), r)
        self.assertFalse(os.path.exists(os.path.join(fresh, "css/site.css.gz")))


if __name__ == "__main__":
    main()
