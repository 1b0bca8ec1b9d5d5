"""Chart items of multi-device timelines: the connectors that join one collective's bars."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen

from swimlanes.ui.gantt.bars import BAR_HEIGHT, BAR_TOP
from swimlanes.ui.gantt.rows import ChartRows
from swimlanes.ui.style import CATEGORY_COLOUR

#: The legend's entry for the connectors.
COLLECTIVE_LEGEND = "one collective across devices"
#: Connectors drawn at most per paint (a zoomed-out chart of thousands of collectives).
MAX_CONNECTORS = 4000


class CollectiveLinksItem(pg.GraphicsObject):
    """Thin vertical lines at the start and the end of each collective instance, from its bar
    on the first participating device's stream row to its bar on the last one's, so that the
    ops of one all-reduce read as one thing across the devices' rows."""

    def __init__(self) -> None:
        super().__init__()
        self.colour = QColor(CATEGORY_COLOUR["Collective"]).darker(130)
        self.connectors = np.zeros((0, 4))
        self.last_drawn = 0
        self._bounds = QRectF()
        self.setZValue(4)  # over the bars, under the overlay and the selection

    def set_rows(self, rows: ChartRows | None) -> None:
        self.prepareGeometryChange()
        self.connectors = rows.collectives if rows is not None else np.zeros((0, 4))
        c = self.connectors
        if len(c):
            x0, x1 = float(c[:, 0].min()), float(c[:, 1].max())
            y0, y1 = float(c[:, 2].min()), float(c[:, 3].max()) + 1.0
            self._bounds = QRectF(x0, y0, max(x1 - x0, 1e-3), y1 - y0)
        else:
            self._bounds = QRectF()
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        return self._bounds

    def visible(self, view: tuple[float, float]) -> np.ndarray:
        """The connectors that touch the time range ``view`` (µs), at most MAX_CONNECTORS."""
        c = self.connectors
        if not len(c):
            return c
        return c[(c[:, 1] >= view[0]) & (c[:, 0] <= view[1])][:MAX_CONNECTORS]

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: ANN001
        view = self.viewRect()
        self.last_drawn = 0
        if view is None or not len(self.connectors):
            return
        shown = self.visible((view.left(), view.right()))
        if not len(shown):
            return
        t = painter.transform()
        painter.save()
        painter.resetTransform()
        draw_connectors(painter, shown, (t.m11(), t.m31()), (t.m22(), t.m32()), self.colour)
        painter.restore()
        self.last_drawn = len(shown)


def draw_connectors(
    painter: QPainter,
    connectors: np.ndarray,
    x_map: tuple[float, float],
    y_map: tuple[float, float],
    colour: QColor,
) -> None:
    """Paint collective connectors (x0, x1, top row, bottom row) in pixel coordinates: a line
    at the start and one at the end of each, from under the top bar to over the bottom one.
    The painter must have no transform other than pixels (the chart and exported images)."""
    if not len(connectors):
        return
    sx, dx = x_map
    sy, dy = y_map
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
    pen = QPen(colour, 2.0)
    pen.setCapStyle(Qt.PenCapStyle.FlatCap)
    painter.setPen(pen)
    top = (connectors[:, 2] + BAR_TOP + BAR_HEIGHT) * sy + dy
    bottom = (connectors[:, 3] + BAR_TOP) * sy + dy
    lines = []
    for x0, x1, y0, y1 in zip(
        (connectors[:, 0] * sx + dx).tolist(),
        (connectors[:, 1] * sx + dx).tolist(),
        top.tolist(),
        bottom.tolist(),
        strict=True,
    ):
        lines.append(QLineF(x0 + 1, y0, x0 + 1, y1))
        if x1 - x0 >= 4:
            lines.append(QLineF(x1 - 1, y0, x1 - 1, y1))
    painter.drawLines(lines)
