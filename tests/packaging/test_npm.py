#!/usr/bin/python3
"""The release's npm packages (dist/npm_pack.py, made by dist/release.sh), installed as a
frontend project installs them, into the Vite projects of tests/projects/ (create-vite's
templates, committed with their lock files):

- Packages: the three tarballs are in SHA256SUMS; the platform packages hold the release's
  programs (0755) with os and cpu, preferUnplugged, no libc field and no install script; the
  main package has the launcher, the API, the plugins and its platform packages as optional
  dependencies at exactly its version. The aarch64 program runs under qemu-aarch64-static,
  installed by `npm install --cpu=arm64` and found by the package's own lookup.
- Launcher: `npx precompress --version`; exit statuses 2 (bad usage) and 1 (a failed file)
  passed through; SIGINT and SIGTERM sent to the launcher while the program works on a big tree
  stop both (130, 143) and leave no process behind; a program killed by a signal kills the
  launcher with it; PRECOMPRESS_BINARY=/nonexistent, a missing platform package (npm/cli#4828
  and the repair command) and macOS or Windows: one line each, exit 2.
- Api: precompress() (CommonJS) and files() (ESM, an async iterator) over a tree: every
  record, the summary, the program's bytes; a failing file rejects with exit status, standard
  error lines and summary; bad options are refused before anything runs; options map to the
  program's arguments as documented.
- Vite: each project installed with npm (`npm ci`, then the tarballs: `npm install
  /path/to/tarball.tgz`), pnpm 10 and yarn 1 (installed from the npm registry into this test's
  own prefix), or through a loopback registry serving only the @precompress scope (what a
  project's `npm install -D @precompress/cli` does once the packages are published: the
  arm64 package is skipped on x64 by each manager's os/cpu check); `vite build` writes
  .gz/.br/.zst that decode to their files and are the bytes the program under test
  (PRECOMPRESS) writes for the same tree; two builds with a change give .dcz deltas that
  `zstd -d -D` decodes with their dictionary (the first build) and .dcb deltas whose header
  names it; the second build takes unchanged files from the cache; `vite build --watch`
  compresses each rebuild; `build.write: false`, SSR builds and the server environment of
  `vite build --app` compress nothing; a missing program, a bad option and a failing file
  fail the build with one line. The Rollup plugin from the Vite 5 project's Rollup.

Needs PRECOMPRESS_RELEASE (dist/release.sh's directory), node and npm (.ci/deps npm); the
Vite 8 projects need Node ^20.19 or >= 22.12 (Debian 12's own Node.js 18 builds only the
Vite 5 project). The registry is reached for the projects' dependencies, pnpm and yarn.
"""
import sys

sys.dont_write_bytecode = True
import base64
import hashlib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
import unittest

from pctest import PROGRAM, SRC_ROOT, PCTestCase, decode, main, sha256, words_data

RELEASE = os.environ.get("PRECOMPRESS_RELEASE", "")
PROJECTS = os.path.join(SRC_ROOT, "tests", "projects")
ARCHES = {"x86_64": "x64", "aarch64": "arm64"}
OUT_RE = re.compile(r"\.(gz|br|zst)$")
DELTA_RE = re.compile(r"\.[0-9a-f]{16}\.dc[bz]$")
HAVE_ZSTD = os.environ.get("PC_HAVE_ZSTD", "1") == "1"

# Shared by every test of this run: the tools' prefix, installed projects.
SHARED = {}


def version():
    return subprocess.run([sys.executable, os.path.join(SRC_ROOT, "dist", "version.py")],
                          stdout=subprocess.PIPE, check=True, text=True).stdout.strip()


