#!/usr/bin/python3
"""Makes the man page from its sources: man/precompress.1.in (NAME, SYNOPSIS, SEE ALSO and
where the rest goes), man/options.md (OPTIONS, through gen_options.py) and docs/reference.md
(every other section), as zstd makes zstd.1 from zstd.1.md; here without ronn.

    gen_man.py TEMPLATE.in OPTIONS.md REFERENCE.md VERSION OUT.1

The template's lines `@OPTIONS@`, `@REFERENCE NAME@` (the reference's section that becomes
.SH NAME) and `@REFERENCE@` (every section of the reference not placed yet, in its order) are
replaced; `@VERSION@` anywhere is VERSION. Every section of the reference must be placed
once, or be marked to leave out.

The reference is markdown, of which this reads a subset, and fails on what it does not know
rather than print it wrong:

- the text before the first `## ` is the document's own introduction: not in the page;
- `## Heading` is a section, `.SH HEADING`; `<!-- man: NAME -->` on the line after the
  heading names it otherwise, `<!-- man: omit section -->` leaves it out (with its `###`);
- `### Heading` is `.SS Heading`;
- paragraphs; `- ` and `1. ` list items (one paragraph each, continued by lines indented to
  the item's text, no nesting); tables (two columns: a tagged paragraph per row, the header
  dropped; more: the other cells below the tag as `header: cell`); code blocks, fenced or
  indented by 4 spaces; `<!-- man: omit -->` before a block leaves that block out; any other
  HTML comment is dropped;
- inline: `code` and **bold** in bold, *emphasis* in italics, backslash escapes, and links as
  their text (a link to a section of the reference whose text is that section's heading reads
  as the section's name in the page, NAME or Subsection). A link to a heading that does not
  exist fails, and so does HTML in the text (a tag, an entity).

Only the standard library is used; tests/unit/check_docs.py imports parse() and plain().
"""
import importlib.util
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    import gen_options  # the OPTIONS section
finally:
    sys.path.pop(0)

WIDTH = 78  # roff text lines are wrapped here (the page itself is filled by groff)


SourceError = gen_options.SourceError


class Section:
    def __init__(self, level, title, line):
        self.level = level  # 2 or 3
        self.title = title  # markdown, as written
        self.line = line
        self.man = None  # .SH/.SS name
        self.omit = False
        self.blocks = []  # (kind, payload, line)
        self.subs = []  # level 3 sections of a level 2 one


class Reference:
    def __init__(self, path):
        self.path = path
        self.sections = []  # level 2, in order
        self.anchors = {}  # GitHub's anchor -> Section


# --- reading the markdown -----------------------------------------------------

MAN_COMMENT = re.compile(r"^<!--\s*man:\s*(.*?)\s*-->$")
COMMENT = re.compile(r"^<!--.*-->$")
BULLET = re.compile(r"^- (.*)$")
NUMBERED = re.compile(r"^(\d+)\. (.*)$")
FENCE = re.compile(r"^```([a-z]*)$")


