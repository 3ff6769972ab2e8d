#!/usr/bin/env bash
# bench/delta.sh: what deltas save and cost. For each pair of consecutive npm
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
# changed file, the size of `zstd -19 --long=27 --patch-from=OLD NEW` (what
# zstd's own patching makes of the same pair, for scale).
#
# A binary without --dictionary-from (one that writes no deltas) gets no delta
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
    say "bench/delta: $PC has no --dictionary-from (this build writes no deltas): no delta figures"
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
# The codec floors (bench/README.md, Deltas): bench/floor.c's `codec` on r2
# (the plain formats of every file) and bench/deltafloor.c on the changed
# files (their .dcb and .dcz; against brotli 1.1 from the same prefix, else
# the system's, which makes no .dcb).
xx=()
if [[ -e /usr/include/xxhash.h ]]; then xx=(-DHAVE_XXHASH -lxxhash); fi
cc -O2 -std=c11 -Wall -Wextra -pthread -o "$SCRATCH/tools/floor" "$HERE/floor.c" -lz -lbrotlienc \
    "${xx[@]}" || die "cannot build bench/floor.c (needs zlib1g-dev libbrotli-dev)"
if [[ -f $prefix/lib/$tri/libbrotlienc.a ]]; then
    cc -O2 -std=c11 -Wall -Wextra -pthread -I"$prefix/include" "$HERE/deltafloor.c" \
        -o "$SCRATCH/tools/deltafloor" "$prefix/lib/$tri/libbrotlienc.a" \
        "$prefix/lib/$tri/libbrotlicommon.a" -lzstd -lz -lm
else
    cc -O2 -std=c11 -Wall -Wextra -pthread "$HERE/deltafloor.c" -o "$SCRATCH/tools/deltafloor" \
        -lbrotlienc -lzstd -lz -lm
fi || die "cannot build bench/deltafloor.c (needs libzstd-dev libbrotli-dev)"
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

# The floors, in every round after the pair's runs (the codecs' CPU swings
# from run to run on this VM as precompress's does: medians of as many), on
# every core; the files read from the pairs' own copies (codec CPU does not
# depend on the file system; reading is not counted).
nproc=$(nproc)
nodcb=()
[[ $(cat "$RES/version") == *"deltas: dcb"* ]] || nodcb=(--no-dcb)
floors() { # pkg
    "$SCRATCH/tools/floor" codec --gzip --brotli --threads "$nproc" "$PAIRS_DIR/$1/r2" |
        sed -n 's/^files=/plain files=/p' >>"$RES/$1/floor"
    if [[ $have_deltas == 1 ]]; then
        "$SCRATCH/tools/deltafloor" --threads "$nproc" "${nodcb[@]}" "$PAIRS_DIR/$1/r1" \
            "$PAIRS_DIR/$1/r2" "$PAIRS_DIR/$1/pairs.tsv" | sed 's/^/delta /' >>"$RES/$1/floor"
    fi
}

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
        floors "$pkg"
    done
done
cleanup
trap - EXIT

/usr/bin/python3 - "$RES/meta.json" "$PAIRS_DIR" "$have_deltas" "$RUNS" "$fs_kind" "$DCB_DECODE" "$PKGS" <<'META'
import json, sys
out, pairs_dir, deltas, runs, fs, dcb, pkgs = sys.argv[1:8]
json.dump({"pairs_dir": pairs_dir, "deltas": deltas == "1", "runs": int(runs), "fs": fs,
           "dcb_decoder": dcb != "", "pkgs": pkgs.split()}, open(out, "w"))
META
/usr/bin/python3 "$HERE/delta_report.py" "$RES"
