"""The "Comparison table" tab: per op, simulated and measured times and the model's error.

Without a measurement it lists the simulated schedule alone. Sorting is numeric, flagged ops
(see swimlanes.timeline.compare for the rule) are tinted and can be shown alone, and the
selection is shared with the charts and the editor by program index.

The model sorts and filters itself with numpy (a permutation of its rows) rather than through
a QSortFilterProxyModel: a proxy calls ``data()`` in Python for every comparison, which cost
85 ms per re-simulation at 1,000 ops (seconds at 100,000), on every edit.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from PySide6.QtCore import (
    QAbstractTableModel,
    QItemSelectionModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    Signal,
)
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QTableView, QVBoxLayout, QWidget

from swimlanes.timeline.timeline import NO_TIME, Timeline
from swimlanes.ui.selection_ranges import rows_selection

_FLAG_TINT = QColor(213, 94, 0, 60)  # Okabe-Ito vermillion, translucent: readable in both themes

# (header, key, tooltip); "{unit}" is the table's time unit (us or ms, whichever reads best)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("#", "index", "Position of the op in the host program (its index)"),
    ("Op", "op", "The CUDA call"),
    ("Stream", "stream", "The stream the op was issued to (empty: a host call)"),
    ("Label", "label", "The op's label"),
    (
        "Flag: what is off",
        "flag",
        "Flagged when the start or the duration differs from the model by more than the "
        "threshold; says which, and by how much",
    ),
    (
        "Start err ({unit})",
        "start_err",
        "Start error, model minus measurement ({unit}): positive when the model starts it later",
    ),
    (
        "Dur err (%)",
        "dur_err_pct",
        "Duration error, model minus measurement, relative to the measured duration: "
        "positive when the model takes longer",
    ),
    ("Sim start ({unit})", "sim_start", "Simulated start, {unit} from the start of the run"),
    ("Sim end ({unit})", "sim_end", "Simulated end, {unit} from the start of the run"),
    ("Sim dur ({unit})", "sim_dur", "Simulated duration ({unit})"),
    ("Meas start ({unit})", "meas_start", "Measured start, {unit} from the start of the run"),
    ("Meas end ({unit})", "meas_end", "Measured end, {unit} from the start of the run"),
    ("Meas dur ({unit})", "meas_dur", "Measured duration ({unit}; the median of the runs)"),
)
_NUMERIC = {k for _, k, _ in COLUMNS} - {"op", "stream", "label", "flag"}
#: At or past this many microseconds (10 ms) the table counts in ms.
MS_FROM_US = 10_000.0


def _us(values: np.ndarray) -> np.ndarray:
    """ns -> float us with NaN for NO_TIME."""
    out = values.astype(np.float64) / 1000.0
    out[values == NO_TIME] = np.nan
    return out


def _off_parts(c: Any) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a Comparison, whether its start and whether its duration break the flag rule
    (swimlanes.timeline.compare: more than ``threshold`` of how far into the run it ends, or of
    the longer duration, and more than ``min_abs_ns``); only flagged rows are asked."""
    s_start, s_end, m_start, m_end = (
        np.asarray(a, dtype=np.int64) for a in (c.sim_start, c.sim_end, c.meas_start, c.meas_end)
    )
    have = (s_start != NO_TIME) & (m_start != NO_TIME)
    ends = (s_end != NO_TIME) & (m_end != NO_TIME)
    both = have & ends
    start_err = np.abs(np.where(have, s_start - m_start, 0))
    position = np.maximum(np.where(ends, s_end, 0), np.where(ends, m_end, 0))
    s_dur, m_dur = np.where(both, s_end - s_start, 0), np.where(both, m_end - m_start, 0)
    dur_err = np.abs(s_dur - m_dur)
    floor = c.min_abs_ns
    start_off = have & (start_err > c.threshold * position) & (start_err > floor)
    dur_off = both & (dur_err > c.threshold * np.maximum(s_dur, m_dur)) & (dur_err > floor)
    flagged = np.asarray(c.flagged, dtype=bool)
    # a row the rule flagged on a wider noise floor than min_abs_ns: name what is further off
    neither = flagged & ~start_off & ~dur_off
    start_off |= neither & (start_err >= dur_err)
    dur_off |= neither & (dur_err > start_err)
    return start_off & flagged, dur_off & flagged


