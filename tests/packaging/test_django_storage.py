#!/usr/bin/python3
"""End to end: precompress's Django storages, installed the way docs/django.md says.

Once (setUpModule): this source tree is copied (without build directories) and
docs/django.md's install commands run in the copy as they are, with PATH as the test
found it (the commands name Debian's /usr/bin/python3 themselves; a pyenv python3 first on
PATH must not matter): a venv with --system-site-packages (Debian's Django and
whitenoise) and `venv/bin/pip install '.[django]'` (pip's build isolation on, its
default), which builds the static program. The clone must be left as it was, but for venv/.

Then real `startproject` projects, examples/django/settings_storage.py appended
to settings.py as it is, plus a production deploy's settings and an asset dir
(a CSS referencing a PNG, a 1 MiB JS, a file too small to compress):

- collectstatic with whitenoise's own storage and with ours, on identical
  copies: the same files, byte for byte (.gz, .br, hashed copies, manifest),
  and the same summary line. For CompressedManifestStaticFilesStorage with
  default settings and with WHITENOISE_KEEP_ONLY_HASHED_FILES plus
  WHITENOISE_SKIP_COMPRESS_EXTENSIONS, and for CompressedStaticFilesStorage.
- whitenoise's middleware (through Django's test client, the client process of
  test_django.py) serves our outputs: Content-Encoding, Vary, bodies that
  decode to the source.
- a precompress failure (a directory where an output must go; a bad option
  in PRECOMPRESS_ARGS) fails collectstatic with precompress's message.
- `python -m precompress` and the `precompress` script run the program.

Needs python3-django, python3-whitenoise, python3-venv (with python3-pip),
meson and ninja-build; skipped with a message when one is missing.
"""
import sys

sys.dont_write_bytecode = True

import hashlib
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import urllib.parse

from pctest import PROGRAM, PCTestCase, decode, gz_oracle, main, words_data

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
EXAMPLE = os.path.join(SOURCE, "examples", "django")
SNIPPET = os.path.join(EXAMPLE, "settings_storage.py")
DOC = os.path.join(SOURCE, "docs", "django.md")
CLIENT = os.path.join(os.path.dirname(HERE), "serving", "test_django.py")  # its --client mode: requests through Django's test client

# docs/django.md's install commands, run as they are in a copy of the clone.
INSTALL = ["/usr/bin/python3 -m venv --system-site-packages venv",
           "venv/bin/pip install '.[django]'"]

OURS = "precompress.django.CompressedManifestStaticFilesStorage"
THEIRS = "whitenoise.storage.CompressedManifestStaticFilesStorage"
OURS_PLAIN = "precompress.django.CompressedStaticFilesStorage"
THEIRS_PLAIN = "whitenoise.storage.CompressedStaticFilesStorage"

# 256 bytes of bench/gen.c's text whose Brotli output fails the 95% rule (250 bytes) while gzip's
# passes (238): whitenoise writes neither, precompress the .gz (docs/django.md, "Differences").
ODD = (b"9420,yeAb;8tp => xbyIL6bgz = \ndfvsyl3oe{\nwli2ac{WiyquS{hlfWNkptzeH!Iq0{rzdxhsltVK => auto - Wz "
       b"=== ekl}yyM2ckveq = \n3MsdgooGb*dfzobLu[{\n  dfzobLu;6336,Apb === fthcmqHcv)kK ? oKwvo => hEuHd2zv"
       b" - wEkuwiCefdY*Ewgy,ecm4ymrs!function)pA[oLzk6vixhln => 4543,8511")

DCZ_MAGIC = bytes([0x5E, 0x2A, 0x4D, 0x18, 0x20, 0x00, 0x00, 0x00])
DCB_MAGIC = bytes([0xFF, 0x44, 0x43, 0x42])

STATE = {}  # set by setUpModule: clone, venv python, skip reason


