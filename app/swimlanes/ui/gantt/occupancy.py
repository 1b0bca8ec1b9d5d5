"""The "Compute (SMs)" rows: SM occupancy over time, drawn as a filled step area.

A zoomed-out view has far more occupancy steps than pixel columns (20 million steps for a
10-million-op run), so each column shows its peak (short bursts stay visible). Working the
peaks out from every step took 36 ms of a 40 ms repaint at 1e7 ops; :class:`StepPeaks` keeps,
per track, the peak of every block of :data:`PEAK_BLOCK` steps, and a view with at least two
blocks per pixel column is binned from those instead (a block is counted in the column where
it starts, so a peak can move by at most one column).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QPainter, QPen

from swimlanes.ui.gantt.bars import BAR_HEIGHT, BAR_TOP
from swimlanes.ui.gantt.rows import ChartRows, OccupancyTrack
from swimlanes.ui.style import CATEGORY_COLOUR

#: Steps per block of the peak table.
PEAK_BLOCK = 256


@dataclass(frozen=True)
class StepPeaks:
    """Per block of ``PEAK_BLOCK`` steps of one track: its first step's time and its peak."""

    x: np.ndarray
    peak: np.ndarray

    @classmethod
    def of(cls, track: OccupancyTrack) -> StepPeaks:
        starts = np.arange(0, len(track.x), PEAK_BLOCK)
        return cls(track.x[starts], np.maximum.reduceat(track.frac, starts))


def _peaks(track: OccupancyTrack) -> StepPeaks:
    """The track's peak table, made on first use and kept on the track."""
    if track.peaks is None:
        track.peaks = StepPeaks.of(track)
    peaks: StepPeaks = track.peaks
    return peaks


def draw_occupancy(
    painter: QPainter,
    rows: ChartRows,
    view: tuple[float, float],
    x_map: tuple[float, float],
    y_map: tuple[float, float],
    colour: QColor,
) -> None:
    """SM occupancy as a filled step area in each compute row (pixel-binned when dense)."""
    for track in rows.occupancy:
        _draw_track(painter, track, view, x_map, y_map, colour)


def _visible_steps(
    track: OccupancyTrack, view: tuple[float, float], x_map: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """Pixel x and level of the steps to draw: every step in view, or each pixel column's
    peak where the view holds more than two steps per column."""
    sx, dx = x_map
    columns = max(abs(sx * (view[1] - view[0])), 1)
    x, f = track.x, track.frac
    lo = max(int(np.searchsorted(x, view[0], "right")) - 1, 0)
    hi = min(int(np.searchsorted(x, view[1], "right")) + 1, len(x))
    if hi - lo > 4 * PEAK_BLOCK * columns:  # dense enough to bin whole blocks
        peaks = _peaks(track)
        lo, hi = lo // PEAK_BLOCK, -(-hi // PEAK_BLOCK)
        x, f = peaks.x, peaks.peak
    px, val = x[lo:hi] * sx + dx, f[lo:hi]
    if len(px) > 2 * columns:
        # dense: keep each pixel column's peak so short bursts stay visible
        col = np.floor(px).astype(np.int64)
        starts = np.flatnonzero(np.concatenate(([True], col[1:] != col[:-1])))
        px = col[starts].astype(np.float64)
        val = np.maximum.reduceat(val, starts)
    return px, val


def _draw_track(
    painter: QPainter,
    track: OccupancyTrack,
    view: tuple[float, float],
    x_map: tuple[float, float],
    y_map: tuple[float, float],
    colour: QColor,
) -> None:
    if len(track.x) < 1:
        return
    sy, dy = y_map
    px, val = _visible_steps(track, view, x_map)
    base = (track.row + BAR_TOP + BAR_HEIGHT) * sy + dy
    full = (track.row + BAR_TOP) * sy + dy
    level = base + (full - base) * val
    # a step: each value holds until the next time
    xs = np.repeat(px, 2)[1:]
    ys = np.repeat(level, 2)[:-1]
    xs = np.concatenate(([px[0]], xs, [xs[-1]]))
    ys = np.concatenate(([base], ys, [base]))
    polygon = pg.functions.arrayToQPolygonF(xs, ys)
    fill = QColor(colour)
    fill.setAlpha(200)
    painter.setBrush(fill)
    painter.setPen(QPen(colour.darker(130), 1))
    painter.drawPolygon(polygon)


class OccupancyItem(pg.GraphicsObject):
    """The "Compute (SMs)" rows (one per device): SM occupancy over time as a step area."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: ChartRows | None = None
        self.colour = QColor(CATEGORY_COLOUR["Kernel"])
        self._bounds = QRectF()

    def set_rows(self, rows: ChartRows | None) -> None:
        self.prepareGeometryChange()
        self.rows = rows
        self._bounds = QRectF()
        for track in rows.occupancy if rows is not None else []:
            if len(track.x):
                x0, x1 = float(track.x[0]), float(track.x[-1])
                self._bounds |= QRectF(x0, track.row, max(x1 - x0, 1e-3), 1.0)
        self.update()

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        return self._bounds

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: ANN001
        view = self.viewRect()
        if self.rows is None or view is None:
            return
        t = painter.transform()
        painter.save()
        painter.resetTransform()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        draw_occupancy(
            painter,
            self.rows,
            (view.left(), view.right()),
            (t.m11(), t.m31()),
            (t.m22(), t.m32()),
            self.colour,
        )
        painter.restore()
