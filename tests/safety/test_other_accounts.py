#!/usr/bin/python3
"""What a hostile local account cannot do to a run of root's, each case caused
for real, the second account being uid 65534 (setpriv); its links in the tree:
selection/test_links.py:

1. rewrite its own file between the hash read and the compressing read,
   mtime put back with utime (inotify timing): no cache entry and no
   identical file's copy gets its bytes under the first read's hash, and
   whatever outputs the file gets are of one version of it, never a mix;
2. a foreign SQLite database (or any file) at DIR/cache.sqlite is left
   byte for byte as it was and reported, no -wal or -shm left;
3. a --cache-dir named through another account's symlink is refused, and
   nothing is made behind it;
4. the cache directory is never walked, whatever it holds (an old v1/ tree
   when it is the PATH itself);
5. a directory the run cannot write is found before its files are read:
   one error line for it, its files failed, the others compressed.
"""
import sys

sys.dont_write_bytecode = True
import gzip
import os
import shutil
import sqlite3
import stat
import subprocess

from pctest import (fast_levels, NOBODY, SETPRIV, SRC_ROOT, PCTestCase, json_lines, brotli, child_env, decode, main, run,
                    sha256, store_path, store_rows, walk_all, words_data, xxh3_128)

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()


# The other account's side of case 1, run as uid 65534 with its file's path and
# the two versions' files: it watches the file with inotify; at the first read
# of it (root's hashing pass) it waits DELAY seconds, rewrites the file in place
# with the other version and puts its mtime back; once root's reader closes the
# file it puts the first version back the same way (so that a later comparison
# with "the leader's file as it is now" finds the original bytes).
ATTACKER = r"""
import ctypes, os, select, struct, sys, time
path, orig_path, evil_path, delay = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
IN_ACCESS, IN_CLOSE_NOWRITE = 0x1, 0x10
orig = open(orig_path, "rb").read()
evil = open(evil_path, "rb").read()
st = os.stat(path)
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
if fd < 0 or libc.inotify_add_watch(fd, os.fsencode(path), IN_ACCESS | IN_CLOSE_NOWRITE) < 0:
    print("inotify failed: %d" % ctypes.get_errno(), flush=True)
    sys.exit(1)

def rewrite(data):
    w = os.open(path, os.O_WRONLY)
    os.pwrite(w, data, 0)
    os.close(w)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

print("ready", flush=True)
state, deadline = 0, time.time() + 120
while state < 2 and time.time() < deadline:
    if not select.select([fd], [], [], 1)[0]:
        continue
    buf = os.read(fd, 65536)
    off = 0
    while off < len(buf):
        wd, mask, cookie, n = struct.unpack_from("iIII", buf, off)
        off += 16 + n
        if state == 0 and mask & IN_ACCESS:
            time.sleep(delay)
            rewrite(evil)
            state = 1
            print("swapped", flush=True)
            break
        if state == 1 and mask & IN_CLOSE_NOWRITE:
            rewrite(orig)
            state = 2
            print("restored", flush=True)
            break
"""