def missing():
    """What this test needs and does not find, as an apt-get hint; None when all is there."""
    for module, package in (("django", "python3-django"), ("whitenoise", "python3-whitenoise"),
                            ("ensurepip", "python3-venv"), ("brotli", "python3-brotli")):
        if importlib.util.find_spec(module) is None:
            return "%s is not installed (apt-get install %s)" % (package, package)
    for program, package in (("meson", "meson"), ("ninja", "ninja-build")):
        if shutil.which(program) is None:
            return "%s is not installed (apt-get install %s)" % (program, package)
    return None


def snapshot(root):
    """{relative path: (size, mtime_ns)} of every file under root."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in filenames:
            full = os.path.join(dirpath, n)
            st = os.lstat(full)
            out[os.path.relpath(full, root)] = (st.st_size, st.st_mtime_ns)
    return out


def setUpModule():
    STATE["skip"] = missing()
    if STATE["skip"]:
        return
    top = tempfile.mkdtemp(prefix="pc-django-storage-")
    STATE["top"] = top
    clone = os.path.join(top, "clone")
    shutil.copytree(SOURCE, clone, symlinks=True,
                    ignore=lambda d, names: [n for n in names if d == SOURCE and
                                             (n.startswith("build") or n in (".git", "builddir"))])
    before = snapshot(clone)
    env = dict(os.environ)  # PATH as it is: the commands name Debian's python3 themselves
    env.setdefault("PRECOMPRESS_BUILD_JOBS", "2")  # a shared machine
    for command in INSTALL:
        p = subprocess.run(command, shell=True, cwd=clone, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        if p.returncode != 0:
            raise AssertionError("%s failed (exit %d):\n%s" % (command, p.returncode,
                                                               p.stdout.decode(errors="replace")[-5000:]))
    after = snapshot(clone)
    STATE["clone_changes"] = sorted(k for k in set(before) | set(after)
                                    if not k.startswith("venv" + os.sep) and before.get(k) != after.get(k))
    STATE["venv"] = os.path.join(clone, "venv")
    STATE["python"] = os.path.join(clone, "venv", "bin", "python")


def tearDownModule():
    if "top" in STATE:
        shutil.rmtree(STATE["top"], ignore_errors=True)


def whitenoise_br(data):
    """whitenoise's Brotli output for data (the module's defaults: quality 11)."""
    import brotli  # checked by missing()
    return brotli.compress(data)


def tree(root):
    """{relative path: bytes} of every file under root."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in filenames:
            full = os.path.join(dirpath, n)
            with open(full, "rb") as f:
                out[os.path.relpath(full, root)] = f.read()
    return out


