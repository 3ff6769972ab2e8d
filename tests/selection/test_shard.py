#!/usr/bin/python3
"""--shard K/N and merge-manifests: four shards give the trees and, merged, the
manifest of one run over the whole job, byte for byte. --shard auto: each CI engine's
variables give the shard the same K/N given explicitly takes; what it cannot use is a usage
error naming the variables."""
import sys

sys.dont_write_bytecode = True
import hashlib
import os
import shutil

from pctest import fast_levels, PCTestCase, SITE, main, run, words_data

# Bytes are not this module's point (pctest.fast_levels).
fast_levels()

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)

# What --shard auto reads (src/cli/shard_env.h): (index variable, count variable or None,
# first index). Taken out of this process's environment, which a CI runner may have set
# (GitLab sets CI_NODE_TOTAL=1 in every job), so each test sets exactly what it means.
ENGINES = {
    "gitlab": ("CI_NODE_INDEX", "CI_NODE_TOTAL", 1),
    "circleci": ("CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL", 0),
    "buildkite": ("BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 0),
    "kubernetes": ("JOB_COMPLETION_INDEX", None, 0),
}
for _index, _total, _ in ENGINES.values():
    os.environ.pop(_index, None)
    if _total:
        os.environ.pop(_total, None)


def tree_digest(root):
    """{relative bytes path: (sha256, mode, mtime_ns)} of every regular file."""
    out = {}
    broot = os.fsencode(root)
    for dirpath, _, files in os.walk(broot):
        for f in files:
            p = os.path.join(dirpath, f)
            if os.path.islink(p):
                continue
            st = os.stat(p)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, broot)] = (hashlib.sha256(fh.read()).hexdigest(), st.st_mode,
                                                 st.st_mtime_ns)
    return out


