#!/usr/bin/python3
"""End to end: the nginx configuration `precompress server-config nginx` prints loads for
the trees users have, not only small ones: nginx builds a hash of each `map` at load, and
refuses one whose keys do not fit its buckets (`could not build map_hash, you should
increase map_hash_bucket_size`), so the http part must size the hash itself.

Two trees, each a release 1 and a release 2 whose files all changed (Django's hashed names,
`[name].[hash:12].[ext]`), release 2 compressed by precompress with `--dictionary-from`
release 1 and `--manifest` (gz and the dcz deltas), both parts of `server-config nginx
--location /static/` included as printed:

- test_longest_url: a file whose URL (below /static/) is 255 bytes long, beside a short one;
- test_ten_thousand_files: 10,000 hashed files in 100 directories, so 10,000 dictionaries
  and 10,000 Use-As-Dictionary entries.

Each: `nginx -t` accepts the configuration; nginx starts and serves a file's delta (curl,
decoded by zstd with its dictionary) with its Use-As-Dictionary. Printed, not judged: the
wall time of `nginx -t` (the load), the master's resident set after start, the http part's
size.

Skipped, with a message, without nginx, zstd or curl.
"""
import sys

sys.dont_write_bytecode = True

import os
import time

from pctest import PCTestCase, free_port, hashed, main, run, words_data, write
from realproject import (ACCEPT_ALL, available, curl, decode_delta, delta_id, match_fits, match_of,
                         missing, server_config)
from test_delta_serving import Nginx
from test_serving import find_binary

LOCATION = "/static/"


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


class NginxLoad(PCTestCase):
    def setUp(self):
        why = missing("zstd", "curl")
        if not find_binary("nginx"):
            why = "nginx not found (apt-get install nginx)"
        if why:
            self.skipTest(why)
        super().setUp()
        os.chmod(self.tmp, 0o755)

    def releases(self, files):
        """files: [(directory, stem, ext, release 1's bytes, release 2's)]: both releases
        under site1/ and site2/ (their static/), release 2 compressed against release 1.
        Returns the manifest and [(URL, path, bytes, dictionary bytes)] of release 2."""
        out = []
        for rel in (1, 2):
            for d, stem, ext, one, two in files:
                data = one if rel == 1 else two
                name = hashed("%s.%s" % (stem, ext), data)
                path = self.path("site%d" % rel, "static", d, name)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                write(path, data)
                if rel == 2:
                    out.append((LOCATION + (d + "/" if d else "") + name, path, two, one))
        manifest = self.path("precompress.json")
        t = time.monotonic()
        r = run(["-q", "--formats", "gz", "--deltas", "dcz", "--dictionary-from", self.path("site1", "static"),
                 "--manifest", manifest, self.path("site2", "static")], timeout=1800)
        self.assertEqual(r.rc, 0, r)
        print("precompress: %d files and their deltas in %.1f s" % (len(files), time.monotonic() - t))
        return manifest, out

    def load(self, manifest, what):
        """nginx with both parts: `nginx -t` (timed), started; the server."""
        work = self.path("nginx")
        os.makedirs(work)
        http = server_config(self, work, ["nginx", "--part", "http", "--location", LOCATION], manifest,
                             "pc-http.conf")
        loc = server_config(self, work, ["nginx", "--part", "location", "--location", LOCATION], manifest,
                            "pc-location.conf")
        server = Nginx(self, self.path("site2"), work, find_binary("nginx"), free_port(), http, loc)
        t = time.monotonic()
        p = server.configtest()
        took = time.monotonic() - t
        print("%s: nginx -t %.2f s (exit %d), http part %.1f KiB" % (what, took, p.returncode,
                                                                  os.path.getsize(http) / 1024))
        said = p.stdout.decode(errors="replace")
        self.assertEqual(p.returncode, 0, "nginx -t refuses server-config's output for %s:\n%s"
                         % (what, said[-3000:]))
        # Nor a warning that the map's hash is not what it should be ("could not build
        # optimal map_hash, you should increase either map_hash_max_size ...").
        self.assertNotIn("map_hash", said, "nginx -t for %s:\n%s" % (what, said[-3000:]))
        server.start()
        time.sleep(0.5)  # the workers up: the master's resident set as it stays
        print("%s: nginx master's RSS after start %d KiB" % (what, rss_kib(server.proc.pid)))
        return server

    def check_delta(self, server, url, path, data, dictionary):
        r = curl(self, "http://127.0.0.1:%d%s" % (server.port, url),
                 {"Accept-Encoding": ACCEPT_ALL, "Available-Dictionary": available(dictionary)})
        self.assertEqual((r.status, r.get("content-encoding")), (200, "dcz"), r)
        self.assertEqual(r.body, open("%s.%s.dcz" % (path, delta_id(dictionary)), "rb").read())
        self.assertEqual(decode_delta(self, "dcz", r.body, dictionary), data)
        m = match_of(r.get("use-as-dictionary"))
        self.assertTrue(m and match_fits(m, url), r)

    def test_longest_url(self):
        # URL = /static/ + 120 + / + 100 + / + a hashed name, 255 bytes in all.
        d = "a" * 120 + "/" + "b" * 100
        fixed = len(LOCATION) + len(d) + 1 + len(".0123456789ab.js")
        stem = "c" * (255 - fixed)
        one = words_data(20000, seed=7)
        two = one[:10000] + b"/* release 2 */" + one[10000:]
        short = words_data(8000, seed=8)
        manifest, files = self.releases([(d, stem, "js", one, two),
                                         ("js", "app", "js", short, short + b"\n/* 2 */\n")])
        url, path, data, dictionary = files[0]
        self.assertEqual(len(url), 255, url)
        server = self.load(manifest, "a 255-byte URL")
        for f in files:
            self.check_delta(server, *f)

    def test_ten_thousand_files(self):
        corpus = words_data(3 << 20, seed=9)
        files = []
        for i in range(10000):
            body = corpus[i * 300:i * 300 + 1500]
            files.append(("pkg%02d" % (i // 100), "module%04d" % i, "js",
                          b"/* module %d, release 1 */\n" % i + body,
                          b"/* module %d, release 2 */\n" % i + body))
        manifest, out = self.releases(files)
        server = self.load(manifest, "10,000 files")
        for f in (out[0], out[4321], out[-1]):
            self.check_delta(server, *f)


if __name__ == "__main__":
    main()
