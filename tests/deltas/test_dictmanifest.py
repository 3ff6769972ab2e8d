#!/usr/bin/python3
"""Deltas paired through Django's staticfiles.json (docs/deltas.md, "Through Django's
staticfiles.json"; --django-manifest): a file named by a hashed name in its PATH's manifest
is paired with the file the DIR's manifest gives the same logical name, before the name rules.
Two releases side by side and the in-place case (old and new hashed files in one STATIC_ROOT,
a copy of the earlier manifest, as the Django storage runs it: file PATHs in STATIC_ROOT);
renamed files, a name whose hash changed, an unchanged one (no delta), one only the name rules
pair, a new one (none); malformed and hostile manifests (one line each, the run goes on, the
name rules pair). Every .dcz is decoded with the real zstd given the dictionary (and every .dcb
with libbrotlidec 1.1 where the build writes them), its header checked."""
import sys

sys.dont_write_bytecode = True
import hashlib
import json
import os
import random
import shutil
import subprocess

from pctest import deltas_of as all_deltas_of, fast_levels, PCTestCase, main, read, run, write

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)

DCZ_MAGIC = bytes([0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00])
DCB_MAGIC = bytes([0xFF, 0x44, 0x43, 0x42])
BAD_LINE = "not a Django staticfiles.json manifest"


def program(seed, salt, n=1200, edits=10):
    """A script of n functions, the same for one salt; release `seed` changes `edits` of them."""
    r = random.Random(salt)
    lines = ["function %s%d(a, b) { return a * %d + b + '%s'; }" % (salt, i, r.randint(1, 99),
             "".join(r.choice("abcdefghijklmnop") for _ in range(r.randint(4, 12)))) for i in range(n)]
    rr = random.Random(seed * 1000 + len(salt))
    for _ in range(edits):
        k = rr.randrange(n)
        lines[k] = "function %s%d(a, b) { return a - %d; }" % (salt, k, rr.randint(100, 999))
    return ("\n".join(lines) + "\n").encode()


def h12(data):
    return hashlib.md5(data).hexdigest()[:12]


def django_name(logical, data):
    """Django's hashed name: NAME.<12 hex of the MD5>.EXT."""
    stem, ext = logical.rsplit(".", 1)
    return "%s.%s.%s" % (stem, h12(data), ext)


def manifest(paths, version="1.0"):
    m = {"paths": paths, "version": version}
    if version == "1.1":
        m["hash"] = "0123456789ab"
    return json.dumps(m, indent=1).encode()


def release(seed):
    """{logical name: (hashed name, bytes)} of release `seed` (1 or 2)."""
    app = program(seed, "app")
    base = program(1, "base", n=600)  # the same in both releases
    lib = program(seed, "lib")
    logo = program(seed, "logo", n=800)
    files = {
        "js/app.js": (django_name("js/app.js", app), app),
        "css/base.css": (django_name("css/base.css", base), base),
        # A name no template knows (lib_v1.js, lib_v2.js): only the manifests pair it.
        "js/lib.js": ("js/lib_v%d.js" % seed, lib),
        # Moved between releases: images/ in the first, img/ in the second.
        "img/logo.svg": ("%s/logo.%s.svg" % ("images" if seed == 1 else "img", h12(logo)), logo),
    }
    if seed == 2:
        new = program(2, "new", n=500)
        files["js/new.js"] = (django_name("js/new.js", new), new)
    return files


def lay_out(root, files, extra=None, version="1.0"):
    for _, (hashed, data) in files.items():
        os.makedirs(os.path.dirname(os.path.join(root, hashed)), exist_ok=True)
        write(os.path.join(root, hashed), data)
    for rel, data in (extra or {}).items():
        os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
        write(os.path.join(root, rel), data)
    write(os.path.join(root, "staticfiles.json"),
          manifest({k: v[0] for k, v in files.items()}, version))


def deltas_of(root):
    """The deltas below root, but staticfiles.json's own (paired by its path, kept or not as
    its few hundred bytes happen to compress): not what these tests are about."""
    return [p for p in all_deltas_of(root) if not os.path.basename(p).startswith("staticfiles.json.")]


def has_dcb():
    v = subprocess.run([os.environ["PRECOMPRESS"], "-V"], capture_output=True, text=True).stdout
    return "dcb" in v.split("deltas:", 1)[-1].split("\n")[0]


