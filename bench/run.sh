#!/usr/bin/env bash
# bench/run.sh: precompress against its peers on four corpora, with the codec
# and I/O floors. Run by a developer, never by `meson test`. See bench/README.md.
#
#   bench/run.sh                     full run (about 55 min on 2 cores)
#   QUICK=1 RUNS=1 bench/run.sh      every corpus ~10x smaller: a quick check
#
# Environment:
#   SCRATCH=/tmp/pc-bench   where tools, corpora, copies and results live
#   RUNS=3                  measured runs per tool (medians are reported)
#   CORPORA="collectstatic frontend small large"   a subset, in this order
#   QUICK=0|1               shrink every corpus ~10x (own corpora dir)
#   PRECOMPRESS=PATH        binary to measure (default: a release build of this
#                           tree in $SCRATCH/build)
#   SMALL_BROTLI=0|1        also run precompress gzip+brotli on the small corpus
#                           (default 1 with QUICK=1, 0 otherwise: brotli q11 on
#                           100,000 files would take minutes per run)
#   RUNFS=auto|loop|dir     where the run copies go: loop = a fresh ext4 file
#                           system in $SCRATCH/runs.img mounted on $SCRATCH/runs
#                           (needs root; the default when it works), dir = a
#                           plain directory on $SCRATCH's file system
#   SETTLE=90|0             RUNFS=dir only: seconds to let ext4 forget the
#                           inodes a previous cleanup freed (see README)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
SCRATCH=${SCRATCH:-/tmp/pc-bench}
RUNS=${RUNS:-3}
QUICK=${QUICK:-0}
CORPORA=${CORPORA:-collectstatic frontend small large}
NPROC=$(nproc)
if [[ $QUICK == 1 ]]; then
    SMALL_BROTLI=${SMALL_BROTLI:-1}
    SETTLE=${SETTLE:-0}
    CORPDIR=$SCRATCH/corpora-quick
else
    SMALL_BROTLI=${SMALL_BROTLI:-0}
    SETTLE=${SETTLE:-90}
    CORPDIR=$SCRATCH/corpora
fi
RUNDIR=$SCRATCH/runs
RESDIR=$SCRATCH/results
LOGDIR=$SCRATCH/logs
TOOLS=$SCRATCH/tools
START=$(date +%s)

# Peers from npm, pinned so that two runs of this script compare the same code.
NPM_PEERS=(precompress@12.0.7 gzipper@8.2.1)
# Frontend packages (their dist/ or build/ files make the frontend corpus).
NPM_FRONT=(react-dom@19.3.1 vue@3.5.45 lodash@4.18.1 bootstrap@5.3.9
    @fortawesome/fontawesome-free@7.3.1 d3@7.9.2 chart.js@4.6.1 jquery@4.0.0
    monaco-editor@0.57.0 three@0.187.0 pdfjs-dist@6.5.438)

say() { printf '%s\n' "$*" >&2; }
die() {
    say "bench: $*"
    exit 1
}

[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer"
for c in $CORPORA; do
    case $c in collectstatic | frontend | small | large) ;; *) die "unknown corpus '$c'" ;; esac
done

mkdir -p "$SCRATCH" "$RESDIR" "$LOGDIR" "$TOOLS"

# ---------------------------------------------------------------- setup ------

APT_UPDATED=0
apt_install() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    say "bench: installing ${missing[*]}"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >"$LOGDIR/apt.log" 2>&1; then
        if ((APT_UPDATED == 0)); then
            APT_UPDATED=1
            apt-get update -q >>"$LOGDIR/apt.log" 2>&1 || true
        fi
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >>"$LOGDIR/apt.log" 2>&1 ||
            say "bench: apt-get install ${missing[*]} failed (see $LOGDIR/apt.log)"
    fi
}

setup_tools() {
    apt_install time gzip brotli findutils gcc libc6-dev zlib1g-dev libbrotli-dev \
        python3-django python3-whitenoise python3-brotli
    command -v npm >/dev/null || apt_install nodejs npm
    [[ -x /usr/bin/time ]] || die "/usr/bin/time (Debian package time) is needed"
    command -v cc >/dev/null || die "cc is needed"

    # helpers: the generator and the floors
    local xx=()
    if [[ -e /usr/include/xxhash.h ]]; then xx=(-DHAVE_XXHASH -lxxhash); fi
    if [[ ! -x $TOOLS/gen || $HERE/gen.c -nt $TOOLS/gen ]]; then
        cc -O2 -std=c11 -o "$TOOLS/gen" "$HERE/gen.c" || die "cannot build bench/gen.c"
    fi
    # (also when a floor built from another tree has no `codec --threads`)
    local floor_usage=""
    [[ -x $TOOLS/floor ]] && floor_usage=$("$TOOLS/floor" 2>&1 || true)
    if [[ ! -x $TOOLS/floor || $HERE/floor.c -nt $TOOLS/floor ||
        $floor_usage != *"codec [--gzip] [--brotli] [--threads N]"* ]]; then
        cc -O2 -std=c11 -Wall -Wextra -pthread -o "$TOOLS/floor" "$HERE/floor.c" -lz -lbrotlienc "${xx[@]}" ||
            die "cannot build bench/floor.c (needs zlib1g-dev libbrotli-dev)"
    fi

    # precompress itself
    if [[ -n ${PRECOMPRESS:-} ]]; then
        PC=$PRECOMPRESS
    else
        apt_install meson ninja-build pkg-config libuv1-dev
        PC=$SCRATCH/build/src/cli/precompress
        if [[ -f $SCRATCH/build/build.ninja ]]; then
            meson configure "$SCRATCH/build" -Dbuildtype=release -Dtests=false >/dev/null
        else
            meson setup "$SCRATCH/build" "$ROOT" -Dbuildtype=release -Dtests=false \
                >"$LOGDIR/meson.log" 2>&1 || die "meson setup failed (see $LOGDIR/meson.log)"
        fi
        ninja -C "$SCRATCH/build" >"$LOGDIR/ninja.log" 2>&1 || die "build failed (see $LOGDIR/ninja.log)"
    fi
    [[ -x $PC ]] || die "no precompress binary at $PC"
    PC_HELP=$("$PC" --help 2>&1 || true)
    HAS_CACHE=0
    grep -q -- '--cache-dir' <<<"$PC_HELP" && HAS_CACHE=1
    HAS_MANIFEST=0
    grep -q -- '--manifest' <<<"$PC_HELP" && HAS_MANIFEST=1

    # npm peers
    if command -v npm >/dev/null; then
        if [[ ! -x $SCRATCH/npm/node_modules/.bin/precompress || ! -x $SCRATCH/npm/node_modules/.bin/gzipper ]]; then
            say "bench: npm install ${NPM_PEERS[*]}"
            mkdir -p "$SCRATCH/npm"
            npm install --prefix "$SCRATCH/npm" --no-audit --no-fund "${NPM_PEERS[@]}" \
                >"$LOGDIR/npm-peers.log" 2>&1 || say "bench: npm install of the peers failed (see $LOGDIR/npm-peers.log)"
        fi
    fi
    NPM_PC=$SCRATCH/npm/node_modules/.bin/precompress
    GZIPPER=$SCRATCH/npm/node_modules/.bin/gzipper

    # which peers can run at all (a reason when not)
    declare -gA SKIP=()
    /usr/bin/python3 -c 'import whitenoise.compress' 2>/dev/null ||
        SKIP[whitenoise]="python3-whitenoise not importable by /usr/bin/python3"
    /usr/bin/python3 -c 'import brotli' 2>/dev/null ||
        SKIP[whitenoise]="python3-brotli missing: whitenoise would write no .br"
    "$NPM_PC" --help >/dev/null 2>&1 || SKIP[npm-precompress]="npm precompress not installed or not runnable"
    "$GZIPPER" --help >/dev/null 2>&1 || SKIP[gzipper]="gzipper not installed or not runnable"
    command -v brotli >/dev/null || SKIP[xargs]="brotli CLI (Debian package brotli) missing"
}

