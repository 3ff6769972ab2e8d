#!/usr/bin/python3
"""action.yml (the GitHub Action) and .github/workflows/release.yml, run here as GitHub would.

The action's steps run on tests/packaging/gha.py's emulated runner (Linux X64 unless a test says
otherwise): `run:` steps with bash as GitHub starts it, expressions substituted,
GITHUB_OUTPUT/GITHUB_ENV/GITHUB_PATH honoured between steps, actions/cache/restore and save
over a store that outlives the job. Each job is a workflow step `uses:
precompress/precompress@vVERSION` (VERSION: dist/version.py), the action being this
repository's action.yml, then a step of the workflow's own that runs `precompress` from PATH.

The release the action downloads: the directory named by the environment variable
PRECOMPRESS_RELEASE (made by dist/release.sh), else a stand-in with the same layout made from
the program under test (PRECOMPRESS; see gha.Release: its tarballs, x86_64 and aarch64 both
holding this machine's program, and SHA256SUMS; the program needs the build's libprecompress
when it is not static). The first line this test
prints says which. Its tarballs and SHA256SUMS are copied for each test (some tamper with
them) and served by a loopback HTTP server (127.0.0.1, a free port) or read through file://.

What is asserted: the binary is installed from both, its SHA-256 checked (a line saying so),
on PATH for later steps, with the outputs `path` and `version`; precompress then writes
exactly the oracle's outputs into a copy of fixtures/site; with `cache: true` two runs in fresh
checkouts, the second taking every output from the cache (--json counts), a third on a changed
tree restoring the entry by its restore key and saving its own under the key of the tree as it
was before the run. A tarball one byte off, a SHA256SUMS line changed, or none for the
runner's arch fails the install step with a message saying so, and nothing is on PATH, as does
a tarball that holds no binary, or one that does not run or says another version; other
runners (Linux ARM, macOS, Windows) fail naming what is supported, before any download. Inputs
are never shell text. release.yml: pushed v* tags, a test job first, the release job in a
debian:12 container runs dist/release.sh with the tag's version and hands every file of its
output directory to `gh release create` (run here with a stand-in release.sh and gh).
"""
import sys

sys.dont_write_bytecode = True
import atexit
import os
import re
import shutil
import tarfile
import tempfile
import unittest

import gha
from pctest import (PROGRAM, SITE, SRC_ROOT, PCTestCase, classify, expected_outputs, fsb, main,
                    project_version, sha256, summaries, walk_all)

try:
    import yaml
except ImportError:  # skipped with a message
    yaml = None

ACTION = os.path.join(SRC_ROOT, "action.yml")
RELEASE_WF = os.path.join(SRC_ROOT, ".github", "workflows", "release.yml")
REPO = "precompress/precompress"
UNSUPPORTED = "Linux X64 (linux-x86_64) and Linux ARM64 (linux-aarch64)"


