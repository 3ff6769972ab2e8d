#!/usr/bin/python3
"""The recipes under examples/ run as written: their shell steps, not Docker or a CI runner.

Each recipe file is parsed (Dockerfile instructions; the workflow and .gitlab-ci.yml with
python3-yaml) and its shell steps are run for real with bash/sh in temp directories, against a
copy of fixtures/site standing for the site's build output. The test adapts to the recipes,
never the reverse:

- Steps that install Debian packages (apt-get) are not run (root, network); their package list
  must be exactly the build group of .ci/deps (`.ci/deps build`), but in the Dockerfile's last
  stage, which installs Debian's nginx and its brotli_static module (part of `.ci/deps test`).
- Steps that build precompress (meson setup, ninja, meson install) are not run in the CI
  recipes: a directory holding the program under test (env PRECOMPRESS) comes first on PATH
  instead, as a `precompress` that adds --json to the recipe's arguments: the test reads each
  run's counts from the JSON on its standard output, never from the summary line (files,
  cache, manifest and exit status are the recipe's own; --check then lists nothing, its exit
  status still tells). The Dockerfile's build stage is run for real by DockerBuildStage (a -Dstatic=true
  build of a copy of this source tree), and the program under test stands in for its output
  in DockerRecipe.
- Steps that build the site (npm) are replaced by a copy of fixtures/site at dist/.
- Dockerfile: each stage gets a temp directory standing for its root file system; every
  absolute path in a COPY, WORKDIR or RUN is taken below it (/srv/static -> ROOT/srv/static),
  and ROOT/usr/local/bin comes first on PATH. RUN lines run with /bin/sh -c, as Docker does.
- GitHub Actions: the job runs on the runner tests/gha.py emulates (its `run:` steps with bash
  as GitHub starts it, in a temp workspace, HOME a temp directory; actions/cache over a store
  that outlives the run), and its step that uses this repository's action runs action.yml's
  steps, which download a local release (see GitHubActions). GitLab CI: before_script and
  script run as one `bash -eo pipefail` script in a temp project directory (CI_PROJECT_DIR),
  variables expanded as GitLab does; `cache:` paths are restored and saved the same way.

Each CI recipe runs twice, each time in a fresh checkout (no manifest): the second run must take
every output from the cache. Every run's outputs must be the oracle's bytes, and --check pass.
"""
import sys

sys.dont_write_bytecode = True
import atexit
import copy
import os
import re
import shlex
import shutil
import stat
import subprocess
import tempfile
import unittest

import gha
from pctest import (PROGRAM, SITE, PCTestCase, classify, expected_outputs, fsb, load_json_strict, main,
                    run, walk_all)

try:
    import yaml
except ImportError:  # skipped with a message
    yaml = None

SRC_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(SRC_ROOT, "examples")
DOCKERFILE = os.path.join(EXAMPLES, "docker", "Dockerfile")
GITHUB = os.path.join(EXAMPLES, "github-actions", "precompress.yml")
GITLAB = os.path.join(EXAMPLES, "gitlab-ci", ".gitlab-ci.yml")
ACTION_REPO = "precompress/precompress"  # the recipe's name for this repository's action



# ----------------------------------------------------------------------------
# What a step is
# ----------------------------------------------------------------------------

def ci_build_packages():
    """The packages of .ci/deps's build group (`build=(...)`), comments left out."""
    with open(os.path.join(SRC_ROOT, ".ci", "deps")) as f:
        text = f.read()
    body = re.search(r"^build=\((.*?)^\)", text, re.S | re.M).group(1)
    pkgs = []
    for line in body.splitlines():
        pkgs += line.split("#", 1)[0].split()
    return sorted(pkgs)


def apt_install_packages(cmd):
    """Package names after `apt-get install` in a shell command (options left out)."""
    toks = shlex.split(cmd.replace("\\\n", " "))
    for i in range(len(toks) - 1):
        if toks[i] == "apt-get" and "install" in toks[i + 1:i + 5]:
            j = toks.index("install", i) + 1
            pkgs = []
            while j < len(toks) and toks[j] not in ("&&", ";", "||", "|"):
                if not toks[j].startswith("-"):
                    pkgs.append(toks[j])
                j += 1
            return sorted(pkgs)
    return None


# What the Dockerfile's last stage installs: Debian's nginx with brotli_static.
SERVE_PACKAGES = ["libnginx-mod-http-brotli-static", "nginx"]


