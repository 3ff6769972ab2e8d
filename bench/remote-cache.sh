#!/usr/bin/env bash
# bench/remote-cache.sh: what --cache-url costs and saves, against Debian's
# nginx with WebDAV on 127.0.0.1 (docs/remote-cache.md's server block), on a
# brotli-bound tree (the frontend corpus of QUICK=1, gzip + brotli 11) and on
# the 100,000-file corpus (gzip only, as bench/cache.sh runs it). Run by a
# developer, as root, on a quiet machine; never by meson test.
#
#   bench/remote-cache.sh                  RUNS=5 rounds per corpus
#   CORPORA=frontend-small RUNS=3 bench/remote-cache.sh
#
# Each round runs, one after another, each on a fresh copy of the corpus:
#   plain   no cache;
#   cold    --cache-url on an empty server (every result stored);
#   remote  --cache-url on the server the cold run filled, with an empty
#           --cache-dir: every result from the server;
#   both    --cache-url and the --cache-dir the remote run filled.
# Copies, the local cache and the server's files live on /dev/shm (tmpfs):
# no writeback of an earlier run plays a part. Reported: medians of wall
# time, the ratios to the plain run, precompress's CPU (user + system) and
# nginx's (its one worker's, from /proc, over the run).
#
# The corpora are bench/run.sh's: frontend-small is $SCRATCH/corpora-quick/
# frontend (CORPORA=frontend QUICK=1 RUNS=1 bench/run.sh makes it), small is
# $SCRATCH/corpora/small (CORPORA=small RUNS=1 bench/run.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
SCRATCH=${SCRATCH:-/tmp/pc-bench}
RUNS=${RUNS:-5}
CORPORA=${CORPORA:-frontend-small small}
WORK=${WORK:-/dev/shm/pc-remote-bench}
OUT=$SCRATCH/remote-results
PC=${PRECOMPRESS:-}
PORT=${PORT:-18917}

say() { printf '%s\n' "$*" >&2; }
die() { say "bench/remote-cache: $*"; exit 1; }

[[ $EUID == 0 ]] || die "needs root (nginx's workers run as root here, owning the cache)"
command -v nginx >/dev/null || die "needs nginx (.ci/deps test)"
corpus_dir() {
    case $1 in
    frontend-small) echo "$SCRATCH/corpora-quick/frontend" ;;
    small) echo "$SCRATCH/corpora/small" ;;
    *) die "unknown corpus $1 (frontend-small, small)" ;;
    esac
}
flags_for() { case $1 in small) echo "--no-brotli" ;; *) echo "" ;; esac; }
for c in $CORPORA; do
    [[ -f $(corpus_dir "$c").done ]] || die "no $c corpus at $(corpus_dir "$c"): see the top of this script"
done
if [[ -z $PC ]]; then
    say "bench/remote-cache: release build of $ROOT in $SCRATCH/build-remote"
    [[ -d $SCRATCH/build-remote ]] ||
        meson setup "$SCRATCH/build-remote" "$ROOT" --buildtype=release -Dtests=false -Dcurl=enabled >/dev/null
    ninja -C "$SCRATCH/build-remote" >/dev/null
    PC=$SCRATCH/build-remote/src/cli/precompress
fi
mkdir -p "$OUT"
rm -rf "$WORK"
mkdir -p "$WORK/srv/tmp"

