#!/usr/bin/python3
"""The remote cache (--cache-url), against real servers on 127.0.0.1: Debian's nginx running
docs/remote-cache.md's WebDAV server block as the page gives it (only its port and paths
changed), and tiny Python servers that fail in one way each (500s, a stall, a body cut short,
a full disk). A cold run fills the server; a run on a fresh copy with an empty local cache
takes every result from it and writes the same bytes; read-only and dry runs write nothing to
it; a corrupted or swapped entry is rejected, never written; a server that dies, stalls or
fails costs a warning line and nothing else (correct outputs, exit 0); four runs at once into
one empty server all come out right; credentials never show in argv, messages or the manifest.

Every tree a test checks is compared with the oracle (Python's gzip and brotli, and zstd's
decoder): the bytes a run without any cache writes.

    python3 tests/cache/test_remote_cache.py Fast     (suite cli: a few seconds)
    python3 tests/cache/test_remote_cache.py Long     (suite long: the server killed mid-run, four
                                                 runs at once)
"""
import sys

sys.dont_write_bytecode = True
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import unittest

from pctest import fast_levels, free_port, level_args, PROGRAM, PCTestCase, classify, child_env, decode, main, run, walk_all, words_data

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "remote-cache.md")
USER, PASSWORD = "ci", "s3cr3t-pa55word-7b1e"
TOKEN = "tok-4f0c9a1d2e3b5a6978"
for k in ("PRECOMPRESS_CACHE_DIR", "PRECOMPRESS_CACHE_URL", "PRECOMPRESS_CACHE_TOKEN",
          "PRECOMPRESS_CACHE_AUTH", "PRECOMPRESS_CACHE_READ_ONLY", "http_proxy", "https_proxy",
          "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
    os.environ.pop(k, None)


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError("nothing listens on 127.0.0.1:%d" % port)


def doc_server_block():
    """The nginx server block of docs/remote-cache.md, as the page gives it."""
    with open(DOC) as f:
        return re.search(r"^```nginx\n(.*?)^```$", f.read(), re.S | re.M).group(1)


class Nginx:
    """Debian's nginx running the page's server block on a free port, its cache in `root`."""

    def __init__(self, base):
        self.base = base
        self.port = free_port()
        self.root = os.path.join(base, "srv")
        os.makedirs(os.path.join(self.root, "tmp"))
        htpasswd = os.path.join(base, "htpasswd")
        with open(htpasswd, "w") as f:
            f.write("%s:{PLAIN}%s\n" % (USER, PASSWORD))
        block = doc_server_block()
        for old, new in (("listen 8080;", "listen 127.0.0.1:%d;" % self.port),
                         ("/srv/precompress", self.root),
                         ("/etc/nginx/precompress.htpasswd", htpasswd)):
            assert old in block, old
            block = block.replace(old, new)
        self.conf = os.path.join(base, "nginx.conf")
        with open(self.conf, "w") as f:
            # Workers as the user running the test (root in CI), who owns the cache.
            if os.geteuid() == 0:
                f.write("user root;\n")
            f.write("worker_processes 1;\ndaemon off;\npid %s/nginx.pid;\n"
                    "error_log %s/error.log;\nevents { worker_connections 512; }\n"
                    "http {\naccess_log off;\n%s}\n" % (base, base, block))
        self.url = "http://127.0.0.1:%d/cache" % self.port
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(["nginx", "-c", self.conf, "-p", self.base,
                                      "-e", os.path.join(self.base, "error.log")],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        wait_port(self.port)

    def stop(self, sig=signal.SIGTERM):
        """SIGKILL takes the workers too (the master alone would leave them serving)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(10)
        self.proc = None

    def entries(self):
        d = os.path.join(self.root, "cache", "ac")
        return sorted(os.path.join(d, n) for n in os.listdir(d)) if os.path.isdir(d) else []


class Handler(http.server.BaseHTTPRequestHandler):
    """A failing server: `mode` says how (set on the server object)."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def handle(self):
        try:
            super().handle()
        except OSError:
            pass  # the client gave up (or the body was cut on purpose)

    def do_GET(self):
        mode = self.server.mode
        if mode == "500":
            self.send_response(500)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif mode == "cut":
            # A body promised whole and cut short: the connection closes mid-body.
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"PCR1K\0\0\0" + b"\0" * 40)
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:  # "full": a disk that takes nothing, and holds nothing
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        self.server.puts += 1
        code = 500 if self.server.mode == "500" else 507
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Stall:
    """Accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.done = False
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()

    def loop(self):
        self.sock.settimeout(0.2)
        while not self.done:
            try:
                c, _ = self.sock.accept()
                self.conns.append(c)
            except OSError:
                pass

    def close(self):
        self.done = True
        self.t.join()
        for c in self.conns:
            c.close()
        self.sock.close()


class Base(PCTestCase):
    def setUp(self):
        super().setUp()
        # The oracle writes gz and br; zst is checked by its own test (decoded, and the same
        # bytes as the run that stored it).
        self.formats = ("gz", "br")
        self.servers = []

    def tearDown(self):
        for s in self.servers:
            s()
        super().tearDown()

    def nginx(self):
        n = Nginx(self.path("nginx-%d" % len(self.servers)))
        n.start()
        self.servers.append(n.stop)
        return n

    def failing(self, mode):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        srv.mode = mode
        srv.puts = 0
        srv.daemon_threads = True
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        self.servers.append(lambda: (srv.shutdown(), srv.server_close()))
        return srv, "http://127.0.0.1:%d/cache" % srv.server_address[1]

    def tree(self, name, n=24, seed=0, size=6000):
        root = self.path(name)
        os.makedirs(os.path.join(root, "js"))
        for i in range(n):
            with open(os.path.join(root, "js", "f%02d.js" % i), "wb") as f:
                f.write(words_data(size + 37 * i, seed=seed * 1000 + i))
        # Two files of one content (dedupe and the cache meet), one that compresses badly
        # (stored as a rejection), one past PC__WHOLE_MAX (compared by reading it again).
        shutil.copy(os.path.join(root, "js", "f00.js"), os.path.join(root, "same.js"))
        with open(os.path.join(root, "noise.txt"), "wb") as f:
            f.write(os.urandom(4000))
        with open(os.path.join(root, "big.css"), "wb") as f:
            f.write(words_data(400000, seed=seed * 1000 + 999))
        return root

    def copy(self, src, name):
        dst = self.path(name)
        subprocess.run(["cp", "-a", src, dst], check=True)
        return dst

    def args(self, *extra):
        return level_args() + ["--formats", ",".join(self.formats)] + list(extra)

    def env(self, **kw):
        e = {"PRECOMPRESS_CACHE_AUTH": "%s:%s" % (USER, PASSWORD)}
        e.update(kw)
        return e

    def checked_run(self, root, url, *extra, env=None, rc=0, timeout=180):
        """A run over root (--json), checked against the oracle; its summary."""
        before = walk_all(root)
        cls = classify(root, formats=self.formats)
        r = run(self.args("--json", "--cache-url", url, *extra) + [root],
                env=env if env is not None else self.env(), timeout=timeout)
        self.assertEqual(r.rc, rc, r)
        self.assertTreeMatchesOracle(root, before, cls)
        self.assertNoSecret(r)
        return r, r.summary()

    def assertNoSecret(self, r):
        for s in (PASSWORD, TOKEN):
            self.assertNotIn(s, r.err, r)
            self.assertNotIn(s, r.out, r)

    def warning(self, r):
        w = [l for l in r.err_lines if "warning: remote cache" in l]
        self.assertEqual(len(w), 1, r)
        return w[0]


class Fast(Base):
    def test_cold_fills_warm_takes_all(self):
        """A cold run stores every result; a fresh copy with an empty local cache takes every
        one from the server (the summary says so) and writes the same bytes; the local cache
        it was given holds them after."""
        srv = self.nginx()
        orig = self.tree("orig")
        a = self.copy(orig, "a")
        b = self.copy(orig, "b")
        ra, sa = self.checked_run(a, srv.url)
        self.assertEqual(sa["remote"]["hits"], 0, ra)
        self.assertEqual(sa["remote"]["lost"], 0, ra)
        self.assertFalse(sa["remote"]["failed"], ra)
        # One entry per format of each distinct content (same.js is f00.js's).
        distinct = sa["files"] - 1
        self.assertEqual(sa["remote"]["stored"], distinct * len(self.formats), ra)
        self.assertEqual(len(srv.entries()), sa["remote"]["stored"])
        local = self.path("local")
        rb, sb = self.checked_run(b, srv.url, "--cache-dir", local)
        self.assertEqual(sb["remote"]["hits"], sb["remote"]["lookups"], rb)
        self.assertEqual(sb["remote"]["rejected"], 0, rb)
        # same.js is copied from f00.js, which came from the server.
        self.assertEqual(sb["cached"] + sb["deduped"], sb["compressed"], rb)
        self.assertEqual(sb["remote"]["stored"], 0, rb)
        for rel, st in walk_all(a).items():
            if rel.endswith((b".gz", b".br", b".zst")):
                with open(os.path.join(os.fsencode(a), rel), "rb") as x, \
                        open(os.path.join(os.fsencode(b), rel), "rb") as y:
                    self.assertEqual(x.read(), y.read(), rel)
        # The people's summary line says where the results came from.
        c = self.copy(orig, "c")
        r = run(self.args("--cache-url", srv.url, c), env=self.env())
        self.assertEqual(r.rc, 0, r)
        self.assertRegex(r.err, r"(\d+) from the cache\).*remote cache: (\d+) of \2 lookups hit")
        # The remote hits went into the local cache: it alone serves the next run.
        d = self.copy(orig, "d")
        r = run(self.args("--json", "--cache-dir", local, d))
        self.assertEqual(r.summary()["cached"] + r.summary()["deduped"], r.summary()["compressed"], r)

    @unittest.skipUnless(os.environ.get("PC_HAVE_ZSTD", "1") == "1", "built without zstd")
    def test_zstd_from_remote(self):
        srv = self.nginx()
        orig = self.tree("orig")
        a, b = self.copy(orig, "a"), self.copy(orig, "b")
        for root in (a, b):
            r = run(["--zstd", "--json", "--cache-url", srv.url, root], env=self.env())
            self.assertEqual(r.rc, 0, r)
        s = r.summary()
        self.assertEqual(s["remote"]["hits"], s["remote"]["lookups"], r)
        self.assertEqual(s["cached"] + s["deduped"], s["compressed"], r)
        n = 0
        for rel in walk_all(a):
            if rel.endswith(b".zst"):
                x, y = os.path.join(os.fsencode(a), rel), os.path.join(os.fsencode(b), rel)
                with open(x, "rb") as f, open(y, "rb") as g:
                    self.assertEqual(f.read(), g.read(), rel)
                with open(y[:-4], "rb") as f:
                    self.assertEqual(decode("zst", y), f.read(), rel)
                n += 1
        self.assertGreater(n, 0)

    def test_read_only_and_dry_runs_write_nothing(self):
        srv = self.nginx()
        orig = self.tree("orig")
        _, s = self.checked_run(self.copy(orig, "a"), srv.url, "--cache-url-read-only")
        self.assertEqual(srv.entries(), [])
        self.assertEqual(s["remote"]["stored"], 0)
        _, s = self.checked_run(self.copy(orig, "b"), srv.url,
                                env=self.env(PRECOMPRESS_CACHE_READ_ONLY="1"))
        self.assertEqual(srv.entries(), [])
        r = run(self.args("-n", "--json", "--cache-url", srv.url, self.copy(orig, "c")), env=self.env())
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(srv.entries(), [])
        # Filled, then a dry run and --check take from it and add nothing.
        self.checked_run(self.copy(orig, "d"), srv.url)
        n = len(srv.entries())
        self.assertGreater(n, 0)
        e = self.copy(orig, "e")
        r = run(self.args("-n", "--json", "--cache-url", srv.url, e), env=self.env())
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.summary()["remote"]["hits"], r.summary()["remote"]["lookups"], r)
        self.assertEqual(sorted(walk_all(e)), sorted(walk_all(orig)))
        r = run(self.args("--check", "--json", "--cache-url", srv.url, self.path("d")), env=self.env())
        self.assertEqual(r.rc, 0, r)
        r = run(self.args("--check", "--json", "--cache-url", srv.url, self.copy(orig, "f")), env=self.env())
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(len(srv.entries()), n)

    def test_credentials(self):
        """Writes need the page's basic credentials: from the environment, or a file; a token
        or password never shows in a message, the summary or the manifest; one in the URL is
        refused."""
        srv = self.nginx()
        orig = self.tree("orig", n=6)
        # No credential: the server refuses the stores (401), storing goes off, the run is fine.
        r, s = self.checked_run(self.copy(orig, "a"), srv.url, env={})
        self.assertIn("HTTP 401 answering a store", self.warning(r))
        self.assertTrue(s["remote"]["failed"])
        self.assertEqual(srv.entries(), [])
        # A file with basic credentials; a manifest written beside.
        auth = self.path("auth")
        with open(auth, "w") as f:
            f.write("basic %s:%s\n" % (USER, PASSWORD))
        man = self.path("m.json")
        r, s = self.checked_run(self.copy(orig, "b"), srv.url, "--cache-auth-file", auth,
                                "--manifest", man, env={})
        self.assertGreater(s["remote"]["stored"], 0, r)
        with open(man) as f:
            text = f.read()
        self.assertNotIn(PASSWORD, text)
        self.assertNotIn(srv.url, text)
        # A bearer token goes out (nginx ignores it here: reads are open, and it is no
        # password for writes) and shows nowhere.
        r, s = self.checked_run(self.copy(orig, "c"), srv.url, env={"PRECOMPRESS_CACHE_TOKEN": TOKEN})
        self.assertEqual(s["remote"]["hits"], s["remote"]["lookups"], r)
        # Refused before any work, and not echoed.
        for url in ("http://%s:%s@127.0.0.1:%d/cache" % (USER, PASSWORD, srv.port),
                    "ftp://127.0.0.1/cache", srv.url + "?x=1"):
            r = run(["--cache-url", url, self.copy(orig, "d%d" % len(url))])
            self.assertEqual(r.rc, 2, r)
            self.assertNotIn(PASSWORD, r.err)
        with open(auth, "w") as f:
            f.write(PASSWORD + "\n")
        r = run(["--cache-url", srv.url, "--cache-auth-file", auth, self.copy(orig, "e")])
        self.assertEqual(r.rc, 2, r)
        self.assertNotIn(PASSWORD, r.err)
        r = run(["--cache-url", srv.url, self.copy(orig, "f")],
                env={"PRECOMPRESS_CACHE_TOKEN": TOKEN, "PRECOMPRESS_CACHE_AUTH": "a:b"})
        self.assertEqual(r.rc, 2, r)
        r = run(["--cache-auth-file", auth, self.copy(orig, "g")])
        self.assertEqual(r.rc, 2, r)

    def corrupt_server(self, srv, how):
        orig = self.tree("orig")
        self.checked_run(self.copy(orig, "a"), srv.url)
        ents = srv.entries()
        payloads = [e for e in ents if os.path.getsize(e) > 48]
        if how == "flip":
            for e in payloads:
                with open(e, "r+b") as f:
                    f.seek(48 + (os.path.getsize(e) - 48) // 2)
                    c = f.read(1)
                    f.seek(-1, 1)
                    f.write(bytes([c[0] ^ 0x40]))
            bad = len(payloads)
        else:  # swap each pair of payload entries: each is a valid entry of another key
            bad = 0
            for x, y in zip(payloads[0::2], payloads[1::2]):
                tmp = x + ".swap"
                os.rename(x, tmp)
                os.rename(y, x)
                os.rename(tmp, y)
                bad += 2
        return orig, bad

    def check_rejected(self, srv, orig, bad):
        b = self.copy(orig, "b")
        r, s = self.checked_run(b, srv.url, "-v", "--cache-url-read-only")
        self.assertEqual(s["remote"]["rejected"], bad, r)
        self.assertEqual(len([l for l in r.out_lines if l.startswith("rejected ")]), bad, r)
        # --json-lines names them per file.
        c = self.copy(orig, "c")
        r = run(self.args("--json-lines", "--cache-url", srv.url, "--cache-url-read-only", c))
        self.assertEqual(r.rc, 0, r)
        lines = [json.loads(l) for l in r.out_lines]
        self.assertEqual(sum(len(l["remote"]["rejected"]) for l in lines if l["type"] == "file"), bad)
        self.assertIn(" rejected", run(self.args("--cache-url", srv.url, "--cache-url-read-only",
                                                 self.copy(orig, "d"))).err)

    def test_corrupted_entries_rejected(self):
        srv = self.nginx()
        orig, bad = self.corrupt_server(srv, "flip")
        self.check_rejected(srv, orig, bad)

    def test_swapped_entries_rejected(self):
        srv = self.nginx()
        orig, bad = self.corrupt_server(srv, "swap")
        self.assertGreater(bad, 0)
        self.check_rejected(srv, orig, bad)

    def test_no_server(self):
        """Nothing listens: connection refused at the first lookup, the run goes on."""
        url = "http://127.0.0.1:%d/cache" % free_port()
        r, s = self.checked_run(self.tree("t"), url)
        self.assertTrue(s["remote"]["failed"])
        self.warning(r)
        # -q says nothing, and the exit status is still 0.
        r = run(self.args("-q", "--cache-url", url, self.tree("u", seed=3)))
        self.assertEqual((r.rc, r.err), (0, ""), r)

    def test_libcurl_that_cannot_be_loaded(self):
        """A program that loads libcurl on first use, on a machine where it cannot: --version
        says there is no remote cache, --cache-url is refused before anything is read or
        written, and a run without it never asks for libcurl."""
        so = os.environ.get("PC_FAULT_NOCURL_SO")
        if not so:
            self.skipTest("libcurl is linked in (a static build, or one without libcurl)")
        # A sanitizer's runtime wants to come first among the preloaded libraries.
        asan = child_env().get("ASAN_OPTIONS", "")
        env = {"LD_PRELOAD": so, "ASAN_OPTIONS": (asan + ":verify_asan_link_order=0").lstrip(":")}
        r = run(["--version"], env=env)
        self.assertEqual(r.rc, 0, r)
        self.assertIn("remote cache: none, no libcurl)", r.out, r)
        root = self.tree("t")
        before = walk_all(root)
        r = run(["--cache-url", "http://127.0.0.1:%d/cache" % free_port(), root], env=env)
        self.assertEqual(r.rc, 2, r)
        self.assertIn("libcurl.so.4 cannot be loaded", r.err, r)
        self.assertEqual(walk_all(root), before, "a refused run wrote")
        r = run(["-q", root], env=env)
        self.assertEqual((r.rc, r.err), (0, ""), r)

    def test_cheap_files_not_asked_for(self):
        """gzip alone on files of a few KiB is faster than a request: no lookup, no store."""
        srv = self.nginx()
        root = self.path("small")
        os.makedirs(root)
        for i in range(40):
            with open(os.path.join(root, "f%d.js" % i), "wb") as f:
                f.write(words_data(2000 + i, seed=i))
        r = run(["--no-brotli", "--json", "--cache-url", srv.url, root], env=self.env())
        self.assertEqual(r.rc, 0, r)
        self.assertEqual((r.summary()["remote"]["lookups"], r.summary()["remote"]["stored"]), (0, 0), r)
        self.assertEqual(srv.entries(), [])

    def test_manifest_as_without(self):
        """The manifest of a run warm from the server is the one a run without it writes."""
        srv = self.nginx()
        orig = self.tree("orig")
        self.checked_run(self.copy(orig, "a"), srv.url)
        m1, m2 = self.path("m1.json"), self.path("m2.json")
        b, c = self.copy(orig, "b"), self.copy(orig, "c")
        self.assertEqual(run(self.args("--manifest", m1, b)).rc, 0)
        _, s = self.checked_run(c, srv.url, "--manifest", m2)
        self.assertEqual(s["remote"]["hits"], s["remote"]["lookups"])
        with open(m1) as x, open(m2) as y:
            self.assertEqual(x.read().replace(b, c), y.read())


class ServerFaults(Base):
    """Servers that answer 500 or 507, cut a body, or stall: the run goes on without the
    remote cache and says why (the long suite)."""

    def test_500s(self):
        srv, url = self.failing("500")
        r, s = self.checked_run(self.tree("t"), url)
        self.assertIn("HTTP 500 answering a lookup", self.warning(r))
        self.assertTrue(s["remote"]["failed"])
        self.assertGreater(s["remote"]["lost"], 0)
        self.assertEqual(srv.puts, 0)  # off after the first answer: nothing sent

    def test_full_disk(self):
        srv, url = self.failing("full")
        r, s = self.checked_run(self.tree("t"), url)
        self.assertIn("HTTP 507 answering a store", self.warning(r))
        self.assertEqual(s["remote"]["stored"], 0)
        self.assertTrue(s["remote"]["failed"])

    def test_cut_mid_body(self):
        _, url = self.failing("cut")
        r, s = self.checked_run(self.tree("t"), url)
        self.assertTrue(s["remote"]["failed"], r)
        self.assertEqual(s["remote"]["hits"], 0, r)
        self.warning(r)

    def test_stall_costs_the_timeout(self):
        st = Stall()
        self.servers.append(st.close)
        url = "http://127.0.0.1:%d/cache" % st.port
        t0 = time.time()
        r, s = self.checked_run(self.tree("t"), url, "--cache-url-timeout", "1", timeout=60)
        took = time.time() - t0
        self.assertRegex(self.warning(r), "Timeout|too slow")
        self.assertGreaterEqual(took, 1.0)
        self.assertLess(took, 20.0, "a stalled server cost more than its timeouts")


class Long(Base):
    def test_server_killed_mid_run(self):
        srv = self.nginx()
        root = self.tree("t", n=160, size=40000)
        before = walk_all(root)
        cls = classify(root, formats=self.formats)
        p = subprocess.Popen([PROGRAM] + self.args("--json", "-j", "1", "--cache-url", srv.url, root),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=dict(child_env(), **self.env()))
        end = time.time() + 60
        while len(srv.entries()) < 10 and time.time() < end and p.poll() is None:
            time.sleep(0.05)
        self.assertIsNone(p.poll(), "the run ended before the server was killed")
        srv.stop(signal.SIGKILL)
        out, err = p.communicate(timeout=300)
        self.assertEqual(p.returncode, 0, err)
        self.assertTreeMatchesOracle(root, before, cls)
        s = json.loads(out.decode().strip().split("\n")[-1])
        self.assertTrue(s["remote"]["failed"], s)
        self.assertEqual(len([l for l in err.decode().split("\n") if "warning: remote cache" in l]), 1, err)

    def test_four_runs_at_once(self):
        srv = self.nginx()
        orig = self.tree("orig", n=60)
        roots = [self.copy(orig, "r%d" % i) for i in range(4)]
        cls = classify(orig, formats=self.formats)
        before = walk_all(orig)
        ps = [subprocess.Popen([PROGRAM] + self.args("--json", "--cache-url", srv.url, r),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=dict(child_env(), **self.env())) for r in roots]
        for p, r in zip(ps, roots):
            out, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err)
            self.assertNotIn(b"warning", err)
            self.assertTreeMatchesOracle(r, before, cls)
        # What they stored together serves a fifth, whole and right.
        r, s = self.checked_run(self.copy(orig, "last"), srv.url)
        self.assertEqual(s["remote"]["hits"], s["remote"]["lookups"], r)
        self.assertEqual(s["remote"]["rejected"], 0, r)


if __name__ == "__main__":
    main()
