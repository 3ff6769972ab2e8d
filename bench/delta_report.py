#!/usr/bin/python3
"""bench/delta_report.py RES: the tables of bench/delta.sh from its results
directory (RES/meta.json, RES/PKG/{deltas,plain}.json, times, ref.tsv, check;
the pairs' pairs.tsv). bench/delta.sh runs it at its end; run it again on a
kept RES to print the same tables."""
import json, os, statistics, sys

res = sys.argv[1]
with open(os.path.join(res, "meta.json")) as f:
    meta = json.load(f)
pairs_dir, runs, fs_kind = meta["pairs_dir"], meta["runs"], meta["fs"]
have_deltas, dcb_checked, pkgs = meta["deltas"], meta["dcb_decoder"], meta["pkgs"]
med = statistics.median

def load_manifest(p):
    with open(p) as f:
        m = json.load(f)
    return {e["path"]: e for e in m["files"]}

def times(pkg, label):
    """Medians of wall and CPU (user + system) seconds, and each round's wall as printed."""
    w, c, ws = [], [], []
    for line in open(os.path.join(res, pkg, "times")):
        t = line.split()
        if len(t) == 5 and t[0] == label:
            w.append(float(t[1]))
            ws.append(t[1])
            c.append(float(t[2]) + float(t[3]))
    return (med(w), med(c), ws) if w else (None, None, [])

def plain_size(e):
    """What is sent without a delta: .br when kept, else the smaller of .gz and the file."""
    if "size" in e.get("br", {}):
        return e["br"]["size"]
    if "size" in e.get("gz", {}):
        return min(e["size"], e["gz"]["size"])
    return e["size"]

def fmt_b(n):
    return f"{n:,}"

def floors(pkg):
    """The codec floors bench/delta.sh measured (RES/PKG/floor), or None: the plain run's
    max(codec CPU / threads, slowest file) and the delta run's, whose CPU adds the changed
    files' .dcb and .dcz and whose slowest file is the slowest of either kind; medians of
    the rounds' floors."""
    path = os.path.join(res, pkg, "floor")
    if not os.path.exists(path):
        return None
    lines = {"plain": [], "delta": []}
    for line in open(path):
        kind, *pairs = line.split()
        lines[kind].append(dict(p.split("=", 1) for p in pairs))
    # one plain (and one delta) line per round: each round's floors, then their medians
    pfs, dfs = [], []
    for k, p in enumerate(lines["plain"]):
        n = int(p["threads"])
        pcpu = float(p["gzip_cpu"]) + float(p["brotli_cpu"])
        pfs.append(max(pcpu / n, float(p["slowest"])))
        if k < len(lines["delta"]):
            d = lines["delta"][k]
            dfs.append(max((pcpu + float(d["delta_cpu"])) / n, float(p["slowest"]),
                           float(d["slowest"])))
    if not pfs:
        return None
    return med(pfs), med(dfs) if dfs else None

rows = []
per_file = open(os.path.join(res, "files.tsv"), "w")
per_file.write("package\tfile\tsize\tbr\tdcb\tdcz\tpatch_from\n")
allf = []          # per changed file: (br, best kept delta or None, patch)
tot = dict(changed=0, with_delta=0, br=0, br_kept=0, best=0, dcb=0, dcb_br=0, n_dcb=0,
           dcz=0, dcz_br=0, n_dcz=0, patch=0, plain_w=0.0, delta_w=0.0, wrong=0,
           dcb_skips={}, dcz_skips={})
