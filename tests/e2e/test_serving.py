#!/usr/bin/python3
"""End to end: what precompress writes is served right by real nginx and Caddy.

The fixtures are compressed (with --zstd when the build has zstd), then nginx
(gzip_static, brotli_static, gzip_vary) and Caddy (file_server precompressed
br zstd gzip) serve the tree on 127.0.0.1 ports of their own. Every source file
is requested with curl under Accept-Encoding br, gzip, zstd and none, and each
response is checked: status 200, Content-Encoding is the encoding whose output
file exists and was accepted (and the server can serve), the body is that
output's bytes and decodes to the source, Content-Type is the identity
response's (never a compressed type), Last-Modified is the source's mtime, and
compressed responses carry Vary: Accept-Encoding.

A server whose binary (or, for nginx, the brotli static module) is missing is
skipped with a message; .ci/deps installs both. README.md's nginx and Caddy
snippets must be lines of these configurations (ReadmeSnippets, no server needed).
"""
import sys

sys.dont_write_bytecode = True

import email.utils
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import time
import types
import unittest
import urllib.parse

from pctest import PCTestCase, decode, fsb, have_zstd_build, main, run

# Accept-Encoding values requested for every file (None: no header at all).
ACCEPT = ("br", "gzip", "zstd", None)
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
}
START_TIMEOUT = 15
REQUEST_TIMEOUT = 10

COUNTS = {}  # server -> (files, requests), printed at the end


def tearDownModule():
    for server in sorted(COUNTS):
        files, requests = COUNTS[server]
        print("%s: %d files, %d requests checked" % (server, files, requests))
    sys.stdout.flush()


def find_binary(name):
    path = shutil.which(name)
    if path:
        return path
    for d in ("/usr/sbin", "/usr/local/sbin", "/sbin"):  # sbin is not on every user's PATH
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def parse_headers(path):
    """curl -D file -> (status, {lowercased name: [values]}) of the last response."""
    with open(path, "rb") as f:
        raw = f.read().decode("iso-8859-1")
    blocks = [b for b in raw.replace("\r\n", "\n").split("\n\n") if b.strip()]
    if not blocks:
        return None, {}
    lines = blocks[-1].split("\n")
    parts = lines[0].split(" ", 2)
    status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers.setdefault(k.strip().lower(), []).append(v.strip())
    return status, headers


def one(headers, name):
    v = headers.get(name)
    return ", ".join(v) if v else None


def base_type(ct):
    return ct.split(";", 1)[0].strip().lower() if ct else None


class Server:
    """A server process in its own process group, stopped by stop()."""

    name = None

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

    def diagnostics(self):
        try:
            with open(self.log, "rb") as f:
                return f.read()[-3000:].decode(errors="replace")
        except OSError:
            return ""

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
        # nginx workers share the group; make sure none outlives the master.
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def expected_encoding(self, accept, existing):
        """Content-Encoding the server must answer with (None: identity)."""
        raise NotImplementedError


class Nginx(Server):
    name = "nginx"
    # nginx has gzip_static and (Debian's module) brotli_static, no zstd_static:
    # a .zst is never served.
    SERVES = ("br", "gzip")

    def __init__(self, test, site, work, binary, module):
        super().__init__(test, site, work)
        self.binary = binary
        self.module = module
        self.conf = os.path.join(work, "nginx.conf")
        self.error_log = os.path.join(work, "error.log")
        for d in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            os.mkdir(os.path.join(work, d))
        with open(self.conf, "w") as f:
            f.write(self.config())

    def config(self):
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
        gzip_static on;
        brotli_static on;
        gzip_vary on;
        location / { }
    }
}
""" % {"module": self.module, "user": user, "w": w, "port": self.port, "site": self.site}

    def command(self):
        return [self.binary, "-p", self.work + "/", "-c", self.conf, "-e", self.error_log]

    def diagnostics(self):
        out = super().diagnostics()
        try:
            with open(self.error_log, "rb") as f:
                out += "\n--- error.log\n" + f.read()[-3000:].decode(errors="replace")
        except OSError:
            pass
        return out

    def expected_encoding(self, accept, existing):
        if accept in self.SERVES and accept in existing:
            return accept
        return None


class Caddy(Server):
    name = "caddy"
    ORDER = ("br", "zstd", "gzip")  # `precompressed br zstd gzip`

    def __init__(self, test, site, work, binary):
        super().__init__(test, site, work)
        self.binary = binary
        self.home = os.path.join(work, "home")
        os.mkdir(self.home)
        self.caddyfile = os.path.join(work, "Caddyfile")
        with open(self.caddyfile, "w") as f:
            f.write(self.config())

    def config(self):
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
	file_server {
		precompressed %(order)s
	}
}
""" % {"home": self.home, "port": self.port, "site": self.site, "order": " ".join(self.ORDER)}

    def command(self):
        return [self.binary, "run", "--config", self.caddyfile, "--adapter", "caddyfile"]

    def env(self):
        e = dict(os.environ)
        e["HOME"] = self.home
        e["XDG_DATA_HOME"] = os.path.join(self.home, "data")
        e["XDG_CONFIG_HOME"] = os.path.join(self.home, "config")
        return e

    def expected_encoding(self, accept, existing):
        for enc in self.ORDER:
            if enc == accept and enc in existing:
                return enc
        return None


