#!/usr/bin/python3
"""End to end: what precompress writes is served right by real nginx, Caddy and Apache httpd,
each configured with README.md's own snippet.

README.md's section "Serving the outputs" holds one fenced block per server (```nginx,
```caddyfile, ```apache). Each test reads its block from README.md and pastes it, as it is,
into a configuration of its own (nginx: the server block; Caddy: the site block; Apache: the
<Directory> of the files), so that the documentation cannot drift from what is tested. The
Caddy configuration must also pass `caddy validate`.

The fixtures are compressed (with --zstd when the build has zstd), then each server serves
the tree on 127.0.0.1, on a free port, and every source file is requested (http.client, no
decoding) with Accept-Encoding br, gzip, zstd, "gzip, br", "br;q=0, gzip", "gzip;q=0" and
none. Each response is checked: status 200; Content-Encoding is the one the server should
choose among the outputs that exist (a file without outputs, a .png or an empty file, is
always sent as it is); the body is byte for byte that output's file (and decodes to the
source) or the source itself; Content-Type is the identity response's, never a compressed
type; Last-Modified is the source's mtime; compressed responses carry Vary: Accept-Encoding,
and identity responses of files that have outputs carry it where the server does (Caddy 2.6
does not: asserted, and said in docs/serving.md). What each server does with q=0 is asserted
too.

A server whose package is missing is skipped with a message naming it; .ci/deps installs them.
"""
import sys

sys.dont_write_bytecode = True

import email.utils
import http.client
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import time
import unittest
import urllib.parse

from pctest import SRC_ROOT, PCTestCase, decode, free_port, fsb, have_zstd_build, main, run

README = os.path.join(SRC_ROOT, "README.md")
SECTION = "## Serving the outputs"

# Accept-Encoding values requested for every file (None: no header at all).
ACCEPT = (None, "br", "gzip", "zstd", "gzip, br", "br;q=0, gzip", "gzip;q=0")
# Content-Encoding token -> suffix of our output file.
SUFFIX = {"br": b".br", "gzip": b".gz", "zstd": b".zst"}
FMT = {"br": "br", "gzip": "gz", "zstd": "zst"}
# Types a compressed response must never be labelled with.
COMPRESSED_TYPES = ("application/gzip", "application/x-gzip", "application/brotli",
                    "application/x-brotli", "application/zstd", "application/x-zstd")
# Content-Type a server must give these sources (base type, any of).
KNOWN_TYPES = {
    b".html": ("text/html",),
    b".css": ("text/css",),
    b".js": ("application/javascript", "text/javascript"),
    b".json": ("application/json",),
    b".svg": ("image/svg+xml",),
    b".png": ("image/png",),
    b".txt": ("text/plain",),
}
# Sources whose names hold what a URL escapes (served from odd/ in the site's copy).
ODD_NAMES = ("100%.css", "50%25 off.css", "a#b.css", "what?.css", "sp ace.css", "plus+sign.css",
             "semi;colon.css", "amp&eq=.css")
START_TIMEOUT = 15
REQUEST_TIMEOUT = 10

COUNTS = {}  # server -> (files, requests), printed at the end


def tearDownModule():
    for server in sorted(COUNTS):
        files, requests = COUNTS[server]
        print("%s: %d files, %d requests checked" % (server, files, requests))
    sys.stdout.flush()


def readme_snippet(lang):
    """The one ```LANG block of README.md's "Serving the outputs" section, as it is."""
    with open(README) as f:
        text = f.read()
    at = text.find("\n" + SECTION + "\n")
    if at < 0:
        raise AssertionError("README.md has no section %r" % SECTION)
    end = text.find("\n## ", at + 1)
    section = text[at:end if end >= 0 else len(text)]
    blocks = re.findall(r"^```%s\n(.*?)^```$" % re.escape(lang), section, re.S | re.M)
    if len(blocks) != 1:
        raise AssertionError("README.md's %r section: want one ```%s block, found %d"
                             % (SECTION, lang, len(blocks)))
    return blocks[0]


