"""The prediction band in the window: computed in a worker after each simulation is shown,
drawn on the simulated chart (a translucent region over the makespan's band and a whisker per
op end), summarised beside the summary strip, with the measurement's verdict: in full where
there is room, else in a shorter form (band_forms), never clipped; the full sentence is always
in the line's tooltip.

Never stale: an edit, another device, another document or a failed simulation removes the band
at once; the next simulation starts a new one (engine.bands, seeded, so the same document and
preset always give the same band).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, QPointF, QRectF, Signal
from PySide6.QtGui import QColor, QPainter, QPen
from PySide6.QtWidgets import QSizePolicy

from swimlanes.model.document import Pipeline
from swimlanes.timeline.timeline import NO_TIME, Timeline
from swimlanes.ui.fitted_label import FittedLabel
from swimlanes.ui.gantt.rows import format_duration
from swimlanes.ui.workers import TaskRunner

_FILL = QColor(70, 130, 220, 45)
_WHISKER = QColor(70, 130, 220, 200)


def band_text(band: Any, makespan_ns: int, measured: Timeline | None = None) -> str:
    """ "Makespan 7.40 ms, 80% of sampled runs between 7.10 and 7.90 ms" (or "90% likely ..."
    with a fitted model error), and whether ``measured`` fell inside."""
    lo, hi = format_duration(band.makespan_low), format_duration(band.makespan_high)
    what = "likely" if band.model_error else "of sampled runs"
    text = (
        f"Makespan {format_duration(makespan_ns)}, {band.level_pct}% {what} between {lo} and {hi}"
    )
    if measured is not None:
        inside = band.contains(measured.makespan_ns)
        verdict = "inside" if inside else "outside"
        text += f"\nmeasured {format_duration(measured.makespan_ns)}: {verdict} the band"
    return text


def _span(lo_ns: int, hi_ns: int) -> str:
    """ "42.5–55.3 ms", or "950 us–1.05 ms" when the two ends need different units."""
    lo, hi = format_duration(lo_ns), format_duration(hi_ns)
    lo_value, _, lo_unit = lo.partition(" ")
    return f"{lo_value}–{hi}" if hi.endswith(f" {lo_unit}") else f"{lo}–{hi}"


def band_forms(band: Any, makespan_ns: int, measured: Timeline | None = None) -> list[str]:
    """The band's line from the fullest form to the most compact, for a FittedLabel:
    :func:`band_text`; "Makespan 7.40 ms (80% of runs 7.10–7.90 ms)" and "measured 7.60 ms:
    inside"; "7.40 ms (80%: 7.10–7.90 ms)" and "measured inside"."""
    span, what = (
        _span(band.makespan_low, band.makespan_high),
        ("likely" if band.model_error else "of runs"),
    )
    makespan = format_duration(makespan_ns)
    compact = f"Makespan {makespan} ({band.level_pct}% {what} {span})"
    tiny = f"{makespan} ({band.level_pct}%: {span})"
    if measured is not None:
        verdict = "inside" if band.contains(measured.makespan_ns) else "outside"
        compact += f"\nmeasured {format_duration(measured.makespan_ns)}: {verdict}"
        tiny += f"\nmeasured {verdict}"
    return [band_text(band, makespan_ns, measured), compact, tiny]


class BandItem(pg.GraphicsObject):
    """The makespan band (a translucent region over every row) and per-op end whiskers."""

    def __init__(self) -> None:
        super().__init__()
        self.setZValue(4)
        self._region: tuple[float, float] | None = None
        self._whiskers: list[tuple[float, float, float]] = []  # (x0, x1, y) in us and rows
        self.n_rows = 1

    def set_band(self, band: Any, row_of_op: np.ndarray, n_rows: int, t0_ns: int = 0) -> None:
        """Show ``band``; ``row_of_op`` is each op's chart row (-1: none), x counts from
        ``t0_ns`` as the chart's bars do."""
        self.prepareGeometryChange()
        self.n_rows = max(1, n_rows)
        self._region = ((band.makespan_low - t0_ns) / 1000.0, (band.makespan_high - t0_ns) / 1000.0)
        self._whiskers = []
        for i in np.flatnonzero((band.end_low != NO_TIME) & (row_of_op >= 0)).tolist():
            y = float(row_of_op[i]) + 0.5
            lo, hi = int(band.end_low[i]) - t0_ns, int(band.end_high[i]) - t0_ns
            self._whiskers.append((lo / 1000.0, hi / 1000.0, y))
        self.update()

    def clear(self) -> None:
        self.prepareGeometryChange()
        self._region, self._whiskers = None, []
        self.update()

    def is_shown(self) -> bool:
        return self._region is not None

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt override
        if self._region is None:
            return QRectF()
        x0 = min([self._region[0], *(w[0] for w in self._whiskers)])
        x1 = max([self._region[1], *(w[1] for w in self._whiskers)])
        return QRectF(x0, 0.0, max(x1 - x0, 1e-6), float(self.n_rows))

    def paint(self, painter: QPainter, option, widget=None) -> None:  # noqa: ANN001
        if self._region is None:
            return
        x0, x1 = self._region
        painter.fillRect(QRectF(x0, 0.0, x1 - x0, float(self.n_rows)), _FILL)
        pen = QPen(_WHISKER)
        pen.setCosmetic(True)
        pen.setWidthF(1.5)
        painter.setPen(pen)
        for a, b, y in self._whiskers:
            painter.drawLine(QPointF(a, y), QPointF(b, y))


