#!/usr/bin/python3
"""An earlier release is input too (docs/deltas.md, "What an earlier release may
cost and show"): its tree may be another account's, and a delta's bytes are its
predecessor's as much as its file's. Each attack made for real, the other account
uid 65534 (setpriv), the runs root's:

1. a delta leaking a file its reader may not read: root's 0600 conf/settings.ini
   (a public template and a 4-digit PIN) as the predecessor of the other account's
   file of that path. No delta, nothing of the predecessor read or said (no hash,
   size or mtime in the manifest or --json-lines: "private"); the other account
   recovers no PIN from anything it can read. The rule's cases (others, group,
   owner, a directory on the way, a run as the other account) each checked;
2. DIR swapped for a link to a 0700 directory by the account that owns DIR's
   parent: refused before any work (exit 2, one line naming DIR, nothing
   written); root's own links in root's directories still followed;
3. a hostile release: 1,000 files whose predecessors are hard links to one
   64 MiB file: none read ("large"), the run within 3x a run without deltas;
   the rule's boundary (8 x the file + 64 KiB);
4. predecessors renamed over with 40 MiB files after the listing (inotify: at
   the first read of a file of the release): none read ("changed"), the peak
   RSS under --memory-limit;
5. a 64 MiB staticfiles.json in DIR: refused in one line under --memory-limit
   200M, in bounded time and RSS; a real-sized one read, its cost in -v;
6. two files with one key: paired with neither ("ambiguous"), whatever mtime the
   other account gives one;
7. a name whose delta's name would pass NAME_MAX: its plain outputs, no delta
   ("name"), exit 0.

Every .dcz made is decoded with the real zstd given its dictionary."""
import sys

sys.dont_write_bytecode = True
import hashlib
import json
import os
import random
import subprocess
import tempfile
import threading
import time

from pctest import deltas_of, fast_levels, full_only, NOBODY, PROGRAM, SETPRIV, PCTestCase, child_env, main, read, run, sanitized_build, write

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)

DCZ_MAGIC = bytes([0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00])
NOT_READ = ("sha256", "dictionary_size", "dictionary_mtime_ns")

# A public settings template: the other account holds it, PIN and all but the PIN.
TEMPLATE = b"".join(b"option_%03d = value of option %d, the same in every install\n" % (i, i)
                    for i in range(120)) + b"[auth]\npin = %s\n"

# The other account's side of case 1: every SHA-256 it can read (the deltas' headers
# beside its own files, the manifest, --json-lines as a CI log shows it) tried against
# the template with each of the 10,000 PINs.
RECOVER = r"""
import hashlib, json, os, sys
tree, manifest, log, template = sys.argv[1], sys.argv[2], sys.argv[3], open(sys.argv[4], "rb").read()
seen = set()
for d, _, names in os.walk(tree):
    for n in names:
        if n.endswith((".dcz", ".dcb")):
            try:
                b = open(os.path.join(d, n), "rb").read(40)
            except OSError:
                continue
            seen.add(b[8:40].hex() if n.endswith(".dcz") else b[4:36].hex())
for path in (manifest, log):
    try:
        text = open(path).read()
    except OSError:
        continue
    for line in text.splitlines():
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        files = doc.get("files") if isinstance(doc, dict) else None
        for e in files if isinstance(files, list) else [doc]:
            for x in e.get("deltas", []) if isinstance(e, dict) else []:
                if "sha256" in x:
                    seen.add(x["sha256"])
for pin in range(10000):
    if hashlib.sha256(template % (b"%04d" % pin)).hexdigest() in seen:
        print("%04d" % pin)
        sys.exit(0)
print("none")
"""

# The other account's side of case 4, as uid 65534: at the first open of a file of
# the release (the listing of the earlier one is done by then), each predecessor is
# renamed over with a hard link to a 40 MiB file.
GROWER = r"""
import ctypes, os, select, struct, sys, time
watch, big, preds = sys.argv[1], sys.argv[2], sys.argv[3:]
IN_OPEN, IN_ISDIR = 0x20, 0x40000000
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
if fd < 0 or libc.inotify_add_watch(fd, os.fsencode(watch), IN_OPEN) < 0:
    print("inotify failed: %d" % ctypes.get_errno(), flush=True)
    sys.exit(1)
print("ready", flush=True)
deadline = time.time() + 120
while time.time() < deadline:
    if not select.select([fd], [], [], 1)[0]:
        continue
    buf = os.read(fd, 65536)
    off, hit = 0, False
    while off < len(buf):
        wd, mask, cookie, n = struct.unpack_from("iIII", buf, off)
        off += 16 + n
        hit = hit or not mask & IN_ISDIR
    if hit:
        for p in preds:
            os.link(big, p + ".new")
            os.rename(p + ".new", p)
        print("grown", flush=True)
        sys.exit(0)
print("timeout", flush=True)
"""


