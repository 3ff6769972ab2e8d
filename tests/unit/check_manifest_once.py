#!/usr/bin/python3
"""The manifest is read by one parser and its schema written down once, so that a field
added or renamed cannot be read one way in one place and another way elsewhere.

Fails when, in the library and the program's sources (src/, src/cli/):
  - a file other than src/manifest/manifest_read.c includes <jansson.h>: parsing JSON is how a
    second manifest reader would start (the writer and every user go through
    manifest_read.c's decoded header and lines). One exception: src/serverconf/serverconf.c
    (server-config), which reads the files' "deltas" (their dictionary-compressed outputs),
    which the reader's lines do not carry. (src/manifest/djmanifest.c reads
    Django's staticfiles.json, another program's format, with a parser of its own that keeps
    to a memory budget: no jansson there either);
  - a level key ("gzip_level", "brotli_quality", "zstd_level") is spelled as a string
    anywhere but once: the spec's table pc__spec_fields in src/manifest/manifest_read.c;
  - a manifest key only the manifest has ("path_hex", "mtime_ns", "gzip_engine",
    "max_ratio", "min_size") is spelled as a string in a library file other than
    src/manifest/manifest.c and src/manifest/manifest_read.c (the program's own --json lines, in
    src/cli/, have keys of their own);
  - a function or table keeps an old duplicate's name: cmp_rec (the order of "files" is
    pc__manifest_cmp_rec), level_key, read_all/read_full/pread_all (pc__read_full).
Comments do not count: they may name what they explain. The fuzz targets' deliberate
reference copies live in tests/fuzz/, outside what is read here.
Usage: check_manifest_once.py SRC_DIR"""
import os
import re
import sys

READER = "manifest/manifest_read.c"
# Parses a manifest whole with jansson: manifest_read.c's lines do not carry "deltas".
DELTAS_READER = "serverconf/serverconf.c"
MODULE = {"manifest/manifest.c", READER, "manifest/manifest.h"}
LEVEL_KEYS = ["gzip_level", "brotli_quality", "zstd_level"]
LINE_KEYS = ["path_hex", "mtime_ns", "gzip_engine", "max_ratio", "min_size"]
OLD_NAMES = ["cmp_rec", "level_key", "read_all", "read_full", "pread_all"]


def code_only(text):
    """text with its comments blanked (strings and character constants kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def main():
    src = sys.argv[1]
    files = {}
    for d in sorted(os.path.join(src, f) for f in os.listdir(src) if os.path.isdir(os.path.join(src, f))):
        for name in sorted(os.listdir(d)):
            if name.endswith((".c", ".h")):
                rel = os.path.relpath(os.path.join(d, name), src)
                with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                    files[rel] = code_only(f.read())
    failed = []
    for rel, code in files.items():
        if rel not in (READER, DELTAS_READER) and re.search(r"#\s*include\s*<jansson\.h>", code):
            failed.append("%s includes <jansson.h>: manifests are parsed only in src/%s" % (rel, READER))
        for name in OLD_NAMES:
            if re.search(r"\b%s\b" % name, code):
                failed.append("%s: '%s' is back (a second copy of what the manifest module or io.c has)"
                              % (rel, name))
        if rel not in MODULE and not rel.startswith("cli/"):
            for key in LINE_KEYS:
                if '"%s"' % key in code:
                    failed.append('%s spells the manifest key "%s": only src/manifest/manifest.c and src/%s may'
                                  % (rel, key, READER))
    for key in LEVEL_KEYS:
        where = [(rel, code.count('"%s"' % key)) for rel, code in files.items() if '"%s"' % key in code]
        if where != [(READER, 1)]:
            failed.append('"%s" must be spelled once, in manifest_read.c\'s pc__spec_fields; found %s'
                          % (key, where or "nowhere"))
    if not files.get(READER) or "json_loadb" not in files[READER]:
        failed.append("src/%s does not parse anything: is the reader elsewhere now?" % READER)
    for f in failed:
        print(f)
    print("%d files read, %d problems" % (len(files), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