class Base(PCTestCase):
    release = None

    @classmethod
    def setUpClass(cls):
        if yaml is None:
            raise unittest.SkipTest("python3-yaml is missing (apt-get install python3-yaml)")

    def setUp(self):
        super().setUp()
        if Base.release is None:
            # Made once for all the tests of this run.
            d = tempfile.mkdtemp(prefix="pc-test-action-")
            atexit.register(shutil.rmtree, d, True)
            Base.release = gha.Release(d, PROGRAM)
            print("release: %s, version %s" % (Base.release.what, Base.release.version))
            sys.stdout.flush()
        self.version = Base.release.version
        self.served = Base.release.copy_to(self.path("served"))
        self.env = gha.runner_env(os.environ)
        self.env.update(Base.release.env)
        self.store = gha.CacheStore(self.path("actions-cache"))
        self.n = 0

    def job(self, with_=None, runner=None, github=None, site=True, after=None, ref=None):
        """One job: the action (with with_), then a step of the workflow's own (after, by default
        `precompress -V` from PATH, run whatever came before)."""
        self.n += 1
        g = {"repository": "example/site"}
        g.update(github or {})
        job = gha.Job(self.path("job%d" % self.n), self.env, store=self.store, github=g, runner=runner,
                      actions={REPO: SRC_ROOT})
        if site:
            shutil.copytree(SITE, os.path.join(job.workspace, "dist"), symlinks=True)
        steps = [{"name": "precompress", "id": "pc", "uses": "%s@%s" % (REPO, ref or "v" + self.version),
                  "with": dict(with_ or {})},
                 {"name": "after", "if": "always()", "shell": "bash",
                  "run": after or 'command -v precompress && precompress -V || echo "no precompress on PATH"'}]
        return job.run(steps)

    def http_with(self, server, **kw):
        w = {"version": self.version, "base-url": server.url + "/"}
        w.update(kw)
        return w

    def step(self, job, name):
        return job.find(name, where=REPO)

    def assertInstalled(self, job, platform="x86_64"):
        inst = self.step(job, "Install precompress")
        self.assertEqual(inst.conclusion, "success", inst)
        pc = job.find("pc")
        path = pc.outputs["path"]
        self.assertEqual(pc.outputs["version"], self.version)
        self.assertEqual(path, os.path.join(job.path_added[0], "precompress"))
        self.assertTrue(path.startswith(job.temp + os.sep), path)
        self.assertTrue(os.access(path, os.X_OK), path)
        self.assertTrue(path.endswith("/precompress-%s-linux-%s/precompress" % (self.version, platform)), path)
        tarball = self.release.tarball(platform)
        self.assertIn("%s: SHA-256 %s, as SHA256SUMS says" % (
            tarball, sha256(os.path.join(self.served, tarball))), inst.stdout)
        self.assertRegex(inst.stdout, r"(?m)^precompress %s \(" % re.escape(self.version))
        after = job.find("after")
        self.assertEqual(after.stdout.split("\n")[0], path, "a later step does not find it first on PATH")
        self.assertRegex(after.stdout, r"(?m)^precompress %s \(" % re.escape(self.version))
        # Nothing left of the download beside the unpacked release.
        self.assertEqual(sorted(n for n in os.listdir(job.temp) if n.startswith("precompress")),
                         [os.path.basename(os.path.dirname(os.path.dirname(path)))])
        return path

    def assertFailed(self, job, message, step="Install precompress"):
        """The step failed saying message, the job failed, and no precompress is on PATH."""
        res = self.step(job, step)
        self.assertEqual(res.conclusion, "failure", res)
        self.assertIn(message, res.stdout, res)
        self.assertRegex(res.stdout, r"(?m)^::error title=precompress::", res)
        self.assertEqual(job.status, "failure")
        self.assertEqual(job.path_added, [], "a failed install put something on PATH")
        self.assertIn("no precompress on PATH", job.find("after").stdout)
        self.assertEqual([n for n in os.listdir(job.temp) if n.startswith("precompress")], [],
                         "a failed install left files in RUNNER_TEMP")
        for later in ("Restore the precompress cache", "Run precompress", "Save the precompress cache"):
            self.assertEqual(self.step(job, later).conclusion, "skipped")
        return res

    def assertCompressed(self, root, pristine):
        """root holds pristine's files plus exactly the oracle's outputs, byte for byte."""
        want = expected_outputs(classify(pristine))
        self.assertGreater(len(want), 10)
        new = set(walk_all(root)) - set(walk_all(pristine))
        self.assertEqual(sorted(new), sorted(want), "outputs differ from what the keep rule calls for")
        for rel, blob in want.items():
            with open(os.path.join(fsb(root), rel), "rb") as f:
                self.assertEqual(f.read(), blob, "%r: bytes differ from the oracle" % rel)

    def compressed_files(self, root=SITE):
        return len({rel for rel, c in classify(root).items() if c["skip"] is None})


# ----------------------------------------------------------------------------
# The emulation itself, where it decides what the action does
# ----------------------------------------------------------------------------

