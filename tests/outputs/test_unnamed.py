#!/usr/bin/python3
"""Outputs made as unnamed files (src/fs/out.c's pc__out_open_new: O_TMPFILE,
then linkat at the final name), and every way back to the named temp.

An output whose name the walk's listing lacked is written to an unnamed
file and linked at its name: no temp name in the directory, no rename. Seen
with strace: one linkat per output, the manifest alone renamed. The cases
where that cannot be done are made with a preloaded stand-in
(tests/faults/fs.c): a file system without O_TMPFILE, a process that cannot
name a descriptor, and another writer taking the name between the listing
and the link. In each the outputs are the oracle's bytes, decode to their
sources, carry the sources' mode and mtime, and no temp is left. An output
already there is replaced through a named temp and a rename.
-Dportable=true builds have no unnamed outputs: there every output is
renamed.
"""
import sys

sys.dont_write_bytecode = True
import os
import re
import shutil
import stat
import subprocess

from pctest import (PROGRAM, PCTestCase, classify, child_env, main, read, walk_all, write)

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)
FS_SO = os.environ.get("PC_FAULT_FS_SO", "")
PORTABLE = os.environ.get("PC_PORTABLE") == "1"
CALL_RE = re.compile(r"^\d+ +(openat|linkat|renameat2?|rename)\((.*)$")


