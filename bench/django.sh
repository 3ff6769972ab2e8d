#!/usr/bin/env bash
# bench/django.sh: collectstatic's wall time with whitenoise's
# CompressedManifestStaticFilesStorage against precompress.django's, on one
# generated Django project. Run by a developer, never by `meson test`.
#
#   bench/django.sh
#   RUNS=5 FILES=6000 bench/django.sh
#
# The project: `startproject` (Django's admin files included) with an asset dir
# of FILES generated code-like text files, 200 B to 4 KiB (js css html json svg
# txt mjs xml: bench/gen.c `small`), three big bundles (vendor.js 4 MiB,
# app.js 2 MiB, app.css 1 MiB: `gen large`) and 40 images (`gen blob`, .png
# and .woff2, on whitenoise's skip list). collectstatic copies every file and
# hashes it, so each is compressed twice (original and hashed name).
#
# Runs alternate (whitenoise, precompress, Django's ManifestStaticFilesStorage
# with no compression at all, then again), each from an empty STATIC_ROOT; one
# warm-up run of each is not counted. Printed: every run's time, the median of
# each storage, whitenoise / precompress, and the same ratio for the
# compression alone (each median less the no-compression one). The last
# trees of both are compared so the figures are of the same output: the same
# files, byte for byte, but for the .gz precompress keeps where Brotli failed
# the 95% rule and gzip passed (whitenoise then writes neither; see
# docs/django.md), which are counted.
#
# Environment:
#   SCRATCH=/tmp/pc-bench-django  project, venv and tools
#   RUNS=3        measured runs per storage (medians reported)
#   FILES=3000    small generated files
#   VENV=DIR      a venv with the precompress package already installed
#                 (default: $SCRATCH/venv, made with docs/django.md's commands)
# Needs Debian's python3-django, python3-whitenoise, python3-venv, python3-pip,
# gcc, meson and ninja-build.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
SCRATCH=${SCRATCH:-/tmp/pc-bench-django}
RUNS=${RUNS:-3}
FILES=${FILES:-3000}
VENV=${VENV:-$SCRATCH/venv}
PY=/usr/bin/python3

die() { echo "bench/django.sh: $*" >&2; exit 1; }
for m in django whitenoise; do
    $PY -c "import $m" 2>/dev/null || die "python3-$m is not installed (apt-get install python3-$m)"
done
mkdir -p "$SCRATCH/tools"

if [[ ! -x $VENV/bin/python ]] || ! "$VENV/bin/python" -c 'import precompress.django' 2>/dev/null; then
    echo "installing the package into $VENV (docs/django.md's commands)" >&2
    rm -rf "$VENV"
    $PY -m venv --system-site-packages "$VENV"
    (cd "$ROOT" && "$VENV/bin/pip" install -q --no-build-isolation .) >&2
fi
VPY=$VENV/bin/python

cc -O2 -o "$SCRATCH/tools/gen" "$HERE/gen.c"
GEN=$SCRATCH/tools/gen

PROJECT=$SCRATCH/project-$FILES
if [[ ! -f $PROJECT.done ]]; then
    echo "making the project in $PROJECT" >&2
    rm -rf "$PROJECT"
    mkdir -p "$PROJECT"
    $VPY -m django startproject mysite "$PROJECT"
    cat >> "$PROJECT/mysite/settings.py" <<'EOF'

# ---- bench/django.sh
import os
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "assets"]
STATICFILES_STORAGE = os.environ["BENCH_STORAGE"]
EOF
    A=$PROJECT/assets
    mkdir -p "$A/bundle" "$A/img" "$A/fonts"
    "$GEN" small "$A/gen" "$FILES" >/dev/null
    "$GEN" large "$A/bundle/vendor.js" $((4 << 20)) 1 >/dev/null
    "$GEN" large "$A/bundle/app.js" $((2 << 20)) 2 >/dev/null
    "$GEN" large "$A/bundle/app.css" $((1 << 20)) 3 >/dev/null
    for i in $(seq 1 20); do
        "$GEN" blob "$A/img/photo$i.png" $((20000 + i * 3000)) "$i" >/dev/null
        "$GEN" blob "$A/fonts/font$i.woff2" $((15000 + i * 1000)) "$((100 + i))" >/dev/null
    done
    touch "$PROJECT.done"
