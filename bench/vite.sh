#!/usr/bin/env bash
# Vite builds with each compression plugin, side by side in one run:
#
#   bench/vite.sh [WORK]        (WORK: /tmp/pc-bench-vite)
#
# Environment: PC_NPM, the directory holding the release's npm tarballs
# (default: PRECOMPRESS_RELEASE, as dist/release.sh made it); RUNS (5);
# APPS ("small big").
#
# Apps: small is tests/projects/vanilla-app as create-vite made it; big
# is the same app importing three, echarts, @faker-js/faker (every locale)
# and monaco-editor whole, so that the build writes many MiB of JavaScript
# in many files. Each app is installed once with every plugin; then, RUNS
# times, each configuration builds it in turn (alternating, so that the
# machine's drift falls on all alike), timed with /usr/bin/time (%e wall,
# %M peak RSS: the largest process of the build, Node or the program).
#
# Configurations, all gzip 9 + brotli 11 on the same files (.js .mjs .css
# .html .svg .json, any size):
#   none             no compression plugin: the build alone
#   precompress      @precompress/cli/vite, no cache (cacheDir: false)
#   precompress-warm the same with its default cache, warm after the first run
#   vpc              vite-plugin-compression 0.5.1 (two instances: gzip, and
#                    brotli from its CommonJS build, see below)
#   vpc2             vite-plugin-compression2 2.5.3
#   gzip             rollup-plugin-gzip 4.2.0 (two instances: gzip, brotli
#                    through its customCompression; only the bundle's files,
#                    not public/, as that plugin does)
# The table: the medians of each (wall time, CPU time user+system of the
# whole build, peak RSS), the compression step's cost (each minus none's),
# the outputs written and their bytes. On a machine others share, wall
# time follows the share of the cores a build gets; CPU time does not.
set -euo pipefail

work=${1:-/tmp/pc-bench-vite}
npm_dir=${PC_NPM:-${PRECOMPRESS_RELEASE:-}}
runs=${RUNS:-5}
apps=${APPS:-small big}
root=$(cd "$(dirname "$0")/.." && pwd)
[ -n "$npm_dir" ] || { echo "bench/vite.sh: set PC_NPM or PRECOMPRESS_RELEASE (dist/release.sh's directory)" >&2; exit 2; }
main_tgz=$(ls "$npm_dir"/precompress-cli-[0-9]*.tgz | tail -1)
plat_tgz=$(ls "$npm_dir"/precompress-cli-linux-x64-*.tgz | tail -1)
[ -x /usr/bin/time ] || { echo "bench/vite.sh: /usr/bin/time is missing (apt-get install time)" >&2; exit 2; }

configs="none precompress precompress-warm vpc vpc2 gzip"

write_configs() {
  local d=$1
  local filter='/\.(js|mjs|css|html|svg|json)$/'
  cat >"$d/bench.common.js" <<EOF
import zlib from 'node:zlib';
export const filter = $filter;
export const brotli11 = { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } };
EOF
  cat >"$d/vite.none.config.js" <<'EOF'
export default { logLevel: 'warn' };
EOF
  cat >"$d/vite.precompress.config.js" <<'EOF'
import precompress from '@precompress/cli/vite';
import { filter } from './bench.common.js';
export default { logLevel: 'warn', plugins: [precompress({ formats: ['gzip', 'brotli'], levels: { gzip: 9, brotli: 11 }, include: filter, threshold: 0, cacheDir: false })] };
EOF
  cat >"$d/vite.precompress-warm.config.js" <<'EOF'
import precompress from '@precompress/cli/vite';
import { filter } from './bench.common.js';
export default { logLevel: 'warn', plugins: [precompress({ formats: ['gzip', 'brotli'], levels: { gzip: 9, brotli: 11 }, include: filter, threshold: 0 })] };
EOF
  # Two instances share the module's mtime cache (the second then skips
  # every file the first compressed): the brotli one is the CommonJS build,
  # a module of its own.
  cat >"$d/vite.vpc.config.js" <<'EOF'
import { createRequire } from 'node:module';
import viteCompression from 'vite-plugin-compression';
import { filter, brotli11 } from './bench.common.js';
const gz = viteCompression.default || viteCompression;
const cjs = createRequire(import.meta.url)('vite-plugin-compression');
const br = cjs.default || cjs;
export default { logLevel: 'warn', plugins: [
  gz({ algorithm: 'gzip', ext: '.gz', filter, threshold: 0, compressionOptions: { level: 9 }, verbose: false }),
  br({ algorithm: 'brotliCompress', ext: '.br', filter, threshold: 0, compressionOptions: brotli11, verbose: false }),
] };
EOF
  cat >"$d/vite.vpc2.config.js" <<'EOF'
import { compression, defineAlgorithm } from 'vite-plugin-compression2';
import { filter, brotli11 } from './bench.common.js';
export default { logLevel: 'warn', plugins: [compression({
  algorithms: [defineAlgorithm('gzip', { level: 9 }), defineAlgorithm('brotliCompress', brotli11)],
  include: filter, threshold: 0, skipIfLargerOrEqual: false, logLevel: 'silent',
})] };
EOF
  cat >"$d/vite.gzip.config.js" <<'EOF'
