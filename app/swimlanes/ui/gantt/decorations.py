"""Chart decorations: shaded row bands, dependency arrows and the legend bar."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen, QPixmap, QPolygonF
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from swimlanes.timeline.timeline import DEP_KINDS
from swimlanes.ui.style import OKABE_ITO

#: Arrow pens per dependency kind: colour and dash pattern.
DEP_STYLE: dict[str, tuple[str | None, Qt.PenStyle]] = {
    "stream": (None, Qt.PenStyle.SolidLine),  # None: the text colour
    "event": (OKABE_ITO["reddish_purple"], Qt.PenStyle.SolidLine),
    "default_stream": (OKABE_ITO["vermillion"], Qt.PenStyle.DashLine),
    "queue": (OKABE_ITO["orange"], Qt.PenStyle.DotLine),
    "host": (OKABE_ITO["blue"], Qt.PenStyle.DashDotLine),
    "flow": (OKABE_ITO["grey"], Qt.PenStyle.DashLine),
    "collective": (OKABE_ITO["bluish_green"], Qt.PenStyle.DotLine),
}
DEP_TITLE = {
    "stream": "stream order",
    "event": "event wait",
    "default_stream": "default-stream barrier",
    "queue": "shared queue",
    "host": "host waits",
    "flow": "flow",
    "collective": "collective call",
}


class RowBandsItem(pg.GraphicsObject):
    """Alternate rows shaded, so a bar's row reads at a glance across a wide chart."""

    def __init__(self) -> None:
        super().__init__()
        self.n_rows = 0
        self.colour = QColor(0, 0, 0, 14)
        self.setZValue(-10)

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        return QRectF(-1e12, 0, 2e12, max(self.n_rows, 1))

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: ANN001
        view = self.viewRect()
        if view is None:
            return
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(self.colour)
        for r in range(1, self.n_rows, 2):
            painter.drawRect(QRectF(view.left(), r, view.width(), 1.0))


class DependencyArrowsItem(pg.GraphicsObject):
    """Arrows between the selected ops and what they depend on, one pen per dependency kind."""

    def __init__(self) -> None:
        super().__init__()
        self.segments: list[tuple[float, float, float, float, int]] = []
        self.text_colour = QColor("#000000")
        self.setZValue(20)

    def set_segments(self, segments: list[tuple[float, float, float, float, int]]) -> None:
        self.prepareGeometryChange()
        self.segments = segments
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        if not self.segments:
            return QRectF()
        a = np.asarray(self.segments, np.float64)
        x0, x1 = min(a[:, 0].min(), a[:, 2].min()), max(a[:, 0].max(), a[:, 2].max())
        y0, y1 = min(a[:, 1].min(), a[:, 3].min()), max(a[:, 1].max(), a[:, 3].max())
        return QRectF(x0, y0 - 1, max(x1 - x0, 1e-3), y1 - y0 + 2)

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: ANN001
        t = painter.transform()
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        for x0, y0, x1, y1, k in self.segments:
            colour, dash = DEP_STYLE[DEP_KINDS[k]]
            c = QColor(colour) if colour else self.text_colour
            a, b = t.map(QPointF(x0, y0)), t.map(QPointF(x1, y1))
            painter.setPen(QPen(c, 1.8, dash))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            if abs(a.y() - b.y()) < 1:
                # same row: an arc over the bars, visible even between adjacent ops
                lift = max(abs(t.m22()) * 0.5, 8.0)
                a = QPointF(a.x() - 6, a.y() - lift * 0.7)
                b = QPointF(b.x() + 6, b.y() - lift * 0.7)
                path = QPainterPath(a)
                rise = QPointF(0, -lift)
                path.cubicTo(a + rise, b + rise, b)
                painter.drawPath(path)
                a = b + rise
            else:
                painter.drawLine(a, b)
            d = b - a
            length = max((d.x() ** 2 + d.y() ** 2) ** 0.5, 1e-6)
            ux, uy = d.x() / length, d.y() / length
            left = QPointF(b.x() - 9 * ux + 4 * uy, b.y() - 9 * uy - 4 * ux)
            right = QPointF(b.x() - 9 * ux - 4 * uy, b.y() - 9 * uy + 4 * ux)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(c)
            painter.drawPolygon(QPolygonF([b, left, right]))
        painter.restore()


def _swatch(colour: str, shape: str, dpr: float) -> QPixmap:
    """A 16x12 legend sample: a filled box, stripes of a palette ("a,b,c"), an outline or a
    line."""
    pm = QPixmap(round(16 * dpr), round(12 * dpr))
    pm.setDevicePixelRatio(dpr)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    if shape == "palette":  # one stripe per colour: kernels coloured by name
        colours = [QColor(c) for c in colour.split(",")[:4]]
        for i, c in enumerate(colours):
            p.fillRect(QRectF(i * 16 / len(colours), 0, 16 / len(colours) + 0.5, 12), c)
        p.setPen(QPen(colours[0].darker(130), 1))
        p.drawRect(QRectF(0.5, 0.5, 15, 11))
        p.end()
        return pm
    fill = QColor(colour)
    if shape == "box":
        p.setPen(QPen(fill.darker(130), 1))
        p.setBrush(fill)
        p.drawRect(QRectF(0.5, 0.5, 15, 11))
    elif shape == "outline":
        p.setPen(QPen(fill, 2))
        p.drawRect(QRectF(1, 1, 14, 10))
    else:
        p.setPen(QPen(fill, 2))
        p.drawLine(QPointF(0, 6), QPointF(16, 6))
    p.end()
    return pm


class LegendBar(QWidget):
    """A row of colour swatches: op categories, then arrow kinds and marks in use."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(4, 2, 4, 2)
        self._layout.setSpacing(12)
        self.entries: list[str] = []
        self._shown: list[tuple[str, str, str]] | None = None

    def set_entries(self, entries: list[tuple[str, str, str]]) -> None:
        """(text, colour, shape) with shape "box", "outline" or "line"."""
        entries = list(entries)
        if entries == self._shown:
            return  # refreshed after every edit: rebuilding widgets would re-lay out the dock
        self._shown = entries
        while self._layout.count():
            item = self._layout.takeAt(0)
            widget = item.widget()
            if widget is not None:
                widget.hide()
                widget.setParent(None)
                widget.deleteLater()
        self.entries = [e[0] for e in entries]
        for text, colour, shape in entries:
            swatch = QLabel()
            swatch.setPixmap(_swatch(colour, shape, self.devicePixelRatioF()))
            self._layout.addWidget(swatch)
            self._layout.addWidget(QLabel(text))
            self._layout.addSpacing(6)
        self._layout.addStretch(1)