class DjangoStorage(PCTestCase):
    def setUp(self):
        if STATE["skip"]:
            self.skipTest(STATE["skip"])
        super().setUp()
        self.env = dict(os.environ)
        self.env.pop("UV_THREADPOOL_SIZE", None)
        self.env.pop("PRECOMPRESS_CACHE_DIR", None)

    def run_py(self, args, cwd, timeout=300):
        return subprocess.run([STATE["python"], *args], cwd=cwd, env=self.env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)

    def project(self, name, settings=""):
        """A startproject project with settings_storage.py and `settings` appended."""
        project = self.path(name)
        os.mkdir(project)
        p = self.run_py(["-m", "django", "startproject", "mysite", project], self.tmp)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace"))
        with open(SNIPPET) as f:
            snippet = f.read()
        with open(os.path.join(project, "mysite", "settings.py"), "a") as f:
            f.write("\n# ---- examples/django/settings_storage.py, as it is\n" + snippet)
            f.write("\n# ---- test_django_storage.py\nDEBUG = False\nALLOWED_HOSTS = [\"testserver\"]\n"
                    "STATICFILES_DIRS = [BASE_DIR / \"assets\"]\n" + settings)
        assets = os.path.join(project, "assets", "site")
        os.makedirs(assets)
        files = {
            "app.css": b"body { background: url('logo.png'); }\n" + words_data(40000, seed=3),
            "logo.png": b"\x89PNG\r\n\x1a\n" + random.Random(6).randbytes(3000),  # the same in every project
            "big.js": words_data(1 << 20, seed=4),
            "tiny.js": b"x=1;\n",  # 5 bytes: no output passes the keep rule
            "notes.txt": words_data(20000, seed=5),
            "odd.js": ODD,
        }
        for n, data in files.items():
            with open(os.path.join(assets, n), "wb") as f:
                f.write(data)
        return project

    def collectstatic(self, project, ok=True, verbosity=1):
        p = self.run_py(["manage.py", "collectstatic", "--noinput", "-v", str(verbosity)], project)
        if ok:
            self.assertEqual(p.returncode, 0, "collectstatic failed:\n%s" % p.stderr.decode(errors="replace")[-5000:])
        return p

    def compare(self, theirs, ours, settings=""):
        """collectstatic with whitenoise's storage and with ours: the same tree, byte for byte,
        but for the .gz whitenoise does not write when Brotli failed the 95% rule.

        Returns our tree and the names of those .gz files.
        """
        trees, summaries = [], []
        for label, storage in (("theirs", theirs), ("ours", ours)):
            project = self.project(label, settings + "STATICFILES_STORAGE = %r\n" % storage)
            p = self.collectstatic(project)
            summaries.append(p.stdout.decode().strip().splitlines()[-1])
            trees.append(tree(os.path.join(project, "staticfiles")))
        want, got = trees
        self.assertEqual(sorted(set(want) - set(got)), [], "files whitenoise writes and precompress does not")
        extra = sorted(set(got) - set(want))
        for name in extra:
            src = name[:-len(".gz")]
            self.assertTrue(name.endswith(".gz") and src in want, "%s: an output whitenoise does not write" % name)
            self.assertNotIn(src + ".br", got)
            self.assertGreater(len(whitenoise_br(got[src])) * 100, len(got[src]) * 95,
                               "%s: Brotli passes, so whitenoise would write it" % name)
            self.assertEqual(got[name], gz_oracle(got[src]))
            self.assertLessEqual(len(got[name]) * 100, len(got[src]) * 95)
        differ = [n for n in want if want[n] != got[n]]
        self.assertEqual(differ, [], "files whose bytes differ from whitenoise's")
        # "N static files copied to '...', M post-processed.": one more post-processed per extra .gz
        pp = [re.search(r"(\d+) post-processed", line) for line in summaries]
        self.assertEqual(int(pp[1].group(1)), int(pp[0].group(1)) + len(extra), summaries)
        self.assertEqual(summaries[1].replace(pp[1].group(0), ""),
                         summaries[0].replace(pp[0].group(0), "").replace("/theirs/", "/ours/"), summaries)
        for suffix in (".gz", ".br"):
            self.assertGreater(len([n for n in got if n.endswith(suffix)]), 20, suffix)
        return got, extra

    # ------------------------------------------------------------------------

    def test_clone_untouched(self):
        self.assertEqual(STATE["clone_changes"], [], "the install wrote into the clone, beside venv/")

    def test_doc_shows_what_is_tested(self):
        with open(DOC) as f:
            doc = f.read()
        self.assertIn("\n" + "\n".join(INSTALL) + "\n", doc, "docs/django.md's install commands")
        with open(SNIPPET) as f:
            snippet = f.read()
        with open(os.path.join(EXAMPLE, "README.md")) as f:
            readme = f.read()
        self.assertIn(snippet[snippet.index("import django"):], readme,
                      "examples/django/README.md differs from settings_storage.py")

    def test_manifest_storage_writes_whitenoises_bytes(self):
        got, extra = self.compare(THEIRS, OURS)
        paths = json.loads(got["staticfiles.json"])["paths"]
        self.assertEqual(extra, sorted(["site/odd.js.gz", paths["site/odd.js"] + ".gz"]))
        for name in ("site/app.css", "site/big.js", "admin/css/base.css"):
            for rel in (name, paths[name]):
                self.assertIn(rel + ".gz", got)
                self.assertIn(rel + ".br", got)
        for rel in ("site/tiny.js", "site/logo.png", paths["site/logo.png"]):
            self.assertNotIn(rel + ".gz", got)
        self.assertNotIn("staticfiles.json.gz", got)

    def test_keep_only_hashed_and_skip_list(self):
        got, extra = self.compare(THEIRS, OURS, "WHITENOISE_KEEP_ONLY_HASHED_FILES = True\n"
                                                "WHITENOISE_SKIP_COMPRESS_EXTENSIONS = [\"js\", \"png\"]\n")
        self.assertEqual(extra, [])  # odd.js is skipped
        paths = json.loads(got["staticfiles.json"])["paths"]
        originals = [name for name, hashed in paths.items() if name != hashed and name in got]
        self.assertEqual(originals, [], "KEEP_ONLY_HASHED_FILES left originals")
        self.assertIn(paths["site/big.js"], got)
        self.assertEqual([n for n in got if re.search(r"\.js\.(gz|br)$", n)], [], "a .js was compressed")
        self.assertIn(paths["site/app.css"] + ".br", got)
        self.assertIn(paths["site/notes.txt"] + ".gz", got)

    def test_plain_storage_writes_whitenoises_bytes(self):
        got, extra = self.compare(THEIRS_PLAIN, OURS_PLAIN)
        self.assertEqual(extra, ["site/odd.js.gz"])
        self.assertIn("site/big.js.br", got)
        self.assertNotIn("staticfiles.json", got)

    def test_served_by_whitenoise(self):
        project = self.project("served")
        self.collectstatic(project)
        root = os.path.join(project, "staticfiles")
        paths = json.load(open(os.path.join(root, "staticfiles.json")))["paths"]
        names = ["site/app.css", "site/big.js", "site/tiny.js", "site/logo.png", "admin/js/core.js"]
        files = [rel for n in names for rel in (n, paths[n])]
        requests = [("/static/" + urllib.parse.quote(rel), accept) for rel in files for accept in ("br", "gzip", None)]
        outdir = self.path("responses")
        os.mkdir(outdir)
        env = dict(self.env, PYTHONPATH=os.path.dirname(HERE))
        p = subprocess.run([STATE["python"], CLIENT, "--client", project, outdir], env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, input=json.dumps({"names": names, "requests": requests}).encode(),
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr.decode(errors="replace")[-5000:])
        res = json.loads(p.stdout)
        self.assertEqual(res["storage"], OURS)
        self.assertEqual(res["urls"]["site/big.js"], "/static/" + paths["site/big.js"])
        for i, ((url, accept), resp) in enumerate(zip(requests, res["responses"])):
            rel = urllib.parse.unquote(url[len("/static/"):])
            with self.subTest(path=rel, accept=accept):
                h = resp["headers"]
                self.assertEqual((resp["status"], resp["class"]), (200, "WhiteNoiseFileResponse"))
                has = os.path.exists(os.path.join(root, rel + ".gz"))
                self.assertEqual(has, not (rel.endswith(".png") or os.path.basename(rel).startswith("tiny.")), rel)
                want = {"br": "br", "gzip": "gzip"}.get(accept) if has else None
                self.assertEqual(h.get("content-encoding"), want)
                body = os.path.join(outdir, str(i))
                with open(os.path.join(root, rel), "rb") as f:
                    src = f.read()
                self.assertEqual(decode({"br": "br", "gzip": "gz"}[want], body) if want else open(body, "rb").read(),
                                 src)
                self.assertEqual("accept-encoding" in h.get("vary", "").lower(), has)

    def test_deltas_against_the_previous_collectstatic(self):
        # PRECOMPRESS_DELTAS: the second collectstatic writes, beside each changed file's new
        # hashed name, its delta against the previous hashed version Django left in
        # STATIC_ROOT, paired through the previous staticfiles.json (docs/django.md, "Deltas").
        project = self.project("deltas", "PRECOMPRESS_DELTAS = True\n"
                               "PRECOMPRESS_MANIFEST = BASE_DIR / 'precompress.json'\n")
        root = os.path.join(project, "staticfiles")
        self.collectstatic(project)
        first = tree(root)
        self.assertEqual([n for n in first if n.endswith((".dcz", ".dcb"))], [], "deltas with nothing before")
        paths1 = json.loads(first["staticfiles.json"])["paths"]
        assets = os.path.join(project, "assets", "site")
        with open(os.path.join(assets, "app.css"), "ab") as f:
            f.write(b"\nh1 { color: #123456; }\n")
        with open(os.path.join(assets, "big.js"), "r+b") as f:
            f.seek(1 << 19)
            f.write(b"/* release 2 */")
        p = self.collectstatic(project, verbosity=2)
        got = tree(root)
        paths2 = json.loads(got["staticfiles.json"])["paths"]
        changed = sorted(n for n in paths2 if paths1.get(n) not in (None, paths2[n]))
        self.assertEqual(changed, ["site/app.css", "site/big.js"])
        formats = [".dcz", ".dcb"] if any(n.endswith(".dcb") for n in got) else [".dcz"]
        want = []
        for name in changed:
            old, new = paths1[name], paths2[name]
            self.assertTrue(old in got, "Django removed the previous hashed file %s" % old)
            digest = hashlib.sha256(got[old]).digest()
            for ext in formats:
                delta = "%s.%s%s" % (new, digest.hex()[:16], ext)
                want.append(delta)
                self.assertTrue(delta in got, "%s missing; there: %s"
                                % (delta, sorted(n for n in got if n.startswith(new))))
                body = got[delta]
                magic = DCZ_MAGIC if ext == ".dcz" else DCB_MAGIC
                self.assertEqual(body[:len(magic)], magic, delta)
                self.assertEqual(body[len(magic):len(magic) + 32], digest, delta)
                self.assertLess(len(body), len(got[new + ".gz"]) // 10, delta)
                if ext == ".dcz":  # zstd decodes it with the previous version as the dictionary
                    frame = self.path("frame.zst")
                    with open(frame, "wb") as f:
                        f.write(body[40:])
                    d = subprocess.run(["zstd", "-q", "-d", "-c", "--long=31", "-D", os.path.join(root, old), frame],
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    self.assertEqual(d.returncode, 0, d.stderr)
                    self.assertEqual(d.stdout, got[new], delta)
        # Nothing else: not the unchanged files (their own predecessors), not the names
        # without a hash, not the previous release's files.
        self.assertEqual(sorted(n for n in got if n.endswith((".dcz", ".dcb"))), sorted(want))
        # post_process yields each as an output of its file (collectstatic -v 2 names them).
        for delta in want:
            self.assertIn("as '%s'" % delta, p.stdout.decode())
        # PRECOMPRESS_MANIFEST: one root, STATIC_ROOT; each file by its path below it, the
        # deltas listed; server-config serves them at their URLs.
        with open(os.path.join(project, "precompress.json"), "rb") as f:
            man = json.loads(f.read())
        self.assertNotIn("roots", man)
        by = {e["path"]: e for e in man["files"]}
        for name in changed:
            kept = [d for d in by[paths2[name]]["deltas"] if "size" in d]
            self.assertEqual(sorted("%s.%s.%s" % (paths2[name], d["sha256"][:16], d["format"]) for d in kept),
                             sorted(w for w in want if w.startswith(paths2[name] + ".")))
        self.assertNotIn(paths1["site/app.css"], by)  # the previous release's: not this run's
        conf = subprocess.run([PROGRAM, "server-config", "nginx", "--part", "http", "--location", "/static/",
                               os.path.join(project, "precompress.json")], stdout=subprocess.PIPE, check=True)
        self.assertIn(('"/static/%s" "match=\\"/static/site/app.*.css\\""' % paths2["site/app.css"]).encode(),
                      conf.stdout)
        # A plain --check and a plain run over what the storage wrote: the deltas stand.
        r = subprocess.run([PROGRAM, "--check", "--exclude", "staticfiles.json", root],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual((r.returncode, r.stdout), (0, b""), r.stderr)
        r = subprocess.run([PROGRAM, "-q", root], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(n for n in tree(root) if n.endswith((".dcz", ".dcb"))), sorted(want))

    def test_failed_run_fails_collectstatic(self):
        # A directory where site/broken.js's .gz must go: precompress fails that file.
        project = self.project("broken")
        os.makedirs(os.path.join(project, "assets", "site", "broken.js.gz"))
        with open(os.path.join(project, "assets", "site", "broken.js.gz", "keep.txt"), "wb") as f:
            f.write(words_data(5000))
        with open(os.path.join(project, "assets", "site", "broken.js"), "wb") as f:
            f.write(words_data(5000))
        p = self.collectstatic(project, ok=False)
        err = p.stderr.decode(errors="replace")
        self.assertNotEqual(p.returncode, 0, err)
        self.assertIn("Post-processing '%s' failed!" % os.path.join(project, "staticfiles"), err)
        self.assertIn("PrecompressError: precompress exited with status 1:", err)
        self.assertIn("precompress: ./site/broken.js.gz: output name is taken by a directory", err)

    def test_bad_option_fails_collectstatic(self):
        project = self.project("badopt", "PRECOMPRESS_ARGS = [\"--gzip-level\", \"10\"]\n")
        p = self.collectstatic(project, ok=False)
        err = p.stderr.decode(errors="replace")
        self.assertNotEqual(p.returncode, 0, err)
        usage = subprocess.run([PROGRAM, "--gzip-level", "10", project], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE).stderr.decode().strip()
        self.assertTrue(usage.startswith("precompress: "), usage)
        self.assertIn("PrecompressError: precompress exited with status 2:\n" + usage, err)

    def test_missing_program_fails_collectstatic(self):
        project = self.project("noprog", "PRECOMPRESS_BINARY = \"/nonexistent/precompress\"\n")
        p = self.collectstatic(project, ok=False)
        err = p.stderr.decode(errors="replace")
        self.assertNotEqual(p.returncode, 0, err)
        self.assertIn("Post-processing '%s' failed!" % os.path.join(project, "staticfiles"), err)
        self.assertIn("PrecompressError: precompress: cannot run /nonexistent/precompress: "
                      "[Errno 2] No such file or directory", err)

    def test_python_m_precompress(self):
        version = subprocess.run([sys.executable, os.path.join(SOURCE, "dist", "version.py")],
                                 stdout=subprocess.PIPE, check=True, text=True).stdout.strip()
        for argv in ([STATE["python"], "-m", "precompress"], [os.path.join(STATE["venv"], "bin", "precompress")]):
            p = subprocess.run(argv + ["--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual((p.returncode, p.stdout.decode().split(" (")[0]), (0, "precompress " + version),
                             p.stderr)
            p = subprocess.run(argv + ["--no-such-option"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual(p.returncode, 2)
            self.assertIn(b"unknown option", p.stderr)
            site = self.path("site-%d" % len(argv))
            os.makedirs(site)
            with open(os.path.join(site, "a.js"), "wb") as f:
                f.write(words_data(30000))
            p = subprocess.run(argv + ["-q", site], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(decode("br", os.path.join(site, "a.js.br")), words_data(30000))
        lib = json.loads(subprocess.run([STATE["python"], "-c", "import precompress, json; print(json.dumps("
                                         "precompress.binary()))"], stdout=subprocess.PIPE).stdout)
        self.assertTrue(lib.startswith(STATE["venv"] + os.sep), lib)
        p = subprocess.run(["file", "-b", lib], stdout=subprocess.PIPE) if shutil.which("file") else None
        if p is not None:
            self.assertIn(b"statically linked", p.stdout)


if __name__ == "__main__":
    main()
