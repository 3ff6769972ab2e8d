#!/usr/bin/python3
"""The recipes under examples/ and the install commands (README.md's release binary,
docs/install.md's build from source) run as written.

Two ways, one test file:

- Fast (cli suite, `meson test examples`): each recipe file is parsed (Dockerfile instructions;
  the CI files with python3-yaml) and its shell steps that use precompress are run with bash/sh
  in temp directories, with the program under test (env PRECOMPRESS) standing for the one the
  recipe installs, against a copy of fixtures/site standing for the site's build output. The
  steps that install (apt-get, download, build) are checked, not run: the apt-get package list
  of a build is exactly `.ci/deps build`, a download checks SHA256SUMS.
- Whole (slow suite, PC_SLOW=1, as root, `meson test --suite slow examples_chroot`): every
  line of a recipe, install and build lines included, runs in a fresh Debian 12 root made by
  debootstrap (pctest.debian_root: minbase and nothing else, as the recipe's image debian:12
  has; a README block gets the curl it says it needs), entered with chroot: apt-get reaches
  Debian's mirror, meson builds, and a release is downloaded from a loopback HTTP server. The
  release: env PRECOMPRESS_RELEASE (made by dist/release.sh), else a stand-in with the same file
  names made from the program under test when that is static (-Dstatic=true), else the download
  ways are skipped with a message. A recipe that cannot start fails here.

The test adapts to the recipes, never the reverse; what it substitutes is what a user sets:
the release's version and URL (PRECOMPRESS_VERSION, PRECOMPRESS_URL: GitLab project variables,
the README's first lines), the Dockerfile's build args.

- Dockerfile: each stage gets a root (fast: a temp directory, every absolute path in a COPY,
  WORKDIR or RUN taken below it, ROOT/usr/local/bin first on PATH; whole: a Debian root, or the
  release's image unpacked); RUN lines run with /bin/sh -c, as Docker does, and only the stages
  the target needs are built, as BuildKit and buildah do. ImageBuild (slow suite) builds the
  image with podman, from the release's OCI archive when there is one.
- GitHub Actions: the job runs on the runner tests/packaging/gha.py emulates (its `run:` steps with bash
  as GitHub starts it, in a temp workspace, HOME a temp directory; actions/cache over a store
  that outlives the run), and its step that uses this repository's action runs action.yml's
  steps, which download a local release (see GitHubActions). GitLab CI: a job's before_script and script run as
  one `bash -eo pipefail` script in its project directory (CI_PROJECT_DIR), `extends:` merged
  and variables expanded as GitLab does; `cache:` and `artifacts:` paths are kept and handed on
  the same way; `parallel: N` runs the job N times with CI_NODE_INDEX 1..N.

Each cache recipe runs twice, each time in a fresh checkout (no manifest): the second run must
take every output from the cache. Every run's outputs must be the oracle's bytes, and --check
pass. A sharded recipe's merged manifest must be byte for byte a single run's.
"""
import sys

sys.dont_write_bytecode = True
import atexit
import copy
import functools
import glob
import hashlib
import http.server
import json
import os
import platform
import re
import shlex
import shutil
import stat
import subprocess
import tarfile
import tempfile
import threading
import time
import unittest

import gha
from pctest import (PROGRAM, SITE, SRC_ROOT, PCTestCase, classify, debian_root, expected_outputs, fsb,
                    in_root, load_json_strict, main, project_version, run, summaries, walk_all)

try:
    import yaml
except ImportError:  # skipped with a message
    yaml = None

EXAMPLES = os.path.join(SRC_ROOT, "examples")
DOCKERFILE = os.path.join(EXAMPLES, "docker", "Dockerfile")
GITHUB = os.path.join(EXAMPLES, "github-actions", "precompress.yml")
GITLAB = os.path.join(EXAMPLES, "gitlab-ci", ".gitlab-ci.yml")
ACTION_REPO = "precompress/precompress"  # the recipe's name for this repository's action
SHARDS = os.path.join(EXAMPLES, "shards")
README = os.path.join(SRC_ROOT, "README.md")
# The page with the build from the sources (README.md's Install has the release's binary).
INSTALL_DOC = os.path.join(SRC_ROOT, "docs", "install.md")
# The page with the GitHub Actions recipe (section "GitHub Actions"); docs/cache.md has it too.
CI_DOC = os.path.join(SRC_ROOT, "docs", "ci.md")
# The whole runs (the module doc): PC_SLOW=1, set by the slow suite.
SLOW = os.environ.get("PC_SLOW") == "1"
# What `--shard auto` reads: a recipe sets its own, whatever CI runs this test (GitLab sets
# CI_NODE_TOTAL in every job).
for _v in ("CI_NODE_INDEX", "CI_NODE_TOTAL", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", "BUILDKITE_PARALLEL_JOB",
           "BUILDKITE_PARALLEL_JOB_COUNT", "JOB_COMPLETION_INDEX"):
    os.environ.pop(_v, None)


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
        # --json (see the top) but for merge-manifests.
        self.bin = self.path("bin")
        os.makedirs(self.bin)
        with open(os.path.join(self.bin, "precompress"), "w") as f:
            f.write('#!/bin/sh\n[ "$1" = merge-manifests ] && exec %s "$@"\nexec %s --json "$@"\n'
                    % ((shlex.quote(os.path.abspath(PROGRAM)),) * 2))
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
# A release to download (dist/README.md names its files) and a server for it
# ----------------------------------------------------------------------------

# The machine's name in a release's file names: what `uname -m` says, as the recipes use it.
ARCH = platform.machine()


def is_static(program):
    """No program interpreter and no shared library asked for (readelf)."""
    p = subprocess.run(["readelf", "-l", "-d", program], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, errors="replace")
    return p.returncode == 0 and "INTERP" not in p.stdout and "(NEEDED)" not in p.stdout


def tarball_name(version):
    return "precompress-%s-linux-%s.tar.gz" % (version, ARCH)


def write_sha256sums(directory):
    names = sorted(n for n in os.listdir(directory) if n != "SHA256SUMS" and not n.startswith("."))
    with open(os.path.join(directory, "SHA256SUMS"), "w") as f:
        for n in names:
            with open(os.path.join(directory, n), "rb") as g:
                f.write("%s  %s\n" % (hashlib.sha256(g.read()).hexdigest(), n))


def make_release(dest, program, version):
    """A stand-in for dist/release.sh's output, as far as the recipes go: the linux tarball of
    this machine (precompress-V-linux-ARCH/ with the program, its man page, the completions,
    LICENSE, README.md) and SHA256SUMS."""
    top = "precompress-%s-linux-%s" % (version, ARCH)
    man = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(program)))),
                       "man", "precompress.1")
    members = [(program, "precompress", 0o755), (os.path.join(SRC_ROOT, "LICENSE"), "LICENSE", 0o644),
               (os.path.join(SRC_ROOT, "README.md"), "README.md", 0o644)]
    if os.path.isfile(man):
        members.append((man, "precompress.1", 0o644))
    for n in ("precompress.bash", "_precompress", "precompress.fish"):
        members.append((os.path.join(SRC_ROOT, "src", "cli", "completions", n), "completions/" + n, 0o644))
    os.makedirs(dest)
    with tarfile.open(os.path.join(dest, tarball_name(version)), "w:gz") as t:
        for src, name, mode in members:
            info = t.gettarinfo(src, "%s/%s" % (top, name))
            info.mode, info.uid, info.gid, info.uname, info.gname = mode, 0, 0, "root", "root"
            with open(src, "rb") as f:
                t.addfile(info, f)
    write_sha256sums(dest)
    return dest


def release_under_test(tc):
    """(directory, version) of the release the recipes download: PRECOMPRESS_RELEASE, else a
    stand-in made from a static program under test; skips the test otherwise."""
    rel = os.environ.get("PRECOMPRESS_RELEASE")
    if rel:
        found = [m.group(1) for m in (re.match(r"precompress-(.+)-linux-%s\.tar\.gz$" % re.escape(ARCH), n)
                                      for n in os.listdir(rel)) if m]
        tc.assertEqual(len(found), 1, "PRECOMPRESS_RELEASE=%s: want one precompress-V-linux-%s.tar.gz"
                       % (rel, ARCH))
        tc.assertTrue(os.path.isfile(os.path.join(rel, "SHA256SUMS")), "%s has no SHA256SUMS" % rel)
        return rel, found[0]
    if not is_static(PROGRAM):
        tc.skipTest("no release to download: PRECOMPRESS_RELEASE is unset (dist/release.sh makes one) "
                    "and the program under test is not static (-Dstatic=true) to make a stand-in from")
    version = project_version()
    return make_release(tc.path("release"), PROGRAM, version), version


