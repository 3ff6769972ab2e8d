#!/usr/bin/python3
"""Every long option `precompress --help` lists is offered by the bash, zsh
and fish completions, and none of them offers an option the program lacks."""
import re
import subprocess
import sys

prog, *files = sys.argv[1:]
helptext = subprocess.run([prog, "--help"], capture_output=True, text=True, check=True).stdout
want = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", helptext))
failed = 0
for path in files:
    with open(path) as f:
        text = f.read()
    if path.endswith(".fish"):
        have = {"--" + m for m in re.findall(r"-l ([a-z][a-z-]+)", text)}
    else:
        have = set(re.findall(r"(?<![\w-])--[a-z][a-z-]+", text))
    missing, extra = sorted(want - have), sorted(have - want)
    if missing or extra:
        failed += 1
        print("%s: missing %s, unknown %s" % (path, missing, extra))
print("%d passed, %d failed" % (len(files) - failed, failed))
sys.exit(1 if failed else 0)