class Emulator(PCTestCase):
    def ctx(self, **kw):
        c = {"inputs": {"cache": "true", "args": "", "cache-dir": "~/x"}, "steps": {"r": {"outputs": {}}},
             "runner": {"os": "Linux"}, "__status": "success", "__hashfiles": lambda *p: "h"}
        c.update(kw)
        return c

    def test_expressions_as_github_evaluates_them(self):
        c = self.ctx()
        for expr, want in (("inputs.cache == 'true'", True), ("inputs.cache == 'TRUE'", True),
                           ("inputs.cache == true", False),  # 'true' as a number is NaN
                           ("inputs.args != ''", False), ("inputs.cache-dir", "~/x"),
                           ("steps.r.outputs.cache-hit != 'true'", True), ("steps.nope.outputs.x", None),
                           ("inputs.args || 'd'", "d"), ("inputs.cache && 'y'", "y"), ("!inputs.args", True),
                           ("format('{0}-{1}', runner.os, 1)", "Linux-1"), ("1 < 2", True)):
            self.assertEqual(gha.evaluate(expr, c), want, expr)
        self.assertEqual(gha.interpolate("a-${{ runner.os }}-${{ hashFiles('x') }}", c), "a-Linux-h")
        self.assertTrue(gha.condition("inputs.cache == 'true'", c))
        self.assertFalse(gha.condition("inputs.cache == 'true'", self.ctx(__status="failure")))
        self.assertTrue(gha.condition("always()", self.ctx(__status="failure")))
        self.assertTrue(gha.condition(None, c))

    def test_hash_files_globs_and_hashes_as_the_runner(self):
        w = self.path("w")
        os.makedirs(os.path.join(w, "dist", "a"))
        for rel, data in (("dist/a/x.js", b"x"), ("dist/y.css", b"y"), ("other.txt", b"o")):
            with open(os.path.join(w, rel), "wb") as f:
                f.write(data)
        import hashlib
        want = hashlib.sha256(hashlib.sha256(b"x").digest() + hashlib.sha256(b"y").digest()).hexdigest()
        self.assertEqual(gha.hash_files(w, "dist/**"), want)
        self.assertEqual(gha.hash_files(w, "dist/**/*.js\ndist/*.css"), want)
        self.assertEqual(gha.hash_files(w, "dist/**", "!dist/a/**"), hashlib.sha256(
            hashlib.sha256(b"y").digest()).hexdigest())
        self.assertEqual(gha.hash_files(w, "nothing/**"), "")

    def test_file_commands_with_heredocs(self):
        p = self.path("out")
        with open(p, "w") as f:
            f.write("a=1\nb<<EOF\nline 1\nline=2\nEOF\nc=x=y\n")
        self.assertEqual(gha.read_file_command(p), {"a": "1", "b": "line 1\nline=2", "c": "x=y"})


# ----------------------------------------------------------------------------
# What action.yml says
# ----------------------------------------------------------------------------

class Metadata(Base):
    def setUp(self):
        PCTestCase.setUp(self)
        self.action = gha.load_yaml(ACTION)
        self.steps = self.action["runs"]["steps"]

    def test_composite_with_its_inputs_and_outputs(self):
        self.assertEqual(self.action["runs"]["using"], "composite")
        self.assertEqual(sorted(self.action["inputs"]),
                         sorted(["version", "args", "cache", "cache-dir", "cache-key-files", "base-url", "token"]))
        d = {k: v.get("default") for k, v in self.action["inputs"].items()}
        self.assertEqual((d["cache"], d["cache-dir"], d["cache-key-files"], d["args"]),
                         ("false", "~/.cache/precompress", "dist/**", ""))
        self.assertEqual(sorted(self.action["outputs"]), ["path", "version"])

    def test_run_steps_are_bash_and_never_interpolate(self):
        """Inputs and contexts reach a script through env:, never as its text (script
        injection); each script starts with set -euo pipefail."""
        runs = [s for s in self.steps if "run" in s]
        self.assertEqual(len(runs), 2)
        for s in runs:
            self.assertEqual(s["shell"], "bash", s["name"])
            self.assertNotIn("${{", s["run"], s["name"])
            self.assertEqual(s["run"].split("\n")[0], "set -euo pipefail", s["name"])
            for v in (s.get("env") or {}).values():
                self.assertRegex(str(v), r"^\$\{\{ [a-z_.-]+ \}\}$", s["name"])

    def test_cache_restored_before_the_run_and_saved_after_under_the_restored_key(self):
        uses = [(i, s["uses"]) for i, s in enumerate(self.steps) if "uses" in s]
        run = [i for i, s in enumerate(self.steps) if s.get("name") == "Run precompress"][0]
        self.assertEqual([u for _, u in uses], ["actions/cache/restore@v4", "actions/cache/save@v4"])
        self.assertLess(uses[0][0], run)
        self.assertGreater(uses[1][0], run)
        restore, save = self.steps[uses[0][0]], self.steps[uses[1][0]]
        self.assertEqual(restore["with"]["key"],
                         "precompress-${{ runner.os }}-${{ runner.arch }}-${{ hashFiles(inputs.cache-key-files) }}")
        self.assertEqual(restore["with"]["restore-keys"], "precompress-${{ runner.os }}-${{ runner.arch }}-")
        self.assertEqual(save["with"]["key"], "${{ steps.%s.outputs.cache-primary-key }}" % restore["id"])
        self.assertEqual(restore["with"]["path"], save["with"]["path"])


