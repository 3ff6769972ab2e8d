#!/usr/bin/python3
"""Makes the three forms of the option reference from its one source, man/options.md.

    gen_options.py OPTIONS.md help OUT.h             the C include src/cli/main.c prints as --help
    gen_options.py OPTIONS.md man TEMPLATE.in OUT.1  the man page, made by gen_man.py with the
                                                     docs/reference.md and version of the tree
                                                     TEMPLATE.in lies in (meson runs gen_man.py
                                                     itself; python/build_backend.py calls this)
    gen_options.py OPTIONS.md table REFERENCE.md --check|--write
                                                     the option table of docs/reference.md
                                                     (its section Options), between its
                                                     <!-- options --> markers

The format of OPTIONS.md is described at its top. Only the standard library is used (Debian's
/usr/bin/python3, which meson itself needs, runs it). tests/unit/check_docs.py imports parse()
and table_replace() from here.
"""
import os
import re
import sys

SPEC_RE = re.compile(r"^(?:(-[A-Za-z]), )?(--[a-z][a-z-]*)(?: ([A-Z][A-Z/]*))?$")
PLACEHOLDER_RE = re.compile(r"\{([a-z_]+)\}")
HELP_COLUMN = 28  # where an option's help text starts in --help
TABLE_BEGIN = "<!-- options: made by man/gen_options.py from man/options.md; edit that file -->"
TABLE_END = "<!-- end of options -->"


class SourceError(Exception):
    pass


class Option:
    def __init__(self, spec, line):
        m = SPEC_RE.match(spec)
        if not m:
            raise SourceError("line %d: %r is not '[-x, ]--name[ METAVAR]'" % (line, spec))
        self.short, self.long, self.metavar = m.group(1), m.group(2), m.group(3)
        self.spec = spec
        self.line = line
        self.help = []  # lines, as --help wraps them
        self.man = []  # roff lines after the .TP tag


class Group:
    def __init__(self, name):
        self.name = name
        self.help = []  # Preamble / Postamble only
        self.man = []  # before the group's first option
        self.man_after = []  # after its last option
        self.options = []


class Reference:
    def __init__(self):
        self.preamble = Group("Preamble")
        self.postamble = Group("Postamble")
        self.short = Group("Short")  # -h: its help text alone
        self.groups = []
        self.table_values = {}

    def options(self):
        return [o for g in self.groups for o in g.options]


def _blocks(lines):
    """Yields (kind, text, line number): ('h2'|'h3'|'label'|'block'|'prose', ...).

    A block is a run of lines indented by 4 spaces (blank lines inside it included),
    returned with the indent removed and trailing blank lines dropped.
    """
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("    ") and line.strip():
            start = i
            block = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                block.append(lines[i][4:])
                i += 1
            while block and not block[-1].strip():
                block.pop()
            yield "block", block, start + 1
            continue
        if line.startswith("### "):
            yield "h3", line[4:].strip(), i + 1
        elif line.startswith("## "):
            yield "h2", line[3:].strip(), i + 1
        elif re.match(r"^(help|man|man after|Table values):$", line):
            yield "label", line[:-1], i + 1
        elif line.strip():
            yield "prose", line, i + 1
        i += 1


