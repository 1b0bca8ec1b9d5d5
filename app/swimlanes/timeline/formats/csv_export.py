"""The op table as CSV: one row per op, times in microseconds relative to each timeline's t0.

With a second (measured) timeline, its ops are matched to the first's by program index and
the table gains measured columns and the errors, model minus measurement, exactly as
``swimlanes compare`` and the comparison table give them (:meth:`Comparison.errors_of`; device
spans, or host call spans for host-only ops such as syncs).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np

from swimlanes.model.atomic_write import write_text_atomic
from swimlanes.model.document import OP_KINDS
from swimlanes.timeline.compare import compare_timelines
from swimlanes.timeline.timeline import NO_TIME, Timeline

BASE_COLUMNS = (
    "index",
    "op",
    "stream",
    "label",
    "engine",
    "issue_start_us",
    "issue_end_us",
    "start_us",
    "end_us",
    "duration_us",
    "bytes",
    "gbps",
)
MEASURED_COLUMNS = (
    "measured_issue_start_us",
    "measured_start_us",
    "measured_end_us",
    "measured_duration_us",
    "measured_gbps",
    "start_error_us",
    "end_error_us",
    "duration_error_pct",
)
# A cell starting with one of these is run as a formula by spreadsheets; labels come from
# trace files, so they are neutralised.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _text(value: str | None) -> str:
    if value is None:
        return ""
    return "'" + value if value.startswith(_FORMULA_START) else value


class _Columns:
    """One timeline's times relative to its t0 as float microseconds (NaN: absent), computed
    once for all rows."""

    def __init__(self, tl: Timeline) -> None:
        t0 = tl.t0

        def rel(col: np.ndarray) -> np.ndarray:
            return np.where(col != NO_TIME, (col - t0) / 1000.0, np.nan)

        self.issue_start = rel(tl.issue_start)
        self.issue_end = rel(tl.issue_end)
        self.start = rel(tl.start)
        self.end = rel(tl.end)
        self.duration = self.end - self.start
        dur_ns = self.duration * 1000.0
        with np.errstate(divide="ignore", invalid="ignore"):
            self.gbps = np.where((tl.bytes > 0) & (dur_ns > 0), tl.bytes / dur_ns, np.nan)


def _fmt(values: np.ndarray, digits: int = 3) -> list[str]:
    return ["" if np.isnan(v) else f"{v:.{digits}f}" for v in values.tolist()]


def _base_rows(tl: Timeline) -> list[list[str]]:
    c = _Columns(tl)
    kinds = [OP_KINDS[k] for k in tl.kind.tolist()]
    streams = [_text(tl.stream_names[s]) if s >= 0 else "" for s in tl.stream.tolist()]
    engines = [_text(tl.engine_names[e]) if e >= 0 else "" for e in tl.engine.tolist()]
    nbytes = [str(b) if b else "" for b in tl.bytes.tolist()]
    cols = [
        [str(i) for i in tl.index.tolist()],
        kinds,
        streams,
        [_text(label) for label in tl.labels],
        engines,
        _fmt(c.issue_start),
        _fmt(c.issue_end),
        _fmt(c.start),
        _fmt(c.end),
        _fmt(c.duration),
        nbytes,
        _fmt(c.gbps),
    ]
    return [list(row) for row in zip(*cols, strict=True)]


def _measured_cols(first: Timeline, meas: Timeline) -> list[list[str]]:
    """The measured columns for each row of ``first``, matched by program index."""
    idx, rows = np.unique(meas.index, return_index=True)  # first row of each index
    pos = np.searchsorted(idx, first.index)
    pos = np.minimum(pos, max(len(idx) - 1, 0))
    found = (idx[pos] == first.index) if len(idx) else np.zeros(len(first), dtype=bool)
    m_row = np.where(found, rows[pos] if len(idx) else 0, 0)
    b = _Columns(meas)

    def take(col: np.ndarray) -> np.ndarray:
        return np.where(found, col[m_row], np.nan) if len(col) else np.full(len(first), np.nan)

    start_err, end_err, dur_err_pct = compare_timelines(first, meas).errors_of(first.index)
    cols = [
        _fmt(take(b.issue_start)),
        _fmt(take(b.start)),
        _fmt(take(b.end)),
        _fmt(take(b.duration)),
        _fmt(take(b.gbps)),
        _fmt(start_err),
        _fmt(end_err),
        _fmt(dur_err_pct, 2),
    ]
    return [list(row) for row in zip(*cols, strict=True)]


def _placement_columns(tl: Timeline) -> dict[str, list[str]]:
    """``device`` (where the timeline has several GPUs) and ``host_thread`` (where it names
    host threads) of every row; empty for one GPU and one host thread."""
    out: dict[str, list[str]] = {}
    if len(tl.device_names) > 1:
        names = [_text(name) for name in tl.device_names]
        out["device"] = [names[d] for d in tl.host_device.tolist()]
    if tl.thread_names:
        names = [_text(name) for name in tl.thread_names]
        out["host_thread"] = [names[t] for t in tl.host_thread.tolist()]
    return out


def op_table_csv(timelines: list[Timeline]) -> str:
    """The CSV text of the op table of ``timelines[0]``, with ``timelines[1]`` as measured
    columns when given."""
    if not timelines:
        raise ValueError("no timeline to export")
    first = timelines[0]
    meas = timelines[1] if len(timelines) > 1 else None
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    # A timeline of several host threads (or GPUs) gains the columns that say whose each op
    # is, after all the others so that a reader of the usual columns is not disturbed.
    where = _placement_columns(first)
    writer.writerow(BASE_COLUMNS + (MEASURED_COLUMNS if meas is not None else ()) + tuple(where))
    rows = _base_rows(first)
    if meas is not None:
        for row, extra in zip(rows, _measured_cols(first, meas), strict=True):
            row.extend(extra)
    for values in where.values():
        for row, value in zip(rows, values, strict=True):
            row.append(value)
    writer.writerows(rows)
    return out.getvalue()


def write_op_csv(timelines: list[Timeline], path: str | Path) -> None:
    """Write :func:`op_table_csv` to ``path`` atomically."""
    write_text_atomic(path, op_table_csv(timelines))
