"""The PEP 517 build backend of the precompress Python package (pyproject.toml).

Standard library only: no setuptools, no meson-python (docs/django.md, "Why a
build backend of its own").

build_wheel() makes a wheel holding python/precompress/*.py, the program as
precompress/bin/precompress, its man page (precompress-VERSION.data/data/share/
man/man1/precompress.1) and LICENSE. The program comes from one of:

- a prebuilt binary: config_settings {"binary": PATH, "arch": "x86_64" or
  "aarch64" (else read from the ELF header), "man": PATH (else made from
  man/options.md)}, or the environment's PRECOMPRESS_BINARY,
  PRECOMPRESS_WHEEL_ARCH and PRECOMPRESS_MAN. What dist/release.sh does, from
  the repository root:

      python3 -c 'import sys; sys.path.insert(0, "python"); import build_backend;
                  print(build_backend.build_wheel(OUT, {"binary": ..., "arch": ..., "man": ...}))'

  and what `pip wheel --config-settings binary=PATH ...` does;
- else a build from source, in a temporary directory (the source tree is not
  written to): `meson setup --buildtype=release -Dtests=false`, with
  -Dstatic=true on Linux (a program that needs no library of the machine,
  not even its libc), then `meson compile` (PRECOMPRESS_BUILD_JOBS=N: N jobs).

A Linux wheel is tagged py3-none-manylinux_2_17_ARCH.manylinux2014_ARCH.
musllinux_1_1_ARCH (glibc and musl alike: the program is static, which is
checked); elsewhere (macOS, the BSDs: no static build there) py3-none-PLATFORM.

meson and ninja: pip builds with isolation by default, putting its own
sitecustomize on PYTHONPATH (which hides the system's site-packages),
PYTHONNOUSERSITE=1 and its build environment's bin directories first on PATH.
A meson of the system (Debian's /usr/bin/meson is a script of /usr/bin/python3)
then cannot import mesonbuild, so meson and ninja run in the environment pip
was started with: pip's variables taken out again (_clean_env). Only when no
meson (or no ninja) is on that PATH does get_requires_for_build_wheel() ask
pip for the PyPI packages, the way scikit-build-core asks for cmake; those
then run in pip's environment, where they were installed. Without meson and
a C compiler the build stops with one message saying what to install.

build_sdist() writes precompress-VERSION.tar.gz: the files git tracks (or,
outside a git checkout, the tree less build directories, .git, venvs,
__pycache__ and dist/out) under precompress-VERSION/, plus PKG-INFO.

Wheels and sdists are reproducible: sorted entries, fixed times
(SOURCE_DATE_EPOCH when set; the sdist's otherwise the last commit's), owner 0,
gzip header time 0.
"""
import base64
import gzip
import hashlib
import io
import json
import os
import platform
import re
import shutil
import stat
import struct
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import zipfile

sys.dont_write_bytecode = True  # dist/version.py and man/gen_options.py are imported from the tree

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "python", "precompress")
DEBIAN_DEPS = ("meson ninja-build pkg-config gcc zlib1g-dev libbrotli-dev libuv1-dev libjansson-dev "
               "libzstd-dev libxxhash-dev libsqlite3-dev libdeflate-dev libzopfli-dev")  # .ci/deps build
HOMEBREW_DEPS = "meson ninja pkg-config brotli libuv zstd sqlite jansson xxhash"
# What pip's build isolation adds to the environment of the backend (pip 23:
# build_env.py, build_tracker.py, the vendored pyproject_hooks; later pips'
# pyproject_hooks spell the last two with _PYPROJECT_HOOKS_). PYTHONHOME is
# not pip's, but no system meson runs with another Python's.
ISOLATION_VARS = ("PYTHONPATH", "PYTHONNOUSERSITE", "PYTHONHOME", "PIP_BUILD_TRACKER", "PIP_REQ_TRACKER",
                  "PEP517_BUILD_BACKEND", "PEP517_BACKEND_PATH",
                  "_PYPROJECT_HOOKS_BUILD_BACKEND", "_PYPROJECT_HOOKS_BACKEND_PATH")
