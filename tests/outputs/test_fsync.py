#!/usr/bin/python3
"""--fsync: each output's data is fsynced before the call that puts it at its
name (its rename, or the link of an unnamed one: tests/outputs/test_unnamed.py) and
its directory after it (the manifest likewise), seen with strace; without it,
no fsync."""
import sys

sys.dont_write_bytecode = True
import os
import re
import shutil
import subprocess

from pctest import fast_levels, PCTestCase, PROGRAM, gz_oracle, main

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)


class Fsync(PCTestCase):
    def setUp(self):
        super().setUp()
        if shutil.which("strace") is None:
            self.skipTest("strace is not installed (apt-get install strace)")

    def traced(self, args):
        log = self.path("strace.log")
        env = dict(os.environ)
        # LeakSanitizer cannot run under ptrace; the other suites check leaks.
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
        p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=fsync,renameat,rename,renameat2,linkat", "-o", log,
                            PROGRAM] + args, capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(log) as f:
            return [l.split(None, 1)[1] for l in f if re.search(r"\b(fsync|rename\w*|linkat)\(", l)]

    def outputs(self, root):
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs
                      if f.endswith((".gz", ".br")))

    def test_fsync_before_and_after_each_rename_or_link(self):
        root = self.copy_site()
        man = self.path("m.json")
        calls = self.traced(["-q", "-j", "1", "--fsync", "--manifest", man, root])
        outs = self.outputs(root)
        self.assertGreater(len(outs), 10)
        renames = [i for i, c in enumerate(calls) if c.startswith(("rename", "linkat"))]
        self.assertEqual(len(renames), len(outs) + 1, calls)  # the outputs and the manifest
        for i in renames:
            # -j 1: the file's own data just before its rename or link, its directory just after.
            self.assertTrue(calls[i - 1].startswith("fsync("), calls[i - 3:i + 2])
            self.assertTrue(calls[i + 1].startswith("fsync("), calls[i - 1:i + 3])
        with open(os.path.join(root, "css", "app.css"), "rb") as f:
            src = f.read()
        with open(os.path.join(root, "css", "app.css.gz"), "rb") as f:
            self.assertEqual(f.read(), gz_oracle(src))

    def test_no_fsync_without_the_option(self):
        root = self.copy_site()
        calls = self.traced(["-q", root])
        self.assertEqual([c for c in calls if c.startswith("fsync(")], [])
        self.assertGreater(len([c for c in calls if c.startswith(("rename", "linkat"))]), 10)


if __name__ == "__main__":
    main()
