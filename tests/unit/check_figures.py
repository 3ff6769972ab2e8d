#!/usr/bin/python3
"""The figures the documentation states are the code's: each one is read from the docs (the
reference, which is also the man page, the option texts of man/options.md, README.md and the
design pages) and from the C sources (a #define, or the one line that sets it), and a
difference fails, naming both places:

    FAIL: cache writer's batch (entries): docs/reference.md says 16384 ("or 16,384 entries are
          queued"), src/store/storeint.h (PC__STORE_FLUSH_OPS) says 65536

A sentence reworded so that its figure is no longer found fails too ("cannot find ... in
docs/reference.md"): update the pattern here with the text. Most figures come from the source
tree alone. The few that only the compiler knows (a pending job's size, the buffers
pc__work_mem() counts) come from FIGURES_CODE, tests/unit/figures_code.c as built (meson
passes it); without it they are reported as not checked.

    check_figures.py SOURCE_ROOT [FIGURES_CODE]
"""
import os
import re
import subprocess
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
FIGURES_CODE = sys.argv[2] if len(sys.argv) > 2 else None
failures = []
checked = 0


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


class NotFound(Exception):
    pass


class NotChecked(Exception):
    """A figure this run cannot know (no FIGURES_CODE, another ABI): said, not failed."""


not_checked = []


def skip(what, e):
    not_checked.append(what)
    print("NOT CHECKED: %s: %s" % (what, e))


_texts = {}


def read(path):
    if path not in _texts:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            _texts[path] = f.read()
    return _texts[path]


# --- the code's side ---------------------------------------------------------