def program(seed, n=1500, edits=12, salt="f"):
    """A script of n functions; release `seed` changes `edits` of them."""
    r = random.Random(salt)
    lines = ["function %s%d(a, b) { return a * %d + b + '%s'; }" % (salt, i, r.randint(1, 99),
             "".join(r.choice("abcdefghijklmnop") for _ in range(r.randint(4, 12)))) for i in range(n)]
    rr = random.Random(seed * 7919 + n)
    for _ in range(edits):
        k = rr.randrange(n)
        lines[k] = "function %s%d(a, b) { return a - %d; }" % (salt, k, rr.randint(100, 999))
    return ("\n".join(lines) + "\n").encode()


def by_path(manifest):
    return {e["path"]: e for e in json.loads(read(manifest))["files"]}


def as_nobody(cmd, **kw):
    return subprocess.run(SETPRIV + cmd, check=True, **kw)


def chown_tree(path, uid, gid):
    os.chown(path, uid, gid)
    for d, dirs, files in os.walk(path):
        for n in dirs + files:
            os.lchown(os.path.join(d, n), uid, gid)


def measured(args, timeout):
    """Runs the program: (rc, stdout, stderr, its peak RSS in KiB, seconds). The peak is
    the program's own, as GNU time reports it: a child forked from this process would
    count this process's pages too until it execs."""
    with tempfile.NamedTemporaryFile() as rss, tempfile.TemporaryFile() as out, \
            tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", rss.name, PROGRAM] + args,
                             stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=child_env())
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        p.wait()
        killer.cancel()
        secs = time.monotonic() - t0
        out.seek(0)
        err.seek(0)
        text = read(rss.name).decode().split()
        return (p.returncode, out.read().decode(), err.read().decode(),
                int(text[-1]) if text else 1 << 40, secs)