class ServingBase(PCTestCase):
    """Compress the fixtures, serve them, request every file under every Accept-Encoding."""

    def prepare_site(self):
        root = self.copy_site()
        args = ["-q", root]
        self.zstd = have_zstd_build()
        if self.zstd:
            args.insert(0, "--zstd")
        r = run(args)
        self.assertEqual(r.rc, 0, r)
        os.mkdir(self.path("server"))
        return root

    def fetch(self, server, rel, accept, tag):
        url = "http://127.0.0.1:%d/%s" % (server.port, urllib.parse.quote(rel, safe="/"))
        hdr = self.path("server", "h-%s" % tag)
        body = self.path("server", "b-%s" % tag)
        cmd = ["curl", "-s", "-S", "--max-time", str(REQUEST_TIMEOUT), "-D", hdr, "-o", body]
        # curl sends no Accept-Encoding by default; "Accept-Encoding:" makes sure of it.
        cmd += ["-H", "Accept-Encoding: %s" % accept if accept else "Accept-Encoding:", url]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                           timeout=REQUEST_TIMEOUT + 5)
        self.assertEqual(p.returncode, 0, "curl %s failed: %s\n%s" % (url, p.stderr.decode(errors="replace"),
                                                                      server.diagnostics()))
        status, headers = parse_headers(hdr)
        with open(body, "rb") as f:
            data = f.read()
        return url, status, headers, data

    def check_server(self, server, root):
        broot = fsb(root)
        files = source_files(root)
        self.assertGreaterEqual(len(files), 10, "fixture site looks too small: %r" % files)
        requests = 0
        used = set()
        for i, rel in enumerate(files):
            full = os.path.join(broot, rel)
            with open(full, "rb") as f:
                src = f.read()
            st = os.stat(full)
            existing = {enc for enc, suf in SUFFIX.items() if os.path.isfile(full + suf)}
            identity_type = None
            for j, accept in enumerate((None,) + tuple(a for a in ACCEPT if a)):
                with self.subTest(server=server.name, path=rel.decode("utf-8", "replace"),
                                  accept=accept or "(none)"):
                    url, status, headers, data = self.fetch(server, rel, accept, "%d-%d" % (i, j))
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
                        decoded = decode(FMT[want], self.path("server", "b-%d-%d" % (i, j)))
                    else:
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

                    lm = one(headers, "last-modified")
                    self.assertIsNotNone(lm, "%s: no Last-Modified" % where)
                    self.assertEqual(int(email.utils.parsedate_to_datetime(lm).timestamp()), int(st.st_mtime),
                                     "%s: Last-Modified %r is not the source's mtime %s" % (where, lm, st.st_mtime))

                    if want:
                        vary = [v.strip().lower() for v in (one(headers, "vary") or "").split(",")]
                        self.assertIn("accept-encoding", vary, "%s: compressed response without "
                                      "Vary: Accept-Encoding (headers %r)" % (where, headers))
        # The fixtures must make each server actually serve every encoding it can.
        can = {"br", "gzip"} | ({"zstd"} if self.zstd and server.name == "caddy" else set())
        self.assertEqual(used, can, "%s served encodings %s, expected %s" % (server.name, sorted(used), sorted(can)))
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
        if not shutil.which("curl"):
            self.skipTest("curl not found (apt-get install curl)")
        root = self.prepare_site()
        server = Nginx(self, root, self.path("server"), binary, module)
        server.start()
        self.check_server(server, root)


class CaddyServing(ServingBase):
    def test_caddy_serves_precompressed(self):
        binary = find_binary("caddy")
        if not binary:
            self.skipTest("caddy not found (apt-get install caddy)")
        if not shutil.which("curl"):
            self.skipTest("curl not found (apt-get install curl)")
        root = self.prepare_site()
        server = Caddy(self, root, self.path("server"), binary)
        server.start()
        self.check_server(server, root)


class ReadmeSnippets(unittest.TestCase):
    """README.md's server snippets are lines of the configurations served above, as they
    are there (in one piece), so that what users paste is what these tests serve with."""

    README = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "README.md")

    def snippet(self, lang):
        with open(self.README) as f:
            text = f.read()
        blocks = re.findall(r"^```%s\n(.*?)^```$" % lang, text, re.S | re.M)
        self.assertEqual(len(blocks), 1, "README.md: want one ```%s block" % lang)
        return [l.strip() for l in blocks[0].split("\n") if l.strip() and not l.strip().startswith("#")]

    def assert_in_config(self, lines, config, server):
        conf = [l.strip() for l in config.split("\n") if l.strip()]
        runs = [conf[i:i + len(lines)] for i in range(len(conf))]
        self.assertTrue(lines in runs, "README.md's %s snippet %r is not in the %s configuration "
                        "the tests serve with:\n%s" % (server, lines, server, config))

    def test_nginx_snippet(self):
        fake = types.SimpleNamespace(work="/w", module="/m.so", port=1, site="/s")
        self.assert_in_config(self.snippet("nginx"), Nginx.config(fake), "nginx")

    def test_caddy_snippet(self):
        fake = types.SimpleNamespace(home="/h", port=1, site="/s", ORDER=Caddy.ORDER)
        self.assert_in_config(self.snippet("caddyfile"), Caddy.config(fake), "Caddy")


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
