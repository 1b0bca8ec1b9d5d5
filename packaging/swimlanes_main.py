"""Entry point of the desktop bundle: the same CLI as the ``swimlanes`` command."""

import multiprocessing
import sys

from swimlanes.cli import main

if __name__ == "__main__":
    multiprocessing.freeze_support()
    sys.exit(main())
