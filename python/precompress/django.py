"""whitenoise's storages, compressing with one precompress run instead of Python.

    STATICFILES_STORAGE = "precompress.django.CompressedManifestStaticFilesStorage"

Both classes subclass whitenoise's, so hashing, WHITENOISE_KEEP_ONLY_HASHED_FILES,
WHITENOISE_MANIFEST_STRICT and the rest behave as they do there; only the
compression step differs: the files whitenoise would compress are handed to one
run of the bundled program (every CPU), its skip list from
WHITENOISE_SKIP_COMPRESS_EXTENSIONS (unset: whitenoise's own default list), and
post_process yields (name, name + ".gz" / ".br", True) for each output written,
as whitenoise does. A failed run ends collectstatic with PrecompressError,
precompress's own error lines in its message (or, when it printed none, its exit
status and the command that ran). docs/django.md has the details.

Settings of this package (all optional):
    PRECOMPRESS_ARGS    a list of further options, e.g. ["--cache-dir", "/var/cache/pc"]
    PRECOMPRESS_BINARY  the program to run instead of the bundled one
    PRECOMPRESS_MANIFEST  a file name: precompress's manifest of the run, rooted at
                        STATIC_ROOT (paths below it), for `precompress server-config`
                        and the next run's incremental check
    PRECOMPRESS_DELTAS  True: write RFC 9842 deltas (FILE.<id>.dcz, .dcb) of each changed
                        file against its previous hashed version, which Django keeps in
                        STATIC_ROOT, paired through the previous staticfiles.json
                        (CompressedManifestStaticFilesStorage only)
    PRECOMPRESS_DICTIONARY_DIRS  earlier releases' STATIC_ROOTs to write deltas against too,
                        each paired through its own staticfiles.json
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from whitenoise import storage as whitenoise_storage
from whitenoise.compress import Compressor

import precompress

__all__ = ["CompressedManifestStaticFilesStorage", "CompressedStaticFilesStorage", "PrecompressError"]


class PrecompressError(RuntimeError):
    """precompress exited with a non-zero status, or could not be run."""


def skip_ext_option():
    """WHITENOISE_SKIP_COMPRESS_EXTENSIONS as the value of --skip-ext."""
    extensions = getattr(settings, "WHITENOISE_SKIP_COMPRESS_EXTENSIONS", None)
    if extensions is None:
        extensions = Compressor.SKIP_COMPRESS_EXTENSIONS
    if isinstance(extensions, str):  # whitenoise would take the string's letters as extensions
        raise ImproperlyConfigured("WHITENOISE_SKIP_COMPRESS_EXTENSIONS must be a list, not a string")
    for ext in extensions:
        if not ext or "," in ext:
            raise ImproperlyConfigured("WHITENOISE_SKIP_COMPRESS_EXTENSIONS: %r: precompress takes "
                                       "extensions without commas, none empty" % (ext,))
    return ",".join(extensions)


def extra_args():
    """PRECOMPRESS_ARGS, checked."""
    args = getattr(settings, "PRECOMPRESS_ARGS", [])
    if not isinstance(args, (list, tuple)) or not all(isinstance(a, str) for a in args):
        raise ImproperlyConfigured("PRECOMPRESS_ARGS must be a list of strings, e.g. [\"--cache-dir\", \"/var/cache/pc\"]")
    return list(args)


def dictionary_dirs():
    """PRECOMPRESS_DICTIONARY_DIRS, checked: a list of directory names."""
    dirs = getattr(settings, "PRECOMPRESS_DICTIONARY_DIRS", [])
    if not isinstance(dirs, (list, tuple)) or not all(isinstance(d, (str, os.PathLike)) for d in dirs):
        raise ImproperlyConfigured("PRECOMPRESS_DICTIONARY_DIRS must be a list of directories, "
                                   "e.g. [\"/srv/releases/41/static\"]")
    return [os.fspath(d) for d in dirs]


def deltas_enabled():
    """PRECOMPRESS_DELTAS, checked: True or False (unset: False)."""
    on = getattr(settings, "PRECOMPRESS_DELTAS", False)
    if not isinstance(on, bool):
        raise ImproperlyConfigured("PRECOMPRESS_DELTAS must be True or False")
    return on


def delta_names(name, record):
    """The delta outputs a --json-lines file record says are kept for name:
    NAME.<first 16 hex digits of the dictionary's SHA-256>.<format> (docs/deltas.md)."""
    for d in record.get("deltas", []):
        if d.get("state") == "kept":
            yield "%s.%s.%s" % (name, d["sha256"][:16], d["format"])


def manifest_option():
    """PRECOMPRESS_MANIFEST, checked, as --manifest's arguments (none when unset)."""
    path = getattr(settings, "PRECOMPRESS_MANIFEST", None)
    if path is None:
        return []
    if not isinstance(path, (str, os.PathLike)) or not os.fspath(path):
        raise ImproperlyConfigured("PRECOMPRESS_MANIFEST must be a file name, "
                                   "e.g. BASE_DIR / \"precompress.json\"")
    return ["--manifest", os.path.abspath(os.fspath(path))]


def command_text(argv):
    """argv for a message, shell-quoted."""
    return " ".join(shlex.quote(a) for a in argv)


def file_name(record):
    """The name (relative to the run's directory) of a --json-lines file record."""
    root, path = (bytes.fromhex(record[k + "_hex"]) if k + "_hex" in record else os.fsencode(record[k])
                  for k in ("root", "path"))
    return os.fsdecode(os.path.normpath(os.path.join(root, path)))


