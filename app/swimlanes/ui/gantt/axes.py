"""Chart axes: time in auto units (ns, µs, ms, s) and row titles."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen, QPixmap, QPolygonF

from swimlanes.ui.gantt.row_groups import GroupSpan

#: Width of the strip left of the row titles that shows the row groups (pixels).
GROUP_GUTTER_PX = 16


class TimeAxisItem(pg.AxisItem):
    """Bottom axis for values in µs from the timeline start, shown in s/ms/µs/ns as fits.

    pyqtgraph's SI-prefix scaling picks the unit once the µs values are scaled to seconds.
    """

    def __init__(self, **kwargs) -> None:  # noqa: ANN003 - forwarded to AxisItem
        super().__init__("bottom", **kwargs)
        self.setScale(1e-6)
        self.setLabel("time since start", units="s")

    def updateAutoSIPrefix(self) -> None:  # noqa: N802 - pyqtgraph's name
        # pyqtgraph scales to ms/µs only while the axis title shows; stacked charts hide the
        # upper one's title, and its ticks must still read in the same unit as the lower's.
        lo, hi = self.range
        value = max(abs(lo), abs(hi)) * self.scale
        scale, prefix = 1.0, ""
        if any(low <= value <= high for low, high in self.getSIPrefixEnableRanges()):
            scale, prefix = pg.functions.siScale(value, power=self.unitPower)
        self.autoSIPrefixScale = scale
        self.labelUnitPrefix = prefix
        self._updateLabel()


class RowAxisItem(pg.AxisItem):
    """Left axis with one title per row, centred on the row; no numbers, no grid.

    A strip on its left shows the row groups: a bracket with the group's name and a triangle
    per group (and the pinned rows). Clicking the strip, or a collapsed group's summary title,
    emits ``group_clicked(row)``; a right click on a title emits ``menu_requested(row, x, y)``
    (screen pixels).
    """

    group_clicked = Signal(int)
    menu_requested = Signal(int, int, int)

    def __init__(self, **kwargs) -> None:  # noqa: ANN003 - forwarded to AxisItem
        super().__init__("left", **kwargs)
        self.setStyle(tickLength=0, autoExpandTextSpace=False)
        self._titles: list[str] = []
        self._spans: list[GroupSpan] = []
        self.colour = QColor("#000000")
        self._gutter = QPixmap()
        self._gutter_key: tuple | None = None
        self._spans_version = 0

    def set_titles(self, titles: list[str]) -> None:
        self._titles = list(titles)
        self.setTicks([[(i + 0.5, t) for i, t in enumerate(self._titles)], []])

    def set_groups(self, spans: list[GroupSpan]) -> None:
        """The groups to draw in the strip (see ``row_groups.arrange_rows``)."""
        self._spans = list(spans)
        self._spans_version += 1
        self.update()

    def row_at(self, local_y: float) -> int | None:
        """The row at a y in this item's coordinates, if any."""
        view = self.linkedView()
        if view is None:
            return None
        y = view.mapSceneToView(self.mapToScene(QPointF(0.0, local_y))).y()
        row = math.floor(y)
        return row if 0 <= row < len(self._titles) else None

    def _row_y(self, row: float) -> float:
        view = self.linkedView()
        return self.mapFromScene(view.mapViewToScene(QPointF(0.0, row))).y()

    def span_of(self, row: int) -> GroupSpan | None:
        for span in self._spans:
            if span.first <= row < span.first + span.count:
                return span
        return None

    def paint(self, p: QPainter, opt, widget) -> None:  # noqa: ANN001
        super().paint(p, opt, widget)
        if self.linkedView() is None or not self._spans:
            return
        # drawn once per layout into a pixmap: each paint only copies it (the rows' places
        # change only with the groups or the axis' height: the view always shows every row)
        key = (self._spans_version, self.colour.rgba(), round(self.size().height()))
        if key != self._gutter_key:
            self._gutter_key = key
            dpr = widget.devicePixelRatioF() if widget is not None else 1.0
            height = max(int(self.size().height()) + 1, 1)
            self._gutter = QPixmap(round(GROUP_GUTTER_PX * dpr), round(height * dpr))
            self._gutter.setDevicePixelRatio(dpr)
            self._gutter.fill(Qt.GlobalColor.transparent)
            painter = QPainter(self._gutter)
            painter.setFont(p.font())
            self._paint_gutter(painter)
            painter.end()
        p.drawPixmap(0, 0, self._gutter)

    def _paint_gutter(self, p: QPainter) -> None:
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        font = QFont(p.font())
        font.setPointSizeF(max(font.pointSizeF() * 0.8, 6.0))
        p.setFont(font)
        fm = QFontMetricsF(font)
        for span in self._spans:
            if span.group != "pinned" and span.members < 2:
                continue  # nothing to collapse: no bracket
            self._paint_span(p, span, fm)

    def _paint_span(self, p: QPainter, span: GroupSpan, fm: QFontMetricsF) -> None:
        bottom = self._row_y(span.first + span.count)
        first_mid = self._row_y(span.first + 0.5)
        x = 4.0
        line = QColor(self.colour)
        line.setAlpha(150)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(self.colour)
        if span.group == "pinned":  # a pin head
            p.drawEllipse(QPointF(x + 3, first_mid), 3.0, 3.0)
        elif span.collapsed:  # ▸
            p.drawPolygon(
                QPolygonF(
                    [
                        QPointF(x, first_mid - 5),
                        QPointF(x + 7, first_mid),
                        QPointF(x, first_mid + 5),
                    ]
                )
            )
        else:  # ▾
            p.drawPolygon(
                QPolygonF(
                    [
                        QPointF(x - 1, first_mid - 3),
                        QPointF(x + 8, first_mid - 3),
                        QPointF(x + 3.5, first_mid + 4),
                    ]
                )
            )
        if span.count < 2:
            return
        p.setPen(QPen(line, 1.2))
        p.drawLine(QPointF(x + 3.5, first_mid + 7), QPointF(x + 3.5, bottom - 3))
        p.drawLine(QPointF(x + 3.5, bottom - 3), QPointF(x + 9, bottom - 3))
        # the group's name along the bracket, where there is room for it
        room = bottom - 6 - (first_mid + 9)
        text = span.title
        if fm.horizontalAdvance(text) + 4 <= room:  # whole or not at all
            p.save()
            p.translate(x + 3.5 + fm.ascent() / 2 - 1, first_mid + 9 + room / 2)
            p.rotate(-90)
            p.setPen(self.colour)
            bg = QRectF(
                -fm.horizontalAdvance(text) / 2 - 2,
                -fm.ascent(),
                fm.horizontalAdvance(text) + 4,
                fm.height(),
            )
            p.fillRect(bg, self._background())
            p.drawText(QPointF(-fm.horizontalAdvance(text) / 2, 0), text)
            p.restore()

    def _background(self) -> QColor:
        view = self.linkedView()
        widget = view.getViewWidget() if view is not None else None
        if widget is not None:
            return widget.backgroundBrush().color()
        return QColor("#FFFFFF")

    def mouseClickEvent(self, event) -> None:  # noqa: ANN001, N802 - Qt override
        row = self.row_at(event.pos().y())
        if row is None:
            super().mouseClickEvent(event)
            return
        if event.button() == Qt.MouseButton.RightButton:
            event.accept()
            pos = event.screenPos()
            self.menu_requested.emit(row, round(pos.x()), round(pos.y()))
            return
        span = self.span_of(row)
        in_gutter = event.pos().x() < GROUP_GUTTER_PX
        on_summary = span is not None and span.collapsed
        if (
            event.button() == Qt.MouseButton.LeftButton
            and span is not None
            and (in_gutter or on_summary)
        ):
            event.accept()
            self.group_clicked.emit(row)
            return
        super().mouseClickEvent(event)
