"""Real projects, end to end: what tests/serving/test_real_django.py and test_real_vite.py share.

Each of those tests builds a project the way its users make one (`django-admin startproject`
with real apps, `npm create vite`), three releases of it in a row, each compressed as its
users compress it (the Django storage, a `postbuild` script), and serves every release with
nginx, Apache httpd and Caddy configured from `precompress server-config`'s output as it is
printed. RealProjectCase.check_releases runs the same sequence for both:

  release 1  each server: its configuration accepted (nginx -t, apache2 -t, caddy validate);
             the changed files' Use-As-Dictionary (kept, and checked against the next
             releases' URLs once they exist) and Cache-Control; chromium (one profile per
             server, one origin per server) loads the page.
  release 2  each server on the same port: chromium loads the page with the same profile; the
             access log shows Available-Dictionary and dcb or dcz for release 2's changed
             files, and the page shows what release 2's script does.
  release 3  (its deltas against release 2 AND release 1) each server: curl, the real binary,
             sends every kind of request a client may send for each changed file
             (check_codings), and every delta body is decoded with its dictionary by the
             real decoder (zstd; tests/unit/dcb_decode.c's program for .dcb) to the file.

The servers are test_delta_serving.py's classes (their configuration around the generated
parts), the browser its chromium_dom().
"""
import sys

sys.dont_write_bytecode = True

import base64
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import time

from pctest import PROGRAM, SRC_ROOT, PCTestCase, decode, free_port, read, run, write
from test_delta_serving import (ACCEPT_ALL, MAGIC_DCB, MAGIC_DCZ, Apache, Caddy, Nginx,
                                apache_binary, chromium_binary, chromium_dom, chromium_first_visit)
from test_serving import accepted, find_binary, nginx_brotli_module

HERE = os.path.dirname(os.path.abspath(__file__))
# Debian's interpreter, never a python3 found on PATH (pyenv's has no Django).
DEBIAN_PYTHON = "/usr/bin/python3"
# The Python package, used from the source tree (PYTHONPATH): no pip build.
PACKAGE_DIR = os.path.join(SRC_ROOT, "python")

UNKNOWN_DICTIONARY = ":%s:" % base64.b64encode(b"\1" * 32).decode()


def sha256(data):
    return hashlib.sha256(data).digest()


def available(data):
    """The Available-Dictionary value of a client holding `data`."""
    return ":%s:" % base64.b64encode(sha256(data)).decode()


def delta_id(data):
    """The <id> of the deltas against `data` in their names (FILE.<id>.dcz)."""
    return sha256(data).hex()[:16]


# ----------------------------------------------------------------------------
# What must be installed
# ----------------------------------------------------------------------------

def missing(*names):
    """A skip message for the first program of `names` that is not installed, else None.
    .ci/deps test installs every one: in CI a skip is a failure of ours."""
    for name in names:
        if name == "nginx":
            binary = find_binary("nginx")
            if not binary:
                return "nginx not found (apt-get install nginx)"
            if not nginx_brotli_module(binary):
                return "nginx's brotli static module not found (apt-get install libnginx-mod-http-brotli-static)"
        elif name == "apache2":
            binary, why = apache_binary()
            if not binary:
                return why
        elif name == "caddy":
            if not find_binary("caddy"):
                return "caddy not found (apt-get install caddy)"
        elif name == "chromium":
            if not chromium_binary():
                return "chromium not found (apt-get install chromium)"
        elif name == "npm":
            if not (shutil.which("npm") and shutil.which("node")):
                return "npm or node not found (Node 20 and npm: see tests/README.md)"
        elif name in ("zstd", "curl"):
            if not shutil.which(name):
                return "%s not found (apt-get install %s)" % (name, name)
        else:
            raise ValueError(name)
    return None


def program_dir(test):
    """A directory whose `precompress` is the program under test, to put first on PATH:
    what the projects' scripts run is never what the machine has installed."""
    d = test.path("bin")
    os.makedirs(d, exist_ok=True)
    link = os.path.join(d, "precompress")
    if not os.path.lexists(link):
        os.symlink(os.path.abspath(PROGRAM), link)
    return d


def sh(test, cmd, cwd, env=None, what=None, ok=True, timeout=900):
    """Runs cmd (a list); its CompletedProcess. ok: the test fails unless it exits 0."""
    p = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    if ok:
        test.assertEqual(p.returncode, 0, "%s failed (exit %d):\n--- stdout\n%s\n--- stderr\n%s" % (
            what or " ".join(cmd), p.returncode, p.stdout.decode(errors="replace")[-4000:],
            p.stderr.decode(errors="replace")[-4000:]))
    return p


