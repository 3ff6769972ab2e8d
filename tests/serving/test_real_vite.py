#!/usr/bin/python3
"""End to end on a real Vite app: three `npm run build` releases compressed by the
`postbuild` script docs/frontend.md gives, served by nginx, Apache httpd and Caddy configured
from `precompress server-config ... --location /` as printed, taken by chromium and asked by
curl (tests/serving/realproject.py has the sequence and the checks).

The app is tests/projects/vanilla-app (made by `npm create vite`; its README line says
which create-vite), copied, `npm ci` (the npm registry), and docs/frontend.md's package.json
"scripts" added as they are (read from the doc): prebuild moves dist/ to dist-prev/ (and
dist-prev/ to dist-prev2/), postbuild runs `precompress --dictionary-from dist-prev
--dictionary-from dist-prev2 --manifest precompress.json dist`, with the program under test
first on PATH. Release 1 is the app as generated; release 2 and 3 change src/counter.js and
src/style.css. Every build must exit 0, the first too (no dist-prev yet: a one-line warning
per missing directory), and release 3 has deltas against release 2 and release 1.

The servers: nginx with the doc's `map $uri $pc_expires` (no-cache for the page, a long
lifetime for /assets/), Apache and Caddy with the doc's Cache-Control lines.

Skipped, with a message, without npm, nginx (and its brotli static module), apache2, caddy,
chromium, zstd or curl.
"""
import sys

sys.dont_write_bytecode = True

import os
import re
import shutil

from pctest import main
from realproject import (VITE_TEXT, RealProjectCase, Release, ViteApp, delta_id, missing,
                         start_apache, start_caddy, start_nginx)

# docs/frontend.md's nginx lines around the location part.
NGINX_HTTP = """map $uri $pc_expires {
    default    epoch;
    ~^/assets/ max;
}
"""
NGINX_SERVER = """root "%(site)s";
expires $pc_expires;
brotli_static on;
include %(loc)s;
"""
CACHE = ("no-cache", "max-age=31536000, immutable")


class RealVite(RealProjectCase):
    def setUp(self):
        why = missing("npm", "nginx", "apache2", "caddy", "chromium", "zstd", "curl")
        if why:
            self.skipTest(why)
        super().setUp()
        self.app = ViteApp(self, self.path("app"))

    def setups(self):
        dist = self.app.dist
        return {
            "nginx": lambda t, w, p, m: start_nginx(t, w, p, m, dist, "/", server=NGINX_SERVER,
                                                    http=NGINX_HTTP),
            "apache": lambda t, w, p, m: start_apache(t, w, p, m, dist, "/", static="/assets/",
                                                      cache=CACHE),
            "caddy": lambda t, w, p, m: start_caddy(t, w, p, m, dist, "/", static="/assets/",
                                                    cache=CACHE),
        }

    def build(self, n):
        app = self.app
        if n == 1:
            self.timed("npm ci", app.create)
        p = self.timed("npm run build %d" % n, app.release, n)
        err = p.stderr.decode(errors="replace")
        print("release %d: npm run build exit %d; stderr:\n%s" % (n, p.returncode, err.rstrip()))
        with self.subTest(release=n, check="npm run build exits 0"):
            self.assertEqual(p.returncode, 0, "npm run build failed:\n--- stdout\n%s\n--- stderr\n%s"
                             % (p.stdout.decode(errors="replace")[-3000:], err[-3000:]))
        missing_dirs = [d for d in ("dist-prev", "dist-prev2") if n <= {"dist-prev": 1, "dist-prev2": 2}[d]]
        with self.subTest(release=n, check="one line per missing --dictionary-from"):
            for d in missing_dirs:
                said = [l for l in err.splitlines() if re.search(r"\b%s\b" % re.escape(d), l)
                        and "precompress" in l]
                self.assertEqual(len(said), 1, "precompress's lines about the missing %s: %r" % (d, said))
        # What it wrote, whatever its exit status: the rest is checked on it.
        self.assertTrue(os.path.isfile(os.path.join(app.dist, "index.html")), "vite build wrote no dist/")
        self.assertTrue(os.path.isfile(app.manifest), "postbuild wrote no precompress.json")
        manifest = self.path("precompress-r%d.json" % n)
        shutil.copyfile(app.manifest, manifest)
        files = app.assets()
        earlier = [] if n == 1 else [self.releases[n - 1]] + ([self.releases[1]] if n == 3 else [])
        with self.subTest(release=n, check="deltas"):
            for key, (url, path) in files.items():
                for r in earlier:
                    delta = "%s.%s.dcz" % (path, delta_id(r.files[key][2]))
                    self.assertTrue(os.path.isfile(delta), "%s: no delta against release %d's %s"
                                    % (delta, r.number, r.files[key][0]))
                if n == 1:
                    self.assertEqual([f for f in os.listdir(os.path.dirname(path)) if f.endswith((".dcz", ".dcb"))],
                                     [], "deltas with no release before")
        release = Release(n, manifest, files, VITE_TEXT[n])
        self.releases[n] = release
        return release

    def test_three_releases(self):
        self.releases = {}
        self.check_releases()
        self.print_timings()


if __name__ == "__main__":
    main()