def readme_nginx_lines():
    """The directives of README.md's nginx snippet (comments left out)."""
    with open(os.path.join(SRC_ROOT, "README.md")) as f:
        block = re.search(r"^```nginx\n(.*?)^```$", f.read(), re.S | re.M).group(1)
    return [l.strip() for l in block.splitlines() if l.strip() and not l.strip().startswith("#")]


def kind(cmd):
    if re.search(r"\bapt-get\b", cmd):
        return "apt"
    if re.search(r"\bmeson\b|\bninja\b", cmd):
        return "build"
    if re.search(r"\bnpm\b", cmd):
        return "site"
    return "run"


def summaries(out):
    """The --json summaries on a step's standard output, in order."""
    return [load_json_strict(l) for l in out.split("\n") if l.startswith("{")]


def copy_source_tree(dst):
    """This repository as a Docker context would hold it: no .git, no build directories."""
    def ignore(d, names):
        out = []
        for n in names:
            p = os.path.join(d, n)
            if n in (".git", "__pycache__"):
                out.append(n)
            elif os.path.isdir(p) and not os.path.islink(p) and (
                    os.path.exists(os.path.join(p, "meson-private"))
                    or os.path.exists(os.path.join(p, "build.ninja"))):
                out.append(n)
        return out
    shutil.copytree(SRC_ROOT, dst, symlinks=True, ignore=ignore)


class Base(PCTestCase):
    def setUp(self):
        super().setUp()
        # The program under test, as `precompress` on PATH whatever its file is called, with
        # --json (see the top).
        self.bin = self.path("bin")
        os.makedirs(self.bin)
        with open(os.path.join(self.bin, "precompress"), "w") as f:
            f.write('#!/bin/sh\nexec %s --json "$@"\n' % shlex.quote(os.path.abspath(PROGRAM)))
        os.chmod(os.path.join(self.bin, "precompress"), 0o755)
        self.env = dict(os.environ)
        for k in ("PRECOMPRESS_CACHE_DIR", "UV_THREADPOOL_SIZE", "NO_COLOR"):
            self.env.pop(k, None)
        self.env["PATH"] = self.bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")

    def assertAptMatchesCiDeps(self, cmd, where):
        pkgs = apt_install_packages(cmd)
        self.assertIsNotNone(pkgs, "%s: no apt-get install in %r" % (where, cmd))
        self.assertEqual(pkgs, ci_build_packages(),
                         "%s installs other packages than `.ci/deps build`" % where)

    def assertSiteCompressed(self, root, extra=()):
        """root holds fixtures/site plus exactly the oracle's outputs (and extra)."""
        want = expected_outputs(classify(SITE))
        self.assertGreater(len(want), 10)
        got = walk_all(root)
        new = set(got) - set(walk_all(SITE)) - set(extra)
        self.assertEqual(sorted(new), sorted(want), "outputs differ from what the keep rule calls for")
        for rel, blob in want.items():
            with open(os.path.join(fsb(root), rel), "rb") as f:
                self.assertEqual(f.read(), blob, "%r: bytes differ from the oracle" % rel)
        return len(want)

    def bash(self, script, cwd, env, shell=("bash", "--noprofile", "--norc", "-eo", "pipefail")):
        path = os.path.join(self.tmp, "step.sh")
        with open(path, "w") as f:
            f.write(script + "\n")
        p = subprocess.run(list(shell) + [path], cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=300)
        out, err = p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
        self.assertEqual(p.returncode, 0, "step failed (exit %d):\n%s\n--- stdout\n%s--- stderr\n%s"
                         % (p.returncode, script, out[-3000:], err[-3000:]))
        return out, err

    def assertColdThenWarm(self, first, second, n_outputs_files):
        """first/second: the --json summaries of the compressing step of two runs."""
        self.assertEqual(len(first), 1, first)
        self.assertEqual(len(second), 1, second)
        first, second = first[0], second[0]
        self.assertEqual((first["compressed"], first["cached"]), (n_outputs_files, 0),
                         "the first run compressed every file, with no cache: %s" % first)
        self.assertEqual((second["compressed"], second["cached"]), (n_outputs_files, n_outputs_files),
                         "the second run took every file's outputs from the cache: %s" % second)

    def compressed_files(self):
        return len({rel for rel, c in classify(SITE).items() if c["skip"] is None})


# ----------------------------------------------------------------------------
# Dockerfile
# ----------------------------------------------------------------------------

