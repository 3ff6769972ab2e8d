#!/usr/bin/python3
"""End to end: dictionary-compressed outputs (RFC 9842 .dcz, .dcb) served by a real
nginx configured with `precompress server-config nginx`, a real Apache httpd configured with
`precompress server-config apache` and a real Caddy with `server-config caddy`, requested by
http.client and taken by a real browser (Debian's chromium, headless).

A two-release site is built here: release 1 and release 2 each have index.html, which loads
static/app.<12 hex>.js and static/style.<12 hex>.css (Django's hashed names), and release 2's
script computes a different result that it writes into the page. Each release is compressed by
precompress (its .gz and .br and a manifest). Release 2 gets its deltas against release 1:

  - with `precompress --dictionary-from` when `precompress --help` lists it;
  - else (a build that writes no deltas) made here, so that the serving side is tested
    whatever the program writes: `zstd -19
    --patch-from=DICT`, prefixed with the 8 bytes 5E 2A 4D 18 20 00 00 00 and the
    dictionary's SHA-256 (RFC 9842 section 4: dcz is exactly that), named
    FILE.<first 16 hex of the SHA-256>.dcz, and listed in the manifest's "deltas" as
    docs/deltas.md says. No .dcb then: Debian 12's brotli CLI (1.0.9) has no dictionaries.

nginx serves one release at a time on one port (the browser's dictionaries belong to the
origin), its http {} including `server-config nginx --part http` and its server {}
`--part location --location /static/`, `expires 1h` for the static files (Cache-Control:
max-age=3600, without which the browser keeps no dictionary) and no caching of the page.

test_nginx_serves_deltas (release 2, http.client, no decoding): with Accept-Encoding "dcb,
dcz, br, gzip" and Available-Dictionary of release 1's file, the delta (Content-Encoding,
Content-Type of the file, Vary: Accept-Encoding, Available-Dictionary), which decodes with
`zstd -d -D DICT` past its 40-byte header to release 2's file; without Available-Dictionary, or
with dcz refused, or with a dictionary the server does not have, .gz; without Accept-Encoding,
the file itself; Use-As-Dictionary: match="/static/app.*.js" on every answer for the file.

test_chromium_takes_deltas: chromium loads release 1's page, then (the same --user-data-dir,
a second process) release 2's: the access log shows Available-Dictionary sent and dcz (or
dcb) answered for release 2's script and style, and the dumped DOM shows what release 2's
script computes. The flags it needs: --headless --no-sandbox (root) --disable-gpu
--disable-quic --no-first-run --disable-background-networking --disable-component-update
--disable-sync; nothing else (no feature flag: Chromium >= 130 has the feature on; the page is
http://127.0.0.1:PORT/, a secure context). Skipped, saying so, without nginx, zstd or chromium.

test_nginx_delta_requests: HEAD, a conditional GET (the delta's ETag: 304 varying on
Available-Dictionary; the .gz's: the delta) and a Range (206 of the delta's bytes) with the
dictionary offered (check_delta_requests).

ApacheDeltaServing: the same three tests against Apache httpd (apache2, Debian's modules),
release N's generated include in its server context, `apache2 -t` first; Debian's mime types
(/etc/mime.types types .js text/javascript: the delta's Content-Type must be the file's, as
Apache types it), mod_deflate on for scripts and styles (the deltas must reach the client as
they are on disk), and README.md's .br/.gz rules in the site's <Directory>: so without a
dictionary the answer is the .br, with the delta codings refused and br not named the .gz.

CaddyDeltaServing: the same tests against Caddy 2 (Debian's 2.6.2), its site block
importing `server-config caddy` before README.md's `file_server { precompressed br zstd gzip }`,
`caddy validate` first (and once with it all inside `handle { }` beside a `handle /api/*`),
and files named as a delta with an empty <id> (FILE..dcz: what the
snippet's rewrite would name without a dictionary it knows) that must never be sent.

GeneratedConfig: server-config's output for a manifest written here (one map entry per
dictionary, the name templates' match patterns, names it cannot write left out and counted, a
type per extension with deltas; nginx -t accepts it) and its refusals (not JSON, not a manifest,
a missing file: exit 1; a bad --location, --part or server: exit 2), nothing on stdout then.
"""
import sys

sys.dont_write_bytecode = True

import base64
import hashlib
import http.client
import json
import os
import re
import shutil
import sqlite3
import subprocess
import unittest
import urllib.parse

from pctest import full_only, PCTestCase, free_port, hashed, main, read, run, write
from test_serving import (APACHE_MODULES, DEBIAN_MIME_CONF, Server, caddy_env, find_binary,
                          indent, readme_snippet)

MAGIC_DCZ = bytes.fromhex("5e2a4d1820000000")
MAGIC_DCB = bytes.fromhex("ff444342")
ACCEPT_ALL = "dcb, dcz, br, gzip"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"]
LOG_FORMAT = "$request_uri|$http_available_dictionary|$sent_http_content_encoding|$status"
# Apache's: the request line (its URI is the one asked for, before any rewrite), the rest as nginx's.
APACHE_LOG_FORMAT = "%r|%{Available-Dictionary}i|%{Content-Encoding}o|%>s"

NUMBERS = [(i * 7919) % 1000 for i in range(6000)]


def script(release):
    """Release N's script: a data table (the bulk the delta saves) and a sum it writes."""
    table = ",".join(str(n) for n in NUMBERS)
    return ("// release %d\nvar DATA = [%s];\n"
            "function total(k) { var s = 0; for (var i = 0; i < DATA.length; i++) s += DATA[i] * k;"
            " return s; }\n"
            "document.getElementById('out').textContent = 'release %d computes ' + total(%d);\n"
            % (release, table, release, release * 3 + 1)).encode()


def expected_text(release):
    return "release %d computes %d" % (release, sum(NUMBERS) * (release * 3 + 1))


def style(release):
    rules = "".join(".c%d { color: #%06x; margin: %dpx; }\n" % (i, (i * 4099) & 0xffffff, i % 17)
                    for i in range(1500))
    return ("/* release %d */\nbody { background: #%s; }\n%s"
            % (release, "fff" if release == 1 else "eee", rules)).encode()


def sha256(data):
    return hashlib.sha256(data).digest()


def core_has_deltas():
    """Whether precompress itself writes deltas: --help lists --dictionary-from."""
    r = run(["--help"])
    return "--dictionary-from" in r.out


