"""The summary strip under the charts: makespan, serial time, speedup, engine busy %.

Metrics come from ``swimlanes.timeline.metrics.compute_metrics``; only their fields are used
(makespan_ns, serial_ns, speedup, engine_busy_pct, overlap_pct, gpu_waiting_on_host_ns).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from swimlanes.ui.gantt.rows import format_duration


def _get(metrics: Any, name: str, default: Any = None) -> Any:
    return getattr(metrics, name, default) if metrics is not None else default


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f} %"


def _error(sim: float | None, meas: float | None) -> str:
    if sim is None or meas is None or not meas:
        return ""
    return f"{(sim - meas) / meas * 100:+.1f} %"


def summary_rows(
    simulated: Any, measured: Any, comparable: bool = True
) -> list[tuple[str, str, str, str]]:
    """(quantity, simulated, measured, model error) rows, shared by the strip and exports.

    ``comparable`` False (a measurement of another pipeline) leaves the model error out: the
    two numbers are not of the same program."""
    rows: list[tuple[str, str, str, str]] = []

    def add(name: str, attr: str, fmt: Any, error: bool = True) -> None:
        s, m = _get(simulated, attr), _get(measured, attr)
        if s is None and m is None:
            return
        rows.append(
            (
                name,
                "—" if s is None else fmt(s),
                "—" if m is None else fmt(m),
                _error(s, m) if error and comparable else "",
            )
        )

    add("Makespan", "makespan_ns", format_duration)
    add("Serial time", "serial_ns", format_duration, error=False)
    add("Speedup", "speedup", lambda v: f"{v:.2f}×")
    add("Overlap", "overlap_pct", _pct, error=False)
    add("GPU waited on host", "gpu_waiting_on_host_ns", format_duration, error=False)
    engines: list[str] = []
    for m in (simulated, measured):
        for name in _get(m, "engine_busy_pct", {}) or {}:
            if name not in engines:
                engines.append(name)
    for name in engines:
        s = (_get(simulated, "engine_busy_pct", {}) or {}).get(name)
        m = (_get(measured, "engine_busy_pct", {}) or {}).get(name)
        rows.append(
            (
                f"{name} busy",
                _pct(s) if simulated is not None else "—",
                _pct(m) if measured is not None else "—",
                "",
            )
        )
    return rows


class SummaryStrip(QWidget):
    """One column per quantity: simulated value, measured value and the model's error.

    Labels are made once per grid cell and then only re-texted: the strip is refreshed after
    every edit, and recreating widgets re-lays out (and repaints) the whole schedule dock.
    The columns scroll sideways when they are wider than the window (eight GPUs have 24
    engines): the strip never makes the window wider than the screen.
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self._scroll = QScrollArea(self)
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._scroll.setWidgetResizable(True)
        self._scroll.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._inner = QWidget()
        self._scroll.setWidget(self._inner)
        outer.addWidget(self._scroll)
        self._overflow = False
        self._shown_hint: tuple[bool, int] = (False, -1)
        self._grid = QGridLayout(self._inner)
        self._grid.setContentsMargins(6, 2, 6, 2)
        self._grid.setHorizontalSpacing(18)
        self._grid.setVerticalSpacing(0)
        self._cells: dict[tuple[int, int], QLabel] = {}
        self._stretch_col = -1
        self.rows: list[tuple[str, str, str, str]] = []
        self.set_metrics(None, None)

    def _cell(self, row: int, col: int) -> QLabel:
        label = self._cells.get((row, col))
        if label is None:
            label = QLabel()
            if col == 0:
                label.setStyleSheet("color: palette(mid);" if row else "")
            elif row == 0:
                label.setStyleSheet("font-weight: bold;")
            else:
                label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self._grid.addWidget(label, row, col)
            self._cells[(row, col)] = label
        return label

    def set_metrics(self, simulated: Any, measured: Any, comparable: bool = True) -> None:
        """Show these metrics (None for a missing side); no model error unless the measurement
        is of the simulated pipeline (``comparable``)."""
        self.rows = summary_rows(simulated, measured, comparable)
        has_measured = measured is not None
        error_head = "model error" if comparable else "model error: n/a (other pipeline)"
        heads = ["", "simulated"] + (["measured", error_head] if has_measured else [])
        texts: dict[tuple[int, int], str] = {(r, 0): t for r, t in enumerate(heads)}
        for c, (name, s, m, err) in enumerate(self.rows, start=1):
            texts[(0, c)] = name
            for r, v in enumerate([s] + ([m, err] if has_measured else []), start=1):
                texts[(r, c)] = v
        for key, text in texts.items():
            label = self._cell(*key)
            if label.text() != text:
                label.setText(text)
            if label.isHidden():
                label.show()
        for key, label in self._cells.items():
            if key not in texts and not label.isHidden():
                label.hide()
        stretch = len(self.rows) + 1
        if stretch != self._stretch_col:
            if self._stretch_col >= 0:
                self._grid.setColumnStretch(self._stretch_col, 0)
            self._grid.setColumnStretch(stretch, 1)
            self._stretch_col = stretch
        self._update_overflow()

    # -- size: as high as the grid (and a scroll bar when it overflows), as narrow as need be
    def _update_overflow(self) -> None:
        # the scroll area does not pass its content's size changes on: say them here
        self._inner.layout().activate()
        # not laid out yet, the viewport has no width of its own: no scroll bar until it has
        # (the window's first layout must not reserve one the strip will not show)
        shown = self.isVisible() and self.width() > 0
        overflow = shown and self._inner.sizeHint().width() > self._scroll.viewport().width()
        hint = (overflow, self._inner.sizeHint().height())
        if hint != self._shown_hint:
            self._shown_hint = hint
            self._overflow = overflow
            self.updateGeometry()

    def _height(self) -> int:
        bar = self._scroll.horizontalScrollBar().sizeHint().height() if self._overflow else 0
        return self._inner.sizeHint().height() + bar

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(self._inner.sizeHint().width(), self._height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(0, self._height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._update_overflow()

    def text(self) -> str:
        """The strip as plain text (status bar, copy, tests)."""
        return "; ".join(f"{n}: {s}" + (f" / {m}" if m != "—" else "") for n, s, m, _ in self.rows)