# ---------------------------------------------------------------- corpora ----

build_collectstatic() { # $1 = corpus dir
    local dst=$1 proj=$SCRATCH/django
    [[ $QUICK == 1 ]] && proj=$SCRATCH/django-quick
    rm -rf "$proj" "$dst"
    mkdir -p "$proj"
    /usr/bin/python3 -m django startproject benchsite "$proj" || die "django-admin startproject failed"
    # the site's own assets beside the admin's: what a Django site serves
    mkdir -p "$proj/assets"
    if [[ $QUICK != 1 ]]; then
        local nm=$SCRATCH/npm-front/node_modules
        mkdir -p "$proj/assets/vendor/fontawesome"
        cp -a "$nm/bootstrap/dist" "$proj/assets/vendor/bootstrap"
        cp -a "$nm/jquery/dist" "$proj/assets/vendor/jquery"
        cp -a "$nm/@fortawesome/fontawesome-free/css" "$nm/@fortawesome/fontawesome-free/webfonts" \
            "$proj/assets/vendor/fontawesome/"
        # no source maps (they would double the corpus), and no references
        # to them (Django >= 4.1 resolves sourceMappingURL)
        find "$proj/assets" -name '*.map' -delete
        find "$proj/assets" \( -name '*.js' -o -name '*.css' \) -exec sed -i '/sourceMappingURL=/d' {} +
    fi
    cat >>"$proj/benchsite/settings.py" <<EOF

# --- bench/run.sh ---
import django as _django
STATIC_ROOT = "$dst"
STATICFILES_DIRS = ["$proj/assets"]
if _django.VERSION >= (4, 2):
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"},
    }
else:
    STATICFILES_STORAGE = "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"
EOF
    (cd "$proj" && /usr/bin/python3 manage.py collectstatic --noinput -v 0) ||
        die "collectstatic failed"
}

npm_front() {
    local nm=$SCRATCH/npm-front/node_modules
    [[ -d $nm/monaco-editor/min && -d $nm/three/build && -d $nm/pdfjs-dist/build ]] && return 0
    say "bench: npm install the frontend packages into $SCRATCH/npm-front"
    mkdir -p "$SCRATCH/npm-front"
    npm install --prefix "$SCRATCH/npm-front" --no-audit --no-fund --ignore-scripts "${NPM_FRONT[@]}" \
        >"$LOGDIR/npm-front.log" 2>&1 || die "npm install of the frontend packages failed (see $LOGDIR/npm-front.log)"
}