# ----------------------------------------------------------------------------
# Installing
# ----------------------------------------------------------------------------

class Install(Base):
    def test_over_http_installs_verified_on_path_with_outputs(self):
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv))
        self.assertEqual(job.status, "success", job.results)
        self.assertInstalled(job)
        self.assertEqual(srv.paths(), ["/SHA256SUMS", "/" + self.release.tarball("x86_64")])
        # No args: nothing else ran.
        for later in ("Restore the precompress cache", "Run precompress", "Save the precompress cache"):
            self.assertEqual(self.step(job, later).conclusion, "skipped")
        self.assertEqual(sorted(os.listdir(os.path.join(job.workspace, "dist"))), sorted(os.listdir(SITE)))

    def test_from_file_url_then_compresses_the_site(self):
        job = self.job({"version": "v" + self.version, "base-url": "file://" + self.served,
                        "args": "--json --manifest precompress.json dist/"},
                       after="precompress --check --manifest precompress.json dist/ && command -v precompress")
        self.assertEqual(job.status, "success", job.results)
        path = job.find("pc").outputs["path"]
        self.assertEqual(job.find("after").stdout, path + "\n", "--check listed changes, or another precompress ran")
        self.assertCompressed(os.path.join(job.workspace, "dist"), SITE)
        s = summaries(self.step(job, "Run precompress").stdout)
        self.assertEqual(len(s), 1)
        self.assertEqual((s[0]["compressed"], s[0]["cached"], s[0]["exit"]), (self.compressed_files(), 0, 0), s)

    def test_version_and_url_default_to_the_actions_own_release(self):
        """No version, no base-url: the release the action's ref names (v + VERSION), from
        SERVER/OWNER/REPO/releases/download/vVERSION (the server here is the loopback one)."""
        web = self.path("web")
        rel = os.path.join(web, REPO, "releases", "download", "v" + self.version)
        os.makedirs(os.path.dirname(rel))
        shutil.copytree(self.served, rel)
        with gha.serve(web) as srv:
            job = self.job({}, github={"server_url": srv.url})
        self.assertEqual(job.status, "success", job.results)
        self.assertInstalled(job)
        prefix = "/%s/releases/download/v%s/" % (REPO, self.version)
        self.assertEqual(srv.paths(), [prefix + "SHA256SUMS", prefix + self.release.tarball("x86_64")])

    def test_a_branch_ref_without_version_fails_asking_for_one(self):
        with gha.serve(self.served) as srv:
            job = self.job({"base-url": srv.url}, ref="main")
        self.assertFailed(job, "no version: give the action 'version: X.Y.Z', or use it at a release tag")
        self.assertEqual(srv.requests, [])

    def test_a_version_that_is_not_one_is_refused_never_run(self):
        with gha.serve(self.served) as srv:
            for v in ("1.2.3; touch pwned", "$(touch pwned)", "../../etc", "1.2.3\n::warning::x"):
                job = self.job({"version": v, "base-url": srv.url})
                res = self.assertFailed(job, "is not a release version (X.Y.Z)")
                self.assertNotIn("\n::warning::x", res.stdout, "an input made a workflow command")
                self.assertFalse(os.path.exists(os.path.join(job.workspace, "pwned")))
        self.assertEqual(srv.requests, [])

    def test_token_is_sent_as_a_header_and_never_printed(self):
        token = "s3cret-t0ken"
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv, token=token))
        self.assertEqual(job.status, "success", job.results)
        self.assertEqual([a for _, a in srv.requests], ["Bearer " + token] * 2)
        for r in job.results:
            self.assertNotIn(token, r.output, r)

    def test_missing_release_fails_naming_the_url(self):
        with gha.serve(self.path("empty-dir-that-is-not-there")) as srv:
            job = self.job(self.http_with(srv))
        self.assertFailed(job, "could not download %s/SHA256SUMS" % srv.url)


