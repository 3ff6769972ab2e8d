#!/usr/bin/env python3
"""Print the version of precompress: the one place it is written is
include/precompress.h (PC_VERSION_MAJOR, _MINOR, _PATCH), as zstd keeps its
own in zstd.h. meson.build's project() runs this, python/build_backend.py
does the same reading, and dist/release.sh refuses a VERSION other than
this one.

    dist/version.py [HEADER]
"""
import os
import re
import sys


def read(header):
    with open(header, encoding="utf-8") as f:
        text = f.read()
    parts = []
    for name in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(r"^#define PC_VERSION_%s (\d+)$" % name, text, re.M)
        if m is None:
            raise ValueError("%s: no '#define PC_VERSION_%s N'" % (header, name))
        parts.append(m.group(1))
    return ".".join(parts)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    header = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "include", "precompress.h")
    try:
        print(read(header))
    except (OSError, ValueError) as e:
        sys.exit("version.py: %s" % e)
