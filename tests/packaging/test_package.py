#!/usr/bin/python3
"""The Python package as users install it: pip with build isolation on (pip's default), the
wheel and sdist python/build_backend.py makes, and a release's wheel on a machine with no
compiler.

PyPI cannot be reached from the machines this runs on: every pip runs with --no-index, and
with the machine's pip configuration shut out (PIP_* unset, PIP_CONFIG_FILE=/dev/null), so
only the path where meson and ninja are on PATH is exercised for real. The other path, where
get_requires_for_build_wheel() asks pip for PyPI's meson and ninja, is checked through that
hook's answer with PATH emptied of them (Requires).

- Pip: `pip install .` (cwd the source tree) into a plain venv and `pip install '.[django]'`
  into a --system-site-packages venv (Debian's Django 3.2 and whitenoise 6.0 satisfy the
  extra); `pip install ./precompress-VERSION.tar.gz` (the sdist, made by the backend);
  `pip install git+file://CLONE` (a clone of this tree's HEAD: what is committed, not the
  working tree; CI runs on a clean clone). Each then: `precompress -V` and `python -m
  precompress` over a copy of fixtures/site (the outputs the oracle calls for, its bytes),
  the installed wheel's tags, METADATA (Requires-Python, License, the extra), the man page,
  a static program. In the plain venv, '.[django]' fails naming Django: the extra asks for it.
  The source tree is left as it was.
- Wheel: the backend called as dist/release.sh calls it, with a prebuilt static binary:
  the release's file name, byte-identical twice (SOURCE_DATE_EPOCH), entries sorted, RECORD's
  hashes right, the man page and LICENSE in place; the environment's PRECOMPRESS_BINARY and
  `pip wheel --config-settings binary=... --config-settings arch=...` the same; a binary of
  another architecture, or a dynamic one, refused.
- Sdist: the name, the files git tracks plus PKG-INFO under precompress-VERSION/, owner 0,
  one mtime, byte-identical twice; an sdist of the unpacked sdist (no git: a walk) holds the
  same files though build directories, a venv and __pycache__ were added.
- Requires: get_requires_for_build_wheel() with meson and ninja on PATH ([]), without them
  (meson and ninja from PyPI), with a meson older than meson.build's minimum, inside a
  simulation of pip's isolation (its sitecustomize dir on PYTHONPATH, its bin first on
  PATH: not counted), and with a prebuilt binary ([]); the fallback TOML reader of Python
  < 3.11 against tomllib.
- Messages: no meson and no compiler, no compiler alone, and meson setup failing on a
  missing library: one message naming what to install (apt-get, brew, a release wheel),
  no traceback; the same through pip.
- Chroot: a clean Debian 12 root (debootstrap: python3, python3-venv, python3-django,
  python3-whitenoise, python3-brotli; no compiler, no -dev package, checked), the x86_64
  wheel installed into a --system-site-packages venv with docs/django.md's `pip install
  --no-index --find-links DIR 'precompress[django]'` (DIR holding the release's wheels: pip
  picks the x86_64 one; Debian's Django and whitenoise satisfy the extra), then collectstatic
  on one project with precompress.django's CompressedManifestStaticFilesStorage and on an
  identical one with whitenoise's own: the same files, the same bytes. The wheel is the release's (PRECOMPRESS_RELEASE, a directory
  made by dist/release.sh; its program is built against brotli 1.1.0 while the root's
  whitenoise compresses with Debian 12's python3-brotli 1.0.9) or, without it, one the
  backend builds from source here (the machine's brotli). With a release, its aarch64 wheel's
  program runs in the root under qemu-aarch64-static: -V and the fixtures, outputs checked
  against the oracle. The versions compared are printed.

Needs python3-venv (pip), meson, ninja-build and the build dependencies; the chroot part
root, debootstrap and Debian's mirror (the root is cached: pctest.debian_root).
"""
import sys

sys.dont_write_bytecode = True

import glob
import gzip
import hashlib
import base64
import importlib.util
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import unittest
import zipfile

from pctest import PCTestCase, SITE, classify, debian_root, in_root, listing, main, walk_all

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE, "python"))
import build_backend  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's: its venv module, its pip 23
VERSION = build_backend._version()
ARCH = build_backend._machine()
TAG = build_backend._linux_tag(ARCH)
WHEEL = "precompress-%s-%s.whl" % (VERSION, TAG)
SDIST = "precompress-%s.tar.gz" % VERSION
# libjs-jquery: python3-django recommends it (apt-get installs it with Django; debootstrap does not)
# and Django's admin files link to it.
ROOT_PACKAGES = ["python3", "python3-venv", "python3-django", "python3-whitenoise", "python3-brotli", "libjs-jquery"]
# docs/django.md's commands (test_doc_shows_the_commands), run here as they are: from a clone
# (Pip, and tests/packaging/test_django_storage.py) and from a release's files (Chroot).
INSTALL_CLONE = "venv/bin/pip install '.[django]'"
INSTALL_RELEASE = "--no-index --find-links /tmp/release 'precompress[django]'"
OURS = "precompress.django.CompressedManifestStaticFilesStorage"
THEIRS = "whitenoise.storage.CompressedManifestStaticFilesStorage"

