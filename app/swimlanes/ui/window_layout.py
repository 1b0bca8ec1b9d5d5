"""The main window's first-start layout (no saved window state yet).

After the first session QSettings restores the user's own layout; these defaults only have to
make a fresh window useful at once: a few lanes and program lines in the editor, a readable
simulated chart, and a strip for the comparison table and insights.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QDockWidget, QSplitter

#: First start: the window is 90 % of the screen, and at most this big.
DEFAULT_MAX_SIZE = (1800, 1100)
#: First start: the editor shows this many lanes and host-program lines.
DEFAULT_LANES = 5
DEFAULT_PROGRAM_LINES = 6
#: The comparison table and insights strip never gets more than this on first start.
TABS_MAX_PX = 170
DOCK_TITLE_PX = 24


def first_start_size(available: QSize) -> QSize:
    """Window size on first start for a screen with this much room."""
    return QSize(
        min(DEFAULT_MAX_SIZE[0], int(0.9 * available.width())),
        min(DEFAULT_MAX_SIZE[1], int(0.9 * available.height())),
    )


def default_layout(window: Any) -> None:  # noqa: ANN401 - a MainWindow (imports this module)
    """Size the docks and splitters of a laid-out ``window``.

    The schedule dock first gets what the summary, the simulated chart's rows (at their
    minimum height) and a few table rows need; the editor gets what DEFAULT_LANES lanes and
    DEFAULT_PROGRAM_LINES program lines need where the screen has room, and any height left
    goes to the charts. The side docks get widths that fit their content.
    """
    editor = window.centralWidget()
    assert isinstance(editor, QSplitter)
    lanes_h = window.lanes.height_for_lanes(DEFAULT_LANES)
    program_h = window.program_panel.height_for_lines(DEFAULT_PROGRAM_LINES)
    total = editor.height() + window.schedule_dock.height()
    charts_h = window.summary.sizeHint().height() + window.charts.minimumSizeHint().height()
    tabs_min = 3 * window.table.fontMetrics().height() + 60  # tab bar, note, a few rows
    schedule_min = charts_h + tabs_min + 2 * editor.handleWidth() + DOCK_TITLE_PX
    schedule_h = max(total - lanes_h - program_h - editor.handleWidth(), schedule_min)
    window.resizeDocks([window.schedule_dock], [schedule_h], Qt.Orientation.Vertical)
    editor.setSizes([lanes_h, program_h])
    tabs_h = max(tabs_min, min(TABS_MAX_PX, schedule_h - schedule_min + tabs_min))
    window.schedule_splitter.setSizes([schedule_h - tabs_h, tabs_h])
    palette_dock = window.findChild(QDockWidget, "palette_dock")
    inspector_dock = window.findChild(QDockWidget, "inspector_dock")
    window.resizeDocks(
        [palette_dock, inspector_dock],
        [window.palette_widget.sizeHint().width(), max(320, inspector_dock.minimumWidth())],
        Qt.Orientation.Horizontal,
    )
