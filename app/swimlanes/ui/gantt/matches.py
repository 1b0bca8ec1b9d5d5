"""Search matches drawn on a chart: outlined, and with the filter on, every other bar veiled.

One GraphicsObject above the bars. The filter paints a veil in the background colour over
the chart, then the matching bars again at full colour (through the same :func:`draw_bars`
as the chart, so culling and level of detail hold at a million bars).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QPainter, QPen

from swimlanes.ui.gantt.bars import (
    BarGroup,
    BarStyle,
    GanttBarsItem,
    draw_bars,
    draw_marks,
    group_bars,
    op_label_getter,
)
from swimlanes.ui.gantt.rows import ChartRows
from swimlanes.ui.style import OKABE_ITO

#: Matches are outlined in this yellow between two dark lines, which reads on every bar
#: colour (the selection keeps a plain outline in the text colour).
MATCH_COLOUR = OKABE_ITO["yellow"]
MATCH_EDGE = "#202020"
#: How much of a non-matching bar the filter's veil hides (0-255).
VEIL_ALPHA = 200


class SearchMarksItem(pg.GraphicsObject):
    """The ops a search found on one chart (timeline rows), drawn over the chart's bars
    (``bars``: the chart's own, whose colouring the filter's redrawn matches follow)."""

    def __init__(self, bars: GanttBarsItem | None = None) -> None:
        super().__init__()
        self.bars = bars
        self.rows: ChartRows | None = None
        self.match_pen = QPen(QColor(MATCH_COLOUR), 2.0)
        self.edge_pen = QPen(QColor(MATCH_EDGE), 4.0)
        self.current_pen = QPen(QColor("#000000"), 3.0)
        self.veil = QColor(255, 255, 255, VEIL_ALPHA)
        self._bars = np.zeros(0, np.int64)
        self._current = np.zeros(0, np.int64)
        self._current_ops = np.zeros(0, np.int64)
        self._groups: list[BarGroup] = []
        self._mask: np.ndarray | None = None
        self._bar_mask = np.zeros(0, bool)
        self._by_name = False
        self._dim = False
        self._bounds = QRectF()

    def set_rows(self, rows: ChartRows | None) -> None:
        """The chart's rows changed. Rows of the same timeline (a group collapsed, a row
        pinned) keep the matches; another timeline's do not (the search runs again)."""
        same = rows is not None and self.rows is not None and rows.timeline is self.rows.timeline
        kept = (self._mask, self._dim, self._current_ops) if same else None
        self.prepareGeometryChange()
        self.rows = rows
        self._mask, self._bars, self._groups = None, np.zeros(0, np.int64), []
        self._current = self._current_ops = np.zeros(0, np.int64)
        n = float(len(rows.keys)) if rows is not None else 1.0
        if rows is not None and len(rows.bar_x0):
            x0, x1 = float(rows.bar_x0.min()), float(rows.bar_x1.max())
            self._bounds = QRectF(x0, 0.0, max(x1 - x0, 1e-3), n)
        else:
            self._bounds = QRectF()
        if kept is not None and kept[0] is not None:
            self.set_matches(*kept)
        else:
            self._dim = False
            self.update()

    def set_matches(
        self, op_mask: np.ndarray | None, dim: bool = False, current: np.ndarray | None = None
    ) -> None:
        """Outline the bars of the ops in ``op_mask`` (over timeline rows; None clears), veil
        the others when ``dim``, and outline the ``current`` ops (timeline rows) boldly."""
        rows = self.rows
        if rows is None or op_mask is None or len(op_mask) != len(rows.timeline or ()):
            self._mask, self._bars, self._groups, self._dim = None, np.zeros(0, np.int64), [], False
            self._current = self._current_ops = np.zeros(0, np.int64)
            self.update()
            return
        if op_mask is not self._mask or dim != self._dim:
            # stepping to another match passes the same mask: regroup only on a new search
            bar_mask = op_mask[rows.bar_op] if len(rows.bar_op) else np.zeros(0, bool)
            self._bars = np.flatnonzero(bar_mask)
            self._bar_mask, self._mask, self._dim = bar_mask, op_mask, dim
            self._regroup()
        cur = np.asarray(current if current is not None else [], np.int64)
        self._current_ops = cur
        self._current = np.flatnonzero(np.isin(rows.bar_op, cur)) if len(cur) else cur
        self.update()

    def _kernels_by_name(self) -> bool:
        return bool(self.bars is not None and self.bars.kernels_by_name)

    def _regroup(self) -> None:
        """The matching bars in the chart's colours, for the filter to draw over its veil."""
        self._by_name = self._kernels_by_name()
        self._groups = []
        if self._dim and self.rows is not None and len(self._bars):
            self._groups = group_bars(self.rows, self._bar_mask, kernels_by_name=self._by_name)

    def match_bar_count(self) -> int:
        """How many bars are outlined (tests, status)."""
        return len(self._bars)

    def is_dimming(self) -> bool:
        return self._dim

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        return self._bounds

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: ANN001
        view = self.viewRect()
        rows = self.rows
        if rows is None or view is None or not (len(self._bars) or self._dim):
            return
        if self._dim and self._by_name != self._kernels_by_name():
            self._regroup()  # View > Colour kernels by name changed under the filter
        t = painter.transform()
        x_map, y_map = (t.m11(), t.m31()), (t.m22(), t.m32())
        vis = (view.left(), view.right())
        painter.save()
        if self._dim:
            painter.fillRect(self._bounds.intersected(view), self.veil)
        painter.resetTransform()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        if self._groups:
            labels = op_label_getter(rows.timeline) if rows.timeline is not None else None
            style = BarStyle(labels=labels)
            draw_bars(painter, self._groups, vis, x_map, y_map, len(rows.keys), style)
        draw_marks(painter, rows, self._bars, vis, x_map, y_map, self.edge_pen)
        draw_marks(painter, rows, self._bars, vis, x_map, y_map, self.match_pen)
        draw_marks(painter, rows, self._current, vis, x_map, y_map, self.current_pen)
        painter.restore()