STATE = {}  # module-wide: the temp dir, the wheel built from source once


def setUpModule():
    STATE["top"] = tempfile.mkdtemp(prefix="pc-package-")


def tearDownModule():
    shutil.rmtree(STATE["top"], ignore_errors=True)


def missing():
    """What building needs and is not here, as an apt-get hint; None when all is there."""
    if importlib.util.find_spec("ensurepip") is None:
        return "python3-venv is not installed (apt-get install python3-venv)"
    for program, package in (("meson", "meson"), ("ninja", "ninja-build"), ("cc", "gcc")):
        if shutil.which(program) is None:
            return "%s is not installed (apt-get install %s)" % (program, package)
    return None


def clean_env(**extra):
    """Our environment without the machine's pip configuration, the test runner's PYTHONPATH
    or anything that would make the backend pack a prebuilt binary."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "UV_THREADPOOL_SIZE", "PRECOMPRESS_CACHE_DIR",
            "PRECOMPRESS_BINARY", "PRECOMPRESS_WHEEL_ARCH", "PRECOMPRESS_MAN", "SOURCE_DATE_EPOCH")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k not in drop}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.setdefault("PRECOMPRESS_BUILD_JOBS", "2")  # a shared machine
    env.update(extra)
    return env


def sh(argv, cwd=None, env=None, timeout=900, shell=False):
    """Run argv; (exit status, stdout and stderr together as text)."""
    p = subprocess.run(argv, cwd=cwd, env=env or clean_env(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout, shell=shell)
    return p.returncode, p.stdout.decode(errors="replace")


def backend(call, cwd=SOURCE, env=None, timeout=900):
    """`python3 -c 'import sys; sys.path.insert(0, "python"); import build_backend; print(CALL)'`
    from the source tree, as dist/release.sh calls it: (status, stdout, stderr)."""
    code = 'import sys; sys.path.insert(0, "python"); import build_backend; print(build_backend.%s)' % call
    p = subprocess.run([PYTHON, "-c", code], cwd=cwd, env=env or clean_env(), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")


def source_wheel():
    """The wheel the backend builds from source here (once per run): its path."""
    if "wheel" not in STATE:
        out = os.path.join(STATE["top"], "wheel-from-source")
        rc, name, err = backend("build_wheel(%r)" % out)
        if rc != 0:
            raise AssertionError("build_wheel from source failed (exit %d):\n%s" % (rc, err[-5000:]))
        STATE["wheel"] = os.path.join(out, name.strip())
    return STATE["wheel"]


def static_program():
    """A static program for the prebuilt-binary path: the one in the wheel built from source."""
    if "program" not in STATE:
        path = os.path.join(STATE["top"], "static-precompress")
        with zipfile.ZipFile(source_wheel()) as z, open(path, "wb") as f:
            f.write(z.read("precompress/bin/precompress"))
        os.chmod(path, 0o755)
        STATE["program"] = path
    return STATE["program"]


def tree_snapshot(root):
    """{relative path: (size, mtime_ns)} of the source tree, less build directories, .git and
    __pycache__ (pip imports the backend from the tree, which writes its bytecode there unless
    PYTHONDONTWRITEBYTECODE is set, as meson test sets it)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "__pycache__" and
                       not (dirpath == root and re.match(r"^(build.*|builddir|\.git)$", d))]
        for n in filenames:
            st = os.lstat(os.path.join(dirpath, n))
            out[os.path.relpath(os.path.join(dirpath, n), root)] = (st.st_size, st.st_mtime_ns)
    return out


def read_fields(text):
    """The header fields of METADATA / WHEEL: {name: [values]}."""
    fields = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        k, _, v = line.partition(": ")
        fields.setdefault(k, []).append(v)
    return fields