def node_version():
    node = shutil.which("node")
    if not node:
        return None
    out = subprocess.run([node, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    m = re.match(r"v(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(x) for x in m.groups()) if m else None


def vite8_runs():
    """Vite 8's engines: ^20.19.0 || >=22.12.0."""
    v = node_version()
    return v is not None and ((v[0] == 20 and v[1] >= 19) or v[0] > 22 or (v[0] == 22 and v[1] >= 12))


def shared_dir():
    if "dir" not in SHARED:
        SHARED["dir"] = tempfile.mkdtemp(prefix="pc-npm-")
    return SHARED["dir"]


def tearDownModule():
    reg = SHARED.get("registry")
    if reg:
        reg.shutdown()
    if "dir" in SHARED:
        shutil.rmtree(SHARED["dir"], ignore_errors=True)


def base_env(extra=None):
    env = dict(os.environ)
    tools = SHARED.get("tools")
    if tools:
        env["PATH"] = os.path.join(tools, "node_modules", ".bin") + os.pathsep + env["PATH"]
    for k in ("PRECOMPRESS_BINARY", "DEBUG"):
        env.pop(k, None)
    env.update({"npm_config_audit": "false", "npm_config_fund": "false",
                "npm_config_update_notifier": "false", "npm_config_loglevel": "error",
                "NO_COLOR": "1", "FORCE_COLOR": "0"})
    env.update(extra or {})
    return env


def sh(args, cwd, env=None, timeout=600, check=True):
    p = subprocess.run(args, cwd=cwd, env=env or base_env(), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError("%s (in %s) exited %d:\n%s\n%s" % (" ".join(args), cwd, p.returncode,
                                                                 p.stdout[-3000:], p.stderr[-3000:]))
    return p


def sources(root):
    """Files below root that are not outputs (relative paths)."""
    out = []
    for d, _, names in os.walk(root):
        have = set(names)
        for n in names:
            m = OUT_RE.search(n)
            if m and n[: m.start()] in have:
                continue
            m = DELTA_RE.search(n)
            if m and n[: m.start()] in have:
                continue
            out.append(os.path.relpath(os.path.join(d, n), root))
    return sorted(out)


def outputs(root, exts=("gz", "br", "zst")):
    got = {}
    for d, _, names in os.walk(root):
        for n in names:
            m = OUT_RE.search(n)
            if m and m.group(1) in exts and n[: m.start()] in names:
                with open(os.path.join(d, n), "rb") as f:
                    got[os.path.relpath(os.path.join(d, n), root)] = f.read()
    return got


class Registry:
    """A loopback npm registry holding only the release's @precompress packages: the scope is
    pointed at it (`@precompress:registry=` in the project's .npmrc), everything else comes
    from the real registry."""

    def __init__(self, tarballs):
        self.docs = {}
        self.files = {}
        for t in tarballs:
            with tarfile.open(t) as tf:
                pkg = json.load(tf.extractfile("package/package.json"))
            with open(t, "rb") as f:
                blob = f.read()
            base = os.path.basename(t)
            self.files["/-/" + base] = blob
            ver = dict(pkg, _id="%s@%s" % (pkg["name"], pkg["version"]))
            ver["dist"] = {"tarball": None, "shasum": hashlib.sha1(blob).hexdigest(),
                           "integrity": "sha512-" + base64.b64encode(hashlib.sha512(blob).digest()).decode()}
            self.docs[pkg["name"]] = {"name": pkg["name"], "dist-tags": {"latest": pkg["version"]},
                                      "versions": {pkg["version"]: ver}, "_base": base}
        reg = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                path = self.path.split("?")[0]
                name = path.lstrip("/").replace("%2f", "/").replace("%2F", "/")
                body = None
                if path in reg.files:
                    body, ctype = reg.files[path], "application/octet-stream"
                elif name in reg.docs:
                    doc = json.loads(json.dumps(reg.docs[name]))
                    for v in doc["versions"].values():
                        v["dist"]["tarball"] = "%s/-/%s" % (reg.url, doc["_base"])
                    del doc["_base"]
                    body, ctype = json.dumps(doc).encode(), "application/json"
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Type", "application/json")
                    self.end_headers()
                    self.wfile.write(b'{"error":"not found"}')
                    return
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def shutdown(self):
        self.server.shutdown()
        self.server.server_close()


class Base(PCTestCase):
    def setUp(self):
        super().setUp()
        if not RELEASE:
            self.skipTest("PRECOMPRESS_RELEASE is not set: make a release with dist/release.sh "
                          "VERSION DIR and set it to DIR (.ci/run does)")
        for tool in ("node", "npm"):
            if not shutil.which(tool):
                self.skipTest("%s is missing: .ci/deps npm installs Node.js and npm" % tool)
        self.version = version()
        self.tgz = {
            "main": os.path.join(RELEASE, "precompress-cli-%s.tgz" % self.version),
            "x64": os.path.join(RELEASE, "precompress-cli-linux-x64-%s.tgz" % self.version),
            "arm64": os.path.join(RELEASE, "precompress-cli-linux-arm64-%s.tgz" % self.version),
        }
        for t in self.tgz.values():
            self.assertTrue(os.path.isfile(t), "the release lacks %s" % t)

    # --- the tools and the installs, once per run ----------------------------------------

    def tools(self):
        """pnpm 10 and yarn 1 from the npm registry, in this run's own prefix."""
        if "tools" not in SHARED:
            prefix = os.path.join(shared_dir(), "tools")
            os.makedirs(prefix)
            sh(["npm", "install", "--prefix", prefix, "--no-save", "pnpm@10", "yarn@1", "typescript@5",
                "@types/node@20"], prefix, timeout=300)
            SHARED["tools"] = prefix
        return SHARED["tools"]

    def registry(self):
        if "registry" not in SHARED:
            SHARED["registry"] = Registry(list(self.tgz.values()))
        return SHARED["registry"]

    def need_project(self, project):
        if project != "vanilla-vite5" and not vite8_runs():
            self.skipTest("%s is Vite 8, which needs Node.js ^20.19 or >= 22.12 (this is %s)"
                          % (project, ".".join(map(str, node_version()))))

    def installed(self, project, manager, how="tarball"):
        """A copy of the project installed by manager, with the release's packages added
        (how: 'tarball', the files themselves; 'registry', from the loopback registry by
        name). Made once per run and shared: tests build in it one after another."""
        key = (project, manager, how)
        if key in SHARED:
            shutil.rmtree(os.path.join(SHARED[key], "dist"), ignore_errors=True)
            return SHARED[key]
        self.need_project(project)
        self.tools()
        d = os.path.join(shared_dir(), "%s-%s-%s" % (project, manager, how))
        shutil.copytree(os.path.join(PROJECTS, project), d)
        if how == "registry":
            with open(os.path.join(d, ".npmrc"), "w") as f:
                f.write("@precompress:registry=%s/\n" % self.registry().url)
        if manager == "npm":
            sh(["npm", "ci"], d)
            if how == "tarball":
                # The tarballs themselves; the platform one satisfies the main one's
                # optional dependency (the same exact version).
                sh(["npm", "install", "-D", self.tgz["main"], self.tgz["x64"]], d)
            else:
                sh(["npm", "install", "-D", "@precompress/cli@" + self.version], d)
        elif manager == "pnpm":
            self.assertEqual(how, "registry")
            sh(["pnpm", "install", "--frozen-lockfile"], d)
            sh(["pnpm", "add", "-D", "@precompress/cli@" + self.version], d)
        elif manager == "yarn":
            self.assertEqual(how, "registry")
            # yarn 1 reads neither lock file: it resolves package.json's ranges
            for lock in ("package-lock.json", "pnpm-lock.yaml"):
                os.remove(os.path.join(d, lock))
            sh(["yarn", "install", "--non-interactive", "--no-progress"], d)
            sh(["yarn", "add", "--non-interactive", "--no-progress", "-D", "@precompress/cli@" + self.version], d)
        SHARED[key] = d
        return d

    def program_path(self, d):
        """The program the project's install holds (through the package's own lookup)."""
        p = sh(["node", "-e", "process.stdout.write(require('@precompress/cli').binaryPath())"], d)
        return p.stdout

    # --- configs, builds, checks ---------------------------------------------------------

    def write_config(self, d, plugin_options="{}", extra="", name="vite.config.js"):
        react = os.path.exists(os.path.join(d, "node_modules", "@vitejs", "plugin-react"))
        imports = "import precompress from '@precompress/cli/vite';\n"
        plugins = "precompress(%s)" % plugin_options
        if react:
            imports += "import react from '@vitejs/plugin-react';\n"
            plugins = "react(), " + plugins
        with open(os.path.join(d, name), "w") as f:
            f.write("%sexport default { %s plugins: [%s] };\n" % (imports, extra, plugins))
        return name

    def vite(self, d, *args, env=None, check=True, timeout=600):
        return sh(["node", os.path.join("node_modules", "vite", "bin", "vite.js"), "build"] + list(args),
                  d, env=base_env(env), check=check, timeout=timeout)

    def assertOutputsAreTheProgramsBytes(self, dist, formats=("gz", "br", "zst")):
        """Every output decodes to its file, and the program under test, run on a copy of the
        same files with the same formats, writes exactly these outputs, byte for byte."""
        got = outputs(dist, formats)
        self.assertTrue(got, "no outputs in %s" % dist)
        for rel, blob in got.items():
            src = os.path.join(dist, OUT_RE.sub("", rel))
            with open(src, "rb") as f:
                self.assertEqual(decode(rel.rsplit(".", 1)[1], os.path.join(dist, rel)), f.read(), rel)
        copy = tempfile.mkdtemp(dir=self.tmp)
        for rel in sources(dist):
            os.makedirs(os.path.dirname(os.path.join(copy, rel)), exist_ok=True)
            shutil.copy2(os.path.join(dist, rel), os.path.join(copy, rel))
        fmts = [f for f in formats if f != "zst" or HAVE_ZSTD]
        r = subprocess.run([PROGRAM, "-q", "--formats", ",".join(fmts), copy], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        want = outputs(copy, fmts)
        self.assertEqual(sorted(k for k in got if OUT_RE.search(k).group(1) in fmts), sorted(want))
        for rel, blob in want.items():
            self.assertEqual(got[rel], blob, rel)
        return got

    def build_and_check(self, project, manager, how="registry"):
        d = self.installed(project, manager, how)
        self.write_config(d, "{ formats: ['gzip', 'brotli', 'zstd'] }")
        run = {"npm": ["npm", "run", "build"], "pnpm": ["pnpm", "run", "build"], "yarn": ["yarn", "build"]}[manager]
        p = sh(run, d)
        log = p.stdout + p.stderr
        self.assertRegex(log, r"precompress: \d+ of \d+ files in dist/: gz ")
        self.assertRegex(log, r"dist/index\.html +[\d.]+ kB │ gz: +[\d.]+ kB │ br: +[\d.]+ kB │ zst: ")
        got = self.assertOutputsAreTheProgramsBytes(os.path.join(d, "dist"))
        # public/ files (copied by Vite, never in the bundle) are compressed too
        self.assertTrue([k for k in got if k.endswith(".svg.br") and "/" not in k], sorted(got))
        pkgs = sorted(os.listdir(os.path.join(d, "node_modules", "@precompress")))
        return d, pkgs

    def big_tree(self):
        tree = self.path("big")
        os.makedirs(tree)
        blob = words_data(3 << 20)
        for i in range(24):
            with open(os.path.join(tree, "f%02d.txt" % i), "wb") as f:
                f.write(blob[i:] + blob[:i])
        return tree

    def children(self, pid):
        try:
            with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
                return [int(x) for x in f.read().split()]
        except OSError:
            return []

    def assertGone(self, pid, tree):
        deadline = time.time() + 10
        while time.time() < deadline and os.path.exists("/proc/%d" % pid):
            time.sleep(0.05)
        self.assertFalse(os.path.exists("/proc/%d" % pid), "the program outlived the launcher")
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open("/proc/%s/cmdline" % entry, "rb") as f:
                        self.assertNotIn(tree.encode(), f.read(), "a stray process works on the tree")
                except OSError:
                    pass
        self.assertEqual([n for n in os.listdir(tree) if n.endswith(".tmp")], [])


class Packages(Base):
    def test_tarballs_are_in_sha256sums(self):
        with open(os.path.join(RELEASE, "SHA256SUMS")) as f:
            sums = dict((l.split()[1], l.split()[0]) for l in f.read().splitlines())
        for t in self.tgz.values():
            self.assertEqual(sums.get(os.path.basename(t)), sha256(t), t)

    def read_tgz(self, t):
        with tarfile.open(t) as tf:
            members = {m.name: m for m in tf.getmembers() if m.isfile()}
            pkg = json.load(tf.extractfile("package/package.json"))
            blobs = {n: tf.extractfile(m).read() for n, m in members.items()}
        return members, pkg, blobs

    def test_platform_packages_hold_the_release_programs(self):
        for march, arch in ARCHES.items():
            members, pkg, blobs = self.read_tgz(self.tgz[arch])
            self.assertEqual(sorted(members), ["package/LICENSE", "package/README.md", "package/bin/precompress",
                                               "package/package.json"])
            self.assertEqual(pkg["name"], "@precompress/cli-linux-" + arch)
            self.assertEqual(pkg["version"], self.version)
            self.assertEqual(pkg["os"], ["linux"])
            self.assertEqual(pkg["cpu"], [arch])
            self.assertIs(pkg["preferUnplugged"], True)
            self.assertNotIn("libc", pkg)
            self.assertNotIn("scripts", pkg)
            self.assertNotIn("bin", pkg)
            self.assertEqual(members["package/bin/precompress"].mode & 0o777, 0o755)
            name = "precompress-%s-linux-%s" % (self.version, march)
            with tarfile.open(os.path.join(RELEASE, name + ".tar.gz")) as tf:
                program = tf.extractfile(name + "/precompress").read()
            self.assertEqual(hashlib.sha256(blobs["package/bin/precompress"]).hexdigest(),
                             hashlib.sha256(program).hexdigest(), arch)

    def test_main_package(self):
        members, pkg, blobs = self.read_tgz(self.tgz["main"])
        self.assertEqual(pkg["name"], "@precompress/cli")
        self.assertEqual(pkg["version"], self.version)
        self.assertEqual(pkg["optionalDependencies"], {"@precompress/cli-linux-x64": self.version,
                                                       "@precompress/cli-linux-arm64": self.version})
        self.assertNotIn("scripts", pkg)
        self.assertNotIn("dependencies", pkg)
        self.assertEqual(pkg["bin"], {"precompress": "bin/precompress.js"})
        self.assertEqual(sorted(pkg["exports"]), [".", "./package.json", "./rollup", "./vite"])
        for sub in (".", "./vite", "./rollup"):
            self.assertEqual(sorted(pkg["exports"][sub]), ["import", "require"])
            for cond, targets in pkg["exports"][sub].items():
                self.assertEqual(list(targets), ["types", "default"])  # types first, as TypeScript reads them
                for rel in targets.values():
                    self.assertIn("package/" + rel[2:], members, (sub, cond))
        self.assertEqual(members["package/bin/precompress.js"].mode & 0o777, 0o755)
        self.assertTrue(blobs["package/bin/precompress.js"].startswith(b"#!/usr/bin/env node\n"))
        # plain JavaScript, no dependency: every require is Node's or the package's own
        for name, blob in blobs.items():
            if name.endswith(".js"):
                for m in re.finditer(rb"require\('([^']+)'\)", blob):
                    mod = m.group(1).decode()
                    self.assertTrue(mod.startswith(".") or mod in ("child_process", "fs", "path", "os", "readline")
                                    or mod.startswith("@precompress/cli-linux-"), (name, mod))

    def test_aarch64_program_runs_under_qemu(self):
        qemu = shutil.which("qemu-aarch64-static")
        if not qemu:
            self.skipTest("qemu-aarch64-static is missing (.ci/deps release)")
        self.tools()
        d = self.path("arm64")
        os.makedirs(d)
        with open(os.path.join(d, "package.json"), "w") as f:
            json.dump({"name": "arm64-install", "private": True}, f)
        with open(os.path.join(d, ".npmrc"), "w") as f:
            f.write("@precompress:registry=%s/\n" % self.registry().url)
        # as npm installs for an arm64 machine: the arm64 package, not the x64 one (npm >= 10
        # takes --cpu; an older one, Debian 12's 9.2, installs both with --force)
        npm_major = int(sh(["npm", "--version"], d).stdout.split(".")[0])
        flags = ["--cpu=arm64", "--os=linux"] if npm_major >= 10 else ["--force"]
        sh(["npm", "install"] + flags + ["-D", "@precompress/cli@" + self.version], d)
        got = sorted(os.listdir(os.path.join(d, "node_modules", "@precompress")))
        self.assertEqual(got, ["cli", "cli-linux-arm64"] if npm_major >= 10 else ["cli", "cli-linux-arm64", "cli-linux-x64"])
        path = sh(["node", "-e", "process.stdout.write(require('@precompress/cli').binaryPath({arch: 'arm64'}))"], d).stdout
        self.assertTrue(path.endswith("/node_modules/@precompress/cli-linux-arm64/bin/precompress"), path)
        r = subprocess.run([qemu, path, "-V"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("precompress %s (" % self.version), r.stdout)
        tree = self.copy_site()
        r = subprocess.run([qemu, path, "-q", "--formats", "gz,br,zst", tree], stderr=subprocess.PIPE, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertOutputsAreTheProgramsBytes(tree)


class Launcher(Base):
    def setUp(self):
        super().setUp()
        self.d = self.installed("vanilla-vite5", "npm", "tarball")
        self.launcher = os.path.join(self.d, "node_modules", ".bin", "precompress")

    def test_npx_version_is_the_programs(self):
        p = sh(["npx", "precompress", "--version"], self.d)
        direct = sh([self.program_path(self.d), "--version"], self.d)
        self.assertEqual(p.stdout, direct.stdout)
        self.assertTrue(p.stdout.startswith("precompress %s (" % self.version))

    def test_exit_statuses_pass_through(self):
        p = sh(["npx", "precompress", "--no-such-option"], self.d, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(p.stderr.strip().splitlines(), ["precompress: unknown option '--no-such-option' (see 'precompress --help')"])
        tree = self.copy_site()
        os.makedirs(os.path.join(tree, "index.html.gz"))
        p = sh([self.launcher, "-q", tree], self.d, check=False)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("index.html.gz: output name is taken by a directory", p.stderr)
        # standard input passes through (--files-from -)
        tree = self.copy_site("site2")
        name = [n for n in sources(tree) if n.endswith(".css")][0]
        p = subprocess.run([self.launcher, "--json", "--files-from", "-", tree], input=name.encode() + b"\n",
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=self.d, env=base_env(), timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["files"], 1)

    def start(self, tree):
        p = subprocess.Popen([self.launcher, "-q", "--formats", "br", "-j", "2", tree], cwd=self.d, env=base_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        kids = []
        while time.time() < deadline and not kids:
            kids = self.children(p.pid)
            time.sleep(0.05)
        self.assertTrue(kids, "the launcher started no program")
        child = kids[0]
        self.assertTrue(os.readlink("/proc/%d/exe" % child).endswith("/bin/precompress"))
        # the program at work: wait for a temp output, so that the signal finds it busy
        while time.time() < deadline and not any(n.startswith(".") for n in os.listdir(tree)):
            time.sleep(0.05)
        return p, child

    def test_sigint_and_sigterm_stop_both(self):
        tree = self.big_tree()
        for sig, status in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
            with self.subTest(sig=sig):
                p, child = self.start(tree)
                os.kill(p.pid, sig)  # the launcher alone, as `kill` or a CI runner would
                out, err = p.communicate(timeout=60)
                self.assertEqual(p.returncode, status, err)
                self.assertGone(child, tree)

    def test_a_killed_program_kills_the_launcher(self):
        tree = self.big_tree()
        p, child = self.start(tree)
        os.kill(child, signal.SIGKILL)
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, -signal.SIGKILL)

    def one_line(self, p):
        lines = p.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, p.stderr)
        return lines[0]

    def test_precompress_binary_override(self):
        p = sh(["npx", "precompress", "-V"], self.d, env=base_env({"PRECOMPRESS_BINARY": "/nonexistent"}), check=False)
        self.assertEqual(p.returncode, 2)
        self.assertEqual(self.one_line(p), "precompress: cannot run /nonexistent (PRECOMPRESS_BINARY): no such file")
        p = sh(["npx", "precompress", "-V"], self.d, env=base_env({"PRECOMPRESS_BINARY": PROGRAM}))
        self.assertTrue(p.stdout.startswith("precompress "))

    def test_missing_platform_package(self):
        pkg = os.path.join(self.d, "node_modules", "@precompress", "cli-linux-x64")
        aside = self.path("aside")
        shutil.move(pkg, aside)
        try:
            p = sh([self.launcher, "-V"], self.d, check=False)
        finally:
            shutil.move(aside, pkg)
        self.assertEqual(p.returncode, 2)
        line = self.one_line(p)
        self.assertIn("@precompress/cli-linux-x64 is not installed", line)
        self.assertIn("npm/cli#4828", line)
        self.assertIn("repair: npm install @precompress/cli@%s --save-dev --package-lock-only && npm install" % self.version, line)

    def test_no_package_for_macos_or_windows(self):
        main_js = os.path.join(self.d, "node_modules", "@precompress", "cli", "bin", "precompress.js")
        for platform, arch, words in (("darwin", "arm64", ["macOS (darwin-arm64)", "Docker"]),
                                      ("win32", "x64", ["Windows (win32-x64)", "WSL"]),
                                      ("linux", "riscv64", ["linux-riscv64"])):
            with self.subTest(platform=platform):
                code = ("Object.defineProperty(process, 'platform', {value: %r});"
                        "Object.defineProperty(process, 'arch', {value: %r});"
                        "process.argv = [process.argv[0], %r, '-V']; require(%r);" % (platform, arch, main_js, main_js))
                p = sh(["node", "-e", code], self.d, check=False)
                self.assertEqual(p.returncode, 2)
                line = self.one_line(p)
                self.assertTrue(line.startswith("precompress: no package for "), line)
                self.assertIn("build the program from source", line)
                for w in words:
                    self.assertIn(w, line)


class Api(Base):
    def setUp(self):
        super().setUp()
        self.d = self.installed("vanilla-vite5", "npm", "tarball")

    def node(self, code, ext="cjs", check=True):
        script = os.path.join(self.d, "t-%s.%s" % (self.id().rsplit(".", 1)[1], ext))
        with open(script, "w") as f:
            f.write(code)
        return sh(["node", script], self.d, check=check)

    def test_promise_and_on_file(self):
        tree = self.copy_site()
        n = len(sources(tree))
        p = self.node("""
const { precompress } = require('@precompress/cli');
const records = [];
precompress(%r, { formats: ['gzip', 'br', 'zst'], levels: { gzip: 9, brotli: 11 }, onFile: (r) => records.push(r) })
  .then((summary) => console.log(JSON.stringify({ summary, records })));
""" % tree)
        res = json.loads(p.stdout)
        self.assertEqual(res["summary"]["type"], "summary")
        self.assertEqual(res["summary"]["exit"], 0)
        self.assertEqual(res["summary"]["files"], len(res["records"]))
        self.assertLessEqual(len(res["records"]), n)
        self.assertTrue(all(r["type"] == "file" for r in res["records"]))
        self.assertOutputsAreTheProgramsBytes(tree)

    def test_esm_async_iterator(self):
        tree = self.copy_site()
        p = self.node("""
import { files } from '@precompress/cli';
import precompress from '@precompress/cli';
const it = files(%r, { formats: 'gz', exclude: '**/*.css' });
const paths = [];
for await (const f of it) paths.push(f.path);
const summary = await it.summary;
console.log(JSON.stringify({ paths, summary, isFn: typeof precompress }));
""" % tree, ext="mjs")
        res = json.loads(p.stdout)
        self.assertEqual(res["isFn"], "function")
        self.assertEqual(len(res["paths"]), res["summary"]["files"])
        self.assertTrue(res["paths"])
        self.assertFalse([x for x in outputs(tree) if x.endswith(".css.gz")])
        self.assertTrue([x for x in sources(tree) if x.endswith(".css")])
        self.assertEqual(sorted(res["summary"]["formats"]), ["gz"])

    def test_failure_rejects_with_status_and_stderr(self):
        tree = self.copy_site()
        os.makedirs(os.path.join(tree, "index.html.gz"))
        p = self.node("""
const { precompress, PrecompressError } = require('@precompress/cli');
precompress(%r).then(() => console.log('resolved'), (e) => console.log(JSON.stringify({
  isPE: e instanceof PrecompressError, message: e.message, exitCode: e.exitCode, stderr: e.stderr,
  failed: e.summary && e.summary.failed })));
""" % tree)
        res = json.loads(p.stdout)
        self.assertTrue(res["isPE"])
        self.assertEqual(res["exitCode"], 1)
        self.assertEqual(res["failed"], 1)
        self.assertEqual(res["message"], "precompress: %s/index.html.gz: output name is taken by a directory" % tree)
        self.assertIn(res["message"], res["stderr"])

    def test_bad_options_refused_before_running(self):
        p = self.node("""
const { precompress, OptionError } = require('@precompress/cli');
const out = [];
const tries = [{ formats: ['deflate'] }, { levles: {} }, { levels: { brotli: 12 } }, { jobs: 0 },
               { include: 3 }, { minSize: 'big' }];
(async () => {
  for (const o of tries) {
    try { await precompress('/nonexistent-dir', o); out.push('resolved'); }
    catch (e) { out.push([e instanceof OptionError, e.message]); }
  }
  console.log(JSON.stringify(out));
})();
""")
        res = json.loads(p.stdout)
        self.assertTrue(all(r[0] for r in res), res)
        self.assertEqual(res[0][1], 'precompress: option formats: "deflate" is not a format: gzip (gz), brotli (br) or zstd (zst)')
        self.assertTrue(res[1][1].startswith("precompress: unknown option levles (known: "), res[1])
        self.assertEqual(res[2][1], "precompress: option levels.brotli: 12 is not an integer from 0 to 11")

    def test_a_signal_to_node_stops_the_program(self):
        """A build killed with SIGTERM (Node's default: it dies of it) leaves no program
        compressing on: the API passes the signal on first, then dies of it."""
        tree = self.big_tree()
        script = os.path.join(self.d, "t-signal.cjs")
        with open(script, "w") as f:
            f.write("require('@precompress/cli').precompress(%r, { formats: 'br', jobs: 2 }).then(() => console.log('done'));\n" % tree)
        p = subprocess.Popen(["node", script], cwd=self.d, env=base_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        kids = []
        while time.time() < deadline and not kids:
            kids = self.children(p.pid)
            time.sleep(0.05)
        self.assertTrue(kids, "no program started")
        while time.time() < deadline and not any(n.startswith(".") for n in os.listdir(tree)):
            time.sleep(0.05)
        os.kill(p.pid, signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, -signal.SIGTERM, err)
        self.assertEqual(out, b"")
        self.assertGone(kids[0], tree)

    def test_types_compile(self):
        """index.d.ts, vite.d.ts, rollup.d.ts and their .d.mts twins, under tsc --strict: ES
        modules and CommonJS (nodenext), a bundler's resolution, and a vite.config.ts whose
        defineConfig() takes the plugin."""
        tools = self.tools()
        tsc = os.path.join(tools, "node_modules", "typescript", "bin", "tsc")
        uses = """
  const s: Summary = await precompress(['dist'], { formats: ['gz', 'brotli'], levels: { brotli: 11 },
    onFile: (f: FileRecord) => void f.path });
  const n: number = s.formats.gz?.bytes_out ?? 0;
  const it = files('dist', { dictionaryFrom: ['prev'], signal: new AbortController().signal });
  for await (const f of it) { const st: string = f.status; void st; }
  const sum: Summary = await it.summary;
  try { await precompress('x'); } catch (e) { if (e instanceof PrecompressError) { const c: number | null = e.exitCode; void c; } }
  const p = vitePlugin({ include: /\\.js$/, threshold: 1024, algorithms: ['gzip', 'brotliCompress'], deltas: true, cacheDir: false });
  const r = rollupPlugin({ formats: 'gz,br' });
  void [n, sum, p.name, r.name];
"""
        esm = ("import { precompress, files, PrecompressError, type Summary, type FileRecord } from '@precompress/cli';\n"
               "import vitePlugin from '@precompress/cli/vite';\nimport rollupPlugin from '@precompress/cli/rollup';\n"
               "export async function main(): Promise<void> {%s}\n" % uses)
        cjs = ("import api = require('@precompress/cli');\nimport vitePlugin = require('@precompress/cli/vite');\n"
               "import rollupPlugin = require('@precompress/cli/rollup');\n"
               "export async function main(): Promise<void> {\n"
               "  const s: api.Summary = await api.precompress('dist', { formats: ['zst'] });\n"
               "  const p: vitePlugin.PrecompressVitePlugin = vitePlugin({ include: '**/*.js' });\n"
               "  const q = vitePlugin.default({ deltas: 'prev' });\n"
               "  const r = rollupPlugin.precompress({ minSize: '4k' });\n  void [s, p, q, r, api.default];\n}\n")
        config = ("import { defineConfig } from 'vite';\nimport precompress from '@precompress/cli/vite';\n"
                  "export default defineConfig({ plugins: [precompress({ formats: ['gzip', 'brotli'], deltas: true })] });\n")
        for name, text, module, resolution in (("t.mts", esm, "nodenext", "nodenext"), ("t.cts", cjs, "nodenext", "nodenext"),
                                               ("t.ts", esm, "esnext", "bundler"), ("vite.config.check.ts", config, "esnext", "bundler")):
            with self.subTest(name=name, resolution=resolution):
                with open(os.path.join(self.d, name), "w") as f:
                    f.write(text)
                with open(os.path.join(self.d, "tsconfig.check.json"), "w") as f:
                    json.dump({"compilerOptions": {"strict": True, "noEmit": True, "module": module,
                                                   "moduleResolution": resolution, "target": "es2022",
                                                   "types": ["node"], "skipLibCheck": name.startswith("vite."),
                                                   "typeRoots": [os.path.join(tools, "node_modules", "@types")]},
                               "files": [name]}, f)
                p = sh(["node", tsc, "-p", "tsconfig.check.json"], self.d, check=False)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_options_map_to_arguments(self):
        p = self.node("""
const { command } = require('@precompress/cli');
console.log(JSON.stringify(command(['dist', 'public'], {
  formats: ['gzip', 'brotli', 'zstd'], levels: { gzip: 6, brotli: 9, zstd: 12 }, include: ['**/*.js'],
  exclude: '**/*.map', minSize: '1k', maxRatio: 0.9, dictionaryFrom: ['prev1', 'prev2'],
  manifest: 'm.json', cacheDir: '.cache', jobs: 3, memoryLimit: 268435456, skipExt: ['.png'],
  filesFrom: ['a.js', 'b c.css'],
})));
""")
        res = json.loads(p.stdout)
        self.assertEqual(res["argv"], [
            "--json-lines", "--progress", "never", "--formats", "gz,br,zst", "--gzip-level", "6",
            "--brotli-quality", "9", "--zstd-level", "12", "--include", "**/*.js", "--exclude", "**/*.map",
            "--min-size", "1k", "--max-ratio", "0.9", "--dictionary-from", "prev1", "--dictionary-from", "prev2",
            "--manifest", "m.json", "--cache-dir", ".cache", "--jobs", "3", "--memory-limit", "268435456",
            "--skip-ext", "png", "--files-from", "-", "--", "dist", "public"])
        self.assertEqual(res["input"], "a.js\u0000b c.css\u0000")
        # and the program takes them
        tree = self.copy_site()
        p = self.node("""
const { precompress } = require('@precompress/cli');
precompress(%r, { filesFrom: %s, formats: 'gz' }).then((s) => console.log(s.files));
""" % (tree, json.dumps([n for n in sources(tree) if n.isascii() and n.endswith(('.html', '.css', '.js'))][:2])))
        self.assertEqual(p.stdout.strip(), "2")


class Vite(Base):
    def test_vanilla_with_npm_from_the_registry(self):
        d, pkgs = self.build_and_check("vanilla-app", "npm")
        self.assertEqual(pkgs, ["cli", "cli-linux-x64"])  # arm64 skipped by npm's cpu check
        lock = json.load(open(os.path.join(d, "package-lock.json")))["packages"]
        self.assertIn("node_modules/@precompress/cli-linux-arm64", lock)  # listed for other machines

    def test_vanilla_with_pnpm(self):
        d, pkgs = self.build_and_check("vanilla-app", "pnpm")
        self.assertEqual(pkgs, ["cli"])
        store = os.listdir(os.path.join(d, "node_modules", ".pnpm"))
        self.assertTrue([s for s in store if s.startswith("@precompress+cli-linux-x64@")], store)
        self.assertFalse([s for s in store if s.startswith("@precompress+cli-linux-arm64@")], store)

    def test_vanilla_with_yarn(self):
        d, pkgs = self.build_and_check("vanilla-app", "yarn")
        self.assertEqual(pkgs, ["cli", "cli-linux-x64"])

    def test_react_with_npm(self):
        self.build_and_check("react-app", "npm")

    def test_vite5_with_the_tarballs(self):
        self.build_and_check("vanilla-vite5", "npm", "tarball")

    def test_two_builds_give_deltas_and_use_the_cache(self):
        d = self.installed("vanilla-app", "npm", "registry")
        shutil.rmtree(os.path.join(d, "node_modules", ".cache", "precompress"), ignore_errors=True)
        self.write_config(d, "{ deltas: true, formats: ['gz', 'br', 'zst'] }")
        p = self.vite(d)
        self.assertIn("no earlier build in node_modules/.cache/precompress/prev-client yet", p.stdout)
        first = self.path("first")
        shutil.copytree(os.path.join(d, "dist"), first)
        main_js = os.path.join(d, "src", "main.js")
        saved = open(main_js).read()
        try:
            with open(main_js, "a") as f:
                f.write("\ndocument.title = 'second build: ' + %r;\n" % ("x" * 200))
            p = self.vite(d)
        finally:
            with open(main_js, "w") as f:
                f.write(saved)
        self.assertRegex(p.stdout, r"dcz [\d.]+ kB \(\d+\)")
        self.assertRegex(p.stdout, r", \d+ from the cache, ")
        dist = os.path.join(d, "dist")
        by_hash = {}
        for rel in sources(first):
            by_hash[sha256(os.path.join(first, rel))] = os.path.join(first, rel)
        deltas = [os.path.join(dp, n) for dp, _, ns in os.walk(dist) for n in ns if DELTA_RE.search(n)]
        js = [x for x in deltas if re.search(r"/assets/index-[^/]+\.js\.[0-9a-f]{16}\.dcz$", x)]
        self.assertEqual(len(js), 1, deltas)
        for delta in deltas:
            with open(delta, "rb") as f:
                head = f.read(40)
            src = DELTA_RE.sub("", delta)
            if delta.endswith(".dcz"):
                self.assertEqual(head[:8], bytes.fromhex("5e2a4d1820000000"))
                digest = head[8:40].hex()
            else:
                self.assertEqual(head[:4], bytes.fromhex("ff444342"))
                digest = head[4:36].hex()
            self.assertIn(digest, by_hash, delta)
            self.assertEqual(os.path.basename(delta).split(".")[-2], digest[:16])
            if delta.endswith(".dcz"):
                r = subprocess.run(["zstd", "-d", "-c", "-q", "-D", by_hash[digest], delta], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(src, "rb") as f:
                    self.assertEqual(r.stdout, f.read(), delta)
        # the kept previous build is this one now, for the build after it
        prev = os.path.join(d, "node_modules", ".cache", "precompress", "prev-client")
        self.assertEqual(sources(prev), sources(dist))
        self.assertTrue(os.path.exists(os.path.join(d, "node_modules", ".cache", "precompress", "cache.sqlite")))

    def test_watch_compresses_each_rebuild(self):
        d = self.installed("vanilla-app", "npm", "registry")
        self.write_config(d, "{ cacheDir: false }")
        main_js = os.path.join(d, "src", "main.js")
        saved = open(main_js).read()
        log = self.path("watch.log")
        with open(log, "w") as out:
            p = subprocess.Popen(["node", "node_modules/vite/bin/vite.js", "build", "--watch"], cwd=d, env=base_env(),
                                 stdout=out, stderr=subprocess.STDOUT)
        try:
            def summaries(n):
                deadline = time.time() + 120
                while time.time() < deadline:
                    found = re.findall(r"precompress: \d+ of \d+ files in dist/", open(log).read())
                    if len(found) >= n:
                        return
                    time.sleep(0.2)
                self.fail("no %d summaries:\n%s" % (n, open(log).read()))
            summaries(1)
            with open(main_js, "a") as f:
                f.write("\nconsole.log('rebuilt');\n")
            summaries(2)
            js = [n for n in os.listdir(os.path.join(d, "dist", "assets")) if n.endswith(".js")]
            self.assertEqual(len(js), 1, js)
            with open(os.path.join(d, "dist", "assets", js[0]), "rb") as f:
                body = f.read()
            self.assertIn(b"rebuilt", body)
            self.assertEqual(decode("br", os.path.join(d, "dist", "assets", js[0] + ".br")), body)
        finally:
            p.terminate()
            p.wait(timeout=30)
            with open(main_js, "w") as f:
                f.write(saved)

    def test_write_false_and_ssr_compress_nothing(self):
        for project in ("vanilla-app", "vanilla-vite5"):
            with self.subTest(project=project):
                d = self.installed(project, "npm", "registry" if project == "vanilla-app" else "tarball")
                self.write_config(d, "{}", extra="build: { write: false },", name="vite.nowrite.config.js")
                p = self.vite(d, "-c", "vite.nowrite.config.js", env={"DEBUG": "precompress"})
                self.assertIn("vite:precompress build.write is false: nothing on disk, nothing to compress", p.stdout)
                self.assertNotIn("files in dist/", p.stdout)
                self.write_config(d, "{}")
                entry = "src/main.js" if project == "vanilla-app" else "main.js"
                shutil.rmtree(os.path.join(d, "dist-ssr"), ignore_errors=True)
                p = self.vite(d, "--ssr", entry, "--outDir", "dist-ssr")
                self.assertTrue(os.listdir(os.path.join(d, "dist-ssr")))
                self.assertEqual(outputs(os.path.join(d, "dist-ssr")), {})
        # Vite 6+: one build of two environments (`vite build --app`): the client's is
        # compressed, the server's is not
        d = self.installed("vanilla-app", "npm", "registry")
        self.write_config(d, "{ verbose: false }", name="vite.app.config.js", extra=(
            "builder: {}, environments: { client: { build: { outDir: 'dist/client' } }, "
            "ssr: { build: { outDir: 'dist/server', rollupOptions: { input: 'src/main.js' } } } },"))
        p = self.vite(d, "--app", "-c", "vite.app.config.js")
        self.assertEqual(len(re.findall(r"precompress: \d+ of \d+ files in ", p.stdout)), 1, p.stdout)
        self.assertIn("files in dist/client/: gz", p.stdout)
        self.assertTrue(outputs(os.path.join(d, "dist", "client")))
        self.assertTrue(os.listdir(os.path.join(d, "dist", "server")))
        self.assertEqual(outputs(os.path.join(d, "dist", "server")), {})

    def assertOneLineFailure(self, p, line):
        """The build failed, and the message is there once, on a line of its own (Vite 8
        prints the error object: `[message] { plugin: ... }`; Vite 5 its stack, the message)."""
        self.assertNotEqual(p.returncode, 0)
        log = p.stdout + p.stderr
        self.assertEqual(log.count(line), 1, log)
        found = [l for l in log.splitlines() if line in l]
        self.assertIn(found[0].strip(), (line, "[%s]" % line, "[%s] {" % line), log)

    def test_errors_fail_the_build_with_one_line(self):
        for project in ("vanilla-app", "vanilla-vite5"):
            with self.subTest(project=project):
                d = self.installed(project, "npm", "registry" if project == "vanilla-app" else "tarball")
                self.write_config(d, "{}")
                p = self.vite(d, env={"PRECOMPRESS_BINARY": "/nonexistent"}, check=False)
                self.assertOneLineFailure(p, "precompress: cannot run /nonexistent (PRECOMPRESS_BINARY): no such file")
                self.write_config(d, "{ formats: ['deflate'] }", name="vite.bad.config.js")
                p = self.vite(d, "-c", "vite.bad.config.js", check=False)
                self.assertOneLineFailure(p, 'precompress: option formats: "deflate" is not a format: gzip (gz), brotli (br) or zstd (zst)')
                self.write_config(d, "{ deleteOriginalAssets: true }", name="vite.bad.config.js")
                p = self.vite(d, "-c", "vite.bad.config.js", check=False)
                self.assertNotEqual(p.returncode, 0)
                self.assertIn("precompress: option deleteOriginalAssets: not supported: servers need the original", p.stdout + p.stderr)
                public = os.path.join(d, "public")
                os.makedirs(os.path.join(public, "big.txt.gz"))
                with open(os.path.join(public, "big.txt.gz", "x"), "w") as f:
                    f.write("x")
                with open(os.path.join(public, "big.txt"), "wb") as f:
                    f.write(words_data(20000))
                try:
                    p = self.vite(d, check=False)
                finally:
                    shutil.rmtree(os.path.join(public, "big.txt.gz"))
                    os.remove(os.path.join(public, "big.txt"))
                self.assertOneLineFailure(p, "precompress: %s/dist/big.txt.gz: output name is taken by a directory" % d)

    def test_rollup_plugin(self):
        d = self.installed("vanilla-vite5", "npm", "tarball")
        script = os.path.join(d, "rollup-build.mjs")
        with open(script, "w") as f:
            f.write("""
import { rollup } from 'rollup';
import precompress from '@precompress/cli/rollup';
const bundle = await rollup({ input: 'counter.js', plugins: [precompress({ algorithms: ['gzip', 'brotliCompress'] })],
                              onwarn: () => {} });
await bundle.write({ dir: 'dist-rollup', format: 'es' });
await bundle.close();
""")
        shutil.rmtree(os.path.join(d, "dist-rollup"), ignore_errors=True)
        p = sh(["node", script], d)
        self.assertRegex(p.stderr, r"precompress: 1 of 1 files in dist-rollup/: gz ")
        got = self.assertOutputsAreTheProgramsBytes(os.path.join(d, "dist-rollup"), formats=("gz", "br"))
        self.assertEqual(sorted(got), ["counter.js.br", "counter.js.gz"])


if __name__ == "__main__":
    main()