build_frontend() {
    local dst=$1 nm=$SCRATCH/npm-front/node_modules parts
    rm -rf "$dst"
    mkdir -p "$dst"
    if [[ $QUICK == 1 ]]; then
        parts=(vue/dist jquery/dist d3/dist lodash)
    else
        parts=(react-dom/cjs vue/dist lodash bootstrap/dist d3/dist chart.js/dist jquery/dist
            @fortawesome/fontawesome-free/css @fortawesome/fontawesome-free/js
            @fortawesome/fontawesome-free/svgs @fortawesome/fontawesome-free/sprites
            @fortawesome/fontawesome-free/webfonts monaco-editor/min pdfjs-dist/build)
    fi
    for p in "${parts[@]}"; do
        mkdir -p "$dst/$(dirname "$p")"
        if [[ $p == lodash ]]; then # no dist/: its modules are what a bundle splits into
            mkdir -p "$dst/lodash"
            cp -a "$nm"/lodash/*.js "$nm/lodash/fp" "$dst/lodash/"
        else
            cp -a "$nm/$p" "$dst/$p"
        fi
    done
    # monaco's language workers (ts.worker.js: 6.7 and 7.0 MB) and pdf.js's
    # workers stay: they are where brotli 11 makes users wait, and where a
    # scheduler that leaves a core idle shows. Left out to keep the run
    # near 40 min: pdf.js's maps, Font Awesome's thousands of single SVGs
    # (the small corpus measures many small files).
    rm -f "$dst"/pdfjs-dist/build/*.map
    rm -rf "$dst/@fortawesome/fontawesome-free/svgs"
    find "$dst" -type f ! \( -name '*.js' -o -name '*.mjs' -o -name '*.cjs' -o -name '*.css' \
        -o -name '*.map' -o -name '*.json' -o -name '*.svg' -o -name '*.html' -o -name '*.txt' \
        -o -name '*.ttf' -o -name '*.woff2' -o -name '*.ts' \) -delete
}

build_small() {
    local n=100000
    [[ $QUICK == 1 ]] && n=10000
    rm -rf "$1"
    "$TOOLS/gen" small "$1" "$n" || die "gen small failed"
}

# What a big single-page app ships: a bundle and its source map, a JSON data
# file, a binary blob compressed already (a name no skip list knows), and a
# few small files. Every format of every file is measured: brotli 11 on the
# big ones is the hard case.
build_large() {
    local d=$1 div=1 spec kind name kib
    [[ $QUICK == 1 ]] && div=10
    rm -rf "$d"
    mkdir -p "$d/assets"
    for spec in large:assets/app.bundle.js:8192 large:assets/app.bundle.js.map:8192 \
        large:assets/data.json:4096 blob:assets/model.bin:4096 \
        large:index.html:4 large:assets/app.css:96 large:assets/vendor.js:384 large:robots.txt:1; do
        IFS=: read -r kind name kib <<<"$spec"
        "$TOOLS/gen" "$kind" "$d/$name" $((kib * 1024 / div)) "${#name}$kib" || die "gen $kind failed"
    done
}

corpus() { # $1 = name; builds it once, prints its path
    local name=$1 dir=$CORPDIR/$1
    if [[ ! -f $CORPDIR/$name.done ]]; then
        say "bench: building corpus $name in $dir"
        mkdir -p "$CORPDIR"
        case $name in
        collectstatic)
            [[ $QUICK == 1 ]] || npm_front
            build_collectstatic "$dir"
            ;;
        frontend)
            npm_front
            build_frontend "$dir"
            ;;
        small) build_small "$dir" ;;
        large) build_large "$dir" ;;
        esac
        touch "$CORPDIR/$name.done"
    fi
    printf '%s\n' "$dir"
}

# ---------------------------------------------------------------- measuring --

SEQ=0
fresh_copy() { # $1 = corpus dir -> COPY = path of a new copy (copying is not timed)
    SEQ=$((SEQ + 1))
    COPY=$RUNDIR/$(basename "$1").$SEQ
    mkdir -p "$RUNDIR"
    cp -a "$1" "$COPY"
    sync # the copy's writeback must not overlap the measured run
}

outputs() { # $1 = dir -> "count bytes" of *.gz *.br *.zst in it
    find "$1" -type f \( -name '*.gz' -o -name '*.br' -o -name '*.zst' \) -printf '%s\n' |
        awk '{n++; s+=$1} END {printf "%d %d\n", n, s}'
}

median() { # numbers on stdin -> median
    sort -g | awk '{a[NR]=$1} END {if (NR==0) {print "nan"; exit}
        if (NR%2) print a[(NR+1)/2]; else printf "%.6g\n", (a[NR/2]+a[NR/2+1])/2}'
}

CLK_TCK=$(getconf CLK_TCK)
busy_jiffies() { # CPU time used by the whole machine so far (all cores)
    awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat
}

# timed LOG CMD...: runs CMD under /usr/bin/time; sets T_WALL T_CPU T_RSS and
# T_OTHER (CPU seconds the rest of the machine used meanwhile: other
# processes, kernel writeback; a large value means a disturbed measurement)
timed() {
    local log=$1 tf
    shift
    tf=$(mktemp)
    local rc=0 b0 b1
    b0=$(busy_jiffies)
    /usr/bin/time -o "$tf" -f '%e %U %S %M' "$@" >>"$log" 2>&1 </dev/null || rc=$?
    b1=$(busy_jiffies)
    local wall user sys rss
    read -r wall user sys rss < <(tail -n 1 "$tf")
    rm -f "$tf"
    T_WALL=$wall
    T_CPU=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u+s}')
    T_RSS=$rss
    T_OTHER=$(awk -v a="$b0" -v b="$b1" -v t="$CLK_TCK" -v c="$T_CPU" \
        'BEGIN {o = (b - a) / t - c; if (o < 0) o = 0; printf "%.2f", o}')
    return "$rc"
}

# Rows of a corpus go to $RESDIR/$corpus.rows, one per line, tab-separated:
#   id  label  formats  wall  cpu  rss_kb  outputs  bytes  other_cpu  note
# Samples of one row go to $RESDIR/$corpus.$id.samples:
#   wall cpu rss count bytes other_cpu
add_row() { # corpus id label formats note
    local c=$1 id=$2 label=$3 fmt=$4 note=${5:-} s=$RESDIR/$1.$2.samples
    if [[ ! -s $s ]]; then
        printf '%s\t%s\t%s\t-\t-\t-\t-\t-\t-\t%s\n' "$id" "$label" "$fmt" "$note" >>"$RESDIR/$c.rows"
        return
    fi
    local wall cpu rss cnt bytes other
    wall=$(cut -d' ' -f1 "$s" | median)
    other=$(cut -d' ' -f6 "$s" | median)
    cpu=$(cut -d' ' -f2 "$s" | median)
    rss=$(cut -d' ' -f3 "$s" | median)
    cnt=$(cut -d' ' -f4 "$s" | median)
    bytes=$(cut -d' ' -f5 "$s" | median)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$label" "$fmt" "$wall" "$cpu" "$rss" \
        "$cnt" "$bytes" "$other" "$note" >>"$RESDIR/$c.rows"
}

sample() { # corpus id dir -> appends the last timed run's numbers
    local out
    out=$(outputs "$3")
    echo "$T_WALL $T_CPU $T_RSS $out $T_OTHER" >>"$RESDIR/$1.$2.samples"
}

# cmd_for ID DIR: sets CMD (an array) for one tool on DIR
cmd_for() {
    local id=$1 d=$2
    case $id in
    pc) CMD=("$PC" -q "$d") ;;
    pc-m256) CMD=("$PC" -q --memory-limit 256M "$d") ;;
    pc-m64) CMD=("$PC" -q --memory-limit 64M "$d") ;;
    pc-gz) CMD=("$PC" -q --no-brotli "$d") ;;
    whitenoise) CMD=(/usr/bin/python3 -m whitenoise.compress -q "$d") ;;
    whitenoise-gz) CMD=(/usr/bin/python3 -m whitenoise.compress -q --no-brotli "$d") ;;
    npm-precompress) CMD=("$NPM_PC" -s "$d") ;;
    npm-precompress-gz) CMD=("$NPM_PC" -s -t gz "$d") ;;
    gzipper) CMD=("$GZIPPER" c --gzip --gzip-level 9 --brotli "$d") ;;
    gzipper-gz) CMD=("$GZIPPER" c --gzip --gzip-level 9 "$d") ;;
    xargs) CMD=(sh -c '
        find "$1" -type f ! -name "*.gz" ! -name "*.br" -print0 | xargs -0 -P"$2" -n 16 gzip -9 -k -n
        find "$1" -type f ! -name "*.gz" ! -name "*.br" -print0 | xargs -0 -P"$2" -n 16 brotli -q 11 -k
        ' sh "$d" "$NPROC") ;;
    xargs-gz) CMD=(sh -c '
        find "$1" -type f ! -name "*.gz" ! -name "*.br" -print0 | xargs -0 -P"$2" -n 16 gzip -9 -k -n
        ' sh "$d" "$NPROC") ;;
    *) die "cmd_for: $id" ;;
    esac
}

skip_key() { # tool id -> key in SKIP
    case $1 in
    whitenoise*) echo whitenoise ;; npm-precompress*) echo npm-precompress ;;
    gzipper*) echo gzipper ;; xargs*) echo "$([[ $1 == xargs-gz ]] && echo none || echo xargs)" ;;
    *) echo none ;;
    esac
}

# bench_tool corpus corpusdir id label formats
bench_tool() {
    local c=$1 src=$2 id=$3 label=$4 fmt=$5 k note=""
    k=$(skip_key "$id")
    if [[ -n ${SKIP[$k]:-} ]]; then
        say "bench: $c: skipping $label: ${SKIP[$k]}"
        add_row "$c" "$id" "$label" "$fmt" "n/a: ${SKIP[$k]}"
        return
    fi
    local i d log=$LOGDIR/$c.$id.log
    : >"$log"
    for ((i = 1; i <= RUNS; i++)); do
        fresh_copy "$src"
        d=$COPY
        cmd_for "$id" "$d"
        say "bench: $c: $label (run $i/$RUNS)"
        if ! timed "$log" "${CMD[@]}"; then
            note="n/a: exited non-zero, see $log: $(tail -n 1 "$log" | cut -c1-80)"
            say "bench: $c: $label failed: $(tail -n 3 "$log")"
            rm -f "$RESDIR/$c.$id.samples"
            break
        fi
        sample "$c" "$id" "$d"
    done
    add_row "$c" "$id" "$label" "$fmt" "$note"
}

# The incremental modes of precompress: a first run with --manifest (and a
# cold --cache-dir where the binary has it), a second run on the same
# unchanged tree, and a fresh copy with the now warm cache.
bench_incremental() { # corpus corpusdir fmtargs(string) formats
    local c=$1 src=$2 fa=$3 fmt=$4 i d m cache log
    log=$LOGDIR/$c.incremental.log
    : >"$log"
    local -a f
    read -r -a f <<<"$fa"
    if ((HAS_MANIFEST == 0)); then
        add_row "$c" inc1 "precompress --manifest, 1st run" "$fmt" "n/a: binary has no --manifest"
        add_row "$c" inc2 "precompress --manifest, 2nd run, unchanged" "$fmt" "n/a: binary has no --manifest"
    fi
    local label1="precompress --manifest, 1st run"
    ((HAS_CACHE)) && label1="precompress --manifest --cache-dir, 1st run (cold)"
    local ok=1 note1="" note2="" note3=""
    : >"$RESDIR/$c.statfloor.samples"
    for ((i = 1; i <= RUNS && HAS_MANIFEST; i++)); do
        fresh_copy "$src"
        d=$COPY
        m=$RUNDIR/$c.manifest.$i.json
        cache=$RUNDIR/$c.cache.$i
        local -a extra=(--manifest "$m")
        ((HAS_CACHE)) && extra+=(--cache-dir "$cache")
        say "bench: $c: precompress incremental modes (run $i/$RUNS)"
        if ! timed "$log" "$PC" -q "${f[@]}" "${extra[@]}" "$d"; then
            note1="n/a: exited non-zero, see $log"
            ok=0
            break
        fi
        sample "$c" inc1 "$d"
        if ! timed "$log" "$PC" -q "${f[@]}" "${extra[@]}" "$d"; then
            note2="n/a: exited non-zero, see $log"
            ok=0
            break
        fi
        sample "$c" inc2 "$d"
        # The least that second run could cost: the listing, and a stat per
        # file and per output, on every core (bench/floor.c).
        local -a sf=(--gzip --brotli)
        [[ " ${f[*]} " == *" --no-brotli "* ]] && sf=(--gzip)
        "$TOOLS/floor" stat "${sf[@]}" "$d" >>"$RESDIR/$c.statfloor.samples" 2>>"$log" ||
            say "bench: $c: floor stat failed (see $log)"
        if ((HAS_CACHE)); then
            fresh_copy "$src"
            d=$COPY
            if ! timed "$log" "$PC" -q "${f[@]}" --cache-dir "$cache" "$d"; then
                note3="n/a: exited non-zero, see $log"
                ok=0
                break
            fi
            sample "$c" inc3 "$d"
        fi
    done
    if ((ok == 0)); then
        say "bench: $c: incremental run failed: $(tail -n 3 "$log")"
        rm -f "$RESDIR/$c".inc*.samples
    fi
    if ((HAS_MANIFEST)); then
        add_row "$c" inc1 "$label1" "$fmt" "$note1"
        add_row "$c" inc2 "precompress --manifest, 2nd run, unchanged tree" "$fmt" "$note2"
    fi
    if ((HAS_CACHE)); then
        add_row "$c" inc3 "precompress --cache-dir (warm), fresh copy" "$fmt" "$note3"
    else
        add_row "$c" inc3 "precompress --cache-dir (warm), fresh copy" "$fmt" "n/a: binary has no --cache-dir"
    fi
}

# Floors: codec CPU on the distinct contents (once on every core, once on one
# thread), I/O loop (RUNS times). The floor is the run on every core: two
# codecs at once each take more CPU than one alone (shared caches, memory
# bandwidth), and every tool here keeps the cores busy. Right after the
# tools, since the machine's speed drifts between minutes.
bench_floors() { # corpus corpusdir codec-flags...
    local c=$1 src=$2 i d
    shift 2
    say "bench: $c: codec floor on ${NPROC} threads ($*)"
    "$TOOLS/floor" codec --threads "$NPROC" "$@" "$src" >"$RESDIR/$c.codec" 2>"$LOGDIR/$c.floor.log" ||
        die "floor codec --threads $NPROC failed on $c (see $LOGDIR/$c.floor.log)"
    if ((NPROC > 1)); then
        say "bench: $c: codec floor on one thread ($*)"
        "$TOOLS/floor" codec --threads 1 "$@" "$src" >"$RESDIR/$c.codec1" 2>>"$LOGDIR/$c.floor.log" ||
            die "floor codec --threads 1 failed on $c (see $LOGDIR/$c.floor.log)"
    else
        cp "$RESDIR/$c.codec" "$RESDIR/$c.codec1"
    fi
    : >"$RESDIR/$c.io.samples"
    for ((i = 1; i <= RUNS; i++)); do
        fresh_copy "$src"
        d=$COPY
        say "bench: $c: I/O floor (run $i/$RUNS)"
        "$TOOLS/floor" io "$d" >>"$RESDIR/$c.io.samples" 2>>"$LOGDIR/$c.floor.log" ||
            die "floor io failed on $c (see $LOGDIR/$c.floor.log)"
    done
}

kv() { # key file -> value of key=value in file (first line)
    tr ' ' '\n' <"$2" | sed -n "s/^$1=//p" | head -n 1
}

# ---------------------------------------------------------------- report -----

fmt_bytes() { awk -v b="$1" 'BEGIN { if (b == "-") print "-"; else printf "%.2f MB", b/1e6 }'; }

report_corpus() { # corpus corpusdir
    local c=$1 src=$2
    local rows=$RESDIR/$c.rows
    local nfiles nbytes
    nfiles=$(find "$src" -type f | wc -l)
    nbytes=$(du -sb --apparent-size "$src" | cut -f1)
    local gz_cpu br_cpu distinct dbytes io
    gz_cpu=$(kv gzip_cpu "$RESDIR/$c.codec")
    br_cpu=$(kv brotli_cpu "$RESDIR/$c.codec")
    distinct=$(kv distinct "$RESDIR/$c.codec")
    local slowest slowest_file
    slowest=$(kv slowest "$RESDIR/$c.codec")
    slowest=${slowest:-0}
    slowest_file=$(sed -n 's/^slowest_file=//p' "$RESDIR/$c.codec")
    dbytes=$(kv distinct_bytes "$RESDIR/$c.codec")
    # the bare codecs on every core (above, the floor) against one thread
    local cpu_n cpu_1 cpu_pct bare_wall
    cpu_n=$(awk -v g="$gz_cpu" -v b="$br_cpu" 'BEGIN {printf "%.2f", g+b}')
    cpu_1=$(awk -v g="$(kv gzip_cpu "$RESDIR/$c.codec1")" -v b="$(kv brotli_cpu "$RESDIR/$c.codec1")" \
        'BEGIN {printf "%.2f", g+b}')
    cpu_pct=$(awk -v a="$cpu_n" -v b="$cpu_1" 'BEGIN {if (b > 0) printf "%+.1f%%", 100*(a/b-1); else print "-"}')
    bare_wall=$(kv wall "$RESDIR/$c.codec")
    io=$(sed -n 's/.*io_wall=\([0-9.]*\).*/\1/p' "$RESDIR/$c.io.samples" | median)

    # the base row for each formats group: our main run
    local base_gzbr base_gz
    base_gzbr=$(awk -F'\t' '$1=="pc" {print $4}' "$rows")
    base_gz=$(awk -F'\t' '$1=="pc-gz" {print $4}' "$rows")
    local base_bytes
    base_bytes=$(awk -F'\t' '$1=="pc" || $1=="pc-gz" {print $8; exit}' "$rows")
    # precompress's row with the formats the codec floor ran
    local base_main=$base_gz main_fmt=gzip
    if [[ $br_cpu != 0.000 ]]; then
        base_main=$base_gzbr
        main_fmt=gzip+brotli
    fi

    # The practical floor: no run ends before codec CPU / cores, nor before
    # its slowest file's codecs are done (one file's formats run in one job).
    local cf_gz cf_gzbr pf_gz pf_gzbr
    cf_gz=$(awk -v g="$gz_cpu" -v n="$NPROC" 'BEGIN {printf "%.2f", g/n}')
    cf_gzbr=$(awk -v g="$gz_cpu" -v b="$br_cpu" -v n="$NPROC" 'BEGIN {printf "%.2f", (g+b)/n}')
    pf_gzbr=$(awk -v a="$cf_gzbr" -v s="$slowest" 'BEGIN {printf "%.2f", (a + 0 > s + 0 ? a : s)}')
    pf_gz=$cf_gz
    [[ $br_cpu == 0.000 ]] && pf_gz=$(awk -v a="$cf_gz" -v s="$slowest" 'BEGIN {printf "%.2f", (a + 0 > s + 0 ? a : s)}')
    {
        echo
        echo "### $c: $nfiles files, $(fmt_bytes "$nbytes"), $distinct distinct contents ($(fmt_bytes "$dbytes")) to compress"
        echo
        echo "Medians of $RUNS run(s), ${NPROC} cores. \`vs ours\`: this tool's wall / precompress's wall for the same formats (above 1: precompress is faster); for precompress's incremental rows: % of its plain run's wall. \`vs floor\`: wall / the practical floor for its formats (below)."
        echo
        echo "| tool | formats | wall s | CPU s | peak RSS MiB | outputs | output bytes | vs ours | vs floor | other CPU s | note |"
        echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
        while IFS=$'\t' read -r id label fmt wall cpu rss cnt bytes other note; do
            local rel="" rmib="-" base="" pf="" vf="-"
            [[ $fmt == gz ]] && base=$base_gz && pf=$pf_gz
            [[ $fmt == gz+br ]] && base=$base_gzbr && pf=$pf_gzbr
            [[ $fmt == gz+br && $br_cpu == 0.000 ]] && pf=""
            if [[ $wall != - && -n $pf ]]; then
                vf=$(awk -v a="$wall" -v b="$pf" 'BEGIN {if (b > 0) printf "%.2fx", a/b; else print "-"}')
            fi
            [[ $rss != - ]] && rmib=$(awk -v r="$rss" 'BEGIN {printf "%.1f", r/1024}')
            if [[ $wall != - && -n $base ]]; then
                case $id in
                pc | pc-gz) rel="1.00" ;;
                inc*) rel=$(awk -v a="$wall" -v b="$base" 'BEGIN {printf "%.1f%%", 100*a/b}') ;;
                *) rel=$(awk -v a="$wall" -v b="$base" 'BEGIN {printf "%.2fx", a/b}') ;;
                esac
            fi
            if [[ $other != - ]] && awk -v o="$other" -v c="$cpu" 'BEGIN {exit !(o > 1 && o > 0.5 * c)}'; then
                note="${note:+$note; }disturbed (other CPU)"
            fi
            if [[ $id == inc* && $bytes != - && -n $base_bytes && $bytes != "$base_bytes" ]]; then
                note="${note:+$note; }output bytes differ from the plain run's ($base_bytes)"
            fi
            echo "| $label | $fmt | $wall | $cpu | $rmib | $cnt | $bytes | ${rel:--} | $vf | $other | $note |"
        done <"$rows"
        echo
        echo "Practical floor: max(codec CPU / ${NPROC} cores, slowest file's codecs ${slowest} s${slowest_file:+ (${slowest_file#"$src"/})}):" \
            "gzip ${pf_gz} s$([[ $br_cpu != 0.000 ]] && echo ", gzip+brotli ${pf_gzbr} s")."
        echo
        echo "Floors: codec CPU on the distinct contents: gzip ${gz_cpu} s, brotli ${br_cpu} s" \
            "(${NPROC} threads, bare zlib/libbrotli calls); codec floor wall = CPU / ${NPROC} cores:" \
            "gzip ${cf_gz} s$([[ $br_cpu != 0.000 ]] && echo ", gzip+brotli ${cf_gzbr} s");" \
            "I/O floor (read + write one output per file as precompress writes a new one: unnamed temp, fchmod, futimens, link; one thread): ${io} s."
        echo
        echo "Codec CPU ${cpu_n} s on ${NPROC} threads (${cpu_1} s on one thread: ${cpu_pct} when the cores share the machine);" \
            "bare codecs on ${NPROC} threads, largest first: wall ${bare_wall} s."
        echo
        if [[ -n $base_gzbr && $base_gzbr != - && $br_cpu != 0.000 ]]; then
            echo "- precompress gzip+brotli / codec floor: $(awk -v a="$base_gzbr" -v b="$cf_gzbr" 'BEGIN {printf "%.2fx", a/b}')" \
                "; / (I/O floor + codec floor): $(awk -v a="$base_gzbr" -v b="$cf_gzbr" -v c="$io" 'BEGIN {printf "%.2fx", a/(b+c)}')"
        fi
        if [[ -n $base_gz && $base_gz != - ]]; then
            echo "- precompress gzip / codec floor: $(awk -v a="$base_gz" -v b="$cf_gz" 'BEGIN {printf "%.2fx", a/b}')" \
                "; / (I/O floor + codec floor): $(awk -v a="$base_gz" -v b="$cf_gz" -v c="$io" 'BEGIN {printf "%.2fx", a/(b+c)}')"
        fi
        if [[ -n $base_main && $base_main != - ]]; then
            echo "- precompress ${main_fmt} / bare-codec run (${bare_wall} s on ${NPROC} threads, largest first):" \
                "$(awk -v a="$base_main" -v b="$bare_wall" 'BEGIN {if (b > 0) printf "%.2fx", a/b; else print "-"}')"
        fi
    } >"$RESDIR/$c.md"
    # for the checks
    printf '%s\n' "$cf_gz $cf_gzbr $io $pf_gz $pf_gzbr" >"$RESDIR/$c.floors"
}