class Pip(PCTestCase):
    """pip install ., the sdist and git+file://, with isolation on."""

    def setUp(self):
        why = missing()
        if why:
            self.skipTest(why)
        super().setUp()

    def venv(self, name, system_site=False):
        path = self.path(name)
        rc, out = sh([PYTHON, "-m", "venv"] + (["--system-site-packages"] if system_site else []) + [path])
        self.assertEqual(rc, 0, out)
        return path

    def pip_install(self, venv, target, cwd=None, ok=True):
        rc, out = sh([os.path.join(venv, "bin", "pip"), "install", "--no-index", "--no-cache-dir", target],
                     cwd=cwd or self.tmp)
        if ok:
            self.assertEqual(rc, 0, "pip install %s failed:\n%s" % (target, out[-6000:]))
            self.assertNotIn("--no-build-isolation", out)
        return rc, out

    def check_installed(self, venv, readme=os.path.join(SOURCE, "README.md")):
        """What an installed package must give: the program, the tags, METADATA (its description
        the README of what was installed), the man page."""
        bindir = os.path.join(venv, "bin")
        rc, out = sh([os.path.join(bindir, "precompress"), "-V"])
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.startswith("precompress %s (" % VERSION), out)
        site = self.copy_site("site-" + os.path.basename(venv))
        before, cls = listing(site), classify(site)
        rc, out = sh([os.path.join(bindir, "python"), "-m", "precompress", "-q", site], cwd=self.tmp)
        self.assertEqual(rc, 0, out)
        self.assertTreeMatchesOracle(site, before, cls)
        distinfo = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "precompress-%s.dist-info" % VERSION))
        self.assertEqual(len(distinfo), 1, distinfo)
        with open(os.path.join(distinfo[0], "WHEEL")) as f:
            wheel = read_fields(f.read())
        self.assertEqual(wheel["Tag"], ["py3-none-" + t for t in TAG.split("-")[2].split(".")])
        self.assertEqual(wheel["Root-Is-Purelib"], ["false"])
        with open(os.path.join(distinfo[0], "METADATA")) as f:
            self.check_metadata(f.read(), readme)
        self.assertTrue(os.path.isfile(os.path.join(distinfo[0], "LICENSE")))
        with open(os.path.join(venv, "share", "man", "man1", "precompress.1")) as f:
            self.assertIn('.TH PRECOMPRESS 1 ', f.read())
        rc, program = sh([os.path.join(bindir, "python"), "-c", "import precompress; print(precompress.binary())"])
        self.assertEqual(rc, 0, program)
        self.assertTrue(program.strip().startswith(venv + os.sep), program)
        self.assertEqual(build_backend._elf(program.strip()), (ARCH, False), "not a static %s program" % ARCH)

    def check_metadata(self, text, readme):
        fields = read_fields(text)
        self.assertEqual(fields["Name"], ["precompress"])
        self.assertEqual(fields["Version"], [VERSION])
        self.assertEqual(fields["Requires-Python"], [">=3.8"])
        self.assertEqual(fields["License"], ["MIT"])
        self.assertEqual(fields["Provides-Extra"], ["django"])
        self.assertEqual(fields["Requires-Dist"], ['Django>=3.2; extra == "django"', 'whitenoise>=5; extra == "django"'])
        self.assertEqual(fields["Description-Content-Type"], ["text/markdown"])
        with open(readme) as f:
            self.assertTrue(text.split("\n\n", 1)[1] == f.read(), "the description is not %s" % readme)

    def test_install_dot_plain_venv(self):
        before = tree_snapshot(SOURCE)
        venv = self.venv("plain")
        rc, out = self.pip_install(venv, ".[django]", cwd=SOURCE, ok=False)
        self.assertNotEqual(rc, 0, out)  # no Django in a plain venv, and no index to fetch it from
        self.assertRegex(out, r"(?i)No matching distribution found for django>=3\.2", out[-3000:])
        self.pip_install(venv, ".", cwd=SOURCE)
        self.check_installed(venv)
        self.assertEqual(tree_snapshot(SOURCE), before, "pip install . wrote into the source tree")

    def test_doc_shows_the_commands(self):
        with open(os.path.join(SOURCE, "docs", "django.md")) as f:
            doc = f.read()
        self.assertTrue("\n/usr/bin/python3 -m venv --system-site-packages venv\n%s\n" % INSTALL_CLONE in doc,
                        "docs/django.md does not show %r" % INSTALL_CLONE)
        release = "`venv/bin/pip install %s`" % INSTALL_RELEASE.replace("/tmp/release", "DIR")
        self.assertTrue(release in " ".join(doc.split()), "docs/django.md does not show %r" % release)
        self.assertFalse("pip install --no-build-isolation" in doc)

    def test_install_dot_system_site_venv(self):
        before = tree_snapshot(SOURCE)
        venv = self.venv("system-site", system_site=True)
        rc, out = sh(INSTALL_CLONE.replace("venv/bin/pip install", os.path.join(venv, "bin", "pip") +
                                           " install --no-index --no-cache-dir"), cwd=SOURCE, shell=True)
        self.assertEqual(rc, 0, out[-6000:])
        self.assertRegex(out, r"Requirement already satisfied: (?i:django)>=3\.2 in /usr/lib/python3/dist-packages")
        self.assertRegex(out, r"Requirement already satisfied: whitenoise>=5 in /usr/lib/python3/dist-packages")
        self.check_installed(venv)
        rc, out = sh([os.path.join(venv, "bin", "python"), "-c", "import precompress.django"])
        self.assertEqual(rc, 0, out)
        self.assertEqual(tree_snapshot(SOURCE), before, "pip install . wrote into the source tree")

    def test_install_sdist(self):
        """The release's sdist when PRECOMPRESS_RELEASE names one (dist/release.sh makes it from
        `git archive`: the backend's walk, not git ls-files), else one the backend makes here."""
        release = os.environ.get("PRECOMPRESS_RELEASE")
        if release and os.path.isfile(os.path.join(release, SDIST)):
            out = release
            with tarfile.open(os.path.join(release, SDIST)) as t:
                t.extract("precompress-%s/README.md" % VERSION, self.path("sdist-readme"))
            readme = self.path("sdist-readme", "precompress-%s" % VERSION, "README.md")
        else:
            out = self.path("sdist")
            rc, name, err = backend("build_sdist(%r)" % out)
            self.assertEqual((rc, name.strip()), (0, SDIST), err)
            readme = os.path.join(SOURCE, "README.md")
        venv = self.venv("from-sdist")
        self.pip_install(venv, "./" + SDIST, cwd=out)
        self.check_installed(venv, readme)

    def test_install_git_url(self):
        if shutil.which("git") is None or not os.path.exists(os.path.join(SOURCE, ".git")):
            self.skipTest("not a git checkout, or no git")
        clone = self.path("clone")
        rc, out = sh(["git", "clone", "--quiet", "--no-hardlinks", SOURCE, clone])
        self.assertEqual(rc, 0, out)
        venv = self.venv("from-git")
        self.pip_install(venv, "git+file://" + clone)
        self.check_installed(venv, os.path.join(clone, "README.md"))