class Shards(PCTestCase):
    def make_job(self):
        """Two roots: the fixtures, and a tree of many small files plus a
        name that is not UTF-8 (it must merge through path_hex)."""
        job = self.path("job")
        shutil.copytree(SITE, os.path.join(job, "site"), symlinks=True)
        many = os.path.join(job, "many")
        for i in range(120):
            d = os.path.join(many, "d%02d" % (i % 7))
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "f%03d.txt" % i), "wb") as f:
                f.write(words_data(300 + 37 * i, seed=i))
        with open(os.path.join(os.fsencode(many), b"bad\xff name.txt"), "wb") as f:
            f.write(words_data(2000, seed=999))
        pristine = self.path("pristine")
        shutil.copytree(job, pristine, symlinks=True)
        return job, pristine

    def test_four_shards_equal_one_run(self):
        job, pristine = self.make_job()
        roots = [os.path.join(job, "site"), os.path.join(job, "many")]
        single = self.path("single.json")
        self.run_ok(["-q", "--no-brotli", "--zstd" if os.environ.get("PC_HAVE_ZSTD") == "1" else "--no-brotli",
                     "--manifest", single] + roots)
        want_tree = tree_digest(job)
        with open(single, "rb") as f:
            want_manifest = f.read()

        shutil.rmtree(job)
        shutil.copytree(pristine, job, symlinks=True)
        parts = []
        counts = []
        for k in range(1, 5):
            m = self.path("shard-%d.json" % k)
            self.run_ok(["-q", "--no-brotli", "--zstd" if os.environ.get("PC_HAVE_ZSTD") == "1" else "--no-brotli",
                         "--shard", "%d/4" % k, "--manifest", m] + roots)
            parts.append(m)
            with open(m, "rb") as f:
                counts.append(f.read().count(b'"path": '))
        # Every shard took a real part: the split is not all-or-nothing.
        for c in counts:
            self.assertGreater(c, 10, counts)
        merged = self.path("merged.json")
        r = run(["merge-manifests", merged] + parts)
        self.assertEqual(r.rc, 0, r)
        with open(merged, "rb") as f:
            self.assertEqual(f.read(), want_manifest, "merged manifest differs from the single run's")
        self.assertEqual(tree_digest(job), want_tree, "shards wrote other outputs than one run")
        self.assertIn(b"path_hex", want_manifest)

    def test_shards_partition_the_files(self):
        job, _ = self.make_job()
        seen = []
        for k in range(1, 4):
            r = run(["-v", "-n", "--no-brotli", "--shard", "%d/3" % k, job])
            self.assertEqual(r.rc, 0, r)
            seen.append({l.split(" ", 1)[1].rsplit(" (", 1)[0] for l in r.out_lines
                         if l.startswith(("compressed ", "skipped "))})
        every = run(["-v", "-n", "--no-brotli", job])
        allfiles = {l.split(" ", 1)[1].rsplit(" (", 1)[0] for l in every.out_lines
                    if l.startswith(("compressed ", "skipped "))}
        self.assertEqual(set().union(*seen), allfiles)
        self.assertEqual(sum(len(s) for s in seen), len(allfiles), "a file was taken by two shards")

    def test_merge_refuses_overlap_and_mismatch(self):
        job, _ = self.make_job()
        a, b, c = self.path("a.json"), self.path("b.json"), self.path("c.json")
        self.run_ok(["-q", "--no-brotli", "--shard", "1/2", "--manifest", a, job])
        self.run_ok(["-q", "--no-brotli", "--gzip-level", "6", "--shard", "2/2", "--manifest", b, job])
        out = self.path("out.json")
        r = run(["merge-manifests", out, a, a])
        self.assertEqual(r.rc, 1, r)
        self.assertIn("overlap", r.err)
        r = run(["merge-manifests", out, a, b])
        self.assertEqual(r.rc, 1, r)
        self.assertIn(b, r.err)
        with open(c, "w") as f:
            f.write("{not json")
        r = run(["merge-manifests", out, a, c])
        self.assertEqual(r.rc, 1, r)
        self.assertIn(c, r.err)
        self.assertFalse(os.path.exists(out), "a failed merge wrote its output")
        r = run(["merge-manifests", out])
        self.assertEqual(r.rc, 2, r)

    def test_merge_to_stdout(self):
        """merge-manifests - IN...: the merged bytes on stdout, the same as
        a merge into a file; no file named '-' anywhere; nothing else on
        stdout; a bad input still fails with nothing written."""
        job, _ = self.make_job()
        a, b = self.path("a.json"), self.path("b.json")
        self.run_ok(["-q", "--no-brotli", "--shard", "1/2", "--manifest", a, job])
        self.run_ok(["-q", "--no-brotli", "--shard", "2/2", "--manifest", b, job])
        out = self.path("out.json")
        self.run_ok(["merge-manifests", out, a, b])
        with open(out, "rb") as f:
            want = f.read()
        r = run(["merge-manifests", "-", a, b], cwd=self.tmp)
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.out_b, want, "stdout is not the merged manifest")
        self.assertEqual(r.err, "", r)
        self.assertFalse(os.path.lexists(self.path("-")), "a file named '-' was written")
        # A failing merge writes nothing to stdout either.
        r = run(["merge-manifests", "-", a, a], cwd=self.tmp)
        self.assertEqual(r.rc, 1, r)
        self.assertEqual(r.out_b, b"", r)
        self.assertIn("overlap", r.err)
        self.assertFalse(os.path.lexists(self.path("-")))

    def test_bad_shard_values_are_usage_errors(self):
        root = self.copy_site()
        for bad in ("0/4", "5/4", "1/0", "x/4", "1/4x", "14"):
            r = run(["--shard", bad, root])
            self.assertEqual(r.rc, 2, (bad, r))
            self.assertEqual(len(r.err_lines), 1, r)
            self.assertIn("--shard", r.err)


def taken(r):
    """The files a `-v -n` run took (compressed or skipped lines), and its --json summary."""
    files = {l.split(" ", 1)[1].rsplit(" (", 1)[0] for l in r.out_lines
             if l.startswith(("compressed ", "skipped "))}
    return files, r.summary()