def anchor(title):
    """GitHub's anchor for a heading: lower case, punctuation but '-' and '_' dropped,
    spaces as '-'."""
    text = plain(title).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _blocks(lines, first, where):
    """Yields (kind, payload, line number) for a section's body lines."""
    i = 0
    n = len(lines)
    omit_next = False
    while i < n:
        line = lines[i]
        num = first + i
        if not line.strip():
            i += 1
            continue
        m = MAN_COMMENT.match(line.strip())
        if m:
            if m.group(1) != "omit":
                raise SourceError("%s:%d: <!-- man: %s --> here means nothing (only 'omit' "
                                  "before a block, or a name after a heading)" % (where, num, m.group(1)))
            omit_next = True
            i += 1
            continue
        if COMMENT.match(line.strip()):
            i += 1
            continue
        if line.startswith("<!--"):
            raise SourceError("%s:%d: an HTML comment must be on one line" % (where, num))
        kind = payload = None
        fm = FENCE.match(line)
        if fm:
            j = i + 1
            while j < n and lines[j] != "```":
                j += 1
            if j == n:
                raise SourceError("%s:%d: a code fence that is not closed" % (where, num))
            kind, payload = "code", lines[i + 1:j]
            i = j + 1
        elif line.startswith("    "):
            j = i
            code = []
            while j < n and (lines[j].startswith("    ") or not lines[j].strip()):
                code.append(lines[j][4:])
                j += 1
            while code and not code[-1].strip():
                code.pop()
            kind, payload = "code", code
            i = j
        elif line.startswith("|"):
            rows = []
            j = i
            while j < n and lines[j].startswith("|"):
                rows.append(lines[j])
                j += 1
            kind, payload = "table", _table(rows, where, num)
            i = j
        elif BULLET.match(line) or NUMBERED.match(line):
            items = []
            j = i
            numbered = bool(NUMBERED.match(line))
            while j < n:
                if not lines[j].strip():
                    # a blank line between items keeps the list going
                    k = j
                    while k < n and not lines[k].strip():
                        k += 1
                    if k < n and (NUMBERED if numbered else BULLET).match(lines[k]):
                        j = k
                        continue
                    break
                m = (NUMBERED if numbered else BULLET).match(lines[j])
                if not m:
                    if (BULLET if numbered else NUMBERED).match(lines[j]):
                        raise SourceError("%s:%d: bullets and numbers in one list" % (where, first + j))
                    break
                text = [m.group(m.lastindex)]
                indent = len(lines[j]) - len(m.group(m.lastindex))
                j += 1
                while j < n and lines[j].strip() and not BULLET.match(lines[j]) \
                        and not NUMBERED.match(lines[j]):
                    if not lines[j].startswith(" " * indent) or lines[j][indent] == " ":
                        raise SourceError("%s:%d: a list item's line must be indented by %d "
                                          "spaces (no nested blocks)" % (where, first + j, indent))
                    text.append(lines[j].strip())
                    j += 1
                items.append(" ".join(text))
            kind, payload = ("numbered" if numbered else "bullets"), items
            i = j
        elif line.startswith("#"):
            raise SourceError("%s:%d: a heading of a level this page does not take" % (where, num))
        else:
            para = []
            j = i
            while j < n and lines[j].strip() and not lines[j].startswith(("    ", "|", "```", "<!--")) \
                    and not BULLET.match(lines[j]) and not NUMBERED.match(lines[j]):
                para.append(lines[j].strip())
                j += 1
            kind, payload = "para", " ".join(para)
            i = j
        if omit_next:
            omit_next = False
        else:
            yield kind, payload, num
    if omit_next:
        raise SourceError("%s: <!-- man: omit --> at the end of a section, before no block" % where)


def _cells(row):
    row = row.strip()
    if not (row.startswith("|") and row.endswith("|")):
        raise SourceError("a table row that does not start and end with '|': %r" % row)
    cells = re.split(r"(?<!\\)\|", row[1:-1])
    return [c.strip().replace("\\|", "|") for c in cells]


def _table(rows, where, line):
    if len(rows) < 3 or not re.match(r"^\|(\s*:?-+:?\s*\|)+$", rows[1].strip()):
        raise SourceError("%s:%d: a table needs a header row, a |---| row and a body" % (where, line))
    head = _cells(rows[0])
    body = [_cells(r) for r in rows[2:]]
    for k, r in enumerate(body):
        if len(r) != len(head):
            raise SourceError("%s:%d: a row of %d cells under a header of %d"
                              % (where, line + 2 + k, len(r), len(head)))
    return head, body