class Checksum(Base):
    def tamper(self, name, offset=None, edit=None):
        p = os.path.join(self.served, name)
        with open(p, "rb") as f:
            data = bytearray(f.read())
        if edit is not None:
            data = bytearray(edit(bytes(data)))
        else:
            data[offset] ^= 0x01
        with open(p, "wb") as f:
            f.write(data)

    def test_a_tarball_one_byte_off_fails_and_installs_nothing(self):
        tarball = self.release.tarball("x86_64")
        size = os.path.getsize(os.path.join(self.served, tarball))
        for where in (0, size // 2, size - 1):
            self.served = self.release.copy_to(self.path("served%d" % where))
            self.tamper(tarball, where)
            with gha.serve(self.served) as srv:
                job = self.job(self.http_with(srv, args="--json dist/"))
            res = self.assertFailed(job, "%s: SHA-256 %s, but SHA256SUMS says" % (
                tarball, sha256(os.path.join(self.served, tarball))))
            self.assertIn("Nothing was installed", res.stdout)
            self.assertEqual(sorted(os.listdir(os.path.join(job.workspace, "dist"))), sorted(os.listdir(SITE)))

    def test_a_changed_sums_line_fails(self):
        tarball = self.release.tarball("x86_64")

        def edit(text):
            return re.sub(rb"(?m)^([0-9a-f])([0-9a-f]{63})(  \*?%s)$" % re.escape(tarball.encode()),
                          lambda m: (b"0" if m.group(1) != b"0" else b"1") + m.group(2) + m.group(3), text)
        self.tamper("SHA256SUMS", edit=edit)
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv))
        self.assertFailed(job, "but SHA256SUMS says")

    def test_no_line_for_the_runners_arch_fails(self):
        """The runner's arch picks the tarball: Linux ARM64 asks for linux-aarch64, X64 for
        linux-x86_64; each one's line is taken out of SHA256SUMS in turn."""
        for arch, platform in (("ARM64", "aarch64"), ("X64", "x86_64")):
            tarball = self.release.tarball(platform)
            self.tamper("SHA256SUMS", edit=lambda t: re.sub(
                rb"(?m)^[0-9a-f]{64}  \*?%s\n" % re.escape(tarball.encode()), b"", t))
            with gha.serve(self.served) as srv:
                job = self.job(self.http_with(srv), runner={"arch": arch})
            self.assertFailed(job, "SHA256SUMS has no line for %s: the release has no linux-%s binary" % (tarball, platform))
            self.assertEqual(srv.paths(), ["/SHA256SUMS"])


class Arm64(Base):
    def test_an_arm64_runner_installs_the_aarch64_binary(self):
        """The stand-in release's aarch64 tarball holds this machine's program; a real release's
        needs a machine that runs an aarch64 binary (an aarch64 one, or qemu-user registered
        with binfmt_misc)."""
        if not self.release.standin and os.uname().machine != "aarch64" and not os.path.exists(
                "/proc/sys/fs/binfmt_misc/qemu-aarch64"):
            self.skipTest("this machine cannot run an aarch64 binary (no qemu-aarch64 in binfmt_misc)")
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv, args="--json dist/"), runner={"arch": "ARM64"})
        self.assertEqual(job.status, "success", job.results)
        self.assertInstalled(job, "aarch64")
        self.assertCompressed(os.path.join(job.workspace, "dist"), SITE)