class ShardAuto(PCTestCase):
    """--shard auto: K/N from GitLab's, CircleCI's, Buildkite's or a Kubernetes Indexed Job's
    variables (their documented names and first indexes), the same files --shard K/N takes."""

    N = 3
    make_job = Shards.make_job

    def engine_env(self, engine, k, n):
        """The variables engine sets in job k of n (k from 1)."""
        index, total, base = ENGINES[engine]
        env = {index: str(k - 1 + base)}
        if total:
            env[total] = str(n)
        return env

    def dry(self, job, shard, env=None):
        r = run(["-v", "-n", "--json", "--no-brotli", "--shard", shard, job], env=env)
        self.assertEqual(r.rc, 0, r)
        return taken(r)

    def test_each_engine_takes_the_shard_k_of_n_takes(self):
        job, _ = self.make_job()
        want = {k: self.dry(job, "%d/%d" % (k, self.N))[0] for k in range(1, self.N + 1)}
        for k, files in want.items():
            self.assertGreater(len(files), 10, (k, len(files)))
        for engine, (index, total, base) in ENGINES.items():
            for k in range(1, self.N + 1):
                env = self.engine_env(engine, k, self.N)
                # Kubernetes gives the index only: N comes from --shard auto/N; the others
                # take auto alone, and auto/N as a cross-check.
                shards = ["auto/%d" % self.N] if total is None else ["auto", "auto/%d" % self.N]
                for shard in shards:
                    with self.subTest(engine=engine, k=k, shard=shard):
                        files, s = self.dry(job, shard, env)
                        self.assertEqual(files, want[k], "%s's job %d took other files than --shard %d/%d"
                                         % (engine, k, k, self.N))
                        frm = "%s=%d %s=%d" % (index, k - 1 + base, total, self.N) if total else \
                            "%s=%d --shard auto/%d" % (index, k - 1, self.N)
                        self.assertEqual(s["shard"], {"index": k, "count": self.N, "from": frm}, s)

    def test_shards_from_the_environment_merge_into_one_run(self):
        """GitLab's parallel: 4, run for real: the four jobs' manifests merge into the
        manifest of one run, and the tree is that run's."""
        job, pristine = self.make_job()
        single = self.path("single.json")
        self.run_ok(["-q", "--no-brotli", "--manifest", single, job])
        want_tree = tree_digest(job)
        with open(single, "rb") as f:
            want = f.read()
        shutil.rmtree(job)
        shutil.copytree(pristine, job, symlinks=True)
        parts = []
        for k in range(1, 5):
            m = self.path("shard-%d.json" % k)
            r = run(["-q", "--no-brotli", "--shard", "auto", "--manifest", m, job],
                    env=self.engine_env("gitlab", k, 4))
            self.assertEqual(r.rc, 0, r)
            parts.append(m)
        merged = self.path("merged.json")
        self.run_ok(["merge-manifests", merged] + parts)
        with open(merged, "rb") as f:
            self.assertEqual(f.read(), want)
        self.assertEqual(tree_digest(job), want_tree)

    def test_gitlab_job_without_parallel_is_the_whole_tree(self):
        """GitLab sets CI_NODE_TOTAL=1 and no CI_NODE_INDEX in a job without parallel:."""
        job, _ = self.make_job()
        every = run(["-v", "-n", "--json", "--no-brotli", job])
        self.assertEqual(every.rc, 0, every)
        files, s = self.dry(job, "auto", {"CI_NODE_TOTAL": "1"})
        self.assertEqual(files, taken(every)[0])
        self.assertEqual(s["shard"], {"index": 1, "count": 1, "from": "CI_NODE_TOTAL=1"})
        self.assertEqual(self.dry(job, "auto/1", {"CI_NODE_TOTAL": "1"})[0], files)

    def test_the_summary_says_which_shard_and_from_where(self):
        root = self.copy_site()
        r = run(["-v", "-n", "--shard", "auto", root], env={"CIRCLE_NODE_INDEX": "1", "CIRCLE_NODE_TOTAL": "2"})
        self.assertEqual(r.rc, 0, r)
        self.assertIn("; shard 2/2 (CIRCLE_NODE_INDEX=1 CIRCLE_NODE_TOTAL=2);", r.err_lines[-1])
        r = run(["-v", "-n", "--shard", "1/2", root])
        self.assertIn("; shard 1/2 (--shard);", r.err_lines[-1])
        r = run(["-n", "--json", "--shard", "1/2", root])
        self.assertEqual(r.summary()["shard"], {"index": 1, "count": 2, "from": "--shard"})
        r = run(["-n", "--json", root])
        self.assertNotIn("shard", r.summary())
        r = run(["-n", root])
        self.assertNotIn("shard", r.err, "the summary without -v names no shard")

    def test_the_last_shard_option_counts(self):
        root = self.copy_site()
        r = run(["-n", "--json", "--shard", "auto", "--shard", "2/3", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.summary()["shard"]["from"], "--shard")
        r = run(["-n", "--json", "--shard", "2/3", "--shard", "auto", root])
        self.assertEqual(r.rc, 2, r)
        # --help and --version need no shard.
        for flag in ("--help", "--version"):
            self.assertEqual(run(["--shard", "auto", flag]).rc, 0, flag)

    # (environment, --shard value, what the one error line must name)
    BAD = [
        ({}, "auto", ["CI_NODE_INDEX", "CI_NODE_TOTAL", "CIRCLE_NODE_INDEX", "CIRCLE_NODE_TOTAL",
                      "BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", "JOB_COMPLETION_INDEX",
                      "--shard K/N"]),
        ({}, "auto/4", ["CI_NODE_INDEX", "JOB_COMPLETION_INDEX"]),
        ({"CI_NODE_INDEX": "2"}, "auto", ["CI_NODE_INDEX", "CI_NODE_TOTAL is not"]),
        ({"CI_NODE_TOTAL": "4"}, "auto", ["CI_NODE_TOTAL='4'", "CI_NODE_INDEX is not"]),
        ({"CI_NODE_TOTAL": "1"}, "auto/4", ["auto/4", "CI_NODE_TOTAL=1"]),
        ({"CI_NODE_INDEX": "0", "CI_NODE_TOTAL": "4"}, "auto", ["CI_NODE_INDEX=0", "1..4"]),
        ({"CI_NODE_INDEX": "5", "CI_NODE_TOTAL": "4"}, "auto", ["CI_NODE_INDEX=5", "1..4"]),
        ({"CIRCLE_NODE_INDEX": "4", "CIRCLE_NODE_TOTAL": "4"}, "auto", ["CIRCLE_NODE_INDEX=4", "0..3"]),
        ({"CIRCLE_NODE_INDEX": "1", "CIRCLE_NODE_TOTAL": "4"}, "auto/3", ["auto/3", "CIRCLE_NODE_TOTAL=4"]),
        ({"BUILDKITE_PARALLEL_JOB": "x", "BUILDKITE_PARALLEL_JOB_COUNT": "4"}, "auto",
         ["BUILDKITE_PARALLEL_JOB='x'"]),
        ({"BUILDKITE_PARALLEL_JOB": "-1", "BUILDKITE_PARALLEL_JOB_COUNT": "4"}, "auto",
         ["BUILDKITE_PARALLEL_JOB='-1'"]),
        ({"BUILDKITE_PARALLEL_JOB": " 1", "BUILDKITE_PARALLEL_JOB_COUNT": "4"}, "auto",
         ["BUILDKITE_PARALLEL_JOB=' 1'"]),
        ({"BUILDKITE_PARALLEL_JOB": "1", "BUILDKITE_PARALLEL_JOB_COUNT": "0"}, "auto",
         ["BUILDKITE_PARALLEL_JOB_COUNT='0'"]),
        ({"BUILDKITE_PARALLEL_JOB": "1", "BUILDKITE_PARALLEL_JOB_COUNT": "99999999999"}, "auto",
         ["BUILDKITE_PARALLEL_JOB_COUNT='99999999999'"]),
        ({"JOB_COMPLETION_INDEX": "1"}, "auto", ["JOB_COMPLETION_INDEX", "auto/N"]),
        ({"JOB_COMPLETION_INDEX": "4"}, "auto/4", ["JOB_COMPLETION_INDEX=4", "0..3"]),
        ({"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2", "JOB_COMPLETION_INDEX": "0"}, "auto/2",
         ["CI_NODE_INDEX", "JOB_COMPLETION_INDEX", "both"]),
        # A value is not ours: a control byte cannot break the line or reach the terminal.
        ({"CIRCLE_NODE_INDEX": "1\x1b[2J\n", "CIRCLE_NODE_TOTAL": "4"}, "auto", ["CIRCLE_NODE_INDEX='1?[2J?'"]),
    ]

    def test_what_auto_cannot_use_is_a_usage_error_naming_the_variables(self):
        root = self.copy_site()
        for env, shard, names in self.BAD:
            with self.subTest(env=env, shard=shard):
                r = run(["--shard", shard, root], env=env)
                self.assertEqual(r.rc, 2, r)
                self.assertEqual(len(r.err_lines), 1, r)
                self.assertTrue(r.err.startswith("precompress: --shard auto"), r)
                for name in names:
                    self.assertIn(name, r.err)
                self.assertEqual(r.out, "", r)
        self.assertEqual([n for n in os.listdir(root) if n.endswith((".gz", ".br"))], [],
                         "a refused run wrote outputs")
        for bad in ("auto/0", "auto/x", "auto/65537", "autox", "auto/"):
            with self.subTest(shard=bad):
                r = run(["--shard", bad, root], env={"CI_NODE_INDEX": "1", "CI_NODE_TOTAL": "2"})
                self.assertEqual(r.rc, 2, r)
                self.assertIn("invalid --shard", r.err)


if __name__ == "__main__":
    main()