def parse(path):
    with open(path) as f:
        lines = f.read().split("\n")
    ref = Reference()
    group = None
    option = None
    label = None
    seen = set()
    for kind, text, line in _blocks(lines):
        if kind == "h2":
            option, label = None, None
            if text == "Preamble":
                group = ref.preamble
            elif text == "Postamble":
                group = ref.postamble
            elif text == "Short":
                group = ref.short
            else:
                group = Group(text)
                ref.groups.append(group)
        elif kind == "h3":
            if group is None or group in (ref.preamble, ref.postamble, ref.short):
                raise SourceError("line %d: an option outside an option group" % line)
            option, label = Option(text, line), None
            for name in filter(None, (option.short, option.long)):
                if name in seen:
                    raise SourceError("line %d: %s twice" % (line, name))
                seen.add(name)
            group.options.append(option)
        elif kind == "label":
            label = text
        elif kind == "block":
            if label == "Table values":
                for entry in text:
                    name, sep, value = entry.partition("=")
                    if not sep:
                        raise SourceError("line %d: %r is not NAME = VALUE" % (line, entry))
                    ref.table_values[name.strip()] = value.strip()
            elif group is None:
                pass  # an example in the introduction
            elif option is not None and label is None:
                if option.help:
                    raise SourceError("line %d: a second help block for %s" % (line, option.spec))
                option.help = text
            elif option is not None and label == "man":
                option.man = text
            elif option is None and label == "help" and group in (ref.preamble, ref.postamble, ref.short):
                group.help = text
            elif option is None and label == "man":
                group.man = text
            elif label == "man after" and group not in (ref.preamble, ref.postamble, ref.short):
                group.man_after = text
            else:
                raise SourceError("line %d: a block with no place (label %r)" % (line, label))
            label = None
    if not ref.short.help:
        raise SourceError("no Short help (what -h prints)")
    for o in ref.options():
        if not o.help:
            raise SourceError("line %d: %s has no help text" % (o.line, o.spec))
        if not o.man:
            raise SourceError("line %d: %s has no man text" % (o.line, o.spec))
        prefix = _help_prefix(o)
        if len(prefix) > 80:
            raise SourceError("line %d: %r is too long for a line" % (o.line, prefix))
    used = set()
    for lines_ in [ref.preamble.help, ref.postamble.help] + [o.help for o in ref.options()]:
        for l in lines_:
            used.update(PLACEHOLDER_RE.findall(l))
    missing = sorted(used - set(ref.table_values))
    if missing:
        raise SourceError("no table value for %s" % ", ".join(missing))
    return ref


# --- --help ----------------------------------------------------------------

def _help_prefix(o):
    head = "%s, %s" % (o.short, o.long) if o.short else "    " + o.long
    if o.metavar:
        head += " " + o.metavar
    return "  " + head


def help_lines(ref):
    """The --help text as lines, placeholders still in them."""
    out = list(ref.preamble.help)
    for g in ref.groups:
        out += ["", g.name + ":"]
        for o in g.options:
            prefix = _help_prefix(o)
            if len(prefix) + 2 > HELP_COLUMN:
                # Too long to leave two spaces before the column: the text
                # starts on the next line.
                out.append(prefix)
                out += [" " * HELP_COLUMN + l if l else "" for l in o.help]
            else:
                out.append(prefix.ljust(HELP_COLUMN) + o.help[0])
                out += [" " * HELP_COLUMN + l if l else "" for l in o.help[1:]]
    out += [""] + ref.postamble.help
    return out


def _c_string(s, newline):
    """A C string literal of s (and a newline); '??' split so that no trigraph forms."""
    s = s.replace("\\", "\\\\").replace('"', '\\"').replace("??", "?\\?")
    return '"' + s + ("\\n" if newline else "") + '"'


def help_include(ref):
    """A C include: the --help text cut at each {placeholder} into pieces, each piece
    followed by the value to print after it. main.c switches on the value (no default
    case), so a placeholder it does not know fails to build with -Wswitch."""
    text = "\n".join(help_lines(ref)) + "\n"
    pieces = []
    pos = 0
    for m in PLACEHOLDER_RE.finditer(text):
        pieces.append((text[pos:m.start()], m.group(1)))
        pos = m.end()
    pieces.append((text[pos:], None))
    # C99 promises string literals of 4095 bytes (-Woverlength-strings):
    # a longer piece goes out as several, split after a line.
    short = []
    for piece, name in pieces:
        while len(piece) > 3000:
            cut = piece.rindex("\n", 0, 3000) + 1
            short.append((piece[:cut], None))
            piece = piece[cut:]
        short.append((piece, name))
    pieces = short
    names = sorted({n for _, n in pieces if n})
    enum = lambda n: "PC__HELP_" + (n.upper() if n else "NONE")
    out = ["/* Generated by man/gen_options.py from man/options.md: edit that file. */",
           "typedef enum pc__help_value {",
           "  PC__HELP_NONE,"]
    out += ["  %s," % enum(n) for n in names]
    out += ["} pc__help_value_t;", "",
            "typedef struct pc__help_piece {",
            "  const char *text;",
            "  pc__help_value_t value; /* printed after text */",
            "} pc__help_piece_t;", "",
            "static const pc__help_piece_t pc__help_pieces[] = {"]
    for piece, name in pieces:
        parts = piece.split("\n")
        lits = [_c_string(p, True) for p in parts[:-1]]
        if parts[-1] or not lits:
            lits.append(_c_string(parts[-1], False))
        out.append("  {" + "\n   ".join(lits) + ",")
        out.append("   %s}," % enum(name))
    out.append("};")
    short = "\n".join(ref.short.help) + "\n"
    if PLACEHOLDER_RE.search(short):
        raise SourceError("the Short help has a {placeholder}: -h prints it as it is")
    out += ["", "/* -h: the short help, as it is. */", "static const char pc__help_short[] ="]
    out += ["  " + _c_string(line, True) for line in short.split("\n")[:-1]]
    out[-1] += ";"
    return "\n".join(out) + "\n"