def indent(text, prefix):
    return "".join(prefix + l if l.strip() else l for l in text.splitlines(True))


def find_binary(name):
    path = shutil.which(name)
    if path:
        return path
    for d in ("/usr/sbin", "/usr/local/sbin", "/sbin"):  # sbin is not on every user's PATH
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def source_files(root):
    """Regular source files of the site (bytes rel paths), our outputs left out."""
    out = []
    broot = fsb(root)
    for dirpath, dirnames, filenames in os.walk(broot):
        for n in filenames:
            full = os.path.join(dirpath, n)
            if not stat.S_ISREG(os.lstat(full).st_mode):
                continue
            if any(n.endswith(s) for s in SUFFIX.values()) and os.path.exists(full.rsplit(b".", 1)[0]):
                continue
            out.append(os.path.relpath(full, broot))
    return sorted(out)


def accepted(accept):
    """Accept-Encoding -> {coding: q} (RFC 9110; a missing q is 1)."""
    out = {}
    for part in (accept or "").split(","):
        name, _, params = part.strip().partition(";")
        name = name.strip().lower()
        if not name:
            continue
        q = 1.0
        m = re.search(r"q\s*=\s*([0-9.]+)", params)
        if m:
            q = float(m.group(1))
        out[name] = q
    return out


def one(headers, name):
    v = headers.get(name)
    return ", ".join(v) if v else None


def base_type(ct):
    return ct.split(";", 1)[0].strip().lower() if ct else None


