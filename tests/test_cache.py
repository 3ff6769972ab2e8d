#!/usr/bin/python3
"""The content cache (--cache-dir), issue 3 item 3: results stored by content and options are
copied into a fresh tree instead of compressed again; a corrupt or truncated entry is detected
and never copied into the tree; concurrent runs may share one cache; --cache-max-size bounds it,
least recently used first, and a run that stores nothing does not trim it; stored rejections
spare compressing again. Every output that came from the cache must be the oracle's bytes with
its own source's mode and mtime."""
import sys

sys.dont_write_bytecode = True
import json
import os
import random
import stat
import subprocess
import time

from pctest import PROGRAM, PCTestCase, child_env, classify, fsb, gz_oracle, main, run, walk_all, words_data

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)
HDR = 48  # src/cache.c: magic, flags, payload length, limit, XXH3-128


def entries(cache):
    """{path: bytes} of every entry file (not temp files) in the cache."""
    res = {}
    for dirpath, _, files in os.walk(cache):
        for n in files:
            if not n.startswith("."):
                with open(os.path.join(dirpath, n), "rb") as f:
                    res[os.path.join(dirpath, n)] = f.read()
    return res


def temp_files(cache):
    return [n for _, _, files in os.walk(cache) for n in files if n.startswith(".")]


def summary_json(r):
    return json.loads(r.out)


class Base(PCTestCase):
    def tree(self, name, n=30, seed=0, size=3000):
        """A tree of n text files (distinct contents) plus one incompressible file."""
        root = self.path(name)
        os.makedirs(os.path.join(root, "d"))
        for i in range(n):
            with open(os.path.join(root, "d", "f%02d.js" % i), "wb") as f:
                f.write(words_data(size + 17 * i, seed=seed * 1000 + i))
        with open(os.path.join(root, "noise.bin.txt"), "wb") as f:
            f.write(os.urandom(5000))
        os.chmod(os.path.join(root, "d", "f01.js"), 0o600)
        os.utime(os.path.join(root, "d", "f02.js"), ns=(1_500_000_000_123_456_789, 1_600_000_000_987_654_321))
        return root

    def copy(self, src, name):
        dst = self.path(name)
        subprocess.run(["cp", "-a", src, dst], check=True)
        return dst

    def assertOracleTree(self, root, before, cls):
        self.assertTreeMatchesOracle(root, before, cls)
        broot = fsb(root)
        for rel, st in walk_all(root).items():
            if rel.endswith((b".gz", b".br")):
                src = os.stat(os.path.join(broot, rel.rsplit(b".", 1)[0]))
                self.assertEqual(stat.S_IMODE(st.st_mode), stat.S_IMODE(src.st_mode), rel)
                self.assertEqual(st.st_mtime_ns, src.st_mtime_ns, rel)

    def fresh_run(self, src, name, cache, *extra):
        """A fresh copy of src compressed with the cache: (root, run, summary)."""
        root = self.copy(src, name)
        cls, before = classify(root), walk_all(root)
        r = run(["--json", "--cache-dir", cache] + list(extra) + [root])
        self.assertEqual(r.rc, 0, r)
        self.assertOracleTree(root, before, cls)
        return root, r, summary_json(r)


