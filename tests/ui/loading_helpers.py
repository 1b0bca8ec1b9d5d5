"""Opening a measurement in tests: it loads in a worker thread, so wait until it has settled."""

from __future__ import annotations

from pathlib import Path


def open_measurement_now(qtbot, win, path: str | Path, timeout: int = 10000) -> None:
    """Start loading ``path`` in ``win`` and wait until it is shown or has failed."""
    assert win.open_measurement(str(path))
    qtbot.waitUntil(lambda: not win.is_loading_measurement(), timeout=timeout)
