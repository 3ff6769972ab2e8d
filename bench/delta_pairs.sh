#!/usr/bin/env bash
# bench/delta_pairs.sh: real consecutive releases of npm packages, laid out as
# two releases of a static site, for bench/delta.sh (what deltas save and cost).
#
#   bench/delta_pairs.sh [OUT]          OUT: $SCRATCH/delta-pairs by default
#   PKGS="d3 lodash" bench/delta_pairs.sh
#
# For each pinned pair (below), the two tarballs are fetched from the npm
# registry into $NPM_CACHE (once; each checked against the sha512 integrity
# pinned here, which must also be what `npm view` reports when it is fetched),
# and the package's shipped text files (the directories named below; .js .mjs
# .cjs .css .map .svg; no tests) are copied to OUT/PKG/r1 (old) and OUT/PKG/r2
# (new), each renamed the way Django's ManifestStaticFilesStorage names them:
# `name.<first 12 hex of the content's md5>.ext`. A file that changed between
# the releases then has another name in r2 than in r1, so that precompress can
# pair them only through its name templates (same directory, same key); an
# unchanged file has the same name in both.
#
# OUT/PKG/pairs.tsv says, for every file of r2, what the pairing should find:
#   status (changed, identical, new)  r2 path  r1 path (or -)  size  old size
# OUT/PKG/versions holds "PKG OLD NEW". Nothing is rewritten inside the files
# (Django rewrites url() references in CSS; the packages' sourceMappingURL
# comments keep the unhashed names): only the names carry the hash.
set -euo pipefail

