"""The "Critical path" tab: the chain of ops that set the makespan, and every op's slack.

The steps (swimlanes.analysis.critical_path) are listed first to last with what each waited
for and the lag after it; beside them, the ops off the path with the least slack. A row selects its
op everywhere, and **Select path** selects the whole path (``ops_selected(list)`` of program
indexes, like the Insights tab). The analysis runs on the timeline shown (the simulation, else
the measurement); a large one is analysed off the UI thread and a newer timeline drops the
older result.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from swimlanes.analysis.critical_path import LINK_NAMES, CriticalPath, critical_path
from swimlanes.timeline.compare import fmt_time
from swimlanes.timeline.timeline import Timeline
from swimlanes.ui.workers import TaskRunner

#: Timelines up to this many ops are analysed on the UI thread (well under 100 ms).
SYNC_LIMIT = 3000
#: Rows of the least-slack table.
SLACK_ROWS = 200
_INDEX_ROLE = Qt.ItemDataRole.UserRole

_STEP_COLUMNS = ("#", "op", "on", "stream", "start", "end", "after", "label")
_SLACK_COLUMNS = ("#", "op", "stream", "slack", "label")


def _item(text: str, index: int | None = None, align_right: bool = False) -> QTableWidgetItem:
    item = QTableWidgetItem(text)
    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
    if index is not None:
        item.setData(_INDEX_ROLE, index)
    if align_right:
        item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
    return item


def _table(columns: tuple[str, ...]) -> QTableWidget:
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(list(columns))
    table.verticalHeader().setVisible(False)
    table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
    table.setWordWrap(False)
    table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    table.horizontalHeader().setStretchLastSection(True)
    return table


def path_summary(tl: Timeline, cp: CriticalPath) -> str:
    """``12 steps over 42.50 ms: copies 88%, kernels 12%``."""
    if not cp.steps:
        return "No ops ran: there is no critical path."
    total = max(1, cp.makespan_ns)
    shares = ", ".join(
        f"{name} {100 * ns / total:.0f}%"
        for name, ns in sorted(cp.share_ns(tl).items(), key=lambda kv: -kv[1])
        if ns * 100 >= total
    )
    return f"{len(cp.steps)} steps over {fmt_time(cp.makespan_ns)}: {shares}"


class CriticalPathPanel(QWidget):
    """Steps of the critical path and least-slack ops; ``ops_selected(list)`` on a click."""

    ops_selected = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._timeline: Timeline | None = None
        self._path: CriticalPath | None = None
        self.summary = QLabel("No timeline yet.")
        self.summary.setWordWrap(True)
        self.select_path = QPushButton("Select path")
        self.select_path.setToolTip("Select every op on the critical path in the editor and charts")
        self.select_path.setEnabled(False)
        self.select_path.clicked.connect(self._select_path)
        self.steps = _table(_STEP_COLUMNS)
        self.slack = _table(_SLACK_COLUMNS)
        self.steps.setToolTip("The chain of ops that set the makespan, first to last")
        self.slack.setToolTip("Ops off the path: how much later each could have ended")
        for table in (self.steps, self.slack):
            table.itemSelectionChanged.connect(lambda t=table: self._select_rows(t))
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(self.select_path)
        # Side by side, like the Insights tab: the tab strip under the charts must stay as
        # short as it was (the window's layout gives the lanes and charts the room first).
        split = self.split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.steps)
        split.addWidget(self.slack)
        split.setSizes([600, 300])
        for widget in (self.steps, self.slack, self.summary):
            widget.setMinimumSize(1, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(split, 1)
        self._runner = TaskRunner(self)
        self._runner.finished.connect(self._on_result)
        self._runner.failed.connect(self._on_failed)

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt override
        """Beside the charts (a tall, narrow strip) the two tables stack; under them (a wide,
        short one) they sit side by side."""
        super().resizeEvent(event)
        size = event.size()
        tall = size.height() > size.width()
        want = Qt.Orientation.Vertical if tall else Qt.Orientation.Horizontal
        if self.split.orientation() != want:
            self.split.setOrientation(want)

    # -- input ------------------------------------------------------------------------------
    def set_timeline(self, tl: Timeline | None) -> None:
        """Analyse ``tl`` (None clears the tab)."""
        self._timeline = tl
        self._runner.cancel()
        if tl is None or not len(tl):
            self._show(None, None)
            return
        if len(tl) <= SYNC_LIMIT:
            self._show(tl, critical_path(tl))
            return
        self.summary.setText(f"Finding the critical path of {len(tl):,} ops...")
        self._runner.start(lambda _progress, _cancel, tl=tl: (tl, critical_path(tl)))

    def path(self) -> CriticalPath | None:
        return self._path

    def path_ops(self) -> list[int]:
        """Program indexes of the ops on the path (device spans and host calls alike)."""
        if self._path is None or self._timeline is None:
            return []
        index = self._timeline.index
        return sorted({int(index[s.row]) for s in self._path.steps})

    def shutdown(self) -> None:
        self._runner.shutdown()

    # -- results ----------------------------------------------------------------------------
    def _on_result(self, result: object) -> None:
        tl, cp = result  # type: ignore[misc]
        if tl is self._timeline:  # a newer timeline makes this result stale
            self._show(tl, cp)

    def _on_failed(self, err: object) -> None:
        self.summary.setText(f"Could not find the critical path: {err}")

    def _show(self, tl: Timeline | None, cp: CriticalPath | None) -> None:
        self._path = cp
        self.select_path.setEnabled(bool(cp and cp.steps))
        for table in (self.steps, self.slack):
            table.blockSignals(True)
            table.setRowCount(0)
        if tl is None or cp is None:
            self.summary.setText("No timeline yet.")
        else:
            self.summary.setText(path_summary(tl, cp))
            self._fill_steps(tl, cp)
            self._fill_slack(tl, cp)
        for table in (self.steps, self.slack):
            table.blockSignals(False)

    def _fill_steps(self, tl: Timeline, cp: CriticalPath) -> None:
        t0 = tl.t0
        self.steps.setRowCount(len(cp.steps))
        for row, s in enumerate(cp.steps):
            index = int(tl.index[s.row])
            after = "" if s.via is None else LINK_NAMES[s.via]
            if s.via is not None and s.lag_ns:
                after += f" +{fmt_time(s.lag_ns)}"
            cells = (
                _item(str(index), index, True),
                _item(tl.op_kind(s.row)),
                _item("host" if s.on_host else "device"),
                _item(tl.stream_name(s.row) or "-"),
                _item(fmt_time(s.start_ns - t0), align_right=True),
                _item(fmt_time(s.end_ns - t0), align_right=True),
                _item(after),
                _item(tl.labels[s.row]),
            )
            for col, item in enumerate(cells):
                self.steps.setItem(row, col, item)

    def _fill_slack(self, tl: Timeline, cp: CriticalPath) -> None:
        rows = cp.least_slack_rows(SLACK_ROWS)
        self.slack.setRowCount(len(rows))
        for row, r in enumerate(rows):
            index = int(tl.index[r])
            cells = (
                _item(str(index), index, True),
                _item(tl.op_kind(r)),
                _item(tl.stream_name(r) or "-"),
                _item(fmt_time(int(cp.device_slack_ns[r])), align_right=True),
                _item(tl.labels[r]),
            )
            for col, item in enumerate(cells):
                self.slack.setItem(row, col, item)

    # -- selection --------------------------------------------------------------------------
    def _select_rows(self, table: QTableWidget) -> None:
        indexes = sorted(
            {
                int(table.item(r.row(), 0).data(_INDEX_ROLE))
                for r in table.selectionModel().selectedRows()
            }
        )
        if indexes:
            self.ops_selected.emit(indexes)

    def _select_path(self) -> None:
        ops = self.path_ops()
        if ops:
            self.ops_selected.emit(ops)
