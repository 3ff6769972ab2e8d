#!/usr/bin/env bash
# bench/delta.sh: issue 22's figures. For each pair of consecutive npm
# releases that bench/delta_pairs.sh lays out, the sizes of the deltas
# precompress keeps (.dcb, .dcz) against the plain .br of the same files, and
# what making them costs. Run by a developer (root for the loop file system),
# never by meson test.
#
#   bench/delta.sh [PRECOMPRESS]        default: $PC, else build/src/cli/precompress
#   RUNS=1 PKGS="d3 lodash" bench/delta.sh
#   REFERENCE_ONLY=1 bench/delta.sh     only the plain runs and zstd --patch-from
#
# Per round and pair, alternated, each on a fresh file system holding copies of
# r1 and r2: a plain run `precompress -q --manifest M r2` (gz and br, brotli 11)
# and a delta run `precompress -q --dictionary-from r1 --manifest M r2`, timed
# with /usr/bin/time. Sizes come from the delta run's manifest (they are the
# same in every round), times are medians of RUNS rounds. For reference, per
# changed file, the size of `zstd -19 --long=27 --patch-from=OLD NEW` (issue
# 22's scale figure).
#
# A binary without --dictionary-from (issue 22's core not in it) gets no delta
# figures: the script says so and exits 2 (REFERENCE_ONLY=1: the plain runs
# and the zstd reference only, exit 0).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
SCRATCH=${SCRATCH:-/tmp/pc-bench}
PAIRS_DIR=${PAIRS_DIR:-$SCRATCH/delta-pairs}
RES=${RES:-$SCRATCH/delta-results}
RUNS=${RUNS:-3}
PKGS=${PKGS:-react-dom three d3 bootstrap lodash pdfjs-dist monaco-editor}
RUNFS=${RUNFS:-auto}
REFERENCE_ONLY=${REFERENCE_ONLY:-0}
PC=${1:-${PC:-$ROOT/build/src/cli/precompress}}
IMG=/dev/shm/pc-delta-bench.img
MNT=$SCRATCH/delta-runs

say() { printf '%s\n' "$*" >&2; }
die() { say "bench/delta: $*"; exit 1; }

[[ -x $PC ]] || die "no program at $PC (give its path as the first argument or in PC)"
for t in /usr/bin/time /usr/bin/python3 zstd; do
    command -v "$t" >/dev/null || die "needs $t"
done
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer"

have_deltas=1
help=$("$PC" --help 2>&1) || true
if [[ $help != *--dictionary-from* ]]; then
    have_deltas=0
    say "bench/delta: $PC has no --dictionary-from (issue 22's core is not in this build): no delta figures"
    if [[ $REFERENCE_ONLY != 1 ]]; then
        say "bench/delta: REFERENCE_ONLY=1 runs the plain runs and the zstd --patch-from reference alone"
        exit 2
    fi
fi
[[ $REFERENCE_ONLY == 1 ]] && have_deltas=0

# The pairs (fetched and laid out once, then reused).
PKGS="$PKGS" "$HERE/delta_pairs.sh" "$PAIRS_DIR" >/dev/null

# Where the runs happen: a fresh ext4 in a loop file on /dev/shm per run (as
# bench/cache.sh), else a fresh directory on /dev/shm (tmpfs).
fs_kind=dir
if [[ $RUNFS != dir ]]; then
    if [[ $EUID == 0 ]] && mkdir -p "$MNT" && truncate -s 4G "$IMG" &&
        mkfs.ext4 -q -F -O ^has_journal -E nodiscard "$IMG" 2>/dev/null &&
        mount -o loop "$IMG" "$MNT" 2>/dev/null; then
        fs_kind=loop
        umount "$MNT"
    elif [[ $RUNFS == loop ]]; then
        die "RUNFS=loop: cannot mount a loop file system (root needed)"
    fi
    rm -f "$IMG"
fi
if [[ $fs_kind == dir ]]; then
    MNT=/dev/shm/pc-delta-runs
fi

fresh_fs() {
    if [[ $fs_kind == loop ]]; then
        umount "$MNT" 2>/dev/null || true
        rm -f "$IMG"
        truncate -s 4G "$IMG"
        mkfs.ext4 -q -F -O ^has_journal -E nodiscard "$IMG"
        mkdir -p "$MNT"
        mount -o loop "$IMG" "$MNT"
    else
        rm -rf "$MNT"
        mkdir -p "$MNT"
    fi
}

cleanup() {
    if [[ $fs_kind == loop ]]; then
        umount "$MNT" 2>/dev/null || true
        rm -f "$IMG"
    else
        rm -rf "$MNT"
    fi
}
trap cleanup EXIT

