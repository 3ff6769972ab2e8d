#!/usr/bin/env bash
# Two builds of precompress, byte for byte, on every corpus of bench/run.sh:
#
#   bench/identity.sh A B         (A, B: precompress programs)
#
# Each corpus (CORPORA, as run.sh builds them, in $SCRATCH/corpora) is copied
# twice; A runs on one copy and B on the other with the same options (gzip +
# brotli at the defaults, and zstd), and every output of one must be the same
# bytes as the other's, with the same set of outputs. What it is for: a
# release links brotli 1.1.0 (dist/release.sh) where Debian 12's packages and
# whitenoise's python3-brotli are 1.0.9; whitenoise's bytes are promised, so
# the two brotli versions must write the same bytes at quality 11 on what
# users have. Prints one line per corpus and exits 1 on any difference.
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: bench/identity.sh PROGRAM_A PROGRAM_B" >&2; exit 2; }
A=$(readlink -f "$1")
B=$(readlink -f "$2")
# shellcheck source=bench/run.sh
source "$(dirname "${BASH_SOURCE[0]}")/run.sh"
mkdir -p "$SCRATCH" "$LOGDIR" "$TOOLS" "$RUNDIR"
setup_tools >/dev/null
status=0
for c in $CORPORA; do
    src=$(corpus "$c")
    rm -rf "$RUNDIR/id-a" "$RUNDIR/id-b"
    cp -a "$src" "$RUNDIR/id-a"
    cp -a "$src" "$RUNDIR/id-b"
    ta=$( { /usr/bin/time -f %e "$A" -q --zstd "$RUNDIR/id-a" >/dev/null; } 2>&1 )
    tb=$( { /usr/bin/time -f %e "$B" -q --zstd "$RUNDIR/id-b" >/dev/null; } 2>&1 )
    n=$(cd "$RUNDIR/id-a" && find . -type f \( -name '*.gz' -o -name '*.br' -o -name '*.zst' \) | wc -l)
    if diff -r -q "$RUNDIR/id-a" "$RUNDIR/id-b" >"$LOGDIR/identity-$c.txt"; then
        echo "$c: $n outputs, identical (A ${ta} s, B ${tb} s)"
    else
        echo "$c: DIFFERENT: $(wc -l <"$LOGDIR/identity-$c.txt") paths (list: $LOGDIR/identity-$c.txt)"
        status=1
    fi
    rm -rf "$RUNDIR/id-a" "$RUNDIR/id-b"
done
echo "A: $("$A" -V)"
echo "B: $("$B" -V)"
exit $status
