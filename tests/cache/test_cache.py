#!/usr/bin/python3
"""The content cache (--cache-dir, one SQLite store): results
stored by content and options are copied into a fresh tree instead of compressed again; a
corrupt, truncated or moved entry (its checksum binds it to its key) is detected and never
copied into the tree; concurrent runs may share one store; --cache-max-size bounds it, least
recently used first, compacts it, and a run that stores nothing does not trim it; stored
rejections spare compressing again; a store killed mid-write still opens. Every output that came
from the cache must be the oracle's bytes with its own source's mode and mtime."""
import sys

sys.dont_write_bytecode = True
import fcntl
import json
import os
import random
import stat
import subprocess
import time

from pctest import (PROGRAM, STORE, PCTestCase, child_env, classify, entry_sum, fsb, gz_oracle, main, run,
                    store_exec, store_path, store_rows, walk_all, words_data)

os.environ.pop("PRECOMPRESS_CACHE_DIR", None)


def entries(cache):
    """{id: row} of every entry in the store."""
    return {r["id"]: r for r in store_rows(cache)}


def left_over(cache):
    """Files beside the store once every run has ended: the last connection to close
    checkpoints SQLite's -wal into the store and removes it and the -shm."""
    return sorted(n for n in os.listdir(cache) if n != STORE)


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
        formats = ("gz",) if "--no-brotli" in extra else ("gz", "br")
        cls, before = classify(root, formats=formats), walk_all(root)
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
                big = [e for e in entries(cache).values() if len(e["data"]) > (1 << 20)]
                self.assertEqual(len(big), 1, "the one entry over 1 MiB")
            if name == "b":
                for e in big:  # one bit flipped mid-payload
                    data = bytearray(e["data"])
                    data[len(data) // 2] ^= 0x40
                    store_exec(cache, ("UPDATE payload SET data = ? WHERE id = ?", (bytes(data), e["id"])))
        self.assertEqual(got[0]["cached"], 0, got[0])
        self.assertEqual(got[1]["cached"], got[0]["compressed"], got[1])
        self.assertEqual(got[2]["cached"], got[0]["compressed"] - 1, "big.js compressed again: %r" % got[2])

    def test_identical_files_on_a_warm_cache_copy_the_leaders_hit(self):
        # A leader whose outputs come from the cache hands its bytes to the files with the
        # same content: from the store's row for a small payload (held until the followers
        # have their copy), read back from its temp for one streamed from a blob (over
        # 256 KiB). Every copy must be the oracle's bytes, with its own mode and times.
        src = self.tree("src", n=4)
        rnd = random.Random(11)
        text = words_data(500 * 64, seed=11)
        big = b"".join(rnd.randbytes(400) + text[500 * (k % 64):500 * (k % 64 + 1)]
                       for k in range(800))  # 720 KB: its .gz is over 256 KiB
        small = words_data(2500, seed=5)
        for i in range(3):
            for name, data in (("big%d.js" % i, big), ("small%d.css" % i, small)):
                p = os.path.join(src, name)
                with open(p, "wb") as f:
                    f.write(data)
                os.utime(p, ns=(1_500_000_000_000_000_000 + i, 1_600_000_000_000_000_000 + i))
        os.chmod(os.path.join(src, "small2.css"), 0o640)
        cache = self.path("cache")
        _, _, s1 = self.fresh_run(src, "a", cache, "--no-brotli")
        self.assertEqual(s1["deduped"], 4, s1)
        sizes = sorted(len(e["data"]) for e in entries(cache).values())
        self.assertGreater(sizes[-1], 256 << 10, "the big file's entry takes the blob path")
        root, _, s2 = self.fresh_run(src, "b", cache, "--no-brotli")
        self.assertEqual((s2["cached"], s2["deduped"]), (s1["compressed"] - 4, 4), s2)
        for i in range(3):  # fresh_run checked the bytes; the copies are really there
            for name in ("big%d.js" % i, "small%d.css" % i):
                self.assertTrue(os.path.exists(os.path.join(root, name + ".gz")), name)

    def test_rejections_are_taken_from_the_cache(self):
        # An entry may say "rejected above LIMIT": at a limit up to that one the output is not
        # kept, without compressing. Proven by turning every stored payload into such a
        # rejection: a fresh copy then gets no output at all, though its files compress well.
        src = self.tree("src")
        cache = self.path("cache")
        _, _, s1 = self.fresh_run(src, "a", cache)
        self.assertGreater(s1["compressed"], 10)
        rejections, forged = 0, []
        for e in entries(cache).values():
            self.assertEqual(e["sum"], entry_sum(e["key"], e["lim"], e["data"]), e["id"])
            if e["lim"] >= 0:
                rejections += 1  # the incompressible file's, stored by the first run
                self.assertEqual(e["data"], b"")
                continue
            lim = 2**63 - 1  # "rejected above any limit", with the checksum a real one has
            forged.append(("UPDATE payload SET lim = ?, data = ?, sum = ? WHERE id = ?",
                           (lim, b"", entry_sum(e["key"], lim, b""), e["id"])))
        store_exec(cache, *forged)
        self.assertEqual(rejections, 2, "one rejection per format for noise.bin.txt")
        root = self.copy(src, "b")
        r = run(["--json", "--cache-dir", cache, root])
        self.assertEqual(r.rc, 0, r)
        s2 = summary_json(r)
        self.assertEqual(s2["compressed"], 0, s2)
        self.assertEqual(s2["skipped"].get("ratio"), s1["compressed"] + 1, s2)
        self.assertEqual([rel for rel in walk_all(root) if rel.endswith((b".gz", b".br"))], [])

    def test_a_rejection_at_a_lower_limit_is_replaced_by_the_payload(self):
        # A run at --max-ratio 0.05 stores only rejections; one at the default limit cannot use
        # them, compresses, and stores its payloads under the same keys: each entry is replaced
        # whole (the writer's insert meets its key), none is doubled, and a fresh copy is then
        # served from the cache.
        src = self.tree("src")
        cache = self.path("cache")
        r = run(["--json", "--max-ratio", "0.05", "--cache-dir", cache, self.copy(src, "a")])
        self.assertEqual(r.rc, 0, r)
        first = entries(cache)
        self.assertGreater(len(first), 20)
        self.assertTrue(all(e["lim"] >= 0 for e in first.values()), first)
        _, _, s2 = self.fresh_run(src, "b", cache)
        self.assertEqual(s2["cached"], 0, s2)
        self.assertGreater(s2["compressed"], 10, s2)
        second = entries(cache)
        self.assertEqual(sorted(e["key"] for e in second.values()),
                         sorted(e["key"] for e in first.values()))
        self.assertEqual(sum(1 for e in second.values() if e["lim"] < 0), 2 * s2["compressed"])
        for e in second.values():
            self.assertEqual(e["sum"], entry_sum(e["key"], e["lim"], e["data"]), e["id"])
        _, _, s3 = self.fresh_run(src, "c", cache)
        self.assertEqual(s3["cached"], s3["compressed"], s3)

    def test_corrupt_truncated_and_moved_entries_are_never_copied(self):
        src = self.tree("src")
        cache = self.path("cache")
        self.fresh_run(src, "a", cache)
        payloads = [e for e in entries(cache).values() if e["lim"] < 0]
        self.assertGreater(len(payloads), 20)
        edits = []
        # Pairs swap keys: each entry, whole and with its own checksum, now sits under another
        # file's key (what a copy between entries did to the old file-per-entry cache).
        moved = payloads[:8]
        for a, b in zip(moved[0::2], moved[1::2]):
            edits += [("UPDATE entry SET key = ? WHERE id = ?", (b"x" * len(a["key"]), a["id"])),
                      ("UPDATE entry SET key = ? WHERE id = ?", (a["key"], b["id"])),
                      ("UPDATE entry SET key = ? WHERE id = ?", (b["key"], a["id"]))]
        for i, e in enumerate(payloads[8:]):
            data = bytearray(e["data"])
            if i % 3 == 0:
                data = data[:len(data) // 2]  # truncated
            elif i % 3 == 1:
                data[-1] ^= 0x01  # one bit flipped, length kept
            else:
                data[0] ^= 0x80
            edits.append(("UPDATE payload SET data = ? WHERE id = ?", (bytes(data), e["id"])))
        store_exec(cache, *edits)
        # Every damaged entry is a miss: the files are compressed, outputs are the oracle's.
        _, _, s2 = self.fresh_run(src, "b", cache)
        self.assertEqual(s2["cached"], 0, s2)
        self.assertEqual(s2["failed"], 0, s2)
        # The damaged entries were replaced by good ones: the next fresh copy is all cached.
        for e in entries(cache).values():
            self.assertEqual(e["sum"], entry_sum(e["key"], e["lim"], e["data"]), e["id"])
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
        # Nothing left beside the store, no half entry: a fresh copy of each is served from the
        # cache whole.
        self.assertEqual(left_over(cache), [])
        for k, s in enumerate(srcs[:2]):
            _, _, sk = self.fresh_run(s, "again%d" % k, cache)
            self.assertEqual(sk["cached"], sk["compressed"], sk)

    def test_shard_runs_on_one_machine_share_one_store(self):
        # Two --shard runs over one tree at once, one store: both succeed, and together they
        # stored every result (a fresh copy is then all cached).
        src = self.tree("src", n=120)
        cache = self.path("cache")
        root = self.copy(src, "both")
        cls, before = classify(root), walk_all(root)
        procs = [subprocess.Popen([PROGRAM, "-q", "--shard", "%d/2" % k, "--cache-dir", cache, root],
                                  env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for k in (1, 2)]
        for p in procs:
            _, err = p.communicate(timeout=300)
            self.assertEqual(p.returncode, 0, err)
        self.assertOracleTree(root, before, cls)
        self.assertEqual(left_over(cache), [])
        _, _, s = self.fresh_run(src, "again", cache)
        self.assertEqual(s["cached"], s["compressed"], s)

    def test_max_size_evicts_least_recently_used_and_only_after_storing(self):
        cache = self.path("cache")
        old = self.tree("old", n=20, seed=1)
        new = self.tree("new", n=20, seed=2)
        self.fresh_run(old, "a", cache)
        old_ids = set(entries(cache))
        # The first run's entries clearly older than anything the next run touches (last
        # uses are kept by the hour: src/store/storeint.h PC__STORE_TOUCH_AGE).
        store_exec(cache, ("UPDATE entry SET used = used - 86400", ()))
        self.fresh_run(new, "b", cache)
        all_entries = entries(cache)
        new_bytes = sum(e["bytes"] for i, e in all_entries.items() if i not in old_ids)
        total = sum(e["bytes"] for e in all_entries.values())
        self.assertGreater(total, new_bytes)
        # A run that stores nothing (everything from the cache) leaves the cache as it is,
        # whatever the limit.
        before = set(entries(cache))
        _, _, s = self.fresh_run(new, "c", cache, "--cache-max-size", str(new_bytes))
        self.assertEqual(s["cached"], s["compressed"], s)
        self.assertEqual(set(entries(cache)), before, "a run that stored nothing trimmed the cache")
        # A run that stores entries trims to the limit, oldest first: the old tree's entries go.
        with open(os.path.join(new, "d", "extra.js"), "wb") as f:
            f.write(words_data(4000, seed=4242))
        _, _, s = self.fresh_run(new, "d", cache, "--cache-max-size", str(new_bytes + 6000))
        left = entries(cache)
        self.assertLessEqual(sum(e["bytes"] for e in left.values()), new_bytes + 6000)
        self.assertEqual(set(left) & old_ids, set(), "least recently used entries were kept")
        self.assertGreaterEqual(len(set(left) - old_ids), len(set(all_entries) - old_ids))
        self.assertEqual(left_over(cache), [])

    def test_trim_compacts_the_store(self):
        # Many entries, then a limit that keeps a few: the freed pages go back (VACUUM), so the
        # file CI uploads is near what it holds.
        cache = self.path("cache")
        src = self.tree("src", n=200, size=20000)
        self.fresh_run(src, "a", cache, "--no-brotli")
        full = os.path.getsize(store_path(cache))
        self.assertGreater(full, 200 * 5000)
        with open(os.path.join(src, "d", "extra.js"), "wb") as f:
            f.write(words_data(4000, seed=99))
        self.fresh_run(src, "b", cache, "--no-brotli", "--cache-max-size", "50000")
        payload = sum(e["bytes"] for e in entries(cache).values())
        self.assertLessEqual(payload, 50000)
        small = os.path.getsize(store_path(cache))
        self.assertLess(small, full / 4, "the store was not compacted after the trim")

    def test_store_size_is_near_its_payload(self):
        # The store holds at most 1.25x its payload on the 100,000-file corpus
        # (bench/README.md, "Content cache"); here a smaller tree of the same kind (a few
        # KiB per file), plus what a nearly empty store costs.
        cache = self.path("cache")
        src = self.tree("src", n=400, size=2500)
        self.fresh_run(src, "a", cache)
        payload = sum(e["bytes"] + len(e["key"]) + len(e["sum"]) for e in entries(cache).values())
        self.assertLessEqual(os.path.getsize(store_path(cache)), 1.25 * payload + 6 * 16384)


class Store(Base):
    def test_store_is_private_and_other_files_in_the_directory_are_left_alone(self):
        cache = self.path("cache")
        os.makedirs(cache, mode=0o700)
        with open(os.path.join(cache, "README"), "w") as f:
            f.write("mine")
        self.fresh_run(self.tree("src"), "a", cache)
        self.assertEqual(sorted(os.listdir(cache)), ["README", STORE])
        self.assertEqual(stat.S_IMODE(os.stat(store_path(cache)).st_mode), 0o600)

    def test_a_killed_runs_store_temp_is_reaped(self):
        # What a run killed while making the store leaves: its temp. The next run that writes
        # removes it; a temp another run holds (locked) and names that only look alike stay.
        cache = self.path("cache")
        os.makedirs(cache, mode=0o700)
        left, held = ".%s.AbC123.tmp" % STORE, ".%s.XyZ789.tmp" % STORE
        alike = [".%s.AbC12.tmp" % STORE, ".%s.AbC123.tmp~" % STORE, ".x%s.AbC123.tmp" % STORE,
                 ".app.js.gz.AbC123.tmp"]
        for name in [left, held] + alike:
            with open(os.path.join(cache, name), "wb") as f:
                f.write(b"SQLite format 3\0")
            os.chmod(os.path.join(cache, name), 0o600)
        with open(os.path.join(cache, held), "rb") as h:
            fcntl.flock(h, fcntl.LOCK_EX)
            src = self.tree("src")
            self.fresh_run(src, "a", cache)
        self.assertEqual(sorted(os.listdir(cache)), sorted([held, STORE] + alike))
        # A dry run writes nothing, so it removes nothing either.
        with open(os.path.join(cache, left), "wb") as f:
            f.write(b"x")
        r = run(["-q", "-n", "--cache-dir", cache, self.copy(src, "b")])
        self.assertEqual(r.rc, 0, r)
        self.assertIn(left, os.listdir(cache))

    def test_old_per_file_cache_is_ignored_with_a_note(self):
        cache = self.path("cache")
        os.makedirs(os.path.join(cache, "v1", "ab"), mode=0o700)
        with open(os.path.join(cache, "v1", "ab", "entry"), "wb") as f:
            f.write(b"PCCACHE1" + bytes(40))
        root, r, _ = self.fresh_run(self.tree("src"), "a", cache)
        notes = [l for l in r.err_lines if "v1" in l]
        self.assertEqual(len(notes), 1, r)
        self.assertIn("old per-file cache", notes[0])
        self.assertTrue(os.path.exists(os.path.join(cache, "v1", "ab", "entry")), "the old cache was touched")

    def test_not_a_store_is_reported_and_the_run_goes_on(self):
        for name, content in (("garbage", b"not a database at all" * 100), ("empty", b"")):
            with self.subTest(store=name):
                cache = self.path("cache-" + name)
                os.makedirs(cache, mode=0o700)
                with open(store_path(cache), "wb") as f:
                    f.write(content)
                os.chmod(store_path(cache), 0o600)
                root = self.copy(self.tree("src-" + name), "a-" + name)
                cls, before = classify(root), walk_all(root)
                r = run(["--cache-dir", cache, root])
                if name == "empty":  # a store just created by a run killed before its schema
                    self.assertEqual(r.rc, 0, r)
                else:
                    self.assertEqual(r.rc, 1, r)
                    self.assertIn("precompress: %s: not a precompress cache store, or a damaged one" % cache,
                                  r.err_lines, r)
                self.assertOracleTree(root, before, cls)

    def test_killed_writer_leaves_a_store_that_opens_with_right_entries(self):
        # SIGKILL at many moments of runs that fill the store (gzip and brotli: about a second
        # and a half on two quiet cores): every later run opens it, and every entry it serves is
        # right (the oracle tree check), whatever was lost.
        cache = self.path("cache")
        src = self.tree("src", n=300, size=6000)
        killed = 0
        for k, delay in enumerate((0.1, 0.2, 0.35, 0.5, 0.7, 1.0)):
            root = self.copy(src, "k%d" % k)
            p = subprocess.Popen([PROGRAM, "-q", "-j2", "--cache-dir", cache, root],
                                 env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(delay)
            p.kill()
            p.wait()
            killed += p.returncode == -9
        self.assertGreaterEqual(killed, 3, "too few runs were still going when killed")
        for e in entries(cache).values():
            self.assertEqual(e["sum"], entry_sum(e["key"], e["lim"], e["data"]), e["id"])
        _, r, s = self.fresh_run(src, "after", cache)
        self.assertEqual(s["failed"], 0, s)
        _, r, s = self.fresh_run(src, "again", cache)
        self.assertEqual(s["cached"], s["compressed"], s)


if __name__ == "__main__":
    main()