def parse_dockerfile(path):
    """[(INSTRUCTION, rest)], continuation lines joined, comment lines dropped (as Docker does)."""
    out, buf = [], None
    with open(path) as f:
        for line in f.read().splitlines():
            s = line.strip()
            if s.startswith("#") or (buf is None and s == ""):
                continue
            if line.rstrip().endswith("\\"):
                buf = (buf or "") + line.rstrip()[:-1]
                continue
            full = ((buf or "") + line).strip()
            buf = None
            instr, _, rest = full.partition(" ")
            out.append((instr.upper(), rest.strip()))
    return out


ABS_RE = re.compile(r"(^|[\s'\"=>:])/(?=[\w.])")


class Stage:
    def __init__(self, name, image, root):
        self.name, self.image, self.root = name, image, root
        self.workdir = "/"
        self.args, self.env = {}, {}
        for d in ("usr/local/bin", "tmp", "root", "etc"):
            os.makedirs(os.path.join(root, d), exist_ok=True)

    def installed(self, pkgs):
        """What a (skipped) apt-get install would have made that later steps write into."""
        if "nginx" in pkgs:
            for d in ("etc/nginx/conf.d", "var/www/html"):
                os.makedirs(os.path.join(self.root, d), exist_ok=True)

    def host(self, p):
        p = os.path.join(self.workdir, p) if not p.startswith("/") else p
        return os.path.join(self.root, p.lstrip("/"))

    def subst_args(self, s):
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: self.args.get(m.group(1) or m.group(2), m.group(0)), s)

    def map_paths(self, cmd):
        return ABS_RE.sub(lambda m: m.group(1) + self.root + "/", cmd)


def docker_copy(src, dst, dst_is_dir_hint):
    if os.path.isdir(src):
        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
    else:
        if dst_is_dir_hint or os.path.isdir(dst):
            os.makedirs(dst, exist_ok=True)
            dst = os.path.join(dst, os.path.basename(src))
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)


