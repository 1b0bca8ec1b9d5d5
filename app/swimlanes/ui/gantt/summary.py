"""The summary strip under the charts: makespan, serial time, speedup, engine busy %.

Metrics come from ``swimlanes.timeline.metrics.compute_metrics``; only their fields are used
(makespan_ns, serial_ns, speedup, engine_busy_pct, overlap_pct, gpu_waiting_on_host_ns).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QGridLayout, QLabel, QWidget

from swimlanes.ui.gantt.rows import format_duration


def _get(metrics: Any, name: str, default: Any = None) -> Any:
    return getattr(metrics, name, default) if metrics is not None else default


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0f} %"


def _error(sim: float | None, meas: float | None) -> str:
    if sim is None or meas is None or not meas:
        return ""
    return f"{(sim - meas) / meas * 100:+.1f} %"


def summary_rows(simulated: Any, measured: Any) -> list[tuple[str, str, str, str]]:
    """(quantity, simulated, measured, model error) rows, shared by the strip and exports."""
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
                _error(s, m) if error else "",
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
    """One column per quantity: simulated value, measured value and the model's error."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(6, 2, 6, 2)
        self._grid.setHorizontalSpacing(18)
        self._grid.setVerticalSpacing(0)
        self.rows: list[tuple[str, str, str, str]] = []
        self.set_metrics(None, None)

    def set_metrics(self, simulated: Any, measured: Any) -> None:
        """Show these metrics (None for a missing side)."""
        while self._grid.count():
            w = self._grid.takeAt(0).widget()
            if w is not None:
                w.hide()
                w.setParent(None)
                w.deleteLater()
        for col in range(self._grid.columnCount()):
            self._grid.setColumnStretch(col, 0)
        self.rows = summary_rows(simulated, measured)
        has_measured = measured is not None
        heads = ["", "simulated"] + (["measured", "model error"] if has_measured else [])
        for r, text in enumerate(heads):
            label = QLabel(text)
            label.setStyleSheet("color: palette(mid);" if r else "")
            self._grid.addWidget(label, r, 0)
        for c, (name, s, m, err) in enumerate(self.rows, start=1):
            title = QLabel(name)
            title.setStyleSheet("font-weight: bold;")
            self._grid.addWidget(title, 0, c)
            values = [s] + ([m, err] if has_measured else [])
            for r, v in enumerate(values, start=1):
                label = QLabel(v)
                label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
                self._grid.addWidget(label, r, c)
        self._grid.setColumnStretch(len(self.rows) + 1, 1)

    def text(self) -> str:
        """The strip as plain text (status bar, copy, tests)."""
        return "; ".join(f"{n}: {s}" + (f" / {m}" if m != "—" else "") for n, s, m, _ in self.rows)
