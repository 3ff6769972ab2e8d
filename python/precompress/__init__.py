"""precompress: FILE.gz and FILE.br beside static files, the bytes whitenoise writes.

The package carries the program (precompress/bin/precompress: prebuilt in a
release's wheel, or built by pip from the source) and Django storages
(precompress.django). `python -m precompress ARGS` and the `precompress`
script run the program.
"""
import os

__all__ = ["binary"]


def binary():
    """The path of the precompress program installed with this package."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "precompress")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            "precompress: no program at %s. The package gets it from a release's wheel (Linux x86_64 and "
            "aarch64: pip install precompress-VERSION-py3-none-manylinux_2_17_ARCH...whl, no compiler needed) "
            "or from pip building it from the source (pip install . in a clone; needs meson, ninja, a C "
            "compiler and the libraries' -dev packages): docs/django.md, \"Install\"" % path)
    return path