def release_binary(rel, version):
    """The bytes of the program in the release's tarball for this machine."""
    top = "precompress-%s-linux-%s" % (version, ARCH)
    with tarfile.open(os.path.join(rel, tarball_name(version))) as t:
        return t.extractfile("%s/precompress" % top).read()


def corrupt_copy(rel, dest, name):
    """A copy of the release whose SHA256SUMS gives name another hash."""
    shutil.copytree(rel, dest)
    with open(os.path.join(dest, "SHA256SUMS")) as f:
        lines = f.read().splitlines()
    out = []
    for l in lines:
        h, n = l.split(None, 1)
        if n.lstrip("*") == name:
            h = ("1" if h[0] == "0" else "0") + h[1:]
        out.append("%s  %s" % (h, n))
    with open(os.path.join(dest, "SHA256SUMS"), "w") as f:
        f.write("\n".join(out) + "\n")
    return dest


class ReleaseServer:
    """directory over HTTP on 127.0.0.1 (a thread of this process); .requests lists the paths
    asked for. A chroot shares the host's network: the recipes reach it there too."""

    def __init__(self, directory):
        requests = self.requests = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                requests.append(self.path)

        self.httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=directory))
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()

    def got(self):
        """The paths asked for."""
        return list(self.requests)


# ----------------------------------------------------------------------------
# A fresh Debian 12 root per recipe (the whole runs, slow suite)
# ----------------------------------------------------------------------------

class ChrootBase(Base):
    """Runs recipe lines in fresh roots from pctest.debian_root (module doc), timing each."""

    def setUp(self):
        super().setUp()
        if not SLOW:
            self.skipTest("suite 'slow' only (PC_SLOW=1): every line of a recipe in a clean Debian root")

    def fresh_root(self, name, include=(), label=None):
        t = time.monotonic()
        root = self.path("roots", name)
        # rm is faster than the generic cleanup's walk on a whole root, and stays on its file
        # system whatever a recipe left mounted.
        self.addCleanup(subprocess.run, ["rm", "-rf", "--one-file-system", root])
        debian_root(root, include)
        self.note("%s: a fresh Debian 12 root%s" % (label or name, " with " + " ".join(include) if include else ""), t)
        return root

    def note(self, what, start):
        print("  [%6.1f s] %s" % (time.monotonic() - start, what))
        sys.stdout.flush()

    def serve(self, directory):
        srv = ReleaseServer(directory)
        self.addCleanup(srv.close)
        return srv

    def in_root(self, root, script, env=None, what="", shell="bash -eo pipefail", ok=True, timeout=1500):
        """Runs script (written to ROOT/tmp) in root with shell; its output. ok: it must exit
        0 (else: it must not)."""
        name = "precompress-test-%d.sh" % len(os.listdir(os.path.join(root, "tmp")))
        with open(os.path.join(root, "tmp", name), "w") as f:
            f.write(script + "\n")
        t = time.monotonic()
        p = in_root(root, "%s /tmp/%s" % (shell, name), env=env, timeout=timeout)
        self.note(what or script.split("\n", 1)[0][:70], t)
        if ok:
            self.assertEqual(p.returncode, 0, "in the root, exit %d:\n%s\n--- output\n%s"
                             % (p.returncode, script, p.stdout[-6000:]))
        else:
            self.assertNotEqual(p.returncode, 0, "in the root, exit 0, not the failure wanted:\n%s\n--- output\n%s"
                                % (script, p.stdout[-6000:]))
        return p.stdout

    def assertReleaseInstalled(self, path, rel, version, srv):
        """path holds the release's binary, downloaded from srv with SHA256SUMS."""
        with open(path, "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(),
                             hashlib.sha256(release_binary(rel, version)).hexdigest(),
                             "%s is not the release's binary" % path)
        got = srv.got()
        for name in (tarball_name(version), "SHA256SUMS"):
            self.assertTrue(any(p.endswith("/" + name) for p in got), "%s was not downloaded: %s" % (name, got))
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


def dockerfile_subst(s, args):
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: args.get(m.group(1) or m.group(2), m.group(0)), s)


class DockerPlan:
    """The Dockerfile as a build with build_args and target takes it: the global ARGs (before
    the first FROM) substituted in FROM lines, each stage's base (an image or an earlier
    stage), and only the stages the target needs (FROM and COPY --from), in order, as
    BuildKit and buildah build them."""

    def __init__(self, path, build_args=None, target=None):
        self.build_args = dict(build_args or {})
        self.global_args, self.stages = {}, []
        for instr, rest in parse_dockerfile(path):
            if instr == "FROM":
                m = re.match(r"(\S+)(?:\s+AS\s+(\S+))?$", rest, re.I)
                name = m.group(2) or str(len(self.stages))
                self.stages.append({"name": name, "base": dockerfile_subst(m.group(1), self.global_args),
                                    "instrs": []})
            elif not self.stages:
                if instr != "ARG":
                    raise AssertionError("before the first FROM: %s %s" % (instr, rest))
                k, _, v = rest.partition("=")
                self.global_args[k] = self.build_args.get(k, v)
            else:
                self.stages[-1]["instrs"].append((instr, rest))
        names = [s["name"] for s in self.stages]
        self.target = target or names[-1]
        need, todo = set(), [self.target]
        while todo:
            n = todo.pop()
            if n in need:
                continue
            need.add(n)
            st = self.stages[names.index(n)]
            if st["base"] in names:
                todo.append(st["base"])
            for instr, rest in st["instrs"]:
                m = re.match(r"--from=(\S+)", rest)
                if instr == "COPY" and m:
                    if m.group(1) not in names:
                        raise AssertionError("COPY --from an image, not a stage: %s" % rest)
                    todo.append(m.group(1))
        last = names.index(self.target)
        self.needed = [s for i, s in enumerate(self.stages) if s["name"] in need and i <= last]

    def stage_arg(self, rest):
        """A stage's ARG: the build arg, else its default, else the global ARG's value."""
        k, eq, v = rest.partition("=")
        if k in self.build_args:
            return k, self.build_args[k]
        return k, v if eq else self.global_args.get(k, "")


# The release's image, as the Dockerfile names it by default.
def default_image():
    return DockerPlan(DOCKERFILE).global_args["PRECOMPRESS_IMAGE"]