class PrecompressMixin:
    # The previous collectstatic's staticfiles.json, read before Django replaces it
    # (post_process); None when there was none or deltas are off.
    _earlier_manifest = None

    def delta_options(self, manifest_copy):
        """--dictionary-from options: PRECOMPRESS_DICTIONARY_DIRS' directories (each paired
        through its own staticfiles.json). The manifest storage puts STATIC_ROOT first."""
        return [o for d in dictionary_dirs() for o in ("--dictionary-from", d)]

    def compress_files(self, names):
        """Compress names (relative to STATIC_ROOT); yield (name, output name) for each output written.

        The hook whitenoise's CompressedManifestStaticFilesStorage calls with the names
        it would compress; it runs precompress once over all of them instead: STATIC_ROOT
        as its PATH, the names in a file given to --files-from (so the manifest, with
        PRECOMPRESS_MANIFEST, is rooted at STATIC_ROOT, and no command line overflows).
        """
        names = sorted(set(names))
        if not names:
            return
        with tempfile.TemporaryDirectory(prefix="precompress-") as tmp:
            copy = None
            if self._earlier_manifest is not None:
                copy = os.path.join(tmp, "staticfiles.earlier.json")
                with open(copy, "wb") as f:
                    f.write(self._earlier_manifest)
            listing = os.path.join(tmp, "files")
            with open(listing, "wb") as f:
                f.write(b"".join(os.fsencode(n) + b"\0" for n in names))
            yield from self.run_precompress(listing, self.delta_options(copy))

    def run_precompress(self, listing, delta_options):
        options = ["--json-lines", "--skip-ext", skip_ext_option(), *manifest_option(),
                   *delta_options, *extra_args(), "--files-from", listing]
        try:
            program = getattr(settings, "PRECOMPRESS_BINARY", None) or precompress.binary()
        except FileNotFoundError as e:
            raise PrecompressError(str(e)) from e
        root = self.path("")
        argv = [program, *options, "--", "."]
        try:
            p = subprocess.run(argv, cwd=root, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        except OSError as e:
            raise PrecompressError("precompress: cannot run %s: %s" % (program, e)) from e
        if p.returncode != 0:
            how = ("exited with status %d" % p.returncode if p.returncode > 0
                   else "was killed by signal %d" % -p.returncode)
            said = p.stderr.decode(errors="replace").rstrip()
            if not said:
                # Nothing to show of its own (a wrapper, a program killed early): the
                # status and the command say what ran and how it ended.
                raise PrecompressError("precompress %s and printed nothing; the command, in %s: %s" % (
                    how, root, command_text(argv)))
            raise PrecompressError("precompress %s:\n%s" % (how, said))
        sys.stderr.write(p.stderr.decode(errors="replace"))  # notes of a run that went well
        for line in p.stdout.splitlines():
            record = json.loads(line)
            if record["type"] != "file":
                continue
            name = file_name(record)
            for fmt, output in sorted(record["outputs"].items()):
                if output["state"] == "kept":
                    yield name, "%s.%s" % (name, fmt)
            for delta in delta_names(name, record):
                yield name, delta

    def post_process(self, *args, **kwargs):
        """whitenoise's, with a failed precompress run yielded as Django's post_process yields errors.

        collectstatic then prints "Post-processing 'STATIC_ROOT' failed!" and raises it.
        """
        try:
            yield from self.post_process_files(*args, **kwargs)
        except PrecompressError as e:
            yield self.path(""), None, e

    def post_process_files(self, *args, **kwargs):
        return super().post_process(*args, **kwargs)


class CompressedManifestStaticFilesStorage(PrecompressMixin, whitenoise_storage.CompressedManifestStaticFilesStorage):
    """whitenoise's CompressedManifestStaticFilesStorage, compressing with precompress.

    whitenoise's post_process hashes, deletes what KEEP_ONLY_HASHED_FILES says,
    then calls compress_files() with the names to compress: ours.

    With PRECOMPRESS_DELTAS, post_process first reads the staticfiles.json of the
    previous collectstatic (Django writes the new one only once every file is
    hashed), and the run gets --dictionary-from STATIC_ROOT --django-manifest COPY:
    each file whose hashed name changed gets a delta against its previous hashed
    version, still in STATIC_ROOT.
    """

    def post_process_files(self, *args, **kwargs):
        self._earlier_manifest = None
        if deltas_enabled() and not kwargs.get("dry_run"):
            try:
                with open(self.path(self.manifest_name), "rb") as f:
                    self._earlier_manifest = f.read()
            except FileNotFoundError:
                pass  # the first collectstatic (or after --clear): nothing to pair with
        return super().post_process_files(*args, **kwargs)

    def delta_options(self, manifest_copy):
        options = []
        if manifest_copy is not None:
            options = ["--dictionary-from", self.path(""), "--django-manifest", manifest_copy]
        return options + super().delta_options(manifest_copy)


class CompressedStaticFilesStorage(PrecompressMixin, whitenoise_storage.CompressedStaticFilesStorage):
    """whitenoise's CompressedStaticFilesStorage, compressing with precompress."""

    def post_process_files(self, paths, dry_run=False, **options):
        # Django's StaticFilesStorage does no post-processing: whitenoise's
        # compresses every collected file, as this does, in one run.
        if deltas_enabled():
            raise ImproperlyConfigured("PRECOMPRESS_DELTAS needs hashed names: use "
                                       "precompress.django.CompressedManifestStaticFilesStorage")
        if not dry_run:
            for name, compressed_name in self.compress_files(paths):
                yield name, compressed_name, True