class Unnamed(PCTestCase):
    def setUp(self):
        super().setUp()
        if shutil.which("strace") is None:
            self.skipTest("strace is not installed (apt-get install strace)")

    def traced(self, args, env=None):
        """Runs the program under strace; its openat/linkat/rename* calls as (name, args)."""
        log = self.path("strace.log")
        e = child_env()
        # LeakSanitizer cannot run under ptrace; the other suites check leaks.
        e["ASAN_OPTIONS"] = (e.get("ASAN_OPTIONS", "") + ":detect_leaks=0:verify_asan_link_order=0").lstrip(":")
        e.update(env or {})
        p = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat,linkat,rename,renameat,renameat2",
                            "-o", log, PROGRAM] + args, capture_output=True, text=True, env=e,
                           stdin=subprocess.DEVNULL, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        calls = []
        with open(log) as f:
            for line in f:
                m = CALL_RE.match(line)
                if m:
                    calls.append((m.group(1), m.group(2)))
        return calls, p

    def preload(self, **flags):
        if not FS_SO:
            self.skipTest("no preload stand-in (a static build cannot preload)")
        env = {"LD_PRELOAD": FS_SO, "PC_FAULT_FS_LOG": self.path("refused.log")}
        env.update({k: "1" for k in flags})
        return env

    def refused(self):
        """The stand-in's refusals, in order ("tmpfile", "link")."""
        try:
            return read(self.path("refused.log")).decode().split()
        except FileNotFoundError:
            return []

    def tree(self):
        root = self.copy_site()
        return root, walk_all(root), classify(root)

    def assertOutputsRight(self, root, before, cls):
        self.assertTreeMatchesOracle(root, before, cls)
        self.assertNoTemps(root)
        for rel, c in cls.items():
            src = os.lstat(os.path.join(os.fsencode(root), rel))
            for fmt, blob in c["out"].items():
                if blob is None:
                    continue
                st = os.lstat(os.path.join(os.fsencode(root), rel + b"." + fmt.encode()))
                self.assertEqual(stat.S_IMODE(st.st_mode), stat.S_IMODE(src.st_mode), rel)
                self.assertEqual(st.st_mtime_ns, src.st_mtime_ns, rel)
                self.assertEqual(st.st_nlink, 1, rel)

    @staticmethod
    def outputs_of(cls):
        return sum(1 for c in cls.values() for b in c["out"].values() if b is not None)

    @staticmethod
    def count(calls, name_re):
        return len([1 for n, _ in calls if re.match(name_re, n)])

    def test_fresh_tree_links_each_output_and_renames_none(self):
        root, before, cls = self.tree()
        man = self.path("m.json")
        calls, _ = self.traced(["-q", "-j", "1", "--manifest", man, root])
        self.assertOutputsRight(root, before, cls)
        n = self.outputs_of(cls)
        self.assertGreater(n, 10)
        renames = self.count(calls, r"rename")
        if PORTABLE:
            self.assertEqual(renames, n + 1, calls)  # the outputs and the manifest
            self.assertEqual(self.count(calls, r"linkat"), 0)
            return
        self.assertEqual(renames, 1, [c for c in calls if c[0].startswith("rename")])  # the manifest
        links = [a for c, a in calls if c == "linkat"]
        self.assertEqual(len(links), n, links)
        self.assertTrue(all("AT_EMPTY_PATH" in a or "/proc/self/fd/" in a for a in links), links)
        self.assertEqual(self.count([c for c in calls if "O_TMPFILE" in c[1]], r"openat"), n)
        # No output ever had a temp name.
        self.assertFalse([a for c, a in calls if c == "openat" and ".tmp\"" in a and ".json." not in a])

    def test_an_output_already_there_is_replaced_by_rename(self):
        root, _, _ = self.tree()
        man = self.path("m.json")
        self.run_ok(["-q", "--manifest", man, root])
        app = os.path.join(root, "css", "app.css")
        write(app, read(app) + b"\n/* changed */\n" * 40)
        before = walk_all(root)
        calls, _ = self.traced(["-q", "-j", "1", "--manifest", man, root])
        want = classify(root)[b"css/app.css"]["out"]
        self.assertEqual(read(app + ".gz"), want["gz"])
        self.assertEqual(read(app + ".br"), want["br"])
        # Its two outputs were listed by the walk: each through a named temp (and the
        # manifest); the other files are unchanged and left alone.
        self.assertEqual(self.count(calls, r"rename"), 3, calls)
        self.assertEqual(self.count(calls, r"linkat"), 0, calls)
        self.assertNoTemps(root)
        self.assertEqual(set(walk_all(root)), set(before))

    def test_no_o_tmpfile_takes_the_named_temp(self):
        env = self.preload(PC_FAULT_NO_TMPFILE=1)
        root, before, cls = self.tree()
        calls, _ = self.traced(["-q", "-j", "2", root], env=env)
        self.assertOutputsRight(root, before, cls)
        self.assertEqual(self.count(calls, r"linkat"), 0)
        self.assertEqual(self.count(calls, r"rename"), self.outputs_of(cls))
        # The refusal is remembered: tried by each of the two workers at most once
        # (never in a portable build, which makes no unnamed file).
        self.assertIn(self.refused(), ([],) if PORTABLE else (["tmpfile"], ["tmpfile", "tmpfile"]))

    def test_no_way_to_link_copies_to_a_named_temp(self):
        env = self.preload(PC_FAULT_NO_LINK=1)
        root, before, cls = self.tree()
        man = self.path("m.json")
        calls, _ = self.traced(["-q", "-j", "1", "--fsync", "--manifest", man, root], env=env)
        self.assertOutputsRight(root, before, cls)
        n = self.outputs_of(cls)
        self.assertEqual(self.count(calls, r"rename"), n + 1)
        # The first output found it out (both ways of linking refused); every later one
        # went straight to the named temp.
        self.assertEqual(self.refused(), [] if PORTABLE else ["link", "link"])
        self.assertEqual(len([1 for c, a in calls if c == "openat" and "O_TMPFILE" in a]), 0 if PORTABLE else 1)

    def test_a_name_taken_before_the_link_is_replaced(self):
        env = self.preload(PC_FAULT_LINK_RACE=1)
        root, before, cls = self.tree()
        calls, _ = self.traced(["-q", "-j", "2", root], env=env)
        self.assertOutputsRight(root, before, cls)
        if not PORTABLE:
            # Each output: the refused link at its name, a link under a temp name, the rename.
            n = self.outputs_of(cls)
            self.assertEqual(self.count(calls, r"rename"), n)
            self.assertEqual(self.count(calls, r"linkat"), 2 * n)

    def test_output_dir_outputs_are_linked_in_the_mirror(self):
        root, _, cls = self.tree()
        out = self.path("out")
        calls, _ = self.traced(["-q", "-j", "2", "--output-dir", out, root])
        n = self.outputs_of(cls)
        got = [r for r, st in walk_all(out).items() if stat.S_ISREG(st.st_mode)]
        self.assertEqual(len(got), n)
        for rel, c in cls.items():
            for fmt, blob in c["out"].items():
                if blob is not None:
                    self.assertEqual(read(os.path.join(os.fsencode(out), rel + b"." + fmt.encode())), blob)
        self.assertEqual(self.count(calls, r"linkat"), 0 if PORTABLE else n)
        self.assertNoTemps(out)


if __name__ == "__main__":
    main()
