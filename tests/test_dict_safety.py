#!/usr/bin/python3
"""An earlier release is input too (docs/deltas.md): its tree may be another
account's. Each attack made for real, the runs root's:

- a 64 MiB staticfiles.json in DIR: refused in one line under --memory-limit
  200M, in bounded time and RSS; a real-sized one read, its cost in -v.
"""
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

from pctest import PROGRAM, PCTestCase, child_env, main, read, write

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)


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


def deltas_of(root):
    return sorted(os.path.join(d, n) for d, _, names in os.walk(root)
                  for n in names if n.endswith((".dcz", ".dcb")))


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
    def need_time(self):
        if not os.access("/usr/bin/time", os.X_OK):
            self.skipTest("GNU time (/usr/bin/time) is missing: no peak RSS to measure")

    def dir_of(self, *parts, uid=0, gid=0, mode=0o755):
        p = self.path(*parts)
        os.makedirs(p, exist_ok=True)
        os.chown(p, uid, gid)
        os.chmod(p, mode)
        return p

    # --- 5. Django's staticfiles.json, hostile and real ------------------------------

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


if __name__ == "__main__":
    main()
