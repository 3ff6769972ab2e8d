"""`python -m precompress ARGS` (and the `precompress` script pip installs): run the program."""
import os
import sys

from precompress import binary


def main():
    try:
        path = binary()
    except FileNotFoundError as e:
        sys.exit(str(e))
    os.execv(path, ["precompress"] + sys.argv[1:])  # its exit status is ours


if __name__ == "__main__":
    main()