row_val() { # corpus id column(4=wall,6=rss) -> value or empty
    [[ -f $RESDIR/$1.rows ]] || return 0
    awk -F'\t' -v id="$2" -v col="$3" '$1==id && $col!="-" {print $col}' "$RESDIR/$1.rows"
}

check_line() { # label value target op(le) unit
    local label=$1 v=$2 t=$3
    if [[ -z $v ]]; then
        echo "| $label | n/a | $t | - |"
        return
    fi
    local ok
    ok=$(awk -v v="$v" -v t="$t" 'BEGIN {print (v <= t) ? "met" : "MISSED"}')
    echo "| $label | $v | <= $t | $ok |"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (a=="" || b=="" || b==0) print ""; else printf "%.3f", a/b}'; }

report_checks() {
    echo
    echo "### Targets: against whitenoise and the floors, second runs, the cache (ratios from this run)"
    echo
    echo "| check | value | target | |"
    echo "|---|---:|---:|---|"
    local f
    if [[ -f $RESDIR/collectstatic.rows ]]; then
        check_line "collectstatic gz+br: precompress wall / whitenoise wall" \
            "$(ratio "$(row_val collectstatic pc 4)" "$(row_val collectstatic whitenoise 4)")" 0.45
    fi
    if [[ -f $RESDIR/frontend.rows ]]; then
        read -r _ f _ <"$RESDIR/frontend.floors"
        check_line "frontend gz+br: precompress wall / codec floor" \
            "$(ratio "$(row_val frontend pc 4)" "$f")" 1.08
    fi
    if [[ -f $RESDIR/small.rows ]]; then
        check_line "small gz: precompress wall / whitenoise wall" \
            "$(ratio "$(row_val small pc-gz 4)" "$(row_val small whitenoise-gz 4)")" 0.5
        local g io
        read -r g _ io <"$RESDIR/small.floors"
        check_line "small gz: precompress wall / (I/O floor + codec floor)" \
            "$(ratio "$(row_val small pc-gz 4)" "$(awk -v a="$g" -v b="$io" 'BEGIN {print a+b}')")" 1.3
    fi
    for c in collectstatic frontend small large; do
        [[ -f $RESDIR/$c.rows ]] || continue
        local base
        base=$(row_val "$c" pc 4)
        [[ -n $base ]] || base=$(row_val "$c" pc-gz 4)
        check_line "$c: 2nd run with --manifest, unchanged tree / plain run" \
            "$(ratio "$(row_val "$c" inc2 4)" "$base")" 0.02
        local sfw
        sfw=$(sed -n 's/.*stat_wall=\([0-9.]*\).*/\1/p' "$RESDIR/$c.statfloor.samples" 2>/dev/null | median)
        if [[ -n $sfw && $sfw != nan ]]; then
            echo "| ($c: stat floor ${sfw} s: listing + a stat per file and output on ${NPROC} threads / plain run) | $(ratio "$sfw" "$base") | - | - |"
            echo "| ($c: 2nd run / that stat floor) | $(ratio "$(row_val "$c" inc2 4)" "$sfw") | - | - |"
        fi
        if [[ $c == collectstatic || $c == frontend ]]; then
            check_line "$c: fresh copy with warm --cache-dir / plain run" \
                "$(ratio "$(row_val "$c" inc3 4)" "$base")" 0.05
        fi
    done
    # No cap on peak RSS here: memory is used up to the memory limit, which
    # the next table checks (--memory-limit 256M on the large corpus).

    echo
    echo "### Targets: big files, the memory limit, every peer (ratios from this run)"
    echo
    echo "| check | value | target | |"
    echo "|---|---:|---:|---|"
    local pf
    if [[ -f $RESDIR/large.rows ]]; then
        read -r _ _ _ _ pf <"$RESDIR/large.floors"
        check_line "large gz+br: precompress wall / whitenoise wall" \
            "$(ratio "$(row_val large pc 4)" "$(row_val large whitenoise 4)")" 0.55
        check_line "large gz+br: precompress wall / practical floor ($pf s)" \
            "$(ratio "$(row_val large pc 4)" "$pf")" 1.05
        local r
        r=$(row_val large pc-m256 6)
        check_line "large gz+br --memory-limit 256M: peak RSS MiB" \
            "$([[ -n $r ]] && awk -v r="$r" 'BEGIN {printf "%.1f", r/1024}')" 272
        check_line "large gz+br --memory-limit 256M: wall / practical floor" \
            "$(ratio "$(row_val large pc-m256 4)" "$pf")" 1.05
        r=$(row_val large pc-m64 6)
        echo "| large gz+br --memory-limit 64M: completes (wall $(row_val large pc-m64 4) s, peak RSS $([[ -n $r ]] && awk -v r="$r" 'BEGIN {printf "%.1f", r/1024}') MiB) | $([[ -n $(row_val large pc-m64 4) ]] && echo yes || echo no) | yes | $([[ -n $(row_val large pc-m64 4) ]] && echo met || echo MISSED) |"
    fi
    if [[ -f $RESDIR/frontend.rows ]]; then
        read -r _ _ _ _ pf <"$RESDIR/frontend.floors"
        check_line "frontend gz+br: precompress wall / whitenoise wall" \
            "$(ratio "$(row_val frontend pc 4)" "$(row_val frontend whitenoise 4)")" 0.95
        check_line "frontend gz+br: precompress wall / practical floor ($pf s)" \
            "$(ratio "$(row_val frontend pc 4)" "$pf")" 1.05
    fi
    # Never slower than any peer: precompress's wall / each peer's, same formats.
    for c in collectstatic frontend small large; do
        [[ -f $RESDIR/$c.rows ]] || continue
        local id ours peer
        while IFS=$'\t' read -r id _ fmt wall _; do
            case $id in whitenoise* | npm-precompress* | gzipper* | xargs*) ;; *) continue ;; esac
            [[ $wall == - ]] && continue
            ours=$(row_val "$c" "$([[ $fmt == gz ]] && echo pc-gz || echo pc)" 4)
            check_line "$c $fmt: precompress wall / $id wall" "$(ratio "$ours" "$wall")" 1.00
        done <"$RESDIR/$c.rows"
    done
}

