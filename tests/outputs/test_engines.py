#!/usr/bin/python3
"""--gzip-engine zlib|libdeflate|zopfli: every .gz decodes to its source; the
default stays byte-identical to Python's gzip; the engine is part of the
manifest's options and of the cache key, so results of one engine are never
taken for another's."""
import sys

sys.dont_write_bytecode = True
import gzip
import json
import os
import re
import subprocess

from pctest import fast_levels, PCTestCase, gz_oracle, main, run

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)


def engines_built():
    out = subprocess.run([os.environ["PRECOMPRESS"], "--version"], capture_output=True, text=True).stdout
    have = ["zlib"]
    if "libdeflate" in out:
        have.append("libdeflate")
    if "zopfli" in out:
        have.append("zopfli")
    return have


def gz_files(root):
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".gz"):
                yield os.path.join(dirpath, f)


class Engines(PCTestCase):
    def compress(self, engine, *extra):
        root = self.copy_site("site-" + engine)
        man = self.path("m-%s.json" % engine)
        r = run(["--no-brotli", "--gzip-engine", engine, "--manifest", man] + list(extra) + [root])
        self.assertEqual(r.rc, 0, r)
        with open(man) as f:
            return root, json.load(f), r

    def test_every_engine_decodes_and_records_itself(self):
        sizes = {}
        for engine in engines_built():
            with self.subTest(engine=engine):
                root, m, _ = self.compress(engine, *(["--gzip-level", "3"] if engine == "zopfli" else []))
                n = 0
                for p in gz_files(root):
                    with open(p, "rb") as f:
                        body = f.read()
                    with open(p[:-3], "rb") as f:
                        src = f.read()
                    self.assertEqual(gzip.decompress(body), src, p)
                    # Our header whatever the engine: no name, mtime 0, OS 255.
                    self.assertEqual(body[:4], b"\x1f\x8b\x08\x00")
                    self.assertEqual(body[4:8], b"\0\0\0\0")
                    self.assertEqual(body[9], 255)
                    if engine == "zlib":
                        self.assertEqual(body, gz_oracle(src), p)
                    n += 1
                self.assertGreater(n, 5)
                sizes[engine] = m["totals"]["gz"]["bytes"]
                opts = m["options"]
                if engine == "zlib":
                    self.assertNotIn("gzip_engine", opts)
                    self.assertEqual(opts["gzip_level"], 9)
                else:
                    self.assertEqual(opts["gzip_engine"], engine)
        if "libdeflate" in sizes:
            self.assertLessEqual(sizes["libdeflate"], sizes["zlib"])

    def test_levels_per_engine(self):
        root = self.copy_site()
        r = run(["--gzip-level", "12", root])
        self.assertEqual(r.rc, 2, r)
        self.assertIn("1..9", r.err)
        r = run(["--gzip-engine", "nope", root])
        self.assertEqual(r.rc, 2, r)
        if "libdeflate" in engines_built():
            r = run(["-q", "--no-brotli", "--gzip-level", "12", "--gzip-engine", "libdeflate", root])
            self.assertEqual(r.rc, 0, r)
            r = run(["--gzip-engine", "libdeflate", "--gzip-level", "13", root])
            self.assertEqual(r.rc, 2, r)

    def test_engine_change_recompresses_and_cache_keeps_them_apart(self):
        other = [e for e in engines_built() if e == "libdeflate"]
        if not other:
            self.skipTest("this build has no libdeflate")
        root = self.copy_site()
        man = self.path("m.json")
        cache = self.path("cache")
        base = ["--no-brotli", "--manifest", man, "--cache-dir", cache, root]
        self.assertEqual(run(["-q"] + base).rc, 0)
        with open(os.path.join(root, "css", "app.css.gz"), "rb") as f:
            zlib_bytes = f.read()
        r = run(["--json", "--gzip-engine", "libdeflate"] + base)
        self.assertEqual(r.rc, 0, r)
        summary = json.loads(r.out)
        self.assertEqual(summary["unchanged"], 0, "records of zlib taken for libdeflate")
        self.assertEqual(summary["cached"], 0, "cache entries of zlib taken for libdeflate")
        with open(os.path.join(root, "css", "app.css.gz"), "rb") as f:
            ld = f.read()
        self.assertNotEqual(ld, zlib_bytes)
        with open(os.path.join(root, "css", "app.css"), "rb") as f:
            self.assertEqual(gzip.decompress(ld), f.read())


if __name__ == "__main__":
    main()