class PredictionBand(QObject):
    """Runs engine.bands in a worker for the shown simulation and shows the result.

    ``chart`` is the simulated GanttChart; ``label`` is the summary line's QLabel.
    Signal ``changed()`` after the band appears or disappears.
    """

    changed = Signal()

    def __init__(self, chart: Any, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.chart = chart
        self.band: Any = None
        self.label = FittedLabel()
        self.label.setObjectName("prediction_band")
        # Beside the summary strip: it fits its text into the strip's height, never adds any.
        self.label.setMaximumWidth(480)
        # apart from the strip's last column, which a narrow window cuts off mid-text
        self.label.setContentsMargins(8, 0, 0, 0)
        self.label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Ignored)
        self.label.hide()
        self.item = BandItem()
        chart.plot_item.addItem(self.item, ignoreBounds=True)
        self._timeline: Timeline | None = None
        self._measured: Timeline | None = None
        self._tasks = TaskRunner(self)
        self._tasks.finished.connect(self._on_done)
        self._tasks.failed.connect(self._on_failed)
        # whiskers sit on stream rows: follow them when groups collapse or rows are pinned
        chart.rows_changed.connect(self._follow_rows)

    def request(self, pipeline: Pipeline, device: Any, timeline: Timeline) -> None:
        """Drop the shown band and compute the one of ``timeline`` (just simulated)."""
        self.clear()
        if len(timeline) != len(pipeline.program):
            return
        from swimlanes.engine.bands import simulate_band

        self._timeline = timeline
        snapshot = pipeline.copy()  # the worker must not see later edits half-applied

        def work(progress: Any, cancel: Any) -> Any:
            return simulate_band(snapshot, device, progress=progress, cancel=cancel)

        self._tasks.start(work)

    def clear(self) -> None:
        """Remove the band now (its document, device or simulation changed)."""
        self._tasks.cancel()
        was_shown = self.band is not None or self.item.is_shown()
        self.band, self._timeline = None, None
        self.item.clear()
        self.label.hide()
        self.label.set_forms([])
        if was_shown:
            self.changed.emit()

    def set_measured(self, measured: Timeline | None) -> None:
        """The measurement of this pipeline (None: none, or of another pipeline)."""
        self._measured = measured
        self._show_text()

    def is_busy(self) -> bool:
        return self._tasks.is_busy()

    def _on_done(self, band: Any) -> None:
        tl = self._timeline
        if tl is None:
            return
        self.band = band
        rows = self.chart.rows_model
        stream_rows = [rows.row_of(f"stream:{name}") for name in tl.stream_names]
        row_of_op = np.array(
            [stream_rows[s] if s >= 0 and stream_rows[s] is not None else -1 for s in tl.stream],
            dtype=np.int64,
        )
        self.item.set_band(band, row_of_op, len(rows.keys), int(getattr(rows, "t0", 0)))
        self._show_text()
        self.changed.emit()

    def _follow_rows(self) -> None:
        if self.band is not None and self._timeline is not None:
            self._on_done(self.band)

    def _on_failed(self, err: object) -> None:
        # the whole reason where it fits, and always in the tooltip
        self.label.set_forms([f"No prediction band: {err}", "No prediction band"], reflow_full=True)
        self.label.show()

    def _show_text(self) -> None:
        if self.band is None or self._timeline is None:
            return
        self.label.set_forms(
            band_forms(self.band, self._timeline.makespan_ns, self._measured),
            f"{self.band.samples} simulations with the device preset's run-to-run spread "
            f"(seed {self.band.seed}); the band is their p10..p90"
            + (
                ", widened by the preset's fitted model error"
                if self.band.model_error
                else " (run-to-run spread only: no fitted model error)"
            )
            + ".\nWhiskers on the chart: each op's end, same percentiles.",
        )
        self.label.show()

    def shutdown(self, msecs: int = 3000) -> None:
        self._tasks.shutdown(msecs)