# Markdown on stdin -> the same text with its tables aligned for a terminal.
pretty() {
    awk -F'|' '
    function flush(   i, j, line, cell) {
        for (i = 1; i <= nrow; i++) {
            line = ""
            for (j = 2; j < ncol[i]; j++) {
                cell = row[i, j]
                if (sep[i]) { cell = sprintf("%" w[j] "s", ""); gsub(/ /, "-", cell) }
                else if (cell ~ /^[-0-9.]+(x|%)?$/) cell = sprintf("%" w[j] "s", cell)
                else cell = sprintf("%-" w[j] "s", cell)
                line = line (j > 2 ? "  " : "") cell
            }
            print line
        }
        nrow = 0; delete w
    }
    /^\|/ {
        nrow++; ncol[nrow] = NF; sep[nrow] = ($0 ~ /^\|[-:|]+\|$/)
        for (j = 2; j < NF; j++) {
            c = $j; gsub(/^ +| +$/, "", c); row[nrow, j] = c
            if (!sep[nrow] && length(c) > w[j]) w[j] = length(c)
        }
        next
    }
    { if (nrow) flush(); print }
    END { if (nrow) flush() }'
}

# ---------------------------------------------------------------- main -------

RUNFS_MODE=dir
cleanup() {
    if mountpoint -q "$RUNDIR" 2>/dev/null; then
        say "bench: unmounting and removing the run file system ($RUNDIR)"
        umount "$RUNDIR" || umount -l "$RUNDIR" || true
        rm -f "$SCRATCH/runs.img"
        rmdir "$RUNDIR" 2>/dev/null || true
    elif [[ -d $RUNDIR ]]; then
        say "bench: removing the run copies in $RUNDIR"
        rm -rf "$RUNDIR"
        date +%s >"$SCRATCH/.last-cleanup"
    fi
    rm -f "$SCRATCH/runs.img"
}