class BytesHashedAreBytesCompressed(PCTestCase):
    """Case 1: the owner of a file over 256 KiB rewrites it in place between the hash read
    and the compressing read, mtime put back."""

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            self.skipTest("needs root and setpriv: the attacker is uid %d" % NOBODY)
        os.chmod(self.tmp, 0o755)

    def attempt(self, k, orig, evil):
        """One run of root's over a tree holding the attacker's file (z/evil.js, walked and
        compressed first), a larger file of root's (compressed next: time for the attacker to
        put its file back) and root's copy of the original bytes in a 0700 directory (a
        follower of the attacker's file). Returns the run, its records and the paths."""
        base = self.path("a%d" % k)
        os.makedirs(base)
        with open(os.path.join(base, "orig.bin"), "wb") as f:
            f.write(orig)
        with open(os.path.join(base, "evil.bin"), "wb") as f:
            f.write(evil)
        os.chmod(base, 0o755)
        for name in ("orig.bin", "evil.bin"):
            os.chmod(os.path.join(base, name), 0o644)
        tree = os.path.join(base, "t")
        z = os.path.join(tree, "z")
        priv = os.path.join(tree, "a", "priv")
        os.makedirs(z)
        os.makedirs(priv)
        # Empty files after it in z: the walk's first slice (256 entries) ends in z, with the
        # attacker's file the only one to compress: it starts alone and leads its content.
        for i in range(300):
            open(os.path.join(z, "p%03d" % i), "wb").close()
        evil_js = os.path.join(z, "evil.js")
        with open(evil_js, "wb") as f:
            f.write(orig)
        os.chown(z, NOBODY, NOBODY)
        os.chown(evil_js, NOBODY, NOBODY)
        with open(os.path.join(tree, "a", "pad.js"), "wb") as f:
            f.write(words_data(len(orig) + (64 << 10), seed=500 + k))
        copy_js = os.path.join(priv, "copy.js")
        with open(copy_js, "wb") as f:
            f.write(orig)
        os.chmod(priv, 0o700)
        cache = self.path("cache%d" % k)
        os.makedirs(cache, mode=0o700)
        att = subprocess.Popen(SETPRIV + [sys.executable, "-c", ATTACKER, evil_js,
                                          os.path.join(base, "orig.bin"), os.path.join(base, "evil.bin"),
                                          "0.03"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            self.assertEqual(att.stdout.readline(), b"ready\n", att.stderr.read() if att.poll() else "")
            r = run(["-j1", "--json-lines", "--cache-dir", cache, tree], timeout=300)
        finally:
            try:
                att.wait(timeout=30)
            except subprocess.TimeoutExpired:
                att.kill()
                att.wait()
        said = att.stdout.read().decode()
        return r, json_lines(r), tree, evil_js, copy_js, cache, said

    def test_a_rewrite_between_the_reads_poisons_nothing(self):
        orig = words_data(640 << 10, seed=71)
        evil = words_data(640 << 10, seed=72)
        self.assertEqual(len(orig), len(evil))
        h = xxh3_128(orig)
        landed = 0
        for k in range(3):
            r, recs, tree, evil_js, copy_js, cache, said = self.attempt(k, orig, evil)
            self.assertIn(r.rc, (0, 1), r)
            wrong = []  # every failed check of this attempt, said together
            rec = recs["z/evil.js"]
            if rec["status"] == "failed":
                self.assertEqual(rec["error"], "file changed while being read", rec)
                landed += 1
            # Whatever outputs the attacker's file has are of one version of it.
            for ext in ("gz", "br"):
                p = evil_js + "." + ext
                if os.path.lexists(p) and decode(ext, p) not in (orig, evil):
                    wrong.append("%s decodes to a mix of two versions" % p)
            # Root's copy, in a directory the attacker cannot read, holds root's bytes.
            status = recs["a/priv/copy.js"]["status"]
            for ext in ("gz", "br"):
                if decode(ext, copy_js + "." + ext) != orig:
                    wrong.append("root's copy.js.%s (%s) holds other bytes than copy.js" % (ext, status))
            # No entry of the cache under the original's hash holds other bytes...
            for row in store_rows(cache):
                key = bytes(row["key"])
                if key[:16] != h or row["lim"] != -1:
                    continue
                fmt = {0: "gz", 1: "br"}[key[24]]
                data = bytes(row["data"])
                if (gzip.decompress(data) if fmt == "gz" else brotli.decompress(data)) != orig:
                    wrong.append("the cache's %s entry under the original's hash holds other bytes" % fmt)
            # ... and another tree with the original bytes gets them right from it.
            other = self.path("o%d" % k)
            os.makedirs(other)
            with open(os.path.join(other, "app.js"), "wb") as f:
                f.write(orig)
            r2 = run(["-j1", "--json-lines", "--cache-dir", cache, other], timeout=300)
            self.assertEqual(r2.rc, 0, r2)
            how = json_lines(r2)["app.js"]["status"]
            for ext in ("gz", "br"):
                if decode(ext, os.path.join(other, "app.js." + ext)) != orig:
                    wrong.append("a later run over other files (%s) wrote app.js.%s of other bytes" % (how, ext))
            self.assertEqual(wrong, [], "attempt %d, the attacker said: %s" % (k, said.split()))
            if landed:
                break
        self.assertGreater(landed, 0, "the rewrite never landed between the reads: the test proved nothing")


class ForeignStore(PCTestCase):
    """Case 2: what is at DIR/cache.sqlite says what it is before anything writes to it."""

    NOT_OURS = "not a precompress cache store, or a damaged one"

    def foreign(self, name, make):
        cache = self.path("cache-" + name)
        os.makedirs(cache, mode=0o700)
        make(store_path(cache))
        os.chmod(store_path(cache), 0o600)
        return cache

    @staticmethod
    def sqlite_db(path, wal=False):
        db = sqlite3.connect(path)
        if wal:
            db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)")
        db.execute("INSERT INTO notes(body) VALUES ('another program''s data')")
        db.commit()
        db.close()

    def test_anything_else_at_the_store_is_left_as_it_is(self):
        def text(p):
            with open(p, "wb") as f:
                f.write(b"SQLite format 2? no: a text file of someone's\n" * 100)

        cases = {"sqlite": self.sqlite_db, "sqlite-wal": lambda p: self.sqlite_db(p, wal=True), "text": text,
                 "ours-but-another-id": None}
        for name, make in cases.items():
            for mode in ([], ["-n"]):
                with self.subTest(case=name, mode=mode):
                    if make is None:
                        # A store of ours whose id says otherwise is not ours.
                        cache = self.path("cache-%s%s" % (name, "".join(mode)))
                        self.run_ok(["-q", "--cache-dir", cache, self.copy_site("s-" + name + "".join(mode))])
                        db = sqlite3.connect(store_path(cache))
                        db.execute("PRAGMA application_id = 42")
                        db.commit()
                        db.close()
                    else:
                        cache = self.foreign(name + "".join(mode), make)
                    before = {n: sha256(os.path.join(cache, n)) for n in os.listdir(cache)}
                    root = self.copy_site("site-" + name + "".join(mode))
                    r = run(mode + ["--json", "--cache-dir", cache, root])
                    after = {n: sha256(os.path.join(cache, n)) for n in os.listdir(cache)}
                    self.assertEqual(after, before, "the file at the store's name (or beside it) changed")
                    self.assertEqual(r.rc, 1, r)
                    self.assertEqual(r.error_lines(), ["precompress: %s: %s" % (cache, self.NOT_OURS)], r)
                    s = r.summary()
                    self.assertEqual((s["errors"], s["failed"], s["cached"]), (1, 0, 0), s)
                    if not mode:
                        self.assertGreater(s["compressed"], 0, "the run went on without the cache")

    def test_an_empty_file_is_replaced_by_a_store(self):
        cache = self.foreign("empty", lambda p: open(p, "wb").close())
        self.run_ok(["-q", "--cache-dir", cache, self.copy_site("a")])
        db = sqlite3.connect(store_path(cache))
        self.assertEqual(db.execute("PRAGMA application_id").fetchone()[0], 0x70726563)
        db.close()
        r = self.run_ok(["--json", "--cache-dir", cache, self.copy_site("b")])
        self.assertGreater(r.summary()["cached"], 0, r)

    def test_an_unstamped_store_of_090_is_stamped_and_used(self):
        """precompress 0.9.0 wrote no id: its store (these tables, meta format 1) is kept, stamped."""
        cache = self.path("cache")
        self.run_ok(["-q", "--cache-dir", cache, self.copy_site("a")])
        db = sqlite3.connect(store_path(cache))
        db.execute("PRAGMA application_id = 0")
        db.execute("PRAGMA user_version = 0")
        db.commit()
        rows = db.execute("SELECT count(*) FROM entry").fetchone()[0]
        db.close()
        r = self.run_ok(["--json", "--cache-dir", cache, self.copy_site("b")])
        self.assertGreater(r.summary()["cached"], 0, r)
        db = sqlite3.connect(store_path(cache))
        self.assertEqual(db.execute("PRAGMA application_id").fetchone()[0], 0x70726563)
        self.assertEqual(db.execute("PRAGMA user_version").fetchone()[0], 1)
        self.assertEqual(db.execute("SELECT count(*) FROM entry").fetchone()[0], rows)
        db.close()


class CacheDirThroughLinks(PCTestCase):
    """Case 3: --cache-dir is judged as given, every component, not only as resolved."""

    UNSAFE = "refusing a cache another user owns or others can write"

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0 or shutil.which("setpriv") is None:
            self.skipTest("needs root and setpriv: the other account is uid %d" % NOBODY)
        self.base = self.path("d")
        os.makedirs(self.base)
        for p in (self.tmp, self.base):
            os.chmod(p, 0o755)
        self.priv = os.path.join(self.base, "root-private")
        os.makedirs(self.priv, mode=0o700)

    def as_nobody(self, *cmd):
        subprocess.run(SETPRIV + list(cmd), check=True)

    def refused(self, arg, made, cwd=None):
        root = self.copy_site("site-%d" % len(os.listdir(self.tmp)))
        before = sorted(walk_all(root))
        r = run(["--cache-dir", arg, root], cwd=cwd)
        self.assertFalse(os.path.lexists(made), "%s was made behind the link" % made)
        self.assertEqual(r.rc, 2, r)
        self.assertIn("precompress: %s: %s" % (arg, self.UNSAFE), r.err_lines, r)
        self.assertEqual(sorted(walk_all(root)), before, "a refused run wrote outputs")

    def test_another_accounts_link_on_the_way_is_refused(self):
        att = os.path.join(self.base, "att")
        os.makedirs(att)
        os.chown(att, NOBODY, NOBODY)
        self.as_nobody("ln", "-s", self.priv, os.path.join(att, "x"))
        made = os.path.join(self.priv, "newcache")
        for arg, cwd in ((os.path.join(att, "x", "newcache"), None), ("att/x/newcache", self.base),
                         ("att/x/../root-private/newcache", self.base)):
            with self.subTest(arg=arg):
                self.refused(arg, made, cwd)
        # root's own link to it leads through another account's link: refused as well
        os.symlink(os.path.join(att, "x"), os.path.join(self.base, "rl"))
        with self.subTest(arg="rl/newcache"):
            self.refused(os.path.join(self.base, "rl", "newcache"), made)
        self.assertEqual(os.listdir(self.priv), [])

    def test_links_in_a_sticky_directory(self):
        """In a sticky directory (/tmp) another account's link is refused even into a directory
        of root's; root's own link there is followed, and the cache made at its target."""
        sticky = os.path.join(self.base, "sticky")
        os.makedirs(sticky)
        os.chmod(sticky, 0o1777)
        self.as_nobody("ln", "-s", self.priv, os.path.join(sticky, "theirs"))
        self.refused(os.path.join(sticky, "theirs", "c"), os.path.join(self.priv, "c"))
        os.symlink(os.path.join(self.priv, "ours"), os.path.join(sticky, "mine"))
        r = run(["--json", "--cache-dir", os.path.join(sticky, "mine"), self.copy_site("ok")])
        self.assertEqual(r.rc, 0, r)
        self.assertTrue(os.path.isfile(os.path.join(self.priv, "ours", "cache.sqlite")), r)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.priv, "ours")).st_mode), 0o700)


