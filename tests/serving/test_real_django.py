#!/usr/bin/python3
"""End to end on a real Django site: three collectstatic releases with
precompress.django.CompressedManifestStaticFilesStorage and PRECOMPRESS_DELTAS, served by
nginx, Apache httpd and Caddy configured from `precompress server-config` as printed, taken
by chromium and asked by curl (tests/serving/realproject.py has the sequence and the checks).

The site (realproject.DjangoSite): `django-admin startproject` with Debian's python3 and
Django 3.2, the admin, rest_framework, debug_toolbar and django_extensions (their static
files, among them the admin's select2 i18n files, whose URLs are among the longest), and an
app of its own, `shop`, whose app.js and style.css change between releases; its page is
what its view renders (Django's test client), saved as the server's index.html.
PRECOMPRESS_MANIFEST makes the storage write a precompress manifest rooted at STATIC_ROOT,
which server-config reads.

Release 2's deltas are against release 1 in place (Django keeps the old hashed files in
STATIC_ROOT); release 3's against release 2 in place and against a copy of release 1's
STATIC_ROOT (PRECOMPRESS_DICTIONARY_DIRS), so each changed file has two deltas.

Served four ways: nginx with `root` (STATIC_ROOT's parent) and `--location /static/`;
nginx with the location part's `--alias STATIC_ROOT/` (the page from another root); Apache
with `Alias /static/ STATIC_ROOT/` and `server-config apache --alias`; Caddy. nginx -t,
apache2 -t and caddy validate must accept server-config's output.

After each collectstatic, `precompress --check --exclude staticfiles.json STATIC_ROOT` (as
docs/django.md says to check what the storage wrote: whitenoise does not compress
staticfiles.json) exits 0 and lists nothing; at the end a plain `precompress STATIC_ROOT`
removes no delta.

Skipped, with a message, without python3-django, python3-whitenoise, the three apps
(python3-djangorestframework, python3-django-debug-toolbar, python3-django-extensions),
nginx (and its brotli static module), apache2, caddy, chromium, zstd or curl: .ci/deps
test installs them all.
"""
import sys

sys.dont_write_bytecode = True

import json
import os
import shutil
import subprocess

from pctest import main, run
from realproject import (DEBIAN_PYTHON, DJANGO_APPS, PACKAGE_DIR, DjangoSite, RealProjectCase,
                         Release, delta_id, missing, shop_text, start_apache, start_caddy,
                         start_nginx)

SHOP = ("app.js", "style.css")
# One of the longest URLs of Django's admin (with its hash: 60 bytes below /static/).
LONG_NAME = "admin/js/vendor/select2/i18n/zh-TW.js"


def missing_modules():
    modules = dict({"django": "python3-django", "whitenoise": "python3-whitenoise"}, **DJANGO_APPS)
    code = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec(sys.argv[1]) else 1)"
    for module, package in modules.items():
        if subprocess.run([DEBIAN_PYTHON, "-c", code, module]).returncode != 0:
            return "%s is not installed for %s (apt-get install %s)" % (module, DEBIAN_PYTHON, package)
    return None


def deltas_in(root):
    out = set()
    for dirpath, _, names in os.walk(root):
        out.update(os.path.relpath(os.path.join(dirpath, n), root) for n in names
                   if n.endswith((".dcb", ".dcz")))
    return out