# The run copies live on a fresh file system when possible. This machine's
# ext4 (no journal) does not reuse an inode freed in the last 60 s (300 s
# while its table block is dirty) and scans past every such inode on each
# create: a run after deleting a big tree pays for the deletion. Deleting
# nothing while measuring avoids that; a fresh file system also makes the
# final cleanup one umount instead of removing millions of cold files.
setup_runfs() {
    cleanup # an interrupted run's leftovers
    local want=${RUNFS:-auto}
    if [[ $want == auto || $want == loop ]]; then
        local size=64G
        [[ $QUICK == 1 ]] && size=8G
        mkdir -p "$RUNDIR"
        if [[ $EUID == 0 ]] && command -v mkfs.ext4 >/dev/null &&
            truncate -s "$size" "$SCRATCH/runs.img" &&
            mkfs.ext4 -q -F -O ^has_journal -i 8192 -E nodiscard "$SCRATCH/runs.img" \
                >"$LOGDIR/mkfs.log" 2>&1 &&
            mount -o loop,noinit_itable "$SCRATCH/runs.img" "$RUNDIR" >>"$LOGDIR/mkfs.log" 2>&1; then
            RUNFS_MODE=loop
            say "bench: run copies on a fresh ext4 ($size sparse image, no journal) at $RUNDIR"
            return
        fi
        rm -f "$SCRATCH/runs.img"
        [[ $want == loop ]] && die "cannot make the loop file system (root needed; see $LOGDIR/mkfs.log)"
    fi
    RUNFS_MODE=dir
    mkdir -p "$RUNDIR"
    local need=2 free
    [[ $QUICK == 1 ]] || need=$((7 * RUNS))
    free=$(df -P -BG "$SCRATCH" | awk 'NR == 2 {sub(/G/, "", $4); print $4}')
    ((free >= need)) || say "bench: warning: ${free} GB free in $SCRATCH, the run copies may need ~${need} GB"
    [[ -f $SCRATCH/.last-cleanup ]] || return 0
    local age wait
    age=$(($(date +%s) - $(cat "$SCRATCH/.last-cleanup")))
    wait=$((SETTLE - age))
    if ((wait > 0)); then
        say "bench: waiting ${wait}s after the last cleanup (SETTLE=$SETTLE, see README)"
        sleep "$wait"
    fi
}

