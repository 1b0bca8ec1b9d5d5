"""Gantt charts of timelines: one chart, simulated-vs-measured side by side, summary strip.

The names below load on first use: the window imports ``gantt.rows`` helpers before its first
paint, and importing the package must not import pyqtgraph with them (the charts are built
right after the first paint).
"""

from __future__ import annotations

import importlib
from typing import Any

#: Each public name and the module that defines it.
_HOME = {
    "COMPUTE_ROW": "rows",
    "HOST_ROW": "rows",
    "ComparisonCharts": "side_by_side",
    "GanttBarsItem": "bars",
    "GanttChart": "chart",
    "SummaryStrip": "summary",
    "engine_row": "rows",
    "stream_info_of": "rows",
    "stream_row": "rows",
}

__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:  # noqa: ANN401 - whatever the named module defines
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