# The page's server block, its port and paths changed (as the test does).
block=$(sed -n '/^```nginx$/,/^```$/p' "$ROOT/docs/remote-cache.md" | sed '1d;$d')
block=${block//listen 8080;/listen 127.0.0.1:$PORT;}
block=${block//\/srv\/precompress/$WORK/srv}
block=${block//\/etc\/nginx\/precompress.htpasswd/$WORK/htpasswd}
printf 'bench:{PLAIN}bench\n' >"$WORK/htpasswd"
cat >"$WORK/nginx.conf" <<EOF
user root;
worker_processes 1;
daemon off;
pid $WORK/nginx.pid;
error_log $WORK/error.log;
events { worker_connections 1024; }
http {
access_log off;
$block
}
EOF
setsid nginx -c "$WORK/nginx.conf" -p "$WORK" -e "$WORK/error.log" &
NGINX=$!
cleanup() {
    kill -- -"$NGINX" 2>/dev/null || kill "$NGINX" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
for _ in $(seq 50); do
    [[ -n $(pgrep -P "$NGINX" nginx) ]] && break
    sleep 0.1
done
URL=http://127.0.0.1:$PORT/cache
export PRECOMPRESS_CACHE_AUTH=bench:bench

nginx_cpu() { # the worker's user + system ticks
    local w
    w=$(pgrep -P "$NGINX" nginx | head -1)
    awk '{print $14 + $15}' "/proc/$w/stat"
}

timed() { # label corpus cmd... -> "label wall cpu nginx_cpu" in $OUT/$corpus.times
    local label=$1 corpus=$2 n0 n1 tck
    shift 2
    tck=$(getconf CLK_TCK)
    sync
    n0=$(nginx_cpu)
    /usr/bin/time -f "%e %U %S" -o "$OUT/$label.time" "$@" >/dev/null 2>"$OUT/$label.err" ||
        die "$label failed: $(tail -3 "$OUT/$label.err")"
    n1=$(nginx_cpu)
    grep -q "warning" "$OUT/$label.err" && die "$label warned: $(cat "$OUT/$label.err")"
    read -r wall u s <"$OUT/$label.time"
    awk -v l="$label" -v w="$wall" -v u="$u" -v s="$s" -v a="$n0" -v b="$n1" -v t="$tck" \
        'BEGIN {printf "%s %.3f %.3f %.3f\n", l, w, u + s, (b - a) / t}' >>"$OUT/$corpus.times"
}

fresh() { rm -rf "$WORK/t"; cp -a "$1" "$WORK/t"; }

for c in $CORPORA; do
    src=$(corpus_dir "$c")
    fl=$(flags_for "$c")
    : >"$OUT/$c.times"
    for ((i = 1; i <= RUNS; i++)); do
        say "bench/remote-cache: $c round $i/$RUNS"
        fresh "$src"
        # shellcheck disable=SC2086
        timed plain "$c" "$PC" $fl "$WORK/t"

        rm -rf "$WORK/srv/cache" "$WORK/local"
        fresh "$src"
        # shellcheck disable=SC2086
        timed cold "$c" "$PC" $fl --cache-url "$URL" "$WORK/t"

        fresh "$src"
        # shellcheck disable=SC2086
        timed remote "$c" "$PC" $fl --cache-dir "$WORK/local" --cache-url "$URL" "$WORK/t"

        fresh "$src"
        # shellcheck disable=SC2086
        timed both "$c" "$PC" $fl --cache-dir "$WORK/local" --cache-url "$URL" "$WORK/t"
    done
done

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
col() { awk -v l="$2" -v k="$3" '$1 == l {print $k}' "$OUT/$1.times" | median; }

printf '\n| corpus | run | wall | / plain | precompress CPU | nginx CPU |\n'
printf '|---|---|---|---|---|---|\n'
for c in $CORPORA; do
    p=$(col "$c" plain 2)
    for l in plain cold remote both; do
        awk -v c="$c" -v l="$l" -v w="$(col "$c" "$l" 2)" -v p="$p" -v u="$(col "$c" "$l" 3)" \
            -v n="$(col "$c" "$l" 4)" 'BEGIN {
            printf "| %s | %s | %.2f s | %.3fx | %.2f s | %.2f s |\n", c, l, w, w / p, u, n }'
    done
done
printf '\nMedians of %s rounds (%s, %s cores); per-run figures: %s/*.times\n' "$RUNS" \
    "$(uname -srm)" "$(nproc)" "$OUT"
