"""Search over the charts: runs the query on each chart's timeline, steps through the matches
(centring and selecting each) and draws them, with the filter dimming everything else.

Matches are counted and stepped on the simulated chart's ops (the measured chart's when there
is no simulation), in time order; the measured chart outlines its own matches too, and the
op stepped to is selected in both charts and in the editor, like a click.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from PySide6.QtCore import QObject, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QWidget

from swimlanes.ui.gantt.chart import GanttChart
from swimlanes.ui.gantt.navigation import insert_after
from swimlanes.ui.gantt.search import (
    SearchQuery,
    match_ops,
    op_times_ns,
    ordered_matches,
    parse_query,
    prepare,
)
from swimlanes.ui.search_bar import SearchBar
from swimlanes.ui.style import OP_TITLE

if TYPE_CHECKING:
    from swimlanes.ui.gantt.navigation import ChartNavigation
    from swimlanes.ui.gantt.side_by_side import ComparisonCharts


class ChartSearch(QObject):
    """The search bar of a ComparisonCharts and what it finds."""

    def __init__(self, charts: ComparisonCharts, navigation: ChartNavigation) -> None:
        super().__init__(charts)
        self.charts = charts
        self.navigation = navigation
        self.bar = SearchBar()
        self.bar.hide()
        self._query = SearchQuery()
        self._text: str | None = None
        self._masks: dict[int, np.ndarray] = {}
        #: Timeline rows of the primary chart's matches, in time order.
        self._order = np.zeros(0, np.int64)
        self._current: int | None = None
        self._dim = False
        self.bar.query_changed.connect(self.set_query)
        self.bar.step_requested.connect(self.step)
        self.bar.filter_toggled.connect(self.set_filter)
        self.bar.close_requested.connect(self.close)
        navigation.on_escape = self._close_if_open

    # -- open and close ---------------------------------------------------------------------
    def open(self) -> None:
        """Show the bar with its field focused and its text selected (Ctrl+F)."""
        self.bar.show()
        self.bar.field.setFocus()
        self.bar.field.selectAll()
        if self._text is None:
            self.bar.flush()  # reopened: the text left in the field applies again
        # index the timelines while the user starts typing, not at the first search
        QTimer.singleShot(0, self._prepare)

    def _prepare(self) -> None:
        for chart in self._charts():
            prepare(chart.timeline)

    def is_open(self) -> bool:
        return not self.bar.isHidden()

    def close(self) -> None:
        """Hide the bar and its marks; the focus goes back to the chart."""
        had_focus = self.bar.isAncestorOf(self.bar.focusWidget() or self.bar)
        self.bar.hide()
        self._text = None
        self._query = SearchQuery()
        self._masks = {}
        self._order = np.zeros(0, np.int64)
        self._current = None
        self._draw()
        if had_focus:
            self.charts.simulated_chart.plot_widget.setFocus()

    def _close_if_open(self) -> bool:
        if not self.is_open():
            return False
        self.close()
        return True

    def add_actions(self, window: QWidget, menu: QMenu, after: QAction) -> list[QAction]:
        """Find (Ctrl+F), Find next (F3) and Find previous (Shift+F3) in ``menu`` after
        ``after``, with window-wide shortcuts."""
        entries = [
            ("&Find in charts...", "Ctrl+F", "Find ops in the charts", self.open),
            ("Find &next", "F3", "Go to the next match", lambda: self._step_from_menu(1)),
            (
                "Find pre&vious",
                "Shift+F3",
                "Go to the previous match",
                lambda: self._step_from_menu(-1),
            ),
        ]
        actions = []
        for text, key, tip, slot in entries:
            action = QAction(text, window)
            action.setShortcut(QKeySequence(key))
            action.setStatusTip(tip)
            action.triggered.connect(lambda _checked=False, s=slot: s())
            actions.append(action)
        separator = QAction(window)
        separator.setSeparator(True)  # the chart's view options follow
        insert_after(menu, after, [*actions, separator])
        return actions

    def _step_from_menu(self, direction: int) -> None:
        if not self.is_open():
            self.open()
        self.bar.request_step(direction)

    # -- query ------------------------------------------------------------------------------
    def set_query(self, text: str) -> None:
        """Search for ``text`` (see swimlanes.ui.gantt.search); stepping starts afresh."""
        if text == self._text:
            return  # the same query again (Enter after a pause): keep the current match
        self._text = text
        self._query = parse_query(text)
        self._current = None
        self.refresh()

    def refresh(self) -> None:
        """Search the charts' current timelines again (after a new result); the op stepped to
        stays current if it still matches."""
        keep = self.current_index()
        self._masks = {}
        for chart in self._charts():
            if chart.timeline is not None and not self._query.is_empty:
                self._masks[id(chart)] = match_ops(chart.timeline, self._query, OP_TITLE)
        primary = self._primary()
        mask = self._masks.get(id(primary)) if primary is not None else None
        tl = primary.timeline if primary is not None else None
        self._order = (
            ordered_matches(tl, mask)
            if tl is not None and mask is not None
            else (np.zeros(0, np.int64))
        )
        self._current = None
        if keep is not None and tl is not None:
            hit = np.flatnonzero(tl.index[self._order] == keep)
            self._current = int(hit[0]) if len(hit) else None
        self._draw()

    def set_filter(self, on: bool) -> None:
        """Dim the ops that do not match (the matches keep their colours)."""
        self._dim = bool(on)
        if self.bar.filter_button.isChecked() != self._dim:
            self.bar.filter_button.setChecked(self._dim)
        self._draw()

    # -- results ----------------------------------------------------------------------------
    def match_count(self) -> int:
        return len(self._order)

    def current_position(self) -> int | None:
        """Which match is current (from 0), None before the first step."""
        return self._current

    def current_index(self) -> int | None:
        """Program index of the match stepped to."""
        primary = self._primary()
        if self._current is None or primary is None or primary.timeline is None:
            return None
        return int(primary.timeline.index[self._order[self._current]])

    def matched_indexes(self, chart: GanttChart) -> list[int]:
        """Program indexes of the ops ``chart`` shows as matches."""
        mask = self._masks.get(id(chart))
        if mask is None or chart.timeline is None:
            return []
        return sorted(set(chart.timeline.index[mask].tolist()))

    def step(self, direction: int) -> bool:
        """Go to the next (+1) or previous (-1) match: centre it and select it. The first
        step goes to the first match from the left edge of the view (or the last before its
        right edge)."""
        n = len(self._order)
        primary = self._primary()
        if not n or primary is None or primary.timeline is None:
            self._draw()
            return False
        tl = primary.timeline
        start, end = op_times_ns(tl)
        if self._current is None:
            lo, hi = self.charts.x_range_ns()
            starts = start[self._order]
            if direction > 0:
                at = int(np.searchsorted(starts, lo, "left"))
                self._current = at if at < n else 0
            else:
                at = int(np.searchsorted(starts, hi, "right")) - 1
                self._current = at if at >= 0 else n - 1
        else:
            self._current = (self._current + direction) % n
        row = int(self._order[self._current])
        self.navigation.centre_on(int(start[row]), int(end[row]))
        self.charts.select_by_user([int(tl.index[row])])
        self._draw()
        return True

    # -- drawing ----------------------------------------------------------------------------
    def _charts(self) -> list[GanttChart]:
        return [self.charts.simulated_chart, self.charts.measured_chart]

    def _primary(self) -> GanttChart | None:
        for chart in self._charts():
            if chart.timeline is not None and len(chart.timeline):
                return chart
        return None

    def _draw(self) -> None:
        current = self.current_index()
        for chart in self._charts():
            mask = self._masks.get(id(chart))
            cur = None
            if current is not None and chart.timeline is not None:
                cur = np.flatnonzero(chart.timeline.index == current)
            chart.set_search_matches(mask, self._dim and mask is not None, cur)
        self.bar.set_count(self._current, len(self._order))