def _c_plain(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def define(path, name, _depth=0):
    """The value of `#define NAME ...` in path: an int (casts, <<, *, +, / evaluated, other
    macros of the same file resolved) or, for a string literal, the str."""
    m = re.search(r"^#define %s\s+(.+?)\s*$" % re.escape(name), _c_plain(read(path)), re.M)
    if not m:
        raise NotFound("%s: no #define %s" % (path, name))
    expr = m.group(1)
    s = re.match(r'^"(.*)"$', expr)
    if s:
        return s.group(1)
    return c_int(path, expr, _depth)


def c_int(path, expr, _depth=0):
    expr = re.sub(r"\((?:uint64_t|size_t|int64_t|uint32_t|int|unsigned)\)", "", expr)
    expr = re.sub(r"\b(0x[0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr)
    for name in set(re.findall(r"\b[A-Z_][A-Z0-9_]*\b", expr)):
        if _depth > 5:
            raise NotFound("%s: %s: too deep" % (path, expr))
        expr = re.sub(r"\b%s\b" % name, "(%d)" % define(path_of(path, name), name, _depth + 1), expr)
    if not re.match(r"^[\d\sxa-fA-F()<>+*/-]+$", expr):
        raise NotFound("%s: cannot evaluate %r" % (path, expr))
    return int(eval(expr.replace("/", "//")))  # digits and operators only, checked above


def path_of(path, name):
    """The file that defines `name`: path itself, else a header beside it, else a header
    it includes (`#include "folder/x.h"`, from src/) that does."""
    if re.search(r"^#define %s\b" % re.escape(name), read(path), re.M):
        return path
    src = os.path.join(ROOT, os.path.dirname(path))
    near = [os.path.join(os.path.dirname(path), f) for f in sorted(os.listdir(src)) if f.endswith(".h")]
    near += [os.path.join("src", h) for h in re.findall(r'^#\s*include\s*"(\w+/\w+\.h)"', read(path), re.M)]
    for h in near:
        if os.path.exists(os.path.join(ROOT, h)) and re.search(r"^#define %s\b" % re.escape(name), read(h), re.M):
            return h
    raise NotFound("%s: %s is defined nowhere near" % (path, name))


def code(path, pattern, group=1):
    """A figure from the one line of code that sets it (a regex over the file, comments
    dropped)."""
    ms = list(re.finditer(pattern, _c_plain(read(path)), re.S))
    if len(ms) != 1:
        raise NotFound("%s: %d matches of /%s/ (want 1)" % (path, len(ms), pattern))
    return ms[0].group(group)


# --- the docs' side ------------------------------------------------------------

def _doc_plain(path):
    """The doc's words: whitespace collapsed; roff escapes and macro names of man/options.md
    dropped; markdown's backticks kept (patterns say where code is)."""
    text = read(path)
    if path.endswith("options.md"):
        text = text.replace("\\-", "-").replace("\\(<=", "<=").replace("\\(aq", "'")
        text = re.sub(r"^\s*\.(?:B|I|BR|IR|RB|BI|IB|RI)\s", " ", text, flags=re.M)
        text = text.replace('"', "")
    return re.sub(r"\s+", " ", text)


def doc(path, pattern):
    """The match of pattern in the doc (exactly one wanted)."""
    ms = list(re.finditer(pattern, _doc_plain(path)))
    if not ms:
        raise NotFound("cannot find /%s/ in %s (reworded? then update this test's pattern)"
                       % (pattern, path))
    if len(ms) > 1:
        raise NotFound("/%s/ matches %d places in %s (want 1)" % (pattern, len(ms), path))
    return ms[0]


UNITS = {"": 1, "B": 1, "k": 1 << 10, "KiB": 1 << 10, "M": 1 << 20, "MiB": 1 << 20,
         "G": 1 << 30, "GiB": 1 << 30}
FRACTIONS = {"half": 2, "a quarter": 4, "a third": 3}
WORDS = {"seven": 7, "eight": 8, "nine": 9, "ten": 10}


def number(s):
    return int(s.replace(",", ""))


def size(num, unit=""):
    return number(num) * UNITS[unit]


def show(v):
    """A figure as the message gives it: sizes also in KiB, MiB or GiB."""
    if isinstance(v, int) and v >= 1024 and v % 1024 == 0:
        for unit in ("GiB", "MiB", "KiB"):
            if v % UNITS[unit] == 0:
                return "%d (%d %s)" % (v, v // UNITS[unit], unit)
    return str(v)


def same(what, code_where, code_value, doc_where, doc_value, context):
    global checked
    checked += 1
    if code_value != doc_value:
        fail("%s: %s says %s (\"%s\"), %s says %s" % (what, doc_where, show(doc_value),
                                                    context.strip(), code_where, show(code_value)))


def check(what, code_where, get_code, docs):
    """docs: [(path, pattern, value of a match)]."""
    try:
        value = get_code()
    except NotChecked as e:
        skip(what, e)
        return
    except NotFound as e:
        fail("%s: %s" % (what, e))
        return
    for path, pattern, conv in docs:
        try:
            m = doc(path, pattern)
        except NotFound as e:
            fail("%s: %s" % (what, e))
            continue
        same(what, code_where, value, path, conv(m), m.group(0))


REF = "docs/reference.md"
OPT = "man/options.md"
g1 = lambda m: number(m.group(1))
frac1 = lambda m: FRACTIONS[m.group(1)]

# --- the content cache -----------------------------------------------------------

check("cache writer's batch (entries)", "src/store/storeint.h (PC__STORE_FLUSH_OPS)",
      lambda: define("src/store/storeint.h", "PC__STORE_FLUSH_OPS"),
      [(REF, r"or ([\d,]+) entries are queued", g1)])
check("cache writer's batch (share of the queue's budget)", "src/store/store.c (flush_bytes)",
      lambda: int(code("src/store/store.c", r"flush_bytes = budget / (\d+)")),
      [(REF, r"commits in batches: when (half|a quarter) of the queue's budget", frac1)])
check("cache queue (share of the memory limit)", "src/run/setup.c (cache_budget)",
      lambda: int(code("src/run/setup.c", r"uint64_t b = limit / (\d+);")),
      [(REF, r"The queue holds at most (half|a quarter) of the memory limit", frac1)])
check("cache queue (cap)", "src/run/setup.c (cache_budget)",
      lambda: int(code("src/run/setup.c", r"return b < \(\(uint64_t\)(\d+) << 20\)")) << 20,
      [(REF, r"The queue holds at most \w+(?: \w+)? of the memory limit and (\d+) MiB",
        lambda m: size(m.group(1), "MiB"))])
check("default --cache-max-size", "src/codec/options.c (cache_max_size)",
      lambda: 1 << int(code("src/codec/options.c", r"cache_max_size = \(uint64_t\)1 << (\d+);")),
      [(REF, r"more than `--cache-max-size` \(default `(\d+)([kMG])`", lambda m: size(*m.groups())),
       (OPT, r"trim DIR to N bytes, least recently used first \[default: (\d+)([kMG]);",
        lambda m: size(*m.groups())),
       (OPT, r"least recently used entries first .{0,120}?Default: (\d+)([kMG]) \.",
        lambda m: size(*m.groups()))])
# --- the remote cache ------------------------------------------------------------

RC = "docs/remote-cache.md"
check("remote cache: connections", "src/store/remote.h (PC__REMOTE_CONNS)",
      lambda: define("src/store/remote.h", "PC__REMOTE_CONNS"),
      [(REF, r"stores take at most half of the (\d+) connections", g1)])
check("remote cache: stores' share of the connections", "src/store/remote.c (take)",
      lambda: int(code("src/store/remote.c", r"#define PUT_CONNS \(PC__REMOTE_CONNS / (\d+)\)")),
      [(REF, r"stores take at most (half) of the \d+ connections", frac1)])
check("remote cache: default timeout (s)", "src/store/remote.h (PC__REMOTE_TIMEOUT)",
      lambda: define("src/store/remote.h", "PC__REMOTE_TIMEOUT"),
      [(REF, r"`--cache-url-timeout` seconds \(default (\d+)\)", g1),
       (OPT, r"byte moving; a transfer may take 10 x S \[default: (\d+)\]", g1),
       (OPT, r"1 to 3600; default: (\d+) \.", g1)])
check("remote cache: a whole transfer (times the timeout)", "src/store/remote.c (total_ms)",
      lambda: int(code("src/store/remote.c", r"r->total_ms = \(long\)t \* (\d+)000;")),
      [(REF, r"\((ten) times that for a whole transfer\)", lambda m: WORDS[m.group(1)]),
       (OPT, r"a transfer may take (\d+) x S", g1)])
check("remote cache: the end's drain (times the timeout)", "src/store/remote.c (drain_ms)",
      lambda: int(code("src/store/remote.c", r"r->drain_ms = \(uint64_t\)t \* (\d+)000;")),
      [(REF, r"is sent for at most (twice) `--cache-url-timeout`", lambda m: 2)])
check("remote cache: largest source", "src/work/cache.h (PC__REMOTE_MAX)",
      lambda: int(code("src/work/cache.h", r"PC__REMOTE_MAX \(\(uint64_t\)(\d+) << 20\)")) << 20,
      [(REF, r"Sources up to (\d+) MiB are looked up and stored", lambda m: size(m.group(1), "MiB"))])
check("remote cache: a file worth a request (microseconds)", "src/work/cache.h (PC__REMOTE_WORTH_US)",
      lambda: define("src/work/cache.h", "PC__REMOTE_WORTH_US"),
      [(REF, r"estimated to take at least (\d+) microseconds of one core", g1)])
check("remote cache: entry header (bytes)", "src/store/remote.h (PC__REMOTE_HEAD)",
      lambda: define("src/store/remote.h", "PC__REMOTE_HEAD"),
      [(RC, r"the header's (\d+) bytes", g1)])

check("store's application id", "src/store/storeid.h (PC__STORE_APP_ID)",
      lambda: define("src/store/storeid.h", "PC__STORE_APP_ID"),
      [(REF, r"application id `0x([0-9a-f]+)`", lambda m: int(m.group(1), 16)),
       (REF, r'application id `0x[0-9a-f]+` \("(\w{4})"\)',
        lambda m: int.from_bytes(m.group(1).encode(), "big"))])
check("store's schema version", "src/store/storeid.h (PC__STORE_VERSION)",
      lambda: define("src/store/storeid.h", "PC__STORE_VERSION"),
      [(REF, r"a schema version \(`user_version`, (\d+)\)", g1)])
check("store's page size", "src/store/storeid.c (DB_PAGE_SIZE)",
      lambda: int(define("src/store/storeid.c", "DB_PAGE_SIZE")),
      [(REF, r"on disk \((\d+) KiB pages\)", lambda m: size(m.group(1), "KiB"))])
check("last use recorded to", "src/store/storeint.h (PC__STORE_TOUCH_AGE, s)",
      lambda: define("src/store/storeint.h", "PC__STORE_TOUCH_AGE"),
      [(REF, r"the last hit, recorded to the (hour|minute|day)",
        lambda m: {"minute": 60, "hour": 3600, "day": 86400}[m.group(1)])])
check("a writer's wait for another's batch", "src/store/storeid.h (PC__STORE_BUSY_MS)",
      lambda: define("src/store/storeid.h", "PC__STORE_BUSY_MS"),
      [(REF, r"a writer waits up to (\d+) s for another's batch", lambda m: 1000 * number(m.group(1)))])
check("free pages before a VACUUM", "src/store/storewrite.c (do_trim)",
      lambda: int(code("src/store/storewrite.c", r"free_pages \* (\d+) > pages")),
      [(REF, r"when that leaves (half|a quarter) of the store's pages free", frac1)])

# --- memory ----------------------------------------------------------------------

check("default memory limit (share of the bound)", "src/common/machine.c (pc__memory_limit_at)",
      lambda: int(code("src/common/machine.c", r"m->limit = b\.bytes != 0 \? b\.bytes / (\d+)")),
      [(REF, r"or by default (half|a quarter) of the smallest bound this process has", frac1),
       (OPT, r"Default: (half|a quarter) of the smallest bound this process has", frac1),
       (OPT, r"\[default: (half|a quarter) of the cgroup limit", frac1)])
check("copies kept for identical files (cap)", "src/work/dedup.h (PC__DEDUP_KEEP_MAX)",
      lambda: define("src/work/dedup.h", "PC__DEDUP_KEEP_MAX"),
      [(REF, r"Those copies take at most (\d+) MiB per run", lambda m: size(m.group(1), "MiB"))])
check("copies kept for identical files (share of the memory limit)", "src/work/dedup.c (pc__dedup_budget)",
      lambda: int(code("src/work/dedup.c", r"mem_limit / (\d+) < PC__DEDUP_KEEP_MAX")),
      [(REF, r"MiB per run, or (half|a quarter) of the memory limit when that is less", frac1)])
check("zlib's memory estimate", "src/codec/codec.c (pc__enc_mem)",
      lambda: int(code("src/codec/codec.c", r"if \(engine == PC_GZIP_ZLIB\)\s*return \(uint64_t\)(\d+) << 10;")) << 10,
      [(REF, r"\((\d+) KiB for zlib", lambda m: size(m.group(1), "KiB"))])


def br_table():
    rows = code("src/codec/codec.c", r"br_mem_table\[\] = \{(.*?)\};")
    return [(int(a), int(b)) for a, b in re.findall(r"\{(\d+), (\d+)\}", rows)]


for kib, label in ((256, r"256 KiB of input"), (1024, r"1 MB"), (2560, r"2\.5 MB")):
    check("brotli 10..11's estimate at %d KiB" % kib, "src/codec/codec.c (br_mem_table)",
          lambda kib=kib: dict(br_table())[kib],
          [(REF, r"(\d+) MiB at %s" % label, g1)])
check("brotli 10..11's largest estimate", "src/codec/codec.c (br_mem_table, its last row + 4)",
      lambda: br_table()[-1][1] + 4,
      [(REF, r"up to about (\d+) MiB from 8 MB on", g1)])
check("brotli 0..9's estimate per input byte", "src/codec/codec.c (br_mem)",
      lambda: int(code("src/codec/codec.c", r"\(level < 4 \? 2 : (\d+)\)")),
      [(REF, r"plus 2 MiB and (\d+) times the input up to", g1)])
check("brotli 0..9's estimate: the input counted up to", "src/codec/codec.c (br_mem)",
      lambda: int(code("src/codec/codec.c", r"\(level < 4 \? 2 : \d+\) \*\s*\(in_size < \(\(uint64_t\)(\d+) << 20\)")),
      [(REF, r"times the input up to (\d+) MiB \(", g1)])
check("input slice", "src/work/work.h (PC__CHUNK)",
      lambda: define("src/work/work.h", "PC__CHUNK"),
      [(REF, r"twice a (\d+) KiB input slice", lambda m: size(m.group(1), "KiB")),
       (REF, r"stop at their next (\d+) KiB slice", lambda m: size(m.group(1), "KiB"))])
check("a file read once, whole", "src/codec/codec.h (PC__WHOLE_MAX)",
      lambda: define("src/codec/codec.h", "PC__WHOLE_MAX"),
      [(REF, r"\(a file up to (\d+) KiB whole;", lambda m: size(m.group(1), "KiB")),
       (REF, r"a file over (\d+) KiB is read twice", lambda m: size(m.group(1), "KiB")),
       ("docs/design.md", r"a file up to (\d+) KiB is read once", lambda m: size(m.group(1), "KiB"))])
check("output held before it spills", "src/work/work.h (PC__SPILL)",
      lambda: define("src/work/work.h", "PC__SPILL"),
      [(REF, r"per format (?:once|twice) the up to (\d+) MiB of output held before it spills",
        lambda m: size(m.group(1), "MiB"))])

# --- figures only the built code knows (tests/unit/figures_code.c) -------------------------

_built = None


def built():
    """figures_code's lines: {"pointer_bytes": 8, "job_bytes": N,
    ("work_buffers", formats, size): N, ...}."""
    global _built
    if _built is None:
        if FIGURES_CODE is None:
            raise NotChecked("no FIGURES_CODE given (tests/unit/figures_code.c, built)")
        out = subprocess.run([FIGURES_CODE], capture_output=True, text=True, check=True).stdout
        _built = {}
        for line in out.splitlines():
            f = line.split()
            if f[0] == "work_buffers":
                _built[("work_buffers", int(f[1]), int(f[2]))] = int(f[3])
            else:
                _built[f[0]] = int(f[1])
    return _built


def job_bytes():
    b = built()
    if b["pointer_bytes"] != 8:
        raise NotChecked("docs/memory.md gives a 64-bit build's size, this build's "
                         "pointers are %d bytes" % b["pointer_bytes"])
    return b["job_bytes"]


check("a pending job's size", "tests/unit/figures_code.c (sizeof(pc__job_t), built)", job_bytes,
      [("docs/memory.md", r"its pending job \((\d+) bytes on a 64-bit build", g1)])

TIMES = {"once": 1, "twice": 2}


def doc_buffers(m):
    """The buffers pc__work_mem() counts, as the reference states them: the input slice so
    many times, and per format the output held before it spills so many times plus a fixed
    part; as a function of (formats, size)."""
    in_times, chunk = TIMES[m.group(1)], size(m.group(2), "KiB")
    out_times, spill = TIMES[m.group(3)], size(m.group(4), "MiB")
    extra = size(m.group(5), m.group(6))
    return lambda formats, n: (in_times * min(n, chunk) +
                               bin(formats).count("1") * (out_times * min(n, spill) + extra))


BUFFERS = (r"plus its buffers: (once|twice) a (\d+) KiB input slice .{0,300}? and per format "
           r"(once|twice) the up to (\d+) MiB of output held before it spills .{0,80}? plus "
           r"(\d+) (KiB|MiB)\.")


def work_buffers_cases():
    return sorted(k for k in built() if isinstance(k, tuple))


def check_buffers():
    """Every case figures_code printed against the reference's formula."""
    what = "the buffers a file's estimate counts"
    try:
        cases = work_buffers_cases()
        m = doc(REF, BUFFERS)
    except NotChecked as e:
        skip(what, e)
        return
    except NotFound as e:
        fail("%s: %s" % (what, e))
        return
    formula = doc_buffers(m)
    for _, formats, n in cases:
        same("%s (formats 0x%x, %d bytes)" % (what, formats, n),
             "src/work/worker.c (pc__work_mem, built)", built()[("work_buffers", formats, n)],
             REF, formula(formats, n), m.group(0))


check_buffers()
check("the buffers of a large file with gzip and brotli",
      "src/work/worker.c (pc__work_mem, built: 64 MiB, gzip and brotli)",
      lambda: built()[("work_buffers", 3, 64 << 20)],
      [(REF, r"A large file with gzip and brotli thus counts ([\d.]+) MiB of buffers",
        lambda m: int(float(m.group(1)) * (1 << 20)))])
check("blocks mapped directly", "src/codec/codec.c (MEM_BIG)",
      lambda: define("src/codec/codec.c", "MEM_BIG"),
      [("docs/design.md", r"brotli's and zstd's blocks of (\d+) MiB and more are mapped",
        lambda m: size(m.group(1), "MiB")),
       ("docs/memory.md", r"The codecs' blocks of (\d+) MiB and more are mapped",
        lambda m: size(m.group(1), "MiB"))])

# --- scheduling, jobs, limits ---------------------------------------------------------

for name, pattern, unit in (("PC__BATCH_FILE", r"Files up to (\d+) KiB are handed to a worker", "KiB"),
                            ("PC__BATCH_FILES", r"directory, up to (\d+) files or \d+ KiB at a time", ""),
                            ("PC__BATCH_BYTES", r"directory, up to \d+ files or (\d+) KiB at a time", "KiB")):
    check("small files' units (%s)" % name, "src/run/schedule.h (%s)" % name,
          lambda name=name: define("src/run/schedule.h", name),
          [(REF, pattern, lambda m, unit=unit: size(m.group(1), unit))])
for name, pattern, unit in (("PC__BATCH_FILE", r"files up to (\d+) KiB travel with", "KiB"),
                            ("PC__BATCH_FILES", r"up to (\d+) files or \d+ KiB per unit", ""),
                            ("PC__BATCH_BYTES", r"up to \d+ files or (\d+) KiB per unit", "KiB")):
    check("small files' units (%s)" % name, "src/run/schedule.h (%s)" % name,
          lambda name=name: define("src/run/schedule.h", name),
          [("docs/scheduling.md", pattern, lambda m, unit=unit: size(m.group(1), unit))])
check("-j's maximum", "include/precompress.h (PC_JOBS_MAX)",
      lambda: define("include/precompress.h", "PC_JOBS_MAX"),
      [(OPT, r"files compressed at once, 1\.\.(\d+)", g1),
       (OPT, r"Compress N files at once, 1 to (\d+)\.", g1)])
for name, pattern in (("FDS_PER_JOB", r"\((\d+) descriptors per job"),
                      ("LOOP_FDS", r"descriptors per job, (\d+) for\s+the loop")):
    check("descriptors (%s)" % name, "src/common/machine.c (%s)" % name,
          lambda name=name: define("src/common/machine.c", name),
          [("docs/design.md", pattern, g1)])
for name, pattern in (("POOL_STACK", r"libuv's (\d+) MiB thread stack"),
                      ("MEM_PER_JOB", r"thread stack plus (\d+) MiB")):
    check("address space per job (%s)" % name, "src/common/machine.c (%s)" % name,
          lambda name=name: define("src/common/machine.c", name),
          [("docs/design.md", pattern, lambda m: size(m.group(1), "MiB"))])
check("--shard's largest N", "src/cli/shard_env.c (SHARD_MAX)",
      lambda: define("src/cli/shard_env.c", "SHARD_MAX"),
      [(REF, r"`--shard K/N` \(1 <= K <= N <= (\d+)\)", g1),
       (OPT, r"\(1 <= K <= N <= (\d+)\)", g1)])
check("--shard's largest N (the parser)", "src/cli/args.c",
      lambda: int(code("src/cli/args.c", r"count > (\d+) \|\| k < 1")),
      [(REF, r"`--shard K/N` \(1 <= K <= N <= (\d+)\)", g1)])

# --- formats and levels ------------------------------------------------------------------


def levels():
    rows = code("src/codec/options.c", r"level_ranges\[\] = \{(.*?)\};")
    got = [tuple(int(x) for x in r) for r in re.findall(r"\{(\d+), (\d+), (\d+), \"", rows)]
    if len(got) != 5:
        raise NotFound("src/codec/options.c: read %d rows of level_ranges, want 5" % len(got))
    return dict(zip(("zlib", "libdeflate", "zopfli", "brotli", "zstd"), got))


check("gzip level range and default", "src/codec/options.c (level_ranges, zlib)", lambda: levels()["zlib"],
      [(OPT, r"gzip \(deflate\) level, (\d+) to (\d+)\. Default: (\d+)\.",
        lambda m: tuple(map(int, m.groups())))])
check("brotli quality range and default", "src/codec/options.c (level_ranges, brotli)", lambda: levels()["brotli"],
      [(OPT, r"Brotli quality, (\d+) to (\d+)\. Default: (\d+)\.", lambda m: tuple(map(int, m.groups())))])
check("zstd level range and default", "src/codec/options.c (level_ranges, zstd)", lambda: levels()["zstd"],
      [(OPT, r"zstd level, (\d+) to (\d+)\. Default: (\d+)\.", lambda m: tuple(map(int, m.groups())))])
check("libdeflate's levels", "src/codec/options.c (level_ranges, libdeflate)", lambda: levels()["libdeflate"],
      [(OPT, r"libdeflate \(levels (\d+)\.\.(\d+), default (\d+):", lambda m: tuple(map(int, m.groups()))),
       (OPT, r"; (\d+)\.\.(\d+) with libdeflate \[(\d+)\]", lambda m: tuple(map(int, m.groups())))])
check("zopfli's default iterations", "src/codec/options.c (level_ranges, zopfli)", lambda: levels()["zopfli"][2],
      [(OPT, r"number of iterations, default (\d+):", g1), (OPT, r"iterations with zopfli \[(\d+)\]", g1)])
for fmt, key, pattern in (("zlib", "gzip_level", r"- gzip: zlib, level (\d+),"),
                          ("brotli", "brotli_quality", r"- Brotli: quality (\d+),"),
                          ("zstd", "zstd_level", r"- zstd \(`--zstd`\): level (\d+),")):
    check("%s's default level" % fmt, "src/codec/options.c (level_ranges, %s)" % fmt,
          lambda fmt=fmt: levels()[fmt][2],
          [(REF, pattern, g1), (OPT, r"%s = (\d+)" % key, g1)])
check("brotli's window (log2)", "src/codec/codec.c (BROTLI_PARAM_LGWIN)",
      lambda: int(code("src/codec/codec.c", r"BROTLI_PARAM_LGWIN, (\d+)\)")),
      [(REF, r"- Brotli: quality \d+, window (\d+),", g1),
       (REF, r"for brotli 10\.\.11, with its (\d+) MiB window",
        lambda m: (size(m.group(1), "MiB")).bit_length() - 1)])
check("zstd's window", "src/codec/codec.c (ZSTD_MAX_WLOG)",
      lambda: 1 << define("src/codec/codec.c", "ZSTD_MAX_WLOG"),
      [(REF, r"a window of at most (\d+) MiB", lambda m: size(m.group(1), "MiB")),
       (REF, r"context with an (\d+) MiB window", lambda m: size(m.group(1), "MiB"))])
check("zstd's multi-threaded mode from", "src/codec/codec.h (PC__ZSTD_MT_MIN)",
      lambda: define("src/codec/codec.h", "PC__ZSTD_MT_MIN"),
      [(REF, r"A file of (\d+) MiB or more is compressed in zstd's multi-threaded mode",
        lambda m: size(m.group(1), "MiB"))])

# --- the keep rule, defaults, names ---------------------------------------------------------

check("keep ratio", "src/codec/options.c (ratio_num / ratio_den)",
      lambda: (int(code("src/codec/options.c", r"o->ratio_num = (\d+);")),
               int(code("src/codec/options.c", r"o->ratio_den = (\d+);"))),
      [(REF, r"compressed_bytes \* (\d+) <= original_bytes \* (\d+)",
        lambda m: (int(m.group(2)), int(m.group(1)))),
       (REF, r"at the default `--max-ratio 0\.(\d\d)`", lambda m: (int(m.group(1)), 100)),
       (REF, r"an output of exactly (\d+)% is kept", lambda m: (int(m.group(1)), 100)),
       (OPT, r"max_ratio = 0\.(\d\d)", lambda m: (int(m.group(1)), 100)),
       (OPT, r"used exactly \(0\.(\d\d) is (\d+)/(\d+)\)\. Default: 0\.\d\d\.",
        lambda m: (int(m.group(2)), int(m.group(3)))),
       ("README.md", r"keeps an output only when it saves at least (\d+)%",
        lambda m: (100 - int(m.group(1)), 100))])
check("default --min-size", "src/codec/options.c (min_size)",
      lambda: int(code("src/codec/options.c", r"o->min_size = (\d+);")),
      [(OPT, r"min_size = (\d+)", g1), (OPT, r"Default: (\d+) \(empty files never get outputs", g1)])
check("temp names' random part", "src/common/names.h (PC__TMP_RAND)",
      lambda: define("src/common/names.h", "PC__TMP_RAND"),
      [(REF, r"named `\.NAME\.EXT\.(X+)\.tmp`", lambda m: len(m.group(1))),
       (REF, r"a temp file of it left by a killed run \(`\.FILE\.(X+)\.tmp`", lambda m: len(m.group(1))),
       (REF, r"`\.cache\.sqlite\.(X+)\.tmp`", lambda m: len(m.group(1)))])
check("temp names' suffix", "src/common/names.h (PC__TMP_SUFFIX)",
      lambda: define("src/common/names.h", "PC__TMP_SUFFIX"),
      [(REF, r"named `\.NAME\.EXT\.X+(\.\w+)`", lambda m: m.group(1))])


def skip_ext():
    return re.findall(r'"([a-z0-9]+)"', code("src/codec/options.c", r"default_skip_ext\[\] = \{(.*?)\};"))


check("default skip list", "src/codec/options.c (default_skip_ext)", skip_ext,
      [(REF, r"\(the default list; `--skip-ext` replaces it\): ((?:[a-z0-9]+ )+)The first",
        lambda m: m.group(1).split())])
check("default skip list's length", "src/codec/options.c (default_skip_ext)", lambda: len(skip_ext()),
      [(REF, r"The first (\d+) are whitenoise's \(since 6\.3\); the other (\d+)",
        lambda m: number(m.group(1)) + number(m.group(2)))])


def skip_names():
    table = code("src/codec/options.c", r"skip_names\[PC_SKIP_MAX_\] = \{(.*?)\};")
    return [n for n in re.findall(r'"([a-z-]+)"', table) if n != "none"]


check("skip reasons", "src/codec/options.c (skip_names)", lambda: sorted(skip_names()),
      [(REF, r'"skipped":\{((?:"[a-z-]+":N,? ?)+)\}', lambda m: sorted(re.findall(r'"([a-z-]+)"', m.group(1))))])
check("skip reasons (the table)", "src/codec/options.c (skip_names)", lambda: sorted(skip_names()),
      [(REF, r"\| reason \| meaning \| \|---\|---\| (.*?) Not recorded at all",
        lambda m: sorted(re.findall(r"\| `([a-z-]+)` \|", m.group(1))))])
check("skip reasons (how many)", "src/codec/options.c (skip_names)", lambda: len(skip_names()),
      [(REF, r"by reason, all (\w+) keys always present", lambda m: WORDS[m.group(1)])])
for name, status in (("EXIT_OK", 0), ("EXIT_FAILED", 1), ("EXIT_USAGE", 2)):
    check("exit status (%s)" % name, "src/cli/main.c (%s)" % name,
          lambda name=name: define("src/cli/main.c", name),
          [(REF, r"\| (\d) \| %s" % {0: "all done", 1: "one or more files failed",
                                      2: "bad usage or nothing could run"}[status], g1)])

check("the version in -V's example", "include/precompress.h (PC_VERSION_*)",
      lambda: "%d.%d.%d" % tuple(define("include/precompress.h", "PC_VERSION_" + p)
                                 for p in ("MAJOR", "MINOR", "PATCH")),
      [(OPT, r"for example precompress (\d+\.\d+\.\d+) \(zlib", lambda m: m.group(1))])

print("%d figures compared; %d failures%s" % (checked, len(failures),
                                           "; %d not checked" % len(not_checked) if not_checked else ""))
sys.exit(1 if failures else 0)
