"""Shared helpers for the precompress CLI tests.

Run by Debian's /usr/bin/python3 (python3-brotli is the byte-identity oracle).
The program under test comes from the environment variable PRECOMPRESS.
Every test works in its own temporary copy of fixtures/ and never writes into
the source tree.
"""
import sys

sys.dont_write_bytecode = True

import errno
import fcntl
import gzip
import hashlib
import io
import json
import os
import random
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import tempfile
import termios
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SRC_ROOT = os.path.dirname(HERE)
PROGRAM = os.environ.get("PRECOMPRESS", "")
FIXTURES = os.environ.get("PC_FIXTURES") or os.path.join(SRC_ROOT, "fixtures")
SITE = os.path.join(FIXTURES, "site")

try:
    import brotli
except ImportError:  # checked in main()
    brotli = None

# The default skip list (src/codec/options.c, docs/reference.md "Skip list"):
# whitenoise's 27 plus ours.
SKIP_EXT = (
    "jpg jpeg png gif webp zip gz tgz bz2 tbz xz br swf flv woff woff2 3gp 3gpp asf avi m4v mov mp4 "
    "mpeg mpg webm wmv avif jxl heic heif zst zstd 7z rar lz4 lzma mp3 ogg oga opus m4a aac flac"
).split()
OUT_EXTS = ("gz", "br", "zst")
# The skip reasons in the summary's order; a symlinked file the link rule does not follow
# (docs/reference.md, "What it writes") is skipped for its own reason, the last.
REASONS = ("extension", "excluded", "empty", "min-size", "special", "broken-link", "ratio",
           "link-owner")
NOBODY = 65534
# A command's prefix that runs it as uid NOBODY (root ignores file permissions).
SETPRIV = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups"]

TEMP_RE = re.compile(rb"^\..+\.(gz|br|zst)\.[A-Za-z0-9]{6}\.tmp$")
ANY_TMP_RE = re.compile(rb"^\..*\.tmp$")


# ----------------------------------------------------------------------------
# Oracle
# ----------------------------------------------------------------------------

# The oracles' outputs by (format, SHA-256 of the input): the tests compress the same
# fixtures again and again, and Python's brotli 11 is most of their time.
_ORACLE_MEMO = {}


def _memo(fmt, data, make):
    key = (fmt, hashlib.sha256(data).digest())
    if key not in _ORACLE_MEMO:
        _ORACLE_MEMO[key] = make(data)
    return _ORACLE_MEMO[key]


def gz_oracle(data):
    def make(data):
        buf = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as f:
            f.write(data)
        return buf.getvalue()
    return _memo("gz", data, make)


# The levels of run()'s compressing runs and of br_oracle(): the defaults (brotli 11, zstd 19)
# unless the module calls fast_levels().
_BROTLI_QUALITY = 11
_ZSTD_LEVEL = None


def fast_levels(quality=5, zstd_level=None):
    """For a module whose tests are about something other than the outputs' bytes (placement,
    manifests, signals, shards): run() passes --brotli-quality quality (and --zstd-level
    zstd_level, also the .dcz deltas' level, when given) unless its arguments name one, and
    br_oracle() compresses at that quality. The program and Python's brotli module use the same
    libbrotli, so the bytes still compare exactly; whitenoise's byte identity (quality 11) keeps
    its own tests at the default levels."""
    global _BROTLI_QUALITY, _ZSTD_LEVEL
    _BROTLI_QUALITY, _ZSTD_LEVEL = quality, zstd_level


def level_args():
    """fast_levels()'s options, for a test that starts the program itself (Popen)."""
    return _with_levels([])


def _with_levels(args):
    """args with fast_levels()'s options first, for a compressing run that names none."""
    if args[:1] in (["merge-manifests"], ["server-config"]):
        return args
    named = {os.fsdecode(a) for a in args}
    pre = []
    if _BROTLI_QUALITY != 11 and "--brotli-quality" not in named:
        pre += ["--brotli-quality", str(_BROTLI_QUALITY)]
    if _ZSTD_LEVEL is not None and "--zstd-level" not in named:
        pre += ["--zstd-level", str(_ZSTD_LEVEL)]
    return pre + args


def br_oracle(data):
    return _memo("br%d" % _BROTLI_QUALITY, data, lambda d: brotli.compress(d, quality=_BROTLI_QUALITY))


ORACLE = {"gz": gz_oracle, "br": br_oracle}