class Server:
    """A server process in its own process group, stopped by stop()."""

    name = None
    # Codings the server can send from a sidecar file, in its order of preference.
    SERVES = ()
    # Codings whose q=0 the server ignores (it sends them anyway when named).
    IGNORES_Q0 = ()
    # Whether an identity response of a file that has outputs says Vary: Accept-Encoding
    # (None: not asserted).
    VARY_ON_IDENTITY = None

    def __init__(self, test, site, work):
        self.test = test
        self.site = site
        self.work = work
        self.port = free_port()
        self.proc = None
        self.log = os.path.join(work, "server.out")

    def command(self):
        raise NotImplementedError

    def env(self):
        return dict(os.environ)

    # A server's own error log beside its output, when it keeps one.
    error_log = None

    def diagnostics(self):
        out = ""
        for title, path in (("", self.log), ("\n--- error.log\n", self.error_log)):
            try:
                with open(path, "rb") as f:
                    out += title + f.read()[-3000:].decode(errors="replace")
            except (OSError, TypeError):
                pass
        return out

    def start(self):
        with open(self.log, "wb") as logf:
            self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=logf,
                                         stderr=subprocess.STDOUT, cwd=self.work, env=self.env(),
                                         start_new_session=True)
        self.test.addCleanup(self.stop)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if self.proc.poll() is not None:
                self.test.fail("%s exited with %s before answering:\n%s"
                               % (self.name, self.proc.returncode, self.diagnostics()))
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"HEAD / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
                    if s.recv(16).startswith(b"HTTP/"):
                        return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.test.fail("%s did not answer on 127.0.0.1:%d within %ds:\n%s"
                               % (self.name, self.port, START_TIMEOUT, self.diagnostics()))
            time.sleep(0.05)

    def stop(self):
        p = self.proc
        if p is None or p.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                return
            try:
                p.wait(timeout=wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # Workers share the group; make sure none outlives the master.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def expected_encoding(self, accept, existing):
        """Content-Encoding the server must answer with (None: identity): the first coding
        of its order that the client accepts (q > 0, unless the server ignores q=0 for it)
        and whose output exists."""
        acc = accepted(accept)
        for enc in self.SERVES:
            if enc in existing and enc in acc and (acc[enc] > 0 or enc in self.IGNORES_Q0):
                return enc
        return None


class Nginx(Server):
    name = "nginx"
    # brotli_static is asked before gzip_static, each honouring q=0; nginx has no
    # zstd_static, so a .zst is never served.
    SERVES = ("br", "gzip")
    VARY_ON_IDENTITY = True

    def __init__(self, test, site, work, binary, module):
        super().__init__(test, site, work)
        self.binary = binary
        self.module = module
        self.conf = os.path.join(work, "nginx.conf")
        self.error_log = os.path.join(work, "error.log")
        for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.mkdir(os.path.join(work, d))
        with open(self.conf, "w") as f:
            f.write(self.config(readme_snippet("nginx")))

    def config(self, snippet):
        w = self.work
        # Workers run as `user` when the master is root; the temp dirs are 0700,
        # so they must run as root too. Ignored (with a notice) when not root.
        user = "user root;\n" if os.geteuid() == 0 else ""
        return """load_module %(module)s;
%(user)sdaemon off;
master_process on;
worker_processes 1;
pid %(w)s/nginx.pid;
error_log %(w)s/error.log info;
events { worker_connections 64; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log %(w)s/access.log;
    client_body_temp_path %(w)s/body;
    proxy_temp_path %(w)s/proxy;
    fastcgi_temp_path %(w)s/fastcgi;
    uwsgi_temp_path %(w)s/uwsgi;
    scgi_temp_path %(w)s/scgi;
    server {
        listen 127.0.0.1:%(port)d;
        server_name localhost;
        root "%(site)s";
        location / { }
        # README.md's snippet:
%(snippet)s    }
}
""" % {"module": self.module, "user": user, "w": w, "port": self.port, "site": self.site,
       "snippet": indent(snippet, " " * 8)}

    def command(self):
        return [self.binary, "-p", self.work + "/", "-c", self.conf, "-e", self.error_log]


def caddy_env(home):
    """Caddy's environment: its data and configuration under `home`, not the user's."""
    e = dict(os.environ)
    e["HOME"] = home
    e["XDG_DATA_HOME"] = os.path.join(home, "data")
    e["XDG_CONFIG_HOME"] = os.path.join(home, "config")
    return e


class Caddy(Server):
    name = "caddy"
    # `precompressed br zstd gzip`: the client's q-values first (q=0 refused), the
    # server's order breaking ties.
    SERVES = ("br", "zstd", "gzip")

    def __init__(self, test, site, work, binary):
        super().__init__(test, site, work)
        self.binary = binary
        self.home = os.path.join(work, "home")
        os.mkdir(self.home)
        self.caddyfile = os.path.join(work, "Caddyfile")
        with open(self.caddyfile, "w") as f:
            f.write(self.config(readme_snippet("caddyfile")))
        # Caddy 2.6 sends Vary: Accept-Encoding only with a compressed response
        # (caddyserver/caddy#5849); what later versions do is not asserted.
        v = subprocess.run([binary, "version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.version = v.stdout.decode(errors="replace").strip()
        if re.match(r"v?2\.6\.", self.version):
            self.VARY_ON_IDENTITY = False

    def config(self, snippet):
        return """{
	admin off
	auto_https off
	storage file_system {
		root "%(home)s/storage"
	}
}

http://127.0.0.1:%(port)d {
	bind 127.0.0.1
	root * "%(site)s"
	# README.md's snippet:
%(snippet)s}
""" % {"home": self.home, "port": self.port, "site": self.site, "snippet": indent(snippet, "\t")}

    def command(self):
        return [self.binary, "run", "--config", self.caddyfile, "--adapter", "caddyfile"]

    def validate(self):
        return subprocess.run([self.binary, "validate", "--config", self.caddyfile, "--adapter", "caddyfile"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=self.env(),
                              cwd=self.work, timeout=60)

    def env(self):
        return caddy_env(self.home)

    def expected_encoding(self, accept, existing):
        acc = accepted(accept)
        best = None
        for enc in self.SERVES:
            if enc in existing and acc.get(enc, 0) > 0 and (best is None or acc[enc] > acc[best]):
                best = enc
        return best


APACHE_MODULES = "/usr/lib/apache2/modules"
DEBIAN_MIME_CONF = "/etc/apache2/mods-available/mime.conf"


class Apache(Server):
    name = "apache"
    # README.md's rules: .br, then .gz, each only when the client names it without q=0.
    SERVES = ("br", "gzip")
    VARY_ON_IDENTITY = True
    MODULES = ("mpm_event", "authz_core", "mime", "rewrite", "headers")

    def __init__(self, test, site, work, binary):
        super().__init__(test, site, work)
        self.binary = binary
        self.conf = os.path.join(work, "apache2.conf")
        self.error_log = os.path.join(work, "error.log")
        for d in ("run", "lock"):
            os.mkdir(os.path.join(work, d))
        with open(self.conf, "w") as f:
            f.write(self.config(readme_snippet("apache")))

    def config(self, snippet):
        # As root, httpd's children run as User (never root): they must reach the site.
        user = "User nobody\nGroup nogroup\n" if os.geteuid() == 0 else ""
        # Debian's mime.conf as the packaged server has it (it labels .gz application/x-gzip
        # and .br the language Breton); what matters of it when it is not there.
        mime = "Include %s" % DEBIAN_MIME_CONF if os.path.isfile(DEBIAN_MIME_CONF) else \
            "AddType application/x-gzip .gz .tgz\nAddLanguage br .br"
        mods = "".join("LoadModule %s_module %s/mod_%s.so\n" % (m, APACHE_MODULES, m) for m in self.MODULES)
        return """ServerRoot "%(w)s"
ServerName 127.0.0.1
Listen 127.0.0.1:%(port)d
%(mods)s%(user)sPidFile "%(w)s/run/apache2.pid"
DefaultRuntimeDir "%(w)s/run"
Mutex file:%(w)s/lock default
ErrorLog "%(w)s/error.log"
LogLevel warn
TypesConfig /etc/mime.types
%(mime)s
DocumentRoot "%(site)s"
<Directory />
    AllowOverride None
    Require all denied
</Directory>
<Directory "%(site)s">
    Require all granted
    # README.md's snippet:
%(snippet)s</Directory>
""" % {"w": self.work, "port": self.port, "mods": mods, "user": user, "site": self.site, "mime": mime,
       "snippet": indent(snippet, " " * 4)}

    def command(self):
        return [self.binary, "-f", self.conf, "-DFOREGROUND"]


class ServingBase(PCTestCase):
    """Compress the fixtures, serve them, request every file under every Accept-Encoding."""

    def prepare_site(self):
        root = self.copy_site()
        # Names a URL must escape, and which a server's rules must not decode twice: a
        # rewrite that puts the decoded name back into a URL reads "%41" as "A", and
        # starts a query string at "?" or a fragment at "#".
        odd = os.path.join(root, "odd")
        os.mkdir(odd)
        body = b"".join(b".rule-%d { margin: %dpx; }\n" % (k, k % 7) for k in range(300))
        for name in ODD_NAMES:
            with open(os.path.join(odd, name), "wb") as f:
                f.write(body)
        args = ["-q", root]
        self.zstd = have_zstd_build()
        if self.zstd:
            args.insert(0, "--zstd")
        r = run(args)
        self.assertEqual(r.rc, 0, r)
        os.mkdir(self.path("server"))
        # Servers whose workers drop root (Apache's User) must reach the site.
        os.chmod(self.tmp, 0o755)
        return root

    def fetch(self, server, rel, accept):
        path = "/" + urllib.parse.quote(rel, safe="/")
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=REQUEST_TIMEOUT)
        try:
            # http.client adds Accept-Encoding: identity unless told to skip it.
            conn.putrequest("GET", path, skip_accept_encoding=True)
            if accept is not None:
                conn.putheader("Accept-Encoding", accept)
            conn.endheaders()
            resp = conn.getresponse()
            data = resp.read()
            headers = {}
            for k, v in resp.getheaders():
                headers.setdefault(k.lower(), []).append(v.strip())
            return "http://127.0.0.1:%d%s" % (server.port, path), resp.status, headers, data
        finally:
            conn.close()

    def check_server(self, server, root):
        broot = fsb(root)
        files = source_files(root)
        self.assertGreaterEqual(len(files), 10, "fixture site looks too small: %r" % files)
        requests = 0
        used, bare = set(), 0
        for i, rel in enumerate(files):
            full = os.path.join(broot, rel)
            with open(full, "rb") as f:
                src = f.read()
            st = os.stat(full)
            existing = {enc for enc, suf in SUFFIX.items() if os.path.isfile(full + suf)}
            bare += not existing
            identity_type = None
            for j, accept in enumerate(ACCEPT):
                with self.subTest(server=server.name, path=rel.decode("utf-8", "replace"),
                                  accept=accept or "(none)"):
                    url, status, headers, data = self.fetch(server, rel, accept)
                    requests += 1
                    where = "%s %s Accept-Encoding: %s" % (server.name, url, accept or "(none)")
                    self.assertEqual(status, 200, "%s: status %s, headers %r" % (where, status, headers))

                    want = server.expected_encoding(accept, existing)
                    got = one(headers, "content-encoding")
                    self.assertEqual(got, want, "%s: Content-Encoding %r, expected %r (outputs present: %s)"
                                     % (where, got, want, sorted(existing) or "none"))
                    if want:
                        used.add(want)
                        with open(full + SUFFIX[want], "rb") as f:
                            self.assertEqual(data, f.read(), "%s: body is not the bytes of our %s output"
                                             % (where, SUFFIX[want].decode()))
                        body = self.path("server", "body-%d-%d" % (i, j))
                        with open(body, "wb") as f:
                            f.write(data)
                        decoded = decode(FMT[want], body)
                    else:
                        self.assertEqual(data, src, "%s: identity body is not the source" % where)
                        decoded = data
                    self.assertEqual(decoded, src, "%s: body does not decode to the source (%d vs %d bytes)"
                                     % (where, len(decoded), len(src)))
                    length = one(headers, "content-length")
                    if length is not None:
                        self.assertEqual(int(length), len(data), "%s: Content-Length" % where)

                    ct = one(headers, "content-type")
                    if accept is None:
                        identity_type = ct
                        ext = os.path.splitext(rel)[1].lower()
                        if ext in KNOWN_TYPES:
                            self.assertIn(base_type(ct), KNOWN_TYPES[ext], "%s: Content-Type %r" % (where, ct))
                    else:
                        self.assertEqual(ct, identity_type, "%s: Content-Type %r differs from the identity "
                                         "response's %r" % (where, ct, identity_type))
                    self.assertNotIn(base_type(ct), COMPRESSED_TYPES, "%s: Content-Type %r" % (where, ct))
                    self.assertIsNone(one(headers, "content-language"), "%s: Content-Language" % where)

                    lm = one(headers, "last-modified")
                    self.assertIsNotNone(lm, "%s: no Last-Modified" % where)
                    self.assertEqual(int(email.utils.parsedate_to_datetime(lm).timestamp()), int(st.st_mtime),
                                     "%s: Last-Modified %r is not the source's mtime %s" % (where, lm, st.st_mtime))

                    vary = [v.strip().lower() for v in (one(headers, "vary") or "").split(",")]
                    if want:
                        self.assertIn("accept-encoding", vary, "%s: compressed response without "
                                      "Vary: Accept-Encoding (headers %r)" % (where, headers))
                    elif set(existing) & set(server.SERVES) and server.VARY_ON_IDENTITY is not None:
                        self.assertEqual("accept-encoding" in vary, server.VARY_ON_IDENTITY,
                                         "%s: identity response of a file with outputs: Vary %r, expected "
                                         "Vary: Accept-Encoding %s" % (where, one(headers, "vary"),
                                                                       server.VARY_ON_IDENTITY and "present"
                                                                       or "absent"))
        # The fixtures must make each server serve every encoding it can, and hold files
        # without outputs (sent as they are whatever the client accepts).
        can = {"br", "gzip"} | ({"zstd"} if self.zstd and "zstd" in server.SERVES else set())
        self.assertEqual(used, can, "%s served encodings %s, expected %s" % (server.name, sorted(used), sorted(can)))
        self.assertGreater(bare, 0, "no fixture file without outputs")
        COUNTS[server.name] = (len(files), requests)


class NginxServing(ServingBase):
    def test_nginx_serves_precompressed(self):
        binary = find_binary("nginx")
        if not binary:
            self.skipTest("nginx not found (apt-get install nginx libnginx-mod-http-brotli-static)")
        module = nginx_brotli_module(binary)
        if not module:
            self.skipTest("nginx's brotli static module (ngx_http_brotli_static_module.so) not found "
                          "(apt-get install libnginx-mod-http-brotli-static)")
        root = self.prepare_site()
        server = Nginx(self, root, self.path("server"), binary, module)
        server.start()
        self.check_server(server, root)


class CaddyServing(ServingBase):
    def test_caddy_serves_precompressed(self):
        binary = find_binary("caddy")
        if not binary:
            self.skipTest("caddy not found (apt-get install caddy)")
        root = self.prepare_site()
        server = Caddy(self, root, self.path("server"), binary)
        v = server.validate()
        self.assertEqual(v.returncode, 0, "caddy validate refuses the configuration made with README.md's "
                         "snippet:\n%s\n%s" % (v.stdout.decode(errors="replace"), open(server.caddyfile).read()))
        server.start()
        self.check_server(server, root)


class ApacheServing(ServingBase):
    def test_apache_serves_precompressed(self):
        binary = find_binary("apache2")
        if not binary:
            self.skipTest("apache2 not found (apt-get install apache2)")
        missing = [m for m in Apache.MODULES if not os.path.isfile("%s/mod_%s.so" % (APACHE_MODULES, m))]
        if missing:
            self.skipTest("Apache modules %s not found in %s (apt-get install apache2)"
                          % (", ".join(missing), APACHE_MODULES))
        root = self.prepare_site()
        server = Apache(self, root, self.path("server"), binary)
        t = subprocess.run([binary, "-f", server.conf, "-t"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.assertEqual(t.returncode, 0, "apache2 -t refuses the configuration made with README.md's "
                         "snippet:\n%s" % t.stdout.decode(errors="replace"))
        server.start()
        self.check_server(server, root)


class ReadmeSnippets(unittest.TestCase):
    """README.md's "Serving the outputs" has exactly one block per server (no server needed)."""

    def test_one_block_per_server(self):
        for lang, must in (("nginx", ("gzip_static on;", "brotli_static on;", "gzip_vary on;")),
                           ("caddyfile", ("precompressed",)),
                           ("apache", ("RewriteEngine", "Vary"))):
            text = readme_snippet(lang)
            for m in must:
                self.assertIn(m, text, "README.md's %s snippet" % lang)


def nginx_brotli_module(binary):
    """Path of ngx_http_brotli_static_module.so in nginx's modules path, or None."""
    dirs = []
    p = subprocess.run([binary, "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    for word in p.stdout.decode(errors="replace").split():
        if word.startswith("--modules-path="):
            dirs.append(word.split("=", 1)[1])
    dirs += ["/usr/lib/nginx/modules", "/usr/share/nginx/modules", "/usr/lib64/nginx/modules"]
    for d in dirs:
        f = os.path.join(d, "ngx_http_brotli_static_module.so")
        if os.path.isfile(f):
            return f
    return None


if __name__ == "__main__":
    main()