NINJAS = ("ninja", "ninja-build", "samu")  # the names meson looks for
COMPILERS = ("cc", "gcc", "clang")
# ELF e_machine -> the architecture of wheel tags; manylinux2014 and musllinux_1_1
# are defined for these (riscv64 and others get linux_ARCH).
ELF_ARCH = {3: "i686", 62: "x86_64", 183: "aarch64", 40: "armv7l", 21: "ppc64le", 22: "s390x", 243: "riscv64"}
MANYLINUX_ARCHES = ("x86_64", "aarch64", "i686", "armv7l", "ppc64le", "s390x")
# Build directories, VCS data, venvs and bytecode: never in an sdist made from a walk.
WALK_SKIP_TOP = re.compile(r"^(build.*|builddir|\.git|PKG-INFO)$")


class BuildError(SystemExit):
    """A build that cannot go on: its message, no traceback (pip shows it as the hook's output)."""

    def __init__(self, message):
        super().__init__("precompress: " + message)


# ---- the project's metadata -------------------------------------------------

def _toml_subset(text):
    """pyproject.toml as tomllib reads it, for Python < 3.11: tables, and keys whose values
    are basic strings, lists (over several lines too) and inline tables of those."""
    data, table, pending = {}, None, None
    for raw in text.splitlines():
        line = raw.strip()
        if pending is not None:
            pending[1].append(line)
            value = " ".join(pending[1])
            if _balanced(value):
                table[pending[0]] = _toml_value(value)
                pending = None
            continue
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^\[([A-Za-z0-9_.-]+)\]$", line)
        if m:
            table = data
            for part in m.group(1).split("."):
                table = table.setdefault(part, {})
            continue
        m = re.match(r'^("?)([A-Za-z0-9_-]+)\1\s*=\s*(.*)$', line)
        if not m or table is None:
            raise ValueError("pyproject.toml: cannot read %r without tomllib" % raw)
        if _balanced(m.group(3)):
            table[m.group(2)] = _toml_value(m.group(3))
        else:
            pending = (m.group(2), [m.group(3)])
    return data


def _strip_comment(value):
    out, quoted = [], False
    for i, c in enumerate(value):
        if c == '"' and (i == 0 or value[i - 1] != "\\"):
            quoted = not quoted
        if c == "#" and not quoted:
            break
        out.append(c)
    return "".join(out).strip()


def _balanced(value):
    value = _strip_comment(value)
    return value.count("[") == value.count("]") and value.count("{") == value.count("}")


def _toml_value(value):
    """A basic string, a list, an inline table (of those): as JSON once the bare keys of inline
    tables are quoted and trailing commas dropped (tests/packaging/test_package.py compares with tomllib)."""
    value = re.sub(r'([{,]\s*)([A-Za-z0-9_-]+)\s*=\s*', r'\1"\2": ', _strip_comment(value))
    return json.loads(re.sub(r",\s*([\]}])", r"\1", value))


def _pyproject():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        text = f.read().decode()
    return tomllib.loads(text) if tomllib else _toml_subset(text)


def _version():
    """include/precompress.h's version, read by dist/version.py (the one source)."""
    sys.path.insert(0, os.path.join(ROOT, "dist"))
    try:
        import version as version_py
    finally:
        sys.path.pop(0)
    return version_py.read(os.path.join(ROOT, "include", "precompress.h"))


def _names():
    name = _pyproject()["project"]["name"]
    version = _version()
    return name, version, "%s-%s.dist-info" % (name, version)


