"""The ruler's aggregate table: what happened in the measured range, in a small panel.

Shift+drag (or the ruler mode) measures a range; this panel floats in the chart's top right
corner with the figures of :func:`swimlanes.timeline.range_stats.range_stats`: busy time per
lane, overlaps, ops by kind. Its text is selectable, and Copy puts it on the clipboard as
tab-separated rows.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from swimlanes.model.document import OP_KINDS
from swimlanes.timeline.range_stats import RangeStats, range_stats
from swimlanes.timeline.timeline import Timeline
from swimlanes.ui.gantt.rows import format_duration
from swimlanes.ui.style import OP_TITLE

#: Above this many ops a range is summed only when the drag ends, not while it moves.
LIVE_LIMIT = 200_000


def range_stats_rows(stats: RangeStats) -> list[tuple[str, str, str]]:
    """(what, time or count, % of the range) rows: lanes busy in the range (the host always),
    then overlaps and the ops by kind."""
    rows = [("Range", format_duration(stats.span_ns), "")]

    def timed(what: str, ns: int) -> tuple[str, str, str]:
        return (what, format_duration(ns), f"{stats.pct(ns):.1f} %")

    for lane in stats.lanes:
        if lane.busy_ns or lane.kind == "host":
            title = lane.name if lane.kind == "host" else f"{lane.kind} {lane.name}"
            rows.append(timed(f"{title} busy", lane.busy_ns))
    rows.append(timed("GPU busy (any engine)", stats.device_busy_ns))
    rows.append(timed("Engines overlapping", stats.engines_overlap_ns))
    rows.append(timed("Copy busy", stats.copy_ns))
    rows.append(timed("Compute busy", stats.compute_ns))
    rows.append(timed("Copy and compute overlap", stats.copy_compute_overlap_ns))
    rows.append(("Ops", str(sum(stats.op_counts.values())), ""))
    order = {k: i for i, k in enumerate(OP_KINDS)}
    for kind, n in sorted(stats.op_counts.items(), key=lambda kv: order.get(kv[0], 99)):
        rows.append((f"    {OP_TITLE.get(kind, kind)}", str(n), ""))
    return rows


def range_stats_text(stats: RangeStats) -> str:
    """The rows as tab-separated text (pastes into a spreadsheet)."""
    return "\n".join("\t".join(r).rstrip() for r in range_stats_rows(stats))


class RangeStatsPanel(QFrame):
    """A small table of the ruler range's figures, with Copy and Close."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("range_stats")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.stats: RangeStats | None = None
        self.title = QLabel("Range")
        self.title.setStyleSheet("font-weight: bold;")
        copy = QPushButton("Copy")
        copy.setToolTip("Copy the table as tab-separated text")
        copy.clicked.connect(self.copy)
        close = QPushButton("×")
        close.setToolTip("Hide the range figures (Escape clears the ruler)")
        close.setFixedWidth(24)
        close.clicked.connect(self.hide)
        head = QHBoxLayout()
        head.addWidget(self.title, 1)
        head.addWidget(copy)
        head.addWidget(close)
        self.table = QTableWidget(0, 3)
        self.table.setHorizontalHeaderLabels(["", "time", "% of range"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setShowGrid(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        box = QVBoxLayout(self)
        box.setContentsMargins(6, 4, 6, 6)
        box.setSpacing(2)
        box.addLayout(head)
        box.addWidget(self.table)
        self.hide()

    def show_range(self, tl: Timeline | None, start_ns: int, end_ns: int) -> None:
        """Sum up ``tl`` in ``[start_ns, end_ns)`` (ns from its start) and show the table."""
        if tl is None or end_ns <= start_ns:
            self.hide()
            return
        self.stats = range_stats(tl, tl.t0 + start_ns, tl.t0 + end_ns)
        rows = range_stats_rows(self.stats)
        self.title.setText(
            f"{format_duration(start_ns)} to {format_duration(end_ns)}"
            f"  (Δ {format_duration(end_ns - start_ns)})"
        )
        self.table.setRowCount(len(rows))
        for r, cells in enumerate(rows):
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c:
                    item.setTextAlignment(
                        Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter
                    )
                self.table.setItem(r, c, item)
        self.table.resizeRowsToContents()
        self._fit()
        self.show()
        self.raise_()

    def text(self) -> str:
        """The table as tab-separated text ("" when nothing is measured)."""
        return range_stats_text(self.stats) if self.stats is not None else ""

    def copy(self) -> None:
        QGuiApplication.clipboard().setText(self.text())

    def _fit(self) -> None:
        """As small as the table, at most the parent's height, in its top right corner."""
        parent = self.parentWidget()
        t = self.table
        # the columns' own widths: the header's length lags until the table is laid out
        columns = sum(
            max(t.sizeHintForColumn(c), t.horizontalHeader().sectionSizeHint(c)) for c in range(3)
        )
        width = columns + 2 * t.frameWidth() + t.verticalScrollBar().sizeHint().width() + 16
        rows_h = sum(t.rowHeight(r) for r in range(t.rowCount()))
        height = rows_h + t.horizontalHeader().height() + self.title.sizeHint().height() + 24
        if parent is not None:
            height = min(height, max(parent.height() - 40, 120))
            width = max(width + 12, 260)
            self.setGeometry(parent.width() - width - 12, 8, width, height)