class Contents(Base):
    """A tarball SHA256SUMS vouches for, but not holding what the release's should."""

    def repack(self, files):
        """The x86_64 tarball made anew holding files {relative path: (text, mode)} under its
        top directory, SHA256SUMS written again to match."""
        top = "precompress-%s-linux-x86_64" % self.version
        stage = self.path("stage", top)
        os.makedirs(stage)
        for rel, (text, mode) in files.items():
            with open(os.path.join(stage, rel), "w") as f:
                f.write(text)
            os.chmod(os.path.join(stage, rel), mode)
        with tarfile.open(os.path.join(self.served, self.release.tarball("x86_64")), "w:gz") as t:
            t.add(stage, arcname=top)
        gha.write_sums(self.served)

    def test_no_binary_in_the_tarball_fails(self):
        self.repack({"LICENSE": ("MIT\n", 0o644)})
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv))
        self.assertFailed(job, "holds no precompress-%s-linux-x86_64/precompress" % self.version)

    def test_a_binary_of_another_version_fails(self):
        self.repack({"precompress": ("#!/bin/sh\necho 'precompress 0.0.1 (zlib 1)'\n", 0o755)})
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv))
        self.assertFailed(job, "holds a precompress that says 'precompress 0.0.1 (zlib 1)', not version %s" % self.version)

    def test_a_binary_that_does_not_run_fails(self):
        self.repack({"precompress": ("\x7fELF not really\n", 0o755)})
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv))
        self.assertFailed(job, "-V failed: is it built for this machine (%s)?" % os.uname().machine)


class Unsupported(Base):
    def test_other_runners_fail_naming_what_is_supported(self):
        with gha.serve(self.served) as srv:
            for os_, arch in (("Linux", "ARM"), ("Linux", "X86"), ("macOS", "ARM64"), ("macOS", "X64"),
                              ("Windows", "X64")):
                job = self.job(self.http_with(srv, args="dist/"), runner={"os": os_, "arch": arch})
                res = self.assertFailed(job, "no precompress release binary for a %s %s runner" % (os_, arch))
                for part in (UNSUPPORTED, "build from source", "WSL or in a Linux container"):
                    self.assertIn(part, res.stdout)
        self.assertEqual(srv.requests, [], "an unsupported runner downloaded something")


# ----------------------------------------------------------------------------
# Running precompress
# ----------------------------------------------------------------------------

class Args(Base):
    def test_args_are_words_not_shell(self):
        """Quotes group words (a directory with a blank in its name); $(...), ; and ~ are
        passed as they are, never run or expanded."""
        top = self.path("words")
        with gha.serve(self.served) as srv:
            job = gha.Job(top, self.env, store=self.store, actions={REPO: SRC_ROOT})
            shutil.copytree(SITE, os.path.join(job.workspace, "my site"), symlinks=True)
            job.run([{"id": "pc", "uses": "%s@v%s" % (REPO, self.version),
                      "with": self.http_with(srv, args="--json 'my site/'")}])
        self.assertEqual(job.status, "success", job.results)
        self.assertCompressed(os.path.join(job.workspace, "my site"), SITE)
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv, args="--json dist/ ; touch pwned $(touch pwned2) ~"))
        res = self.step(job, "Run precompress")
        self.assertEqual(res.conclusion, "failure", res)
        self.assertEqual(res.rc, 2, res)  # paths that do not exist: a usage error
        self.assertIn("precompress --json dist/ \\; touch pwned \\$\\(touch pwned2\\) \\~", res.stdout)
        for n in ("pwned", "pwned2"):
            self.assertFalse(os.path.exists(os.path.join(job.workspace, n)), "args ran as shell")

    def test_an_unmatched_quote_fails_the_run_step(self):
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv, args="--json 'dist/"))
        res = self.step(job, "Run precompress")
        self.assertEqual(res.conclusion, "failure", res)
        self.assertIn("unmatched single quote", res.stderr)
        self.assertNotIn("{", res.stdout, "precompress ran")


