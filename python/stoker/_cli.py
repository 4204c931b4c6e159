"""stoker._cli: the ``stoker`` console entry point. Execs the C CLI installed in the package
(stoker/bin/stoker), so ``pip install .`` gives the same ``stoker`` command as ``make``."""
import os
import sys


def binary_path():
    """Path of the packaged ``stoker`` CLI binary."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "stoker")


def main():
    path = binary_path()
    if not os.access(path, os.X_OK):
        sys.stderr.write("stoker: the CLI binary is missing from the package (%s)\n" % path)
        return 2
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
