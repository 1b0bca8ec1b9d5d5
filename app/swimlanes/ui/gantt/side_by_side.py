"""Simulated above measured: the same rows in the same order on one linked time axis.

pyqtgraph's ``setXLink`` aligns views by their screen geometry, so both charts get the same
fixed left-axis width and live in one vertical splitter (same width); then a time is at the
same pixel column in both. The splitter scrolls vertically when the rows would otherwise get
thinner than the charts' minimum row height, and one legend above both covers both.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QSplitter, QVBoxLayout, QWidget

from swimlanes.timeline.timeline import Timeline
from swimlanes.ui.gantt.chart import GanttChart
from swimlanes.ui.gantt.chart_search import ChartSearch
from swimlanes.ui.gantt.decorations import LegendBar
from swimlanes.ui.gantt.device_rows import row_devices
from swimlanes.ui.gantt.navigation import ChartNavigation
from swimlanes.ui.gantt.rows import timeline_row_keys
from swimlanes.ui.style import OKABE_ITO


def simulated_title(tl: Timeline | None) -> str:
    return f"Simulated — {tl.device or 'unknown device'}" if tl is not None else "Simulated"


def measured_title(tl: Timeline | None) -> str:
    if tl is None:
        return "Measured"
    backend = tl.meta.get("backend")
    device = tl.device or "unknown device"
    return f"Measured — {device} ({backend})" if backend else f"Measured — {device}"


#: The schedule keeps room for this many rows of the simulated chart; more rows scroll.
UNSCROLLED_ROWS = 12
_SHAPE_ORDER = {"box": 0, "outline": 1, "line": 2}


def merged_legend(*entry_lists: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """One legend for several charts: each entry once, colours first, then marks and arrows."""
    seen: dict[str, tuple[str, str, str]] = {}
    for entries in entry_lists:
        for entry in entries:
            seen.setdefault(entry[0], entry)
    return sorted(seen.values(), key=lambda e: _SHAPE_ORDER.get(e[2], 3))


def union_rows(*timelines: Timeline | None) -> list[str]:
    """Rows of all timelines, first one's order first, then rows only the others have."""
    keys: list[str] = []
    for tl in timelines:
        if tl is None:
            continue
        for k in timeline_row_keys(tl)[0]:
            if k not in keys:
                keys.append(k)
    # the SM occupancy row stays last, below the engines
    if "compute" in keys:
        keys.remove("compute")
        keys.append("compute")
    return keys


class _Pane(QWidget):
    def __init__(self, chart: GanttChart) -> None:
        super().__init__()
        self.title = QLabel()
        self.title.setStyleSheet("font-weight: bold; padding: 2px 4px;")
        # Says why the chart below is faded: it is not the schedule of the document any more.
        self.problem = QLabel()
        self.problem.setObjectName("chart_problem")
        self.problem.setWordWrap(True)
        self.problem.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.problem.setStyleSheet(
            f"background: {OKABE_ITO['vermillion']}; color: white; padding: 3px 6px;"
        )
        self.problem.hide()
        self.chart = chart
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addWidget(self.title)
        box.addWidget(self.problem)
        box.addWidget(chart, 1)