class Cache(Base):
    def test_warm_cache_fills_a_fresh_copy_with_the_oracle_bytes(self):
        src = self.tree("src")
        cache = self.path("cache")
        _, _, s1 = self.fresh_run(src, "a", cache)
        self.assertEqual(s1["cached"], 0)
        self.assertGreater(len(entries(cache)), 0)
        _, _, s2 = self.fresh_run(src, "b", cache)
        self.assertEqual(s2["cached"], s1["compressed"], s2)

    def test_outputs_over_a_mebibyte_are_stored_and_checked_too(self):
        # An output that spilled to its temp file (over 1 MiB) is stored by reading it back;
        # smaller ones from memory. Both kinds must come back as the oracle's bytes, and a
        # damaged big entry must be a miss. gzip only: brotli 11 on megabytes takes seconds.
        src = self.tree("src", n=3)
        rnd = random.Random(7)
        text = words_data(500 * 64, seed=7)
        with open(os.path.join(src, "big.js"), "wb") as f:
            for k in range(1800):  # 1.8 MB, half random bytes: gzip keeps about 60%
                f.write(rnd.randbytes(500))
                f.write(text[500 * (k % 64):500 * (k % 64 + 1)])
        cache = self.path("cache")
        got = []
        for name in ("a", "b", "c"):
            root = self.copy(src, name)
            r = run(["--json", "--no-brotli", "--cache-dir", cache, root])
            self.assertEqual(r.rc, 0, r)
            got.append(summary_json(r))
            for rel in ("big.js", "d/f00.js", "d/f02.js"):
                p = os.path.join(root, rel)
                with open(p, "rb") as f:
                    want = gz_oracle(f.read())
                with open(p + ".gz", "rb") as f:
                    self.assertEqual(f.read(), want, "%s: %s.gz" % (name, rel))
            if name == "a":
                big = {p: b for p, b in entries(cache).items() if len(b) > (1 << 20) + HDR}
                self.assertEqual(len(big), 1, "the one entry over 1 MiB: %r" % sorted(big))
            if name == "b":
                for p, blob in big.items():  # one bit flipped mid-payload
                    at = HDR + (len(blob) - HDR) // 2
                    with open(p, "r+b") as f:
                        f.seek(at)
                        f.write(bytes([blob[at] ^ 0x40]))
        self.assertEqual(got[0]["cached"], 0, got[0])
        self.assertEqual(got[1]["cached"], got[0]["compressed"], got[1])
        self.assertEqual(got[2]["cached"], got[0]["compressed"] - 1, "big.js compressed again: %r" % got[2])

    def test_rejections_are_taken_from_the_cache(self):
        # An entry may say "rejected above LIMIT": at a limit up to that one the output is not
        # kept, without compressing. Proven by turning every stored payload into such a
        # rejection: a fresh copy then gets no output at all, though its files compress well.
        src = self.tree("src")
        cache = self.path("cache")
        _, _, s1 = self.fresh_run(src, "a", cache)
        self.assertGreater(s1["compressed"], 10)
        rejections = 0
        for p, blob in entries(cache).items():
            self.assertEqual(blob[:8], b"PCCACHE1", p)
            if blob[8] == 1:
                rejections += 1  # the incompressible file's, stored by the first run
                continue
            hdr = bytearray(HDR)
            hdr[:8] = b"PCCACHE1"
            hdr[8] = 1
            hdr[24:32] = (2**63).to_bytes(8, "little")
            with open(p, "wb") as f:
                f.write(hdr)
        self.assertEqual(rejections, 2, "one rejection per format for noise.bin.txt")
        root = self.copy(src, "b")
        r = run(["--json", "--cache-dir", cache, root])
        self.assertEqual(r.rc, 0, r)
        s2 = summary_json(r)
        self.assertEqual(s2["compressed"], 0, s2)
        self.assertEqual(s2["skipped"].get("ratio"), s1["compressed"] + 1, s2)
        self.assertEqual([rel for rel in walk_all(root) if rel.endswith((b".gz", b".br"))], [])

    def test_corrupt_and_truncated_entries_are_never_copied(self):
        src = self.tree("src")
        cache = self.path("cache")
        self.fresh_run(src, "a", cache)
        ents = entries(cache)
        damaged = 0
        for i, (p, blob) in enumerate(sorted(ents.items())):
            if len(blob) <= HDR + 2:
                continue  # a rejection: no payload
            with open(p, "r+b") as f:
                if i % 2:
                    f.truncate(HDR + (len(blob) - HDR) // 2)  # truncated payload
                else:
                    f.seek(len(blob) - 1)  # one bit flipped, length kept
                    f.write(bytes([blob[-1] ^ 0x01]))
            damaged += 1
        self.assertGreater(damaged, 10)
        # Every damaged entry is a miss: the files are compressed, outputs are the oracle's.
        _, _, s2 = self.fresh_run(src, "b", cache)
        self.assertEqual(s2["cached"], 0, s2)
        self.assertEqual(s2["failed"], 0, s2)
        # The damaged entries were replaced by good ones: the next fresh copy is all cached.
        _, _, s3 = self.fresh_run(src, "c", cache)
        self.assertEqual(s3["cached"], s3["compressed"], s3)

    def test_concurrent_runs_share_one_cache(self):
        srcs = [self.tree("src%d" % k, n=60, seed=k % 2) for k in range(4)]
        cache = self.path("cache")
        roots, befores, clss = [], [], []
        for k, s in enumerate(srcs):
            root = self.copy(s, "run%d" % k)
            roots.append(root)
            befores.append(walk_all(root))
            clss.append(classify(root))
        procs = [subprocess.Popen([PROGRAM, "-q", "--cache-dir", cache, root], env=child_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for root in roots]
        for p in procs:
            out, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err)
        for root, before, cls in zip(roots, befores, clss):
            self.assertOracleTree(root, before, cls)
        # No temp file left, no half entry: a fresh copy of each is served from the cache whole.
        self.assertEqual(temp_files(cache), [])
        for k, s in enumerate(srcs[:2]):
            _, _, sk = self.fresh_run(s, "again%d" % k, cache)
            self.assertEqual(sk["cached"], sk["compressed"], sk)

    def test_max_size_evicts_least_recently_used_and_only_after_storing(self):
        cache = self.path("cache")
        old = self.tree("old", n=20, seed=1)
        new = self.tree("new", n=20, seed=2)
        self.fresh_run(old, "a", cache)
        old_entries = set(entries(cache))
        # Make the first run's entries clearly older than anything the next run touches.
        past = time.time() - 3600
        for p in old_entries:
            os.utime(p, (past, past))
        self.fresh_run(new, "b", cache)
        all_entries = entries(cache)
        new_bytes = sum(os.path.getsize(p) for p in all_entries if p not in old_entries)
        total = sum(os.path.getsize(p) for p in all_entries)
        self.assertGreater(total, new_bytes)
        # A run that stores nothing (everything from the cache) leaves the cache as it is,
        # whatever the limit.
        before = entries(cache)
        _, _, s = self.fresh_run(new, "c", cache, "--cache-max-size", str(new_bytes))
        self.assertEqual(s["cached"], s["compressed"], s)
        self.assertEqual(set(entries(cache)), set(before), "a run that stored nothing trimmed the cache")
        # A run that stores entries trims to the limit, oldest first: the old tree's entries go.
        with open(os.path.join(new, "d", "extra.js"), "wb") as f:
            f.write(words_data(4000, seed=4242))
        _, _, s = self.fresh_run(new, "d", cache, "--cache-max-size", str(new_bytes + 6000))
        left = entries(cache)
        self.assertLessEqual(sum(len(b) for b in left.values()), new_bytes + 6000)
        self.assertEqual(set(left) & old_entries, set(), "least recently used entries were kept")
        self.assertGreaterEqual(len(set(left) - old_entries), len(set(all_entries) - old_entries))


if __name__ == "__main__":
    main()