class ComparisonTableModel(QAbstractTableModel):
    """Rows of a Comparison (or a simulated Timeline alone), sorted and filtered with numpy.

    View row ``r`` shows data row ``self._order[r]``.
    """

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._cols: dict[str, Any] = {}
        self._flagged = np.zeros(0, dtype=bool)
        self._start_off = np.zeros(0, dtype=bool)
        self._dur_off = np.zeros(0, dtype=bool)
        #: Time unit of the time columns: "us", or "ms" for runs of 10 ms or more.
        self.unit = "us"
        self._flagged_only = False
        self._sort: tuple[int, Qt.SortOrder] = (0, Qt.SortOrder.AscendingOrder)
        self._order = np.zeros(0, dtype=np.int64)

    # -- data sources -------------------------------------------------------------------------
    def set_comparison(self, comparison: Any) -> None:
        """Show a swimlanes.timeline.compare.Comparison."""
        c = comparison
        sim_s, sim_e, m_s, m_e = (
            _us(a) for a in (c.sim_start, c.sim_end, c.meas_start, c.meas_end)
        )
        self._set(
            index=np.asarray(c.index),
            op=list(c.ops),
            stream=[s or "" for s in c.streams],
            label=list(c.labels),
            sim_start=sim_s,
            sim_end=sim_e,
            sim_dur=sim_e - sim_s,
            meas_start=m_s,
            meas_end=m_e,
            meas_dur=m_e - m_s,
            start_err=_us(np.asarray(c.start_error_ns)),
            dur_err_pct=100.0 * np.asarray(c.duration_error, dtype=np.float64),
            flagged=np.asarray(c.flagged, dtype=bool),
            off=_off_parts(c),
        )

    def set_timeline(self, timeline: Timeline | None) -> None:
        """Show a simulated timeline alone (measured columns empty)."""
        if timeline is None:
            self._set()
            return
        t0 = timeline.t0
        dev = timeline.on_device
        start = np.where(dev, timeline.start, timeline.issue_start)
        end = np.where(dev, timeline.end, timeline.issue_end)
        start_us = _us(np.where(start != NO_TIME, start - t0, NO_TIME))
        end_us = _us(np.where(end != NO_TIME, end - t0, NO_TIME))
        n = len(timeline)
        nan = np.full(n, np.nan)
        self._set(
            index=np.asarray(timeline.index),
            op=[timeline.op_kind(r) for r in range(n)],
            stream=[timeline.stream_name(r) or "" for r in range(n)],
            label=list(timeline.labels),
            sim_start=start_us,
            sim_end=end_us,
            sim_dur=end_us - start_us,
            meas_start=nan,
            meas_end=nan,
            meas_dur=nan,
            start_err=nan,
            dur_err_pct=nan,
            flagged=np.zeros(n, dtype=bool),
        )

    def _set(self, **cols: Any) -> None:
        self.beginResetModel()
        self._flagged = cols.pop("flagged", np.zeros(0, dtype=bool))
        none = np.zeros(len(self._flagged), dtype=bool)
        self._start_off, self._dur_off = cols.pop("off", (none, none))
        latest = max(
            (float(np.nanmax(np.abs(cols[k]))) for k in ("sim_end", "meas_end") if _any(cols, k)),
            default=0.0,
        )
        self.unit = "ms" if latest >= MS_FROM_US else "us"
        self._cols = cols
        self._order = self._sorted_rows()
        self.endResetModel()

    # -- sorting and filtering ----------------------------------------------------------------
    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        """Numeric sort for number columns (missing values last), text sort for the rest."""
        self._sort = (column, order)
        self.layoutAboutToBeChanged.emit()
        self._order = self._sorted_rows()
        self.layoutChanged.emit()

    def set_flagged_only(self, on: bool) -> None:
        self.beginResetModel()
        self._flagged_only = on
        self._order = self._sorted_rows()
        self.endResetModel()

    def _sorted_rows(self) -> np.ndarray:
        n = len(self._cols.get("index", ()))
        rows = np.flatnonzero(self._flagged) if self._flagged_only else np.arange(n)
        if not len(rows):
            return rows
        column, order = self._sort
        key = COLUMNS[column][1]
        if key == "flag":
            values: np.ndarray = self._flagged[rows].astype(np.int8)
        elif key in _NUMERIC:
            values = np.asarray(self._cols[key], dtype=np.float64)[rows]
            if order == Qt.SortOrder.DescendingOrder:
                values = -values
            values = np.where(np.isnan(values), np.inf, values)  # missing sorts last
            return rows[np.argsort(values, kind="stable")]
        else:
            values = np.asarray(self._cols[key], dtype=str)[rows]
        ranked = rows[np.argsort(values, kind="stable")]
        return ranked[::-1] if order == Qt.SortOrder.DescendingOrder else ranked

    # -- lookups (view rows) ------------------------------------------------------------------
    def program_index(self, row: int) -> int:
        return int(self._cols["index"][self._order[row]])

    def rows_of_program_indexes(self, program_indexes: list[int]) -> np.ndarray:
        """The view rows showing these ops, ascending (absent or filtered-out ones left out)."""
        if not len(self._order) or not program_indexes:
            return np.zeros(0, dtype=np.int64)
        shown = self._cols["index"][self._order]
        return np.flatnonzero(np.isin(shown, np.asarray(program_indexes, dtype=np.int64)))

    def row_of_program_index(self, program_index: int) -> int | None:
        """The view row showing this op (None if absent or filtered out)."""
        if not len(self._order):
            return None
        hits = np.flatnonzero(self._cols["index"][self._order] == program_index)
        return int(hits[0]) if len(hits) else None

    def off_text(self, row: int) -> str:
        """What is off in data row ``row`` ("" unless flagged): the start, the duration, or
        both, and by how much (model minus measurement)."""
        if not self._flagged[row]:
            return ""
        parts = []
        if self._start_off[row]:
            parts.append(
                f"start {self._time_text(float(self._cols['start_err'][row]), '+')} {self.unit}"
            )
        if self._dur_off[row]:
            pct = float(self._cols["dur_err_pct"][row])
            parts.append("duration " + ("" if math.isnan(pct) else f"{pct:+.0f}%"))
        return "⚑ " + ", ".join(parts)

    def off_tooltip(self, row: int) -> str:
        """The flag as a sentence (the flag column's tooltip)."""
        if not self._flagged[row]:
            return "Within the threshold: not flagged"
        sentences = []
        if self._start_off[row]:
            err = float(self._cols["start_err"][row])
            when = "later" if err > 0 else "earlier"
            size = self._time_text(abs(err), "")
            sentences.append(f"The model starts it {size} {self.unit} {when} than measured.")
        if self._dur_off[row]:
            pct = float(self._cols["dur_err_pct"][row])
            sim, meas = (
                self._time_text(float(self._cols[k][row]), "") for k in ("sim_dur", "meas_dur")
            )
            longer = "longer" if pct > 0 else "shorter"
            sentences.append(
                f"The model's duration is {abs(pct):.0f}% {longer}: {sim} {self.unit} simulated, "
                f"{meas} {self.unit} measured."
            )
        return " ".join(sentences)

    def _time_text(self, us: float, sign: str) -> str:
        """A time in microseconds, in the table's unit."""
        if math.isnan(us):
            return ""
        value = us / 1000.0 if self.unit == "ms" else us
        return f"{value:{sign},.3f}"

    def column_samples(self, column: int) -> list[str]:
        """Texts as wide as the widest of this column (for sizing it): every value of
        number columns has its width from the extremes; text columns from their first rows."""
        key = COLUMNS[column][1]
        if key == "index":
            return [str(int(np.max(self._cols["index"])))] if _any(self._cols, "index") else []
        if key in _NUMERIC:
            values = np.asarray(self._cols.get(key, ()), dtype=np.float64)
            values = values[~np.isnan(values)]
            if not len(values):
                return []
            return [self._format(key, float(v)) for v in (values.min(), values.max())]
        rows = self._order[:200]
        if key == "flag":
            return [self.off_text(int(r)) for r in np.flatnonzero(self._flagged)[:200]]
        return [str(self._cols[key][int(r)]) for r in rows]

    def flagged_count(self) -> int:
        return int(self._flagged.sum())

    # -- Qt model -----------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._order)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = 0) -> Any:
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section][0].format(unit=self.unit)
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMNS[section][2].format(unit=self.unit)
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> Any:
        if not index.isValid():
            return None
        row, key = int(self._order[index.row()]), COLUMNS[index.column()][1]
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(row, key)
        if role == Qt.ItemDataRole.BackgroundRole and self._flagged[row]:
            return _FLAG_TINT
        if role == Qt.ItemDataRole.ToolTipRole and key == "flag":
            return self.off_tooltip(row)
        if role == Qt.ItemDataRole.TextAlignmentRole and key in _NUMERIC:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _display(self, row: int, key: str) -> str:
        if key == "flag":
            return self.off_text(row)
        if key == "index":
            return str(int(self._cols["index"][row]))
        value = self._cols[key][row]
        if key not in _NUMERIC:
            return str(value)
        return self._format(key, float(value))

    def _format(self, key: str, value: float) -> str:
        if math.isnan(value):
            return ""
        if key == "dur_err_pct":
            return f"{value:+.1f}%"
        return self._time_text(value, "+" if key == "start_err" else "")