class DockerBase(Base):
    """Runs examples/docker/Dockerfile stage by stage (see the module doc). A subclass says
    what a stage's base image is (image_root) and how a RUN line runs (run_line)."""

    def make_context(self, with_sources):
        context = self.path("context")
        os.makedirs(context)
        if with_sources:
            copy_source_tree(os.path.join(context, "precompress"))
        else:
            os.makedirs(os.path.join(context, "precompress"))
        shutil.copytree(SITE, os.path.join(context, "dist"), symlinks=True)
        return context

    def run_dockerfile(self, build_args=None, target=None, with_sources=False):
        plan = DockerPlan(DOCKERFILE, build_args, target)
        context = self.make_context(with_sources)
        stages, log = {}, []
        for spec in plan.needed:
            if spec["base"] in stages:  # FROM an earlier stage: its file system, its settings
                base = stages[spec["base"]]
                st = Stage(spec["name"], spec["base"], base.root)
                st.workdir, st.env = base.workdir, dict(base.env)
            else:
                st = Stage(spec["name"], spec["base"], self.image_root(spec["name"], spec["base"]))
            stages[st.name] = st
            for instr, rest in spec["instrs"]:
                self.instruction(plan, stages, st, context, instr, rest, log)
        return stages, log

    def instruction(self, plan, stages, st, context, instr, rest, log):
        if instr == "ARG":
            k, v = plan.stage_arg(rest)
            st.args[k] = v
        elif instr == "ENV":
            k, _, v = rest.partition("=")
            st.env[k] = v
        elif instr == "WORKDIR":
            st.workdir = os.path.join(st.workdir, st.subst_args(rest))
            os.makedirs(st.host(st.workdir), exist_ok=True)
        elif instr == "COPY":
            parts = st.subst_args(rest).split()
            frm = stages[parts.pop(0)[len("--from="):]] if parts[0].startswith("--from=") else None
            self.assertEqual(len(parts), 2, rest)
            src = frm.host(parts[0]) if frm else os.path.join(context, parts[0])
            self.assertTrue(os.path.lexists(src), "COPY %s: no such file in %s" % (rest, frm.name if frm else "the context"))
            docker_copy(src, st.host(parts[1]), parts[1].endswith("/"))
        elif instr == "RUN":
            k = kind(rest)
            self.check_line(st, k, rest)
            log.append((st.name, k, rest, self.run_line(st, k, rest)))
        elif instr in ("EXPOSE", "CMD"):
            st.env["#" + instr] = rest
        else:
            self.fail("instruction %s is not known to this test: %s %s" % (instr, instr, rest))

    def check_line(self, st, k, rest):
        """What a RUN line may install or build, wherever it runs."""
        if k == "apt":
            if st.name == "precompress-build":
                self.assertAptMatchesCiDeps(rest, "Dockerfile stage %s" % st.name)
            else:
                self.assertEqual(apt_install_packages(rest), SERVE_PACKAGES, rest)
        elif k == "build":
            self.assertEqual(st.name, "precompress-build", rest)
            self.assertIn("-Dstatic=true", rest)
            # A build directory outside the sources: a build/ copied in with them cannot be
            # mistaken for it.
            builddir = shlex.split(rest)[shlex.split(rest).index("setup") + 1]
            self.assertTrue(builddir.startswith("/") and not builddir.startswith("/src"), rest)

    def check_static_stage(self, stages, log, check_in_stage):
        """The static stage compressed the site as the oracle does and its manifest holds;
        the last serves it with README.md's nginx lines. check_in_stage(static stage, args):
        the --json summary of precompress ARGS run as that stage runs its RUN lines."""
        static = stages["static"]
        prog = static.host("/usr/local/bin/precompress")
        self.assertTrue(os.access(prog, os.X_OK), "the static stage has no /usr/local/bin/precompress")
        runs = [l for l in log if l[0] == "static" and l[1] == "run"]
        self.assertEqual(len(runs), 2, runs)
        self.assertIn("--check", runs[1][2])  # it passed: the step exits 1 else
        # The manifest is beside the web root, not in it.
        self.assertSiteCompressed(static.host("/srv/static"))
        self.assertTrue(os.path.isfile(static.host("/srv/precompress.json")))
        # The stage's manifest makes every file it compressed (or found not worth it) unchanged
        # to that --check.
        s = check_in_stage(static, ["--json", "--check", "--manifest", "/srv/precompress.json", "/srv/static"])
        read_before = sum(1 for c in classify(SITE).values() if c["skip"] in (None, "ratio"))
        self.assertEqual((s["changes"], s["compressed"], s["unchanged"], s["exit"]), (0, 0, read_before, 0), s)
        # The last stage serves what the static stage made, with README.md's nginx snippet.
        last = stages[DockerPlan(DOCKERFILE).stages[-1]["name"]]
        html = last.host("/var/www/html")
        self.assertSiteCompressed(html)
        conf = [os.path.join(dp, f) for dp, _, fs in os.walk(last.host("/etc/nginx/conf.d")) for f in fs]
        self.assertEqual(len(conf), 1, conf)
        with open(conf[0]) as f:
            self.assertEqual(f.read().split("\n"), readme_nginx_lines() + [""])
        self.assertIn("daemon off", last.env.get("#CMD", ""))
        return prog


class DockerHost(DockerBase):
    """Stages in temp directories, RUN lines with this machine's /bin/sh (paths mapped); the
    release's image is the program under test as /precompress; apt-get is not run."""

    def image_root(self, name, image):
        root = self.path("stages", name)
        os.makedirs(root)
        if not image.startswith("debian:"):
            self.assertEqual(image, default_image(), "stage %s: FROM %s" % (name, image))
            shutil.copy2(PROGRAM, os.path.join(root, "precompress"))
            shutil.copy2(os.path.join(SRC_ROOT, "LICENSE"), os.path.join(root, "LICENSE"))
        return root

    def run_line(self, st, k, rest):
        if k == "apt":
            st.installed(apt_install_packages(rest))
            return ""
        env = dict(self.env)
        env.update(st.env)
        env["HOME"] = st.host("/root")
        # The program under test stands for the release's static one.
        env["PATH"] = st.host("/usr/local/bin") + os.pathsep + os.environ.get("PATH", "")
        out, err = self.bash(st.map_paths(rest), st.host(st.workdir), env, shell=("/bin/sh",))
        return err if k == "run" else out + err

    def check_here(self, static, args):
        args = [static.host(a) if a.startswith("/") else a for a in args]
        r = run(args)
        self.assertEqual(r.rc, 0, r)
        return r.summary()


class DockerRecipe(DockerHost):
    def test_the_release_image_way_with_the_program_under_test(self):
        """The default build: /precompress from the release's image, no build stage."""
        stages, log = self.run_dockerfile()
        self.assertNotIn("precompress-build", stages, "the first way built the sources")
        last = DockerPlan(DOCKERFILE).stages[-1]["name"]
        self.assertEqual(sorted(stages), sorted(["precompress", "static", last]), sorted(stages))
        self.check_static_stage(stages, log, self.check_here)

    def test_the_second_way_is_the_build_stage(self):
        """PRECOMPRESS_IMAGE=precompress-build: the same stages, the build stage's /precompress
        in place of the image's (its apt-get and meson lines checked here, run by
        DockerBuildStage and the whole runs)."""
        plan = DockerPlan(DOCKERFILE, {"PRECOMPRESS_IMAGE": "precompress-build"})
        self.assertEqual([s["name"] for s in plan.needed],
                         ["precompress-build", "precompress", "static", plan.stages[-1]["name"]])
        kinds = [kind(rest) for instr, rest in plan.needed[0]["instrs"] if instr == "RUN"]
        self.assertEqual(kinds, ["apt", "build"])
        for instr, rest in plan.needed[0]["instrs"]:
            if instr == "RUN":
                self.check_line(Stage("precompress-build", "debian:12", self.path("x")), kind(rest), rest)
        self.assertEqual(plan.needed[1]["base"], "precompress-build")

    def test_the_header_shows_copy_from_the_image_first(self):
        with open(DOCKERFILE) as f:
            text = f.read()
        line = "COPY --from=%s /precompress /usr/local/bin/" % default_image()
        self.assertIn(line, text)
        self.assertLess(text.index(line), text.index("PRECOMPRESS_IMAGE=precompress-build"))
        self.assertIn("podman load -i precompress-%s-oci.tar" % project_version(), text)
        self.assertEqual(default_image(), "ghcr.io/precompress/precompress:%s" % project_version())


class DockerBuildStage(DockerHost):
    """The build stage for real on this machine: a -Dstatic=true build of this tree, used by
    the next stages."""

    def run_line(self, st, k, rest):
        if k == "build":
            env = dict(self.env)
            env["HOME"] = st.host("/root")
            out, err = self.bash(st.map_paths(rest), st.host(st.workdir), env, shell=("/bin/sh",))
            return out + err
        return super().run_line(st, k, rest)

    def test_build_stage_makes_a_static_binary_the_next_stage_runs(self):
        for tool in ("meson", "ninja", "pkg-config", "cc"):
            if shutil.which(tool) is None:
                self.skipTest("%s is missing (.ci/deps)" % tool)
        stages, log = self.run_dockerfile({"PRECOMPRESS_IMAGE": "precompress-build"}, with_sources=True)
        prog = self.check_static_stage(stages, log, self.check_here)
        from test_static import assert_static
        assert_static(self, prog)
        # glibc's warnings about static NSS (getpwuid_r, from libuv) are expected: shown, not failed.
        for out in [l[3] for l in log if l[0] == "precompress-build" and l[1] == "build"]:
            for line in out.splitlines():
                if "warning:" in line:
                    print("static link: " + line.strip())


def oci_unpack(archive, dest, arch):
    """The layers of the image for linux/arch (amd64, arm64) in an OCI image archive, unpacked
    into dest (no whiteouts: a FROM scratch image has one layer of plain files)."""
    with tarfile.open(archive) as t:
        def blob(digest):
            return t.extractfile("blobs/" + digest.replace(":", "/", 1))

        node = json.load(t.extractfile("index.json"))
        while "manifests" in node:
            ms = node["manifests"]
            pick = [m for m in ms if (m.get("platform") or {}).get("architecture") == arch] or ms
            node = json.load(blob(pick[0]["digest"]))
        for layer in node["layers"]:
            with tarfile.open(fileobj=blob(layer["digest"])) as lt:
                lt.extractall(dest)