class Wheel(PCTestCase):
    """The backend's wheel for a prebuilt binary, as dist/release.sh makes it."""

    def setUp(self):
        why = missing()
        if why:
            self.skipTest(why)
        super().setUp()

    def test_prebuilt_binary(self):
        program = static_program()
        man = self.path("precompress.1")
        with zipfile.ZipFile(source_wheel()) as z, open(man, "wb") as f:
            f.write(z.read("precompress-%s.data/data/share/man/man1/precompress.1" % VERSION))
        wheels = []
        for n in ("a", "b"):
            out = self.path(n)
            rc, name, err = backend("build_wheel(%r, {'binary': %r, 'arch': %r, 'man': %r})" % (out, program, ARCH, man),
                                    env=clean_env(SOURCE_DATE_EPOCH="1700000000"))
            self.assertEqual((rc, name.strip()), (0, WHEEL), err)
            wheels.append(os.path.join(out, WHEEL))
        with open(wheels[0], "rb") as a, open(wheels[1], "rb") as b:
            self.assertEqual(a.read(), b.read(), "two builds of one wheel differ")
        distinfo = "precompress-%s.dist-info" % VERSION
        with zipfile.ZipFile(wheels[0]) as z:
            names = z.namelist()
            self.assertEqual(names[-1], distinfo + "/RECORD")
            self.assertEqual(names[:-1], sorted(names[:-1], key=lambda n: (n.startswith(distinfo), n)))
            self.assertEqual(sorted(names), sorted(
                ["precompress/%s" % m for m in os.listdir(os.path.join(SOURCE, "python", "precompress"))
                 if m.endswith(".py")] +
                ["precompress/bin/precompress", "precompress-%s.data/data/share/man/man1/precompress.1" % VERSION] +
                [distinfo + "/" + n for n in ("LICENSE", "METADATA", "WHEEL", "entry_points.txt", "RECORD")]))
            self.assertEqual({i.date_time for i in z.infolist()}, {(2023, 11, 14, 22, 13, 20)})
            info = z.getinfo("precompress/bin/precompress")
            self.assertEqual(info.external_attr >> 16, 0o100755)
            with open(program, "rb") as f:
                self.assertEqual(z.read("precompress/bin/precompress"), f.read())
            with open(man, "rb") as f:
                self.assertEqual(z.read("precompress-%s.data/data/share/man/man1/precompress.1" % VERSION), f.read())
            with open(os.path.join(SOURCE, "LICENSE"), "rb") as f:
                self.assertEqual(z.read(distinfo + "/LICENSE"), f.read())
            self.assertEqual(z.read(distinfo + "/entry_points.txt").decode(),
                             "[console_scripts]\nprecompress = precompress.__main__:main\n")
            for line in z.read(distinfo + "/RECORD").decode().splitlines():
                arcname, digest, size = line.split(",")
                if arcname.endswith("/RECORD"):
                    self.assertEqual((digest, size), ("", ""))
                    continue
                data = z.read(arcname)
                want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, int(size)), ("sha256=" + want, len(data)), arcname)
        # The same from the environment (a direct call without config_settings), and without a man
        # page given: it is made from man/options.md, as meson makes it.
        out = self.path("env")
        rc, name, err = backend("build_wheel(%r)" % out, env=clean_env(PRECOMPRESS_BINARY=program,
                                                                       PRECOMPRESS_WHEEL_ARCH=ARCH))
        self.assertEqual((rc, name.strip()), (0, WHEEL), err)
        with zipfile.ZipFile(os.path.join(out, WHEEL)) as z, open(man, "rb") as f:
            self.assertEqual(z.read("precompress-%s.data/data/share/man/man1/precompress.1" % VERSION), f.read())

    def test_pip_wheel_config_settings(self):
        """`pip wheel --config-settings binary=... --config-settings arch=...`: the same wheel, no build."""
        venv = self.path("venv")
        rc, out = sh([PYTHON, "-m", "venv", venv])
        self.assertEqual(rc, 0, out)
        rc, out = sh([os.path.join(venv, "bin", "pip"), "wheel", "--no-index", "--no-cache-dir", "--no-deps",
                      "--config-settings", "binary=" + static_program(), "--config-settings", "arch=" + ARCH,
                      "-w", self.path("out"), "."], cwd=SOURCE)
        self.assertEqual(rc, 0, out[-5000:])
        self.assertNotIn("meson", out)
        self.assertEqual(os.listdir(self.path("out")), [WHEEL])
        with zipfile.ZipFile(self.path("out", WHEEL)) as z, open(static_program(), "rb") as f:
            self.assertEqual(z.read("precompress/bin/precompress"), f.read())

    def test_wrong_binary_refused(self):
        other = "aarch64" if ARCH != "aarch64" else "x86_64"
        rc, out, err = backend("build_wheel(%r, {'binary': %r, 'arch': %r})" % (self.path("o"), static_program(), other))
        self.assertNotEqual(rc, 0)
        self.assertIn("precompress: %s is a program for %s, not %s" % (static_program(), ARCH, other), err)
        self.assertNotIn("Traceback", err)
        dynamic = shutil.which("ls")
        rc, out, err = backend("build_wheel(%r, {'binary': %r})" % (self.path("o"), dynamic))
        self.assertNotEqual(rc, 0)
        self.assertIn("is linked dynamically", err)
        self.assertEqual(os.listdir(self.path("o")), [], "a wheel was left behind")


