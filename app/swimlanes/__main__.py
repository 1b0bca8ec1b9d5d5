"""``python -m swimlanes``: the same as the ``swimlanes`` command."""

import sys

from swimlanes.cli import main

sys.exit(main())