class DockerChroot(DockerBase, ChrootBase):
    """The whole runs of the Dockerfile (slow suite): each stage a fresh Debian 12 root
    (debian:12-slim is minbase too), or the release's image (its OCI archive, else its
    tarball's binary and LICENSE); every RUN line with /bin/sh -c in its stage's root."""

    def image_root(self, name, image):
        if image.startswith("debian:"):
            return self.fresh_root(name, label="stage %s, FROM %s" % (name, image))
        root = self.path("stages", name)
        os.makedirs(root)
        rel, version = self.release
        oci = os.path.join(rel, "precompress-%s-oci.tar" % version)
        if os.path.isfile(oci):
            oci_unpack(oci, root, {"x86_64": "amd64", "aarch64": "arm64"}.get(ARCH, ARCH))
        else:
            with open(os.path.join(root, "precompress"), "wb") as f:
                f.write(release_binary(rel, version))
            os.chmod(os.path.join(root, "precompress"), 0o755)
            shutil.copy2(os.path.join(SRC_ROOT, "LICENSE"), os.path.join(root, "LICENSE"))
        self.assertEqual(sorted(os.listdir(root)), ["LICENSE", "precompress"], "the image holds more")
        return root

    def run_line(self, st, k, rest):
        env = {k2: v for k2, v in st.env.items() if not k2.startswith("#")}
        env.update(st.args)  # an ARG is in the environment of the RUN lines after it
        script = "cd %s || exit 1\n%s" % (shlex.quote(st.workdir), rest)
        return self.in_root(st.root, script, env=env, shell="/bin/sh", what="%s: RUN %s" % (st.name, rest[:60]))

    def check_in_root(self, static, args):
        out = self.in_root(static.root, "precompress " + " ".join(shlex.quote(a) for a in args), what="--check")
        return load_json_strict(out.strip().splitlines()[-1])

    def test_the_release_image_way(self):
        self.release = release_under_test(self)
        stages, log = self.run_dockerfile()
        self.assertNotIn("precompress-build", stages)
        prog = self.check_static_stage(stages, log, self.check_in_root)
        with open(prog, "rb") as f:
            self.assertEqual(f.read(), release_binary(*self.release), "the static stage's precompress")

    def test_the_build_stage_way(self):
        """PRECOMPRESS_IMAGE=precompress-build, up to the stage giving /precompress: apt-get
        of the build group and the static build in a clean root; the stages after it are the
        release way's."""
        self.release = None
        stages, log = self.run_dockerfile({"PRECOMPRESS_IMAGE": "precompress-build"}, target="precompress",
                                          with_sources=True)
        self.assertEqual(sorted(stages), ["precompress", "precompress-build"])
        self.assertEqual([k for _, k, *_ in log], ["apt", "build"])
        prog = stages["precompress"].host("/precompress")
        from test_static import assert_static
        assert_static(self, prog)
        # It compresses as the oracle does, in the root it was built in.
        root = stages["precompress"].root
        shutil.copytree(SITE, os.path.join(root, "srv", "site"), symlinks=True)
        self.in_root(root, "/precompress -q /srv/site", what="/precompress on the fixtures")
        self.assertSiteCompressed(os.path.join(root, "srv", "site"))


