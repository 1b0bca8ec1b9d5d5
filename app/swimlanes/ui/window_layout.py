"""The main window's arrangements: the first-start (editing) layout and the compare layout.

After the first session QSettings restores the user's own layout; the defaults only have to
make a fresh window useful at once: a few lanes and program lines in the editor, a readable
simulated chart, and a strip for the comparison table and insights. The compare layout, used
while a measurement is shown, gives the schedule most of the height so that the simulated and
the measured chart both show every row with their time axes, and the editor keeps a few lanes.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QSplitter

#: First start: the window is 90 % of the screen, and at most this big.
DEFAULT_MAX_SIZE = (1800, 1100)
#: First start: the editor shows this many lanes and host-program lines.
DEFAULT_LANES = 5
DEFAULT_PROGRAM_LINES = 6
#: The comparison table and insights strip never gets more than this on first start.
TABS_MAX_PX = 170
DOCK_TITLE_PX = 24
#: Compare layout: the editor keeps this many lanes and host-program lines in view.
COMPARE_LANES = 2
COMPARE_PROGRAM_LINES = 2
#: Compare layout: the comparison table and insights sit right of the charts with this share
#: of the width, within these bounds (px): below the charts they got one to three lines at
#: 1728x972, beside them they get the dock's whole height. A window too narrow for the charts
#: and the least width keeps them below.
COMPARE_TABS_SHARE = 0.36
COMPARE_TABS_WIDTH = (340, 720)
#: The least width the charts take beside the table (their legend's line, about 1,190 px).
COMPARE_CHARTS_WIDTH = 1200
#: Before the charts exist (they are built after the first paint), the first-start layout
#: counts on this much height for them and the summary strip: about what an example's need.
CHARTS_ESTIMATE_PX = 300


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
    goes to the charts. The side docks get widths that fit their content. Before the charts
    exist, CHARTS_ESTIMATE_PX stands for their height (and the tabs under them are not sized).
    """
    editor = window.centralWidget()
    assert isinstance(editor, QSplitter)
    lanes_h = window.lanes.height_for_lanes(DEFAULT_LANES)
    program_h = window.program_panel.height_for_lines(DEFAULT_PROGRAM_LINES)
    total = editor.height() + window.schedule_dock.height()
    charts_h = CHARTS_ESTIMATE_PX
    if window.charts is not None:
        charts_h = window.summary.sizeHint().height() + window.charts.minimumSizeHint().height()
    tabs_min = _tabs_min_height(window)
    schedule_min = charts_h + tabs_min + 2 * editor.handleWidth() + DOCK_TITLE_PX
    schedule_h = max(total - lanes_h - program_h - editor.handleWidth(), schedule_min)
    window.resizeDocks([window.schedule_dock], [schedule_h], Qt.Orientation.Vertical)
    editor.setSizes([lanes_h, program_h])
    if window.schedule_splitter is not None:
        tabs_h = max(tabs_min, min(TABS_MAX_PX, schedule_h - schedule_min + tabs_min))
        window.schedule_splitter.setSizes([schedule_h - tabs_h, tabs_h])
    palette_dock = window.findChild(QDockWidget, "palette_dock")
    inspector_dock = window.findChild(QDockWidget, "inspector_dock")
    window.resizeDocks(
        [palette_dock, inspector_dock],
        [window.palette_widget.sizeHint().width(), max(320, inspector_dock.minimumWidth())],
        Qt.Orientation.Horizontal,
    )


def _tabs_min_height(window: Any) -> int:  # noqa: ANN401 - a MainWindow
    """The comparison table and insights strip: tab bar, note and a few rows."""
    return 3 * (window.table or window).fontMetrics().height() + 60


