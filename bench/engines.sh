#!/usr/bin/env bash
# Size and time of each --gzip-engine (zlib, libdeflate, zopfli) on one
# corpus, gzip only, medians of RUNS runs. Run by a developer, after
# bench/run.sh has built its corpora and its release build:
#
#   bench/engines.sh                       # the frontend corpus
#   CORPUS=/some/tree RUNS=1 bench/engines.sh
#
# Prints, per engine and level: wall, CPU (user+sys), bytes of .gz written,
# and the size and CPU relative to zlib level 9.
set -euo pipefail

SCRATCH=${SCRATCH:-/tmp/pc-bench}
CORPUS=${CORPUS:-$SCRATCH/corpora/frontend}
RUNS=${RUNS:-3}
PRECOMPRESS=${PRECOMPRESS:-$SCRATCH/build/src/cli/precompress}
work=$(mktemp -d "${TMPDIR:-/tmp}/pc-engines.XXXXXX")
trap 'rm -rf "$work"' EXIT

[[ -d $CORPUS ]] || { echo "engines: no corpus at $CORPUS (run bench/run.sh first)" >&2; exit 2; }
[[ -x $PRECOMPRESS ]] || { echo "engines: no program at $PRECOMPRESS" >&2; exit 2; }

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

configs=("zlib 9")
"$PRECOMPRESS" --version | grep -q libdeflate && configs+=("libdeflate 12")
"$PRECOMPRESS" --version | grep -q zopfli && configs+=("zopfli 15")

printf '%-14s %8s %8s %14s %9s %9s\n' engine wall_s cpu_s gz_bytes size_vs cpu_vs
base_bytes= base_cpu=
for cfg in "${configs[@]}"; do
  read -r engine level <<<"$cfg"
  runs=$RUNS
  [[ $engine == zopfli ]] && runs=1 # tens of times slower: one run says enough
  walls=() cpus=() bytes=
  for ((i = 0; i < runs; i++)); do
    rm -rf "$work/t" && cp -a "$CORPUS" "$work/t"
    t=$( { /usr/bin/time -f '%e %U %S' "$PRECOMPRESS" -q --no-brotli \
             --gzip-engine "$engine" --gzip-level "$level" "$work/t" >/dev/null; } 2>&1 | tail -1)
    read -r wall user sys <<<"$t"
    walls+=("$wall")
    cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')")
    bytes=$(find "$work/t" -name '*.gz' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  done
  wall=$(printf '%s\n' "${walls[@]}" | median)
  cpu=$(printf '%s\n' "${cpus[@]}" | median)
  if [[ -z $base_bytes ]]; then base_bytes=$bytes; base_cpu=$cpu; fi
  printf '%-14s %8s %8s %14s %8.3fx %8.2fx\n' "$engine $level" "$wall" "$cpu" "$bytes" \
    "$(awk -v a="$bytes" -v b="$base_bytes" 'BEGIN {print a / b}')" \
    "$(awk -v a="$cpu" -v b="$base_cpu" 'BEGIN {print (b > 0 ? a / b : 0)}')"
done
