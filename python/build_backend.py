"""The PEP 517 build backend of the precompress Python package (pyproject.toml).

`pip install --no-build-isolation .` calls build_wheel(): it builds the program
with meson in a temporary directory (`-Dstatic=true`: a self-contained binary,
`-Dtests=false`, release), puts it in the package as precompress/bin/precompress
beside python/precompress/*.py, and writes the wheel. Only the standard library,
meson and ninja are needed (no setuptools, no meson-python: see docs/django.md,
"Why a build backend of its own").

PRECOMPRESS_BUILD_JOBS=N limits the compile to N jobs (ninja's default: CPUs + 2).
There is no sdist: install from a clone.
"""
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

try:
    import tomllib
except ImportError:  # Python < 3.11: pyproject.toml's two strings by pattern
    tomllib = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "python", "precompress")
SETUP_ARGS = ["--buildtype=release", "-Dstatic=true", "-Dtests=false"]


def _project():
    """Name, version (include/precompress.h's, the one source) and summary."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        text = f.read().decode()
    if tomllib:
        project = tomllib.loads(text)["project"]
    else:
        project = dict(re.findall(r'^(name|description) = "([^"]*)"$', text, re.M))
    sys.path.insert(0, os.path.join(ROOT, "dist"))
    try:
        import version as version_py
    finally:
        sys.path.pop(0)
    version = version_py.read(os.path.join(ROOT, "include", "precompress.h"))
    return project["name"], version, project.get("description", "")


def _names():
    name, version, _ = _project()
    return name, version, "%s-%s.dist-info" % (name, version)


def _tag():
    return "py3-none-" + re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _metadata_files():
    name, version, summary = _project()
    metadata = ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nLicense: MIT\n"
                "Requires-Python: >=3.8\n" % (name, version, summary))
    wheel = ("Wheel-Version: 1.0\nGenerator: precompress build_backend\nRoot-Is-Purelib: false\n"
             "Tag: %s\n" % _tag())
    entry_points = "[console_scripts]\nprecompress = precompress.__main__:main\n"
    return {"METADATA": metadata, "WHEEL": wheel, "entry_points.txt": entry_points}


def _meson():
    meson = shutil.which("meson")
    if meson is None:
        sys.exit("precompress: building the package needs meson and ninja (apt-get install meson ninja-build)")
    return meson


def _build_program(tmp):
    """Build the static program in tmp; return its path."""
    build = os.path.join(tmp, "build")
    meson = _meson()
    subprocess.run([meson, "setup", build, *SETUP_ARGS], cwd=ROOT, check=True)
    jobs = os.environ.get("PRECOMPRESS_BUILD_JOBS")
    subprocess.run([meson, "compile", "-C", build] + (["-j", jobs] if jobs else []), check=True)
    return os.path.join(build, "src", "cli", "precompress")


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (arcname, digest, len(data))


def _write(whl, record, arcname, data, mode=0o644):
    info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    whl.writestr(info, data)
    record.append(_record_line(arcname, data))


# ---- PEP 517 hooks ---------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    distinfo = _names()[2]
    os.makedirs(os.path.join(metadata_directory, distinfo), exist_ok=True)
    for name, text in _metadata_files().items():
        with open(os.path.join(metadata_directory, distinfo, name), "w") as f:
            f.write(text)
    return distinfo


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, distinfo = _names()
    wheel_name = "%s-%s-%s.whl" % (name, version, _tag())
    with tempfile.TemporaryDirectory(prefix="precompress-wheel-") as tmp:
        program = _build_program(tmp)
        record = []
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w") as whl:
            for module in sorted(os.listdir(PACKAGE)):
                if module.endswith(".py"):
                    with open(os.path.join(PACKAGE, module), "rb") as f:
                        _write(whl, record, "precompress/" + module, f.read())
            with open(program, "rb") as f:
                _write(whl, record, "precompress/bin/precompress", f.read(), 0o755)
            with open(os.path.join(ROOT, "LICENSE"), "rb") as f:
                _write(whl, record, distinfo + "/LICENSE", f.read())
            for meta, text in _metadata_files().items():
                _write(whl, record, "%s/%s" % (distinfo, meta), text.encode())
            record.append(distinfo + "/RECORD,,\n")
            whl.writestr(zipfile.ZipInfo(distinfo + "/RECORD", date_time=(1980, 1, 1, 0, 0, 0)),
                         "".join(record))
    return wheel_name