@unittest.skipUnless(SLOW, "suite 'slow' only (PC_SLOW=1)")
class ImageBuild(Base):
    """The Dockerfile built for real by podman (slow suite), then the image's own nginx
    serving a .br. With a release (PRECOMPRESS_RELEASE), its OCI archive is loaded and passed
    as PRECOMPRESS_IMAGE: the COPY --from path, no build stage; else the second way,
    PRECOMPRESS_IMAGE=precompress-build.

    No image registry is needed: when there is no debian:12 image, one is made from
    pctest.debian_root's Debian 12 root and `podman import`ed under the names the Dockerfile
    asks for (debian:12, debian:12-slim); apt-get inside the build reaches Debian's mirror. In
    a container (this CI), podman needs `--isolation chroot` (crun refuses cgroups in hybrid
    mode) and `--network host`, and `podman run` cannot set its rlimits: the built image is
    mounted (`podman create` + `podman mount`) and its nginx run with chroot, listening on a
    free port. The images, containers and tags the test made are removed afterwards (by name
    or id: never another's)."""

    IMAGE = "localhost/precompress-example-test:%d" % os.getpid()
    RELEASE_IMAGE = "localhost/precompress-example-release:%d" % os.getpid()

    def podman(self, *args, timeout=900, check=True):
        p = subprocess.run(["podman"] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL, timeout=timeout)
        out = p.stdout.decode(errors="replace")
        if check:
            self.assertEqual(p.returncode, 0, "podman %s:\n%s" % (" ".join(args), out[-6000:]))
        return out

    def names(self):
        return set(self.podman("images", "--format", "{{.Repository}}:{{.Tag}}").split())

    def base_image(self):
        """docker.io/library/debian:12 and :12-slim, from a Debian root when missing (removed
        at cleanup)."""
        if {"docker.io/library/debian:12", "docker.io/library/debian:12-slim"} <= self.names():
            return
        rootfs = debian_root(self.path("rootfs"))
        tar = subprocess.Popen(["tar", "-C", rootfs, "-c", "."], stdout=subprocess.PIPE)
        imp = subprocess.run(["podman", "import", "-", "docker.io/library/debian:12"], stdin=tar.stdout,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        tar.stdout.close()
        self.assertEqual(tar.wait(), 0)
        self.assertEqual(imp.returncode, 0, imp.stdout)
        image_id = imp.stdout.decode().split()[-1]
        self.podman("tag", "docker.io/library/debian:12", "docker.io/library/debian:12-slim")
        self.addCleanup(self.podman, "rmi", "-f", image_id, check=False)
        self.addCleanup(self.podman, "untag", image_id, check=False)
        shutil.rmtree(rootfs, ignore_errors=True)

    def release_image(self):
        """The release's OCI archive loaded and tagged RELEASE_IMAGE; None without a release."""
        rel = os.environ.get("PRECOMPRESS_RELEASE")
        if not rel:
            return None
        rel, version = release_under_test(self)
        oci = os.path.join(rel, "precompress-%s-oci.tar" % version)
        self.assertTrue(os.path.isfile(oci), "the release has no %s" % os.path.basename(oci))
        before = self.names()
        out = self.podman("load", "-i", oci)
        loaded = re.findall(r"^Loaded image(?:\(s\))?: (\S+)", out, re.M)
        self.assertEqual(len(loaded), 1, out)
        if loaded[0] not in before:  # the name it loaded under, unless it was there before
            self.addCleanup(self.podman, "rmi", loaded[0], check=False)
        self.podman("tag", loaded[0], self.RELEASE_IMAGE)
        self.addCleanup(self.podman, "rmi", self.RELEASE_IMAGE, check=False)
        return rel, version

    def build(self, tag, *args, timeout=1500):
        self.addCleanup(self.podman, "rmi", "-f", tag, check=False)
        return self.podman("build", "--pull=never", "--isolation", "chroot", "--network", "host",
                           "-f", DOCKERFILE, "--build-arg", "PRECOMPRESS_SRC=.",
                           "--build-arg", "STATIC_SRC=fixtures/site", "-t", tag, *args, SRC_ROOT, timeout=timeout)

    def test_podman_builds_the_image_and_its_nginx_serves_br(self):
        for tool in ("podman", "debootstrap", "chroot"):
            if shutil.which(tool) is None:
                self.skipTest("%s is missing (apt-get install podman debootstrap)" % tool)
        if os.geteuid() != 0:
            self.skipTest("needs root (debootstrap, podman mount)")
        self.base_image()
        release = self.release_image()
        if release:
            way = ["--build-arg", "PRECOMPRESS_IMAGE=" + self.RELEASE_IMAGE]
        else:
            print("no release (PRECOMPRESS_RELEASE): the image's precompress is built from the sources")
            way = ["--build-arg", "PRECOMPRESS_IMAGE=precompress-build"]
        out = self.build(self.IMAGE, *way)
        # The static stage (its layers are cached by now; tagged, so that removing the tag
        # removes them) has the release's binary, or the build stage's, static.
        self.build(self.IMAGE + "-static", "--target", "static", *way, timeout=600)
        prog = os.path.join(self.mount(self.IMAGE + "-static"), "usr/local/bin/precompress")
        if release:
            self.assertNotIn("meson setup", out, "the first way built the sources")
            with open(prog, "rb") as f:
                self.assertEqual(f.read(), release_binary(*release))
        else:
            from test_static import assert_static
            assert_static(self, prog)
            # The build stage (cached by now): the sources it got hold no build directory and
            # no .git (.dockerignore), whatever the checkout has.
            self.build(self.IMAGE + "-build", "--target", "precompress-build", *way, timeout=600)
            src = os.path.join(self.mount(self.IMAGE + "-build"), "src")
            self.assertTrue(os.path.isfile(os.path.join(src, "meson.build")), os.listdir(src))
            left = [n for n in os.listdir(src) if n.startswith("build") or n == ".git"]
            self.assertEqual(left, [], "the build context kept these (.dockerignore)")
        self.serve_br(self.mount(self.IMAGE))

    def serve_br(self, root):
        # What the image holds: the tree with the oracle's outputs, no manifest in the web
        # root, the context's build directories and .git left out (.dockerignore).
        html = os.path.join(root, "var/www/html")
        self.assertSiteCompressed(html)
        with open(os.path.join(root, "etc/nginx/conf.d/precompress.conf")) as f:
            self.assertEqual(f.read().split("\n"), readme_nginx_lines() + [""])
        self.assertFalse(os.path.exists(os.path.join(root, "usr/local/bin/precompress")),
                         "the served image holds precompress")

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
                # (Its output is read only once it has exited: a read would wait for that.)
                if srv.poll() is not None:
                    self.fail("the image's nginx exited: %r" % srv.stdout.read())
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



# ----------------------------------------------------------------------------
# GitHub Actions
# ----------------------------------------------------------------------------

class GitHubActions(Base):
    """The workflow's job on the runner tests/packaging/gha.py emulates: its `uses:` of this repository's
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
    """docs/ci.md's GitHub Actions steps and docs/cache.md's are the workflow's own lines,
    byte for byte: one recipe, the one GitHubActions runs."""

    @staticmethod
    def yaml_blocks(path):
        with open(path) as f:
            return [b for b in re.findall(r"^```yaml\n(.*?)^```$", f.read(), re.S | re.M)
                    if "uses: %s@" % ACTION_REPO in b]

    def test_readme_and_docs_recipes_are_the_workflows_text(self):
        with open(GITHUB) as f:
            workflow = f.read()
        for doc in (os.path.relpath(CI_DOC, SRC_ROOT), os.path.join("docs", "cache.md")):
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


def deep_merge(a, b):
    """GitLab's extends: hashes merged key by key, b's keys winning; lists and scalars replaced."""
    out = dict(a)
    for k, v in b.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def gitlab_job(ci, name, extends=None):
    """Job name as GitLab runs it, its `extends:` (or extends, in its place) merged in."""
    job = dict(ci[name])
    ext = job.pop("extends", [])
    if extends is not None:
        ext = extends
    merged = {}
    for e in [ext] if isinstance(ext, str) else ext:
        merged = deep_merge(merged, gitlab_job(ci, e))
    return deep_merge(merged, job)


def gitlab_variables(job, base, overrides):
    """The job's variables as GitLab sets them: base (predefined), the job's own (its templates'
    merged in), then those set for the project (overrides, which win), each expanded."""
    raw = {k: str(v) for k, v in (job.get("variables") or {}).items()}
    raw.update(overrides)
    env = dict(base)
    env.update(raw)
    for k in raw:
        v = raw[k]
        for _ in range(5):
            nv = gitlab_expand(v, env)
            if nv == v:
                break
            v = nv
        env[k] = v
    return env


def release_lines(job):
    """The lines of the .precompress-release template's before_script that fetch and install
    the release: checked by the fast tests, run by the whole ones."""
    return job["before_script"]


class GitLabBase(Base):
    """Runs jobs of a .gitlab-ci.yml: before_script (the whole runs only) and script as one
    `bash -eo pipefail` script in the project directory, on this machine with the program
    under test on PATH (root None) or in a Debian root (ChrootBase.in_root)."""

    def setUp(self):
        super().setUp()
        if yaml is None:
            self.skipTest("python3-yaml is missing (apt-get install python3-yaml)")

    @staticmethod
    def load(path):
        with open(path) as f:
            return yaml.safe_load(f)

    def new_project(self, where, site=True):
        """A project directory (a checkout) with the `site` job's artifact dist/."""
        os.makedirs(where)
        if site:
            shutil.copytree(SITE, os.path.join(where, "dist"), symlinks=True)
        return where

    def run_job(self, job, project, root=None, overrides=None, index=None, whole=False, what=""):
        """Runs job (gitlab_job's) in project, a host path (below root with a root); its output."""
        ci_dir = "/" + os.path.relpath(project, root) if root else project
        # GitLab sets CI_NODE_TOTAL in every job: 1 without parallel:.
        base = {"CI": "true", "GITLAB_CI": "true", "CI_PROJECT_DIR": ci_dir, "CI_NODE_TOTAL": "1"}
        if index is not None:
            base.update(CI_NODE_INDEX=str(index), CI_NODE_TOTAL=str(job["parallel"]))
        env = gitlab_variables(job, base, overrides or {})
        lines = (job.get("before_script", []) if whole else []) + job["script"]
        # GitLab's Docker executor works under umask 0000: the checkout is world-writable.
        os.chmod(project, 0o777)
        if root is not None:
            return self.in_root(root, 'cd "$CI_PROJECT_DIR"\n' + "\n".join(lines), env=env, what=what)
        full = dict(self.env)
        full.update(env)
        full["HOME"] = self.path("home")
        os.makedirs(full["HOME"], exist_ok=True)
        return self.bash("\n".join(lines), project, full)[0]

    def keep_artifacts(self, job, project, store):
        """artifacts:paths of the job's project into store (globs as GitLab's: ** spans
        directories, dot files included)."""
        os.makedirs(store, exist_ok=True)
        for pat in job["artifacts"]["paths"]:
            for m in glob.glob(os.path.join(project, pat), recursive=True, include_hidden=True):
                rel = os.path.relpath(m, project)
                if os.path.isdir(m) and not os.path.islink(m):
                    shutil.copytree(m, os.path.join(store, rel), symlinks=True, dirs_exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(os.path.join(store, rel)), exist_ok=True)
                    shutil.copy2(m, os.path.join(store, rel), follow_symlinks=False)
        return store

    def check_release_template(self, ci, where):
        """.precompress-release: curl and its certificates only from apt-get; the tarball for
        this machine and SHA256SUMS from PRECOMPRESS_URL, the one checked against the other
        before anything is unpacked or installed; the version the one of this tree."""
        tpl = ci[".precompress-release"]
        self.assertEqual(str(tpl["variables"]["PRECOMPRESS_VERSION"]), project_version(), where)
        self.assertEqual(tpl["variables"]["PRECOMPRESS_URL"],
                         "https://github.com/precompress/precompress/releases/download/v$PRECOMPRESS_VERSION", where)
        lines = release_lines(tpl)
        self.assertEqual(apt_install_packages(lines[0]), ["ca-certificates", "curl"], where)
        text = "\n".join(lines)
        tgz = '"$PRECOMPRESS_URL/precompress-$PRECOMPRESS_VERSION-linux-$(uname -m).tar.gz"'
        self.assertIn("curl -fsSL -O %s -O \"$PRECOMPRESS_URL/SHA256SUMS\"" % tgz, text, where)
        check = text.index("sha256sum -c --ignore-missing SHA256SUMS")
        self.assertLess(check, text.index("tar -xzf"), where)
        self.assertLess(check, text.index("install -m 755"), where)


class GitLabCI(GitLabBase):
    def setUp(self):
        super().setUp()
        self.ci = self.load(GITLAB)
        self.store = self.path("gitlab-cache-store")

    def run_pipeline(self, n):
        project = self.new_project(self.path("run%d" % n, "project"), site=False)
        # The job before: its script builds the site (npm); its artifact is dist/.
        site = self.ci["site"]
        self.assertEqual([kind(l) for l in site["script"]], ["site"] * len(site["script"]))
        self.assertEqual(site["artifacts"]["paths"], ["dist/"])
        shutil.copytree(SITE, os.path.join(project, "dist"), symlinks=True)

        job = gitlab_job(self.ci, "precompress")
        cache_dir = gitlab_variables(job, {"CI_PROJECT_DIR": project}, {})["PRECOMPRESS_CACHE_DIR"]
        cached = [os.path.join(project, p) for p in job["cache"]["paths"]]
        self.assertIn(os.path.normpath(cache_dir), [os.path.normpath(p) for p in cached],
                      "PRECOMPRESS_CACHE_DIR is not a cached path")
        if os.path.isdir(self.store):
            shutil.copytree(self.store, cache_dir)
            # Restored under umask 0000, as the checkout (run_job): world-writable.
            os.chmod(cache_dir, 0o777)
        for line in job["script"]:
            self.assertEqual(kind(line), "run", line)
        out = self.run_job(job, project)
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

    def test_the_job_installs_a_release_or_a_static_build(self):
        """The first way (the job's extends) downloads a checked release; the second,
        .precompress-from-source, installs `.ci/deps build` and builds -Dstatic=true, one file
        to install that runs on any Debian of the architecture."""
        self.assertEqual(self.ci["precompress"]["extends"], ".precompress-release")
        self.check_release_template(self.ci, GITLAB)
        src = self.ci[".precompress-from-source"]["before_script"]
        self.assertEqual([kind(l) for l in src], ["apt", "apt", "build", "build", "run"], src)
        self.assertAptMatchesCiDeps(src[1], ".precompress-from-source")
        setup = shlex.split(src[2])
        self.assertIn("-Dstatic=true", setup)
        self.assertTrue(setup[setup.index("setup") + 1].startswith("/tmp/"), src[2])
        self.assertNotIn("meson install", "\n".join(src), "the job copies the one program")
        self.assertIn("/src/cli/precompress /usr/local/bin/", src[4])
        # Both ways give a job the same variables to work with.
        for tpl in (".precompress-release", ".precompress-from-source"):
            job = gitlab_job(self.ci, "precompress", extends=tpl)
            self.assertEqual(job["script"], self.ci["precompress"]["script"])
            self.assertEqual(job["image"], "debian:12")


# ----------------------------------------------------------------------------
# examples/shards: one tree, N jobs, one merged manifest
# ----------------------------------------------------------------------------

def tree_bytes(root):
    """{relative path: bytes} of every regular file below root."""
    out = {}
    for rel in walk_all(root):
        p = os.path.join(fsb(root), rel)
        if os.path.isfile(p) and not os.path.islink(p):
            with open(p, "rb") as f:
                out[rel] = f.read()
    return out


class ShardsBase(GitLabBase):
    def single_run(self, where, program_args, runner):
        """The manifest and the tree of one unsharded run over a copy of the site at
        where/dist: what the shards must add up to."""
        project = self.new_project(where)
        runner(project, program_args)
        with open(os.path.join(project, "precompress.json"), "rb") as f:
            return f.read(), tree_bytes(os.path.join(project, "dist"))

    def run_gitlab_shards(self, top, root=None, overrides=None):
        """The shards example's pipeline: the precompress job N times (CI_NODE_INDEX 1..N),
        each in a new checkout with the site's dist/, its artifacts kept; then the merge job,
        handed the artifacts of both stages before it. Its project directory."""
        ci = self.load(os.path.join(SHARDS, ".gitlab-ci.yml"))
        job, merge = gitlab_job(ci, "precompress"), gitlab_job(ci, "merge")
        stores = []
        for k in range(1, job["parallel"] + 1):
            project = self.new_project(os.path.join(top, "shard-%d" % k))
            out = self.run_job(job, project, root=root, overrides=overrides, index=k, whole=root is not None,
                               what="precompress %d/%d" % (k, job["parallel"]))
            if root is None:
                s = summaries(out)
                self.assertEqual(len(s), 1, out)
                self.assertEqual(s[0]["shard"], {"index": k, "count": job["parallel"],
                                                 "from": "CI_NODE_INDEX=%d CI_NODE_TOTAL=%d" % (k, job["parallel"])})
                self.assertGreater(s[0]["files"], 0, "shard %d took no file" % k)
            stores.append(self.keep_artifacts(job, project, os.path.join(top, "artifacts-%d" % k)))
        project = self.new_project(os.path.join(top, "merge"))
        for store in stores:
            shutil.copytree(store, project, symlinks=True, dirs_exist_ok=True)
        self.run_job(merge, project, root=root, overrides=overrides, whole=root is not None, what="merge")
        self.keep_artifacts(merge, project, os.path.join(top, "artifacts-merge"))
        return project

    def assertMergedIsSingle(self, merged_project, single):
        manifest, tree = single
        with open(os.path.join(merged_project, "precompress.json"), "rb") as f:
            self.assertEqual(f.read(), manifest, "the merged manifest is not one run's")
        self.assertEqual(tree_bytes(os.path.join(merged_project, "dist")), tree,
                         "the shards' outputs together are not one run's")
        self.assertSiteCompressed(os.path.join(merged_project, "dist"))


class GitLabShards(ShardsBase):
    """examples/shards/.gitlab-ci.yml with the program under test."""

    def test_four_jobs_and_the_merge_give_one_runs_manifest(self):
        def single(project, args):
            r = run(args, cwd=project)
            self.assertEqual(r.rc, 0, r)

        want = self.single_run(self.path("single"), ["-q", "--manifest", "precompress.json", "dist/"], single)
        merged = self.run_gitlab_shards(self.path("pipeline"))
        self.assertMergedIsSingle(merged, want)

    def test_the_jobs(self):
        ci = self.load(os.path.join(SHARDS, ".gitlab-ci.yml"))
        self.check_release_template(ci, "examples/shards/.gitlab-ci.yml")
        self.assertEqual(ci[".precompress-release"], self.load(GITLAB)[".precompress-release"],
                         "two texts of one way to install")
        job = gitlab_job(ci, "precompress")
        self.assertGreater(job["parallel"], 1)
        self.assertIn("--shard auto", job["script"][0])
        self.assertEqual(ci["merge"]["stage"], ci["stages"][-1])
        self.assertIn("merge-manifests", "\n".join(ci["merge"]["script"]))


class KubernetesShards(ShardsBase):
    """examples/shards/indexed-job.yaml: each pod's command with its JOB_COMPLETION_INDEX, /srv
    a temp directory; then the merge Job's."""

    def setUp(self):
        super().setUp()
        with open(os.path.join(SHARDS, "indexed-job.yaml")) as f:
            self.jobs = list(yaml.safe_load_all(f))

    def command(self, job, env, srv):
        """The container's command as the kubelet runs it: $(VAR) from the container's env,
        /precompress the program under test, /srv the volume."""
        spec = job["spec"]["template"]["spec"]
        c, = spec["containers"]
        self.assertEqual(c["image"], default_image())
        self.assertEqual([m["mountPath"] for m in c["volumeMounts"]], ["/srv"])
        args = [re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], a) for a in c["command"]]
        self.assertEqual(args[0], "/precompress")
        return [re.sub(r"^/srv(?=/|$)", srv, a) for a in args[1:]]

    def test_indexed_pods_then_the_merge_give_one_runs_manifest(self):
        shards, merge = self.jobs
        spec = shards["spec"]
        self.assertEqual(spec["completionMode"], "Indexed")
        n = spec["completions"]
        c, = spec["template"]["spec"]["containers"]
        self.assertIn("auto/%d" % n, c["command"], "N must be the Job's completions")
        self.assertEqual(c["env"][0]["name"], "JOB_COMPLETION_INDEX")
        self.assertIn("job-completion-index", c["env"][0]["valueFrom"]["fieldRef"]["fieldPath"])
        srv = self.path("srv")
        static = os.path.join(srv, "static")
        shutil.copytree(SITE, static, symlinks=True)
        # One run over the same paths first, then the tree as it was.
        r = run(["-q", "--manifest", os.path.join(srv, "single.json"), static])
        self.assertEqual(r.rc, 0, r)
        want = tree_bytes(static)
        with open(os.path.join(srv, "single.json"), "rb") as f:
            want_manifest = f.read()
        shutil.rmtree(static)
        shutil.copytree(SITE, static, symlinks=True)
        for i in range(n):
            env = {"JOB_COMPLETION_INDEX": str(i)}
            r = run(self.command(shards, env, srv), env=env)
            self.assertEqual(r.rc, 0, r)
        r = run(self.command(merge, {}, srv))
        self.assertEqual(r.rc, 0, r)
        with open(os.path.join(srv, "precompress.json"), "rb") as f:
            self.assertEqual(f.read(), want_manifest)
        self.assertEqual(tree_bytes(static), want)
        self.assertEqual([shards["metadata"]["labels"]["precompress-step"], merge["metadata"]["labels"]["precompress-step"]],
                         ["shards", "merge"])