class CacheDirNeverWalked(PCTestCase):
    """Case 4: the cache's whole directory stays out of the walk, whatever it holds."""

    def old_tree(self, cache):
        os.makedirs(os.path.join(cache, "v1", "ab"))
        for name in ("entry", "other.js"):
            with open(os.path.join(cache, "v1", "ab", name), "wb") as f:
                f.write(words_data(20000, seed=5))
        os.chmod(cache, 0o700)

    def compressed_under(self, d):
        return sorted(os.fsdecode(p) for p in walk_all(d) if p.endswith((b".gz", b".br")))

    def test_the_cache_dir_as_the_path(self):
        """`precompress --cache-dir C C` with an old C/v1/ab/entry: nothing under C is
        compressed (also with C named through a link, or C/v1 as the PATH)."""
        cache = self.path("C")
        self.old_tree(cache)
        link = self.path("L")
        os.symlink(cache, link)
        for args in ([cache, cache], [cache, link], [cache, os.path.join(cache, "v1")],
                     [cache, os.path.join(cache, "v1", "ab", "entry")]):
            with self.subTest(args=args):
                r = run(["--json", "--cache-dir"] + args)
                self.assertEqual(self.compressed_under(cache), [], r)
                self.assertEqual(r.rc, 0, r)
                self.assertEqual(r.summary()["files"], 0, r)

    def test_the_cache_dir_inside_the_path(self):
        root = self.copy_site()
        cache = os.path.join(root, "vendor", "cache")
        self.old_tree(cache)
        r = run(["--json", "--cache-dir", cache, root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(self.compressed_under(cache), [], r)
        self.assertGreater(r.summary()["compressed"], 0, r)


class UnwritableDirectories(PCTestCase):
    """Case 5: a directory whose outputs cannot be written is found before its files are
    read: one error line for it, its files failed (not even opened), the others compressed."""

    LINE = "cannot write outputs in this directory (Permission denied): its files are not compressed"

    def build(self):
        t = self.path("t")
        files = {"index.js": 0o777, "w1/a.js": 0o777, "w1/b.js": 0o777, "ro1/c.js": 0o755,
                 "ro1/d.js": 0o755, "ro1/secret.js": 0o755, "ro2/g.js": 0o755, "ro2/w2/f.js": 0o777}
        for k, (rel, dmode) in enumerate(sorted(files.items())):
            p = os.path.join(t, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(words_data(30000, seed=600 + k))
            os.chmod(p, 0o644)
            os.chmod(os.path.dirname(p), dmode)
        os.chmod(t, 0o777)
        # unreadable too: a run that opened it would say "Permission denied"
        os.chmod(os.path.join(t, "ro1", "secret.js"), 0o600)
        return t

    def test_one_line_per_directory_and_nothing_read_there(self):
        self.use_nobody()
        t = self.build()
        r = self.run_nobody(["-j2", "--json-lines", t])
        self.assertEqual(sorted(r.error_lines()),
                         ["precompress: %s/%s: %s" % (t, d, self.LINE) for d in ("ro1", "ro2")], r)
        self.assertEqual(r.rc, 1, r)
        recs = json_lines(r)
        for rel in ("ro1/c.js", "ro1/d.js", "ro1/secret.js", "ro2/g.js"):
            # The directory's line says why (the system's reason); each file's record, the library's code.
            self.assertEqual((recs[rel]["status"], recs[rel].get("error")),
                             ("failed", self.LINE.replace(" (Permission denied)", "")), recs[rel])
        for rel in ("index.js", "w1/a.js", "w1/b.js", "ro2/w2/f.js"):
            self.assertEqual(recs[rel]["status"], "compressed", recs[rel])
            for ext in ("gz", "br"):
                p = os.path.join(t, rel + "." + ext)
                self.assertEqual(decode(ext, p), open(os.path.join(t, rel), "rb").read(), p)
        s = r.summary()
        self.assertEqual((s["failed"], s["errors"], s["compressed"]), (4, 2, 4), s)

    def test_dry_run_and_check_find_nothing_to_report(self):
        """They write nothing: an unwritable directory is no error of theirs."""
        self.use_nobody()
        t = self.build()
        os.chmod(os.path.join(t, "ro1", "secret.js"), 0o644)
        for mode in (["-n"], ["--check"]):
            with self.subTest(mode=mode):
                r = self.run_nobody(mode + ["--json", t])
                self.assertEqual(r.error_lines(), [], r)
                self.assertEqual(r.summary()["failed"], 0, r)


class DjangoError(PCTestCase):
    """precompress.django's error, when the program exits non-zero and prints nothing, names
    the exit status and the command."""

    SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
from django.conf import settings
settings.configure(STATIC_ROOT=sys.argv[3], PRECOMPRESS_BINARY=sys.argv[2], STATIC_URL="/static/")
import django
django.setup()
from precompress.django import CompressedStaticFilesStorage, PrecompressError
try:
    list(CompressedStaticFilesStorage().compress_files(["a.js", "b.js", "c.js", "d.js"]))
except PrecompressError as e:
    print(e)
    sys.exit(0)
sys.exit("no PrecompressError")
"""

    def test_silent_failure_names_status_and_command(self):
        py = os.path.join(SRC_ROOT, "python")
        check = subprocess.run(["/usr/bin/python3", "-c", "import django, whitenoise"], capture_output=True)
        if check.returncode != 0:
            self.skipTest("python3-django or python3-whitenoise is missing")
        prog = self.path("silent-precompress")
        with open(prog, "w") as f:
            f.write("#!/bin/sh\nexit 3\n")
        os.chmod(prog, 0o755)
        static = self.path("static")
        os.makedirs(static)
        r = subprocess.run(["/usr/bin/python3", "-c", self.SCRIPT, py, prog, static], capture_output=True,
                           text=True, env=dict(child_env(), PYTHONDONTWRITEBYTECODE="1"))
        self.assertEqual(r.returncode, 0, r)
        msg = r.stdout.strip()
        self.assertTrue(msg.startswith("precompress exited with status 3 and printed nothing"), msg)
        self.assertIn("in %s" % static, msg)
        self.assertIn("%s --json-lines --skip-ext " % prog, msg)
        self.assertRegex(msg, r" --files-from \S+ -- \.$")


if __name__ == "__main__":
    main()