class DictSafety(PCTestCase):
    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("the attacks need root's run and a second account (run as root)")
        self.use_nobody()

    def need_time(self):
        if not os.access("/usr/bin/time", os.X_OK):
            self.skipTest("GNU time (/usr/bin/time) is missing: no peak RSS to measure")

    def check_dcz(self, path, dict_path, src_path):
        body = read(path)
        self.assertEqual(body[:8], DCZ_MAGIC, path)
        self.assertEqual(body[8:40], hashlib.sha256(read(dict_path)).digest(), path)
        frame = self.path("frame.zst")
        write(frame, body[40:])
        out = subprocess.run(["zstd", "-q", "-d", "-c", "--long=31", "-D", dict_path, frame],
                             capture_output=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout, read(src_path), path)

    def dir_of(self, *parts, uid=0, gid=0, mode=0o755):
        p = self.path(*parts)
        os.makedirs(p, exist_ok=True)
        os.chown(p, uid, gid)
        os.chmod(p, mode)
        return p

    # --- 1. a delta readable only by whoever could read both its inputs ----------

    def test_pin_not_recovered(self):
        r1 = self.dir_of("releases", "41")
        self.dir_of("releases", "41", "conf")
        self.dir_of("releases", "41", "js")
        secret = os.path.join(r1, "conf", "settings.ini")
        write(secret, TEMPLATE % b"4711")
        os.chmod(secret, 0o600)
        write(os.path.join(r1, "js", "app.js"), program(1))
        att = self.dir_of("att", uid=NOBODY, gid=NOBODY)
        site = os.path.join(att, "site")
        for rel, data in (("conf/settings.ini", TEMPLATE % b"0000"), ("js/app.js", program(2))):
            os.makedirs(os.path.dirname(os.path.join(site, rel)), exist_ok=True)
            write(os.path.join(site, rel), data)
        chown_tree(site, NOBODY, NOBODY)
        man, log = self.path("m.json"), self.path("ci.log")
        r = run(["--zstd", "--json-lines", "--dictionary-from", r1, "--manifest", man, site])
        self.assertEqual(r.rc, 0, r)
        write(log, r.out_b)
        os.chmod(man, 0o644)
        os.chmod(log, 0o644)
        tpl = self.path("template")
        write(tpl, TEMPLATE)
        os.chmod(tpl, 0o644)
        rec = subprocess.run(SETPRIV + ["/usr/bin/python3", "-c", RECOVER, site, man, log, tpl],
                             capture_output=True, text=True)
        self.assertEqual(rec.returncode, 0, rec.stderr)
        self.assertEqual(rec.stdout.strip(), "none", "the other account recovered the PIN")
        # No delta, and nothing of the predecessor said: "private", no hash, size or mtime.
        by = by_path(man)
        self.assertTrue(by["conf/settings.ini"]["deltas"])
        for x in by["conf/settings.ini"]["deltas"]:
            self.assertEqual(x["skipped"], "private", x)
            for k in NOT_READ:
                self.assertNotIn(k, x)
        self.assertFalse([p for p in deltas_of(site) if "settings" in p])
        lines = [json.loads(l) for l in r.out.splitlines() if l.startswith('{"type":"file"')]
        conf = [l for l in lines if l["path"] == "conf/settings.ini"][0]
        self.assertTrue(all(d["state"] == "private" and "sha256" not in d for d in conf["deltas"]), conf)
        # The plain outputs stand; the public file's delta is made and decodes.
        self.assertTrue(os.path.exists(os.path.join(site, "conf/settings.ini.gz")))
        app = [p for p in deltas_of(site) if "/app.js." in p and p.endswith(".dcz")]
        self.assertEqual(len(app), 1, deltas_of(site))
        self.check_dcz(app[0], os.path.join(r1, "js/app.js"), os.path.join(site, "js/app.js"))
        self.assertEqual(os.stat(app[0]).st_uid, NOBODY)

    def test_readers_rule(self):
        """Each class of the file's readers against the predecessor and the directories
        on the way to it, by owner, group and bits: "kept" (made) or "private"."""
        G1, G2 = 4242, 4343
        cases = [  # name, file (uid, gid, mode), predecessor's, its directory's, expected
            ("public", (0, 0, 0o644), (0, 0, 0o644), (0, 0, 0o755), "kept"),
            ("secret", (0, 0, 0o644), (0, 0, 0o600), (0, 0, 0o755), "private"),
            ("o-r-but-g-r", (0, 0, 0o644), (0, G2, 0o604), (0, 0, 0o755), "private"),
            ("closed-dir", (0, 0, 0o644), (0, 0, 0o644), (0, 0, 0o700), "private"),
            ("dir-x-only", (0, 0, 0o644), (0, 0, 0o644), (0, 0, 0o711), "kept"),
            ("group-same", (0, G1, 0o640), (0, G1, 0o640), (0, G1, 0o750), "kept"),
            ("group-other", (0, G1, 0o640), (0, G2, 0o640), (0, 0, 0o755), "private"),
            ("group-dir", (0, G1, 0o640), (0, 0, 0o644), (0, G2, 0o750), "private"),
            ("owner-same", (NOBODY, NOBODY, 0o600), (NOBODY, 0, 0o600), (NOBODY, 0, 0o700), "kept"),
            ("owner-other", (NOBODY, NOBODY, 0o600), (0, 0, 0o600), (0, 0, 0o755), "private"),
            ("owner-root", (0, 0, 0o600), (NOBODY, NOBODY, 0o600), (NOBODY, NOBODY, 0o700), "kept"),
            ("unreadable-file", (0, 0, 0o000), (0, 0, 0o600), (0, 0, 0o700), "kept"),
        ]
        r1, r2 = self.dir_of("r1"), self.dir_of("r2")
        for k, (name, f, p, d, _) in enumerate(cases):
            pd = self.dir_of("r1", name, uid=d[0], gid=d[1], mode=d[2])
            write(os.path.join(pd, "app.js"), program(1, salt=name))
            os.chown(os.path.join(pd, "app.js"), p[0], p[1])
            os.chmod(os.path.join(pd, "app.js"), p[2])
            fd = self.dir_of("r2", name)
            write(os.path.join(fd, "app.js"), program(2, salt=name))
            os.chown(os.path.join(fd, "app.js"), f[0], f[1])
            os.chmod(os.path.join(fd, "app.js"), f[2])
        man = self.path("m.json")
        r = run(["--formats", "gz", "--deltas", "dcz", "-v", "--dictionary-from", r1,
                 "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        by = by_path(man)
        for name, f, p, d, want in cases:
            with self.subTest(name):
                x = by[name + "/app.js"]["deltas"][0]
                self.assertEqual(x.get("skipped", "kept"), want, x)
                made = [q for q in deltas_of(os.path.join(r2, name))]
                if want == "kept":
                    self.assertEqual(len(made), 1)
                    self.check_dcz(made[0], os.path.join(r1, name, "app.js"),
                                   os.path.join(r2, name, "app.js"))
                    self.assertEqual(os.stat(made[0]).st_mode & 0o777, f[2])
                else:
                    self.assertEqual(made, [])
                    for k in NOT_READ:
                        self.assertNotIn(k, x)
                    self.assertIn("  dcz private against %s/%s/app.js" % (r1, name), r.out.splitlines())
        # Again: each file unchanged, its reason as it was (not read again).
        r = run(["--formats", "gz", "--deltas", "dcz", "--json", "--dictionary-from", r1,
                 "--manifest", man, r2])
        self.assertEqual(json.loads(r.out)["unchanged"], len(cases), r)
        # A predecessor opened since (chmod): the file is compressed again, and its
        # delta goes.
        os.chmod(os.path.join(r1, "public", "app.js"), 0o600)
        r = run(["--formats", "gz", "--deltas", "dcz", "--json", "--dictionary-from", r1,
                 "--manifest", man, r2])
        self.assertEqual(json.loads(r.out)["compressed"], 1, r)
        self.assertEqual(deltas_of(os.path.join(r2, "public")), [])

    def test_run_as_the_other_account(self):
        """A run of the other account's own (not root): its outputs are its own, so a
        predecessor it reads by its owner's bits serves its 0600 file, never its
        0644 one (others would read what only it may)."""
        r1 = self.dir_of("r1", uid=NOBODY, gid=NOBODY)
        r2 = self.dir_of("r2", uid=NOBODY, gid=NOBODY)
        for name, mode, want in (("mine.js", 0o600, "kept"), ("public.js", 0o644, "private")):
            write(os.path.join(r1, name), program(1, salt=name))
            os.chown(os.path.join(r1, name), NOBODY, NOBODY)
            os.chmod(os.path.join(r1, name), 0o600)
            write(os.path.join(r2, name), program(2, salt=name))
            os.chown(os.path.join(r2, name), NOBODY, NOBODY)
            os.chmod(os.path.join(r2, name), mode)
        man = self.path("m.json")
        os.chmod(self.tmp, 0o777)
        r = self.run_nobody(["--formats", "gz", "--deltas", "dcz", "--dictionary-from", r1,
                             "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        by = by_path(man)
        self.assertIn("size", by["mine.js"]["deltas"][0])
        self.assertEqual(by["public.js"]["deltas"][0]["skipped"], "private")
        self.assertEqual([os.path.basename(p).split(".")[0] for p in deltas_of(r2)], ["mine"])

    # --- 2. DIR through another account's link ------------------------------------

    def test_dir_swapped_for_a_link(self):
        secret = self.dir_of("secret", mode=0o700)
        os.makedirs(os.path.join(secret, "conf"))
        write(os.path.join(secret, "conf", "settings.ini"), TEMPLATE % b"4711")
        os.chmod(os.path.join(secret, "conf", "settings.ini"), 0o644)  # the 0700 directory keeps it
        att = self.dir_of("att", uid=NOBODY, gid=NOBODY)
        site, prev = os.path.join(att, "site"), os.path.join(att, "prev")
        for t, pin in ((site, b"0000"), (prev, b"0000")):
            os.makedirs(os.path.join(t, "conf"))
            write(os.path.join(t, "conf", "settings.ini"), TEMPLATE % pin)
        chown_tree(site, NOBODY, NOBODY)
        chown_tree(prev, NOBODY, NOBODY)
        # The other account swaps its earlier release for a link to root's directory.
        as_nobody(["sh", "-c", 'rm -rf "$1" && ln -s "$2" "$1"', "sh", prev, secret])
        r = run(["--dictionary-from", prev, site])
        self.assertEqual((r.rc, r.out), (2, ""), r)
        self.assertEqual(r.err, "precompress: %s: refusing a path through a symlink another account "
                         "owns or can replace (give the directory it leads to)\n" % prev)
        self.assertEqual(sorted(os.listdir(os.path.join(site, "conf"))), ["settings.ini"])
        # A link of root's in a directory the other account writes: it could swap it too.
        os.unlink(prev)
        pub = self.dir_of("pub")
        os.makedirs(os.path.join(pub, "conf"))
        write(os.path.join(pub, "conf", "settings.ini"), TEMPLATE % b"0000" + b"# earlier\n")
        os.symlink(pub, prev)
        r = run(["--dictionary-from", prev, site])
        self.assertEqual(r.rc, 2, r)
        self.assertIn("refusing a path through a symlink", r.err)
        # A component on the way that is the other account's link: refused alike.
        as_nobody(["ln", "-s", self.tmp, os.path.join(att, "up")])
        r = run(["--dictionary-from", os.path.join(att, "up", "pub"), site])
        self.assertEqual(r.rc, 2, r)
        # Root's own links in root's directories are followed: DIR is where they lead,
        # judged from there (the 0700 directory: its file is no 0644 file's dictionary).
        links = self.dir_of("links")
        os.symlink(secret, os.path.join(links, "secret"))
        os.symlink(pub, os.path.join(links, "pub"))
        man = self.path("m.json")
        r = run(["--dictionary-from", os.path.join(links, "secret"), "--dictionary-from",
                 os.path.join(links, "pub"), "--manifest", man, site])
        self.assertEqual(r.rc, 0, r)
        ds = by_path(man)["conf/settings.ini"]["deltas"]
        self.assertEqual({x["from"]: x.get("skipped", "kept") for x in ds if x["format"] == "dcz"},
                         {0: "private", 1: "kept"}, ds)

    # --- 3. a hostile release: predecessors far larger than their files -------------

    @full_only("a 64 MiB dictionary through hard links")
    def test_hard_links_to_one_large_file(self):
        big = self.path("big.bin")
        write(big, os.urandom(64 << 20))
        r1, plain, deltas = self.path("r1"), self.path("plain"), self.path("deltas")
        for k in range(1000):
            rel = "d%d/f%04d.js" % (k // 100, k)
            for t in (plain, deltas):
                os.makedirs(os.path.join(t, os.path.dirname(rel)), exist_ok=True)
                write(os.path.join(t, rel), program(k, n=80, salt="x%d" % k))
            os.makedirs(os.path.join(r1, os.path.dirname(rel)), exist_ok=True)
            os.link(big, os.path.join(r1, rel))
        t0 = time.monotonic()
        r = run(["--formats", "gz", "-q", plain], timeout=120)
        t_plain = time.monotonic() - t0
        self.assertEqual(r.rc, 0, r)
        t0 = time.monotonic()
        r = run(["--formats", "gz", "--json-lines", "--dictionary-from", r1, deltas], timeout=120)
        t_deltas = time.monotonic() - t0
        self.assertEqual(r.rc, 0, r)
        lines = [json.loads(l) for l in r.out.splitlines() if l.startswith('{"type":"file"')]
        self.assertEqual(len(lines), 1000)
        for l in lines:
            self.assertTrue(l["deltas"] and all(d["state"] == "large" and "sha256" not in d
                                                for d in l["deltas"]), l)
        self.assertEqual(deltas_of(deltas), [])
        self.assertLess(t_deltas, 3 * t_plain + 1.0, "plain %.2f s, with deltas %.2f s" % (t_plain, t_deltas))

    def test_large_boundary(self):
        """The rule: a dictionary over 8 x its file + 64 KiB is not used, one of that
        size is."""
        r1, r2 = self.dir_of("r1"), self.dir_of("r2")
        src = program(2, n=600)[:10000]
        write(os.path.join(r2, "at.js"), src)
        write(os.path.join(r2, "over.js"), src)
        limit = 8 * len(src) + 65536
        old = (src * 20)[:limit]
        write(os.path.join(r1, "at.js"), old)
        write(os.path.join(r1, "over.js"), old + b"x")
        man = self.path("m.json")
        r = run(["--formats", "gz", "--deltas", "dcz", "--dictionary-from", r1, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        by = by_path(man)
        self.assertIn("size", by["at.js"]["deltas"][0])
        self.assertEqual(by["at.js"]["deltas"][0]["dictionary_size"], limit)
        self.assertEqual(by["over.js"]["deltas"][0]["skipped"], "large")
        for k in NOT_READ:
            self.assertNotIn(k, by["over.js"]["deltas"][0])
        self.check_dcz(deltas_of(r2)[0], os.path.join(r1, "at.js"), os.path.join(r2, "at.js"))

    # --- 4. predecessors grown after the listing -------------------------------------

    @full_only("1,000 dictionaries")
    def test_grown_after_listing(self):
        self.need_time()
        r1 = self.dir_of("r1", uid=NOBODY, gid=NOBODY)
        r2 = self.dir_of("r2", mode=0o755)
        big = os.path.join(self.dir_of("att", uid=NOBODY, gid=NOBODY), "big.bin")
        write(big, os.urandom(40 << 20))
        os.chown(big, NOBODY, NOBODY)
        preds = []
        for k in range(4):
            name = "app%d.js" % k
            write(os.path.join(r2, name), program(2, n=18000, salt="g%d" % k))
            write(os.path.join(r1, name), program(1, n=18000, salt="g%d" % k))
            os.chown(os.path.join(r1, name), NOBODY, NOBODY)
            preds.append(os.path.join(r1, name))
        grower = subprocess.Popen(SETPRIV + ["/usr/bin/python3", "-c", GROWER, r2, big] + preds,
                                  stdout=subprocess.PIPE, text=True)
        self.addCleanup(grower.kill)
        self.assertEqual(grower.stdout.readline().strip(), "ready")
        man = self.path("m.json")
        rc, out, err, rss, secs = measured(["-j2", "--memory-limit", "200M", "--dictionary-from", r1,
                                            "--manifest", man, r2], timeout=120)
        self.assertEqual(grower.stdout.readline().strip(), "grown")
        self.assertEqual(rc, 0, err)
        self.assertEqual(os.path.getsize(preds[0]), 40 << 20)
        for name, e in by_path(man).items():
            for x in e["deltas"]:
                self.assertEqual(x["skipped"], "changed", (name, x))
                for k in NOT_READ:
                    self.assertNotIn(k, x)
        self.assertLess(rss, 200 << 10, "peak RSS %d KiB over --memory-limit 200M" % rss)

    # --- 5. Django's staticfiles.json, hostile and real ------------------------------

    @full_only("a 64 MiB staticfiles.json")
    def test_large_django_manifest(self):
        self.need_time()
        r1, r2 = self.dir_of("r1"), self.dir_of("r2")
        write(os.path.join(r2, "app.js"), program(2))
        write(os.path.join(r1, "app.js"), program(1))
        target = os.path.join(r1, "staticfiles.json")
        parts, n, k = [b'{"paths": {'], 11, 0
        while n < (64 << 20) - 64:
            e = b'"a%07d":"b",' % k
            parts.append(e)
            n += len(e)
            k += 1
        parts.append(b'"z":"b"}, "version": "1.0"}')
        write(target, b"".join(parts))
        del parts
        self.assertLessEqual(os.path.getsize(target), 64 << 20)
        rc, out, err, rss, secs = measured(["-q", "--formats", "gz", "--memory-limit", "200M",
                                            "--dictionary-from", r1, r2], timeout=120)
        self.assertEqual(rc, 1, err)
        self.assertEqual(err.splitlines(), [
            "precompress: %s: Django staticfiles.json not read: over its share of the memory limit "
            "(a quarter, for all of a run's): its files are paired by name only (memory limit 200.0 MiB)"
            % target])
        if not sanitized_build():
            # A sanitizer's allocator adds redzones to every allocation and
            # holds freed memory in quarantine: its RSS says nothing of ours.
            self.assertLess(rss, 120 << 10, "peak RSS %d KiB" % rss)
            self.assertLess(secs, 15)
        # The pairing by name goes on: app.js has its delta.
        self.assertTrue([p for p in deltas_of(r2) if "/app.js." in p])
        # A real one (20,000 files, 2 MiB) is read, its cost said with the memory figures.
        paths = {"js/mod%05d.js" % i: "js/mod%05d.%s.js" % (i, hashlib.md5(b"%d" % i).hexdigest()[:12])
                 for i in range(20000)}
        write(target, json.dumps({"paths": paths, "version": "1.1", "hash": "0123456789ab"}).encode())
        rc, out, err, rss, secs = measured(["-v", "--formats", "gz", "--memory-limit", "200M",
                                            "--dictionary-from", r1, r2], timeout=120)
        self.assertEqual(rc, 0, err)
        self.assertIn("(earlier releases' listings and Django manifests ", err)
        self.assertLess(rss, 100 << 10, "peak RSS %d KiB" % rss)
        self.assertLess(secs, 15)

    # --- 6. two files with one key ----------------------------------------------------

    def test_ambiguous_key(self):
        r1, r2 = self.dir_of("r1", "js"), self.dir_of("r2", "js")
        old, new = program(1), program(2)
        evil = program(9, salt="evil")
        a = os.path.join(r1, "app.%s.js" % hashlib.md5(old).hexdigest()[:12])
        b = os.path.join(r1, "app.%s.js" % ("e" * 12))
        write(a, old)
        write(b, evil)
        os.utime(b, (4e9, 4e9))  # a mtime in the future: the newest
        write(os.path.join(r2, "app.%s.js" % hashlib.md5(new).hexdigest()[:12]), new)
        man = self.path("m.json")
        r = run(["--formats", "gz", "-v", "--dictionary-from", self.path("r1"), "--manifest", man,
                 self.path("r2")])
        self.assertEqual(r.rc, 0, r)
        e = [x for x in json.loads(read(man))["files"] if x["path"].startswith("js/app.")][0]
        self.assertEqual({x["skipped"] for x in e["deltas"]}, {"ambiguous"}, e)
        self.assertEqual(deltas_of(self.path("r2")), [])
        self.assertIn("ambiguous against", r.out)
        # One of them gone: the other is the predecessor.
        os.unlink(b)
        r = run(["--formats", "gz", "--dictionary-from", self.path("r1"), "--manifest", man,
                 self.path("r2")])
        self.assertEqual(r.rc, 0, r)
        made = [p for p in deltas_of(self.path("r2")) if p.endswith(".dcz")]
        self.assertEqual(len(made), 1)
        self.check_dcz(made[0], a, made[0].rsplit(".", 2)[0])

    # --- 7. names at the limit ---------------------------------------------------------

    def test_long_names(self):
        r1, r2 = self.dir_of("r1"), self.dir_of("r2")
        fits = "n" * (255 - 21 - 3) + ".js"    # NAME.<id>.dcz is 255 bytes
        over = "o" * (255 - 21 - 3 + 1) + ".js"  # one more
        longest = "l" * (255 - 3 - 3) + ".js"  # NAME.gz is 255 bytes
        for name in (fits, over, longest):
            write(os.path.join(r1, name), program(1, salt=name[0]))
            write(os.path.join(r2, name), program(2, salt=name[0]))
        man = self.path("m.json")
        r = run(["--formats", "gz", "-v", "--dictionary-from", r1, "--manifest", man, r2])
        self.assertEqual(r.rc, 0, r)
        by = by_path(man)
        self.assertIn("size", [x for x in by[fits]["deltas"] if x["format"] == "dcz"][0])
        for name in (over, longest):
            self.assertEqual({x["skipped"] for x in by[name]["deltas"]}, {"name"})
            self.assertTrue(os.path.exists(os.path.join(r2, name + ".gz")))
            for k in NOT_READ:
                self.assertNotIn(k, by[name]["deltas"][0])
        made = [p for p in deltas_of(r2) if p.endswith(".dcz")]
        self.assertEqual([os.path.basename(p)[:1] for p in made], ["n"])
        self.check_dcz(made[0], os.path.join(r1, fits), os.path.join(r2, fits))
        # Again: unchanged, its reason kept.
        r = run(["--formats", "gz", "--json", "--dictionary-from", r1, "--manifest", man, r2])
        self.assertEqual(json.loads(r.out)["unchanged"], 3, r)


if __name__ == "__main__":
    main()