class Sdist(PCTestCase):
    def test_sdist(self):
        tars = []
        for n, epoch in (("a", None), ("b", None), ("c", "1700000000")):
            out = self.path(n)
            env = clean_env(**({"SOURCE_DATE_EPOCH": epoch} if epoch else {}))
            rc, name, err = backend("build_sdist(%r)" % out, env=env)
            self.assertEqual((rc, name.strip()), (0, SDIST), err)
            tars.append(os.path.join(out, SDIST))
        with open(tars[0], "rb") as a, open(tars[1], "rb") as b:
            data = a.read()
            self.assertEqual(data, b.read(), "two sdists of one tree differ")
        self.assertEqual(data[4:8], b"\0\0\0\0", "gzip header time")
        base = "precompress-%s/" % VERSION
        with tarfile.open(tars[0]) as t:
            members = t.getmembers()
            names = [m.name for m in members]
            self.assertEqual(names, sorted(names))
            self.assertTrue(all(n.startswith(base) for n in names), names)
            self.assertEqual({(m.uid, m.gid, m.uname, m.gname) for m in members}, {(0, 0, "", "")})
            self.assertEqual(len({m.mtime for m in members}), 1)
            rel = sorted(n[len(base):] for n in names)
            for needed in ("PKG-INFO", "pyproject.toml", "meson.build", "meson_options.txt", "dist/version.py",
                           "include/precompress.h", "man/options.md", "man/gen_options.py", "LICENSE",
                           "README.md", "python/build_backend.py", "python/precompress/__init__.py"):
                self.assertIn(needed, rel)
            pkg_info = t.extractfile(base + "PKG-INFO").read().decode()
            self.assertEqual(pkg_info, build_backend._metadata())
            if os.path.exists(os.path.join(SOURCE, ".git")) and shutil.which("git"):
                listed = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z"], stdout=subprocess.PIPE,
                                        check=True).stdout
                tracked = [os.fsdecode(n) for n in listed.split(b"\0")
                           if n and os.path.lexists(os.path.join(os.fsencode(SOURCE), n))]
                self.assertEqual(rel, sorted(tracked + ["PKG-INFO"]), "the sdist holds what git tracks")
                rc, out = sh(["git", "-C", SOURCE, "log", "-1", "--format=%ct"])
                self.assertEqual(members[0].mtime, int(out))
            unpacked = self.path("unpacked")
            t.extractall(unpacked)
        with tarfile.open(tars[2]) as t:
            self.assertEqual({m.mtime for m in t.getmembers()}, {1700000000})
        # Outside git (the unpacked sdist): a walk, which leaves out build output, venvs, bytecode.
        tree = os.path.join(unpacked, base)
        for junk in ("build/x.o", "build-static/y", "builddir/z", "venv/pyvenv.cfg", "python/__pycache__/a.pyc",
                     "dist/out/0.0.0/SHA256SUMS", "other/meson-private/coredata.dat", ".git/HEAD"):
            os.makedirs(os.path.dirname(os.path.join(tree, junk)), exist_ok=True)
            with open(os.path.join(tree, junk), "w") as f:
                f.write("junk\n")
        rc, name, err = backend("build_sdist(%r)" % self.path("again"), cwd=tree)
        self.assertEqual((rc, name.strip()), (0, SDIST), err)
        with tarfile.open(self.path("again", SDIST)) as t:
            self.assertEqual(sorted(m.name[len(base):] for m in t.getmembers()), rel)


