"""Two timelines side by side: the document's schedule against another (File > Diff with
another timeline): before and after an edit, two designs, two devices, two measured runs.

Both charts share the time axis (each timeline from its own start) and the same rows; the
summary says both makespans and the delta; the table lists every matched op with its start and
duration on each side and the deltas (B minus A), biggest change first. Clicking a row selects
that op in both charts. Ops are matched as ``swimlanes diff`` matches them
(swimlanes.timeline.diff).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QMainWindow,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from swimlanes.timeline.compare import fmt_time
from swimlanes.timeline.diff import delta_summary, diff_timelines, signed_time
from swimlanes.timeline.timeline import NO_TIME, Timeline
from swimlanes.ui.gantt.chart import GanttChart
from swimlanes.ui.gantt.side_by_side import union_rows

COLUMNS = (
    ("A #", "the op's index in A's program"),
    ("B #", "the matched op's index in B's program"),
    ("op", "the op's kind"),
    ("stream", "its stream in A"),
    ("start B-A", "how much later B starts it, each timeline from its own start"),
    ("duration B-A", "how much longer it takes in B"),
    ("A start", "start in A"),
    ("B start", "start in B"),
    ("A duration", "duration in A"),
    ("B duration", "duration in B"),
    ("label", "the op's label in A"),
)
_ROW_ROLE = Qt.ItemDataRole.UserRole


def side_title(tl: Timeline) -> str:
    """``chunked overlap (simulated, h200), makespan 45.64 ms``."""
    where = ", ".join(x for x in (tl.source, tl.device) if x)
    return f"{tl.name or 'unnamed'} ({where}), makespan {fmt_time(tl.makespan_ns)}"


def _plain(ns: int) -> str:
    return "" if ns == NO_TIME else fmt_time(ns)


class _Item(QTableWidgetItem):
    """A cell that sorts by a number (ns) rather than by its text."""

    def __init__(self, text: str, key: float) -> None:
        super().__init__(text)
        self.key = key
        self.setFlags(self.flags() & ~Qt.ItemFlag.ItemIsEditable)

    def __lt__(self, other: QTableWidgetItem) -> bool:
        return self.key < getattr(other, "key", 0)


class DiffWindow(QMainWindow):
    """Timeline A above timeline B on one time axis, their summary and per-op delta table."""

    def __init__(
        self, a: Timeline, b: Timeline, match: str = "auto", parent: QWidget | None = None
    ):
        super().__init__(parent)
        self.setObjectName("diff_window")
        self.diff = diff_timelines(a, b, match)
        self.setWindowTitle(f"Diff: {a.name or 'A'} / {b.name or 'B'} — Swimlanes")
        self.summary = QLabel(delta_summary(self.diff))
        self.summary.setObjectName("diff_summary")
        self.chart_a, self.chart_b = GanttChart(), GanttChart()
        rows = union_rows(a, b)
        width = 0
        for chart, tl in ((self.chart_a, a), (self.chart_b, b)):
            chart.set_timeline(tl)
            chart.set_row_layout(rows)
            width = max(width, chart.preferred_left_axis_width())
        for chart in (self.chart_a, self.chart_b):
            chart.left_axis_width = width  # the same pixel column is the same time in both
        self.chart_b.plot_item.setXLink(self.chart_a.plot_item)
        self.title_a, self.title_b = QLabel(f"A: {side_title(a)}"), QLabel(f"B: {side_title(b)}")
        self.table = self._build_table()
        charts = QSplitter(Qt.Orientation.Vertical)
        for title, chart in ((self.title_a, self.chart_a), (self.title_b, self.chart_b)):
            pane = QWidget()
            box = QVBoxLayout(pane)
            box.setContentsMargins(0, 0, 0, 0)
            box.addWidget(title)
            box.addWidget(chart, 1)
            charts.addWidget(pane)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(charts)
        split.addWidget(self.table)
        split.setSizes([600, 250])
        body = QWidget()
        layout = QVBoxLayout(body)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        self.setCentralWidget(body)
        self.chart_a.fit_all()
        self.resize(1400, 900)

    def _build_table(self) -> QTableWidget:
        d = self.diff
        start, duration = d.deltas()
        sa, ea = d.spans("a")
        sb, eb = d.spans("b")
        table = QTableWidget(len(d.rows_a), len(COLUMNS))
        table.setObjectName("diff_table")
        table.setHorizontalHeaderLabels([name for name, _ in COLUMNS])
        for col, (_, tip) in enumerate(COLUMNS):
            table.horizontalHeaderItem(col).setToolTip(tip)
        table.verticalHeader().setVisible(False)
        table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        for i, (ra, rb) in enumerate(zip(d.rows_a.tolist(), d.rows_b.tolist(), strict=True)):
            a, b = d.a, d.b
            dur_a = NO_TIME if sa[i] == NO_TIME else int(ea[i] - sa[i])
            dur_b = NO_TIME if sb[i] == NO_TIME else int(eb[i] - sb[i])
            cells = (
                _Item(str(int(a.index[ra])), int(a.index[ra])),
                _Item(str(int(b.index[rb])), int(b.index[rb])),
                _Item(a.op_kind(ra), 0),
                _Item(a.stream_name(ra) or "-", 0),
                _Item(
                    signed_time(int(start[i])), abs(int(start[i])) if start[i] != NO_TIME else -1
                ),
                _Item(
                    signed_time(int(duration[i])),
                    abs(int(duration[i])) if duration[i] != NO_TIME else -1,
                ),
                _Item(_plain(int(sa[i])), int(sa[i])),
                _Item(_plain(int(sb[i])), int(sb[i])),
                _Item(_plain(dur_a), dur_a),
                _Item(_plain(dur_b), dur_b),
                _Item(a.labels[ra], 0),
            )
            cells[0].setData(_ROW_ROLE, i)
            for col, item in enumerate(cells):
                table.setItem(i, col, item)
        table.setSortingEnabled(True)
        table.sortItems(4, Qt.SortOrder.DescendingOrder)  # the biggest start change first
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        table.horizontalHeader().setStretchLastSection(True)
        table.itemSelectionChanged.connect(self._select_in_charts)
        return table

    def _select_in_charts(self) -> None:
        pairs = [
            int(self.table.item(r.row(), 0).data(_ROW_ROLE))
            for r in self.table.selectionModel().selectedRows()
        ]
        d = self.diff
        self.chart_a.set_selection([int(d.a.index[d.rows_a[i]]) for i in pairs])
        self.chart_b.set_selection([int(d.b.index[d.rows_b[i]]) for i in pairs])
