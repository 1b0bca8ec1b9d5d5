"""The user-facing failure of a service or command."""

from __future__ import annotations


class CommandError(Exception):
    """A user-facing failure: the command line prints it as ``error: ...`` and exits with code
    2, no traceback."""