class DockerBase(Base):
    """Runs examples/docker/Dockerfile stage by stage (see the module doc)."""

    def run_dockerfile(self, build):
        instrs = parse_dockerfile(DOCKERFILE)
        context = self.path("context")
        os.makedirs(context)
        if build:
            copy_source_tree(os.path.join(context, "precompress"))
        else:
            os.makedirs(os.path.join(context, "precompress"))
        shutil.copytree(SITE, os.path.join(context, "dist"), symlinks=True)
        stages, st, log = {}, None, []
        for instr, rest in instrs:
            if instr == "FROM":
                m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", rest, re.I)
                name = m.group(2) or str(len(stages))
                st = stages[name] = Stage(name, m.group(1), self.path("stages", name))
            elif instr == "ARG":
                k, _, v = rest.partition("=")
                st.args[k] = v
            elif instr == "ENV":
                k, _, v = rest.partition("=")
                st.env[k] = v
            elif instr == "WORKDIR":
                st.workdir = os.path.join(st.workdir, st.subst_args(rest))
                os.makedirs(st.host(st.workdir), exist_ok=True)
            elif instr == "COPY":
                parts = st.subst_args(rest).split()
                frm = None
                if parts[0].startswith("--from="):
                    frm = stages[parts.pop(0)[len("--from="):]]
                self.assertEqual(len(parts), 2, rest)
                src = frm.host(parts[0]) if frm else os.path.join(context, parts[0])
                if frm and frm.name == "build" and not build and not os.path.exists(src):
                    # The build stage was not run: the program under test is its output.
                    docker_copy(PROGRAM, src, False)
                docker_copy(src, st.host(parts[1]), parts[1].endswith("/"))
            elif instr == "RUN":
                k = kind(rest)
                log.append((st.name, k, rest))
                if k == "apt":
                    if st.name == "build":
                        self.assertAptMatchesCiDeps(rest, "Dockerfile stage %s" % st.name)
                    else:
                        self.assertEqual(apt_install_packages(rest), SERVE_PACKAGES, rest)
                        st.installed(apt_install_packages(rest))
                    continue
                if k == "build":
                    self.assertEqual(st.name, "build", rest)
                    self.assertIn("-Dstatic=true", rest)
                    # A build directory outside the sources: a build/ copied in with them
                    # cannot be mistaken for it.
                    builddir = shlex.split(rest)[shlex.split(rest).index("setup") + 1]
                    self.assertTrue(builddir.startswith("/") and not builddir.startswith("/src"), rest)
                    if not build:
                        continue
                env = dict(self.env)
                env.update(st.env)
                env["HOME"] = st.host("/root")
                if not build:
                    # The stand-in for the static program is the one under test,
                    # which the default build links against the shared library.
                    env["LD_LIBRARY_PATH"] = os.path.dirname(os.path.dirname(os.path.abspath(PROGRAM)))
                env["PATH"] = st.host("/usr/local/bin") + os.pathsep + os.environ.get("PATH", "")
                cwd = st.host(st.workdir)
                out, err = self.bash(st.map_paths(rest), cwd, env, shell=("/bin/sh",))
                log[-1] += (err if k == "run" else out + err,)
            elif instr in ("EXPOSE", "CMD"):
                st.env["#" + instr] = rest
            else:
                self.fail("instruction %s is not known to this test: %s %s" % (instr, instr, rest))
        self.assertIn("build", stages)
        self.assertIn("static", stages)
        self.assertEqual(len(stages), 3, sorted(stages))
        return stages, log

    def check_static_stage(self, stages, log):
        static = stages["static"]
        prog = static.host("/usr/local/bin/precompress")
        self.assertTrue(os.access(prog, os.X_OK), "the static stage has no /usr/local/bin/precompress")
        runs = [l for l in log if l[0] == "static" and l[1] == "run"]
        self.assertEqual(len(runs), 2, runs)
        self.assertIn("--check", runs[1][2])  # it passed: the step exits 1 else
        # The manifest is beside the web root, not in it.
        site = static.host("/srv/static")
        self.assertSiteCompressed(site)
        man = static.host("/srv/precompress.json")
        self.assertTrue(os.path.isfile(man))
        # The stage's manifest makes every file it compressed (or found not worth it) unchanged
        # to that --check.
        r = run(["--json", "--check", "--manifest", man, site])
        self.assertEqual(r.rc, 0, r)
        s = r.summary()
        read_before = sum(1 for c in classify(SITE).values() if c["skip"] in (None, "ratio"))
        self.assertEqual((s["changes"], s["compressed"], s["unchanged"]), (0, 0, read_before), r)
        # The last stage serves what the static stage made, with README.md's nginx snippet.
        last = [s for n, s in stages.items() if n not in ("build", "static")]
        self.assertEqual(len(last), 1)
        html = last[0].host("/var/www/html")
        self.assertSiteCompressed(html)
        conf = [os.path.join(dp, f) for dp, _, fs in os.walk(last[0].host("/etc/nginx/conf.d")) for f in fs]
        self.assertEqual(len(conf), 1, conf)
        with open(conf[0]) as f:
            self.assertEqual(f.read().split("\n"), readme_nginx_lines() + [""])
        self.assertIn("daemon off", last[0].env.get("#CMD", ""))
        return prog


class DockerRecipe(DockerBase):
    def test_stages_with_the_program_under_test(self):
        stages, log = self.run_dockerfile(build=False)
        kinds = [(n, k) for n, k, *_ in log]
        self.assertEqual(kinds[:2], [("build", "apt"), ("build", "build")])
        self.check_static_stage(stages, log)


class DockerBuildStage(DockerBase):
    """The build stage for real: a -Dstatic=true build of this tree, used by the next stage."""

    def test_build_stage_makes_a_static_binary_the_next_stage_runs(self):
        for tool in ("meson", "ninja", "pkg-config", "cc"):
            if shutil.which(tool) is None:
                self.skipTest("%s is missing (.ci/deps)" % tool)
        stages, log = self.run_dockerfile(build=True)
        prog = self.check_static_stage(stages, log)
        from test_static import assert_static
        assert_static(self, prog)
        # glibc's warnings about static NSS (getpwuid_r, from libuv) are expected: shown, not failed.
        for out in [l[3] for l in log if l[0] == "build" and l[1] == "build"]:
            for line in out.splitlines():
                if "warning:" in line:
                    print("static link: " + line.strip())