class Nginx(Server):
    """nginx with the generated include, on a port given (one origin for both releases)."""
    name = "nginx"

    # The server {} around the location part by default: the page not cached, the static
    # files for an hour (expires, inherited by the location part).
    SERVER = """root "%(site)s";
expires 1h;
location / {
    expires off;
    add_header Cache-Control "no-store";
}
include %(loc)s;
"""

    def __init__(self, test, site, work, binary, port, http_inc, loc_inc, main="", http="",
                 server=None):
        """main, http: lines added at the top level (load_module) and in http {} (a map);
        server: server {}'s lines but listen and server_name (default SERVER; %(site)s and
        %(loc)s filled in)."""
        super().__init__(test, site, work)
        self.port = port
        self.binary = binary
        self.conf = os.path.join(work, "nginx.conf")
        self.error_log = os.path.join(work, "error.log")
        self.access_log = os.path.join(work, "access.log")
        os.makedirs(os.path.join(work, "tmp"), exist_ok=True)
        user = "user root;\n" if os.geteuid() == 0 else ""
        tmp = os.path.join(work, "tmp")
        with open(self.conf, "w") as f:
            f.write("""%(main)s%(user)sdaemon off;
master_process on;
worker_processes 1;
pid %(w)s/nginx.pid;
error_log %(w)s/error.log info;
events { worker_connections 64; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    log_format pc '%(fmt)s';
    access_log %(w)s/access.log pc;
    client_body_temp_path %(tmp)s;
    proxy_temp_path %(tmp)s;
    fastcgi_temp_path %(tmp)s;
    uwsgi_temp_path %(tmp)s;
    scgi_temp_path %(tmp)s;
    include %(http)s;
%(http_extra)s    server {
        listen 127.0.0.1:%(port)d;
        server_name localhost;
%(server)s    }
}
""" % {"main": main, "user": user, "w": work, "tmp": tmp, "fmt": LOG_FORMAT, "http": http_inc,
                "http_extra": indent(http, " " * 4), "port": port,
                "server": indent((self.SERVER if server is None else server)
                                 % {"site": site, "loc": loc_inc}, " " * 8)})

    def command(self):
        return [self.binary, "-p", self.work + "/", "-c", self.conf, "-e", self.error_log]

    def configtest(self):
        """`nginx -t` on the configuration."""
        return subprocess.run([self.binary, "-t"] + self.command()[1:], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)

    def log_lines(self):
        """The access log: (uri, available_dictionary, content_encoding, status) per request."""
        with open(self.access_log) as f:
            return [tuple(line.rstrip("\n").split("|")) for line in f if line.strip()]


class Apache(Server):
    """Apache httpd with the generated include in its server context, on a port given, as
    Debian's packaged server types files (/etc/mime.types, mods-available/mime.conf: .br is
    the language Breton there), mod_deflate compressing scripts and styles on the fly (which
    must leave the deltas alone), and README.md's .br/.gz rules in the files' <Directory>."""
    name = "apache"
    MODULES = ("mpm_event", "authz_core", "dir", "mime", "rewrite", "headers", "filter", "deflate",
               "alias")

    def __init__(self, test, site, work, binary, port, include, alias=None, static="/static/",
                 cache=("no-store", "max-age=3600")):
        """alias: (URL, DIR), an `Alias URL DIR/` with README.md's rules in DIR's <Directory>;
        static: the URL of the static files; cache: the Cache-Control of the page and theirs."""
        super().__init__(test, site, work)
        self.port = port
        self.binary = binary
        self.conf = os.path.join(work, "apache2.conf")
        self.error_log = os.path.join(work, "error.log")
        self.access_log = os.path.join(work, "access.log")
        for d in ("run", "lock"):
            os.makedirs(os.path.join(work, d), exist_ok=True)
        user = "User nobody\nGroup nogroup\n" if os.geteuid() == 0 else ""
        mime = "Include %s" % DEBIAN_MIME_CONF if os.path.isfile(DEBIAN_MIME_CONF) else \
            "AddType application/x-gzip .gz .tgz\nAddLanguage br .br"
        mods = "".join("LoadModule %s_module %s/mod_%s.so\n" % (m, APACHE_MODULES, m)
                       for m in self.MODULES)
        with open(self.conf, "w") as f:
            f.write("""ServerRoot "%(w)s"
ServerName 127.0.0.1
Listen 127.0.0.1:%(port)d
%(mods)s%(user)sPidFile "%(w)s/run/apache2.pid"
DefaultRuntimeDir "%(w)s/run"
Mutex file:%(w)s/lock default
ErrorLog "%(w)s/error.log"
LogLevel warn
LogFormat "%(fmt)s" pc
CustomLog "%(w)s/access.log" pc
TypesConfig /etc/mime.types
%(mime)s
AddOutputFilterByType DEFLATE text/html text/css text/javascript application/javascript
DocumentRoot "%(site)s"
DirectoryIndex index.html
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<Directory "%(site)s">
    Require all granted
    # README.md's snippet:
%(readme)s</Directory>
%(alias)s<Location "/">
    Header set Cache-Control "%(page_cache)s"
</Location>
<Location "%(static)s">
    Header set Cache-Control "%(static_cache)s"
</Location>
Include "%(inc)s"
""" % {"w": work, "port": port, "mods": mods, "user": user, "mime": mime, "site": site,
                "fmt": APACHE_LOG_FORMAT, "inc": include, "static": static,
                "page_cache": cache[0], "static_cache": cache[1],
                "readme": indent(readme_snippet("apache"), " " * 4),
                "alias": "" if alias is None else
                ('Alias "%s" "%s/"\n<Directory "%s">\n    Require all granted\n%s</Directory>\n'
                 % (alias[0], alias[1], alias[1], indent(readme_snippet("apache"), " " * 4)))})

    def command(self):
        return [self.binary, "-f", self.conf, "-DFOREGROUND"]

    def configtest(self):
        return subprocess.run([self.binary, "-f", self.conf, "-t"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT)

    def log_lines(self):
        """The access log as nginx's: (uri, available_dictionary, content_encoding, status)."""
        out = []
        with open(self.access_log) as f:
            for line in f:
                if line.strip():
                    req, avail, coding, status = line.rstrip("\n").rsplit("|", 3)
                    parts = req.split()
                    out.append((parts[1] if len(parts) > 1 else req, avail, coding, status))
        return out


class Caddy(Server):
    """Caddy 2 with the generated snippet imported in its site block, on a port given,
    `encode gzip` on, README.md's `file_server { precompressed br zstd gzip }` after it, a
    JSON access log."""
    name = "caddy"

    def __init__(self, test, site, work, binary, port, snippet, in_handle=False, static="/static/",
                 cache=("no-store", "max-age=3600")):
        """in_handle: the import, encode and file_server inside `handle { }`, beside a
        `handle /api/* { respond }` (a site whose other paths go to an application); static:
        the URL of the static files; cache: the Cache-Control of the page and theirs."""
        super().__init__(test, site, work)
        self.port = port
        self.binary = binary
        self.home = os.path.join(work, "home")
        os.makedirs(self.home, exist_ok=True)
        self.caddyfile = os.path.join(work, "Caddyfile")
        self.access_log = os.path.join(work, "access.log")
        with open(self.caddyfile, "w") as f:
            f.write("""{
\tadmin off
\tauto_https off
\tstorage file_system {
\t\troot "%(home)s/storage"
\t}
}

http://127.0.0.1:%(port)d {
\tbind 127.0.0.1
\troot * "%(site)s"
\tlog {
\t\toutput file "%(log)s"
\t\tformat json
\t}
\t@page not path %(static)s*
\theader @page Cache-Control "%(page_cache)s"
\theader %(static)s* Cache-Control "%(static_cache)s"
%(serve)s}
""" % {"home": self.home, "port": port, "site": site, "log": self.access_log, "static": static,
                "page_cache": cache[0], "static_cache": cache[1],
                "serve": "\thandle /api/* {\n\t\trespond \"api\" 200\n\t}\n\thandle {\n%s\t}\n"
                % indent(self.serving(snippet), "\t\t") if in_handle else
                indent(self.serving(snippet), "\t")})

    @staticmethod
    def serving(snippet):
        """The snippet imported, encode on, README.md's file_server."""
        return ('import "%s"\n'
                "# Compression on the fly, which must leave the deltas (and the sidecars) as they are.\n"
                "encode gzip\n"
                "# README.md's snippet:\n%s" % (snippet, readme_snippet("caddyfile")))

    def env(self):
        return caddy_env(self.home)

    def command(self):
        return [self.binary, "run", "--config", self.caddyfile, "--adapter", "caddyfile"]

    def validate(self):
        return subprocess.run([self.binary, "validate", "--config", self.caddyfile, "--adapter",
                               "caddyfile"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              env=self.env(), cwd=self.work, timeout=60)

    def log_lines(self):
        """The access log as nginx's: (uri, available_dictionary, content_encoding, status)."""
        out = []
        with open(self.access_log) as f:
            for line in f:
                e = json.loads(line)
                if "request" not in e:
                    continue
                req = e["request"]
                avail = (req.get("headers", {}).get("Available-Dictionary") or [""])[0]
                coding = (e.get("resp_headers", {}).get("Content-Encoding") or [""])[0]
                out.append((req["uri"], avail, coding, str(e.get("status"))))
        return out


def chromium_binary():
    return shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_dom(test, chromium, profile, url):
    """Headless chromium with the profile directory `profile` loads url; its DOM, as text."""
    cmd = [chromium] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile, "--dump-dom", url]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120,
                       stdin=subprocess.DEVNULL, start_new_session=True)
    test.assertEqual(p.returncode, 0, p.stderr[-3000:])
    return p.stdout.decode(errors="replace")


