#!/usr/bin/python3
"""Round trip and byte identity of every output against the Python oracle."""
import sys

sys.dont_write_bytecode = True
import os

from pctest import (PCTestCase, classify, decode, expected_outputs, fsb, gz_oracle, br_oracle,
                    have_zstd_build, listing, main, run, source_snapshot, walk_all, words_data)


class FixtureSite(PCTestCase):
    def test_site_outputs_are_the_oracle_bytes_and_nothing_else(self):
        root = self.copy_site()
        before = walk_all(root)
        snap = source_snapshot(root)
        cls = classify(root)
        want = expected_outputs(cls)
        # The fixtures must exercise both sides of the rule, or this test proves little.
        for must in (b"css/app.css.gz", b"css/app.css.br", b"index.html.gz", b"js/app.js.map.br",
                     b"vendor/lib/deep/x.js.gz", b"docs/read me.txt.gz", b"fonts/icons.ttf.br",
                     "docs/café – menü.css.br".encode()):
            self.assertIn(must, want)
        for never in (b"robots.txt.gz", b"robots.txt.br", b"assets/random.bin.gz", b"empty.txt.gz",
                      b"img/photo.png.gz", b"fonts/inter.woff2.br"):
            self.assertNotIn(never, want)

        r = run(["-q", root])
        self.assertEqual(r.rc, 0, r)
        self.assertEqual(r.err, "", "-q run printed on stderr: %r" % r)
        self.assertEqual(r.out, "", "-q run printed on stdout: %r" % r)
        self.assertTreeMatchesOracle(root, before, cls)
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)

    def test_second_run_gives_same_bytes(self):
        root = self.copy_site()
        n = len(expected_outputs(classify(root)))
        self.assertGreater(n, 10)
        self.run_ok(["-q", root])
        first = {k: v[5] for k, v in listing(root).items()}
        self.assertEqual(len([k for k in first if k.endswith((b".gz", b".br"))]), n)
        self.run_ok(["-q", root])
        second = {k: v[5] for k, v in listing(root).items()}
        self.assertEqual(first, second)

    def test_file_path_argument(self):
        root = self.copy_site()
        before = walk_all(root)
        self.run_ok(["-q", os.path.join(root, "css", "app.css")])
        new = sorted(set(walk_all(root)) - set(before))
        self.assertEqual(new, [b"css/app.css.br", b"css/app.css.gz"])
        with open(os.path.join(root, "css", "app.css"), "rb") as f:
            data = f.read()
        with open(os.path.join(root, "css", "app.css.gz"), "rb") as f:
            self.assertEqual(f.read(), gz_oracle(data))
        with open(os.path.join(root, "css", "app.css.br"), "rb") as f:
            self.assertEqual(f.read(), br_oracle(data))

    def test_gzip_levels_option_roundtrip(self):
        # Non-default levels: no byte oracle promised, but outputs must decode.
        root = self.copy_site()
        self.run_ok(["-q", "--gzip-level", "1", "--brotli-quality", "4", root])
        n = 0
        for rel in walk_all(root):
            for fmt in ("gz", "br"):
                if rel.endswith(b"." + fmt.encode()):
                    src = os.path.join(fsb(root), rel[: -len(fmt) - 1])
                    with open(src, "rb") as f:
                        self.assertEqual(decode(fmt, os.path.join(fsb(root), rel)), f.read(), rel)
                    n += 1
        self.assertGreater(n, 10)


class Streaming(PCTestCase):
    """A file above 4 MiB goes through the streaming path; its bytes must not change."""

    def test_large_file_identical_to_oracle(self):
        root = self.path("big")
        os.makedirs(os.path.join(root, "js"))
        data = words_data(int(4.5 * 1024 * 1024) + 12345, seed=99)
        with open(os.path.join(root, "js", "bundle.js"), "wb") as f:
            f.write(data)
        small = words_data(200 * 1024, seed=7)
        with open(os.path.join(root, "small.txt"), "wb") as f:
            f.write(small)
        snap = source_snapshot(root)
        args = ["-q", root]
        zst = have_zstd_build()
        if zst:
            args.insert(0, "--zstd")
        self.run_ok(args, timeout=300)
        for name, blob in (("js/bundle.js", data), ("small.txt", small)):
            full = os.path.join(root, name)
            with open(full + ".gz", "rb") as f:
                got = f.read()
            self.assertEqual(len(got), len(gz_oracle(blob)), name + ".gz size differs from the oracle")
            self.assertEqual(got, gz_oracle(blob), name + ".gz bytes differ from the oracle")
            with open(full + ".br", "rb") as f:
                got = f.read()
            want = br_oracle(blob)
            self.assertEqual(len(got), len(want), name + ".br size differs from the oracle")
            self.assertEqual(got, want, name + ".br bytes differ from the oracle")
            if zst:
                self.assertEqual(decode("zst", full + ".zst"), blob, name + ".zst does not decode")
        self.assertSourcesUnchanged(snap, root)
        self.assertNoTemps(root)