timed() { # label pkg cmd...: appends "label wall user sys maxrss_kib" to $RES/$pkg/times
    local label=$1 pkg=$2
    shift 2
    sync
    /usr/bin/time -f "$label %e %U %S %M" -a -o "$RES/$pkg/times" "$@" \
        >"$RES/$pkg/$label.out" 2>"$RES/$pkg/$label.err" ||
        die "$pkg $label failed: $(tail -3 "$RES/$pkg/$label.err")"
}

rm -rf "$RES"
mkdir -p "$RES"

# A decoder for .dcb (brotli >= 1.1, which Debian 12 lacks): bench/dcb_decode.c
# against the brotli 1.1.0 of the prefix bench/build_brotli11.sh uses, else
# the system's when it is 1.1 or later; none: .dcb are checked to their header.
DCB_DECODE=
prefix=${PC_RELEASE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/precompress-release}/prefix-$(uname -m)/usr
tri=$(uname -m)-linux-gnu
mkdir -p "$SCRATCH/tools"
if [[ -f $prefix/lib/$tri/libbrotlidec.a ]] &&
    cc -O2 -std=c11 -I"$prefix/include" "$HERE/dcb_decode.c" -o "$SCRATCH/tools/dcb_decode" \
        "$prefix/lib/$tri/libbrotlidec.a" "$prefix/lib/$tri/libbrotlicommon.a" 2>/dev/null; then
    DCB_DECODE=$SCRATCH/tools/dcb_decode
elif pkg-config --atleast-version=1.1 libbrotlidec 2>/dev/null; then
    read -ra flags <<<"$(pkg-config --cflags --libs libbrotlidec)"
    cc -O2 -std=c11 "$HERE/dcb_decode.c" -o "$SCRATCH/tools/dcb_decode" "${flags[@]}" 2>/dev/null &&
        DCB_DECODE=$SCRATCH/tools/dcb_decode
fi
"$PC" -V >"$RES/version"
say "bench/delta: $(cat "$RES/version"); runs on $fs_kind ($MNT); RUNS=$RUNS"

# The reference: zstd's own patch (no RFC 9842 header) of each changed file.
for pkg in $PKGS; do
    mkdir -p "$RES/$pkg"
    : >"$RES/$pkg/ref.tsv"
    while IFS=$'\t' read -r st new old _; do
        [[ $st == changed ]] || continue
        b=$(zstd -q -19 --long=27 --patch-from="$PAIRS_DIR/$pkg/r1/$old" -c "$PAIRS_DIR/$pkg/r2/$new" \
            2>>"$RES/$pkg/zstd.err" | wc -c)
        [[ $b -gt 0 ]] || die "zstd --patch-from failed on $pkg/$new: $(tail -2 "$RES/$pkg/zstd.err")"
        printf '%s\t%s\n' "$new" "$b" >>"$RES/$pkg/ref.tsv"
    done <"$PAIRS_DIR/$pkg/pairs.tsv"
done

for ((i = 1; i <= RUNS; i++)); do
    for pkg in $PKGS; do
        say "bench/delta: round $i/$RUNS $pkg"
        fresh_fs
        cp -a "$PAIRS_DIR/$pkg/r1" "$PAIRS_DIR/$pkg/r2" "$MNT/"
        timed plain "$pkg" "$PC" -q --manifest "$MNT/m.json" "$MNT/r2"
        cp "$MNT/m.json" "$RES/$pkg/plain.json"
        if [[ $have_deltas == 1 ]]; then
            fresh_fs
            cp -a "$PAIRS_DIR/$pkg/r1" "$PAIRS_DIR/$pkg/r2" "$MNT/"
            timed deltas "$pkg" "$PC" -q --dictionary-from "$MNT/r1" --manifest "$MNT/m.json" "$MNT/r2"
            cp "$MNT/m.json" "$RES/$pkg/deltas.json"
            # every kept output is where docs/deltas.md says, with its
            # header, and decodes to its file (.dcb: with bench/dcb_decode.c
            # when it could be built, else its header only)
            if [[ $i == 1 ]]; then
                /usr/bin/python3 - "$MNT/m.json" "$MNT/r1" "$MNT/r2" "$DCB_DECODE" >"$RES/$pkg/check" <<'CHECK'