class Requires(PCTestCase):
    """get_requires_for_build_wheel(): PyPI's meson and ninja only when PATH has none."""

    def bindir(self, name, programs):
        """A directory holding links to the given programs of the machine (name: path or None)."""
        d = self.path(name)
        os.makedirs(d)
        for prog, target in programs.items():
            target = target or shutil.which(prog)
            if target:
                os.symlink(target, os.path.join(d, prog))
        return d

    def requires(self, path, settings=None, **env):
        rc, out, err = backend("get_requires_for_build_wheel(%r)" % (settings,),
                               env=clean_env(PATH=path, **env))
        self.assertEqual(rc, 0, err)
        return eval(out)

    def test_requires(self):
        if shutil.which("meson") is None or shutil.which("ninja") is None or shutil.which("cc") is None:
            self.skipTest("meson, ninja-build and gcc are needed")
        minimum = "meson>=%d.%d.%d" % build_backend._meson_min()
        full = self.bindir("full", {"meson": None, "ninja": None, "cc": None})
        self.assertEqual(self.requires(full), [])
        compiler_only = self.bindir("cc-only", {"cc": None})
        self.assertEqual(self.requires(compiler_only), [minimum, "ninja"])
        self.assertEqual(self.requires(self.bindir("no-ninja", {"meson": None, "cc": None})), ["ninja"])
        old = self.bindir("old-meson", {"ninja": None, "cc": None})
        with open(os.path.join(old, "meson"), "w") as f:
            f.write("#!/bin/sh\necho 0.56.2\n")
        os.chmod(os.path.join(old, "meson"), 0o755)
        self.assertEqual(self.requires(old), [minimum])
        # pip's isolation: its sitecustomize's directory on PYTHONPATH, its bin directories first on
        # PATH. A meson there (a broken one here) is not the system's and is not counted.
        env_root = self.path("pip-build-env-x")
        for d in ("site", "overlay/bin", "normal/bin"):
            os.makedirs(os.path.join(env_root, d))
        with open(os.path.join(env_root, "site", "sitecustomize.py"), "w") as f:
            f.write("import sys\nsys.path[:] = [p for p in sys.path if 'dist-packages' not in p]\n")
        for prog in ("meson", "ninja"):
            with open(os.path.join(env_root, "overlay", "bin", prog), "w") as f:
                f.write("#!/bin/sh\nexit 1\n")
            os.chmod(os.path.join(env_root, "overlay", "bin", prog), 0o755)
        isolated = os.pathsep.join([os.path.join(env_root, "overlay", "bin"), os.path.join(env_root, "normal", "bin")])
        pip_vars = dict(PYTHONPATH=os.path.join(env_root, "site"), PYTHONNOUSERSITE="1",
                        PIP_BUILD_TRACKER=self.path("tracker"), PEP517_BUILD_BACKEND="build_backend",
                        PEP517_BACKEND_PATH=os.path.join(SOURCE, "python"))
        self.assertEqual(self.requires(isolated + os.pathsep + compiler_only, **pip_vars), [minimum, "ninja"])
        self.assertEqual(self.requires(isolated + os.pathsep + full, **pip_vars), [])
        clean = build_backend._clean_env(dict(pip_vars, PATH=isolated + os.pathsep + full, HOME="/root"))
        self.assertEqual(clean, {"PATH": full, "HOME": "/root"})
        # A prebuilt binary needs nothing, whatever PATH holds.
        self.assertEqual(self.requires(self.path("nothing"), {"binary": "/bin/true"}), [])

    def test_toml_fallback(self):
        import tomllib
        with open(os.path.join(SOURCE, "pyproject.toml")) as f:
            text = f.read()
        self.assertEqual(build_backend._toml_subset(text), tomllib.loads(text))