# --- the man page ------------------------------------------------------------

def _roff_name(s):
    return s.replace("-", "\\-")


def man_tag(o):
    """The .TP tag line, the way the hand-written page wrote them."""
    if o.short:
        tag = '.BR %s ", " %s' % (_roff_name(o.short), _roff_name(o.long))
        if o.metavar:
            tag += ' " \\fI%s\\fP"' % o.metavar
        return tag
    if o.metavar:
        return '.BI %s " %s"' % (_roff_name(o.long), o.metavar)
    return ".B %s" % _roff_name(o.long)


def man_options(ref):
    out = list(ref.preamble.man)
    for g in ref.groups:
        out.append(".SS " + g.name)
        out += g.man
        for o in g.options:
            out += [".TP", man_tag(o)] + o.man
        out += g.man_after
    return out


def man_page(options_md, template):
    """The whole page, as meson makes it (gen_man.py), from the tree of `template`."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        import gen_man
    finally:
        sys.path.pop(0)
    reference_md, version = gen_man.default_paths(template)
    return gen_man.man_page(template, options_md, reference_md, version)


# --- the option table of docs/reference.md ------------------------------------

def _md_cell(s):
    return s.replace("|", "\\|")


def option_table(ref):
    out = [TABLE_BEGIN, "", "| option | meaning |", "|---|---|"]
    for o in ref.options():
        names = ("`%s`, `%s`" % (o.short, o.long)) if o.short else "`%s`" % o.long
        if o.metavar:
            names = names[:-1] + " " + o.metavar + "`"
        text = " ".join(l.strip() for l in o.help)
        text = PLACEHOLDER_RE.sub(lambda m: ref.table_values[m.group(1)], text)
        out.append("| %s | %s |" % (names, _md_cell(text)))
    out += ["", TABLE_END]
    return out


def table_replace(ref, text, name="docs/reference.md"):
    """text (a markdown file, name) with the option table between its markers made anew."""
    lines = text.split("\n")
    if lines.count(TABLE_BEGIN) != 1 or lines.count(TABLE_END) != 1:
        raise SourceError("%s: needs one line %s and one %s" % (name, TABLE_BEGIN, TABLE_END))
    b, e = lines.index(TABLE_BEGIN), lines.index(TABLE_END)
    if e < b:
        raise SourceError("%s: the end marker comes before the start" % name)
    return "\n".join(lines[:b] + option_table(ref) + lines[e + 1:])


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    ref = parse(argv[1])
    what = argv[2]
    if what == "help" and len(argv) == 4:
        _write(argv[3], help_include(ref))
    elif what == "man" and len(argv) == 5:
        _write(argv[4], man_page(argv[1], argv[3]))
    elif what == "table" and len(argv) == 5 and argv[4] in ("--check", "--write"):
        with open(argv[3]) as f:
            old = f.read()
        new = table_replace(ref, old, argv[3])
        if argv[4] == "--write":
            if new != old:
                _write(argv[3], new)
        elif new != old:
            print("%s: the option table differs from %s; run `ninja -C BUILD docs-options`"
                  % (argv[3], argv[1]), file=sys.stderr)
            return 1
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except SourceError as e:
        print("gen_options.py: %s" % e, file=sys.stderr)
        sys.exit(1)