import gzipPlugin from 'rollup-plugin-gzip';
import zlib from 'node:zlib';
import { promisify } from 'node:util';
import { filter } from './bench.common.js';
const br = promisify(zlib.brotliCompress);
const g = gzipPlugin.default || gzipPlugin;
export default { logLevel: 'warn', plugins: [
  g({ filter, minSize: 0, gzipOptions: { level: 9 } }),
  g({ filter, minSize: 0, fileName: '.br',
      customCompression: (c) => br(Buffer.from(c), { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11 } }) }),
] };
EOF
}

setup_app() {
  local app=$1 d=$work/$1
  [ -f "$d/.ready" ] && return 0
  rm -rf "$d"
  mkdir -p "$d"
  cp -r "$root/tests/projects/vanilla-app/." "$d/"
  (cd "$d" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  local extra=()
  if [ "$app" = big ]; then
    extra=(three@0.187.0 echarts@6.1.0 @faker-js/faker@10.6.0 monaco-editor@0.57.0)
    cat >>"$d/src/main.js" <<'EOF'

// bench/vite.sh: big libraries imported whole, so the bundle holds them all
import * as THREE from 'three';
import * as echarts from 'echarts';
import { allFakers } from '@faker-js/faker';
import * as monaco from 'monaco-editor';
window.__bench = [THREE, echarts, allFakers, monaco];
EOF
  fi
  (cd "$d" && npm install --no-audit --no-fund --loglevel=error -D "$main_tgz" "$plat_tgz" \
    vite-plugin-compression@0.5.1 vite-plugin-compression2@2.5.3 rollup-plugin-gzip@4.2.0 "${extra[@]}" >/dev/null)
  write_configs "$d"
  touch "$d/.ready"
}

one() { # app config -> "wall rss user sys outputs bytes_gz bytes_br"
  local d=$work/$1 c=$2
  rm -rf "$d/dist"
  (cd "$d" && /usr/bin/time -o "$d/time.txt" -f "%e %M %U %S" node node_modules/vite/bin/vite.js build \
    -c "vite.$c.config.js" >/dev/null 2>"$d/err.log") ||
    { cat "$d/err.log" >&2; echo "bench/vite.sh: $1 $c failed" >&2; exit 1; }
  local n gz br
  n=$(find "$d/dist" -name '*.gz' -o -name '*.br' | wc -l)
  gz=$(find "$d/dist" -name '*.gz' -printf '%s\n' | awk '{s+=$1} END {print s+0}')
  br=$(find "$d/dist" -name '*.br' -printf '%s\n' | awk '{s+=$1} END {print s+0}')
  echo "$(cat "$d/time.txt") $n $gz $br"
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

mkdir -p "$work"
echo "bench/vite.sh: $(nproc) CPUs, node $(node --version), $(basename "$main_tgz"), $runs runs each, alternating"
for app in $apps; do
  setup_app "$app"
  d=$work/$app
  rm -rf "$d/node_modules/.cache/precompress"
  res=$work/$app.results
  : >"$res"
  for r in $(seq 1 "$runs"); do
    for c in $configs; do
      echo "$c $(one "$app" "$c")" >>"$res"
    done
  done
  js=$(find "$d/dist" -name '*.js' -printf '%s\n' | awk '{s+=$1} END {printf "%.1f", s/1048576}')
  files=$(find "$d/dist" -type f ! -name '*.gz' ! -name '*.br' | wc -l)
  echo
  echo "== $app: $files files in dist/, $js MiB of JavaScript"
  printf '%-17s %8s %10s %8s %10s %9s %8s %11s %11s\n' config "wall s" "compress" "CPU s" "compress" \
    "peak RSS" outputs "gz bytes" "br bytes"
  col() { awk -v c="$1" -v k="$2" '$1 == c {print $k}' "$res"; }
  cpu() { awk -v c="$1" '$1 == c {print $4 + $5}' "$res"; }
  base=$(col none 2 | median)
  basecpu=$(cpu none | median)
  for c in $configs; do
    w=$(col "$c" 2 | median)
    m=$(col "$c" 3 | median)
    u=$(cpu "$c" | median)
    last=$(awk -v c="$c" '$1 == c' "$res" | tail -1)
    printf '%-17s %8.2f %10.2f %8.2f %10.2f %6.0f MB %8s %11s %11s\n' "$c" "$w" \
      "$(awk -v a="$w" -v b="$base" 'BEGIN {print a - b}')" "$u" \
      "$(awk -v a="$u" -v b="$basecpu" 'BEGIN {print a - b}')" "$(awk -v m="$m" 'BEGIN {print m / 1024}')" \
      "$(echo "$last" | awk '{print $6}')" "$(echo "$last" | awk '{print $7}')" "$(echo "$last" | awk '{print $8}')"
  done
done