SCRATCH=${SCRATCH:-/tmp/pc-bench}
OUT=${1:-$SCRATCH/delta-pairs}
NPM_CACHE=${NPM_CACHE:-$HOME/.cache/precompress-bench/npm}
REGISTRY=${REGISTRY:-https://registry.npmjs.org}

# name  old  new  directories taken (below package/)  old integrity  new integrity
PAIRS=(
    "react-dom 18.2.0 18.3.1 umd,cjs
     sha512-6IMTriUmvsjHUjNtEDudZfuDQUoWXVxKHhlEGSk81n4YFS+r/Kl99wXiwlVXtPBtJenozv2P+hxDsw9eA7Xo6g==
     sha512-5m4nQKp+rZRb09LNH59GM4BxTh9251/ylbKIbpe7TpGxfJ+9kv6BLkLBXIjjspbgbnIBNqlI23tRnTWT0snUIw=="
    "three 0.160.0 0.161.0 build
     sha512-DLU8lc0zNIPkM7rH5/e1Ks1Z8tWCGRq6g8mPowdDJpw1CFBJMU7UoJjC6PefXW7z//SSl0b2+GCw14LB+uDhng==
     sha512-LC28VFtjbOyEu5b93K0bNRLw1rQlMJ85lilKsYj6dgTu+7i17W+JCCEbvrpmNHF1F3NAUqDSWq50UD7w9H2xQw=="
    "d3 7.8.4 7.8.5 dist
     sha512-q2WHStdhiBtD8DMmhDPyJmXUxr6VWRngKyiJ5EfXMxPw+tqT6BhNjhJZ4w3BHsNm3QoVfZLY8Orq/qPFczwKRA==
     sha512-JgoahDG51ncUfJu6wX/1vWQEqOflgXyl4MaHqlcSruTez7yhaRKR9i8VjjcQGeS2en/jnFivXuaIMnseMMt0XA=="
    "bootstrap 5.3.2 5.3.3 dist
     sha512-D32nmNWiQHo94BKHLmOrdjlL05q1c8oxbtBphQFb9Z5to6eGRDCm0QgeaZ4zFBHzfg2++rqa2JkqCcxDy0sH0g==
     sha512-8HLCdWgyoMguSO9o+aH+iuZ+aht+mzW0u3HIMzVu7Srrpv7EBBxTnrFlSCskwdY1+EOFQSm7uMJhNQHkdPcmjg=="
    "lodash 4.17.20 4.17.21 .
     sha512-PlhdFcillOINfeV7Ni6oF1TAEayyZBoZ8bcshTHqOYJYlrqzRK5hagpagky5o4HfCzzd1TRkXPMFq6cKk9rGmA==
     sha512-v2kDEe57lecTulaDIuNTPy3Ry4gLGJ6Z1O3vE1krgXZNrsQ+LFTGHVxVjcXPs17LhbZVGedAJv8XZ1tvj5FvSg=="
    "pdfjs-dist 4.0.269 4.0.379 build,web
     sha512-jjWO56tcOjnmPqDf8PmXDeZ781AGvpHMYI3HhNtaFKTRXXPaD1ArSrhVe38/XsrIQJ0onISCND/vuXaWJkiDWw==
     sha512-6H0Gv1nna+wmrr3CakaKlZ4rbrL8hvGIFAgg4YcoFuGC0HC4B2DVjXEGTFjJEjLlf8nYi3C3/MYRcM5bNx0elA=="
    "monaco-editor 0.44.0 0.45.0 min
     sha512-5SmjNStN6bSuSE5WPT2ZV+iYn1/yI9sd4Igtk23ChvqB7kDk9lZbB9F5frsuvpB+2njdIeGGFf2G4gbE6rCC9Q==
     sha512-mjv1G1ZzfEE3k9HZN0dQ2olMdwIfaeAAjFiwNprLfYNRSz7ctv9XuCT7gPtBGrMUeV1/iZzYKj17Khu1hxoHOA=="
)
ALL_PKGS="react-dom three d3 bootstrap lodash pdfjs-dist monaco-editor"
PKGS=${PKGS:-$ALL_PKGS}

say() { printf '%s\n' "$*" >&2; }
die() { say "bench/delta_pairs: $*"; exit 1; }

for t in curl tar md5sum sha512sum base64 xxd; do
    command -v "$t" >/dev/null || die "needs $t"
done

integrity_of() { # file -> sha512-<base64>
    printf 'sha512-%s' "$(sha512sum "$1" | cut -d' ' -f1 | xxd -r -p | base64 -w0)"
}

fetch() { # pkg version integrity -> path of the verified tarball
    local pkg=$1 ver=$2 want=$3 f got reported
    f=$NPM_CACHE/$pkg-$ver.tgz
    if [[ -f $f && $(integrity_of "$f") == "$want" ]]; then
        printf '%s\n' "$f"
        return
    fi
    mkdir -p "$NPM_CACHE"
    if command -v npm >/dev/null; then
        reported=$(npm view "$pkg@$ver" dist.integrity 2>/dev/null) ||
            die "npm view $pkg@$ver failed"
        [[ $reported == "$want" ]] ||
            die "$pkg@$ver: the registry reports integrity $reported, pinned $want"
    fi
    say "bench/delta_pairs: fetching $pkg@$ver"
    curl -fsSL --retry 3 -o "$f.part" "$REGISTRY/$pkg/-/$pkg-$ver.tgz" ||
        die "download of $pkg@$ver failed"
    got=$(integrity_of "$f.part")
    if [[ $got != "$want" ]]; then
        rm -f "$f.part"
        die "$pkg@$ver: tarball integrity $got, expected $want"
    fi
    mv "$f.part" "$f"
    printf '%s\n' "$f"
}

# The shipped text files of an unpacked package: DIRS (comma list, below
# package/), the extensions a static site serves as text, no tests, no
# TypeScript declarations. Prints relative paths (below package/), sorted.
shipped() { # unpacked-root dirs
    local root=$1 dirs=$2 d
    (
        cd "$root"
        IFS=, read -ra ds <<<"$dirs"
        for d in "${ds[@]}"; do
            [[ -d $d ]] || continue
            if [[ $d == . ]]; then
                # a package whose modules sit at its root (lodash): the root
                # and its fp/ directory, not node_modules or docs
                find . -maxdepth 1 -type f
                [[ -d fp ]] && find ./fp -type f
            else
                find "./$d" -type f
            fi
        done
    ) | sed 's|^\./||' |
        grep -E '\.(js|mjs|cjs|css|map|svg)$' |
        grep -vE '(^|/)(tests?|__tests__|spec)/|\.(test|spec)\.[a-z]+$|\.d\.[mc]?ts$' |
        LC_ALL=C sort -u
}

hashed_name() { # relpath content-file -> name.<12 hex md5>.ext (Django's)
    local rel=$1 file=$2 dir base h
    dir=$(dirname "$rel")
    base=$(basename "$rel")
    h=$(md5sum "$file" | cut -c1-12)
    if [[ $base == *.* ]]; then
        base="${base%.*}.$h.${base##*.}"
    else
        base="$base.$h"
    fi
    if [[ $dir == . ]]; then printf '%s\n' "$base"; else printf '%s/%s\n' "$dir" "$base"; fi
}

lay_out() { # unpacked-root dirs dest listfile: copies under hashed names, writes "orig<TAB>hashed"
    local root=$1 dirs=$2 dest=$3 list=$4 rel h
    : >"$list"
    while IFS= read -r rel; do
        h=$(hashed_name "$rel" "$root/$rel")
        mkdir -p "$dest/$(dirname "$h")"
        cp "$root/$rel" "$dest/$h"
        printf '%s\t%s\n' "$rel" "$h" >>"$list"
    done < <(shipped "$root" "$dirs")
}

mkdir -p "$OUT"
for pkg in $PKGS; do
    line=
    for p in "${PAIRS[@]}"; do
        read -r name _ <<<"$p"
        [[ $name == "$pkg" ]] && line=$p
    done
    [[ -n $line ]] || die "no pinned pair for $pkg (known: $ALL_PKGS)"
    read -r name old new dirs int_old int_new <<<"$(tr '\n' ' ' <<<"$line")"

    dest=$OUT/$pkg
    if [[ -f $dest/done && $(cat "$dest/versions") == "$pkg $old $new" ]]; then
        say "bench/delta_pairs: $pkg $old -> $new already laid out in $dest"
        continue
    fi
    t_old=$(fetch "$pkg" "$old" "$int_old")
    t_new=$(fetch "$pkg" "$new" "$int_new")

    rm -rf "$dest"
    mkdir -p "$dest/unpacked/old" "$dest/unpacked/new"
    tar -xzf "$t_old" -C "$dest/unpacked/old" --no-same-owner
    tar -xzf "$t_new" -C "$dest/unpacked/new" --no-same-owner
    lay_out "$dest/unpacked/old/package" "$dirs" "$dest/r1" "$dest/r1.list"
    lay_out "$dest/unpacked/new/package" "$dirs" "$dest/r2" "$dest/r2.list"

    # What the pairing should find, from the unhashed names.
    awk -F'\t' -v r1="$dest/r1" -v r2="$dest/r2" '
        NR == FNR { old[$1] = $2; next }
        {
            cmd = "stat -c %s \"" r2 "/" $2 "\""; cmd | getline sz; close(cmd)
            if (!($1 in old)) { printf "new\t%s\t-\t%s\t-\n", $2, sz; next }
            cmd = "stat -c %s \"" r1 "/" old[$1] "\""; cmd | getline osz; close(cmd)
            st = (old[$1] == $2) ? "identical" : "changed"
            printf "%s\t%s\t%s\t%s\t%s\n", st, $2, old[$1], sz, osz
        }' "$dest/r1.list" "$dest/r2.list" >"$dest/pairs.tsv"
    rm -rf "$dest/unpacked"
    printf '%s %s %s\n' "$pkg" "$old" "$new" >"$dest/versions"
    touch "$dest/done"
done

printf '%-14s %-18s %6s %6s %8s %9s %5s %11s\n' package versions r1 r2 changed identical new 'r2 bytes'
for pkg in $PKGS; do
    d=$OUT/$pkg
    read -r _ old new <"$d/versions"
    awk -F'\t' -v p="$pkg" -v v="$old->$new" -v n1="$(wc -l <"$d/r1.list")" '
        { c[$1]++; b += $4 }
        END { printf "%-14s %-18s %6d %6d %8d %9d %5d %11d\n", p, v, n1, NR, c["changed"], c["identical"], c["new"], b }
    ' "$d/pairs.tsv"
done
