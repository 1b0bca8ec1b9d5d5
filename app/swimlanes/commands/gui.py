"""``swimlanes gui [FILE]`` (the default command): open the desktop app.

Where Qt or a display is missing, print the simulated timeline instead of failing.
"""

from __future__ import annotations

import argparse
import os
import sys

from swimlanes.resources import example_names, example_path
from swimlanes.services.errors import CommandError

#: What the app opens when started without a file, and what the headless fallback shows.
DEFAULT_EXAMPLE = "chunked-overlap"


def _missing_display() -> str | None:
    if os.environ.get("QT_QPA_PLATFORM") or not sys.platform.startswith("linux"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return "no display (DISPLAY and WAYLAND_DISPLAY are not set)"


def _show_headless(file: str | None, reason: str) -> int:
    # Here, not at the top: the desktop app must not wait for the simulator and numpy before
    # its window first paints.
    from swimlanes.services.simulation import format_table, simulate_file
    from swimlanes.timeline.metrics import compute_metrics

    if file is None:
        if DEFAULT_EXAMPLE not in example_names():
            raise CommandError(f"cannot open the desktop app: {reason}")
        file = str(example_path(DEFAULT_EXAMPLE))
    print(f"cannot open the desktop app: {reason}; simulating instead.\n", file=sys.stderr)
    pipeline, timeline = simulate_file(file, None)
    print(format_table(pipeline, timeline, compute_metrics(timeline)))
    return 0


def run(args: argparse.Namespace) -> int:
    reason = _missing_display()
    if reason is None:
        try:
            from swimlanes.ui.app import main as gui_main
        except ImportError as err:
            reason = f"Qt could not be loaded ({err})"
        else:
            return int(gui_main(args.file) or 0)
    return _show_headless(args.file, reason)