class Cache(Base):
    def run_cached(self, srv, site):
        n = self.n + 1
        job = gha.Job(self.path("job%d" % n), self.env, store=self.store, actions={REPO: SRC_ROOT})
        self.n = n
        shutil.copytree(site, os.path.join(job.workspace, "dist"), symlinks=True)
        key = "precompress-Linux-X64-" + gha.hash_files(job.workspace, "dist/**")
        job.run([{"id": "pc", "uses": "%s@v%s" % (REPO, self.version),
                  "with": self.http_with(srv, cache=True, args="--json --manifest precompress.json dist/")}])
        self.assertEqual(job.status, "success", job.results)
        self.assertCompressed(os.path.join(job.workspace, "dist"), site)
        self.assertTrue(os.path.isfile(os.path.join(job.home, ".cache", "precompress", "cache.sqlite")))
        s = summaries(self.step(job, "Run precompress").stdout)
        self.assertEqual(len(s), 1, s)
        return job, key, s[0]

    def test_twice_the_second_from_the_cache_then_a_changed_tree(self):
        n = self.compressed_files()
        with gha.serve(self.served) as srv:
            job1, key, s1 = self.run_cached(srv, SITE)
            self.assertEqual((s1["compressed"], s1["cached"]), (n, 0), s1)
            self.assertIn("Cache not found for input keys: %s, precompress-Linux-X64-" % key,
                          self.step(job1, "Restore the precompress cache").stdout)
            self.assertEqual(self.step(job1, "Save the precompress cache").conclusion, "success")
            self.assertEqual(self.store.keys(), [key], "saved under another key than the tree's before the run")

            job2, key2, s2 = self.run_cached(srv, SITE)
            self.assertEqual(key2, key)
            self.assertEqual((s2["compressed"], s2["cached"]), (n, n), "not every output from the cache: %s" % s2)
            self.assertEqual(self.step(job2, "Restore the precompress cache").outputs["cache-hit"], "true")
            self.assertEqual(self.step(job2, "Save the precompress cache").conclusion, "skipped")
            self.assertEqual(self.store.keys(), [key])

            # One file changed: the newest entry comes by its restore key, the rest is cached,
            # and the new entry is saved under the changed tree's key.
            site = self.copy_site("changed")
            name = sorted(rel for rel, c in classify(site).items() if c["skip"] is None)[0]
            with open(os.path.join(fsb(site), name), "ab") as f:
                f.write(b"\n/* changed */\n" * 50)
            job3, key3, s3 = self.run_cached(srv, site)
            self.assertNotEqual(key3, key)
            restore = self.step(job3, "Restore the precompress cache")
            self.assertEqual((restore.outputs["cache-hit"], restore.outputs["cache-matched-key"]), ("false", key))
            self.assertEqual((s3["compressed"], s3["cached"]), (n, n - 1), s3)
            self.assertEqual(self.store.keys(), [key, key3])

    def test_cache_without_args_does_nothing_but_install(self):
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv, cache="true"))
        self.assertInstalled(job)
        for later in ("Restore the precompress cache", "Run precompress", "Save the precompress cache"):
            self.assertEqual(self.step(job, later).conclusion, "skipped")
        self.assertEqual(self.store.keys(), [])

    def test_cache_neither_true_nor_false_fails(self):
        with gha.serve(self.served) as srv:
            job = self.job(self.http_with(srv, cache="yes", args="dist/"))
        self.assertFailed(job, "cache: 'yes' is neither true nor false")


# ----------------------------------------------------------------------------
# .github/workflows/release.yml
# ----------------------------------------------------------------------------

STUB_RELEASE = r"""#!/usr/bin/env bash
# dist/release.sh's contract (dist/README.md), stood in for: refuses a version other than
# the header's, writes the artefacts into dist/out/VERSION.
set -euo pipefail
[ "$1" = "%(version)s" ] || { echo "release.sh: $1 is not %(version)s" >&2; exit 2; }
out=dist/out/$1
mkdir -p "$out"
for f in precompress-$1-linux-x86_64.tar.gz precompress-$1-linux-aarch64.tar.gz precompress-$1.tar.gz \
         precompress-$1-oci.tar; do
  echo "$f" > "$out/$f"
done
(cd "$out" && sha256sum -- * > SHA256SUMS)
echo "$1" >> "$RELEASE_LOG"
"""