for pkg in pkgs:
    d = os.path.join(pairs_dir, pkg)
    _, old, new = open(os.path.join(d, "versions")).read().split()
    pairs = [l.rstrip("\n").split("\t") for l in open(os.path.join(d, "pairs.tsv"))]
    ref = dict((a, int(b)) for a, b in (l.split() for l in open(os.path.join(res, pkg, "ref.tsv"))))
    man = load_manifest(os.path.join(res, pkg, "deltas.json" if have_deltas else "plain.json"))
    pman = load_manifest(os.path.join(res, pkg, "plain.json"))
    pw, pc, pws = times(pkg, "plain")
    dw, dc, dws = times(pkg, "deltas") if have_deltas else (None, None, [])
    r = dict(pkg=pkg, vers=f"{old}->{new}", files=len(pairs), changed=0, with_delta=0,
             br=0, br_kept=0, best=0, dcb=0, n_dcb=0, dcb_br=0, dcz=0, n_dcz=0, dcz_br=0,
             patch=0, savings=[], psav=[], pw=pw, pc=pc, dw=dw, dc=dc, pws=pws, dws=dws, wrong=0, br_differs=0)
    for st, new_p, old_p, size, _ in pairs:
        e = man[new_p]
        dl = e.get("deltas", [])
        if have_deltas:
            # the pairing the manifest shows against the one laid out
            if st == "new" and dl:
                r["wrong"] += 1
            if st != "new" and any(x.get("dictionary") != old_p for x in dl):
                r["wrong"] += 1
            if st == "changed" and not dl:
                r["wrong"] += 1
            if plain_size(e) != plain_size(pman[new_p]):
                r["br_differs"] += 1
        if st != "changed":
            continue
        br = plain_size(e)
        r["changed"] += 1
        r["br"] += br
        r["patch"] += ref[new_p]
        kept = {}
        for x in dl:
            if "size" in x:
                kept[x["format"]] = x["size"]
            else:
                k = tot[x["format"] + "_skips"]
                k[x.get("skipped", "?")] = k.get(x.get("skipped", "?"), 0) + 1
        if "dcb" in kept:
            r["dcb"] += kept["dcb"]; r["dcb_br"] += br; r["n_dcb"] += 1
        if "dcz" in kept:
            r["dcz"] += kept["dcz"]; r["dcz_br"] += br; r["n_dcz"] += 1
        best = min(kept.values()) if kept else None
        if best is not None:
            r["with_delta"] += 1
            r["best"] += best
            r["br_kept"] += br
        r["savings"].append(1 - (best if best is not None else br) / br)
        r["psav"].append(1 - ref[new_p] / br)
        allf.append((br, best, ref[new_p]))
        per_file.write("\t".join(map(str, [pkg, new_p, size, br, kept.get("dcb", "-"),
                                           kept.get("dcz", "-"), ref[new_p]])) + "\n")
    rows.append(r)
    for k in ("changed", "with_delta", "br", "br_kept", "best", "dcb", "dcb_br", "n_dcb",
              "dcz", "dcz_br", "n_dcz", "patch", "wrong"):
        tot[k] += r[k]
per_file.close()

def ratio(a, b):
    return f"{a / b:.3f}x" if b else "-"