class Messages(PCTestCase):
    """No meson, no compiler: one message saying what to install, no traceback."""

    APT = "apt-get install " + build_backend.DEBIAN_DEPS

    def assertMessage(self, text, *what):
        self.assertIn("precompress: cannot build the program from source here: ", text)
        for w in what:
            self.assertIn(w, text)
        self.assertIn(self.APT, text)
        self.assertIn("brew install " + build_backend.HOMEBREW_DEPS, text)
        self.assertIn("install a release wheel instead", text)
        self.assertIn("precompress-%s-py3-none-manylinux_2_17_ARCH" % VERSION, text)
        self.assertNotIn("Traceback", text)

    def test_no_meson_no_compiler(self):
        empty = self.path("empty-bin")
        os.makedirs(empty)
        for hook in ("build_wheel(%r)" % self.path("out"), "get_requires_for_build_wheel()"):
            rc, out, err = backend(hook, env=clean_env(PATH=empty))
            self.assertNotEqual(rc, 0, hook)
            self.assertMessage(err, "no C compiler (cc, gcc, clang on PATH, or $CC)")
        self.assertMessage(err, "no meson >= %d.%d.%d or ninja on PATH" % build_backend._meson_min())

    def test_no_compiler(self):
        if shutil.which("meson") is None or shutil.which("ninja") is None:
            self.skipTest("meson and ninja-build are needed")
        d = self.path("bin")
        os.makedirs(d)
        for prog in ("meson", "ninja"):
            os.symlink(shutil.which(prog), os.path.join(d, prog))
        rc, out, err = backend("build_wheel(%r)" % self.path("out"), env=clean_env(PATH=d))
        self.assertNotEqual(rc, 0)
        self.assertMessage(err, "here: no C compiler (cc, gcc, clang on PATH, or $CC).\n")

    def test_through_pip(self):
        """What a user sees: pip's output carries the message (get_requires fails first)."""
        if importlib.util.find_spec("ensurepip") is None:
            self.skipTest("python3-venv is not installed")
        venv = self.path("venv")
        rc, out = sh([PYTHON, "-m", "venv", venv])
        self.assertEqual(rc, 0, out)
        empty = self.path("empty-bin")
        os.makedirs(empty)
        rc, out = sh([os.path.join(venv, "bin", "pip"), "install", "--no-index", "--no-cache-dir", "."],
                     cwd=SOURCE, env=clean_env(PATH=empty))
        self.assertNotEqual(rc, 0, out)
        self.assertIn("Getting requirements to build wheel did not run successfully", out)
        # pip indents the hook's output by 6 columns
        self.assertMessage(re.sub(r"(?m)^ {6}", "", out), "no C compiler")

    def test_meson_setup_fails(self):
        """A library missing (pkg-config finds none): meson's own lines, then the hint."""
        if missing():
            self.skipTest(missing())
        rc, out, err = backend("build_wheel(%r)" % self.path("out"),
                               env=clean_env(PKG_CONFIG_LIBDIR=self.path("no-pc"), PKG_CONFIG_PATH=""))
        self.assertNotEqual(rc, 0)
        self.assertIn("Dependency", err)
        self.assertMessage(err, "meson setup failed (its last lines above say what it did not find")


