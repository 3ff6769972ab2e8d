#!/usr/bin/python3
"""The four places that name the options agree: the parser's table (src/cli/args.c), what
`precompress --help` prints, the OPTIONS section of the built man page and the option table of
docs/reference.md (its section Options). Each is read as a user (or the compiler) sees it, not
from man/options.md: every option must be in all four, with the same short name and the same
meta-variable (args.c: a value or not). Also: the reference's table is what man/gen_options.py
makes from man/options.md now (not a stale copy), no --help line is wider than 80 columns, and
the man page renders with `groff -man -ww` without a warning.

The man page's other sections are docs/reference.md's (man/gen_man.py): each section of the
reference the page takes is a .SH of the built page, in the reference's order, and the page
has no other but NAME, SYNOPSIS, OPTIONS and SEE ALSO; with groff, the page as rendered holds
the words of every paragraph, list item, table cell and code line of those sections, and not
those of what the reference leaves out of it; a "see X" or "under X" in the rendered page
names a section (or subsection) it has. Links between the docs (README.md, docs/, man/,
tests/, src/, bench/, dist/, examples/; README.md's directory is the tree's root) lead to a
file that exists and, with #anchor, to one of its headings.

    check_docs.py PRECOMPRESS GEN_OPTIONS.py OPTIONS.md MANPAGE README.md ARGS.c GEN_MAN.py
                  REFERENCE.md [GROFF]
"""
import importlib.util
import os
import re
import subprocess
import tempfile
import sys

prog, gen_path, options_md, manpage, readme_path, args_c, gen_man_path, reference_md, *rest = sys.argv[1:]
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


# The document that holds the option table between gen_options.py's markers.
TABLE_DOC = "docs/reference.md"


def from_table(text):
    m = re.search(r"^<!-- options: .*?-->$(.*?)^<!-- end of options -->$", text, re.S | re.M)
    if not m:
        fail("%s: no option table between its markers" % TABLE_DOC)
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
with open(reference_md) as f:
    table_doc = f.read()

parser = from_args_c()
places = {"--help": from_help(helptext), "man page": from_man(mantext),
          TABLE_DOC: from_table(table_doc)}
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

# -h: a short screen (zstd's -h is 25 lines) that names only options the parser knows.
short = subprocess.run([prog, "-h"], capture_output=True, text=True, check=True).stdout
shorts = {v[0] for v in parser.values() if v[0]}
if len(short.split("\n")) > 25 or max(len(l) for l in short.split("\n")) > 80:
    fail("-h: more than 25 lines or 80 columns")
for name in re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b", short):
    if name not in parser and name not in shorts:
        fail("-h names %s, which the parser does not know" % name)
if short == helptext or "--help" not in short:
    fail("-h: not the short help that points to --help")

spec = importlib.util.spec_from_file_location("gen_options", gen_path)
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
if gen.table_replace(gen.parse(options_md), table_doc) != table_doc:
    fail("%s: its option table is not what man/options.md makes now "
         "(run `ninja -C BUILD docs-options`)" % TABLE_DOC)

if groff:
    r = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", manpage], capture_output=True,
                       text=True)
    if r.returncode != 0 or r.stderr:
        fail("groff -man -ww %s: exit %d, %s" % (manpage, r.returncode, r.stderr.strip()))

# --- the man page's sections are docs/reference.md's ------------------------------

spec = importlib.util.spec_from_file_location("gen_man", gen_man_path)
gen_man = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen_man)
ref = gen_man.parse(reference_md)
taken = [s for s in ref.sections if not s.omit]
page_sh = [gen_man.plain(l[4:].strip().strip('"').replace("\\-", "-"))
           for l in mantext.split("\n") if l.startswith(".SH ")]
want_sh = [s.man for s in taken]
if [n for n in page_sh if n in want_sh] != want_sh:
    fail("man page: its sections from %s are %s; the reference's, in order, are %s"
         % (os.path.basename(reference_md), [n for n in page_sh if n in want_sh], want_sh))
others = [n for n in page_sh if n not in want_sh and n not in ("NAME", "SYNOPSIS", "OPTIONS", "SEE ALSO")]
if others:
    fail("man page: sections that come from nowhere: %s" % others)
if len(taken) < 15:
    fail("%s: read only %d sections for the man page" % (reference_md, len(taken)))

# --- the man page is the installed program's ------------------------------------
# Its SYNOPSIS names every subcommand main() takes, and it names no file of the source tree
# (gen_man.py refuses one at build time: tried here on a reference that has one).

with open(os.path.join(os.path.dirname(args_c), "main.c")) as f:
    subcommands = sorted(set(re.findall(r'strcmp\(argv\[1\], "([a-z-]+)"\)', f.read())))
synopsis = mantext.split(".SH SYNOPSIS", 1)[1].split("\n.SH ", 1)[0].replace("\\-", "-")
if len(subcommands) < 2:
    fail("main.c: found only the subcommands %s" % subcommands)
for sub in subcommands:
    if "precompress " + sub not in synopsis:
        fail("man page: SYNOPSIS lacks 'precompress %s'" % sub)
for k, line in enumerate(mantext.split("\n")):
    if not line.startswith('.\\"') and gen_man.REPO_PATH.search(line):
        fail("man page:%d names a file of the source tree: %s" % (k + 1, line))
planted = os.path.join(tempfile.mkdtemp(), "reference.md")
with open(reference_md, encoding="utf-8") as f:
    text = f.read()
with open(planted, "w", encoding="utf-8") as f:
    f.write(text.replace("\n## Output\n", "\n## Output\n\nSee docs/deltas.md for more.\n", 1))