@unittest.skipUnless(os.environ.get("PC_SLOW") == "1", "suite 'slow' only (PC_SLOW=1)")
class ImageBuild(Base):
    """The Dockerfile built for real by podman (slow suite: about three minutes), then the
    image's own nginx serving a .br.

    No image registry is needed: when there is no debian:12 image, one is made with debootstrap
    from Debian's mirror and `podman import`ed under the names the Dockerfile asks for
    (debian:12, debian:12-slim); apt-get inside the build reaches the same mirror. In a
    container (this CI), podman needs `--isolation chroot` (crun refuses cgroups in hybrid
    mode) and `--network host`, and `podman run` cannot set its rlimits: the built image is
    mounted (`podman create` + `podman mount`) and its nginx run with chroot, listening on a
    free port. Every image, container and tag the test made is removed afterwards."""

    IMAGE = "localhost/precompress-example-test:%d" % os.getpid()

    def podman(self, *args, timeout=900, check=True):
        p = subprocess.run(["podman"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        out = p.stdout.decode(errors="replace")
        if check:
            self.assertEqual(p.returncode, 0, "podman %s:\n%s" % (" ".join(args), out[-6000:]))
        return out

    def images(self):
        return set(self.podman("images", "-q", "--no-trunc").split())

    def base_image(self):
        """docker.io/library/debian:12 and :12-slim, made by debootstrap when missing."""
        have = set(self.podman("images", "--format", "{{.Repository}}:{{.Tag}}").split())
        if {"docker.io/library/debian:12", "docker.io/library/debian:12-slim"} <= have:
            return
        rootfs = self.path("rootfs")
        p = subprocess.run(["debootstrap", "--variant=minbase", "bookworm", rootfs, "http://deb.debian.org/debian"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=900)
        self.assertEqual(p.returncode, 0, p.stdout.decode(errors="replace")[-4000:])
        shutil.rmtree(os.path.join(rootfs, "var/cache/apt/archives"), ignore_errors=True)
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(["podman", "import", "-", "docker.io/library/debian:12"], stdin=tar.stdout,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        tar.stdout.close()
        self.assertEqual(tar.wait(), 0)
        self.assertEqual(imp.returncode, 0, imp.stdout)
        self.podman("tag", "docker.io/library/debian:12", "docker.io/library/debian:12-slim")
        shutil.rmtree(rootfs, ignore_errors=True)

    def test_podman_builds_the_image_and_its_nginx_serves_br(self):
        for tool in ("podman", "debootstrap", "chroot"):
            if shutil.which(tool) is None:
                self.skipTest("%s is missing (apt-get install podman debootstrap)" % tool)
        if os.geteuid() != 0:
            self.skipTest("needs root (debootstrap, podman mount)")
        before = self.images()
        self.base_image()
        self.addCleanup(self.remove_new_images, before)
        self.podman("build", "--pull=never", "--isolation", "chroot", "--network", "host",
                    "-f", DOCKERFILE, "--build-arg", "PRECOMPRESS_SRC=.", "--build-arg", "STATIC_SRC=fixtures/site",
                    "-t", self.IMAGE, SRC_ROOT, timeout=1500)
        # The build stage (its layers are cached by now): the sources it got hold no build
        # directory and no .git (.dockerignore), whatever the checkout has.
        self.podman("build", "--pull=never", "--isolation", "chroot", "--network", "host", "--target", "build",
                    "-f", DOCKERFILE, "--build-arg", "PRECOMPRESS_SRC=.", "--build-arg", "STATIC_SRC=fixtures/site",
                    "-t", self.IMAGE + "-build", SRC_ROOT, timeout=600)
        src = os.path.join(self.mount(self.IMAGE + "-build"), "src")
        self.assertTrue(os.path.isfile(os.path.join(src, "meson.build")), os.listdir(src))
        left = [n for n in os.listdir(src) if n.startswith("build") or n == ".git"]
        self.assertEqual(left, [], "the build context kept these (.dockerignore)")

        root = self.mount(self.IMAGE)

        # What the image holds: the tree with the oracle's outputs, no manifest in the web
        # root, the context's build directories and .git left out (.dockerignore).
        html = os.path.join(root, "var/www/html")
        self.assertSiteCompressed(html)
        with open(os.path.join(root, "etc/nginx/conf.d/precompress.conf")) as f:
            self.assertEqual(f.read().split("\n"), readme_nginx_lines() + [""])

        # Its nginx, on a free port, sends index.html.br to a client that accepts br.
        import socket
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        # sites-enabled/default is an absolute symlink: read its target inside the image,
        # and put a file of our own in its place (never the host's /etc/nginx).
        site = os.path.join(root, "etc/nginx/sites-enabled/default")
        with open(os.path.join(root, "etc/nginx/sites-available/default")) as f:
            conf = f.read()
        os.unlink(site)
        with open(site, "w") as f:
            f.write(re.sub(r"listen\s+(\[::\]:)?80 default_server;", lambda m: "" if m.group(1) else
                           "listen 127.0.0.1:%d default_server;" % port, conf))
        srv = subprocess.Popen(["chroot", root, "nginx", "-g", "daemon off;"], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, start_new_session=True)
        self.addCleanup(self.stop, srv)
        import http.client
        import time
        deadline = time.monotonic() + 20
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.putrequest("GET", "/index.html", skip_accept_encoding=True)
                c.putheader("Accept-Encoding", "br")
                c.endheaders()
                r = c.getresponse()
                body = r.read()
                break
            except OSError:
                self.assertIsNone(srv.poll(), "the image's nginx exited: %r" % srv.stdout.read())
                self.assertLess(time.monotonic(), deadline, "the image's nginx does not answer")
                time.sleep(0.2)
        self.assertEqual(r.status, 200)
        self.assertEqual(r.getheader("Content-Encoding"), "br")
        self.assertIn("Accept-Encoding", r.getheader("Vary") or "")
        with open(os.path.join(html, "index.html.br"), "rb") as f:
            self.assertEqual(body, f.read())

    def mount(self, image):
        """The root file system of a new container of image (removed at cleanup)."""
        cid = self.podman("create", image, "true").split()[-1]  # a command: the base has none
        self.addCleanup(self.podman, "rm", "-f", cid, check=False)
        root = self.podman("mount", cid).split()[-1]
        self.addCleanup(self.podman, "umount", cid, check=False)
        return root

    def stop(self, srv):
        import signal
        try:
            os.killpg(srv.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        srv.wait()

    def remove_new_images(self, before):
        self.podman("rmi", "-f", self.IMAGE, self.IMAGE + "-build", check=False)
        for i in sorted(self.images() - before):
            self.podman("rmi", "-f", i, check=False)


# ----------------------------------------------------------------------------
# GitHub Actions
# ----------------------------------------------------------------------------

class GitHubActions(Base):
    """The workflow's job on the runner tests/gha.py emulates: its `uses:` of this repository's
    action runs action.yml's own steps (as test_action.py does), the binary downloaded from a
    loopback HTTP server laid out as GitHub's release downloads (github.server_url is that
    server's) holding the release of gha.Release (PRECOMPRESS_RELEASE, else a stand-in made from
    the program under test). actions/checkout gives an empty workspace, the npm step a copy of
    fixtures/site at dist/; the action's `args` get `--json` in front, for the counts. The
    commented build-from-source steps are run too, in place of the action's step, with the
    program under test on PATH instead of their build (Base's wrapper)."""

    release = None

    def setUp(self):
        super().setUp()
        if yaml is None:
            self.skipTest("python3-yaml is missing (apt-get install python3-yaml)")
        with open(GITHUB) as f:
            self.text = f.read()
        self.wf = yaml.safe_load(self.text)
        self.store = gha.CacheStore(self.path("actions-cache-store"))
        if GitHubActions.release is None:
            d = tempfile.mkdtemp(prefix="pc-test-examples-")
            atexit.register(shutil.rmtree, d, True)
            GitHubActions.release = gha.Release(d, PROGRAM)
            print("release: %s" % GitHubActions.release.what)
        self.release = GitHubActions.release
        # The release's files where GitHub serves them: SERVER/OWNER/REPO/releases/download/vX.Y.Z.
        self.web = self.path("web")
        self.release.copy_to(os.path.join(self.web, ACTION_REPO, "releases", "download", "v" + self.release.version))

    def action_step(self, steps):
        found = [s for s in steps if s.get("uses", "").startswith(ACTION_REPO + "@")]
        self.assertEqual(len(found), 1, "want one step using %s" % ACTION_REPO)
        return found[0]

    def source_steps(self):
        """The commented steps that build from source, uncommented."""
        m = re.search(r"^      # From source instead.*?\n((?:      #.*\n)+)", self.text, re.M)
        self.assertIsNotNone(m, "no commented build-from-source steps")
        lines = [l[len("      # "):] if l.startswith("      # ") else "" for l in m.group(1).split("\n")]
        block = "\n".join(lines)
        steps = yaml.safe_load(block[block.index("- name:"):])
        self.assertEqual([s["name"] for s in steps], ["Install the build dependencies of precompress",
                                                      "Build precompress", "Restore the precompress cache",
                                                      "Precompress"])
        return steps

    def run_job(self, n, steps, env, hook_build):
        job_def = self.wf["jobs"]["precompress"]

        def hook(job, step, script):
            k = kind(script)
            if k == "site":
                shutil.copytree(SITE, os.path.join(job.workspace, "dist"), symlinks=True)
                return "the site: fixtures/site"
            if k in ("apt", "build"):
                self.assertTrue(hook_build, "the workflow builds precompress: %s" % script)
                if k == "apt":
                    self.assertAptMatchesCiDeps(script, "workflow step %r" % step.get("name"))
                else:
                    self.assertIn("--buildtype=release", script)
                return "not run: " + k
            return None

        def upload(job, w, env_, res):
            self.assertEqual(w["path"].rstrip("/"), "dist")

        with gha.serve(self.web) as srv:
            job = gha.Job(self.path("run%d" % n), env, store=self.store,
                          github={"server_url": srv.url, "repository": "example/site"},
                          actions={ACTION_REPO: SRC_ROOT}, run_hook=hook,
                          handlers={"actions/checkout": lambda *a: None, "actions/upload-artifact": upload})
            job.run(steps, env=job_def.get("env"))
        self.assertEqual(job.status, "success", job.results)
        self.assertSiteCompressed(os.path.join(job.workspace, "dist"))
        self.assertTrue(os.path.isfile(os.path.join(job.workspace, "precompress.json")))
        return job

    def test_workflow_runs_twice_the_second_from_the_cache(self):
        steps = self.wf["jobs"]["precompress"]["steps"]
        action = self.action_step(steps)
        version = action["uses"].split("@", 1)[1]
        self.assertEqual(version, "v" + self.release.version,
                         "the recipe's action is not this version's release (dist/version.py)")
        self.assertIs(action["with"]["cache"], True)
        steps = copy.deepcopy(steps)
        self.action_step(steps)["with"]["args"] = "--json " + action["with"]["args"]
        env = gha.runner_env(self.env)
        env["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")  # no wrapper: the action's binary
        env.update(self.release.env)
        jobs = [self.run_job(n, steps, env, hook_build=False) for n in (1, 2)]
        runs = [summaries(j.find("Run precompress", where=ACTION_REPO).stdout) for j in jobs]
        self.assertColdThenWarm(runs[0], runs[1], self.compressed_files())
        for j in jobs:
            check = j.find("Check the outputs")
            self.assertEqual((check.conclusion, check.stdout), ("success", ""), check)
            self.assertEqual(j.path_added[0], os.path.dirname(j.find(action["name"]).outputs["path"]))

    def test_source_alternative_runs_twice_the_second_from_the_cache(self):
        steps = self.wf["jobs"]["precompress"]["steps"]
        alt = self.source_steps()
        action = self.action_step(steps)
        self.assertIn("precompress --cache-dir ~/.cache/precompress " + action["with"]["args"], alt[-1]["run"])
        cache = alt[2]["with"]
        self.assertIn("hashFiles('dist/**')", cache["key"], "the cache key is not the tree's hash")
        self.assertTrue(cache["key"].startswith(cache["restore-keys"]), cache)
        i = steps.index(action)
        steps = steps[:i] + alt + steps[i + 1:]
        jobs = [self.run_job(n, steps, self.env, hook_build=True) for n in (1, 2)]
        runs = [summaries(j.find("Precompress").stdout) for j in jobs]
        self.assertColdThenWarm(runs[0], runs[1], self.compressed_files())
        for j in jobs:
            s = summaries(j.find("Check the outputs").stdout)
            self.assertEqual(len(s), 1, s)
            self.assertEqual((s[0]["dry_run"], s[0]["changes"], s[0]["exit"]), (True, 0, 0), s)


class OneGitHubRecipe(Base):
    """README.md's GitHub Actions steps (section "In CI") and docs/cache.md's are the
    workflow's own lines, byte for byte: one recipe, the one GitHubActions runs."""

    @staticmethod
    def yaml_blocks(path):
        with open(path) as f:
            return [b for b in re.findall(r"^```yaml\n(.*?)^```$", f.read(), re.S | re.M)
                    if "uses: %s@" % ACTION_REPO in b]

    def test_readme_and_docs_recipes_are_the_workflows_text(self):
        with open(GITHUB) as f:
            workflow = f.read()
        for doc in ("README.md", os.path.join("docs", "cache.md")):
            blocks = self.yaml_blocks(os.path.join(SRC_ROOT, doc))
            self.assertEqual(len(blocks), 1, "%s: want one ```yaml block using the action" % doc)
            self.assertIn("cache: true", blocks[0], doc)
            self.assertIn("precompress --check", blocks[0], doc)
            self.assertIn(blocks[0], workflow, "%s's GitHub Actions recipe is not the text of %s"
                          % (doc, os.path.relpath(GITHUB, SRC_ROOT)))


# ----------------------------------------------------------------------------
# GitLab CI
# ----------------------------------------------------------------------------

def gitlab_expand(value, env):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), str(value))


class GitLabCI(Base):
    def setUp(self):
        super().setUp()
        if yaml is None:
            self.skipTest("python3-yaml is missing (apt-get install python3-yaml)")
        with open(GITLAB) as f:
            self.ci = yaml.safe_load(f)
        self.store = self.path("gitlab-cache-store")

    def run_pipeline(self, n):
        project = self.path("run%d" % n, "project")
        home = self.path("run%d" % n, "home")
        os.makedirs(project)
        os.makedirs(home)
        env = dict(self.env)
        env.update({"HOME": home, "CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": project})
        # The job before: its script builds the site (npm); its artifact is dist/.
        site = self.ci["site"]
        self.assertEqual([kind(l) for l in site["script"]], ["site"] * len(site["script"]))
        self.assertEqual(site["artifacts"]["paths"], ["dist/"])
        shutil.copytree(SITE, os.path.join(project, "dist"), symlinks=True)

        job = self.ci["precompress"]
        for k, v in (job.get("variables") or {}).items():
            env[k] = gitlab_expand(v, env)
        cache_dir = env.get("PRECOMPRESS_CACHE_DIR", "")
        cached = [os.path.join(project, p) for p in job["cache"]["paths"]]
        self.assertIn(os.path.normpath(cache_dir), [os.path.normpath(p) for p in cached],
                      "PRECOMPRESS_CACHE_DIR is not a cached path")
        if os.path.isdir(self.store):
            shutil.copytree(self.store, cache_dir)
        # GitLab's Docker executor works under umask 0000: the checkout and the restored
        # cache are world-writable, which precompress refuses until the recipe's chmod.
        os.chmod(project, 0o777)
        if os.path.isdir(cache_dir):
            os.chmod(cache_dir, 0o777)
        lines = []
        for line in job.get("before_script", []) + job["script"]:
            k = kind(line)
            if k == "apt":
                if "install" in line:
                    self.assertAptMatchesCiDeps(line, ".gitlab-ci.yml")
            elif k == "build":
                pass  # the program under test is on PATH instead
            elif k == "site":
                self.fail("the precompress job builds the site: %s" % line)
            else:
                lines.append(line)
        self.assertEqual(len(lines), 3, lines)
        out, _ = self.bash("\n".join(lines), project, env)
        self.assertTrue(os.path.isdir(cache_dir), "no cache written at %s" % cache_dir)
        shutil.rmtree(self.store, ignore_errors=True)
        shutil.copytree(cache_dir, self.store)
        self.assertEqual(job["artifacts"]["paths"], ["dist/"])
        return project, summaries(out)

    def test_pipeline_runs_twice_the_second_from_the_cache(self):
        p1, s1 = self.run_pipeline(1)
        self.assertSiteCompressed(os.path.join(p1, "dist"))
        p2, s2 = self.run_pipeline(2)
        self.assertSiteCompressed(os.path.join(p2, "dist"))
        self.assertEqual(len(s1), 2, s1)  # the run, then --check
        self.assertEqual(len(s2), 2, s2)
        self.assertColdThenWarm(s1[:1], s2[:1], self.compressed_files())
        for s in (s1, s2):
            self.assertEqual((s[1]["dry_run"], s[1]["changes"], s[1]["exit"]), (True, 0, 0), s)


class Recipes(Base):
    def test_every_recipe_has_a_header_comment(self):
        for path in (DOCKERFILE, GITHUB, GITLAB):
            with open(path) as f:
                head = f.read(400)
            self.assertTrue(head.startswith("#"), path)
            self.assertIn("tests/test_examples.py", open(path).read(), path)

    def test_ci_deps_build_part_parsed(self):
        pkgs = ci_build_packages()
        for p in ("meson", "ninja-build", "gcc", "zlib1g-dev", "libbrotli-dev", "libuv1-dev"):
            self.assertIn(p, pkgs)
        self.assertNotIn("python3", pkgs)


if __name__ == "__main__":
    main()