def keeps(out_size, in_size, num=95, den=100):
    """The keep rule (docs/reference.md, "Keep rule"), in integers."""
    return in_size > 0 and out_size * den <= in_size * num


def decode(fmt, path):
    with open(path, "rb") as f:
        blob = f.read()
    if fmt == "gz":
        return gzip.decompress(blob)
    if fmt == "br":
        return brotli.decompress(blob)
    if fmt == "zst":
        p = subprocess.run(["zstd", "-d", "-c", "-q", "--", path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
        if p.returncode != 0:
            raise AssertionError("zstd -d failed on %r: %s" % (path, p.stderr.decode(errors="replace")))
        return p.stdout
    raise ValueError(fmt)


_WORDS_MEMO = {}


def words_data(size, seed=1234):
    """Compressible but not trivial text: pseudo-random words from a seeded PRNG (random.choice's
    and randint's draws, made through _randbelow as they make them). Texts up to 1 MiB are kept
    by (size, seed): a module's tests make the same trees again and again."""
    key = (size, seed)
    if key in _WORDS_MEMO:
        return _WORDS_MEMO[key]
    r = random.Random(seed)
    below = r._randbelow
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab = ["".join([letters[below(26)] for _ in range(2 + below(10))]) for _ in range(6000)]
    parts = []
    n = 0
    while n < size:
        line = " ".join([vocab[below(6000)] for _ in range(4 + below(13))]) + ".\n"
        parts.append(line)
        n += len(line)
    data = "".join(parts).encode()[:size]
    if size <= 1 << 20:
        _WORDS_MEMO[key] = data
    return data


def copy_program(dst):
    """Copies PROGRAM to dst: the library is linked into it, so the copy runs
    alone (its other libraries are the system's)."""
    shutil.copy2(PROGRAM, dst)


def sanitized_build():
    """Whether the program under test carries AddressSanitizer's or ThreadSanitizer's runtime
    (several times slower, its memory not the program's); False when it cannot be read."""
    try:
        with open(PROGRAM, "rb") as f:
            blob = f.read()
    except OSError:
        return False
    return b"__asan_init" in blob or b"__tsan_init" in blob


def project_version():
    """The one version (dist/version.py: include/precompress.h's)."""
    return subprocess.run([sys.executable, os.path.join(SRC_ROOT, "dist", "version.py")], check=True,
                          stdout=subprocess.PIPE, text=True).stdout.strip()


def summaries(out):
    """The --json summaries in a text (a step's standard output), in order."""
    return [load_json_strict(l) for l in out.split("\n") if l.startswith("{")]


def have_zstd_build():
    v = os.environ.get("PC_HAVE_ZSTD")
    if v in ("0", "1"):
        return v == "1"
    p = subprocess.run([PROGRAM, "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return b"zstd" in p.stdout


# ----------------------------------------------------------------------------
# Trees
# ----------------------------------------------------------------------------

def fsb(p):
    return os.fsencode(p)


def rel_str(b):
    return os.fsdecode(b)


def walk_all(root):
    """Every entry under root (bytes rel paths), lstat'ed, symlinked dirs not entered."""
    root = fsb(root)
    out = {}
    # fwalk and dir_fd: a tree may hold paths longer than PATH_MAX.
    for dirpath, dirnames, filenames, dirfd in os.fwalk(root):
        for n in dirnames + filenames:
            full = os.path.join(dirpath, n)
            out[os.path.relpath(full, root)] = os.lstat(n, dir_fd=dirfd)
    return out


def listing(root):
    """A comparable picture of a tree: type, size, mode, mtime_ns, ino, content hash."""
    res = {}
    for rel, st in walk_all(root).items():
        h = None
        if stat.S_ISREG(st.st_mode):
            h = sha256(os.path.join(fsb(root), rel))
        elif stat.S_ISLNK(st.st_mode):
            h = os.readlink(os.path.join(fsb(root), rel))
        res[rel] = (stat.S_IFMT(st.st_mode), st.st_size if not stat.S_ISDIR(st.st_mode) else 0,
                    stat.S_IMODE(st.st_mode), st.st_mtime_ns, st.st_ino, h)
    return res


def read(path):
    """The bytes of a file."""
    with open(path, "rb") as f:
        return f.read()


def write(path, data, mode="wb"):
    """Writes bytes to a file, replacing it (mode "ab": added at its end)."""
    with open(path, mode) as f:
        f.write(data)


def read_at(dfd, name):
    """name's bytes, opened below the directory dfd (a path near PATH_MAX may not fit whole)."""
    fd = os.open(name, os.O_RDONLY, dir_fd=dfd)
    try:
        chunks = []
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    finally:
        os.close(fd)


def wait_open(pid, path, timeout=60):
    """True once process pid has `path` open (a path ending in "/": any file below that
    directory); False if the process ended first or the timeout passed. What a test waits
    for before it acts on a run mid-work, in place of a guess at how long the run takes."""
    below = path.endswith("/")
    deadline = time.monotonic() + timeout
    fddir = "/proc/%d/fd" % pid
    while time.monotonic() < deadline:
        try:
            for fd in os.listdir(fddir):
                try:
                    target = os.readlink(os.path.join(fddir, fd))
                except OSError:
                    continue
                if target.startswith(path) if below else target == path:
                    return True
        except OSError:
            return False
        time.sleep(0.0005)
    return False


def free_port():
    """A TCP port free on 127.0.0.1 now, for a server a test starts."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def hashed(name, data, n=12):
    """name with n hex digits of data's hash before its extension, as build tools name files
    (Django's app.3f2a1b9c8d7e.js)."""
    stem, ext = name.rsplit(".", 1)
    return "%s.%s.%s" % (stem, hashlib.md5(data).hexdigest()[:n], ext)


def deltas_of(root):
    """The deltas (.dcz, .dcb) below root, sorted."""
    return sorted(os.path.join(d, n) for d, _, names in os.walk(root)
                  for n in names if n.endswith((".dcz", ".dcb")))


F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


def pipe_bytes(fd):
    """Bytes waiting in a pipe (FIONREAD)."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def json_lines(r):
    """{path: record} of a --json-lines run's file lines."""
    recs = {}
    for line in r.out_lines:
        rec = json.loads(line)
        if rec.get("type") == "file":
            recs[rec["path"]] = rec
    return recs


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def source_snapshot(root):
    """Hash, mode and mtime of every regular file (followed symlinks excluded)."""
    snap = {}
    for rel, st in walk_all(root).items():
        if stat.S_ISREG(st.st_mode):
            snap[rel] = (sha256(os.path.join(fsb(root), rel)), stat.S_IMODE(st.st_mode), st.st_mtime_ns,
                         st.st_size, st.st_ino)
    return snap


# --- the content cache's store (src/store/) -----------------------------------

STORE = "cache.sqlite"


def store_path(cache):
    return os.path.join(cache, STORE)


def store_rows(cache):
    """[{id, key, used, bytes, lim, sum, data}] of every entry, by id."""
    import sqlite3
    db = sqlite3.connect(store_path(cache))
    try:
        rows = db.execute("SELECT e.id, e.key, e.used, e.bytes, p.lim, p.sum, p.data "
                          "FROM entry e JOIN payload p ON p.id = e.id ORDER BY e.id").fetchall()
    finally:
        db.close()
    names = ("id", "key", "used", "bytes", "lim", "sum", "data")
    return [dict(zip(names, r)) for r in rows]


def store_exec(cache, *statements):
    """Runs (sql, params) pairs in one transaction on the store, as a tamperer would."""
    import sqlite3
    db = sqlite3.connect(store_path(cache))
    try:
        with db:
            for sql, params in statements:
                db.execute(sql, params)
    finally:
        db.close()


def xxh3_128(data):
    """XXH3-128 of data as the store keeps it (low then high half, little-endian), from the
    system's libxxhash (what the program links): a forged entry needs a right checksum."""
    import ctypes
    import ctypes.util

    class H128(ctypes.Structure):
        _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]

    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    fn = lib.XXH3_128bits
    fn.restype = H128
    fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    h = fn(data, len(data))
    return h.low64.to_bytes(8, "little") + h.high64.to_bytes(8, "little")


def entry_sum(key, lim, data):
    """The checksum an entry must carry: over its key, its limit (-1: a payload) and its bytes."""
    return xxh3_128(bytes(key) + (lim & (2**64 - 1)).to_bytes(8, "little") + bytes(data))


def temp_leftovers(root):
    return sorted(rel for rel in walk_all(root) if ANY_TMP_RE.match(os.path.basename(rel)))


def has_ext(name_b, exts):
    low = name_b.lower()
    return any(low.endswith(b"." + e.encode()) for e in exts)


def classify(root, formats=("gz", "br"), num=95, den=100, min_size=1, skip_ext=SKIP_EXT):
    """What the spec says a run over root must do, computed with the oracle.

    Returns {rel_bytes: {"skip": reason or None, "size": n, "out": {fmt: bytes or None}}}
    for every file the run records (our own outputs are not recorded).
    Only regular files, symlinks to files, broken links, FIFOs and sockets are handled
    (no --include/--exclude, no --follow).
    """
    entries = walk_all(root)
    res = {}
    broot = fsb(root)
    for rel, st in sorted(entries.items()):
        full = os.path.join(broot, rel)
        if stat.S_ISDIR(st.st_mode):
            continue
        if stat.S_ISLNK(st.st_mode):
            try:
                tst = os.stat(full)
            except OSError:
                if not is_own_output(broot, rel):
                    res[rel] = {"skip": "broken-link", "size": None, "out": {}}
                continue
            if stat.S_ISDIR(tst.st_mode):
                continue  # symlinked dir, not followed: not recorded
            st = tst
        base = os.path.basename(rel)
        if is_own_output(broot, rel) or TEMP_RE.match(base):
            continue
        if not stat.S_ISREG(st.st_mode):
            res[rel] = {"skip": "special", "size": None, "out": {}}
            continue
        if has_ext(base, OUT_EXTS) or has_ext(base, skip_ext):
            res[rel] = {"skip": "extension", "size": st.st_size, "out": {}}
            continue
        if st.st_size == 0:
            res[rel] = {"skip": "empty", "size": 0, "out": {}}
            continue
        if st.st_size < min_size:
            res[rel] = {"skip": "min-size", "size": st.st_size, "out": {}}
            continue
        with open(full, "rb") as f:
            data = f.read()
        out = {}
        for fmt in formats:
            blob = ORACLE[fmt](data)
            out[fmt] = blob if keeps(len(blob), len(data), num, den) else None
        skip = None if any(v is not None for v in out.values()) else "ratio"
        res[rel] = {"skip": skip, "size": len(data), "out": out}
    return res


def is_own_output(broot, rel):
    """NAME.gz/.br/.zst whose NAME exists beside it (lexists: a link counts)."""
    for e in OUT_EXTS:
        suf = b"." + e.encode()
        if rel.endswith(suf) and len(rel) > len(suf):
            if os.path.lexists(os.path.join(broot, rel[: -len(suf)])):
                return True
    return False


def expected_outputs(cls):
    """{rel_bytes_of_output: expected bytes} from classify()."""
    outs = {}
    for rel, c in cls.items():
        for fmt, blob in c["out"].items():
            if blob is not None:
                outs[rel + b"." + fmt.encode()] = blob
    return outs


def make_world_accessible(path):
    """For runs as nobody: dirs 0777, files 0666 (root still owns them)."""
    os.chmod(path, 0o777)
    for dirpath, dirnames, filenames in os.walk(path):
        for d in dirnames:
            p = os.path.join(dirpath, d)
            if not os.path.islink(p):
                os.chmod(p, 0o777)
        for f in filenames:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p) and stat.S_ISREG(os.lstat(p).st_mode):
                os.chmod(p, 0o666)


# ----------------------------------------------------------------------------
# Running the program
# ----------------------------------------------------------------------------

def _options(args):
    """The arguments as str; all of them: a run may go through a wrapper (prlimit, taskset)
    whose own arguments end in "--"."""
    return [os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args]


def json_summary_run(args):
    """Whether a run with these arguments prints its summary as JSON on stdout."""
    return any(a in ("--json", "--json-lines") for a in _options(args))


def quiet_run(args):
    """Whether a run with these arguments prints no summary (-q, alone or bundled)."""
    return any(a == "--quiet" or re.match(r"^-[a-zA-Z]*q", a) and not a.startswith("--")
               for a in _options(args))


def skipped_total(j):
    """The files skipped for any reason, from a --json summary."""
    return sum(j["skipped"].values())


class Result:
    def __init__(self, args, rc, out, err):
        self.args = args
        self.rc = rc
        self.out_b = out
        self.err_b = err
        self.out = out.decode("utf-8", "surrogateescape")
        self.err = err.decode("utf-8", "surrogateescape")

    @property
    def out_lines(self):
        return [l for l in self.out.split("\n") if l != ""]

    @property
    def err_lines(self):
        """stderr lines as a terminal shows them: a progress bar redrawn with \\r is dropped."""
        lines = (l.rsplit("\r", 1)[-1] for l in self.err.split("\n"))
        return [l for l in lines if l.strip() != ""]

    def summary(self):
        """The run's --json summary: the JSON object on the last line of stdout (after the
        lines of -v, when asked for too; --json-lines' last line too). Counts are read from
        here, never from the summary line meant for people (whose format test_manifest.py's
        SummaryLine checks alone). Fails the test when the run printed no such object."""
        if not json_summary_run(self.args):
            raise AssertionError("summary() needs a run with --json or --json-lines: %r" % self)
        lines = self.out_lines
        if not lines:
            raise AssertionError("no --json summary on stdout: %r" % self)
        try:
            j = load_json_strict(lines[-1])
        except ValueError as e:
            raise AssertionError("the last line of stdout is not JSON (%s): %r" % (e, self)) from e
        if not isinstance(j, dict) or "files" not in j or not isinstance(j.get("skipped"), dict):
            raise AssertionError("the last line of stdout is not a --json summary: %r" % self)
        return j

    def error_lines(self):
        """stderr lines of a run that prints no summary line there (--json, --json-lines or -q):
        every one is an error or a note. Fails the test for any other run, rather than guess
        which line is the summary."""
        if not (json_summary_run(self.args) or quiet_run(self.args)):
            raise AssertionError("error_lines() needs a run with --json, --json-lines or -q: %r" % self)
        return self.err_lines

    def __repr__(self):
        return "<run %r rc=%s\n--- stdout\n%s--- stderr\n%s>" % (self.args, self.rc, self.out[-3000:], self.err[-3000:])


def child_env(cache=True):
    """The environment a run of the program gets: ours without UV_THREADPOOL_SIZE, which
    precompress sets itself from -j. cache=False: without PRECOMPRESS_CACHE_DIR either (no
    content cache: every run compresses)."""
    e = dict(os.environ)
    e.pop("UV_THREADPOOL_SIZE", None)
    if not cache:
        e.pop("PRECOMPRESS_CACHE_DIR", None)
    return e


def run(args, timeout=180, as_nobody=False, umask=None, cwd=None, env=None, program=None, stdin=None):
    """The program with args; stdin: bytes for its standard input (else none)."""
    args = [a if isinstance(a, (bytes, str)) else str(a) for a in args]
    if program is None or os.path.basename(program) == "precompress":  # not prlimit, env...
        args = _with_levels(args)
    cmd = [program or PROGRAM] + args
    if as_nobody:
        cmd = SETPRIV + cmd
    pre = None
    if umask is not None:
        def pre():
            os.umask(umask)
    e = child_env()
    if env:
        e.update(env)
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           preexec_fn=pre, cwd=cwd, env=e,
                           **({"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}))
    except subprocess.TimeoutExpired as ex:
        raise AssertionError("precompress did not finish within %ss: %r" % (timeout, args)) from ex
    return Result(args, p.returncode, p.stdout, p.stderr)


def load_json_strict(raw):
    """RFC 8259: UTF-8, no NaN/Infinity, no duplicate keys, no control chars in strings."""
    text = raw.decode("utf-8") if isinstance(raw, bytes) else raw

    def no_const(c):
        raise ValueError("non-JSON constant %s" % c)

    def pairs(kv):
        keys = [k for k, _ in kv]
        if len(keys) != len(set(keys)):
            raise ValueError("duplicate keys in %r" % keys)
        return dict(kv)

    return json.loads(text, parse_constant=no_const, object_pairs_hook=pairs, strict=True)


def load_manifest(path):
    with open(path, "rb") as f:
        raw = f.read()
    return load_json_strict(raw), raw


def entry_rel(e):
    """Raw path bytes of a manifest entry."""
    if "path_hex" in e:
        return bytes.fromhex(e["path_hex"])
    return e["path"].encode("utf-8")


def manifest_by_path(m):
    return {entry_rel(e): e for e in m["files"]}


def manifest_counts(m, formats):
    """The summary figures the manifest implies."""
    c = {"files": 0, "bytes": 0, "compressed": 0, "failed": 0,
         "skipped": {r: 0 for r in REASONS}, "formats": {}}
    for f in formats:
        c["formats"][f] = {"files": 0, "bytes_in": 0, "bytes_out": 0}
    for e in m["files"]:
        c["files"] += 1
        c["bytes"] += e.get("size", 0) or 0
        if "error" in e:
            c["failed"] += 1
            continue
        if "skipped" in e:
            c["skipped"][e["skipped"]] += 1
            continue
        kept = [f for f in formats if "size" in e.get(f, {})]
        if kept:
            c["compressed"] += 1
        else:
            c["skipped"]["ratio"] += 1
        for f in kept:
            c["formats"][f]["files"] += 1
            c["formats"][f]["bytes_in"] += e["size"]
            c["formats"][f]["bytes_out"] += e[f]["size"]
    return c


VERBOSE_RE = re.compile(r"^(compressed|skipped) (.+) \(([^()]*)\)$")


def parse_verbose(res, root):
    """-v lines -> {rel_bytes: (kind, detail)}; PATH may be full or relative to root."""
    out = {}
    prefix = root.rstrip("/") + "/"
    for line in res.out_lines:
        m = VERBOSE_RE.match(line)
        if not m:
            continue
        p = m.group(2)
        if p.startswith(prefix):
            p = p[len(prefix):]
        out[os.fsencode(p)] = (m.group(1), m.group(3))
    return out


# Every -v line that names a file: what the run did with it.
KIND_RE = re.compile(r"^(compressed|copied|cached|skipped) (.+) \(([^()]*)\)$")
UNCHANGED_RE = re.compile(r"^unchanged (.+)$")


def kinds(res, root):
    """-v lines -> {rel_bytes: kind} with kind 'compressed', 'copied', 'cached', 'unchanged' or
    'skipped (REASON)'; PATH may be full or relative to root. A file reported twice fails."""
    prefix = root.rstrip("/") + "/"
    out = {}
    for line in res.out_lines:
        m = KIND_RE.match(line)
        if m:
            kind, p = m.group(1), m.group(2)
            if kind == "skipped":
                kind = "skipped (%s)" % m.group(3)
        else:
            m = UNCHANGED_RE.match(line)
            if not m:
                continue
            kind, p = "unchanged", m.group(1)
        if p.startswith(prefix):
            p = p[len(prefix):]
        rel = os.fsencode(p)
        if rel in out:
            raise AssertionError("%r reported twice in -v output: %r" % (rel, res))
        out[rel] = kind
    return out


# ----------------------------------------------------------------------------
# Test case base and runner
# ----------------------------------------------------------------------------

class PCTestCase(unittest.TestCase):
    maxDiff = 8000

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="pc-test-")
        self.addCleanup(self._cleanup)

    def _cleanup(self):
        for dirpath, dirnames, filenames in os.walk(self.tmp):
            for d in dirnames:
                p = os.path.join(dirpath, d)
                if not os.path.islink(p):
                    try:
                        os.chmod(p, 0o755)
                    except OSError:
                        pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    def copy_site(self, name="site", src=SITE):
        dst = os.path.join(self.tmp, name)
        shutil.copytree(src, dst, symlinks=True)
        return dst

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def use_nobody(self):
        """Prepares self.prog, a program uid 65534 can run (root ignores
        permissions, so permission cases run as nobody): the build dir may sit
        where nobody cannot reach (/root/...), so a copy in the temp dir is
        tried first. Skips the test without setpriv or when neither runs."""
        if shutil.which("setpriv") is None:
            self.skipTest("setpriv (util-linux) is missing: cannot run as an unprivileged user")
        os.chmod(self.tmp, 0o777)
        bindir = self.path("bin")
        os.makedirs(bindir)
        os.chmod(bindir, 0o755)
        self.prog = os.path.join(bindir, "precompress")
        copy_program(self.prog)
        os.chmod(self.prog, 0o755)
        for prog in (self.prog, PROGRAM):
            p = run(["--version"], as_nobody=True, timeout=30, program=prog)
            if p.rc == 0:
                self.prog = prog
                break
        else:
            self.skipTest("the program cannot be run as uid %d: %r" % (NOBODY, p))

    def run_nobody(self, args, **kw):
        return run(args, as_nobody=True, program=self.prog, **kw)

    def run_ok(self, args, **kw):
        r = run(args, **kw)
        self.assertEqual(r.rc, 0, "expected exit 0: %r" % r)
        return r

    def assertSourcesUnchanged(self, before, root):
        after = source_snapshot(root)
        for rel, v in before.items():
            self.assertIn(rel, after, "source %r disappeared" % rel)
            self.assertEqual(after[rel], v, "source %r was modified (hash, mode, mtime, size, inode)" % rel)

    def others(self, root, n=4, seed=0):
        """A few ordinary files beside the bad one; their rel names."""
        names = []
        for i in range(n):
            rel = ("other%d.txt" % i) if i % 2 == 0 else os.path.join("sub", "other%d.css" % i)
            os.makedirs(os.path.dirname(os.path.join(root, rel)) or root, exist_ok=True)
            write(os.path.join(root, rel), words_data(3000 + 700 * i, seed=seed * 100 + i))
            names.append(rel)
        return names

    def assertProcessed(self, root, rels, formats=("gz", "br")):
        for rel in rels:
            src = os.path.join(root, rel)
            # Through the directory: a name near PATH_MAX plus ".gz" may not fit a path.
            dfd = os.open(os.path.dirname(src), os.O_RDONLY | os.O_DIRECTORY)
            try:
                base = os.path.basename(src)
                data = read_at(dfd, base)
                for fmt in formats:
                    out = src + "." + fmt
                    try:
                        st = os.stat(base + "." + fmt, dir_fd=dfd, follow_symlinks=False)
                    except FileNotFoundError:
                        st = None
                    self.assertTrue(st is not None and stat.S_ISREG(st.st_mode), "%s was not written" % out)
                    body = read_at(dfd, base + "." + fmt)
                    if fmt == "gz":
                        self.assertEqual(body, gz_oracle(data), out)
                    elif fmt == "br":
                        self.assertEqual(body, br_oracle(data), out)
                    else:
                        self.assertEqual(decode(fmt, out), data, out)
            finally:
                os.close(dfd)

    def assertNoTemps(self, root):
        self.assertEqual(temp_leftovers(root), [], "temp files left behind")

    def assertTreeMatchesOracle(self, root, before_listing, cls, extra_ok=()):
        """Every output the oracle calls for is there with the oracle's bytes, and nothing else was written."""
        want = expected_outputs(cls)
        after = walk_all(root)
        new = set(after) - set(before_listing) - set(extra_ok)
        self.assertEqual(sorted(new), sorted(want), "files written differ from what the keep rule calls for")
        for rel, blob in want.items():
            full = os.path.join(fsb(root), rel)
            st = os.lstat(full)
            self.assertTrue(stat.S_ISREG(st.st_mode), "%r is not a regular file" % rel)
            with open(full, "rb") as f:
                got = f.read()
            if got != blob:
                self.fail("%r: bytes differ from the oracle (got %d bytes, oracle %d)" % (rel, len(got), len(blob)))
            fmt = rel.rsplit(b".", 1)[1].decode()
            src = os.path.join(fsb(root), rel[: -len(fmt) - 1])
            with open(src, "rb") as f:
                self.assertEqual(decode(fmt, full), f.read(), "%r does not decode to its source" % rel)


# ----------------------------------------------------------------------------
# A clean Debian root file system (debootstrap), for what must run on a machine
# that has nothing of this one's: a recipe's build lines, a wheel installed with no
# compiler, a release binary with no libraries.
# ----------------------------------------------------------------------------

DEBIAN_MIRROR = os.environ.get("PC_DEBIAN_MIRROR", "http://deb.debian.org/debian")
# Made roots are kept as tarballs here, by suite and package list, so a second test (or
# the next CI run on the same machine) unpacks one instead of bootstrapping again.
ROOTS_CACHE = os.environ.get("PC_ROOTS_CACHE", "/var/tmp/precompress-test-roots")


def debian_root(dest, include=(), suite="bookworm"):
    """A Debian `suite` (minbase) root at dest, with the packages include and what they
    depend on, as a fresh machine of that release has it: no compiler, no -dev package
    unless asked for. Needs root and debootstrap (.ci/deps slow); skips the test without
    them. Made once per (suite, include) and kept as a tarball in ROOTS_CACHE; the
    tarball is made under an exclusive lock, so tests running at once wait for one
    debootstrap instead of each running their own."""
    import fcntl
    if os.geteuid() != 0:
        raise unittest.SkipTest("a Debian root needs root (debootstrap, chroot)")
    for tool in ("debootstrap", "chroot"):
        if shutil.which(tool) is None:
            raise unittest.SkipTest("%s is missing (.ci/deps slow)" % tool)
    pkgs = sorted(set(include))
    key = hashlib.sha256(("%s %s %s" % (suite, DEBIAN_MIRROR, " ".join(pkgs))).encode()).hexdigest()[:16]
    os.makedirs(ROOTS_CACHE, mode=0o700, exist_ok=True)
    tarball = os.path.join(ROOTS_CACHE, "%s-%s.tar" % (suite, key))
    # A tarball is renamed into place whole: one that is there needs no lock (which another
    # test may hold for minutes, bootstrapping another package list).
    with open(os.path.join(ROOTS_CACHE, ".lock"), "w") as lock:
        if not os.path.exists(tarball):
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(tarball):
            work = tempfile.mkdtemp(prefix="debootstrap-", dir=ROOTS_CACHE)
            try:
                cmd = ["debootstrap", "--variant=minbase"]
                if pkgs:
                    cmd.append("--include=" + ",".join(pkgs))
                p = subprocess.run(cmd + [suite, os.path.join(work, "root"), DEBIAN_MIRROR],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=1200)
                if p.returncode != 0:
                    raise AssertionError("debootstrap %s failed:\n%s"
                                         % (suite, p.stdout.decode(errors="replace")[-4000:]))
                shutil.rmtree(os.path.join(work, "root", "var/cache/apt/archives"), ignore_errors=True)
                subprocess.run(["tar", "-C", os.path.join(work, "root"), "-cf", tarball + ".part", "."],
                               check=True)
                os.replace(tarball + ".part", tarball)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    os.makedirs(dest, exist_ok=True)
    subprocess.run(["tar", "-C", dest, "-xf", tarball], check=True)
    # Name lookups in the root as on a machine with a network (apt-get inside it).
    if os.path.exists("/etc/resolv.conf"):
        shutil.copyfile("/etc/resolv.conf", os.path.join(dest, "etc", "resolv.conf"))
    return dest


def in_root(root, script, env=None, timeout=900, user=None):
    """Run the shell script with /bin/sh -c inside root (chroot), /proc and /dev/pts not
    mounted: what a program there needs beyond its files is exactly what it must do
    without. Returns the CompletedProcess (stdout and stderr together, as text)."""
    base = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
            "LANG": "C.UTF-8", "DEBIAN_FRONTEND": "noninteractive"}
    base.update(env or {})
    cmd = ["chroot"] + (["--userspec=%s" % user] if user else []) + [root, "/bin/sh", "-c", script]
    return subprocess.run(cmd, env=base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          stdin=subprocess.DEVNULL, timeout=timeout, text=True, errors="replace")


def full_only(why):
    """A test case the default setup (`meson test`) leaves to `--setup full`, which sets
    PC_FULL=1: it takes seconds where its module's others take a fraction of one, and the
    module keeps a fast test of the same behaviour. `why` says what makes it long."""
    return unittest.skipUnless(os.environ.get("PC_FULL") == "1", "left to --setup full: " + why)


def require_program():
    if not PROGRAM:
        print("PRECOMPRESS is not set: run through `meson test` or set PRECOMPRESS=path/to/precompress")
        sys.exit(1)
    if not os.access(PROGRAM, os.X_OK):
        print("PRECOMPRESS=%r is not an executable" % PROGRAM)
        sys.exit(1)
    if brotli is None:
        print("the brotli module is missing: run with Debian's /usr/bin/python3 and apt-get install python3-brotli")
        sys.exit(1)


class _TimedResult(unittest.TextTestResult):
    """Each test's wall time, kept for PC_TEST_DURATIONS=N (the slowest N are printed)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.durations = []
        self._started = 0.0

    def startTest(self, test):
        self._started = time.monotonic()
        super().startTest(test)

    def stopTest(self, test):
        super().stopTest(test)
        self.durations.append((time.monotonic() - self._started, test.id()))


def main():
    require_program()
    mod = sys.modules["__main__"]
    suite = unittest.TestLoader().loadTestsFromModule(mod)
    if len(sys.argv) > 1:  # run selected tests: script.py TestClass.test_name ...
        suite = unittest.TestLoader().loadTestsFromNames(sys.argv[1:], mod)
    res = unittest.TextTestRunner(verbosity=2, stream=sys.stdout,
                                  resultclass=_TimedResult).run(suite)
    slowest = int(os.environ.get("PC_TEST_DURATIONS") or 0)
    for secs, name in sorted(res.durations, reverse=True)[:slowest]:
        print("%7.2f s  %s" % (secs, name))
    def tid(t):  # a failed subTest counts against its test method once
        return getattr(t, "test_case", t).id()

    failed = len({tid(t) for t, _ in res.failures + res.errors} | {tid(t) for t in res.unexpectedSuccesses})
    skipped = len({tid(t) for t, _ in res.skipped})
    passed = res.testsRun - failed - skipped
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line)
    sys.stdout.flush()
    if failed:
        sys.exit(1)
    if passed == 0 and skipped:
        sys.exit(77)
    sys.exit(0)