class Scheduling(PCTestCase):
    """Files that brotli streams (over 256 KiB) take tens of MiB each at quality 11 and start only
    while the memory budget holds them; small files of a directory run as one unit. Whatever
    the order this gives, every output is the oracle's and the manifest is the same at any -j.
    The order itself: largest unit first, whatever the walk order (a scheduler that runs the
    units as the walk found them fails test_largest_unit_first)."""

    def test_largest_unit_first(self):
        """The walk is over before the first unit starts (a tree of fewer entries than one walk
        step takes), so the scheduler picks among all of them. At -j1 the units run one after
        the other and -v prints each file as its unit ends: the -v order is the start order,
        with no timing in it. The files over 64 KiB (each a unit of its own) must come largest
        first, then the small files' unit (files of 64 KiB or less of one directory, 80 KiB
        together). Their sizes are shuffled against their names, so that no walk order (by
        name either way, files or directories first) is the largest-first order. At -j2 two
        units start at once before any ends: the peak estimate in flight passes the largest
        unit's alone."""
        root = self.path("order")
        big = {"n1.js": 300 << 10, "n2.js": 1536 << 10, "n3.js": 100 << 10, "n4.js": 600 << 10,
               "n5.js": 200 << 10}
        files = {rel: words_data(size, seed=60 + i) for i, (rel, size) in enumerate(sorted(big.items()))}
        for i in range(40):
            files["a/s%02d.css" % i] = words_data(1024 + 37 * i, seed=200 + i)
        for rel, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "wb") as f:
                f.write(data)
        order = {}
        peak = {}
        for jobs in ("1", "2"):
            r = self.run_ok(["-v", "--json", "--no-brotli", "-j", jobs, root])
            order[jobs] = [os.path.relpath(l.split(" ", 2)[1], root) for l in r.out_lines[:-1]]
            self.assertEqual(sorted(order[jobs]), sorted(files), r)
            m = r.summary()["memory"]
            self.assertEqual(m["ran_alone"], 0, m)
            peak[jobs] = m["peak_estimate"]
        want = sorted(big, key=big.get, reverse=True)
        self.assertEqual(order["1"][:len(big)], want,
                         "at -j1 the units must start largest first, not in the walk's order: %r" % order["1"])
        self.assertGreater(peak["2"], peak["1"], "at -j2 two units never ran at once")

    def test_big_units_and_small_units_at_any_jobs(self):
        root = self.path("sched")
        files = {}
        # Estimated at about 30, 26, 15 and 13 MiB (codec.c): at -j2 (budget 48 MiB) the second
        # largest waits for the largest, the third fits beside it, the last is a small unit.
        for i, size in enumerate((1536 * 1024 + 7, 1229 * 1024, 400 * 1024, 200 * 1024)):
            files[os.path.join("big", "b%d.js" % i)] = words_data(size, seed=40 + i)
        for d in range(3):
            for i in range(70):
                files[os.path.join("small%d" % d, "s%02d.css" % i)] = words_data(150 + 61 * i, seed=d * 100 + i)
        for rel, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "wb") as f:
                f.write(data)
        cls = classify(root)
        before = walk_all(root)
        manifests = []
        for jobs in ("1", "2", "7"):
            with self.subTest(jobs=jobs):
                for rel in list(walk_all(root)):
                    if rel not in before:
                        os.unlink(os.path.join(fsb(root), rel))
                man = self.path("m%s.json" % jobs)
                self.run_ok(["-q", "-j", jobs, "--manifest", man, root], timeout=300)
                self.assertTreeMatchesOracle(root, before, cls, extra_ok=())
                with open(man, "rb") as f:
                    manifests.append(f.read())
        self.assertEqual(manifests[0], manifests[1], "-j1 and -j2 manifests differ")
        self.assertEqual(manifests[0], manifests[2], "-j1 and -j7 manifests differ")


if __name__ == "__main__":
    main()