def _any(cols: dict[str, Any], key: str) -> bool:
    """Whether column ``key`` has a value that is not missing."""
    values = cols.get(key)
    if values is None or not len(values):
        return False
    return bool(np.any(~np.isnan(np.asarray(values, dtype=np.float64))))


class ComparisonTable(QWidget):
    """Sortable table plus a "flagged only" filter; ``selection_changed(list)`` of program indexes."""

    selection_changed = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = ComparisonTableModel(self)
        self.view = QTableView(self)
        self.view.setModel(self.model)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
        self.view.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.view.setAlternatingRowColors(True)
        self.view.verticalHeader().setVisible(False)
        self.view.verticalHeader().setDefaultSectionSize(22)
        header = self.view.horizontalHeader()
        header.setStretchLastSection(True)
        # A header paints each section asking whether its neighbours' whole columns are selected,
        # which walks every row (260,000 calls into the model, 0.2 s, after Select All of 10,000
        # ops). The headers get a selection model of their own that stays empty.
        self._header_selection = QItemSelectionModel(self.model, self)
        header.setHighlightSections(False)
        header.setSelectionModel(self._header_selection)
        self.view.verticalHeader().setSelectionModel(self._header_selection)
        self.view.selectionModel().selectionChanged.connect(self._on_view_selection)
        self.flagged_only = QCheckBox("Flagged only", self)
        self.flagged_only.toggled.connect(self._on_flagged_only)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)  # beside the charts the table may be narrow
        top = QHBoxLayout()
        top.addWidget(self.summary, 1)
        top.addWidget(self.flagged_only)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(top)
        layout.addWidget(self.view)
        self._syncing = False
        #: Per column, the width its contents needed when last sized (columns only widen).
        self._needed = [0] * len(COLUMNS)
        self._update_summary(None)

    def set_comparison(self, comparison: Any) -> None:
        keep = self.selected_indexes()
        self.model.set_comparison(comparison)
        self._after_reset(comparison, keep)

    def set_timeline(self, timeline: Timeline | None, note: str = "") -> None:
        """Show the simulated schedule alone; ``note`` says why there is no comparison."""
        keep = self.selected_indexes()
        self.model.set_timeline(timeline)
        self._after_reset(None, keep, note)

    def _after_reset(self, comparison: Any, selection: list[int], note: str = "") -> None:
        self._fit_columns()
        self._update_summary(comparison, note)
        self.set_selection(selection)

    def _fit_columns(self) -> None:
        """Widen each column to its header and its widest value (every index in full), from
        the values' extremes rather than by measuring cells (a second at 1,000 ops). A column
        only widens when its contents grew, so a width the user set stays."""
        header = self.view.horizontalHeader()
        text = self.view.fontMetrics()
        bold = header.fontMetrics()
        for column in range(len(COLUMNS)):
            title = self.model.headerData(column, Qt.Orientation.Horizontal, 0)
            widths = [bold.horizontalAdvance(title) + 28]  # + the sort arrow
            widths += [text.horizontalAdvance(t) + 16 for t in self.model.column_samples(column)]
            needed = max(widths)
            if needed > self._needed[column]:
                first = self._needed[column] == 0
                self._needed[column] = needed
                width = needed if first else max(needed, header.sectionSize(column))
                self.view.setColumnWidth(column, width)

    def _update_summary(self, comparison: Any, note: str = "") -> None:
        n = len(self.model._cols.get("index", ()))  # noqa: SLF001 - same module
        if comparison is None:
            hint = note or "Run on the GPU or open a measurement to compare."
            # no rows and a reason (a failed simulation): the reason alone, not "0 ops simulated"
            self.summary.setText(hint if n == 0 and note else f"{n} ops simulated. {hint}")
            return
        err = comparison.makespan_error
        err_text = "" if math.isnan(err) else f", makespan error {100 * err:+.1f}%"
        self.summary.setText(
            f"{n} ops compared, {self.model.flagged_count()} flagged (more than "
            f"{100 * comparison.threshold:.0f}% off){err_text}"
        )

    def _on_flagged_only(self, on: bool) -> None:
        keep = self.selected_indexes()
        self.model.set_flagged_only(on)
        self.set_selection(keep)

    # -- selection ----------------------------------------------------------------------------
    def selected_indexes(self) -> list[int]:
        rows = {i.row() for i in self.view.selectionModel().selectedRows()}
        return sorted(self.model.program_index(r) for r in rows)

    def set_selection(self, program_indexes: list[int]) -> None:
        """Select these ops' rows (no signal) and scroll to the first."""
        self._syncing = True
        try:
            rows = self.model.rows_of_program_indexes(program_indexes)
            selection = rows_selection(rows, self.model.index, len(COLUMNS) - 1)
            flags = QItemSelectionModel.SelectionFlag.ClearAndSelect
            self.view.selectionModel().select(selection, flags)
            if len(rows):
                self.view.scrollTo(self.model.index(int(rows[0]), 0))
        finally:
            self._syncing = False

    def _on_view_selection(self, *_: Any) -> None:
        if not self._syncing:
            self.selection_changed.emit(self.selected_indexes())