class Chroot(PCTestCase):
    """The x86_64 wheel on a clean Debian 12 with Python and no compiler: collectstatic with the
    storage writes whitenoise's bytes."""

    def wheels(self):
        """(x86_64 wheel, aarch64 wheel or None, where they come from)."""
        release = os.environ.get("PRECOMPRESS_RELEASE")
        if release:
            found = {}
            for arch in ("x86_64", "aarch64"):
                name = "precompress-%s-%s.whl" % (VERSION, build_backend._linux_tag(arch))
                path = os.path.join(release, name)
                found[arch] = path if os.path.isfile(path) else None
            self.assertIsNotNone(found["x86_64"], "PRECOMPRESS_RELEASE=%s has no %s" % (
                release, "precompress-%s-%s.whl" % (VERSION, build_backend._linux_tag("x86_64"))))
            return found["x86_64"], found["aarch64"], "the release in " + release
        if ARCH != "x86_64":
            self.skipTest("no PRECOMPRESS_RELEASE and this machine is not x86_64")
        why = missing()
        if why:
            self.skipTest("no PRECOMPRESS_RELEASE, and building a wheel here: " + why)
        return source_wheel(), None, "built here from source by python/build_backend.py"

    def test_collectstatic_in_clean_debian(self):
        wheel, arm_wheel, origin = self.wheels()
        root = debian_root(self.path("root"), include=ROOT_PACKAGES)
        p = in_root(root, "for c in gcc cc c99 clang tcc; do command -v $c; done; "
                          "dpkg-query -W -f '${Package}\\n' | grep -E -e '-dev$' -e '^(gcc|cpp|clang|tcc)(-[0-9]+)?$' "
                          "-e '^(meson|ninja-build|pkg-config|pkgconf)$'; true")
        self.assertEqual(p.stdout.strip(), "", "the root has a compiler or -dev packages")
        # docs/django.md's command: the release's wheels in a directory, pip picks this machine's.
        os.makedirs(os.path.join(root, "tmp", "release"))
        for w in (wheel, arm_wheel):
            if w:
                shutil.copy(w, os.path.join(root, "tmp", "release"))
        name = os.path.basename(wheel)
        p = in_root(root, "set -e; python3 -m venv --system-site-packages /opt/venv; "
                          "/opt/venv/bin/pip install --no-cache-dir %s; /opt/venv/bin/precompress -V" % INSTALL_RELEASE)
        self.assertEqual(p.returncode, 0, p.stdout[-5000:])
        self.assertIn("Processing /tmp/release/%s\n" % name, p.stdout)
        self.assertRegex(p.stdout, r"Requirement already satisfied: (?i:django)>=3\.2 in /usr/lib/python3/dist-packages")
        self.assertRegex(p.stdout, r"Successfully installed precompress-%s\n" % re.escape(VERSION))
        program_version = p.stdout.strip().splitlines()[-1]
        self.assertTrue(program_version.startswith("precompress %s (" % VERSION), program_version)
        p = in_root(root, "/opt/venv/bin/python -c 'import brotli, django, importlib.metadata as m; "
                          "print(\"Django\", django.get_version(), \"whitenoise\", m.version(\"whitenoise\"), "
                          "\"python3-brotli\", brotli.__version__)'")
        self.assertEqual(p.returncode, 0, p.stdout)
        python_side = p.stdout.strip()
        print("\n  wheel: %s (%s)\n  program: %s\n  root: %s" % (name, origin, program_version, python_side))

        trees = {}
        for label, storage in (("theirs", THEIRS), ("ours", OURS)):
            project = os.path.join(root, "srv", label)
            os.makedirs(project)
            p = in_root(root, "/opt/venv/bin/python -m django startproject mysite /srv/%s" % label)
            self.assertEqual(p.returncode, 0, p.stdout)
            shutil.copytree(SITE, os.path.join(project, "assets", "site"), symlinks=True)
            with open(os.path.join(project, "mysite", "settings.py"), "a") as f:
                f.write("\n# ---- test_package.py\nDEBUG = False\nALLOWED_HOSTS = [\"testserver\"]\n"
                        "STATIC_URL = \"/static/\"\nSTATIC_ROOT = BASE_DIR / \"staticfiles\"\n"
                        "STATICFILES_DIRS = [BASE_DIR / \"assets\"]\nSTATICFILES_STORAGE = %r\n" % storage)
            p = in_root(root, "cd /srv/%s && /opt/venv/bin/python manage.py collectstatic --noinput" % label)
            self.assertEqual(p.returncode, 0, "collectstatic with %s failed:\n%s" % (storage, p.stdout[-5000:]))
            trees[label] = {}
            static_root = os.path.join(project, "staticfiles")
            for dirpath, dirnames, filenames in os.walk(static_root):
                for n in filenames:
                    with open(os.path.join(dirpath, n), "rb") as f:
                        trees[label][os.path.relpath(os.path.join(dirpath, n), static_root)] = f.read()
        want, got = trees["theirs"], trees["ours"]
        where = "(program: %s; whitenoise's side: %s)" % (program_version, python_side)
        self.assertEqual(sorted(set(want) ^ set(got)), [], "files only one storage wrote " + where)
        self.assertEqual(sorted(n for n in want if want[n] != got[n]), [], "files whose bytes differ " + where)
        counts = {s: len([n for n in got if n.endswith(s)]) for s in (".gz", ".br")}
        self.assertGreater(min(counts.values()), 20, counts)
        print("  identical: %d files, %d .gz, %d .br" % (len(got), counts[".gz"], counts[".br"]))

        if arm_wheel is None:
            print("  aarch64: no release wheel (PRECOMPRESS_RELEASE unset or without one): not run")
            return
        qemu = shutil.which("qemu-aarch64-static")
        if qemu is None:
            self.fail("the release has an aarch64 wheel and qemu-aarch64-static is missing (apt-get install qemu-user-static)")
        shutil.copy(qemu, os.path.join(root, "usr", "bin", "qemu-aarch64-static"))
        os.makedirs(os.path.join(root, "opt", "aarch64"))
        arm = os.path.join(root, "opt", "aarch64", "precompress")
        with zipfile.ZipFile(arm_wheel) as z, open(arm, "wb") as f:
            f.write(z.read("precompress/bin/precompress"))
        os.chmod(arm, 0o755)
        self.assertEqual(build_backend._elf(arm), ("aarch64", False))
        site = os.path.join(root, "srv", "site-aarch64")
        shutil.copytree(SITE, site, symlinks=True)
        before, cls = listing(site), classify(site)
        p = in_root(root, "qemu-aarch64-static /opt/aarch64/precompress -V && "
                          "qemu-aarch64-static /opt/aarch64/precompress -q /srv/site-aarch64")
        self.assertEqual(p.returncode, 0, p.stdout)
        self.assertTrue(p.stdout.startswith("precompress %s (" % VERSION), p.stdout)
        self.assertTreeMatchesOracle(site, before, cls)
        print("  aarch64 under qemu-aarch64-static: %s; fixtures: the oracle's bytes" % p.stdout.strip())


if __name__ == "__main__":
    main()