print()
if have_deltas:
    print("| package | versions | files | changed | with a delta | .br of changed | kept deltas (smallest per file) | / their .br | .dcb kept | .dcb / its .br | .dcz kept | .dcz / its .br | zstd --patch-from / .br | median saving over .br |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['pkg']} | {r['vers']} | {r['files']} | {r['changed']} | {r['with_delta']} | "
              f"{fmt_b(r['br'])} | {fmt_b(r['best'])} | {ratio(r['best'], r['br_kept'])} | "
              f"{r['n_dcb']}: {fmt_b(r['dcb'])} | {ratio(r['dcb'], r['dcb_br'])} | "
              f"{r['n_dcz']}: {fmt_b(r['dcz'])} | {ratio(r['dcz'], r['dcz_br'])} | "
              f"{ratio(r['patch'], r['br'])} | {100 * med(r['savings']):.1f}% |")
    pw = sum(r["pw"] for r in rows)
    dw = sum(r["dw"] for r in rows)
    pc = sum(r["pc"] for r in rows)
    dc = sum(r["dc"] for r in rows)
    sav = [1 - (b if b is not None else br) / br for br, b, _ in allf]
    print(f"| **all** | | {sum(r['files'] for r in rows)} | {tot['changed']} | {tot['with_delta']} | "
          f"{fmt_b(tot['br'])} | {fmt_b(tot['best'])} | {ratio(tot['best'], tot['br_kept'])} | "
          f"{tot['n_dcb']}: {fmt_b(tot['dcb'])} | {ratio(tot['dcb'], tot['dcb_br'])} | "
          f"{tot['n_dcz']}: {fmt_b(tot['dcz'])} | {ratio(tot['dcz'], tot['dcz_br'])} | "
          f"{ratio(tot['patch'], tot['br'])} | {100 * med(sav):.1f}% |")
    print()
    fl = {r["pkg"]: floors(r["pkg"]) for r in rows}
    have_fl = all(f is not None and f[1] is not None for f in fl.values())
    extra = " plain floor s | plain / floor | deltas floor s | deltas / floor |" if have_fl else ""
    print("| package | plain wall s (per round) | with deltas wall s (per round) | cost, wall | plain CPU s | with deltas CPU s | cost, CPU |" + extra)
    print("|---|---|---|---|---|---|---|" + ("---|" * 4 if have_fl else ""))
    for r in rows:
        f = fl[r["pkg"]]
        cols = (f" {f[0]:.2f} | {r['pw'] / f[0]:.2f}x | {f[1]:.2f} | {r['dw'] / f[1]:.2f}x |"
                if have_fl else "")
        print(f"| {r['pkg']} | {r['pw']:.2f} ({'/'.join(r['pws'])}) | {r['dw']:.2f} ({'/'.join(r['dws'])}) | "
              f"{r['dw'] / r['pw']:.2f}x | {r['pc']:.2f} | {r['dc']:.2f} | {r['dc'] / r['pc']:.2f}x |" + cols)
    if have_fl:
        pfs = sum(f[0] for f in fl.values())
        dfs = sum(f[1] for f in fl.values())
        cols = f" {pfs:.2f} | {pw / pfs:.2f}x | {dfs:.2f} | {dw / dfs:.2f}x |"
    else:
        cols = ""
    print(f"| **all** (sums of the medians) | {pw:.2f} | {dw:.2f} | {dw / pw:.2f}x | {pc:.2f} | {dc:.2f} | {dc / pc:.2f}x |" + cols)
    print()
    share = tot["with_delta"] / tot["changed"] if tot["changed"] else 0
    print(f"Kept deltas / their files' .br: {ratio(tot['best'], tot['br_kept'])} (target <= 0.12x: "
          f"{'met' if tot['br_kept'] and tot['best'] / tot['br_kept'] <= 0.12 else 'NOT met'}).")
    print(f"Changed files with a predecessor that got a delta: {tot['with_delta']} of {tot['changed']} "
          f"= {100 * share:.1f}% (target >= 90%: {'met' if share >= 0.9 else 'NOT met'}).")
    print(f"Median saving over .br per changed file (0 where no delta was kept): {100 * med(sav):.1f}%; "
          f"zstd -19 --long=27 --patch-from: {ratio(tot['patch'], tot['br'])} of .br, "
          f"median saving {100 * med([1 - p / br for br, _, p in allf]):.1f}%.")
    print(f"Cost: the runs with deltas took {dw / pw:.2f}x the plain runs' wall "
          f"(sum over pairs of the medians: {dw:.2f} s against {pw:.2f} s), {dc / pc:.2f}x their CPU "
          f"(user + system: {dc:.2f} s against {pc:.2f} s).")
    if not tot["n_dcb"]:
        print("No .dcb kept anywhere: " + ("this build writes none (brotli < 1.1; -V)." if not tot["dcb_skips"]
              else f"skipped: {tot['dcb_skips']}."))
    elif tot["dcb_skips"]:
        print(f".dcb not kept for: {tot['dcb_skips']} (manifest's reasons).")
    if tot["dcz_skips"]:
        print(f".dcz not kept for: {tot['dcz_skips']} (manifest's reasons).")
    wrong = sum(r["wrong"] for r in rows)
    if wrong:
        print(f"PAIRING: {wrong} files paired otherwise than laid out (see pairs.tsv against the manifests).")
    diff = sum(r["br_differs"] for r in rows)
    if diff:
        print(f"NOTE: {diff} files' plain outputs differ between the plain and the delta run.")
    bad = [p for p in pkgs if "checked\t0 bad" not in open(os.path.join(res, p, "check")).read()]
    if bad:
        print(f"CHECK FAILED: outputs not as docs/deltas.md says in: {', '.join(bad)} ({res}/PKG/check).")
    else:
        print("Every kept output checked: at FILE.<id>.<fmt>, its size the manifest's, its header (magic, "
              "the dictionary's SHA-256); every .dcz decoded with zstd -D to its file, every .dcb "
              + ("with brotli 1.1's decoder (bench/dcb_decode.c)." if dcb_checked else "to its header only (no brotli 1.1 decoder)."))
else:
    print("| package | versions | files | changed | .br of changed | zstd --patch-from | / .br | median saving over .br | plain s | plain CPU s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['pkg']} | {r['vers']} | {r['files']} | {r['changed']} | {fmt_b(r['br'])} | "
              f"{fmt_b(r['patch'])} | {ratio(r['patch'], r['br'])} | {100 * med(r['psav']):.1f}% | "
              f"{r['pw']:.2f} | {r['pc']:.2f} |")
    print(f"| **all** | | {sum(r['files'] for r in rows)} | {tot['changed']} | {fmt_b(tot['br'])} | "
          f"{fmt_b(tot['patch'])} | {ratio(tot['patch'], tot['br'])} | "
          f"{100 * med([1 - p / br for br, _, p in allf]):.1f}% | {sum(r['pw'] for r in rows):.2f} | "
          f"{sum(r['pc'] for r in rows):.2f} |")
    print()
    print("No delta figures: this build has no --dictionary-from (or REFERENCE_ONLY=1). "
          ".br: precompress's plain run (brotli 11); zstd: -19 --long=27 --patch-from=OLD, "
          "its own frame without RFC 9842's 40-byte header.")
print()
print(f"Sizes from the manifests; times medians of {runs} rounds, each run on a fresh "
      f"{'ext4 in a loop file on /dev/shm' if fs_kind == 'loop' else 'directory on /dev/shm (tmpfs)'}. "
      f"Per file: {res}/files.tsv; per run: {res}/PKG/times.")