try:
    gen_man.man_page(os.path.join(os.path.dirname(gen_man_path), "precompress.1.in"), options_md,
                     planted, "0")
    fail("gen_man.py took a reference that names docs/deltas.md in the page")
except gen_man.SourceError as e:
    if "docs/deltas.md" not in str(e):
        fail("gen_man.py refused the planted name for another reason: %s" % e)


def words(text):
    """Lower-case words: what stays of a text whatever the fonts, quotes, dashes and line
    breaks (groff's U+2010 hyphen and U+2212 minus are not word characters either)."""
    return re.findall(r"\w+", text.lower())


def block_texts(kind, payload):
    if kind == "para":
        return [gen_man.plain(payload)]
    if kind in ("bullets", "numbered"):
        return [gen_man.plain(i) for i in payload]
    if kind == "table":
        head, body = payload
        return [gen_man.plain(("%s: %s" % (head[k], c)) if len(head) > 2 and k else c)
                for row in body for k, c in enumerate(row)]
    return [l for l in payload if l.strip()]  # code


if groff:
    r = subprocess.run([groff, "-man", "-Tutf8", "-rHY=0", "-P-cbou", manpage],
                       capture_output=True, text=True)
    page = " " + " ".join(words(r.stdout)) + " "
    found = 0
    for sec in taken:
        for sub in [sec] + sec.subs:
            for kind, payload, line in sub.blocks:
                for text in block_texts(kind, payload):
                    w = words(text)
                    if w and " " + " ".join(w) + " " not in page:
                        fail("man page: lacks %s:%d (%s of %s), %r"
                             % (os.path.basename(reference_md), line, kind, sub.man, text[:70]))
                    found += 1
    # What the reference keeps to itself: the blocks marked omit, and the sections left out.
    raw = open(reference_md, encoding="utf-8").read().split("\n")
    omitted = []
    for k, l in enumerate(raw):
        if l.strip() == "<!-- man: omit -->":
            omitted.append((k + 2, raw[k + 1]))
    for sec in ref.sections:
        if sec.omit:
            for sub in [sec] + sec.subs:
                for kind, payload, line in sub.blocks:
                    if kind == "para":
                        omitted.append((line, payload))
    for line, text in omitted:
        w = words(gen_man.plain(text))
        if len(w) >= 6 and " " + " ".join(w) + " " in page:
            fail("man page: holds %s:%d, which the reference leaves out of it: %r"
                 % (os.path.basename(reference_md), line, text[:70]))
    if found < 100:
        fail("man page: compared only %d pieces of the reference" % found)
    text = re.sub(r"\s+", " ", r.stdout)
    sh = set(page_sh)
    ss = {gen_man.plain(l[4:].strip().strip('"')).replace("\\-", "-")
          for l in mantext.split("\n") if l.startswith(".SS ")}
    seen = 0
    for m in re.finditer(r"\bsee (?:([^()]{1,40}?) under )?([A-Z]{2,}(?: [A-Z]{2,})*)\b", text):
        seen += 1
        if m.group(2) not in sh:
            fail("man page: %r, but it has no section %s" % (m.group(0), m.group(2)))
        if m.group(1) and re.match(r"^[A-Z][a-z]", m.group(1)) and m.group(1) not in ss:
            fail("man page: %r, but it has no subsection %s" % (m.group(0), m.group(1)))
    if seen < 10:
        fail("man page: only %d cross-references (see X) read" % seen)

# --- links between the docs ----------------------------------------------------

root = os.path.dirname(os.path.abspath(readme_path))
anchors = {}


def anchors_of(path):
    if path not in anchors:
        found, fence = {}, False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.startswith("```"):
                    fence = not fence
                m = None if fence else re.match(r"^#{1,6} (.+?)\s*$", line)
                if m:
                    a = gen_man.anchor(m.group(1))
                    n = found.get(a, 0)
                    found[a] = n + 1
                    found["%s-%d" % (a, n) if n else a] = 1
        anchors[path] = found
    return anchors[path]


docs = [os.path.join(root, "README.md")]
for d in ("docs", "man", "tests", "src", "bench", "dist", "examples"):
    for dirpath, dirnames, filenames in os.walk(os.path.join(root, d)):
        dirnames[:] = [x for x in dirnames if x not in ("corpus", "node_modules")]
        docs += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".md")]
links = 0
for path in docs:
    with open(path, encoding="utf-8") as f:
        body = re.sub(r"^```.*?^```$", "", f.read(), flags=re.S | re.M)
    body = re.sub(r"`[^`\n]*`", "", body)
    for m in re.finditer(r"\]\(([^)\s]+)\)", body):
        url = m.group(1)
        if re.match(r"^[a-z]+:", url):
            continue
        target, _, frag = url.partition("#")
        tpath = os.path.normpath(os.path.join(os.path.dirname(path), target)) if target else path
        where = os.path.relpath(path, root)
        links += 1
        if not os.path.exists(tpath):
            fail("%s: a link to %s, which does not exist" % (where, url))
        elif frag and tpath.endswith(".md") and frag not in anchors_of(tpath):
            fail("%s: a link to %s, but %s has no heading #%s"
                 % (where, url, os.path.relpath(tpath, root), frag))
if links < 50:
    fail("read only %d links between the docs" % links)

print("%d options in the parser, %d sections of the reference in the man page, %d links; "
      "%d failures" % (len(parser), len(taken), links, len(failures)))
sys.exit(1 if failures else 0)
