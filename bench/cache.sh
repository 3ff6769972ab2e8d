#!/usr/bin/env bash
# bench/cache.sh: what --cache-dir costs and saves (bench/README.md's targets), on
# the 100,000-file corpus (gzip only) and the frontend corpus (gzip+brotli)
# that bench/run.sh builds. Run by a developer, as root, never by meson test.
#
#   bench/cache.sh                 RUNS=3 rounds per corpus
#   CORPORA=small RUNS=5 bench/cache.sh
#
# Each round runs, alternated: a plain run; a cold run with an empty
# --cache-dir; a warm run on a fresh copy with the store the cold run left.
# Every run gets a fresh ext4 in a loop file on /dev/shm (made, filled with
# the corpus and the store, then the run is timed): the writeback state of
# earlier runs plays no part (on the plain disk these runs swing 3-5x).
# Reported: medians of wall time, the ratios to the plain run, and the store's
# size on disk against the payload it holds.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
SCRATCH=${SCRATCH:-/tmp/pc-bench}
RUNS=${RUNS:-3}
CORPORA=${CORPORA:-small frontend}
IMG=/dev/shm/pc-cache-bench.img
MNT=$SCRATCH/cache-runs
OUT=$SCRATCH/cache-results
PC=${PRECOMPRESS:-}

say() { printf '%s\n' "$*" >&2; }
die() { say "bench/cache: $*"; exit 1; }

[[ $EUID == 0 ]] || die "needs root (a loop file system per run)"
for c in $CORPORA; do
    [[ -f $SCRATCH/corpora/$c.done ]] || die "no $c corpus in $SCRATCH/corpora: run CORPORA=$c RUNS=1 bench/run.sh once"
done
if [[ -z $PC ]]; then
    say "bench/cache: release build of $ROOT in $SCRATCH/build-cache"
    [[ -d $SCRATCH/build-cache ]] ||
        meson setup "$SCRATCH/build-cache" "$ROOT" --buildtype=release -Dtests=false >/dev/null
    ninja -C "$SCRATCH/build-cache" >/dev/null
    PC=$SCRATCH/build-cache/src/cli/precompress
fi
mkdir -p "$MNT" "$OUT"

fresh_fs() {
    umount "$MNT" 2>/dev/null || true
    rm -f "$IMG"
    truncate -s 6G "$IMG"
    mkfs.ext4 -q -F -O ^has_journal -E nodiscard "$IMG"
    mount -o loop "$IMG" "$MNT"
}

cleanup() {
    umount "$MNT" 2>/dev/null || true
    rm -f "$IMG"
}
trap cleanup EXIT

args_for() { # corpus -> format flags
    case $1 in small) echo "--no-brotli" ;; *) echo "" ;; esac
}

timed() { # label corpus cmd... -> appends "label seconds" to $OUT/$corpus.times
    local label=$1 corpus=$2 t0 t1
    shift 2
    sync
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>"$OUT/$label.err" || die "$label failed: $(tail -3 "$OUT/$label.err")"
    t1=$(date +%s.%N)
    awk -v l="$label" -v a="$t0" -v b="$t1" 'BEGIN {printf "%s %.3f\n", l, b - a}' >>"$OUT/$corpus.times"
}

store_figures() { # store -> "entries payload_bytes file_bytes"
    /usr/bin/python3 - "$1" <<'EOF'
import os, sqlite3, sys
p = sys.argv[1]
db = sqlite3.connect("file:%s?immutable=1" % p, uri=True)
n, payload = db.execute("SELECT count(*), coalesce(sum(bytes), 0) FROM entry").fetchone()
print(n, payload, os.stat(p).st_blocks * 512)
EOF
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

for c in $CORPORA; do
    src=$SCRATCH/corpora/$c
    fl=$(args_for "$c")
    : >"$OUT/$c.times"
    : >"$OUT/$c.store"
    for ((i = 1; i <= RUNS; i++)); do
        say "bench/cache: $c round $i/$RUNS"
        fresh_fs
        cp -a "$src" "$MNT/t"
        # shellcheck disable=SC2086
        timed plain "$c" "$PC" -q $fl "$MNT/t"

        fresh_fs
        cp -a "$src" "$MNT/t"
        # shellcheck disable=SC2086
        timed cold "$c" "$PC" -q $fl --cache-dir "$MNT/cache" "$MNT/t"
        store_figures "$MNT/cache/cache.sqlite" >>"$OUT/$c.store"
        cp -a "$MNT/cache" "$SCRATCH/cache-store.$c"

        fresh_fs
        cp -a "$src" "$MNT/t"
        rm -rf "$MNT/cache"
        cp -a "$SCRATCH/cache-store.$c" "$MNT/cache"
        rm -rf "$SCRATCH/cache-store.$c"
        # shellcheck disable=SC2086
        timed warm "$c" "$PC" -q $fl --cache-dir "$MNT/cache" "$MNT/t"
    done
done
cleanup
trap - EXIT

printf '\n| corpus | plain | cold cache | warm cache, fresh copy | cold / plain | warm / plain | entries | payload | store on disk | store / payload |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for c in $CORPORA; do
    p=$(awk '$1 == "plain" {print $2}' "$OUT/$c.times" | median)
    k=$(awk '$1 == "cold" {print $2}' "$OUT/$c.times" | median)
    w=$(awk '$1 == "warm" {print $2}' "$OUT/$c.times" | median)
    read -r n pay file < <(tail -1 "$OUT/$c.store")
    awk -v c="$c" -v p="$p" -v k="$k" -v w="$w" -v n="$n" -v pay="$pay" -v f="$file" 'BEGIN {
        printf "| %s | %.2f s | %.2f s | %.2f s | %.3fx | %.3fx | %d | %.1f MB | %.1f MB | %.3fx |\n",
            c, p, k, w, k / p, w / p, n, pay / 1e6, f / 1e6, f / pay }'
done
printf '\nMedians of %s rounds; every run on a fresh ext4 in a loop file on /dev/shm. Per-run times: %s/*.times\n' "$RUNS" "$OUT"
