"""precompress: FILE.gz and FILE.br beside static files, the bytes whitenoise writes.

The package carries the program (precompress/bin/precompress, built by
`pip install` from the repository) and Django storages (precompress.django).
`python -m precompress ARGS` runs the program.
"""
import os

__all__ = ["binary"]


def binary():
    """The path of the precompress program installed with this package."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "precompress")
    if not os.access(path, os.X_OK):
        raise FileNotFoundError(
            "precompress: no program at %s: install the package with pip from the repository "
            "(docs/django.md), which builds it" % path)
    return path