class RealDjango(RealProjectCase):
    def setUp(self):
        why = missing_modules() or missing("nginx", "apache2", "caddy", "chromium", "zstd", "curl")
        if why:
            self.skipTest(why)
        super().setUp()
        self.site = DjangoSite(self, self.path("site"))
        self.release1 = self.path("releases", "1", "static")  # release 1's STATIC_ROOT, kept

    def setups(self):
        site = self.site
        return {
            "nginx-root": lambda t, w, p, m: start_nginx(t, w, p, m, site.public, "/static/"),
            "nginx-alias": lambda t, w, p, m: start_nginx(t, w, p, m, site.html, "/static/",
                                                          alias=site.static_root + "/"),
            "apache-alias": lambda t, w, p, m: start_apache(t, w, p, m, site.html, "/static/",
                                                            alias=site.static_root),
            "caddy": lambda t, w, p, m: start_caddy(t, w, p, m, site.public, "/static/"),
        }

    def build(self, n):
        site = self.site
        if n == 1:
            site.create()
        earlier = [] if n == 1 else [self.releases[n - 1]] + ([self.releases[1]] if n == 3 else [])
        if n == 3:
            site.settings("PRECOMPRESS_DICTIONARY_DIRS = [%r]\n" % self.release1)
        self.timed("collectstatic %d" % n, site.release, n)
        paths = site.hashed()
        if n == 1:
            shutil.copytree(site.static_root, self.release1, symlinks=True)
        files = {k: ("/static/" + paths["shop/" + k], os.path.join(site.static_root, paths["shop/" + k]))
                 for k in SHOP}
        manifest = self.path("precompress-r%d.json" % n)
        with self.subTest(release=n, check="PRECOMPRESS_MANIFEST"):
            self.assertTrue(os.path.isfile(site.manifest),
                            "collectstatic wrote no manifest at PRECOMPRESS_MANIFEST (%s)" % site.manifest)
            shutil.copyfile(site.manifest, manifest)
            with open(manifest) as f:
                m = json.load(f)
            # One root (a manifest names its roots only when there are several): STATIC_ROOT,
            # each file by its path below it.
            self.assertNotIn("roots", m, "want one root, STATIC_ROOT: %r" % m.get("roots", [])[:5])
            recorded = {e["path"] for e in m["files"]}
            for path in recorded:
                self.assertTrue(os.path.isfile(os.path.join(site.static_root, path)), path)
            for name in [LONG_NAME] + ["shop/" + k for k in SHOP]:
                self.assertIn(paths[name], recorded, "the manifest lacks %s's hashed name" % name)
            if n > 1:
                for k in SHOP:
                    rec = [e for e in m["files"] if e["path"] == paths["shop/" + k]][0]
                    kept = sorted(d["sha256"][:16] for d in rec.get("deltas", []) if "size" in d)
                    want = sorted({delta_id(r.files[k][2]) for r in earlier})
                    self.assertEqual(sorted(set(kept)), want, "%s: the manifest's deltas %r" % (k, rec))
        with self.subTest(release=n, check="deltas"):
            for k in SHOP:
                for r in earlier:  # in place: against the previous hashed file, still there
                    self.assertTrue(os.path.isfile(r.files[k][1]), "Django removed %s" % r.files[k][1])
                    delta = "%s.%s.dcz" % (files[k][1], delta_id(r.files[k][2]))
                    self.assertTrue(os.path.isfile(delta), "%s: no delta against release %d's"
                                    % (delta, r.number))
        c = self.timed("--check", run, ["--check", "--exclude", "staticfiles.json", site.static_root],
                       timeout=900)
        with self.subTest(release=n, check="precompress --check STATIC_ROOT lists nothing unwanted"):
            unwanted = [l for l in c.out_lines if l.startswith("unwanted")]
            self.assertEqual(unwanted, [], "a plain --check calls the storage's outputs unwanted")
        with self.subTest(release=n, check="precompress --check STATIC_ROOT exits 0, lists nothing"):
            self.assertEqual((c.rc, c.out_lines), (0, []), c)
        release = Release(n, manifest, files, shop_text(n))
        self.releases[n] = release
        return release

    def test_three_releases(self):
        self.releases = {}
        self.check_releases()
        root = self.site.static_root
        with self.subTest(check="a plain precompress STATIC_ROOT"):
            before = deltas_in(root)
            self.assertTrue(before)
            r = self.timed("plain run", run, [root], timeout=900)
            self.assertEqual(sorted(before - deltas_in(root)), [], "a plain run removed these deltas")
            self.assertEqual(r.rc, 0, r)
        files = sum(len(n) for _, _, n in os.walk(root))
        print("STATIC_ROOT: %d files, %d deltas; Django apps %s; the package from %s"
              % (files, len(deltas_in(root)), ", ".join(DJANGO_APPS), PACKAGE_DIR))
        self.print_timings()


if __name__ == "__main__":
    main()