def compare_layout(window: Any) -> None:  # noqa: ANN401 - a MainWindow
    """Arrange a laid-out ``window`` to compare a simulated and a measured run.

    The editor shrinks to COMPARE_LANES lanes and COMPARE_PROGRAM_LINES program lines; the
    schedule dock gets the rest. In it the comparison table and insights move beside the
    charts (COMPARE_TABS_SHARE of the width), so that they have the dock's whole height, and
    the charts have it too: every row of both at least their minimum row height, time axes in
    view, any height left making the rows taller. Charts with more rows than fit scroll; the
    editor keeps its lanes.
    """
    editor = window.centralWidget()
    assert isinstance(editor, QSplitter)
    dock, splitter = window.schedule_dock, window.schedule_splitter
    dock.show()
    # the charts' least width grows once their legend and rows are filled in (a turn later)
    charts_least = max(splitter.widget(0).minimumSizeHint().width(), COMPARE_CHARTS_WIDTH)
    beside = splitter.width() - splitter.handleWidth() - charts_least >= COMPARE_TABS_WIDTH[0]
    if beside:
        splitter.setOrientation(Qt.Orientation.Horizontal)
    window.charts.share_height_equally()
    charts_h = window.summary.sizeHint().height() + window.charts.height_for_all_rows() + 2
    tabs = window.bottom_tabs
    # below the charts, the table's own minimum (a few rows) would push them off a short screen
    tabs_least = tabs.tabBar().sizeHint().height() + 2 * tabs.fontMetrics().height() + 12
    tabs.setMinimumHeight(0 if beside else tabs_least)
    if not dock.isFloating():  # a floating dock's height is the user's: only share it out
        lanes_h = window.lanes.height_for_lanes(COMPARE_LANES)
        program = window.program_panel
        program_h = max(
            program.height_for_lines(COMPARE_PROGRAM_LINES), program.minimumSizeHint().height()
        )
        total = editor.height() + dock.height()
        schedule_h = total - lanes_h - program_h - editor.handleWidth()
        window.resizeDocks([dock], [schedule_h], Qt.Orientation.Vertical)
        window.layout().activate()  # the splitters below share out the new heights
        # the lanes keep their few rows; the program panel below takes what the editor has left
        editor.setSizes([lanes_h, editor.height() - lanes_h - editor.handleWidth()])
    if beside:
        inside = splitter.width() - splitter.handleWidth()
        low, high = COMPARE_TABS_WIDTH
        tabs_w = max(low, min(high, int(COMPARE_TABS_SHARE * inside), inside - charts_least))
        splitter.setSizes([inside - tabs_w, tabs_w])
        return
    inside = splitter.height() - splitter.handleWidth()
    tabs_h = max(tabs_least, min(TABS_MAX_PX, inside - charts_h))
    splitter.setSizes([inside - tabs_h, tabs_h])


def save_arrangement(window: Any) -> dict[str, Any]:  # noqa: ANN401 - a MainWindow
    """The sizes that restore_arrangement puts back (the user's editing arrangement)."""
    return {
        "window": window.size(),
        "schedule": window.schedule_dock.height(),
        "editor": window.centralWidget().sizes(),
        "schedule_splitter": window.schedule_splitter.sizes(),
    }


def restore_arrangement(window: Any, saved: dict[str, Any] | None) -> None:  # noqa: ANN401
    """Put back what save_arrangement saved; the first-start layout if the window was resized
    in between (the old pixel sizes would no longer add up)."""
    window.schedule_splitter.setOrientation(Qt.Orientation.Vertical)  # the tabs below again
    window.bottom_tabs.setMinimumHeight(0)  # the table keeps a few rows again (its own minimum)
    if saved is None or saved["window"] != window.size():
        default_layout(window)
        return
    if not window.schedule_dock.isFloating():
        window.resizeDocks([window.schedule_dock], [saved["schedule"]], Qt.Orientation.Vertical)
        window.centralWidget().setSizes(saved["editor"])
    window.schedule_splitter.setSizes(saved["schedule_splitter"])


class CompareArrangement:
    """Switches a window between the user's editing arrangement and the compare layout,
    following a checkable action (View > Compare layout); unchecking puts the editing sizes
    back. Sizes only take once the window is laid out, and the charts' minimum heights follow
    new rows one event-loop turn later, so switching is queued, and several switches in a row
    arrange once."""

    def __init__(self, window: Any, action: QAction) -> None:  # noqa: ANN401 - a MainWindow
        self.window = window
        self.action = action
        self.applied = False  # whether the compare layout is what the window shows now
        self._editing: dict[str, Any] | None = None
        self._refit = False
        self._queued = False
        action.toggled.connect(lambda _on: self.arrange_soon())

    def is_on(self) -> bool:
        return self.action.isChecked()

    def set_compare(self, on: bool, *, refit: bool = False) -> None:
        """Check or uncheck the action; ``refit``: fit the compare layout again to the charts'
        rows even if it is on already (a new measurement)."""
        self._refit = self._refit or (refit and on)
        if self.action.isChecked() != on:
            self.action.setChecked(on)  # toggled: arranges soon
        else:
            self.arrange_soon()

    def arrange_soon(self) -> None:
        if not self._queued:
            self._queued = True
            QTimer.singleShot(0, self.window, self.arrange)

    def arrange(self) -> None:
        """Apply the arrangement the action asks for, if the window is shown."""
        self._queued = False
        if not self.window.isVisible():
            return  # the window's showEvent asks again
        want = self.is_on()
        if want and not self.applied:
            self._editing = save_arrangement(self.window)
        if want and (self._refit or not self.applied):
            compare_layout(self.window)
        elif not want and self.applied:
            restore_arrangement(self.window, self._editing)
        self.applied = want
        self._refit = False

    def editing_arrangement_now(self) -> None:
        """Put the editing sizes back at once (before the window saves its state on close, so
        that the next session starts from the editing arrangement)."""
        if self.applied:
            restore_arrangement(self.window, self._editing)
            self.window.layout().activate()
            self.applied = False