# ----------------------------------------------------------------------------
# curl
# ----------------------------------------------------------------------------

class Response:
    def __init__(self, status, headers, body, raw):
        self.status = status
        self.headers = headers  # lower-case name -> value (a field sent twice: joined by ", ")
        self.body = body
        self.raw = raw

    def get(self, name):
        return self.headers.get(name)

    def vary(self):
        return [v.strip().lower() for v in (self.headers.get("vary") or "").split(",") if v.strip()]

    def __repr__(self):
        return "<%s%s>" % (self.raw, "%d body bytes" % len(self.body))


def curl(test, url, headers=None, method="GET"):
    """The real curl, HTTP/1.1, nothing decoded (no --compressed): status, headers, body."""
    head, body = test.path("curl.head"), test.path("curl.body")
    for f in (head, body):
        if os.path.exists(f):
            os.unlink(f)
    cmd = ["curl", "-sS", "--http1.1", "--max-time", "30", "-D", head, "-o", body]
    if method == "HEAD":
        cmd.append("-I")
    elif method != "GET":
        cmd += ["-X", method]
    for k, v in (headers or {}).items():
        cmd += ["-H", "%s: %s" % (k, v)]
    p = subprocess.run(cmd + [url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=60)
    test.assertEqual(p.returncode, 0, "curl %s: %s" % (url, p.stderr.decode(errors="replace")))
    raw = read(head).decode("latin-1")
    block = [b for b in re.split(r"\r?\n\r?\n", raw) if b.strip()][-1]  # past any 1xx
    lines = block.splitlines()
    status = int(lines[0].split()[1])
    hs = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        k, v = k.strip().lower(), v.strip()
        hs[k] = hs[k] + ", " + v if k in hs else v
    data = b"" if method == "HEAD" else (read(body) if os.path.exists(body) else b"")
    return Response(status, hs, data, block + "\n")


# ----------------------------------------------------------------------------
# Deltas decoded
# ----------------------------------------------------------------------------

def decode_delta(test, coding, body, dictionary):
    """A .dcz or .dcb body decoded with its dictionary by the real decoder: zstd past the
    40-byte dcz header, tests/unit/dcb_decode.c's program (PC_DCB_DECODE; brotli >= 1.1)
    for dcb, which checks its header itself."""
    d = test.path("dictionary.bin")
    write(d, dictionary)
    if coding == "dcz":
        test.assertEqual(body[:8], MAGIC_DCZ, "not a dcz header")
        test.assertEqual(body[8:40], sha256(dictionary), "the dcz header names another dictionary")
        f = test.path("body.zst")
        write(f, body[40:])
        p = subprocess.run(["zstd", "-q", "-d", "-c", "--long=31", "-D", d, f], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
        test.assertEqual(p.returncode, 0, "zstd -d -D: %s" % p.stderr.decode(errors="replace"))
        return p.stdout
    test.assertEqual(coding, "dcb")
    test.assertEqual(body[:4], MAGIC_DCB, "not a dcb header")
    test.assertEqual(body[4:36], sha256(dictionary), "the dcb header names another dictionary")
    decoder = os.environ.get("PC_DCB_DECODE")
    test.assertTrue(decoder and os.access(decoder, os.X_OK),
                    "a .dcb and no decoder: run through meson, which sets PC_DCB_DECODE")
    f = test.path("body.dcb")
    write(f, body)
    p = subprocess.run([decoder, d, f], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    test.assertEqual(p.returncode, 0, "dcb_decode (exit %d): %s" % (p.returncode, p.stderr.decode(errors="replace")))
    return p.stdout


# ----------------------------------------------------------------------------
# Use-As-Dictionary
# ----------------------------------------------------------------------------

def match_of(value):
    """The match pattern of a Use-As-Dictionary value (None when there is none)."""
    m = re.search(r'(?:^|[;,\s])match="((?:[^"\\]|\\.)*)"', value or "")
    return m.group(1).replace('\\"', '"').replace("\\\\", "\\") if m else None


def match_fits(pattern, path):
    """Whether a URLPattern path of Use-As-Dictionary's kind (literal text, `*` any run of
    characters) matches the URL path whole."""
    rx = "".join(".*" if c == "*" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, path) is not None


# ----------------------------------------------------------------------------
# A Django site
# ----------------------------------------------------------------------------

# Real apps with static files, from Debian (.ci/deps test): module -> package.
DJANGO_APPS = {"rest_framework": "python3-djangorestframework",
               "debug_toolbar": "python3-django-debug-toolbar",
               "django_extensions": "python3-django-extensions"}

NUMBERS = [(i * 7919) % 1000 for i in range(6000)]


def shop_js(n):
    """The shop app's script in release n: a data table (the bulk a delta saves) and a line
    it writes into the page. Only the release's digit changes, at the same places, so that
    the deltas of release 3 against release 2 and against release 1 come out alike."""
    return ("/* shop/app.js, release %d */\n'use strict';\nvar DATA = [%s];\n"
            "function total() { var s = 0; for (var i = 0; i < DATA.length; i++) s += DATA[i]; return s; }\n"
            "document.getElementById('out').textContent = 'shop release %d: ' + total();\n"
            % (n, ",".join(str(x) for x in NUMBERS), n)).encode()


def shop_text(n):
    return "shop release %d: %d" % (n, sum(NUMBERS))


def shop_css(n):
    rules = "".join(".item-%d { color: #%06x; margin: %dpx; }\n" % (i, (i * 4099) & 0xffffff, i % 17)
                    for i in range(1500))
    return ("/* shop/style.css, release %d */\nbody { background: #f%d%d%d%d%d; }\n%s"
            % (n, n, n, n, n, n, rules)).encode()


SHOP_PAGE = """{% load static %}<!doctype html>
<html><head><meta charset="utf-8"><title>shop</title>
<link rel="stylesheet" href="{% static 'admin/css/base.css' %}">
<link rel="stylesheet" href="{% static 'rest_framework/css/default.css' %}">
<link rel="stylesheet" href="{% static 'shop/style.css' %}">
</head><body><p id="out">no script ran</p>
<script src="{% static 'shop/app.js' %}"></script>
</body></html>
"""

RENDER_PAGE = ("import sys\nfrom django.test import Client\nr = Client().get('/')\n"
               "assert r.status_code == 200, r.status_code\nsys.stdout.write(r.content.decode())\n")


class DjangoSite:
    """A site made by `django-admin startproject` (Debian's python3 -m django) with the admin,
    rest_framework, debug_toolbar and django_extensions, and an app of its own, `shop`
    (`manage.py startapp`), whose page (a view, a template with {% static %}) loads its
    app.js and style.css, the files that change between releases. STATIC_ROOT is
    public/static (the page goes to public/ too, and alone to html/); the storage is
    precompress.django.CompressedManifestStaticFilesStorage with PRECOMPRESS_DELTAS and
    PRECOMPRESS_MANIFEST, the package from the source tree (PYTHONPATH), the program under
    test (PRECOMPRESS_BINARY)."""

    def __init__(self, test, root):
        self.test = test
        self.root = root
        self.public = os.path.join(root, "public")
        self.static_root = os.path.join(self.public, "static")
        self.html = os.path.join(root, "html")
        self.manifest = os.path.join(root, "precompress.json")
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = PACKAGE_DIR
        for k in ("UV_THREADPOOL_SIZE", "PRECOMPRESS_CACHE_DIR"):
            self.env.pop(k, None)

    def manage(self, *args, what=None):
        return sh(self.test, [DEBIAN_PYTHON, "manage.py"] + list(args), self.root, self.env,
                  what=what or "manage.py " + " ".join(args))

    def settings(self, text):
        with open(os.path.join(self.root, "mysite", "settings.py"), "a") as f:
            f.write(text)

    def create(self):
        os.makedirs(self.root)
        sh(self.test, [DEBIAN_PYTHON, "-m", "django", "startproject", "mysite", self.root], self.root,
           self.env, what="django-admin startproject")
        self.manage("startapp", "shop")
        self.settings(
            "\n# ---- tests/serving/realproject.py: a production deploy\n"
            "INSTALLED_APPS += [%s, \"shop\"]\n"
            "DEBUG = False\n"
            "ALLOWED_HOSTS = [\"testserver\", \"127.0.0.1\", \"localhost\"]\n"
            "STATIC_ROOT = BASE_DIR / \"public\" / \"static\"\n"
            "STATICFILES_STORAGE = \"precompress.django.CompressedManifestStaticFilesStorage\"\n"
            "PRECOMPRESS_BINARY = %r\n"
            "PRECOMPRESS_DELTAS = True\n"
            "PRECOMPRESS_MANIFEST = %r\n"
            % (", ".join('"%s"' % a for a in DJANGO_APPS), os.path.abspath(PROGRAM), self.manifest))
        with open(os.path.join(self.root, "mysite", "urls.py"), "a") as f:
            f.write("\nfrom shop.views import index\n\nurlpatterns += [path(\"\", index)]\n")
        write(os.path.join(self.root, "shop", "views.py"),
              b"from django.shortcuts import render\n\n\ndef index(request):\n"
              b"    return render(request, \"shop/index.html\")\n")
        os.makedirs(os.path.join(self.root, "shop", "templates", "shop"))
        write(os.path.join(self.root, "shop", "templates", "shop", "index.html"), SHOP_PAGE.encode())
        os.makedirs(self.html)

    def release(self, n):
        """shop's files of release n, collectstatic, the page rendered by the view."""
        static = os.path.join(self.root, "shop", "static", "shop")
        os.makedirs(static, exist_ok=True)
        write(os.path.join(static, "app.js"), shop_js(n))
        write(os.path.join(static, "style.css"), shop_css(n))
        p = self.manage("collectstatic", "--noinput", "-v", "2")
        page = self.manage("shell", "-c", RENDER_PAGE, what="rendering the page").stdout
        for d in (self.public, self.html):
            write(os.path.join(d, "index.html"), page)
        return p

    def hashed(self):
        """staticfiles.json's paths: logical name -> hashed name."""
        with open(os.path.join(self.static_root, "staticfiles.json")) as f:
            return json.load(f)["paths"]


# ----------------------------------------------------------------------------
# A Vite app
# ----------------------------------------------------------------------------

VITE_PROJECT = os.path.join(SRC_ROOT, "tests", "projects", "vanilla-app")
FRONTEND_DOC = os.path.join(SRC_ROOT, "docs", "frontend.md")
# The release's changes: release 2 and 3 replace the first text with theirs (the same length,
# so that release 3's deltas against release 2 and against release 1 come out alike).
VITE_EDITS = {
    "src/counter.js": ("Count is ${counter}", {2: "Score is ${counter}", 3: "Tally is ${counter}"}),
    "src/style.css": ("--accent: #aa3bff;", {2: "--accent: #2563eb;", 3: "--accent: #16a34a;"}),
}
VITE_TEXT = {1: "Count is 0", 2: "Score is 0", 3: "Tally is 0"}


def doc_scripts():
    """The "scripts" of docs/frontend.md's package.json block: the ```json block right after
    the comment that names tests/serving/test_real_vite.py."""
    with open(FRONTEND_DOC) as f:
        text = f.read()
    m = re.search(r"^<!-- tests/serving/test_real_vite\.py [^\n]*-->\n```json\n(.*?)^```$", text, re.S | re.M)
    if not m:
        raise AssertionError("docs/frontend.md has no ```json block after its comment naming "
                             "tests/serving/test_real_vite.py")
    return json.loads(m.group(1))["scripts"]


class ViteApp:
    """A copy of tests/projects/vanilla-app (made by `npm create vite`), `npm ci`, with
    docs/frontend.md's scripts added to its package.json; `npm run build` with the program
    under test first on PATH."""

    def __init__(self, test, root):
        self.test = test
        self.root = root
        self.dist = os.path.join(root, "dist")
        self.manifest = os.path.join(root, "precompress.json")
        self.env = dict(os.environ)
        self.env["PATH"] = program_dir(test) + os.pathsep + self.env.get("PATH", "")
        for k in ("UV_THREADPOOL_SIZE", "PRECOMPRESS_CACHE_DIR"):
            self.env.pop(k, None)
        self.env.update(npm_config_audit="false", npm_config_fund="false",
                        npm_config_update_notifier="false")

    def create(self):
        shutil.copytree(VITE_PROJECT, self.root)
        versions = [sh(self.test, [t, "--version"], self.root, self.env).stdout.decode().strip()
                    for t in ("node", "npm")]
        print("node %s, npm %s" % tuple(versions))
        sh(self.test, ["npm", "ci"], self.root, self.env, timeout=600)
        path = os.path.join(self.root, "package.json")
        with open(path) as f:
            package = json.load(f)
        package["scripts"].update(doc_scripts())
        with open(path, "w") as f:
            json.dump(package, f, indent=2)
            f.write("\n")

    def release(self, n):
        """Release n's sources (the generated ones for 1), `npm run build`: its result, not
        judged."""
        for rel, (old, new) in VITE_EDITS.items():
            path = os.path.join(self.root, rel)
            text = read(os.path.join(VITE_PROJECT, rel)).decode()
            if n > 1:
                self.test.assertIn(old, text, rel)
                text = text.replace(old, new[n])
            write(path, text.encode())
        return sh(self.test, ["npm", "run", "build"], self.root, self.env, ok=False)

    def assets(self):
        """{"js": (URL, path), "css": (URL, path)}: the entry script and style index.html loads."""
        page = read(os.path.join(self.dist, "index.html")).decode()
        out = {}
        for key, rx in (("js", r'<script[^>]*\ssrc="(/assets/[^"]+\.js)"'),
                        ("css", r'<link[^>]*\shref="(/assets/[^"]+\.css)"')):
            m = re.search(rx, page)
            self.test.assertTrue(m, "dist/index.html loads no %s: %s" % (key, page))
            out[key] = (m.group(1), os.path.join(self.dist, m.group(1).lstrip("/")))
        return out


# ----------------------------------------------------------------------------
# The servers, configured from server-config's output as printed
# ----------------------------------------------------------------------------

def server_config(test, work, args, manifest, name):
    """`precompress server-config ARGS MANIFEST`, its output written as it is to work/name."""
    r = run(["server-config"] + args + [manifest])
    test.assertEqual(r.rc, 0, r)
    path = os.path.join(work, name)
    write(path, r.out.encode())
    return path


def start_nginx(test, work, port, manifest, site, location, alias=None, server=None, http=""):
    """nginx with `server-config nginx --part http` in http {} and `--part location` (with
    --alias DIR when given) in server {}, Debian's brotli_static loaded and on (default
    server {}: Nginx.SERVER, brotli_static on); `nginx -t` first."""
    binary = find_binary("nginx")
    os.makedirs(work)
    http_inc = server_config(test, work, ["nginx", "--part", "http", "--location", location],
                             manifest, "pc-http.conf")
    loc_inc = server_config(test, work, ["nginx", "--part", "location", "--location", location]
                            + (["--alias", alias] if alias else []), manifest, "pc-location.conf")
    if server is None:
        server = Nginx.SERVER + "brotli_static on;\n"
    s = Nginx(test, site, work, binary, port, http_inc, loc_inc,
              main="load_module %s;\n" % nginx_brotli_module(binary), http=http, server=server)
    t = s.configtest()
    test.assertEqual(t.returncode, 0, "nginx -t refuses server-config's output:\n%s"
                     % t.stdout.decode(errors="replace")[-3000:])
    s.start()
    return s


def start_apache(test, work, port, manifest, site, location, alias=None, static=None, cache=None):
    """Apache httpd with `server-config apache` (--alias DIR and `Alias LOCATION DIR/` when
    alias is given) in its server context, README.md's .br/.gz rules in the files'
    <Directory>; `apache2 -t` first."""
    binary, _ = apache_binary()
    os.makedirs(work)
    inc = server_config(test, work, ["apache", "--location", location]
                        + (["--alias", alias.rstrip("/") + "/"] if alias else []), manifest, "pc.conf")
    kw = {}
    if static:
        kw["static"] = static
    if cache:
        kw["cache"] = cache
    s = Apache(test, site, work, binary, port, inc,
               alias=(location, alias.rstrip("/")) if alias else None, **kw)
    t = s.configtest()
    test.assertEqual(t.returncode, 0, "apache2 -t refuses server-config's output:\n%s"
                     % t.stdout.decode(errors="replace")[-3000:])
    s.start()
    return s


def start_caddy(test, work, port, manifest, site, location, static=None, cache=None):
    """Caddy with `server-config caddy` imported before README.md's file_server; `caddy
    validate` first."""
    os.makedirs(work)
    snippet = server_config(test, work, ["caddy", "--location", location], manifest, "pc.caddy")
    kw = {}
    if static:
        kw["static"] = static
    if cache:
        kw["cache"] = cache
    s = Caddy(test, site, work, find_binary("caddy"), port, snippet, **kw)
    v = s.validate()
    test.assertEqual(v.returncode, 0, "caddy validate refuses server-config's output:\n%s"
                     % v.stdout.decode(errors="replace")[-3000:])
    s.start()
    return s


# ----------------------------------------------------------------------------
# A release, and the three-release sequence
# ----------------------------------------------------------------------------

class Release:
    """One build of a project: its number, the precompress manifest to feed server-config,
    and, for each file that changes from release to release (by a key of the test's), its
    URL path and its file on disk (bytes read now: the next release must not change them)."""

    def __init__(self, number, manifest, files, text):
        self.number = number
        self.manifest = manifest
        self.files = {k: (url, path, read(path)) for k, (url, path) in files.items()}
        self.text = text  # what the page shows once its script ran

    def __repr__(self):
        return "<release %d: %s>" % (self.number, ", ".join(u for u, _, _ in self.files.values()))


class RealProjectCase(PCTestCase):
    """The three-release sequence; a test gives build(n) -> Release and setups() -> {name:
    start(test, work, port, manifest)}."""

    def setUp(self):
        super().setUp()
        os.chmod(self.tmp, 0o755)  # Apache's children run as nobody
        self.timings = []  # (what, seconds): how long each phase took, printed at the end

    def timed(self, what, f, *args, **kw):
        t = time.monotonic()
        try:
            return f(*args, **kw)
        finally:
            self.timings.append((what, time.monotonic() - t))

    def print_timings(self):
        print("timings: " + ", ".join("%s %.1f s" % (w, t) for w, t in self.timings))

    def build(self, number):
        raise NotImplementedError

    def setups(self):
        raise NotImplementedError

    def serve(self, name, start, release):
        """Server `name` serving `release` on its port; stopped at the end of the test or by
        the caller."""
        work = self.path("server-%s-r%d" % (name, release.number))
        return start(self, work, self.ports[name], release.manifest)

    def check_releases(self):
        """Release 1, 2 and 3 built and served by every setup (the module's docstring)."""
        setups = self.setups()
        self.ports = {name: free_port() for name in setups}
        chromium = chromium_binary()
        uad = {}  # (setup, key) -> release 1's Use-As-Dictionary match
        broken = set()  # setups that could not serve release 1 or 2: no chromium check after
        profiles = {}  # setup -> the chromium profile that holds release 1's dictionaries

        r1 = self.timed("build 1", self.build, 1)
        for name, start in setups.items():
            with self.subTest(server=name, release=1):
                broken.add(name)
                server = self.serve(name, start, r1)
                base = "http://127.0.0.1:%d" % self.ports[name]
                for key, (url, path, data) in sorted(r1.files.items()):
                    r = curl(self, base + url, {"Accept-Encoding": "br, gzip"})
                    where = "%s, release 1, %s" % (name, url)
                    self.assertEqual(r.status, 200, "%s: %r" % (where, r))
                    m = match_of(r.get("use-as-dictionary"))
                    self.assertIsNotNone(m, "%s: no Use-As-Dictionary with a match (without it the "
                                         "browser keeps no dictionary): %r" % (where, r))
                    self.assertTrue(match_fits(m, url), "%s: match=%r does not fit its own URL" % (where, m))
                    self.assertRegex(r.get("cache-control") or "", r"max-age=[1-9]",
                                     "%s: the browser keeps a dictionary only while fresh: %r" % (where, r))
                    uad[(name, key)] = m
                page = curl(self, base + "/", {"Accept-Encoding": "br, gzip"})
                self.assertEqual(page.status, 200, page)
                self.assertRegex(page.get("cache-control") or "", r"no-cache|no-store", page)
                profiles[name], dom = self.timed("chromium", chromium_first_visit, self, chromium,
                                                 self.path("profile-" + name), base + "/",
                                                 [base + url for url, _, _ in r1.files.values()])
                server.stop()
                self.assertIn(r1.text, dom, "%s: release 1's page did not run its script:\n%s" % (name, dom[-2000:]))
                broken.discard(name)

        r2 = self.timed("build 2", self.build, 2)
        for name, start in setups.items():
            if name in broken:  # failed already: the browser holds no dictionary of it
                print("%s: release 1 was not served, so release 2 is not" % name)
                continue
            with self.subTest(server=name, release=2):
                for key, (url, _, _) in sorted(r2.files.items()):
                    m = uad.get((name, key))
                    self.assertTrue(m and match_fits(m, url), "%s: release 1's Use-As-Dictionary match=%r "
                                    "does not fit release 2's URL %s" % (name, m, url))
                server = self.serve(name, start, r2)
                base = "http://127.0.0.1:%d" % self.ports[name]
                dom = self.timed("chromium", chromium_dom, self, chromium, profiles[name], base + "/")
                server.stop()
                log = server.log_lines()
                took = []
                for key, (url, _, _) in sorted(r2.files.items()):
                    hits = [l for l in log if l[0] == url]
                    self.assertTrue(hits, "%s: release 2's %s never requested:\n%s" % (name, url, log))
                    self.assertEqual(hits[0][1], available(r1.files[key][2]),
                                     "%s: chromium did not say it holds release 1's %s:\n%s" % (name, key, log))
                    self.assertIn(hits[0][2], ("dcb", "dcz"), "%s: %s not sent as a delta:\n%s" % (name, url, log))
                    self.assertEqual(hits[0][3], "200", log)
                    took.append("%s as %s" % (url, hits[0][2]))
                self.assertIn(r2.text, dom, "%s: release 2's page did not run its script (a delta "
                              "decoded wrong?):\n%s" % (name, dom[-2000:]))
                print("%s: chromium took %s" % (name, ", ".join(took)))

        r3 = self.timed("build 3", self.build, 3)
        # Apache marks an ETag weak, and sends the request's time as Last-Modified, while a
        # file's mtime is less than a second old (a delta's is its file's less a few seconds,
        # never ahead): the requests below compare both, so that second must be past first.
        latest = max(os.stat(f).st_mtime for _, path, _ in r3.files.values()
                     for f in glob.glob(glob.escape(path) + "*"))
        if latest + 1.5 > time.time():
            self.timed("waiting for mtimes", time.sleep, min(latest + 1.5 - time.time(), 30))
        for name, start in setups.items():
            with self.subTest(server=name, release=3):
                for key, (url, _, _) in sorted(r3.files.items()):
                    m = uad.get((name, key))
                    if m:
                        self.assertTrue(match_fits(m, url), "%s: release 1's Use-As-Dictionary match=%r "
                                        "does not fit release 3's URL %s" % (name, m, url))
                server = self.serve(name, start, r3)
                base = "http://127.0.0.1:%d" % self.ports[name]
                for key, (url, path, data) in sorted(r3.files.items()):
                    with self.subTest(server=name, release=3, file=url):
                        self.timed("curl", self.check_codings, name, base, url, path, data,
                                   [r2.files[key][2], r1.files[key][2]])
                server.stop()
        return r1, r2, r3

    def check_codings(self, name, base, url, path, source, dictionaries):
        """Every kind of request a client may send for a file with deltas against each of
        `dictionaries` (the most recent first), by curl."""
        plain = {c: path + s for c, s in (("br", ".br"), ("gzip", ".gz")) if os.path.isfile(path + s)}
        self.assertIn("br", plain, "%s has no .br" % path)
        deltas = []  # (dictionary, {coding: delta file})
        for d in dictionaries:
            files = {c: "%s.%s.%s" % (path, delta_id(d), c) for c in ("dcb", "dcz")}
            files = {c: f for c, f in files.items() if os.path.isfile(f)}
            self.assertTrue(files, "%s: no delta against %s" % (path, delta_id(d)))
            deltas.append((d, files))
        sizes = [os.path.getsize(f) for _, fs in deltas for f in fs.values()]
        lines = []

        ctype = curl(self, base + url).get("content-type")
        self.assertTrue(ctype, "%s: no Content-Type" % url)

        def get(headers, method="GET", why=""):
            r = curl(self, base + url, headers, method)
            return r, "%s %s %s (%s): %r" % (name, method, url, why or headers, r)

        def delta_answer(r, where, dictionary, coding):
            """A 200 with the delta against dictionary in `coding`, its headers and bytes."""
            self.assertEqual((r.status, r.get("content-encoding")), (200, coding), where)
            self.assertEqual(r.body, read("%s.%s.%s" % (path, delta_id(dictionary), coding)),
                             "%s: not the delta's bytes" % where)
            self.assertEqual(decode_delta(self, coding, r.body, dictionary), source,
                             "%s: the delta does not decode to the file" % where)
            self.assertEqual(r.get("content-type"), ctype, "%s: not the file's type" % where)
            self.assertIn("accept-encoding", r.vary(), where)
            self.assertIn("available-dictionary", r.vary(), where)
            m = match_of(r.get("use-as-dictionary"))
            self.assertTrue(m and match_fits(m, url), "%s: Use-As-Dictionary for the next release" % where)

        def plain_answer(r, where, accept):
            acc = accepted(accept)
            want = "br" if acc.get("br", 0) > 0 else "gzip" if acc.get("gzip", 0) > 0 else None
            self.assertEqual((r.status, r.get("content-encoding")), (200, want), where)
            if want:
                self.assertEqual(r.body, read(plain[want]), "%s: not the %s file's bytes" % (where, want))
                self.assertEqual(decode({"br": "br", "gzip": "gz"}[want], plain[want]), source, where)
            else:
                self.assertEqual(r.body, source, where)
            self.assertEqual(r.get("content-type"), ctype, where)

        for dictionary, files in deltas:
            mine = delta_id(dictionary)
            held = available(dictionary)
            best = "dcb" if "dcb" in files else "dcz"
            for accept, want in ((ACCEPT_ALL, best), ("gzip, dcz", "dcz"), ("dcb;q=0, dcz", "dcz"),
                                 ("dcb, gzip", "dcb" if "dcb" in files else None)):
                with self.subTest(dictionary=mine, accept=accept):
                    r, where = get({"Accept-Encoding": accept, "Available-Dictionary": held})
                    if want is None:
                        plain_answer(r, where, "gzip")
                    else:
                        delta_answer(r, where, dictionary, want)
            # A client that accepts no delta coding, or nothing: the file's .br/.gz, or the file.
            for accept in ("br, gzip", "dcb;q=0, dcz;q=0, gzip", None):
                with self.subTest(dictionary=mine, accept=accept):
                    h = {"Available-Dictionary": held}
                    if accept is not None:
                        h["Accept-Encoding"] = accept
                    r, where = get(h)
                    plain_answer(r, where, accept)
            ask = {"Accept-Encoding": ACCEPT_ALL, "Available-Dictionary": held}
            r, where = get(ask)
            delta = read("%s.%s.%s" % (path, mine, best))
            with self.subTest(dictionary=mine, request="HEAD"):
                # The GET's status and headers, no body.
                h, hwhere = get(ask, "HEAD")
                self.assertEqual(h.status, 200, hwhere)
                for k in ("content-encoding", "content-type", "vary", "use-as-dictionary", "etag",
                          "last-modified"):
                    self.assertEqual(h.get(k), r.get(k), "%s: HEAD's %s differs from GET's %r"
                                     % (hwhere, k, r))
                self.assertIn(h.get("content-length"), (None, str(len(delta))), hwhere)
            with self.subTest(dictionary=mine, request="If-None-Match: the .br's ETag"):
                # A cache that holds the .br, asking with the dictionary now: the delta.
                b, _ = get({"Accept-Encoding": "br, gzip"})
                if b.get("etag") and b.get("etag") != r.get("etag"):
                    x, xwhere = get(dict(ask, **{"If-None-Match": b.get("etag")}))
                    delta_answer(x, xwhere, dictionary, best)
            with self.subTest(dictionary=mine, request="Range"):
                # The delta's bytes as on disk.
                g, gwhere = get(dict(ask, Range="bytes=10-29"))
                self.assertEqual((g.status, g.get("content-encoding")), (206, best), gwhere)
                self.assertEqual(g.body, delta[10:30], gwhere)
                self.assertEqual(g.get("content-range"), "bytes 10-29/%d" % len(delta), gwhere)
            lines.append("%s %d B" % (best, len(delta)))
        # Each delta's ETag is its own: every delta of the file (each dictionary, each coding)
        # answers 304 to its own ETag, still varying; sent another delta's, it is sent whole
        # (a client that held the delta against one dictionary and now holds another).
        variants = []  # ((id, coding), dictionary, the request that gets it)
        for dictionary, files in deltas:
            for coding in sorted(files):
                accept = ACCEPT_ALL if coding == ("dcb" if "dcb" in files else "dcz") else "gzip, dcz"
                variants.append(((delta_id(dictionary), coding), dictionary,
                                 {"Accept-Encoding": accept, "Available-Dictionary": available(dictionary)}))
        etags = {}
        for key, dictionary, ask in variants:
            with self.subTest(delta=key, request="If-None-Match: its ETag"):
                r, where = get(ask)
                delta_answer(r, where, dictionary, key[1])
                self.assertTrue(r.get("etag"), "%s: no ETag" % where)
                etags[key] = r.get("etag")
                c, cwhere = get(dict(ask, **{"If-None-Match": r.get("etag")}))
                self.assertEqual((c.status, c.body), (304, b""), cwhere)
                self.assertIn("available-dictionary", c.vary(), cwhere)
                self.assertIn("accept-encoding", c.vary(), cwhere)
        for key, dictionary, ask in variants:
            for other, etag in sorted(etags.items()):
                if other == key:
                    continue
                with self.subTest(delta=key, request="If-None-Match: the ETag of the delta %s" % (other,)):
                    r, where = get(dict(ask, **{"If-None-Match": etag}), why="the delta %s asked for with "
                                   "If-None-Match: %s, the ETag of the delta %s" % (key, etag, other))
                    delta_answer(r, where, dictionary, key[1])
        # No dictionary, or one the server has no delta against: the .br.
        for held, why in ((None, "no Available-Dictionary"), (UNKNOWN_DICTIONARY, "an unknown dictionary")):
            with self.subTest(request=why):
                h = {"Accept-Encoding": ACCEPT_ALL}
                if held:
                    h["Available-Dictionary"] = held
                r, where = get(h, why=why)
                plain_answer(r, where, ACCEPT_ALL)
        print("%s %s: %s; ETags %s; delta sizes %s" % (
            name, url, ", ".join(lines), ", ".join(etags.values()),
            "equal" if len(set(sizes)) == 1 else "differ"))