def stored_dictionaries(profile):
    """The URLs of the dictionaries chromium keeps in profile (the `dictionaries` table of its
    Shared Dictionary database; none when it made no database), or None when the database
    cannot be read (another schema)."""
    db = os.path.join(profile, "Default", "Shared Dictionary", "db")
    if not os.path.isfile(db):
        return set()
    try:
        c = sqlite3.connect("file:%s?mode=ro" % urllib.parse.quote(db), uri=True)
        try:
            return {r[0] for r in c.execute("SELECT url FROM dictionaries")}
        finally:
            c.close()
    except sqlite3.Error:
        return None


def chromium_first_visit(test, chromium, profile, url, dictionaries):
    """chromium loads url with the new profile `profile` and is to keep every URL of
    `dictionaries` as a dictionary; its profile and the DOM. chromium stores a dictionary on a
    task of its own once it has read the response, and --dump-dom may end the browser first:
    when its store lacks one, the visit is made again with a fresh profile, twice at most.
    What it still lacks then is the caller's to find (the next release's requests name no
    dictionary). A store that cannot be read is not waited for."""
    for attempt in range(3):
        p = profile if attempt == 0 else "%s-%d" % (profile, attempt)
        dom = chromium_dom(test, chromium, p, url)
        have = stored_dictionaries(p)
        if have is None or set(dictionaries) <= have:
            break
        print("chromium kept no dictionary for %s (attempt %d): visiting again with a fresh "
              "profile" % (", ".join(sorted(set(dictionaries) - have)), attempt + 1))
    return p, dom


def apache_binary():
    """apache2 (Debian) or httpd, with the modules Apache needs; else None and why."""
    binary = find_binary("apache2") or find_binary("httpd")
    if not binary:
        return None, "apache2 not found (apt-get install apache2)"
    missing = [m for m in Apache.MODULES
               if not os.path.isfile("%s/mod_%s.so" % (APACHE_MODULES, m))]
    if missing:
        return None, "Apache modules %s not found in %s" % (", ".join(missing), APACHE_MODULES)
    return binary, None