fi
n=$(find "$PROJECT/assets" -type f | wc -l)
bytes=$(du -sb "$PROJECT/assets" | cut -f1)

# collectstatic with storage $1 into a fresh STATIC_ROOT; prints the seconds.
collect() {
    rm -rf "$PROJECT/staticfiles"
    local t0 t1
    t0=$(date +%s.%N)
    (cd "$PROJECT" && BENCH_STORAGE=$1 "$VPY" manage.py collectstatic --noinput -v0) >&2 ||
        die "collectstatic with $1 failed"
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc
}

THEIRS=whitenoise.storage.CompressedManifestStaticFilesStorage
OURS=precompress.django.CompressedManifestStaticFilesStorage
NONE=django.contrib.staticfiles.storage.ManifestStaticFilesStorage
echo "project: $n asset files, $((bytes >> 20)) MiB, plus Django's admin; $(nproc) CPUs;" \
     "Django $($VPY -c 'import django; print(django.get_version())')," \
     "whitenoise $($VPY -c 'import importlib.metadata as m; print(m.version("whitenoise"))')," \
     "$("$VPY" -m precompress --version | cut -d' ' -f1-2)"
collect $THEIRS >/dev/null
collect $OURS >/dev/null
collect $NONE >/dev/null
declare -a W P N
for r in $(seq 1 "$RUNS"); do
    W+=("$(collect $THEIRS)")
    mv "$PROJECT/staticfiles" "$SCRATCH/static-theirs.tmp"
    P+=("$(collect $OURS)")
    mv "$PROJECT/staticfiles" "$SCRATCH/static-ours.tmp"
    N+=("$(collect $NONE)")
    mv "$SCRATCH/static-ours.tmp" "$PROJECT/staticfiles.ours"
    printf 'run %d: whitenoise %.2f s, precompress %.2f s, no compression %.2f s\n' \
        "$r" "${W[-1]}" "${P[-1]}" "${N[-1]}"
    if [[ $r == "$RUNS" ]]; then
        "$PY" - "$SCRATCH/static-theirs.tmp" "$PROJECT/staticfiles.ours" <<'EOF' ||
import filecmp, os, sys
def files(root):
    return {os.path.relpath(os.path.join(d, n), root) for d, _, ns in os.walk(root) for n in ns}
theirs, ours = sys.argv[1:]
a, b = files(theirs), files(ours)
extra = sorted(b - a)
bad = sorted(a - b) + [n for n in extra if not n.endswith(".gz") or n[:-3] + ".br" in b]
bad += [n for n in a if not filecmp.cmp(os.path.join(theirs, n), os.path.join(ours, n), shallow=False)]
if bad:
    sys.exit("differ: %s" % bad[:10])
print("the last trees are the same: %d files (%d .br, %d .gz), byte for byte; precompress also kept "
      "%d .gz where Brotli failed the 95%% rule" % (len(b), sum(n.endswith(".br") for n in b),
                                                   sum(n.endswith(".gz") for n in b), len(extra)))
EOF
            die "the two storages wrote different trees"
    fi
    rm -rf "$SCRATCH/static-theirs.tmp" "$PROJECT/staticfiles.ours"
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mw=$(median "${W[@]}")
mp=$(median "${P[@]}")
mn=$(median "${N[@]}")
printf 'median of %d: whitenoise %.2f s, precompress %.2f s, no compression %.2f s\n' "$RUNS" "$mw" "$mp" "$mn"
printf 'collectstatic: whitenoise / precompress = %.2fx\n' "$(echo "$mw / $mp" | bc -l)"
printf 'compression alone (less the no-compression median): whitenoise %.2f s, precompress %.2f s = %.2fx\n' \
    "$(echo "$mw - $mn" | bc -l)" "$(echo "$mp - $mn" | bc -l)" "$(echo "($mw - $mn) / ($mp - $mn)" | bc -l)"