class ComparisonCharts(QWidget):
    """Two linked Gantt charts; selection, flags and the play cursor apply to both."""

    selection_changed = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.simulated_chart = GanttChart()
        self.measured_chart = GanttChart()
        self._sim_pane = _Pane(self.simulated_chart)
        self._meas_pane = _Pane(self.measured_chart)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(self._sim_pane)
        self.splitter.addWidget(self._meas_pane)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 1)
        # Rows keep their minimum height: when both charts do not fit, scroll instead.
        self.scroll_area = QScrollArea()
        self.scroll_area.setWidget(self.splitter)
        self.scroll_area.setWidgetResizable(True)
        self.scroll_area.setFrameShape(QFrame.Shape.NoFrame)
        self.scroll_area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.legend = LegendBar()
        for chart in (self.simulated_chart, self.measured_chart):
            chart.legend.hide()
            chart.legend_changed.connect(self._update_legend)
        box = QVBoxLayout(self)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(0)
        box.addWidget(self.legend)
        box.addWidget(self.scroll_area, 1)
        self.measured_chart.plot_item.setXLink(self.simulated_chart.plot_item)
        # collapsed groups and pinned rows are shared: both charts keep the same rows
        self.measured_chart.share_row_groups_with(self.simulated_chart)
        self._simulated: Timeline | None = None
        self._measured: Timeline | None = None
        self._overlay = False
        # The time axis follows each new result (shows it whole) until the user zooms or pans.
        self._follows_data = True
        self._awaits_first = True
        for chart in (self.simulated_chart, self.measured_chart):
            chart.view_changed_by_user.connect(self._on_user_view)
        self.simulated_chart.selection_changed.connect(self._from_simulated)
        self.measured_chart.selection_changed.connect(self._from_measured)
        self._meas_pane.hide()
        self._retitle()
        self._update_legend()
        # keys from anywhere in the window, zoom history, and search (Ctrl+F) over the charts
        self.navigation = ChartNavigation(self)
        self.search = ChartSearch(self, self.navigation)
        box.insertWidget(0, self.search.bar)

    # -- data -------------------------------------------------------------------------------------
    def set_simulated(self, tl: Timeline | None, *, refit: bool = False) -> None:
        """Show a new simulated schedule; it clears a failure shown by
        :meth:`set_simulation_problem`. The axis refits to the first schedule of a document,
        and to one with ``refit`` (a result that took a while), unless the user has zoomed
        since; an edit's quick result keeps the view where the user is looking."""
        self._simulated = tl
        self.set_simulation_problem(None)
        if self._follows_data and (refit or self._awaits_first):
            self.fit_all()  # first: the chart then draws once, at its new range
        self._awaits_first = tl is None
        self.simulated_chart.set_timeline(tl)
        self._sync_rows()
        self._update_overlay()
        self._retitle()
        self.search.refresh()

    def set_simulation_problem(self, message: str | None) -> None:
        """Fade the simulated schedule and say why (a failed or stopped simulation), or None
        when the schedule shown is current again."""
        self._sim_pane.problem.setText(message or "")
        self._sim_pane.problem.setVisible(bool(message))
        self.simulated_chart.set_greyed(bool(message))

    def simulation_problem(self) -> str:
        """The reason shown over a stale simulated schedule ("" when it is current)."""
        return self._sim_pane.problem.text() if self.simulated_chart.is_greyed() else ""

    def reset_view(self) -> None:
        """Another document: no ruler, cursor or failure left over, and the axis follows the
        next results again."""
        for chart in (self.simulated_chart, self.measured_chart):
            chart.clear_ruler()
            chart.set_cursor(None)
        self.set_simulation_problem(None)
        self._follows_data = True
        self._awaits_first = True
        self.navigation.clear_history()

    def follows_data(self) -> bool:
        """Whether new results refit the time axis (until the user zooms or pans)."""
        return self._follows_data

    def _on_user_view(self, whole: bool) -> None:
        self._follows_data = whole

    def set_measured(self, tl: Timeline | None) -> None:
        """Show a measured run under the simulation (None hides the measured chart)."""
        first = self._measured is None and tl is not None
        self._measured = tl
        self.measured_chart.set_timeline(tl)
        self._meas_pane.setVisible(tl is not None)
        # stacked charts on one time axis: the axis title once, under the lower chart
        self.simulated_chart.set_time_axis_title_shown(tl is None)
        self._sync_rows()
        self._update_overlay()
        self._retitle()
        self._update_legend()
        self.search.refresh()
        if first:
            self.fit_all()

    def set_stream_info(self, info: dict[str, dict] | None) -> None:
        """Stream kinds and priorities for the row titles of both charts."""
        self.simulated_chart.set_stream_info(info)
        self.measured_chart.set_stream_info(info)
        self._sync_rows()

    def simulated(self) -> Timeline | None:
        return self._simulated

    def measured(self) -> Timeline | None:
        return self._measured

    def _sync_rows(self) -> None:
        rows = union_rows(self._simulated, self._measured)
        devices = {**row_devices(self._measured), **row_devices(self._simulated)}
        for chart in (self.simulated_chart, self.measured_chart):
            chart.set_row_devices(devices)
            chart.set_row_layout(rows)
        width = max(
            self.simulated_chart.preferred_left_axis_width(),
            self.measured_chart.preferred_left_axis_width(),
            90,
        )
        self.simulated_chart.left_axis_width = width
        self.measured_chart.left_axis_width = width
        # The simulated chart of a usual pipeline never scrolls (its time axis stays in view):
        # the surrounding layout must give it its rows' minimum height; the measured one below
        # may scroll, and so do the rows of pipelines with very many streams.
        # (computed here: the panes' layouts update their minimum size hints only later)
        title_h = self._sim_pane.title.sizeHint().height()
        plot_h = self.simulated_chart.minimum_plot_height(max_rows=UNSCROLLED_ROWS)
        self.scroll_area.setMinimumHeight(title_h + plot_h)

    def height_for_all_rows(self) -> int:
        """Height that shows every row of the shown charts at their minimum row height, with
        their time axes, the titles and the legend, without scrolling (layout arrangements)."""
        title_h = self._sim_pane.title.sizeHint().height()
        legend_h = 0
        if not self.legend.isHidden() and self.legend.entries:
            # one line; its labels may not be shown (counted in its size hint) until later
            legend_h = max(self.legend.sizeHint().height(), self.fontMetrics().height() + 4)
        height = legend_h + title_h + self.simulated_chart.minimum_plot_height()
        if self._measured is not None:
            height += self.splitter.handleWidth() + title_h
            height += self.measured_chart.minimum_plot_height()
        return height

    def share_height_equally(self) -> None:
        """Give the simulated and the measured chart the same row height (the lower one also
        has the time axis' title)."""
        total = sum(self.splitter.sizes())
        if self._measured is None or total <= 0:
            return
        extra = self.measured_chart.minimum_plot_height()
        extra -= self.simulated_chart.minimum_plot_height()
        upper = (total - extra) // 2
        self.splitter.setSizes([upper, total - upper])

    def _update_legend(self, *_args: object) -> None:
        charts = [self.simulated_chart]
        if self._measured is not None:
            charts.append(self.measured_chart)
        self.legend.set_entries(merged_legend(*(c.legend_items for c in charts)))

    def _retitle(self) -> None:
        self._sim_pane.title.setText(simulated_title(self._simulated))
        self._meas_pane.title.setText(measured_title(self._measured))

    # -- selection, flags, overlay, cursor --------------------------------------------------------
    def _from_simulated(self, indexes: list) -> None:
        self.measured_chart.set_selection(indexes)
        self.selection_changed.emit(list(indexes))

    def _from_measured(self, indexes: list) -> None:
        self.simulated_chart.set_selection(indexes)
        self.selection_changed.emit(list(indexes))

    def set_selection(self, indexes: list[int]) -> None:
        self.simulated_chart.set_selection(indexes)
        self.measured_chart.set_selection(indexes)

    def select_by_user(self, indexes: list[int]) -> None:
        """Select ops as a click would: in both charts, and tell the editor."""
        self.set_selection(indexes)
        self.selection_changed.emit(list(indexes))

    def selection(self) -> list[int]:
        return self.simulated_chart.selection()

    def set_flags(self, indexes: list[int]) -> None:
        """Mark ops (program indexes) whose measurement differs from the model."""
        self.simulated_chart.set_flags(indexes)
        self.measured_chart.set_flags(indexes)

    def set_overlay_enabled(self, on: bool) -> None:
        """Outline the simulated spans on the measured chart."""
        self._overlay = bool(on)
        self._update_overlay()

    def _update_overlay(self) -> None:
        self.measured_chart.set_overlay(self._simulated if self._overlay else None)

    def set_cursor(self, t_ns: int | None) -> None:
        self.simulated_chart.set_cursor(t_ns)
        self.measured_chart.set_cursor(t_ns)

    def fit_all(self) -> None:
        """Show the longer of the two runs whole (and follow later results again)."""
        self._follows_data = True
        spans = [tl.makespan_ns for tl in (self._simulated, self._measured) if tl is not None]
        span = max(spans) if spans and max(spans) > 0 else 1000
        pad = span // 50
        self.simulated_chart.set_x_range_ns(-pad, span + pad)

    def x_range_ns(self) -> tuple[int, int]:
        return self.simulated_chart.x_range_ns()

    def set_x_range_ns(self, t0: int, t1: int) -> None:
        self.simulated_chart.set_x_range_ns(t0, t1)

    def set_x_range_by_user(self, t0: int, t1: int) -> None:
        """Show [t0, t1] as the user's choice: new results no longer refit the axis."""
        self._follows_data = False
        self.simulated_chart.set_x_range_ns(t0, t1)