main() {
    setup_tools
    say "bench: precompress = $PC; --manifest: $HAS_MANIFEST, --cache-dir: $HAS_CACHE"
    local c src
    # corpora first (their creation is not measured), then let the file system settle
    for c in $CORPORA; do corpus "$c" >/dev/null; done
    trap cleanup EXIT
    setup_runfs
    rm -f "$RESDIR"/*
    for c in $CORPORA; do
        src=$(corpus "$c")
        case $c in
        collectstatic | frontend | large)
            bench_tool "$c" "$src" pc "precompress" gz+br
            if [[ $c == large ]]; then # room for two big encoders, and for less than one
                bench_tool "$c" "$src" pc-m256 "precompress --memory-limit 256M" gz+br
                bench_tool "$c" "$src" pc-m64 "precompress --memory-limit 64M" gz+br
            fi
            bench_tool "$c" "$src" whitenoise "whitenoise.compress" gz+br
            bench_tool "$c" "$src" npm-precompress "precompress (npm)" gz+br
            bench_tool "$c" "$src" gzipper "gzipper --gzip --gzip-level 9 --brotli" gz+br
            bench_tool "$c" "$src" xargs "find+xargs -P${NPROC} gzip -9; brotli -q 11" gz+br
            bench_incremental "$c" "$src" "" gz+br
            bench_floors "$c" "$src" --gzip --brotli
            ;;
        small)
            bench_tool "$c" "$src" pc-gz "precompress --no-brotli" gz
            if [[ $SMALL_BROTLI == 1 ]]; then
                bench_tool "$c" "$src" pc "precompress" gz+br
            fi
            bench_tool "$c" "$src" whitenoise-gz "whitenoise.compress --no-brotli" gz
            bench_tool "$c" "$src" npm-precompress-gz "precompress (npm) -t gz" gz
            bench_tool "$c" "$src" gzipper-gz "gzipper --gzip --gzip-level 9" gz
            bench_tool "$c" "$src" xargs-gz "find+xargs -P${NPROC} gzip -9" gz
            bench_incremental "$c" "$src" "--no-brotli" gz
            if [[ $SMALL_BROTLI == 1 ]]; then
                bench_floors "$c" "$src" --gzip --brotli
            else
                bench_floors "$c" "$src" --gzip
            fi
            ;;
        esac
        report_corpus "$c" "$src"
    done

    local measured=$(($(date +%s) - START))
    cleanup
    local elapsed=$(($(date +%s) - START))
    {
        echo "# precompress benchmark"
        echo
        echo "$(date -u '+%Y-%m-%d %H:%M UTC'); $(uname -srm); ${NPROC} cores; RUNS=$RUNS; QUICK=$QUICK; run copies on $([[ $RUNFS_MODE == loop ]] && echo "a fresh loop-mounted ext4" || echo "$SCRATCH's file system"); took ${elapsed} s (${measured} s before the cleanup)."
        echo "precompress: \`$("$PC" --version 2>&1 | head -n 1)\` ($PC)."
        echo "Peers: whitenoise $(dpkg-query -W -f='${Version}' python3-whitenoise 2>/dev/null)," \
            "npm ${NPM_PEERS[*]}, $(gzip --version | head -n 1), brotli $(dpkg-query -W -f='${Version}' brotli 2>/dev/null)," \
            "node $(node --version 2>/dev/null)."
        [[ $SMALL_BROTLI == 1 ]] || echo "The small corpus is measured gzip-only (SMALL_BROTLI=1 adds precompress gzip+brotli)."
        ((HAS_CACHE)) || echo "This precompress has no --cache-dir: the warm-cache rows are n/a."
        for c in $CORPORA; do cat "$RESDIR/$c.md"; done
        report_checks
    } >"$SCRATCH/results.md"
    pretty <"$SCRATCH/results.md"
    say ""
    say "bench: results in $SCRATCH/results.md; logs in $LOGDIR; total ${elapsed} s"
}

# Sourced (bench/identity.sh takes the corpora from here): define, do not run.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    main "$@"
fi
