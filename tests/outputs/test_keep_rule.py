#!/usr/bin/python3
"""The keep rule at exactly the boundary and one byte either side.

Inputs are R (seeded random bytes, incompressible) + a run of one byte; the
oracle gives the exact output size, so we can search for inputs whose output
sits exactly on out*den == in*num and for neighbours that miss or make it by
one byte. The tool must keep an output iff the oracle says the rule holds.
"""
import sys

sys.dont_write_bytecode = True
import os
import random

from pctest import (PCTestCase, br_oracle, gz_oracle, keeps, load_manifest, main, manifest_by_path,
                    parse_verbose, run)

BASE = random.Random(4242).randbytes(8000)


def search(oracle, num, den, filler, ks, mrange, delta=0, cond=lambda d: True):
    """First R[:k] + filler*m with (len(oracle(x)) - delta) * den == len(x) * num and cond(x)."""
    for k in ks:
        for m in mrange(k):
            i = k + m
            if (i * num) % den:
                continue
            d = BASE[:k] + filler * m
            o = len(oracle(d))
            if (o - delta) * den == i * num and cond(d):
                return d
    raise AssertionError("no boundary input found: widen the search")


def osz(oracle, d):
    return len(oracle(d))


class KeepRule(PCTestCase):
    def check_cases(self, cases, oracle, fmt, extra_args, num, den):
        root = self.path("tree")
        os.makedirs(root)
        for name, data in cases.items():
            with open(os.path.join(root, name), "wb") as f:
                f.write(data)
        expect = {}
        for name, data in cases.items():
            o = osz(oracle, data)
            expect[name] = keeps(o, len(data), num, den)
        # The cases must straddle the boundary, else the test proves nothing.
        self.assertIn(True, expect.values())
        self.assertIn(False, expect.values())
        man = self.path("m.json")
        r = run(extra_args + ["-v", "--manifest", man, root])
        self.assertEqual(r.rc, 0, r)
        m, _ = load_manifest(man)
        byp = manifest_by_path(m)
        verbose = parse_verbose(r, root)
        for name, data in sorted(cases.items()):
            o = osz(oracle, data)
            out = os.path.join(root, name + "." + fmt)
            what = "%s: in=%d out=%d (out*%d=%d vs in*%d=%d)" % (name, len(data), o, den, o * den, num, len(data) * num)
            e = byp[name.encode()]
            if expect[name]:
                self.assertTrue(os.path.isfile(out), "rule holds but no output: " + what)
                with open(out, "rb") as f:
                    self.assertEqual(f.read(), oracle(data), "bytes differ from the oracle: " + what)
                self.assertEqual(e.get(fmt), {"size": o}, "manifest: " + what)
                self.assertEqual(verbose.get(name.encode(), (None,))[0], "compressed", what)
            else:
                self.assertFalse(os.path.lexists(out), "rule fails but output kept: " + what)
                self.assertEqual(e.get(fmt), {"skipped": "ratio"}, "manifest: " + what)
                self.assertEqual(verbose.get(name.encode()), ("skipped", "ratio"), what)

    def test_gzip_95_percent(self):
        num, den = 95, 100
        sz = lambda d: osz(gz_oracle, d)
        ks = range(1000, 4000, 7)
        mr = lambda k: range(0, 400)
        exact = search(gz_oracle, num, den, b"a", ks, mr,
                       cond=lambda d: not keeps(sz(d[:-1]), len(d) - 1) and keeps(sz(d + b"a"), len(d) + 1))
        over = search(gz_oracle, num, den, b"a", range(1500, 4000, 7), mr, delta=1)   # one byte too big
        under = search(gz_oracle, num, den, b"a", range(2000, 4000, 7), mr, delta=-1)  # one byte to spare
        cases = {
            "exact.txt": exact,                 # out*100 == in*95: kept
            "exact-minus-1.txt": exact[:-1],    # one input byte less, same output: not kept
            "exact-plus-1.txt": exact + b"a",   # one input byte more: kept
            "over-by-1.txt": over,              # (out-1)*100 == in*95: not kept
            "under-by-1.txt": under,            # (out+1)*100 == in*95: kept
        }
        self.assertEqual(sz(exact) * 100, len(exact) * 95)
        self.assertFalse(keeps(sz(over), len(over)))
        self.assertTrue(keeps(sz(under), len(under)))
        self.check_cases(cases, gz_oracle, "gz", ["--no-brotli"], num, den)

    def test_gzip_max_ratio_half(self):
        num, den = 50, 100
        sz = lambda d: osz(gz_oracle, d)
        mr = lambda k: range(k, k + 400)
        exact = search(gz_oracle, num, den, b"\0", range(200, 2000, 3), mr,
                       cond=lambda d: not keeps(sz(d[:-1]), len(d) - 1, 1, 2) and keeps(sz(d + b"\0"), len(d) + 1, 1, 2))
        over = search(gz_oracle, num, den, b"\0", range(300, 2000, 3), mr, delta=1)
        under = search(gz_oracle, num, den, b"\0", range(400, 2000, 3), mr, delta=-1)
        cases = {
            "half.txt": exact,
            "half-minus-1.txt": exact[:-1],
            "half-plus-1.txt": exact + b"\0",
            "half-over-by-1.txt": over,
            "half-under-by-1.txt": under,
        }
        self.assertEqual(sz(exact) * 2, len(exact))
        self.check_cases(cases, gz_oracle, "gz", ["--no-brotli", "--max-ratio", "0.5"], num, den)

    def test_brotli_95_percent(self):
        num, den = 95, 100
        sz = lambda d: osz(br_oracle, d)
        mr = lambda k: range(0, 200)
        exact = search(br_oracle, num, den, b"a", range(300, 1500, 7), mr,
                       cond=lambda d: not keeps(sz(d[:-1]), len(d) - 1) and keeps(sz(d + b"a"), len(d) + 1))
        cases = {
            "b-exact.txt": exact,
            "b-exact-minus-1.txt": exact[:-1],
            "b-exact-plus-1.txt": exact + b"a",
        }
        self.assertEqual(sz(exact) * 100, len(exact) * 95)
        self.check_cases(cases, br_oracle, "br", ["--no-gzip"], num, den)

    def test_each_format_judged_alone(self):
        # gzip's 18-byte frame makes it miss where brotli still pays: .br kept, .gz not.
        gz = lambda d: osz(gz_oracle, d)
        br = lambda d: osz(br_oracle, d)
        d = search(gz_oracle, 95, 100, b"a", range(1000, 4000, 7), lambda k: range(0, 400), delta=1,
                   cond=lambda d: keeps(br(d), len(d)))
        self.assertFalse(keeps(gz(d), len(d)))
        self.assertTrue(keeps(br(d), len(d)))
        root = self.path("t")
        os.makedirs(root)
        with open(os.path.join(root, "mixed.txt"), "wb") as f:
            f.write(d)
        r = run(["-v", root])
        self.assertEqual(r.rc, 0, r)
        self.assertFalse(os.path.lexists(os.path.join(root, "mixed.txt.gz")))
        with open(os.path.join(root, "mixed.txt.br"), "rb") as f:
            self.assertEqual(f.read(), br_oracle(d))
        kind, detail = parse_verbose(r, root)[b"mixed.txt"]
        self.assertEqual(kind, "compressed")
        self.assertIn("br %d" % br(d), detail)
        self.assertIn("gz ratio", detail)


if __name__ == "__main__":
    main()