class DjangoManifests(PCTestCase):
    def releases(self):
        r1, r2 = self.path("r1"), self.path("r2")
        f1, f2 = release(1), release(2)
        robots1, robots2 = program(1, "robots", n=300), program(2, "robots", n=300)
        lay_out(r1, f1, {"robots.txt": robots1}, "1.0")
        lay_out(r2, f2, {"robots.txt": robots2}, "1.1")
        # A decoy: a second file of js/app.js's key, so that the key rule pairs it with
        # neither (ambiguous, whatever their mtimes say); the manifests' pairing comes first.
        decoy = os.path.join(r1, "js", "app.%s.js" % ("d" * 12))
        write(decoy, program(9, "app"))
        os.utime(decoy, (2e9, 2e9))
        return r1, f1, r2, f2

    def check_delta(self, path, dict_path, src_path):
        """The header (magic, the dictionary's SHA-256, its 16 hex digits in the name), then
        the body decoded with the dictionary gives the source's bytes."""
        body, dict_bytes = read(path), read(dict_path)
        digest = hashlib.sha256(dict_bytes)
        self.assertEqual(path.rsplit(".", 2)[1], digest.hexdigest()[:16], path)
        if path.endswith(".dcb"):
            self.assertEqual(body[:4], DCB_MAGIC, path)
            self.assertEqual(body[4:36], digest.digest(), path)
            out = subprocess.run([os.environ["PC_DCB_DECODE"], dict_path, path], capture_output=True)
        else:
            self.assertEqual(body[:8], DCZ_MAGIC, path)
            self.assertEqual(body[8:40], digest.digest(), path)
            frame = self.path("frame.zst")
            write(frame, body[40:])
            out = subprocess.run(["zstd", "-q", "-d", "-c", "--long=31", "-D", dict_path, frame],
                                 capture_output=True)
        self.assertEqual(out.returncode, 0, (path, out.stderr))
        self.assertEqual(out.stdout, read(src_path), path)

    def expect(self, made, tree, pairs, dict_root):
        """made: the delta files; pairs: {path below tree: its predecessor below dict_root}.
        Every file of pairs has its deltas (one per format), every delta decodes, no other."""
        formats = 2 if has_dcb() else 1
        want = set()
        for rel, old in pairs.items():
            ds = [p for p in made if p.rsplit(".", 2)[0] == os.path.join(tree, rel)]
            self.assertEqual(len(ds), formats, (rel, made))
            for p in ds:
                self.check_delta(p, os.path.join(dict_root, old), os.path.join(tree, rel))
            want.update(ds)
        self.assertEqual(sorted(want), made)

    def test_two_releases(self):
        r1, f1, r2, f2 = self.releases()
        man = self.path("m.json")
        r = run(["--formats", "gz", "--json-lines", "--dictionary-from", r1, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [])
        pairs = {f2[k][0]: f1[k][0] for k in ("js/app.js", "js/lib.js", "img/logo.svg")}
        pairs["robots.txt"] = "robots.txt"  # in no manifest: the same path pairs it
        self.expect(deltas_of(r2), r2, pairs, r1)
        by = {e["path"]: e for e in json.loads(read(man))["files"]}
        for rel, old in pairs.items():
            self.assertEqual({d["dictionary"] for d in by[rel]["deltas"]}, {old}, rel)
        # Unchanged: its own bytes are the predecessor's, no delta written.
        base = f2["css/base.css"][0]
        self.assertEqual({d.get("skipped") for d in by[base]["deltas"]}, {"identical"})
        self.assertEqual({d["dictionary"] for d in by[base]["deltas"]}, {f1["css/base.css"][0]})
        # New in release 2: no predecessor by any rule.
        self.assertNotIn("deltas", by[f2["js/new.js"][0]])

    def test_manifest_comes_first(self):
        # Without the manifests (none in r1), the key rule pairs js/app with nothing (two
        # files have its key: ambiguous) and the renamed files with nothing: what the
        # manifests change is seen.
        r1, f1, r2, f2 = self.releases()
        os.unlink(os.path.join(r1, "staticfiles.json"))
        man = self.path("m.json")
        r = run(["--formats", "gz", "--dictionary-from", r1, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        by = {e["path"]: e for e in json.loads(read(man))["files"]}
        self.assertEqual({d["skipped"] for d in by[f2["js/app.js"][0]]["deltas"]}, {"ambiguous"})
        self.assertFalse([p for p in deltas_of(r2) if "/js/app." in p])
        self.assertNotIn("deltas", by[f2["js/lib.js"][0]])
        self.assertNotIn("deltas", by[f2["img/logo.svg"][0]])
        # --django-manifest names it again, from elsewhere: the manifests pair them.
        copy = self.path("earlier.json")
        write(copy, manifest({k: v[0] for k, v in f1.items()}))
        r = run(["--formats", "gz", "--dictionary-from", r1, "--django-manifest", copy,
                 "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        by = {e["path"]: e for e in json.loads(read(man))["files"]}
        for k in ("js/app.js", "js/lib.js", "img/logo.svg"):
            self.assertEqual({d["dictionary"] for d in by[f2[k][0]]["deltas"]}, {f1[k][0]}, k)

    def test_applies_to_the_dir_before_it(self):
        r1, f1, r2, f2 = self.releases()
        os.unlink(os.path.join(r1, "staticfiles.json"))
        empty = self.path("empty")
        os.makedirs(empty)
        copy = self.path("earlier.json")
        write(copy, manifest({k: v[0] for k, v in f1.items()}))
        man = self.path("m.json")
        # Given after the empty DIR: r1 keeps the name rules.
        r = run(["--formats", "gz", "--dictionary-from", r1, "--dictionary-from", empty,
                 "--django-manifest", copy, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        by = {e["path"]: e for e in json.loads(read(man))["files"]}
        self.assertNotIn("deltas", by[f2["js/lib.js"][0]])
        # Before any --dictionary-from: a usage error, nothing run.
        r = run(["--django-manifest", copy, "--dictionary-from", r1, r2])
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--django-manifest: give it after its --dictionary-from", r.err)
        r = run(["--dictionary-from", r1, "--django-manifest", "", r2])
        self.assertEqual(r.rc, 2, r)
        self.assertIn("--django-manifest needs a file name", r.err)

    def in_place(self):
        """STATIC_ROOT after the second collectstatic: both releases' hashed files, the
        unhashed names with today's bytes, today's staticfiles.json; the earlier one copied."""
        root = self.path("static")
        f1, f2 = release(1), release(2)
        lay_out(root, f1)
        earlier = self.path("staticfiles.earlier.json")
        shutil.copy(os.path.join(root, "staticfiles.json"), earlier)
        lay_out(root, f2, {k: v[1] for k, v in f2.items()}, "1.1")
        return root, f1, f2, earlier

    def test_in_place_as_the_storage_runs_it(self):
        root, f1, f2, earlier = self.in_place()
        # Without the copy, today's manifest is the DIR's too: every file is its own
        # predecessor, no delta at all.
        r = run(["--formats", "gz", "--dictionary-from", root, root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(deltas_of(root), [])
        names = sorted([v[0] for v in f2.values()] + list(f2))  # hashed and unhashed, as whitenoise
        r = run(["--formats", "gz", "--json-lines", "--dictionary-from", root, "--django-manifest",
                 earlier, "--"] + names, cwd=root)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.error_lines(), [])
        pairs = {f2[k][0]: f1[k][0] for k in ("js/app.js", "js/lib.js", "img/logo.svg")}
        self.expect(deltas_of(root), root, pairs, root)
        # The same as a directory PATH: the earlier release's files, in no manifest of
        # today's, are paired with themselves (identical): no delta for them either.
        for p in deltas_of(root):
            os.unlink(p)
        r = run(["--formats", "gz", "--dictionary-from", root, "--django-manifest", earlier, root])
        self.assertEqual(r.rc, 0, r)
        self.expect(deltas_of(root), root, pairs, root)

    def test_malformed_manifests(self):
        r1, f1, r2, f2 = self.releases()
        deep = b'{"paths": ' + b"[" * 100000 + b"]" * 100000 + b', "version": "1.0"}'
        good = {k: v[0] for k, v in f1.items()}
        cases = {
            "not JSON": b"{\"paths\": {",
            "empty": b"",
            "a list": b"[1, 2]",
            "no version": json.dumps({"paths": good}).encode(),
            "version 2": json.dumps({"paths": good, "version": "2.0"}).encode(),
            "version a number": json.dumps({"paths": good, "version": 1.0}).encode(),
            "paths a list": json.dumps({"paths": list(good), "version": "1.0"}).encode(),
            "a value not a string": json.dumps({"paths": {"js/app.js": 3}, "version": "1.0"}).encode(),
            "an empty name": json.dumps({"paths": {"": "x.js"}, "version": "1.0"}).encode(),
            "a NUL": b'{"paths": {"js/app.js": "js/a\\u0000b.js"}, "version": "1.0"}',
            "a key twice": b'{"paths": {"js/app.js": "a.js", "js/app.js": "b.js"}, "version": "1.0"}',
            "nested 100,000 deep": deep,
            "binary": bytes(range(256)) * 4,
        }
        target = os.path.join(r1, "staticfiles.json")
        for what, text in cases.items():
            with self.subTest(what):
                write(target, text)
                for p in deltas_of(r2):
                    os.unlink(p)
                r = run(["--formats", "gz", "--json-lines", "--dictionary-from", r1, r2])
                self.assertEqual(r.rc, 1, r)
                lines = r.error_lines()
                self.assertEqual(lines, ["precompress: %s: %s (version 1.x, \"paths\": {name: hashed "
                                         "name}): its files are paired by name only" % (target, BAD_LINE)],
                                 r)
                # The run went on: every file compressed, the name rules pairing (js/app
                # with neither file of its key; robots.txt by its path).
                self.assertEqual(r.summary()["failed"], 0, r)
                self.assertTrue(os.path.exists(os.path.join(r2, f2["js/lib.js"][0] + ".gz")))
                self.expect(deltas_of(r2), r2, {"robots.txt": "robots.txt"}, r1)

    def test_unreadable_and_not_files(self):
        r1, f1, r2, f2 = self.releases()
        target = os.path.join(r1, "staticfiles.json")
        real = self.path("real.json")
        shutil.move(target, real)
        # A symlink as DIR/staticfiles.json is not followed (a tree is read through none).
        os.symlink(real, target)
        r = run(["--formats", "gz", "-q", "--dictionary-from", r1, r2])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.error_lines(), ["precompress: %s: not a regular file" % target])
        # A directory of that name.
        os.unlink(target)
        os.makedirs(target)
        r = run(["--formats", "gz", "-q", "--dictionary-from", r1, r2])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.error_lines(), ["precompress: %s: not a regular file" % target])
        os.rmdir(target)
        # --django-manifest follows a symlink as any named file; a missing one is one line.
        link = self.path("link.json")
        os.symlink(real, link)
        r = run(["--formats", "gz", "-q", "--dictionary-from", r1, "--django-manifest", link, r2])
        self.assertEqual(r.rc, 0, r)
        self.assertTrue(any(p.startswith(os.path.join(r2, f2["js/lib.js"][0]))
                            for p in deltas_of(r2)))
        gone = self.path("gone.json")
        r = run(["--formats", "gz", "-q", "--dictionary-from", r1, "--django-manifest", gone, r2])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.error_lines(), ["precompress: %s: No such file or directory" % gone])
        # A malformed manifest of the PATH's own: its line, the name rules pair.
        write(os.path.join(r2, "staticfiles.json"), b"{}")
        r = run(["--formats", "gz", "-q", "--dictionary-from", r1, "--django-manifest", real, r2])
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(len(r.error_lines()), 1, r)
        self.assertIn("%s: %s" % (os.path.join(r2, "staticfiles.json"), BAD_LINE), r.err)

    def test_shared_hashed_name_pairs_nothing(self):
        # Two logical names giving one hashed name in the PATH's manifest: neither pairs it
        # through the manifests (the name rules do: here none).
        r1, f1, r2, f2 = self.releases()
        cur = {k: v[0] for k, v in f2.items()}
        cur["js/other.js"] = cur["js/lib.js"]
        write(os.path.join(r2, "staticfiles.json"), manifest(cur))
        man = self.path("m.json")
        r = run(["--formats", "gz", "--dictionary-from", r1, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        by = {e["path"]: e for e in json.loads(read(man))["files"]}
        self.assertNotIn("deltas", by[f2["js/lib.js"][0]])
        self.assertIn("deltas", by[f2["js/app.js"][0]])


if __name__ == "__main__":
    main()