# A stand-in for the `buildkite-agent artifact` commands: upload "A;B" (globs, from the job's
# directory) into BK_STORE; download PATTERN DEST (a glob in BK_STORE) into the job's directory.
FAKE_BUILDKITE_AGENT = r"""import glob, os, shutil, sys
store = os.environ["BK_STORE"]
cmd, op, what = sys.argv[1:4]
assert cmd == "artifact" and op in ("upload", "download"), sys.argv
src, dst = (os.getcwd(), store) if op == "upload" else (store, os.path.join(os.getcwd(), sys.argv[4]))
found = [f for pat in what.split(";") for f in glob.glob(pat, root_dir=src)]
if not found:
    sys.exit("buildkite-agent: no artifact matches %r" % what)
for f in found:
    os.makedirs(os.path.dirname(os.path.join(dst, f)) or dst, exist_ok=True)
    shutil.copy2(os.path.join(src, f), os.path.join(dst, f))
"""


def files_below(top, path):
    """The files (not directories) at or below top/path, as paths relative to top."""
    full = os.path.join(top, path)
    if not os.path.isdir(full) or os.path.islink(full):
        return [os.path.normpath(path)]
    return [os.path.relpath(os.path.join(d, f), top) for d, _, fs in os.walk(full) for f in fs]