def parse(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    where = os.path.basename(path)
    ref = Reference(path)
    cur2 = cur = None
    body = []
    start = 0

    def flush():
        if cur is not None:
            cur.blocks = list(_blocks(body, start, where))

    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        if FENCE.match(line) or (in_fence and line == "```"):
            in_fence = not in_fence
        heading = None if in_fence else re.match(r"^(##|###) (.+)$", line)
        if heading:
            flush()
            level = len(heading.group(1))
            cur = Section(level, heading.group(2).strip(), i + 1)
            a = anchor(cur.title)
            if a in ref.anchors:
                raise SourceError("%s:%d: a second heading with the anchor #%s" % (where, i + 1, a))
            ref.anchors[a] = cur
            if level == 2:
                cur2 = cur
                ref.sections.append(cur)
                cur.man = plain(cur.title).upper()
            else:
                if cur2 is None:
                    raise SourceError("%s:%d: ### before any ##" % (where, i + 1))
                cur2.subs.append(cur)
                cur.man = plain(cur.title)
                cur.omit = cur2.omit
            body = []
            start = i + 2
            # <!-- man: ... --> on the line after the heading (a blank line between allowed)
            k = i + 1
            while k < len(lines) and not lines[k].strip():
                k += 1
            m = MAN_COMMENT.match(lines[k].strip()) if k < len(lines) else None
            if m and m.group(1) != "omit":
                if m.group(1) == "omit section":
                    cur.omit = True
                elif level == 2 and re.match(r"^[A-Z][A-Z ]*$", m.group(1)):
                    cur.man = m.group(1)
                else:
                    raise SourceError("%s:%d: <!-- man: %s --> is neither a NAME in capitals "
                                      "(## only) nor 'omit section'" % (where, k + 1, m.group(1)))
                i = k + 1
                start = i + 1
                continue
        elif cur is not None:
            body.append(line)
        i += 1
    flush()
    names = {}
    for s in ref.sections:
        if s.man in names:
            raise SourceError("%s:%d: a second section named %s in the page" % (where, s.line, s.man))
        names[s.man] = s
    return ref


# --- inline text ---------------------------------------------------------------

INLINE = re.compile(
    r"(?P<code>(?P<ticks>`+)(?P<codetext>.+?)(?P=ticks))"
    r"|(?P<link>\[(?P<linktext>[^\]]+)\]\((?P<url>[^)\s]+)\))"
    r"|(?P<bold>\*\*(?P<boldtext>.+?)\*\*)"
    r"|(?P<em>\*(?P<emtext>[^*\s](?:[^*]*[^*\s])?)\*)"
    r"|(?P<esc>\\(?P<escchar>[!-/:-@\[-`{-~]))")


def _char(c):
    if ord(c) < 128:
        return c
    return "\\[u%04X]" % ord(c)


def esc_text(s):
    return "".join("\\e" if c == "\\" else _char(c) for c in s)


CODE_CHARS = {"\\": "\\e", "-": "\\-", "'": "\\(aq", "`": "\\(ga", "~": "\\(ti", "^": "\\(ha"}


def esc_code(s):
    return "".join(CODE_CHARS.get(c, _char(c)) for c in s)


def plain(md):
    """The text of inline markdown, markup dropped (headings, anchors, comparisons)."""
    out = []
    pos = 0
    for m in INLINE.finditer(md):
        out.append(md[pos:m.start()])
        if m.group("code"):
            out.append(m.group("codetext").strip() if m.group("ticks") == "``" else m.group("codetext"))
        elif m.group("link"):
            out.append(plain(m.group("linktext")))
        elif m.group("bold"):
            out.append(plain(m.group("boldtext")))
        elif m.group("em"):
            out.append(plain(m.group("emtext")))
        else:
            out.append(m.group("escchar"))
        pos = m.end()
    out.append(md[pos:])
    return "".join(out)


HTML = re.compile(r"<[A-Za-z/!]|&[A-Za-z]+;|&#")


def _text(s):
    """Plain text between inline markup: HTML (a tag, an entity) is not taken."""
    if HTML.search(s):
        raise SourceError("HTML in the text, which the page cannot show: %r" % s)
    return esc_text(s)


def roff_inline(md, ref, font="R"):
    out = []
    pos = 0
    for m in INLINE.finditer(md):
        out.append(_text(md[pos:m.start()]))
        if m.group("code"):
            text = m.group("codetext")
            if m.group("ticks") == "``":
                text = text.strip()
            out.append("\\fB%s\\f%s" % (esc_code(text), font))
        elif m.group("link"):
            out.append(_link(m.group("linktext"), m.group("url"), ref, font))
        elif m.group("bold"):
            out.append("\\fB%s\\f%s" % (roff_inline(m.group("boldtext"), ref, "B"), font))
        elif m.group("em"):
            out.append("\\fI%s\\f%s" % (roff_inline(m.group("emtext"), ref, "I"), font))
        else:
            out.append(esc_text(m.group("escchar")))
        pos = m.end()
    out.append(_text(md[pos:]))
    return "".join(out)


def _link(text, url, ref, font):
    if url.startswith("#"):
        target = ref.anchors.get(url[1:])
        if target is None:
            raise SourceError("%s: a link to #%s, which is no heading of it"
                              % (os.path.basename(ref.path), url[1:]))
        if plain(text).lower() == plain(target.title).lower() and not target.omit:
            return "\\fB%s\\f%s" % (esc_text(target.man), font)
    return roff_inline(text, ref, font)


def wrap(text):
    """Roff text lines of at most WIDTH columns where spaces allow; a line starting with
    '.' or a quote gets '\\&' so that it is not a request."""
    lines = []
    cur = ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > WIDTH:
            lines.append(cur)
            cur = word
        else:
            cur = cur + " " + word if cur else word
    if cur:
        lines.append(cur)
    return ["\\&" + l if l.startswith((".", "'")) else l for l in lines]


def _heading_arg(s):
    return '"%s"' % esc_code(plain(s)).replace('"', "\\(dq")


# --- roff ------------------------------------------------------------------------

def _code_lines(lines):
    out = []
    for l in lines:
        l = esc_code(l).rstrip()
        if not l or l.startswith((".", "'")):
            l = "\\&" + l
        out.append(l)
    return out


def roff_blocks(blocks, ref):
    out = []
    first = True
    for kind, payload, line in blocks:
        try:
            if kind == "para":
                if not first:
                    out.append(".PP")
                out += wrap(roff_inline(payload, ref))
            elif kind in ("bullets", "numbered"):
                for k, item in enumerate(payload):
                    out.append(".IP \\(bu 2" if kind == "bullets" else ".IP %d. 4" % (k + 1))
                    out += wrap(roff_inline(item, ref))
            elif kind == "table":
                head, body = payload
                for row in body:
                    tag = roff_inline(row[0], ref)  # one line: .TP takes one
                    out += [".TP", "\\&" + tag if tag.startswith((".", "'")) else tag]
                    if len(head) == 2:
                        out += wrap(roff_inline(row[1], ref))
                    else:
                        for k in range(1, len(head)):
                            if k > 1:
                                out.append(".br")
                            out += wrap(roff_inline("%s: %s" % (head[k], row[k]), ref))
            elif kind == "code":
                out += [".PP", ".RS", ".nf"] + _code_lines(payload) + [".fi", ".RE"]
        except SourceError as e:
            raise SourceError("%s (line %d)" % (e, line))
        first = False
    return out


def roff_section(sec, ref):
    out = [".SH " + _heading_arg(sec.man)] + roff_blocks(sec.blocks, ref)
    for sub in sec.subs:
        out += [".SS " + _heading_arg(sub.man)] + roff_blocks(sub.blocks, ref)
    return out


def man_page(template, options_md, reference_md, version):
    with open(template, encoding="utf-8") as f:
        lines = f.read().split("\n")
    ref = parse(reference_md)
    opts = gen_options.parse(options_md)
    by_name = {s.man: s for s in ref.sections if not s.omit}
    placed = set()
    out = []
    rest_at = None
    for line in lines:
        m = re.match(r"^@REFERENCE(?: ([A-Z][A-Z ]*))?@$", line)
        if line == "@OPTIONS@":
            out += gen_options.man_options(opts)
        elif m and m.group(1):
            sec = by_name.get(m.group(1))
            if sec is None:
                raise SourceError("%s: @REFERENCE %s@, but %s has no such section"
                                  % (template, m.group(1), reference_md))
            if sec.man in placed:
                raise SourceError("%s: %s placed twice" % (template, sec.man))
            placed.add(sec.man)
            out += roff_section(sec, ref)
        elif m:
            if rest_at is not None:
                raise SourceError("%s: @REFERENCE@ twice" % template)
            rest_at = len(out)
            out.append(None)
        else:
            out.append(line.replace("@VERSION@", version))
    if rest_at is None:
        raise SourceError("%s: no @REFERENCE@ line" % template)
    rest = []
    for s in ref.sections:
        if not s.omit and s.man not in placed:
            rest += roff_section(s, ref)
    out[rest_at:rest_at + 1] = rest
    text = "\n".join(out)
    left = re.findall(r"@[A-Z]+[^@\n]*@", text)
    if left:
        raise SourceError("%s: placeholders left: %s" % (template, ", ".join(sorted(set(left)))))
    repo = [(k + 1, l) for k, l in enumerate(text.split("\n"))
            if not l.startswith('.\\"') and REPO_PATH.search(l)]
    if repo:
        raise SourceError("the page names files of the source tree, which an installed program does "
                          "not have (leave them out of the page with <!-- man: omit -->): %s"
                          % "; ".join("line %d: %s" % kl for kl in repo[:5]))
    return text


# What names a file of the source tree (docs/deltas.md, tests/..., README.md) or a tracker's
# issue: none of it ships with the program, so the page that does must not send its reader there.
REPO_PATH = re.compile(r"\b(?:docs|tests|examples|bench|\.ci)/|\.md\b|README"
                       r"|\b[Ii]ssue \d")


def default_paths(template):
    """For callers that know only the template (gen_options.py's `man`): the reference and
    the version of the tree the template lies in."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(template)))
    spec = importlib.util.spec_from_file_location("pc_dist_version",
                                                  os.path.join(root, "dist", "version.py"))
    version = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(version)
    return (os.path.join(root, "docs", "reference.md"),
            version.read(os.path.join(root, "include", "precompress.h")))


def main(argv):
    if len(argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    template, options_md, reference_md, version, out = argv[1:]
    text = man_page(template, options_md, reference_md, version)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except SourceError as e:
        print("gen_man.py: %s" % e, file=sys.stderr)
        sys.exit(1)