def _metadata():
    """METADATA (and the sdist's PKG-INFO): core metadata 2.1 from pyproject.toml's [project]."""
    project = _pyproject()["project"]
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + _version(),
             "Summary: " + project.get("description", "")]
    for author in project.get("authors", []):
        lines.append("Author: " + author["name"])
    if "license" in project:
        lines.append("License: " + project["license"]["text"])
    for url in sorted(project.get("urls", {}).items()):
        lines.append("Project-URL: %s, %s" % url)
    lines += ["Classifier: " + c for c in project.get("classifiers", [])]
    if "requires-python" in project:
        lines.append("Requires-Python: " + project["requires-python"])
    lines += ["Requires-Dist: " + r for r in project.get("dependencies", [])]
    for extra, reqs in sorted(project.get("optional-dependencies", {}).items()):
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s; extra == "%s"' % (r, extra) for r in reqs]
    body = ""
    if "readme" in project:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, project["readme"]), encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


def _entry_points():
    scripts = _pyproject()["project"].get("scripts", {})
    return "[console_scripts]\n" + "".join("%s = %s\n" % kv for kv in sorted(scripts.items()))


# ---- tags -------------------------------------------------------------------

def _elf(path):
    """(architecture or None, has an interpreter) of an ELF file; None when it is not one."""
    with open(path, "rb") as f:
        head = f.read(64)
        if len(head) < 52 or head[:4] != b"\x7fELF":
            return None
        bits64, little = head[4] == 2, head[5] == 1
        e = "<" if little else ">"
        machine = struct.unpack_from(e + "H", head, 18)[0]
        if bits64:
            phoff, = struct.unpack_from(e + "Q", head, 32)
            phentsize, phnum = struct.unpack_from(e + "HH", head, 54)
        else:
            phoff, = struct.unpack_from(e + "I", head, 28)
            phentsize, phnum = struct.unpack_from(e + "HH", head, 42)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    interp = any(struct.unpack_from(e + "I", table, i * phentsize)[0] == 3  # PT_INTERP
                 for i in range(len(table) // phentsize if phentsize else 0))
    arch = ELF_ARCH.get(machine)
    if machine == 21 and not little:
        arch = "ppc64"
    return arch, interp


def _linux_tag(arch):
    if arch in MANYLINUX_ARCHES:
        return "py3-none-manylinux_2_17_{0}.manylinux2014_{0}.musllinux_1_1_{0}".format(arch)
    return "py3-none-linux_" + arch


def _machine():
    m = platform.machine()
    return {"amd64": "x86_64", "arm64": "aarch64", "i386": "i686", "i586": "i686"}.get(m.lower(), m)


def _native_tag():
    """The tag of a wheel built from source here (before the program is there to read)."""
    if sys.platform.startswith("linux"):
        return _linux_tag(_machine())
    plat = sysconfig.get_platform()
    if sys.platform == "darwin":  # the program is built for this machine only, not universal2
        plat = re.sub(r"-(universal2|intel|fat\w*|x86_64|arm64)$", "-" + platform.machine(), plat)
    return "py3-none-" + re.sub(r"[^A-Za-z0-9]", "_", plat)


def _program_tag(program, want_arch=None):
    """The tag for a wheel holding program: checked to be static on Linux, of want_arch if given."""
    info = _elf(program)
    if info is None:
        if want_arch is not None:
            raise BuildError("%s is not an ELF program: cannot tag it for Linux %s" % (program, want_arch))
        return _native_tag()  # macOS (Mach-O), built here
    arch, interp = info
    if want_arch is not None and arch is not None and arch != want_arch:
        raise BuildError("%s is a program for %s, not %s" % (program, arch, want_arch))
    if interp:
        raise BuildError("%s is linked dynamically (it has an ELF interpreter): a wheel for every Linux "
                         "needs the static program (meson setup -Dstatic=true)" % program)
    return _linux_tag(want_arch or arch or _machine())


# ---- finding meson, ninja and a compiler ------------------------------------

def _pip_build_env_roots(environ):
    """The temporary directories of pip's build isolation: parents of the PYTHONPATH entries
    that hold pip's sitecustomize.py."""
    roots = []
    for entry in environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry and os.path.isfile(os.path.join(entry, "sitecustomize.py")):
            roots.append(os.path.dirname(os.path.abspath(entry)) + os.sep)
    return roots


def _clean_env(environ=None):
    """environ (default os.environ) without what pip's build isolation added: meson and ninja
    of the system run in it as they would in the shell pip was started from."""
    environ = dict(os.environ if environ is None else environ)
    roots = _pip_build_env_roots(environ)
    for name in ISOLATION_VARS:
        environ.pop(name, None)
    path = [p for p in environ.get("PATH", "").split(os.pathsep)
            if p and not any(os.path.abspath(p).startswith(r) for r in roots)]
    environ["PATH"] = os.pathsep.join(path)
    return environ


def _meson_min():
    """meson.build's meson_version, as (0, 63, 0)."""
    with open(os.path.join(ROOT, "meson.build"), encoding="utf-8") as f:
        m = re.search(r"meson_version:\s*'>=\s*([0-9.]+)'", f.read())
    return tuple(int(x) for x in m.group(1).split(".")) if m else (0, 63, 0)


def _meson_version(meson, env):
    try:
        p = subprocess.run([meson, "--version"], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.match(rb"(\d+)\.(\d+)\.(\d+)", p.stdout.strip())
    return tuple(int(x) for x in m.groups()) if p.returncode == 0 and m else None


def _system_meson(env):
    """The meson on env's PATH when it runs there and is new enough; else None."""
    meson = shutil.which("meson", path=env["PATH"])
    if meson is None:
        return None
    version = _meson_version(meson, env)
    return meson if version is not None and version >= _meson_min() else None


def _ninja(env):
    if env.get("NINJA") and shutil.which(env["NINJA"].split()[0], path=env["PATH"]):
        return env["NINJA"]
    for name in NINJAS:
        path = shutil.which(name, path=env["PATH"])
        if path:
            return path
    return None


def _compiler(env):
    cc = env.get("CC", "").split()
    if cc:
        return shutil.which(cc[0], path=env["PATH"])
    for name in COMPILERS:
        path = shutil.which(name, path=env["PATH"])
        if path:
            return path
    return None


def _cannot_build(missing):
    return BuildError(
        "cannot build the program from source here: %s.\n"
        "It is C, built with meson, ninja and a C compiler against zlib, brotli, libuv, jansson, zstd,\n"
        "xxhash and sqlite3 (their -dev packages). Either\n"
        "- install a release wheel instead, which holds the program built and needs no compiler\n"
        "  (Linux x86_64 and aarch64): pip install 'precompress-%s-py3-none-manylinux_2_17_ARCH.manylinux2014_ARCH"
        ".musllinux_1_1_ARCH.whl[django]'\n"
        "  (docs/django.md, \"Install\"), or\n"
        "- install what the build needs and run pip again:\n"
        "    Debian, Ubuntu: apt-get install %s\n"
        "    macOS (Homebrew): brew install %s"
        % ("; ".join(missing), _version(), DEBIAN_DEPS, HOMEBREW_DEPS))


def _requires(env):
    """(PyPI packages pip must provide, what is missing that pip cannot provide)."""
    need, missing = [], []
    if _system_meson(env) is None:
        need.append("meson>=%d.%d.%d" % _meson_min())
    if _ninja(env) is None:
        need.append("ninja")
    if _compiler(env) is None:
        missing.append("no C compiler (%s on PATH, or $CC)" % ", ".join(COMPILERS))
    return need, missing


def _tools():
    """(meson's argv, the environment meson and ninja run in)."""
    clean = _clean_env()
    meson, env, missing = _system_meson(clean), clean, []
    if meson is not None:
        if _ninja(env) is None:
            # pip's ninja (PyPI's: a Python script calling the binary of its module): the binary itself.
            try:
                import ninja
                env["PATH"] = getattr(ninja, "BIN_DIR", "") + os.pathsep + env["PATH"]
            except ImportError:
                pass
    else:
        # PyPI's meson, which pip installed into its build environment because none was on
        # PATH: it runs with pip's variables, which let it import mesonbuild.
        env = dict(os.environ)
        meson = shutil.which("meson", path=env.get("PATH", ""))
        if meson is not None and (_meson_version(meson, env) or (0,)) < _meson_min():
            meson = None
        if meson is None:
            missing.append("no meson >= %d.%d.%d on PATH" % _meson_min() +
                           (" and none installed by pip" if _pip_build_env_roots(env) else ""))
    if _ninja(env) is None:
        missing.append("no ninja on PATH")
    if _compiler(env) is None:
        missing.append("no C compiler (%s on PATH, or $CC)" % ", ".join(COMPILERS))
    if missing:
        raise _cannot_build(missing)
    return [meson], env


# ---- building the program ---------------------------------------------------

def _log(message):
    sys.stderr.write("precompress: %s\n" % message)
    sys.stderr.flush()


def _build_program(tmp):
    """Build the program (and its man page) in tmp/build; return both paths."""
    meson, env = _tools()
    build = os.path.join(tmp, "build")
    args = ["--buildtype=release", "-Dtests=false"]
    if sys.platform.startswith("linux"):
        args.append("-Dstatic=true")
    _log("building the program: %s setup %s" % (meson[0], " ".join(args)))
    sys.stdout.flush()
    # meson's output goes to stderr: stdout is left to what calls build_wheel (dist/release.sh
    # prints the wheel's name there).
    p = subprocess.run(meson + ["setup", build] + args, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=2)
    if p.returncode != 0:
        raise _cannot_build(["meson setup failed (its last lines above say what it did not find; "
                             "the whole log: %s)" % os.path.join(build, "meson-logs", "meson-log.txt")])
    jobs = os.environ.get("PRECOMPRESS_BUILD_JOBS")
    p = subprocess.run(meson + ["compile", "-C", build] + (["-j", jobs] if jobs else []),
                       env=env, stdin=subprocess.DEVNULL, stdout=2)
    if p.returncode != 0:
        raise BuildError("meson compile failed (exit %d; its output is above)" % p.returncode)
    return os.path.join(build, "src", "cli", "precompress"), os.path.join(build, "man", "precompress.1")


def _man_page(out):
    """The man page made from man/options.md, as meson makes it (for a binary given without one)."""
    sys.path.insert(0, os.path.join(ROOT, "man"))
    try:
        import gen_options
    finally:
        sys.path.pop(0)
    gen_options.main(["gen_options.py", os.path.join(ROOT, "man", "options.md"), "man",
                      os.path.join(ROOT, "man", "precompress.1.in"), out])
    return out


def _prebuilt(config_settings):
    """{"binary", "arch", "man"} from config_settings, else the environment; None when no binary."""
    config_settings = config_settings or {}
    env = {"binary": "PRECOMPRESS_BINARY", "arch": "PRECOMPRESS_WHEEL_ARCH", "man": "PRECOMPRESS_MAN"}
    got = {}
    for key, var in env.items():
        value = config_settings.get(key) or os.environ.get(var) or None
        if isinstance(value, list):  # pip passes a setting given twice as a list
            value = value[-1]
        got[key] = value
    if got["binary"] is None:
        if got["arch"] or got["man"]:
            raise BuildError("arch and man are for a prebuilt binary: give binary=PATH (or PRECOMPRESS_BINARY) too")
        return None
    for key in ("binary", "man"):
        if got[key] is not None:
            got[key] = os.path.abspath(got[key])
            if not os.path.isfile(got[key]):
                raise BuildError("%s: no such file (the %s to put into the wheel)" % (got[key], key))
    if not os.access(got["binary"], os.X_OK):
        raise BuildError("%s is not executable" % got["binary"])
    return got


# ---- writing archives -------------------------------------------------------

def _epoch():
    """SOURCE_DATE_EPOCH, or None."""
    value = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    return int(value) if value.isdigit() else None


def _zip_time():
    epoch = _epoch()
    if epoch is None:
        return (1980, 1, 1, 0, 0, 0)
    return time.gmtime(max(epoch, 315532800))[:6]  # zip cannot say before 1980


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (arcname, digest, len(data))


def _write_wheel(path, files):
    """files: {arcname: (bytes, mode)}; sorted, the dist-info last and its RECORD at the end."""
    distinfo = [a for a in files if a.endswith(".dist-info/METADATA")][0].split("/")[0]
    names = sorted(files, key=lambda a: (a.startswith(distinfo + "/"), a))
    date = _zip_time()
    record = []
    with zipfile.ZipFile(path + ".part", "w") as whl:
        for arcname in names + [distinfo + "/RECORD"]:
            if arcname.endswith("/RECORD"):
                record.append(arcname + ",,\n")
                data, mode = "".join(record).encode(), 0o644
            else:
                data, mode = files[arcname]
                record.append(_record_line(arcname, data))
            info = zipfile.ZipInfo(arcname, date_time=date)
            info.create_system = 3
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)
    os.replace(path + ".part", path)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _wheel_files(program, man, tag):
    name, version, distinfo = _names()
    files = {}
    for module in os.listdir(PACKAGE):
        if module.endswith(".py"):
            files["precompress/" + module] = (_read(os.path.join(PACKAGE, module)), 0o644)
    files["precompress/bin/precompress"] = (_read(program), 0o755)
    files["%s-%s.data/data/share/man/man1/precompress.1" % (name, version)] = (_read(man), 0o644)
    files[distinfo + "/LICENSE"] = (_read(os.path.join(ROOT, "LICENSE")), 0o644)
    for meta, text in _distinfo_texts(tag).items():
        files["%s/%s" % (distinfo, meta)] = (text.encode(), 0o644)
    return files


def _distinfo_texts(tag):
    wheel = ("Wheel-Version: 1.0\nGenerator: precompress build_backend\nRoot-Is-Purelib: false\n" +
             "".join("Tag: py3-none-%s\n" % plat for plat in tag.split("-", 2)[2].split(".")))
    return {"METADATA": _metadata(), "WHEEL": wheel, "entry_points.txt": _entry_points()}


# ---- PEP 517 hooks ----------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    """meson and ninja from PyPI, only when none is on PATH (pip's additions not counted)."""
    if _prebuilt(config_settings) is not None:
        return []
    need, missing = _requires(_clean_env())
    if missing:  # pip could give meson and ninja, never a compiler: say so before it fetches anything
        if need:
            missing = ["no meson >= %d.%d.%d or ninja on PATH" % _meson_min()] + missing
        raise _cannot_build(missing)
    return need


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    distinfo = _names()[2]
    prebuilt = _prebuilt(config_settings)
    tag = _program_tag(prebuilt["binary"], prebuilt["arch"]) if prebuilt else _native_tag()
    os.makedirs(os.path.join(metadata_directory, distinfo), exist_ok=True)
    texts = dict(_distinfo_texts(tag))
    texts["LICENSE"] = _read(os.path.join(ROOT, "LICENSE")).decode()
    for name, text in texts.items():
        with open(os.path.join(metadata_directory, distinfo, name), "w", encoding="utf-8") as f:
            f.write(text)
    return distinfo


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """Write the wheel into wheel_directory; return its file name."""
    name, version, distinfo = _names()
    prebuilt = _prebuilt(config_settings)
    os.makedirs(wheel_directory, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="precompress-wheel-") as tmp:
        if prebuilt:
            program, man = prebuilt["binary"], prebuilt["man"]
            tag = _program_tag(program, prebuilt["arch"])
            if man is None:
                man = _man_page(os.path.join(tmp, "precompress.1"))
        else:
            program, man = _build_program(tmp)
            tag = _program_tag(program)
        wheel_name = "%s-%s-%s.whl" % (name, version, tag)
        _write_wheel(os.path.join(wheel_directory, wheel_name), _wheel_files(program, man, tag))
    _log("wrote %s" % os.path.join(wheel_directory, wheel_name))
    return wheel_name


# ---- the sdist --------------------------------------------------------------

def _git(*args):
    try:
        p = subprocess.run(["git", "-C", ROOT] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, env=_clean_env())
    except OSError:
        return None
    return p.stdout if p.returncode == 0 else None


def _in_git_checkout():
    top = _git("rev-parse", "--show-toplevel")
    return top is not None and os.path.realpath(os.fsdecode(top.strip())) == os.path.realpath(ROOT)


def _source_files():
    """Relative paths of the files an sdist holds: git's, or the tree's less build output."""
    if _in_git_checkout():
        listed = _git("ls-files", "-z")
        names = [os.fsdecode(n) for n in listed.split(b"\0") if n]
        return sorted(n for n in names if os.path.lexists(os.path.join(ROOT, n)))  # deleted, not committed
    out = []
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        keep = []
        for d in dirnames:
            full = os.path.join(dirpath, d)
            if (d == "__pycache__" or (rel == "." and WALK_SKIP_TOP.match(d)) or
                    os.path.join(rel, d) == os.path.join("dist", "out") or
                    os.path.isfile(os.path.join(full, "pyvenv.cfg")) or
                    os.path.isfile(os.path.join(full, "meson-private", "coredata.dat"))):
                continue
            if os.path.islink(full):  # a link to a directory is a file of the archive
                filenames.append(d)
                continue
            keep.append(d)
        dirnames[:] = keep
        for n in filenames:
            if n.endswith(".pyc") or (rel == "." and WALK_SKIP_TOP.match(n)):
                continue
            out.append(os.path.normpath(os.path.join(rel, n)))
    return sorted(out)


def _sdist_mtime(files):
    epoch = _epoch()
    if epoch is not None:
        return epoch
    if _in_git_checkout():
        last = _git("log", "-1", "--format=%ct")
        if last and last.strip().isdigit():
            return int(last.strip())
    return max([int(os.lstat(os.path.join(ROOT, n)).st_mtime) for n in files] or [0])


def build_sdist(sdist_directory, config_settings=None):
    """Write precompress-VERSION.tar.gz into sdist_directory; return its file name."""
    name, version, _ = _names()
    base = "%s-%s" % (name, version)
    files = _source_files()
    mtime = _sdist_mtime(files)
    pkg_info = _metadata().encode()

    def member(arcname, mode, size=0, kind=tarfile.REGTYPE, link=""):
        info = tarfile.TarInfo(base + "/" + arcname)
        info.size, info.mode, info.type, info.linkname, info.mtime = size, mode, kind, link, mtime
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with open(path + ".part", "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for n in sorted(files + ["PKG-INFO"]):
                    if n == "PKG-INFO":
                        tar.addfile(member(n, 0o644, len(pkg_info)), io.BytesIO(pkg_info))
                        continue
                    full = os.path.join(ROOT, n)
                    st = os.lstat(full)
                    arcname = n.replace(os.sep, "/")
                    if stat.S_ISLNK(st.st_mode):
                        tar.addfile(member(arcname, 0o777, kind=tarfile.SYMTYPE, link=os.readlink(full)))
                    elif stat.S_ISREG(st.st_mode):
                        mode = 0o755 if st.st_mode & 0o111 else 0o644
                        with open(full, "rb") as f:
                            tar.addfile(member(arcname, mode, st.st_size), f)
    os.replace(path + ".part", path)
    _log("wrote %s (%d files)" % (path, len(files) + 1))
    return base + ".tar.gz"