class OtherEngineShards(ShardsBase):
    """examples/shards/circleci.yml and buildkite.yml: their files checked (the parallel job
    shards with --shard auto, its copies hand on only their own files, the last job merges,
    the release installed is this version's and checked), and their shell steps run here with
    the engine's variables, its workspace or artifacts emulated; Buildkite's download lines
    too, from a release of the program under test on a loopback server."""

    def circleci(self):
        return self.load(os.path.join(SHARDS, "circleci.yml"))

    def test_circleci(self):
        cfg = self.circleci()
        install = cfg["commands"]["install-precompress"]["steps"][0]["run"]
        self.assertEqual(str(install["environment"]["PRECOMPRESS_VERSION"]), project_version())
        self.assertIn("sha256sum -c --ignore-missing SHA256SUMS", install["command"])
        job = cfg["jobs"]["precompress"]
        self.assertGreater(job["parallelism"], 1)
        runs = [s["run"]["command"] for s in job["steps"] if isinstance(s, dict) and "run" in s]
        self.assertIn("precompress --shard auto", runs[0])
        # Concurrent containers may not persist one file twice: only their own.
        persisted = [s["persist_to_workspace"]["paths"] for s in job["steps"]
                     if isinstance(s, dict) and "persist_to_workspace" in s]
        self.assertEqual(persisted, [["shards"]])
        merge = cfg["jobs"]["merge"]
        self.assertIn("merge-manifests", "\n".join(s["run"]["command"] for s in merge["steps"]
                                                   if isinstance(s, dict) and "run" in s))
        wf = cfg["workflows"]["precompress"]["jobs"]
        self.assertEqual(wf[2], {"merge": {"requires": ["precompress"]}})

    def circle_job(self, cfg, name, workdir, layers, env):
        """Runs a CircleCI job's steps in workdir: attach_workspace applies layers (in order),
        `run` steps with bash -eo pipefail (install-precompress is left out: the program under
        test is on PATH), persist_to_workspace returns the new layer's files."""
        os.makedirs(workdir)
        layer = {}
        for step in cfg["jobs"][name]["steps"]:
            if step == "install-precompress" or step == "checkout":
                continue
            (kind_, arg), = step.items()
            if kind_ == "attach_workspace":
                for l in layers:
                    for rel, src in l.items():
                        os.makedirs(os.path.dirname(os.path.join(workdir, rel)), exist_ok=True)
                        shutil.copy2(src, os.path.join(workdir, rel))
            elif kind_ == "run":
                full = dict(self.env)
                full.update(env)
                self.bash(arg["command"] if isinstance(arg, dict) else arg, workdir, full)
            elif kind_ == "persist_to_workspace":
                for p in arg["paths"]:
                    for rel in files_below(workdir, p):
                        layer[rel] = os.path.join(workdir, rel)
            elif kind_ != "store_artifacts":
                self.fail("a CircleCI step this test does not know: %r" % step)
        return layer

    def test_circleci_containers_then_the_merge_give_one_runs_manifest(self):
        cfg = self.circleci()
        top = self.path("circleci")
        site = self.new_project(os.path.join(top, "site-job"))
        site_layer = {rel: os.path.join(site, rel) for rel in files_below(site, "dist")}
        n = cfg["jobs"]["precompress"]["parallelism"]
        layers = []
        for i in range(n):
            layers.append(self.circle_job(cfg, "precompress", os.path.join(top, "container-%d" % i), [site_layer],
                                          {"CIRCLE_NODE_INDEX": str(i), "CIRCLE_NODE_TOTAL": str(n)}))
        for i in range(n):
            for j in range(i):
                self.assertEqual(set(layers[i]) & set(layers[j]), set(), "two containers persisted one file")
        merged = os.path.join(top, "merge")
        self.circle_job(cfg, "merge", merged, [site_layer] + layers, {})

        def single(project, args):
            r = run(args, cwd=project)
            self.assertEqual(r.rc, 0, r)

        self.assertMergedIsSingle(merged, self.single_run(self.path("single"), ["-q", "--manifest",
                                                                               "precompress.json", "dist/"], single))

    def buildkite(self):
        with open(os.path.join(SHARDS, "buildkite.yml")) as f:
            return yaml.safe_load(f)

    def test_buildkite(self):
        p = self.buildkite()
        self.assertEqual(str(p["env"]["PRECOMPRESS_VERSION"]), project_version())
        site, shards, merge = p["steps"]
        self.assertGreater(shards["parallelism"], 1)
        self.assertIn("precompress --shard auto", shards["command"])
        self.assertEqual(merge["depends_on"], shards["key"])
        self.assertIn("merge-manifests", merge["command"])
        for step in (shards, merge):
            self.assertIn("sha256sum -c --ignore-missing SHA256SUMS", step["command"])
            # Buildkite interpolates $VAR when the pipeline is uploaded: every variable of a
            # command is the job's ($$).
            self.assertEqual(re.findall(r"(?<!\$)\$(?!\$)", step["command"].replace("$$", "")), [],
                             step["command"])

    def test_buildkite_jobs_then_the_merge_give_one_runs_manifest(self):
        p = self.buildkite()
        version = project_version()
        srv = ReleaseServer(make_release(self.path("release"), PROGRAM, version))
        self.addCleanup(srv.close)
        agent = os.path.join(self.path("agent-bin"), "buildkite-agent")
        os.makedirs(os.path.dirname(agent))
        with open(agent, "w") as f:
            f.write("#!%s\n%s" % (sys.executable, FAKE_BUILDKITE_AGENT))
        os.chmod(agent, 0o755)
        store = self.path("artifacts")
        os.makedirs(store)
        base = dict(os.environ)
        base.update({"BK_STORE": store, "PRECOMPRESS_VERSION": version, "PRECOMPRESS_URL": srv.url,
                     "HOME": self.path("home"),
                     "PATH": os.path.dirname(agent) + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")})

        def job(step, name, **env):
            work = self.path("bk", name)
            os.makedirs(work)
            e = dict(base, **env)
            lines = step["command"].replace("$$", "$").splitlines()
            if step.get("key") == "site":
                self.assertEqual(kind(lines[0]), "site")
                lines = lines[1:]  # npm: the site is fixtures/site
                shutil.copytree(SITE, os.path.join(work, "dist"), symlinks=True)
            self.bash("\n".join(lines), work, e, shell=("bash", "-e"))  # the agent's shell: bash -e -c
            return work

        site, shards, merge = p["steps"]
        job(site, "site")
        n = shards["parallelism"]
        for i in range(n):
            job(shards, "shard-%d" % i, BUILDKITE_PARALLEL_JOB=str(i), BUILDKITE_PARALLEL_JOB_COUNT=str(n))
        merged = job(merge, "merge")
        self.assertTrue(any(r.endswith("/SHA256SUMS") for r in srv.got()), srv.got())
        # The one run's reference, over the site as the jobs got it (site.tar: whole seconds).
        ref = self.path("single")
        os.makedirs(ref)
        subprocess.run(["tar", "-xf", os.path.join(store, "site.tar")], cwd=ref, check=True)
        r = run(["-q", "--manifest", "precompress.json", "dist/"], cwd=ref)
        self.assertEqual(r.rc, 0, r)
        with open(os.path.join(ref, "precompress.json"), "rb") as f:
            want = f.read()
        self.assertMergedIsSingle(merged, (want, tree_bytes(os.path.join(ref, "dist"))))
        self.assertTrue(os.path.isfile(os.path.join(store, "site-compressed.tar")))


# ----------------------------------------------------------------------------
# The install blocks: README.md's Install section, docs/install.md's build
# ----------------------------------------------------------------------------

def sh_blocks(path, heading):
    """The ```sh blocks of path's section `heading` (up to the next heading of its level)."""
    with open(path) as f:
        text = f.read()
    level = heading.split(" ", 1)[0]
    m = re.search(r"^%s\n(.*?)(?=^%s |\Z)" % (re.escape(heading), level), text, re.S | re.M)
    if not m:
        raise AssertionError("%s has no section %r" % (os.path.relpath(path, SRC_ROOT), heading))
    return re.findall(r"^```sh\n(.*?)^```$", m.group(1), re.S | re.M)


def install_blocks():
    """The release's binary (README.md's "## Install" block), then the build from the sources
    (docs/install.md's "## Building from source" block): each section's ```sh blocks, all of
    them, so that a second one is seen."""
    return sh_blocks(README, "## Install") + sh_blocks(INSTALL_DOC, "## Building from source")


def set_variable(block, name, value):
    """block with its line `NAME=...` giving NAME value instead: what a user sets."""
    new, n = re.subn(r"^%s=.*$" % name, lambda m: "%s=%s" % (name, value), block, flags=re.M)
    if n != 1:
        raise AssertionError("the install block sets %s %d times" % (name, n))
    return new


class ReadmeInstall(Base):
    def test_binary_first_then_the_sources(self):
        self.assertEqual(len(sh_blocks(README, "## Install")), 1, "README.md's Install: one ```sh block")
        self.assertEqual(len(sh_blocks(INSTALL_DOC, "## Building from source")), 1,
                         "docs/install.md's Building from source: one ```sh block")
        binary, source = install_blocks()
        self.assertIn("PRECOMPRESS_VERSION=%s\n" % project_version(), binary)
        self.assertIn("PRECOMPRESS_URL=https://github.com/precompress/precompress/releases/download/"
                      "v$PRECOMPRESS_VERSION\n", binary)
        self.assertLess(binary.index("sha256sum -c --ignore-missing SHA256SUMS"), binary.index("tar -xzf"))
        # The library is linked into the program: nothing to register, nothing but the
        # program, its man page and completions installed.
        self.assertIn("meson install -C build", source)
        self.assertNotIn("ldconfig", source)
        with open(README) as f:
            text = f.read()
        self.assertLess(text.index("## Install"), text.index("COPY --from=%s /precompress /usr/local/bin/"
                                                             % default_image()))


# ----------------------------------------------------------------------------
# The whole runs (slow suite): every line, in fresh Debian 12 roots
# ----------------------------------------------------------------------------

class GitLabChroot(GitLabBase, ChrootBase):
    """examples/gitlab-ci/.gitlab-ci.yml's precompress job, every line, in the image it names
    (debian:12: a minbase root and nothing else), with each way to install."""

    PROJECT = "builds/precompress-test/site"

    def setUp(self):
        super().setUp()
        self.ci = self.load(GITLAB)

    def job_in_root(self, root, job, overrides=None, what="precompress job"):
        project = self.new_project(os.path.join(root, self.PROJECT))
        self.run_job(job, project, root=root, overrides=overrides, whole=True, what=what)
        return project

    def test_release_way(self):
        rel, version = release_under_test(self)
        srv = self.serve(rel)
        over = {"PRECOMPRESS_VERSION": version, "PRECOMPRESS_URL": srv.url}
        root = self.fresh_root("gitlab-release")
        job = gitlab_job(self.ci, "precompress")
        self.assertEqual(job["image"], "debian:12")
        project = self.job_in_root(root, job, over)
        self.assertReleaseInstalled(os.path.join(root, "usr/local/bin/precompress"), rel, version, srv)
        self.assertSiteCompressed(os.path.join(project, "dist"), extra=())
        self.assertTrue(os.path.isfile(os.path.join(project, "precompress.json")))
        self.assertTrue(os.path.isfile(os.path.join(project, ".precompress-cache", "cache.sqlite")))
        # A tarball that is not the one SHA256SUMS lists: the job stops before installing.
        os.unlink(os.path.join(root, "usr/local/bin/precompress"))
        bad = self.serve(corrupt_copy(rel, self.path("bad-release"), tarball_name(version)))
        env = gitlab_variables(job, {"CI_PROJECT_DIR": "/" + self.PROJECT},
                               {"PRECOMPRESS_VERSION": version, "PRECOMPRESS_URL": bad.url})
        out = self.in_root(root, "\n".join(release_lines(job)), env=env, ok=False, what="a wrong checksum")
        self.assertIn("FAILED", out)
        self.assertFalse(os.path.exists(os.path.join(root, "usr/local/bin/precompress")))

    def test_from_source_way(self):
        """extends: .precompress-from-source, the sources at tools/precompress."""
        root = self.fresh_root("gitlab-source")
        job = gitlab_job(self.ci, "precompress", extends=".precompress-from-source")
        project = os.path.join(root, self.PROJECT)
        os.makedirs(os.path.dirname(project))
        copy_source_tree(self.path("src-copy"))
        self.new_project(project)
        src = gitlab_variables(job, {}, {})["PRECOMPRESS_SRC"]
        shutil.copytree(self.path("src-copy"), os.path.join(project, src), symlinks=True)
        self.run_job(job, project, root=root, whole=True, what="precompress job, built from the sources")
        from test_static import assert_static
        assert_static(self, os.path.join(root, "usr/local/bin/precompress"))
        self.assertSiteCompressed(os.path.join(project, "dist"))


class ShardsChroot(ShardsBase, ChrootBase):
    """examples/shards/.gitlab-ci.yml, every line of every job (the release downloaded, checked
    and installed by each), in a debian:12 root; the jobs one after another in one root, each
    in its own checkout."""

    def test_gitlab_parallel_jobs_and_merge(self):
        rel, version = release_under_test(self)
        srv = self.serve(rel)
        root = self.fresh_root("gitlab-shards")
        top = os.path.join(root, "builds", "precompress-test")
        merged = self.run_gitlab_shards(top, root=root, overrides={"PRECOMPRESS_VERSION": version,
                                                                   "PRECOMPRESS_URL": srv.url})
        self.assertReleaseInstalled(os.path.join(root, "usr/local/bin/precompress"), rel, version, srv)

        def single(project, args):
            self.in_root(root, "cd %s && precompress %s" % (shlex.quote("/" + os.path.relpath(project, root)),
                                                             " ".join(args)), what="one unsharded run")

        want = self.single_run(os.path.join(top, "single"), ["-q", "--manifest", "precompress.json", "dist/"],
                               single)
        self.assertMergedIsSingle(merged, want)


class ReadmeChroot(ChrootBase):
    """The install blocks (README.md's release binary, docs/install.md's build from source), as
    they are but for the release's version and URL."""

    def compresses(self, root, program="precompress"):
        shutil.copytree(SITE, os.path.join(root, "srv", "site"), symlinks=True)
        self.in_root(root, "%s -q /srv/site" % program, what="the installed precompress on the fixtures")
        self.assertSiteCompressed(os.path.join(root, "srv", "site"))

    def test_release_binary_block(self):
        rel, version = release_under_test(self)
        srv = self.serve(rel)
        block = install_blocks()[0]
        # "With curl, sha256sum and tar": a machine with curl (and its certificates).
        root = self.fresh_root("readme-release", include=("curl", "ca-certificates"))

        def run_block(url, ok=True, what="README: the release's binary"):
            b = set_variable(set_variable(block, "PRECOMPRESS_VERSION", version), "PRECOMPRESS_URL", url)
            # As pasted into a shell: no -e, each line runs whatever the one before did.
            return self.in_root(root, "cd %s\n%s" % (tempfile_in(root), b), ok=ok, what=what, shell="/bin/sh")

        run_block(srv.url)
        self.assertReleaseInstalled(os.path.join(root, "usr/local/bin/precompress"), rel, version, srv)
        for installed in ("man/man1/precompress.1", "bash-completion/completions/precompress",
                          "zsh/site-functions/_precompress", "fish/vendor_completions.d/precompress.fish"):
            self.assertTrue(os.path.isfile(os.path.join(root, "usr/local/share", installed)), installed)
        self.in_root(root, "precompress --version | grep -F 'precompress %s'" % version, what="--version")
        self.compresses(root)
        # A tarball that is not the one SHA256SUMS lists: nothing is installed.
        os.unlink(os.path.join(root, "usr/local/bin/precompress"))
        bad = self.serve(corrupt_copy(rel, self.path("bad-release"), tarball_name(version)))
        self.assertIn("FAILED", run_block(bad.url, ok=False, what="README: a wrong checksum"))
        self.assertFalse(os.path.exists(os.path.join(root, "usr/local/bin/precompress")))

    def test_build_block(self):
        block = install_blocks()[1]
        root = self.fresh_root("readme-source")
        copy_source_tree(os.path.join(root, "src", "precompress"))
        self.in_root(root, "cd /src/precompress\n" + block,
                     what="docs/install.md: build from the sources, install", shell="/bin/sh")
        # A new shell, as a user's next command: the program runs, and no library, header or
        # pkg-config file was installed beside it.
        self.in_root(root, "precompress --version && ! ls /usr/local/lib/*/libprecompress* "
                     "/usr/local/lib/libprecompress* /usr/local/include/precompress.h "
                     "2>/dev/null", what="precompress --version; nothing of the library")
        self.compresses(root)


def tempfile_in(root):
    """A new directory in root's /tmp, as the path inside root."""
    import tempfile
    return "/" + os.path.relpath(tempfile.mkdtemp(prefix="dl-", dir=os.path.join(root, "tmp")), root)


class Recipes(Base):
    def test_every_recipe_has_a_header_comment(self):
        paths = [DOCKERFILE, GITHUB, GITLAB] + [os.path.join(SHARDS, n) for n in
                                                (".gitlab-ci.yml", "circleci.yml", "buildkite.yml",
                                                 "indexed-job.yaml")]
        for path in paths:
            with open(path) as f:
                text = f.read()
            self.assertTrue(text.startswith("#"), path)
            self.assertIn("tests/packaging/test_examples.py", text, path)

    def test_ci_deps_build_part_parsed(self):
        pkgs = ci_build_packages()
        for p in ("meson", "ninja-build", "gcc", "zlib1g-dev", "libbrotli-dev", "libuv1-dev"):
            self.assertIn(p, pkgs)
        self.assertNotIn("python3", pkgs)


if __name__ == "__main__":
    main()
