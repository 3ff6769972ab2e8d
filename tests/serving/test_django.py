#!/usr/bin/python3
"""End to end: the Django recipe of examples/django/, served by whitenoise.

A fresh `startproject` project gets examples/django/settings_static.py appended
to its settings.py as it is (ManifestStaticFilesStorage, WhiteNoiseMiddleware),
plus what a production deploy sets (DEBUG False, ALLOWED_HOSTS) and an asset
dir of the project's own (a CSS file that references a PNG, and a file too
small to compress). examples/django/build-static.sh runs as it is
(`manage.py collectstatic --noinput`, then `precompress staticfiles/`).

Then a fresh Python process (whitenoise looks for the .br/.gz files once, at
startup) asks Django's test client for every file of STATIC_ROOT, original and
hashed names alike, under Accept-Encoding br, gzip, none and a browser's
"gzip, deflate, br". Each response must come from whitenoise, be 200 with the
Content-Encoding of the output that exists and was accepted (the smallest
when both are), a body that is precompress's output byte for byte and decodes
to the source, Vary: Accept-Encoding whenever there is an output, the same
Content-Type under every encoding, Content-Length, Last-Modified the source's
mtime, and Cache-Control immutable exactly for the hashed names. Files that
precompress left alone (.png, .woff, a file under the ratio) are served as
they are even to Accept-Encoding br.

A second test follows the README's incremental recipe: two deploys with
`precompress --manifest precompress-manifest.json staticfiles/`, the project's
CSS edited in between, and the same checks after each.

Needs Debian's python3-django and python3-whitenoise; skipped with a message
when either is missing (.ci/deps installs both).
"""
import sys

sys.dont_write_bytecode = True

import email.utils
import importlib.util
import json
import os
import re
import struct
import subprocess
import urllib.parse
import zlib

from pctest import PROGRAM, PCTestCase, decode, fsb, is_own_output, main, run

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)  # no cache from the environment changes the counts

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples", "django")
SNIPPET = os.path.join(EXAMPLE, "settings_static.py")
SCRIPT = os.path.join(EXAMPLE, "build-static.sh")
README = os.path.join(EXAMPLE, "README.md")
# The README's incremental recipe, run from the directory of manage.py.
INCREMENTAL = ["--manifest", "precompress-manifest.json", "staticfiles/"]

# Accept-Encoding values requested for every file (None: no header at all).
ACCEPT = ("br", "gzip", None, "gzip, deflate, br")
SUFFIX = {"br": ".br", "gzip": ".gz"}
FMT = {"br": "br", "gzip": "gz"}
KNOWN_TYPES = {
    ".css": ("text/css",),
    ".js": ("application/javascript", "text/javascript"),
    ".json": ("application/json",),
    ".svg": ("image/svg+xml",),
    ".png": ("image/png",),
    ".woff": ("font/woff", "application/font-woff"),
}
CHECK_TIMEOUT = 120

COUNTS = []  # one line per serving check, printed at the end


def tearDownModule():
    for line in COUNTS:
        print(line)
    sys.stdout.flush()


def have(module):
    return importlib.util.find_spec(module) is not None


# ----------------------------------------------------------------------------
# The client process: `test_django.py --client PROJECT OUTDIR`, requests on stdin
# ----------------------------------------------------------------------------

def client_main(project, outdir):
    """Serve the requests read from stdin through Django's test client; results as JSON on stdout."""
    os.chdir(project)
    sys.path.insert(0, project)
    os.environ["DJANGO_SETTINGS_MODULE"] = "mysite.settings"
    import importlib.metadata

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.staticfiles.storage import staticfiles_storage
    from django.test import Client

    job = json.load(sys.stdin)
    out = {
        "django": django.get_version(),
        "whitenoise": importlib.metadata.version("whitenoise"),
        "debug": settings.DEBUG,
        "urls": {name: staticfiles_storage.url(name) for name in job["names"]},
        "responses": [],
    }
    storage = staticfiles_storage._wrapped  # set up by the url() calls
    out["storage"] = type(storage).__module__ + "." + type(storage).__name__
    client = Client()
    for i, (path, accept) in enumerate(job["requests"]):
        extra = {"HTTP_ACCEPT_ENCODING": accept} if accept is not None else {}
        r = client.get(path, **extra)
        body = b"".join(r.streaming_content) if r.streaming else r.content
        r.close()
        with open(os.path.join(outdir, "%d" % i), "wb") as f:
            f.write(body)
        out["responses"].append({"status": r.status_code, "class": type(r).__name__,
                                 "headers": {k.lower(): v for k, v in r.items()}})
    json.dump(out, sys.stdout)


