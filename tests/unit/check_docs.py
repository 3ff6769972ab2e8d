#!/usr/bin/python3
"""The four places that name the options agree: the parser's table (src/cli/args.c), what
`precompress --help` prints, the OPTIONS section of the built man page and README.md's option
table. Each is read as a user (or the compiler) sees it, not from man/options.md: every option
must be in all four, with the same short name and the same meta-variable (args.c: a value or
not). Also: the README's table is what man/gen_options.py makes from man/options.md now (not a
stale copy), no --help line is wider than 80 columns, and the man page renders with
`groff -man -ww` without a warning.

    check_docs.py PRECOMPRESS GEN_OPTIONS.py OPTIONS.md MANPAGE README.md ARGS.c [GROFF]
"""
import importlib.util
import re
import subprocess
import sys

prog, gen_path, options_md, manpage, readme_path, args_c, *rest = sys.argv[1:]
groff = rest[0] if rest else None
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def from_args_c():
    """long -> (short, takes a value), from the parser's opt_table."""
    with open(args_c) as f:
        text = f.read()
    table = re.search(r"opt_table\[\] = \{(.*?)\n\};", text, re.S).group(1)
    out = {}
    for name, short, value in re.findall(r"\{\"([a-z-]+)\", (0|'.'), ([01]), OPT_\w+\}", table):
        out["--" + name] = ("-" + short[1] if short != "0" else None, value == "1")
    return out


def from_help(text):
    out = {}
    for line in text.split("\n"):
        m = re.match(r"^  (?:(-[A-Za-z]), |    )(--[a-z][a-z-]*)(?: ([A-Z][A-Z/]*))?(?:  |$)", line)
        if m:
            out[m.group(2)] = (m.group(1), m.group(3))
    return out


def from_man(text):
    lines = text.split("\n")
    start = lines.index(".SH OPTIONS")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(".SH "))
    out = {}
    depth = 0
    for i in range(start, end):
        line = lines[i]
        depth += {".RS": 1, ".RE": -1}.get(line, 0)
        if depth or line != ".TP" or not re.match(r"^\.B[IR]? \\-", lines[i + 1]):
            continue
        tag = lines[i + 1].split(" ", 1)[1].replace("\\-", "-")
        tag = re.sub(r"\\f[BIRP]", "", tag).replace('"', " ")
        words = [w for w in re.split(r"[\s,]+", tag) if w]
        names = [w for w in words if w.startswith("-")]
        meta = [w for w in words if not w.startswith("-")]
        longs = [n for n in names if n.startswith("--")]
        shorts = [n for n in names if not n.startswith("--")]
        if len(longs) != 1 or len(shorts) > 1 or len(meta) > 1:
            fail("man page: cannot read the tag %r" % lines[i + 1])
            continue
        out[longs[0]] = (shorts[0] if shorts else None, meta[0] if meta else None)
    return out


def from_readme(text):
    m = re.search(r"^<!-- options: .*?-->$(.*?)^<!-- end of options -->$", text, re.S | re.M)
    if not m:
        fail("README.md: no option table between its markers")
        return {}
    out = {}
    for line in m.group(1).split("\n"):
        if not line.startswith("| `"):
            continue
        cell = line.split(" | ")[0][2:]
        longm = re.search(r"`(--[a-z][a-z-]*)(?: ([A-Z][A-Z/]*))?`", cell)
        shortm = re.search(r"`(-[A-Za-z])`", cell)
        out[longm.group(1)] = (shortm.group(1) if shortm else None, longm.group(2))
    return out


helptext = subprocess.run([prog, "--help"], capture_output=True, text=True, check=True).stdout
with open(manpage) as f:
    mantext = f.read()
with open(readme_path) as f:
    readme = f.read()

parser = from_args_c()
places = {"--help": from_help(helptext), "man page": from_man(mantext),
          "README.md": from_readme(readme)}
if len(parser) < 20:
    fail("args.c: read only %d options from opt_table" % len(parser))
for where, opts in places.items():
    for name in sorted(set(parser) - set(opts)):
        fail("%s lacks %s, which the parser knows" % (where, name))
    for name in sorted(set(opts) - set(parser)):
        fail("%s has %s, which the parser does not know" % (where, name))
    for name in sorted(set(parser) & set(opts)):
        short, meta = opts[name]
        if short != parser[name][0]:
            fail("%s: %s's short name is %s, the parser's %s" % (where, name, short, parser[name][0]))
        if (meta is not None) != parser[name][1]:
            fail("%s: %s %s, but the parser %s" % (where, name,
                 "takes %s" % meta if meta else "takes no value",
                 "wants a value" if parser[name][1] else "takes none"))
for name in sorted(parser):
    metas = {where: opts[name][1] for where, opts in places.items() if name in opts}
    if len(set(metas.values())) > 1:
        fail("%s: meta-variables differ: %s" % (name, metas))

for line in helptext.split("\n"):
    if len(line) > 80:
        fail("--help: a line of %d columns: %r" % (len(line), line))

spec = importlib.util.spec_from_file_location("gen_options", gen_path)
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
if gen.readme_replace(gen.parse(options_md), readme) != readme:
    fail("README.md: its option table is not what man/options.md makes now "
         "(run `ninja -C BUILD docs-readme`)")

if groff:
    r = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", manpage], capture_output=True,
                       text=True)
    if r.returncode != 0 or r.stderr:
        fail("groff -man -ww %s: exit %d, %s" % (manpage, r.returncode, r.stderr.strip()))

print("%d options in the parser; %d failures" % (len(parser), len(failures)))
sys.exit(1 if failures else 0)
