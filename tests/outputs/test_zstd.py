#!/usr/bin/python3
"""zstd outputs: decode, content size in the frame header, window at most 8 MiB (RFC 9659)."""
import sys

sys.dont_write_bytecode = True
import os
import re
import shutil
import subprocess
import unittest

from pctest import (full_only, PCTestCase, classify, decode, gz_oracle, have_zstd_build, keeps, load_manifest, main,
                    manifest_by_path, run, source_snapshot, walk_all, words_data)

MAX_WINDOW = 8 << 20


def frame_header(blob):
    """(content_size or None, window_size) of the first frame (RFC 8878 3.1.1.1)."""
    if blob[:4] != b"\x28\xb5\x2f\xfd":
        raise AssertionError("not a zstd frame: %r" % blob[:4])
    fhd = blob[4]
    fcs_flag = fhd >> 6
    single = (fhd >> 5) & 1
    if (fhd >> 3) & 1:
        raise AssertionError("reserved bit set in the frame header descriptor")
    did_flag = fhd & 3
    pos = 5
    window = None
    if not single:
        wd = blob[pos]
        pos += 1
        wlog = 10 + (wd >> 3)
        base = 1 << wlog
        window = base + (base >> 3) * (wd & 7)
    pos += (0, 1, 2, 4)[did_flag]
    fcs_len = (1 if single else 0, 2, 4, 8)[fcs_flag]
    size = None
    if fcs_len:
        size = int.from_bytes(blob[pos:pos + fcs_len], "little")
        if fcs_len == 2:
            size += 256
    if single:
        window = size
    return size, window


@unittest.skipUnless(shutil.which("zstd"), "the zstd program is missing (apt-get install zstd)")
class Zstd(PCTestCase):
    def setUp(self):
        super().setUp()
        if not have_zstd_build():
            self.skipTest("precompress was built without zstd")

    def check_zst(self, root, rel):
        full = os.path.join(os.fsencode(root), rel)
        src = full[:-4]
        data = open(src, "rb").read()
        blob = open(full, "rb").read()
        self.assertEqual(decode("zst", full), data, rel)
        size, window = frame_header(blob)
        self.assertEqual(size, len(data), "%r: content size missing or wrong in the frame header" % rel)
        self.assertLessEqual(window, MAX_WINDOW, "%r: window %d > 8 MiB" % (rel, window))
        self.assertTrue(keeps(len(blob), len(data)), rel)
        lv = subprocess.run(["zstd", "-lv", "--", full], stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout
        m = re.search(rb"Decompressed Size: .*\((\d+) B\)", lv)
        self.assertIsNotNone(m, lv)
        self.assertEqual(int(m.group(1)), len(data))
        m = re.search(rb"Window Size: .*\((\d+) B\)", lv)
        self.assertIsNotNone(m, lv)
        self.assertLessEqual(int(m.group(1)), MAX_WINDOW)

    def test_formats_gz_zst(self):
        root = self.copy_site()
        snap = source_snapshot(root)
        cls = classify(root, formats=("gz",))
        man = self.path("m.json")
        self.run_ok(["-q", "--formats", "gz,zst", "--manifest", man, root])
        m, _ = load_manifest(man)
        self.assertEqual(m["options"]["formats"], ["gz", "zst"])
        self.assertEqual(m["options"]["zstd_level"], 19)
        self.assertNotIn("brotli_quality", m["options"])
        byp = manifest_by_path(m)
        new = [r for r in walk_all(root) if r.endswith((b".gz", b".br", b".zst"))]
        self.assertFalse([r for r in new if r.endswith(b".br")], "--formats gz,zst wrote .br files")
        zst = [r for r in new if r.endswith(b".zst")]
        for rel, c in cls.items():
            if c["skip"] is None or c["skip"] == "ratio":
                data = open(os.path.join(os.fsencode(root), rel), "rb").read()
                gz = len(gz_oracle(data))
                out = rel + b".zst"
                if gz * 10 <= len(data) * 8:  # clearly compressible: zstd -19 must pay too
                    self.assertIn(out, zst)
                    self.assertEqual(byp[rel]["zst"], {"size": os.path.getsize(os.path.join(os.fsencode(root), out))})
                if gz > len(data):          # incompressible
                    self.assertNotIn(out, zst)
                    self.assertEqual(byp[rel]["zst"], {"skipped": "ratio"})
        self.assertGreater(len(zst), 8)
        for rel in zst:
            self.check_zst(root, rel)
        self.assertSourcesUnchanged(snap, root)

    def test_zstd_flag_adds_zst(self):
        root = self.copy_site()
        self.run_ok(["-q", "--zstd", root])
        for ext in ("gz", "br", "zst"):
            self.assertTrue(os.path.isfile(os.path.join(root, "css", "app.css." + ext)), ext)
        self.check_zst(root, b"css/app.css.zst")

    @full_only("13.5 MiB at zstd level 19")
    def test_large_files_window_and_content_size(self):
        root = self.path("big")
        os.makedirs(root)
        for name, size, seed in (("stream.js", int(4.5 * 1024 * 1024), 3), ("huge.txt", 9 * 1024 * 1024 + 7, 4)):
            with open(os.path.join(root, name), "wb") as f:
                f.write(words_data(size, seed=seed))
        self.run_ok(["-q", "--formats", "zst", root], timeout=300)
        self.check_zst(root, b"stream.js.zst")
        self.check_zst(root, b"huge.txt.zst")
        self.assertFalse(os.path.exists(os.path.join(root, "huge.txt.gz")))


if __name__ == "__main__":
    main()