class Releases(PCTestCase):
    """The two releases, compressed (release 2 with its deltas), and what the tests of each
    server share: a request, a delta decoded, chromium loading release 1 then release 2."""

    def setUp(self):
        super().setUp()
        if not shutil.which("zstd"):
            self.skipTest("the zstd CLI not found (apt-get install zstd)")
        os.chmod(self.tmp, 0o755)
        self.port = free_port()
        self.files = {}  # (release, "app.js") -> (name, bytes)
        for rel in (1, 2):
            root = self.path("r%d" % rel)
            os.makedirs(os.path.join(root, "static"))
            names = {}
            for name, data in (("app.js", script(rel)), ("style.css", style(rel))):
                h = hashed(name, data)
                write(os.path.join(root, "static", h), data)
                self.files[(rel, name)] = (h, data)
                names[name] = h
            write(os.path.join(root, "index.html"), (
                "<!doctype html><html><head><link rel=stylesheet href=\"/static/%s\"></head>"
                "<body><p id=out>no script ran</p><script src=\"/static/%s\"></script></body></html>\n"
                % (names["style.css"], names["app.js"])).encode())
        self.compress(1)
        self.compress(2, dictionary_from=self.path("r1", "static"))

    def compress(self, release, dictionary_from=None):
        """precompress over release N's static/, its manifest, and (release 2) the deltas."""
        static = self.path("r%d" % release, "static")
        manifest = self.path("manifest%d.json" % release)
        args = ["-q", "--manifest", manifest]
        core = dictionary_from is not None and core_has_deltas()
        if core:
            args += ["--dictionary-from", dictionary_from]
        r = run(args + [static])
        self.assertEqual(r.rc, 0, r)
        if dictionary_from is not None and not core:
            # The hand-made deltas: goes once main has --dictionary-from.
            self.hand_made_deltas(static, dictionary_from, manifest)
        self.manifests = getattr(self, "manifests", {})
        self.manifests[release] = manifest

    def hand_made_deltas(self, static, dict_dir, manifest):
        with open(manifest) as f:
            m = json.load(f)
        m["dictionaries"] = [dict_dir]
        for entry in m["files"]:
            name = entry["path"]
            key = re.sub(r"\.[0-9a-f]{12}\.", ".", name)
            old = [n for n in os.listdir(dict_dir) if re.sub(r"\.[0-9a-f]{12}\.", ".", n) == key]
            self.assertEqual(len(old), 1, (name, old))
            dict_path = os.path.join(dict_dir, old[0])
            digest = sha256(read(dict_path))
            frame = self.path("frame.zst")
            p = subprocess.run(["zstd", "-q", "-f", "-19", "--patch-from=" + dict_path,
                                os.path.join(static, name), "-o", frame],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual(p.returncode, 0, p.stderr)
            out = MAGIC_DCZ + digest + read(frame)
            write(os.path.join(static, "%s.%s.dcz" % (name, digest.hex()[:16])), out)
            entry["deltas"] = [{"format": "dcz", "from": 0, "dictionary": old[0],
                                "sha256": digest.hex(), "size": len(out)}]
        with open(manifest, "w") as f:
            json.dump(m, f)

    def get(self, path, headers, method="GET"):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.putrequest(method, path, skip_accept_encoding=True)
            for k, v in headers.items():
                conn.putheader(k, v)
            conn.endheaders()
            resp = conn.getresponse()
            body = resp.read()
            headers = {}
            for k, v in resp.getheaders():  # a field sent twice: its values joined
                k = k.lower()
                headers[k] = headers[k] + ", " + v if k in headers else v
            return resp.status, headers, body
        finally:
            conn.close()

    def decode_delta(self, body, dictionary):
        """A .dcz body past its header, decoded with the dictionary by the zstd CLI."""
        self.assertEqual(body[:8], MAGIC_DCZ)
        self.assertEqual(body[8:40], sha256(dictionary))
        d, f = self.path("dict.bin"), self.path("body.zst")
        write(d, dictionary)
        write(f, body[40:])
        p = subprocess.run(["zstd", "-q", "-d", "-c", "--long=27", "-D", d, f],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout

    def check_serves_deltas(self, types, fallback):
        """Release 2, served: each file's delta with its headers, decoded; what the server
        sends instead without a dictionary it knows or with the delta codings refused
        (fallback(Accept-Encoding): the coding of the file's own output expected then); the
        file itself without Accept-Encoding. types: the file's Content-Type, any of."""
        for name in ("app.js", "style.css"):
            with self.subTest(name):
                new, new_data = self.files[(2, name)]
                old_data = self.files[(1, name)][1]
                url = "/static/" + new
                avail = ":%s:" % base64.b64encode(sha256(old_data)).decode()
                match = 'match="/static/%s.*.%s"' % tuple(name.split("."))
                st, h, body = self.get(url, {})
                self.assertEqual((st, h.get("content-encoding"), body), (200, None, new_data))
                ctype = h.get("content-type")
                self.assertIn(ctype, types[name], h)
                self.assertEqual(h.get("use-as-dictionary"), match)
                self.assertEqual(h.get("cache-control"), "max-age=3600")
                st, h, body = self.get(url, {"Accept-Encoding": ACCEPT_ALL,
                                             "Available-Dictionary": avail})
                self.assertEqual(st, 200)
                self.assertIn(h.get("content-encoding"), ("dcz", "dcb"), h)
                self.assertEqual(h.get("content-type"), ctype, h)
                vary = [v.strip().lower() for v in h.get("vary", "").split(",")]
                self.assertIn("accept-encoding", vary, h)
                self.assertIn("available-dictionary", vary, h)
                self.assertEqual(h.get("use-as-dictionary"), match)
                self.assertLess(len(body), len(new_data) // 10)
                delta = self.path("r2", "static", "%s.%s.%s" % (new, sha256(old_data).hex()[:16],
                                                                h["content-encoding"]))
                self.assertTrue(os.path.isfile(delta), "sent as %s, no such delta" % h["content-encoding"])
                self.assertEqual(body, read(delta), "not the delta's bytes")
                if h["content-encoding"] == "dcz":
                    self.assertEqual(self.decode_delta(body, old_data), new_data)
                else:  # no brotli 1.1 decoder here: the header at least
                    self.assertEqual(body[:4], MAGIC_DCB)
                    self.assertEqual(body[4:36], sha256(old_data))
                # A client that takes dcz but not dcb gets the .dcz.
                for accept in ("gzip, dcz", "dcb;q=0, dcz", "br, dcz;q=0.5"):
                    st, h, body = self.get(url, {"Accept-Encoding": accept,
                                                 "Available-Dictionary": avail})
                    self.assertEqual((st, h.get("content-encoding")), (200, "dcz"), accept)
                    self.assertEqual(self.decode_delta(body, old_data), new_data, accept)
                for headers, why in (
                        ({"Accept-Encoding": ACCEPT_ALL}, "no Available-Dictionary"),
                        ({"Accept-Encoding": "dcb;q=0, dcz;q=0, gzip", "Available-Dictionary": avail},
                         "the delta codings refused"),
                        ({"Accept-Encoding": ACCEPT_ALL,
                          "Available-Dictionary": ":%s:" % base64.b64encode(b"\1" * 32).decode()},
                         "a dictionary the server has no delta for"),
                        ({"Available-Dictionary": avail}, "no Accept-Encoding")):
                    st, h, body = self.get(url, headers)
                    want = fallback(headers.get("Accept-Encoding", ""))
                    self.assertEqual((st, h.get("content-encoding")), (200, want), why)
                    suffix = {"br": ".br", "gzip": ".gz", None: ""}[want]
                    self.assertEqual(body, read(self.path("r2", "static", new + suffix)), why)
                    self.assertEqual(h.get("content-type"), ctype, why)
                    self.assertEqual(h.get("use-as-dictionary"), match, why)
        # The page is no dictionary and is not cached; an unknown file is a 404.
        st, h, _ = self.get("/", {"Accept-Encoding": ACCEPT_ALL})
        self.assertEqual((st, h.get("use-as-dictionary"), h.get("cache-control")),
                         (200, None, "no-store"))
        st, h, _ = self.get("/static/nothing.js", {"Accept-Encoding": ACCEPT_ALL})
        self.assertEqual((st, h.get("use-as-dictionary")), (404, None))

    def check_delta_requests(self):
        """Release 2's deltas asked for as caches and download managers ask: HEAD, a
        conditional GET, a range. HEAD: the GET's status and headers, the delta's length, no
        body (a Content-Length, if any, the delta's). A validator of the delta: 304, still varying on Available-Dictionary; one of the
        .gz (a cache that holds the .gz and now has the dictionary): the delta whole, never a
        304 that would keep the .gz in a delta's place. A range: bytes of the delta as on
        disk (206, Content-Range of its size), or the whole delta (200): a range of an encoded
        answer counts in its encoded bytes (RFC 9110, 14.1.1)."""
        for name in ("app.js", "style.css"):
            with self.subTest(name):
                new, _ = self.files[(2, name)]
                old_data = self.files[(1, name)][1]
                url = "/static/" + new
                ask = {"Accept-Encoding": ACCEPT_ALL,
                       "Available-Dictionary": ":%s:" % base64.b64encode(sha256(old_data)).decode()}
                st, h, body = self.get(url, ask)
                self.assertEqual(st, 200)
                coding = h.get("content-encoding")
                self.assertIn(coding, ("dcz", "dcb"), h)
                delta = read(self.path("r2", "static", "%s.%s.%s"
                                       % (new, sha256(old_data).hex()[:16], coding)))
                self.assertEqual(body, delta)
                # HEAD
                st, hh, hbody = self.get(url, ask, method="HEAD")
                self.assertEqual((st, hbody), (200, b""))
                for k in ("content-encoding", "content-type", "vary", "use-as-dictionary",
                          "etag", "last-modified"):
                    self.assertEqual(hh.get(k), h.get(k), "HEAD's %s" % k)
                # A length, if HEAD gives one (RFC 9110 9.3.2: it may not; Caddy 2.6 does
                # not), is the delta's.
                self.assertIn(hh.get("content-length"), (None, str(len(delta))))
                # A conditional GET with the delta's own validator.
                self.assertTrue(h.get("etag") or h.get("last-modified"), h)
                cond = dict(ask)
                if h.get("etag"):
                    cond["If-None-Match"] = h["etag"]
                else:
                    cond["If-Modified-Since"] = h["last-modified"]
                st, ch, cbody = self.get(url, cond)
                self.assertEqual((st, cbody), (304, b""), ch)
                cvary = [v.strip().lower() for v in ch.get("vary", "").split(",")]
                self.assertIn("available-dictionary", cvary, ch)
                self.assertIn("accept-encoding", cvary, ch)
                # The .gz's validator while the delta is what would be sent.
                st, gh, _ = self.get(url, {"Accept-Encoding": "gzip"})
                self.assertEqual((st, gh.get("content-encoding")), (200, "gzip"), gh)
                gz_etag = bool(gh.get("etag")) and gh["etag"] != h.get("etag")
                if gz_etag:
                    st, xh, xbody = self.get(url, dict(ask, **{"If-None-Match": gh["etag"]}))
                    self.assertEqual((st, xh.get("content-encoding"), xbody),
                                     (200, coding, delta), "the .gz's ETag answered")
                # A range of the delta.
                self.assertGreater(len(delta), 40)
                st, rh, rbody = self.get(url, dict(ask, Range="bytes=10-29"))
                self.assertIn(st, (200, 206), rh)
                self.assertEqual(rh.get("content-encoding"), coding, rh)
                if st == 206:
                    self.assertEqual(rbody, delta[10:30])
                    self.assertEqual(rh.get("content-range"), "bytes 10-29/%d" % len(delta))
                else:
                    self.assertEqual(rbody, delta)
                print("%s: HEAD ok, 304 on %s, the .gz's ETag %s, range %d" % (
                    name, "ETag" if h.get("etag") else "Last-Modified",
                    "answered with the delta" if gz_etag else "absent (not tried)", st))

    def check_chromium_takes_deltas(self):
        """chromium loads release 1's page, then release 2's (one profile, a server each, on
        the same port): the access log shows release 2's script and style sent as deltas,
        and the page what release 2's script computes. Release 1's visit is made until the
        profile keeps both files as dictionaries (chromium_first_visit)."""
        chromium = chromium_binary()
        if not chromium:
            self.skipTest("chromium not found (apt-get install chromium; .ci/deps test has it)")
        base = "http://127.0.0.1:%d" % self.port
        doms = {}
        logs = {}
        profile = self.path("profile")
        for release in (1, 2):
            server = self.serve(release)
            if release == 1:
                profile, doms[1] = chromium_first_visit(
                    self, chromium, profile, base + "/",
                    ["%s/static/%s" % (base, self.files[(1, name)][0]) for name in ("app.js", "style.css")])
            else:
                doms[2] = chromium_dom(self, chromium, profile, base + "/")
            server.stop()
            logs[release] = server.log_lines()
        for release in (1, 2):
            self.assertIn(expected_text(release), doms[release],
                          "release %d's page did not show what its script computes:\n%s\n%s"
                          % (release, doms[release][-2000:], logs[release]))
        for name in ("app.js", "style.css"):
            uri = "/static/" + self.files[(2, name)][0]
            hits = [l for l in logs[2] if l[0] == uri]
            self.assertTrue(hits, "release 2's %s never requested: %s" % (name, logs[2]))
            avail = ":%s:" % base64.b64encode(sha256(self.files[(1, name)][1])).decode()
            self.assertEqual(hits[0][1], avail, "chromium did not say it holds release 1's %s: %s"
                             % (name, logs[2]))
            self.assertIn(hits[0][2], ("dcz", "dcb"), logs[2])
            self.assertEqual(hits[0][3], "200", logs[2])
        print("chromium took %s" % ", ".join("%s as %s" % (l[0], l[2]) for l in logs[2]))


class DeltaServing(Releases):
    """nginx, configured with `server-config nginx` (both parts)."""

    def setUp(self):
        self.nginx = find_binary("nginx")
        if not self.nginx:
            self.skipTest("nginx not found (apt-get install nginx)")
        super().setUp()

    def serve(self, release):
        """nginx serving release N from its generated include, on self.port."""
        work = self.path("nginx%d" % release)
        os.mkdir(work)
        incs = []
        for part in ("http", "location"):
            r = run(["server-config", "nginx", "--part", part, "--location", "/static/",
                     self.manifests[release]])
            self.assertEqual(r.rc, 0, r)
            inc = os.path.join(work, part + ".conf")
            write(inc, r.out.encode())
            incs.append(inc)
        server = Nginx(self, self.path("r%d" % release), work, self.nginx, self.port, *incs)
        server.start()
        return server

    def test_nginx_serves_deltas(self):
        self.serve(2)
        # This nginx has no brotli_static: .gz to whoever accepts gzip.
        self.check_serves_deltas({"app.js": ("application/javascript",), "style.css": ("text/css",)},
                                 lambda accept: "gzip" if "gzip" in accept else None)

    def test_nginx_delta_requests(self):
        self.serve(2)
        self.check_delta_requests()

    @full_only("a real browser, started twice")
    def test_chromium_takes_deltas(self):
        self.check_chromium_takes_deltas()


class ApacheDeltaServing(Releases):
    """Apache httpd, configured with `server-config apache`, `apache2 -t` first."""

    def setUp(self):
        self.apache, why = apache_binary()
        if not self.apache:
            self.skipTest(why)
        super().setUp()

    def serve(self, release, alias=False, with_alias_option=True):
        """Apache serving release N from its generated include, on self.port. alias: its
        static/ through an `Alias /static/ .../rN/static/`, the DocumentRoot another
        directory (the page only), and --alias given to server-config unless told not to."""
        work = self.path("apache%d" % release)
        os.mkdir(work)
        site = self.path("r%d" % release)
        args = ["server-config", "apache", "--location", "/static/"]
        if alias:
            docroot = self.path("docroot%d" % release)
            os.mkdir(docroot)
            shutil.copy(os.path.join(site, "index.html"), docroot)
            if with_alias_option:
                args += ["--alias", os.path.join(site, "static")]
        r = run(args + [self.manifests[release]])
        self.assertEqual(r.rc, 0, r)
        inc = os.path.join(work, "pc-static.conf")
        write(inc, r.out.encode())
        server = Apache(self, docroot if alias else site, work, self.apache, self.port, inc,
                        alias=("/static/", os.path.join(site, "static")) if alias else None)
        t = server.configtest()
        self.assertEqual(t.returncode, 0, "apache2 -t:\n%s\n%s"
                         % (t.stdout.decode(errors="replace"), r.out))
        server.start()
        return server

    def test_apache_serves_deltas(self):
        self.serve(2)
        # README.md's rules: .br, else .gz; q=0 refuses either.
        self.check_serves_deltas(
            {"app.js": ("application/javascript", "text/javascript"), "style.css": ("text/css",)},
            lambda accept: "br" if re.search(r"\bbr\b", accept) else
            "gzip" if "gzip" in accept else None)

    def test_apache_delta_requests(self):
        self.serve(2)
        self.check_delta_requests()

    @full_only("a real browser, started twice")
    def test_chromium_takes_deltas_from_apache(self):
        self.check_chromium_takes_deltas()

    def test_apache_alias(self):
        """The files served through an Alias (Django's deployment docs' way): without --alias
        the rules look below DocumentRoot and find no delta (.br goes); with it, every check
        of test_apache_serves_deltas and test_apache_delta_requests."""
        old_data = self.files[(1, "app.js")][1]
        ask = {"Accept-Encoding": ACCEPT_ALL,
               "Available-Dictionary": ":%s:" % base64.b64encode(sha256(old_data)).decode()}
        url = "/static/" + self.files[(2, "app.js")][0]
        server = self.serve(2, alias=True, with_alias_option=False)
        st, h, _ = self.get(url, ask)
        self.assertEqual((st, h.get("content-encoding")), (200, "br"), h)
        server.stop()
        shutil.rmtree(self.path("apache2"))
        shutil.rmtree(self.path("docroot2"))
        self.serve(2, alias=True)
        self.check_serves_deltas(
            {"app.js": ("application/javascript", "text/javascript"), "style.css": ("text/css",)},
            lambda accept: "br" if re.search(r"\bbr\b", accept) else
            "gzip" if "gzip" in accept else None)
        self.check_delta_requests()


class CaddyDeltaServing(Releases):
    """Caddy 2, its site block importing `server-config caddy`, `caddy validate` first."""

    def setUp(self):
        self.caddy = find_binary("caddy")
        if not self.caddy:
            self.skipTest("caddy not found (apt-get install caddy)")
        super().setUp()

    def serve(self, release, in_handle=False):
        """Caddy serving release N with its generated snippet, on self.port."""
        work = self.path("caddy%d" % release)
        os.mkdir(work)
        r = run(["server-config", "caddy", "--location", "/static/", self.manifests[release]])
        self.assertEqual(r.rc, 0, r)
        snippet = os.path.join(work, "pc-static.caddy")
        write(snippet, r.out.encode())
        # Files named as a delta with an empty <id>: what {path}.{pc_dict_id}.dcz names when
        # the client holds no dictionary the map knows. Never to be sent.
        for name in ("app.js", "style.css"):
            if (release, name) in self.files:
                for coding in ("dcb", "dcz"):
                    write(self.path("r%d" % release, "static",
                                    "%s..%s" % (self.files[(release, name)][0], coding)),
                          b"not a delta")
        server = Caddy(self, self.path("r%d" % release), work, self.caddy, self.port, snippet,
                       in_handle=in_handle)
        v = server.validate()
        self.assertEqual(v.returncode, 0, "caddy validate:\n%s\n%s"
                         % (v.stdout.decode(errors="replace"), r.out))
        server.start()
        return server

    def test_caddy_serves_deltas(self):
        self.serve(2)
        # README.md's `precompressed br zstd gzip` (no .zst here): .br, else .gz. The type is
        # the snippet's, Go's built-in one, for the file and its delta alike.
        self.check_serves_deltas(
            {"app.js": ("text/javascript; charset=utf-8",),
             "style.css": ("text/css; charset=utf-8",)},
            lambda accept: "br" if re.search(r"\bbr\b", accept) else
            "gzip" if "gzip" in accept else None)

    def test_caddy_delta_requests(self):
        self.serve(2)
        self.check_delta_requests()

    @full_only("a real browser, started twice")
    def test_chromium_takes_deltas_from_caddy(self):
        self.check_chromium_takes_deltas()

    def test_caddy_in_handle(self):
        """The snippet imported inside `handle { }` with file_server, another `handle` sending
        /api/ to an application: `handle` runs before a site-level `route` in Caddy's order,
        so this is where a site with an application puts it; every check holds there."""
        self.serve(2, in_handle=True)
        st, h, body = self.get("/api/x", {"Accept-Encoding": ACCEPT_ALL})
        self.assertEqual((st, body), (200, b"api"))
        self.check_serves_deltas(
            {"app.js": ("text/javascript; charset=utf-8",),
             "style.css": ("text/css; charset=utf-8",)},
            lambda accept: "br" if re.search(r"\bbr\b", accept) else
            "gzip" if "gzip" in accept else None)
        self.check_delta_requests()


class GeneratedConfig(PCTestCase):
    """What server-config prints for a manifest written here, and its refusals: one map entry
    per dictionary, the templates' match patterns, the names it cannot write left out and
    counted, and a configuration nginx -t, apache2 -t and caddy validate accept."""

    def manifest(self, files, name="m.json"):
        path = self.path(name)
        write(path, json.dumps({"precompress": 1, "options": {"formats": ["gz"]},
                                "files": files}).encode())
        return path

    def test_entries(self):
        sha_a, sha_b = "ab" * 32, "cd" * 32
        delta = lambda sha: {"format": "dcz", "from": 0, "dictionary": "x", "sha256": sha, "size": 9}
        m = self.manifest([
            {"path": "js/app.3f2a9c1e4b7d.js", "size": 9, "deltas": [delta(sha_a)]},
            {"path": "js/vendor.0123abcd.js", "size": 9, "deltas": [delta(sha_a), delta(sha_b)]},
            {"path": "app-BfH3k9Qz.css", "size": 9, "deltas": [delta(sha_b)]},
            {"path": "my-element.mjs", "size": 9, "deltas": [delta(sha_b)]},
            {"path": "logo.png", "size": 9, "skipped": "extension"},
            {"path": "broken.js", "size": 9, "error": "Permission denied"},
            {"path": "a b.js", "size": 9}, {"path": "odd$name.js", "size": 9},
            {"path": "Case.js", "size": 9}, {"path": "case.js", "size": 9},
            {"path": self.LONG, "size": 9},
        ])
        r = run(["server-config", "nginx", "--part", "http", "--location", "/s/", m])
        self.assertEqual(r.rc, 0, r)
        for b in (bytes.fromhex(sha_a), bytes.fromhex(sha_b)):
            line = '":%s:" "%s";' % (base64.b64encode(b).decode(), b.hex()[:16])
            self.assertEqual(r.out.count(line), 1, r.out)
        uad = [l.strip() for l in r.out.splitlines() if "match=" in l]
        # nginx's map compares without regard to case: Case.js and case.js are both left out
        # (either would get the other's value).
        self.assertEqual(sorted(uad), sorted([
            '"/s/app-BfH3k9Qz.css" "match=\\"/s/app-*.css\\"";',
            '"/s/js/app.3f2a9c1e4b7d.js" "match=\\"/s/js/app.*.js\\"";',
            '"/s/js/vendor.0123abcd.js" "match=\\"/s/js/vendor.*.js\\"";',
            '"/s/my-element.mjs" "match=\\"/s/my-element.mjs\\"";',
            '"/s/%s" "match=\\"/s/%s\\"";' % (self.LONG, self.LONG.replace("0123abcd", "*"))]),
            r.out)
        self.assertIn("# 4 files left out", r.out)
        # The map's buckets are sized to hold its keys (nginx -t below says whether they do).
        self.assertRegex(r.out, r"\nmap_hash_bucket_size \d+;\nmap_hash_max_size \d+;\n")
        r2 = run(["server-config", "nginx", "--part", "location", "--location", "/s/", m])
        self.assertEqual(r2.rc, 0, r2)
        self.assertIn("location ^~ /s/ {", r2.out)
        self.assertIn("types { application/javascript js dcb dcz; }", r2.out)
        self.assertIn("types { text/css css dcb dcz; }", r2.out)
        self.assertIn("# 1 file with deltas of a type not known here", r2.out)
        nginx = find_binary("nginx")
        if not nginx:
            self.skipTest("nginx not found: the configuration not checked by nginx -t")
        write(self.path("http.conf"), r.out.encode())
        write(self.path("loc.conf"), r2.out.encode())
        write(self.path("nginx.conf"), (
            "pid %(d)s/nginx.pid; error_log %(d)s/error.log; events {}\n"
            "http { include /etc/nginx/mime.types; include %(d)s/http.conf;\n"
            "server { listen 127.0.0.1:%(p)d; root %(d)s; include %(d)s/loc.conf; } }\n"
            % {"d": self.tmp, "p": free_port()}).encode())
        p = subprocess.run([nginx, "-t", "-p", self.tmp + "/", "-c", self.path("nginx.conf"),
                            "-e", self.path("error.log")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        self.assertEqual(p.returncode, 0, p.stdout.decode(errors="replace"))

    SHA_A, SHA_B = "ab" * 32, "cd" * 32
    # A URL of 258 bytes below /s/ (a name of 242 bytes: NAME_MAX less a delta's suffix).
    LONG = "js/" + "l" * 234 + ".0123abcd.js"

    def mixed_manifest(self, odd):
        """Files with deltas against two dictionaries, files not compressed, names the
        generators cannot write (`odd`, with a space and a `$`), two names equal but for
        case."""
        delta = lambda sha: {"format": "dcz", "from": 0, "dictionary": "x", "sha256": sha, "size": 9}
        return self.manifest([
            {"path": "js/app.3f2a9c1e4b7d.js", "size": 9, "deltas": [delta(self.SHA_A)]},
            {"path": "js/vendor.0123abcd.js", "size": 9,
             "deltas": [delta(self.SHA_A), delta(self.SHA_B)]},
            {"path": "app-BfH3k9Qz.css", "size": 9, "deltas": [delta(self.SHA_B)]},
            {"path": "data.bin", "size": 9, "deltas": [delta(self.SHA_B)]},
            {"path": "my-element.mjs", "size": 9},
            {"path": "logo.png", "size": 9, "skipped": "extension"},
            {"path": "broken.js", "size": 9, "error": "Permission denied"},
            {"path": "a b.js", "size": 9}, {"path": "odd$name.js", "size": 9},
            {"path": odd, "size": 9},
            {"path": "Case.js", "size": 9}, {"path": "case.js", "size": 9},
        ])

    def test_apache_entries(self):
        sha_a, sha_b = self.SHA_A, self.SHA_B
        m = self.mixed_manifest("a,b.js")
        r = run(["server-config", "apache", "--location", "/s/", m])
        self.assertEqual(r.rc, 0, r)
        for b in (bytes.fromhex(sha_a), bytes.fromhex(sha_b)):
            cond = 'RewriteCond "%%{HTTP:Available-Dictionary}" "=:%s:"\n' % base64.b64encode(b).decode()
            rule = 'RewriteRule "^/s/" "-" "[NS,E=PC_ID:%s]"\n' % b.hex()[:16]
            self.assertEqual(r.out.count(cond + rule), 1, r.out)
        uad = re.findall(r'^RewriteRule "\^(.*)\(\\\.\(br\|gz\|zst\)\|\\\.\[0-9a-f\]\{16\}\\\.dc\[bz\]\)\?\$" '
                         r'"-" "\[NS,E=PC_UAD:(.*)\]"$', r.out, re.M)
        # Apache compares URLs with regard to case: Case.js and case.js are two files.
        self.assertEqual(sorted(uad), sorted([
            (r"/s/app-BfH3k9Qz\.css", "/s/app-*.css"), (r"/s/Case\.js", "/s/Case.js"),
            (r"/s/case\.js", "/s/case.js"), (r"/s/js/app\.3f2a9c1e4b7d\.js", "/s/js/app.*.js"),
            (r"/s/js/vendor\.0123abcd\.js", "/s/js/vendor.*.js"),
            (r"/s/data\.bin", "/s/data.bin"),
            (r"/s/my-element\.mjs", "/s/my-element.mjs")]), r.out)
        self.assertIn("# 3 files left out of Use-As-Dictionary", r.out)
        for coding in ("dcb", "dcz"):
            self.assertIn('RewriteCond "%%{DOCUMENT_ROOT}/s/$1.%%{ENV:PC_ID}.%s" -f\n' % coding, r.out)
            self.assertIn('RewriteRule "^/s/([-A-Za-z0-9._~/!&,;=@\']+)$" "/s/$1.%%{ENV:PC_ID}.%s" '
                          '"[NS,PT,L,E=no-gzip:1,E=no-brotli:1]"\n' % coding, r.out)
        r = run(["server-config", "apache", "--location", "/s/", "--alias", "/srv/my app/s/", m])
        self.assertEqual((r.rc, r.out), (2, ""), r)
        r = run(["server-config", "apache", "--location", "/s/", "--alias", "/srv/app/s//", m])
        self.assertEqual(r.rc, 0, r)
        for coding in ("dcb", "dcz"):
            self.assertIn('RewriteCond "/srv/app/s/$1.%%{ENV:PC_ID}.%s" -f\n' % coding, r.out)
        self.assertIn('<Location "/s/">', r.out)
        apache, why = apache_binary()
        if not apache:
            self.skipTest(why + ": the configuration not checked by apache2 -t")
        os.chmod(self.tmp, 0o755)
        inc = self.path("pc.conf")
        write(inc, r.out.encode())
        server = Apache(self, self.tmp, self.path("apache"), apache, free_port(), inc)
        t = server.configtest()
        self.assertEqual(t.returncode, 0, t.stdout.decode(errors="replace"))

    def test_caddy_entries(self):
        sha_a, sha_b = self.SHA_A, self.SHA_B
        m = self.mixed_manifest("odd{x}`.js")
        r = run(["server-config", "caddy", "--location", "/s/", m])
        self.assertEqual(r.rc, 0, r)
        for b in (bytes.fromhex(sha_a), bytes.fromhex(sha_b)):
            line = '\t":%s:" "%s"\n' % (base64.b64encode(b).decode(), b.hex()[:16])
            self.assertEqual(r.out.count(line), 1, r.out)
        uad = re.findall(r'^\t"(/s/[^"]*)" `match="([^"`]*)"`$', r.out, re.M)
        # Caddy's map compares with regard to case: Case.js and case.js are two files.
        self.assertEqual(sorted(uad), sorted([
            ("/s/app-BfH3k9Qz.css", "/s/app-*.css"), ("/s/Case.js", "/s/Case.js"),
            ("/s/case.js", "/s/case.js"), ("/s/data.bin", "/s/data.bin"),
            ("/s/js/app.3f2a9c1e4b7d.js", "/s/js/app.*.js"),
            ("/s/js/vendor.0123abcd.js", "/s/js/vendor.*.js"),
            ("/s/my-element.mjs", "/s/my-element.mjs")]), r.out)
        self.assertIn("# 3 files left out of Use-As-Dictionary", r.out)
        # A type per extension with a delta kept (js, css); .bin's deltas go without one.
        self.assertEqual(re.findall(r"^\theader @pc_type_(\w+) Content-Type \"([^\"]*)\"$", r.out, re.M),
                         [("css", "text/css; charset=utf-8"),
                          ("js", "text/javascript; charset=utf-8")], r.out)
        self.assertIn("# 1 file with deltas of a type not known here", r.out)
        for coding in ("dcb", "dcz"):
            self.assertIn("\tfile {path}.{pc_dict_id}.%s\n" % coding, r.out)
            self.assertIn("\t\trewrite {path}.{pc_dict_id}.%s\n" % coding, r.out)
        caddy = find_binary("caddy")
        if not caddy:
            self.skipTest("caddy not found: the snippet not checked by caddy validate")
        os.chmod(self.tmp, 0o755)
        snippet = self.path("pc.caddy")
        write(snippet, r.out.encode())
        server = Caddy(self, self.tmp, self.path("caddy"), caddy, free_port(), snippet)
        v = server.validate()
        self.assertEqual(v.returncode, 0, v.stdout.decode(errors="replace"))

    def test_refusals(self):
        good = self.manifest([{"path": "a.js", "size": 1}])
        write(self.path("bad.json"), b"{not json")
        write(self.path("other.json"), b'{"precompress": 2, "files": []}')
        for args, rc, said in (
                (["nginx", "--part", "http", self.path("bad.json")], 1, "invalid JSON"),
                (["nginx", "--part", "http", self.path("other.json")], 1,
                 "not a precompress manifest"),
                (["nginx", "--part", "http", self.path("none.json")], 1, "No such file"),
                (["nginx", "--part", "http", "--location", "static/", good], 2, "--location"),
                (["nginx", "--part", "http", "--location", "/a b/", good], 2, "--location"),
                (["nginx", "--part", "server", good], 2, "usage"),
                (["apache", "--part", "http", good], 2, "usage"),
                (["apache", "--location", "/a,b/", good], 2, "--location"),
                (["apache", "--alias", "static", good], 2, "--alias"),
                (["apache", "--alias", "/srv/../etc", good], 2, "--alias"),
                (["nginx", "--part", "location", "--alias", "srv", good], 2, "--alias"),
                (["nginx", "--part", "http", "--alias", "/srv/../x", good], 2, "--alias"),
                (["caddy", "--alias", "/srv", good], 2, "usage"),
                (["apache", self.path("bad.json")], 1, "invalid JSON"),
                (["apache"], 2, "usage"),
                (["caddy", "--part", "http", good], 2, "usage"),
                (["caddy", "--location", "/a{b}/", good], 2, "--location"),
                (["caddy", self.path("other.json")], 1, "not a precompress manifest"),
                (["lighttpd", good], 2, "usage"),
                (["nginx", good], 2, "nginx needs --part http"),
                (["nginx", "--part", "http"], 2, "MANIFEST is missing"),
                (["nginx", "--part", "http", good, good], 2, "one MANIFEST only"),
                (["nginx", "--part", "http", "--frob", good], 2, "unknown option"),
                (["nginx", "--part"], 2, "without its value"),
                ([], 2, "which server")):
            r = run(["server-config"] + args)
            self.assertEqual((r.rc, r.out), (rc, ""), (args, r))
            self.assertIn(said, r.err, (args, r))

if __name__ == "__main__":
    main()