STUB_GH = r"""#!/bin/sh
printf '%s\n' "GH_TOKEN=$GH_TOKEN" "$@" > "$GH_LOG"
"""


class ReleaseWorkflow(Base):
    def setUp(self):
        PCTestCase.setUp(self)
        self.wf = gha.load_yaml(RELEASE_WF)
        self.version = project_version()
        self.env = gha.runner_env(os.environ)

    def test_triggers_on_v_tags_tests_first_then_releases_in_debian_12(self):
        self.assertEqual(gha.workflow_on(self.wf), {"push": {"tags": ["v*"]}})
        jobs = self.wf["jobs"]
        self.assertEqual(sorted(jobs), ["release", "test"])
        rel = jobs["release"]
        self.assertEqual(rel["needs"], "test")
        self.assertEqual(rel["container"]["image"], "debian:12")
        self.assertEqual(rel["permissions"], {"contents": "write"})
        test_runs = "\n".join(s.get("run", "") for s in jobs["test"]["steps"])
        self.assertIn(".ci/run", test_runs)
        self.assertEqual(jobs["test"]["container"]["image"], "debian:12")

    def run_release(self, tag):
        top = self.path("release-" + tag)
        log = {"RELEASE_LOG": os.path.join(top, "release.log"), "GH_LOG": os.path.join(top, "gh.log")}
        bindir = os.path.join(top, "bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "gh"), "w") as f:
            f.write(STUB_GH)
        os.chmod(os.path.join(bindir, "gh"), 0o755)
        env = dict(self.env)
        env.update(log)
        env["PATH"] = bindir + os.pathsep + env["PATH"]
        apt = []

        def checkout(job, w, env_, res):
            os.makedirs(os.path.join(job.workspace, "dist"))
            p = os.path.join(job.workspace, "dist", "release.sh")
            with open(p, "w") as f:
                f.write(STUB_RELEASE % {"version": self.version})
            os.chmod(p, 0o755)

        def hook(job, step, script):
            if re.search(r"\bapt-get\b", script):
                apt.append(script)
                return "not run: apt-get"
            return None

        rel = self.wf["jobs"]["release"]
        job = gha.Job(top, env, github={"ref": "refs/tags/" + tag, "ref_name": tag, "ref_type": "tag",
                                        "repository": REPO, "token": "ghs_emulated"},
                      handlers={"actions/checkout": checkout}, run_hook=hook,
                      defaults=self.wf.get("defaults") or rel.get("defaults"))
        job.run(rel["steps"], env=rel.get("env"))
        return job, log, apt

    def test_release_job_builds_the_tags_version_and_attaches_every_file(self):
        tag = "v" + self.version
        job, log, apt = self.run_release(tag)
        self.assertEqual(job.status, "success", job.results)
        self.assertEqual(len(apt), 1, apt)
        for pkg in ("git", "gh", "ca-certificates"):
            self.assertRegex(apt[0], r"\b%s\b" % pkg)
        with open(log["RELEASE_LOG"]) as f:
            self.assertEqual(f.read(), self.version + "\n")
        with open(log["GH_LOG"]) as f:
            argv = f.read().split("\n")[:-1]
        self.assertEqual(argv[0], "GH_TOKEN=ghs_emulated")
        self.assertEqual(argv[1:4], ["release", "create", tag])
        out = os.path.join(job.workspace, "dist", "out", self.version)
        files = sorted(os.listdir(out))
        self.assertIn("SHA256SUMS", files)
        attached = sorted(os.path.basename(a) for a in argv if a.startswith("dist/out/") or a.startswith(out))
        self.assertEqual(attached, files, "gh release create did not get every file of %s" % out)

    def test_a_tag_of_another_version_is_refused_before_publishing(self):
        job, log, _ = self.run_release("v99.0.0")
        self.assertEqual(job.status, "failure")
        self.assertFalse(os.path.exists(log["GH_LOG"]), "gh ran after release.sh refused the version")


if __name__ == "__main__":
    main()