import hashlib, json, os, subprocess, sys
m, r1, r2, dcb_decode = sys.argv[1:5]
bad = 0
for e in json.load(open(m))["files"]:
    for x in e.get("deltas", []):
        if "size" not in x:
            continue
        dic = open(os.path.join(r1, x["dictionary"]), "rb").read()
        h = hashlib.sha256(dic)
        out = os.path.join(r2, "%s.%s.%s" % (e["path"], h.hexdigest()[:16], x["format"]))
        why = None
        if x["sha256"] != h.hexdigest():
            why = "sha256 in the manifest is not the dictionary's"
        elif not os.path.exists(out):
            why = "missing"
        else:
            b = open(out, "rb").read()
            magic = bytes.fromhex("5e2a4d1820000000" if x["format"] == "dcz" else "ff444342")
            if len(b) != x["size"]:
                why = "size is not the manifest's"
            elif b[:len(magic)] != magic or b[len(magic):len(magic) + 32] != h.digest():
                why = "bad header"
            else:
                if x["format"] == "dcz":
                    cmd = ["zstd", "-q", "-d", "--long=31", "-D", os.path.join(r1, x["dictionary"]), "-c"]
                    body = b[40:]
                elif dcb_decode:
                    cmd, body = [dcb_decode, os.path.join(r1, x["dictionary"])], b
                else:
                    cmd = None
                if cmd:
                    d = subprocess.run(cmd, input=body, capture_output=True)
                    if d.returncode or d.stdout != open(os.path.join(r2, e["path"]), "rb").read():
                        why = "does not decode to the file"
        if why:
            bad += 1
            print("BAD\t%s\t%s" % (out, why))
print("checked\t%d bad" % bad)
CHECK
            fi
        fi
    done
done
cleanup
trap - EXIT

read -ra pkgs <<<"$PKGS"
/usr/bin/python3 - "$RES" "$PAIRS_DIR" "$have_deltas" "$RUNS" "$fs_kind" "$DCB_DECODE" "${pkgs[@]}" <<'EOF'
import json, os, statistics, sys

res, pairs_dir, have_deltas, runs, fs_kind, dcb_checked = sys.argv[1:7]
dcb_checked = dcb_checked != ""
have_deltas = have_deltas == "1"
pkgs = sys.argv[7:]
med = statistics.median

def load_manifest(p):
    with open(p) as f:
        m = json.load(f)
    return {e["path"]: e for e in m["files"]}

def times(pkg, label):
    w, c = [], []
    for line in open(os.path.join(res, pkg, "times")):
        t = line.split()
        if len(t) == 5 and t[0] == label:
            w.append(float(t[1]))
            c.append(float(t[2]) + float(t[3]))
    return (med(w), med(c)) if w else (None, None)

def plain_size(e):
    """What is sent without a delta: .br when kept, else the smaller of .gz and the file."""
    if "size" in e.get("br", {}):
        return e["br"]["size"]
    if "size" in e.get("gz", {}):
        return min(e["size"], e["gz"]["size"])
    return e["size"]

def fmt_b(n):
    return f"{n:,}"

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
    pw, pc = times(pkg, "plain")
    dw, dc = times(pkg, "deltas") if have_deltas else (None, None)
    r = dict(pkg=pkg, vers=f"{old}->{new}", files=len(pairs), changed=0, with_delta=0,
             br=0, br_kept=0, best=0, dcb=0, n_dcb=0, dcb_br=0, dcz=0, n_dcz=0, dcz_br=0,
             patch=0, savings=[], psav=[], pw=pw, pc=pc, dw=dw, dc=dc, wrong=0, br_differs=0)
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
    print("| package | versions | files | changed | with a delta | .br of changed | kept deltas (smallest per file) | / their .br | .dcb kept | .dcb / its .br | .dcz kept | .dcz / its .br | zstd --patch-from / .br | median saving over .br | plain s | with deltas s | cost |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['pkg']} | {r['vers']} | {r['files']} | {r['changed']} | {r['with_delta']} | "
              f"{fmt_b(r['br'])} | {fmt_b(r['best'])} | {ratio(r['best'], r['br_kept'])} | "
              f"{r['n_dcb']}: {fmt_b(r['dcb'])} | {ratio(r['dcb'], r['dcb_br'])} | "
              f"{r['n_dcz']}: {fmt_b(r['dcz'])} | {ratio(r['dcz'], r['dcz_br'])} | "
              f"{ratio(r['patch'], r['br'])} | {100 * med(r['savings']):.1f}% | "
              f"{r['pw']:.2f} | {r['dw']:.2f} | {r['dw'] / r['pw']:.2f}x |")
    pw = sum(r["pw"] for r in rows)
    dw = sum(r["dw"] for r in rows)
    sav = [1 - (b if b is not None else br) / br for br, b, _ in allf]
    print(f"| **all** | | {sum(r['files'] for r in rows)} | {tot['changed']} | {tot['with_delta']} | "
          f"{fmt_b(tot['br'])} | {fmt_b(tot['best'])} | {ratio(tot['best'], tot['br_kept'])} | "
          f"{tot['n_dcb']}: {fmt_b(tot['dcb'])} | {ratio(tot['dcb'], tot['dcb_br'])} | "
          f"{tot['n_dcz']}: {fmt_b(tot['dcz'])} | {ratio(tot['dcz'], tot['dcz_br'])} | "
          f"{ratio(tot['patch'], tot['br'])} | {100 * med(sav):.1f}% | {pw:.2f} | {dw:.2f} | {dw / pw:.2f}x |")
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
          f"(sum over pairs of the medians: {dw:.2f} s against {pw:.2f} s).")
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
EOF