# ----------------------------------------------------------------------------
# The project
# ----------------------------------------------------------------------------

def png(width=16, height=16):
    """A small valid PNG (RGB gradient)."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + b"".join(bytes((x * 16, y * 16, 128)) for x in range(width))
                    for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def app_css(version):
    rules = "".join(".c%d { margin: %dpx; padding: %dpx %dpx; color: #%06x; }\n"
                    % (i, i % 7, i % 5, i % 3, (i * 2654435761) & 0xFFFFFF) for i in range(120))
    return ("/* app.css, version %d */\nbody { background: url(\"logo.png\") no-repeat; }\n%s"
            % (version, rules)).encode()


# Too small to compress: 5 bytes give a .gz of 25 and a .br of 9 (ratio).
TINY = b"x=1;\n"


class DjangoRecipe(PCTestCase):
    def setUp(self):
        if not have("django"):
            self.skipTest("python3-django is not installed (apt-get install python3-django)")
        if not have("whitenoise"):
            self.skipTest("python3-whitenoise is not installed (apt-get install python3-whitenoise)")
        super().setUp()
        self.env = dict(os.environ)
        self.env.pop("UV_THREADPOOL_SIZE", None)
        self.env["PYTHON"] = sys.executable  # Debian's python3, the one with django
        self.env["PRECOMPRESS"] = PROGRAM

    def sh(self, cmd, cwd, what):
        p = subprocess.run(cmd, cwd=cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
        self.assertEqual(p.returncode, 0, "%s failed (exit %s):\n--- stdout\n%s--- stderr\n%s"
                         % (what, p.returncode, p.stdout.decode(errors="replace")[-3000:],
                            p.stderr.decode(errors="replace")[-3000:]))
        return p

    def make_project(self):
        project = self.path("project")
        os.mkdir(project)
        self.sh([sys.executable, "-m", "django", "startproject", "mysite", project], self.tmp,
                "django-admin startproject")
        with open(SNIPPET) as f:
            snippet = f.read()
        with open(os.path.join(project, "mysite", "settings.py"), "a") as f:
            f.write("\n# ---- examples/django/settings_static.py, as it is\n")
            f.write(snippet)
            f.write("\n# ---- test_django.py: a production deploy, with assets of its own\n"
                    "DEBUG = False\n"
                    "ALLOWED_HOSTS = [\"testserver\"]\n"
                    "STATICFILES_DIRS = [BASE_DIR / \"assets\"]\n")
        assets = os.path.join(project, "assets", "site")
        os.makedirs(assets)
        for name, data in (("app.css", app_css(1)), ("logo.png", png()), ("tiny.js", TINY)):
            with open(os.path.join(assets, name), "wb") as f:
                f.write(data)
        return project

    def collectstatic(self, project):
        self.sh([sys.executable, "manage.py", "collectstatic", "--noinput"], project, "collectstatic")

    # ------------------------------------------------------------------------

    def check_served(self, project, label, stale=()):
        """Every file of STATIC_ROOT under every Accept-Encoding, through whitenoise.

        stale: hashed names an earlier collectstatic left behind (not in the manifest now).
        """
        root = os.path.join(project, "staticfiles")
        broot = fsb(root)
        with open(os.path.join(root, "staticfiles.json")) as f:
            paths = json.load(f)["paths"]
        files = []
        for dirpath, dirnames, filenames in os.walk(root):
            for n in filenames:
                rel = os.path.relpath(os.path.join(dirpath, n), root)
                if not is_own_output(broot, fsb(rel)):
                    files.append(rel)
        files.sort()
        # collectstatic with ManifestStaticFilesStorage: originals, hashed copies and the manifest
        self.assertEqual(set(files), set(paths) | set(paths.values()) | {"staticfiles.json"} | set(stale),
                         "STATIC_ROOT is not what ManifestStaticFilesStorage writes")
        for name in ("admin/css/base.css", "admin/js/core.js", "admin/img/icon-yes.svg",
                     "site/app.css", "site/logo.png", "site/tiny.js"):
            self.assertIn(name, paths)
        hashed = set(paths.values())

        requests = [("/static/" + urllib.parse.quote(rel), accept) for rel in files for accept in ACCEPT]
        names = sorted(paths)
        outdir = self.path("responses-%s" % label.replace(" ", "-"))
        os.mkdir(outdir)
        try:
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--client", project, outdir],
                               input=json.dumps({"names": names, "requests": requests}).encode(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=self.env,
                               timeout=CHECK_TIMEOUT)
        except subprocess.TimeoutExpired as ex:
            raise AssertionError("the Django client process did not finish in %ds" % CHECK_TIMEOUT) from ex
        self.assertEqual(p.returncode, 0, "the Django client process failed:\n%s"
                         % p.stderr.decode(errors="replace")[-5000:])
        res = json.loads(p.stdout)
        self.assertFalse(res["debug"])
        self.assertEqual(res["storage"], "django.contrib.staticfiles.storage.ManifestStaticFilesStorage")
        self.versions = (res["django"], res["whitenoise"])
        # {% static %} links to the hashed names
        for name in names:
            self.assertEqual(res["urls"][name], "/static/" + urllib.parse.quote(paths[name]),
                             "staticfiles_storage.url(%r)" % name)

        used = {"br": 0, "gzip": 0, None: 0}
        left_alone = []
        for i, ((url, accept), resp) in enumerate(zip(requests, res["responses"])):
            rel = urllib.parse.unquote(url[len("/static/"):])
            full = os.path.join(root, rel)
            with self.subTest(label=label, path=rel, accept=accept or "(none)"):
                where = "%s: GET %s, Accept-Encoding: %s" % (label, url, accept or "(none)")
                h = resp["headers"]
                self.assertEqual(resp["status"], 200, "%s: headers %r" % (where, h))
                self.assertEqual(resp["class"], "WhiteNoiseFileResponse", "%s: not served by whitenoise" % where)
                with open(full, "rb") as f:
                    src = f.read()
                with open(os.path.join(outdir, "%d" % i), "rb") as f:
                    body = f.read()

                existing = {enc: os.path.getsize(full + suf) for enc, suf in SUFFIX.items()
                            if os.path.isfile(full + suf)}
                if not existing and accept == ACCEPT[0]:
                    left_alone.append(rel)
                # whitenoise: the smallest file the client accepts (identity always is)
                offered = [(len(src), 0, None)]
                for n, enc in enumerate(("gzip", "br"), 1):  # ties: whitenoise's order
                    if enc in existing and accept and re.search(r"\b%s\b" % enc, accept):
                        offered.append((existing[enc], n, enc))
                want = min(offered)[2]
                got = h.get("content-encoding")
                self.assertEqual(got, want, "%s: Content-Encoding %r, expected %r (outputs: %s)"
                                 % (where, got, want, sorted(existing) or "none"))
                used[want] += 1
                if want:
                    with open(full + SUFFIX[want], "rb") as f:
                        self.assertEqual(body, f.read(), "%s: body is not precompress's %s" % (where, SUFFIX[want]))
                    decoded = decode(FMT[want], os.path.join(outdir, "%d" % i))
                else:
                    decoded = body
                self.assertEqual(decoded, src, "%s: body does not decode to the source (%d vs %d bytes)"
                                 % (where, len(decoded), len(src)))
                self.assertEqual(int(h.get("content-length", -1)), len(body), "%s: Content-Length" % where)

                vary = [v.strip().lower() for v in h.get("vary", "").split(",") if v.strip()]
                if existing:
                    self.assertIn("accept-encoding", vary, "%s: no Vary: Accept-Encoding (headers %r)" % (where, h))
                else:
                    self.assertNotIn("accept-encoding", vary, "%s: Vary without outputs" % where)

                ct = h.get("content-type", "")
                base = ct.split(";", 1)[0].strip().lower()
                ext = os.path.splitext(rel)[1].lower()
                if ext in KNOWN_TYPES:
                    self.assertIn(base, KNOWN_TYPES[ext], "%s: Content-Type %r" % (where, ct))
                self.assertNotIn("gzip", base)
                self.assertNotIn("brotli", base)

                lm = h.get("last-modified")
                self.assertIsNotNone(lm, "%s: no Last-Modified" % where)
                self.assertEqual(int(email.utils.parsedate_to_datetime(lm).timestamp()), int(os.stat(full).st_mtime),
                                 "%s: Last-Modified %r is not the source's mtime" % (where, lm))

                cc = h.get("cache-control", "")
                if rel in hashed:
                    self.assertIn("immutable", cc, "%s: hashed name not immutable: %r" % (where, cc))
                elif rel not in stale:  # whitenoise does not call an old hashed name immutable
                    self.assertNotIn("immutable", cc, "%s: original name immutable: %r" % (where, cc))

        # Types must not change with the encoding.
        by_file = {}
        for (url, accept), resp in zip(requests, res["responses"]):
            by_file.setdefault(url, set()).add(resp["headers"].get("content-type"))
        for url, types in by_file.items():
            self.assertEqual(len(types), 1, "%s: %s: Content-Type differs between encodings: %s" % (label, url, types))

        # precompress left alone exactly the .png, the .woff fonts of Django < 4 (extension) and tiny.js (ratio),
        # original and hashed names, and wrote both outputs for everything else; those are served
        # as they are even to Accept-Encoding: br (checked above).
        alone = {rel for rel in files if rel.endswith((".png", ".woff")) or os.path.basename(rel).startswith("tiny.")}
        self.assertEqual(sorted(left_alone), sorted(alone), "%s: files without outputs" % label)
        for name in ("site/logo.png", "site/tiny.js"):
            self.assertTrue({name, paths[name]} <= alone, name)
        for rel in files:
            if rel not in alone:
                self.assertTrue(all(os.path.isfile(os.path.join(root, rel + suf)) for suf in SUFFIX.values()),
                                "%s: %s lacks a .br or .gz" % (label, rel))
        self.assertGreater(used["br"], 0)
        self.assertGreater(used["gzip"], 0)
        COUNTS.append("django %s (Django %s, whitenoise %s): %d files (%d names, %d hashed, %d stale hashed, "
                      "staticfiles.json), %d without outputs; %d requests checked: %d br, %d gzip, %d identity"
                      % (label, res["django"], res["whitenoise"], len(files), len(paths), len(hashed), len(stale),
                         len(left_alone), len(requests), used["br"], used["gzip"], used[None]))
        return paths

    # ------------------------------------------------------------------------

    def test_recipe(self):
        project = self.make_project()
        p = self.sh([SCRIPT], project, "examples/django/build-static.sh")
        self.assertIn(b"precompress:", p.stderr, "no summary line from precompress")
        paths = self.check_served(project, "build-static.sh")
        for name in ("admin/css/base.css", "site/app.css"):  # the CSS has its url() rewritten
            for rel in (name, paths[name]):
                full = os.path.join(project, "staticfiles", rel)
                self.assertTrue(os.path.isfile(full + ".br") and os.path.isfile(full + ".gz"), rel)
        with open(os.path.join(project, "staticfiles", paths["site/app.css"]), "rb") as f:
            self.assertIn(paths["site/logo.png"].split("/")[-1].encode(), f.read())

    def test_readme_shows_what_is_tested(self):
        """The README shows the settings and commands these tests run, as they are."""
        with open(README) as f:
            readme = f.read()
        with open(SNIPPET) as f:
            snippet = f.read()
        self.assertIn(snippet[snippet.index("import django"):], readme, "README differs from settings_static.py")
        with open(SCRIPT) as f:
            commands = [line for line in f.read().splitlines() if line and not line.startswith(("#", "set "))]
        self.assertEqual(len(commands), 2, commands)
        self.assertIn("\n".join(commands) + "\n", readme, "README differs from build-static.sh")
        self.assertIn("\nprecompress " + " ".join(INCREMENTAL) + "\n", readme,
                      "the README's incremental command is not the one test_incremental runs")

    def test_incremental(self):
        project = self.make_project()
        # deploy 1
        self.collectstatic(project)
        r = run(INCREMENTAL, cwd=project)
        self.assertEqual(r.rc, 0, r)
        self.assertTrue(os.path.isfile(os.path.join(project, "precompress-manifest.json")))
        first = self.check_served(project, "deploy 1")

        # deploy 2: the project's CSS changed (a newer mtime, whole seconds: collectstatic
        # compares them without microseconds)
        src = os.path.join(project, "assets", "site", "app.css")
        with open(src, "wb") as f:
            f.write(app_css(2))
        later = os.stat(os.path.join(project, "staticfiles", "site", "app.css")).st_mtime + 5
        os.utime(src, (later, later))
        self.collectstatic(project)
        r = run(["--json"] + INCREMENTAL, cwd=project)  # the counts: --json
        self.assertEqual(r.rc, 0, r)
        s = r.summary()
        self.assertGreater(s["unchanged"], 100, "deploy 2 should find most files unchanged: %s" % s)
        second = self.check_served(project, "deploy 2", stale=[first["site/app.css"]])
        self.assertNotEqual(first["site/app.css"], second["site/app.css"], "the edit did not change the hash")
        # the new hashed CSS got its outputs; the old one is still there, still served compressed
        for rel in (first["site/app.css"], second["site/app.css"]):
            full = os.path.join(project, "staticfiles", rel)
            self.assertTrue(os.path.isfile(full + ".br") and os.path.isfile(full + ".gz"), rel)
        COUNTS.append("django deploy 2: %d files, %d compressed, %d unchanged, %d skipped, %d failed"
                      % (s["files"], s["compressed"], s["unchanged"], sum(s["skipped"].values()), s["failed"]))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--client"]:
        client_main(sys.argv[2], sys.argv[3])
    else:
        main()
