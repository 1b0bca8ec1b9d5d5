"""Simulated vs measured: per-op errors, flags and a summary of the two schedules.

Rows are matched by program index (the ``index`` column), so a measured run that lost or added
ops still lines up with the simulation. Each timeline is aligned to its own t0, the first host
issue (or its earliest time when it has no host spans, as in imported traces), because the two
clocks share no origin: what is compared is where each op sits inside its own run.

Errors are signed "model minus measurement": a positive start error means the model starts the
op later than the GPU did; a positive duration error means the model thinks it takes longer.

Flag rule (what the charts and the table highlight). With ``threshold`` = 10% and
``min_abs_ns`` = 5 us by default, an op is flagged when either

* its duration error exceeds ``threshold`` of the longer of its two durations AND exceeds
  ``min_abs_ns`` (the model mis-predicts how long the op takes), or
* its start error exceeds ``threshold`` of how far into the run the op ends (the later of the
  two end times) AND exceeds ``min_abs_ns`` (the model places the op at the wrong moment: a
  dependency, queue or host effect it gets wrong; scaling by the position keeps a small drift
  that accumulated over a long run from flagging every later op).

The absolute floor keeps microsecond-scale ops (event records, tiny kernels) from being flagged for
timer noise; where the measurement carries its spread over repetitions (p90 - p10), an error within
that spread is not flagged either, since the GPU itself varied that much. Ops with a device span in
both timelines are compared on that span; host-only ops (syncs, host work) on their host call span,
so a sync that returns late is visible too.

The ``fmt_*`` helpers put figures into words the same way here and in the insight texts.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from swimlanes.timeline.metrics import Metrics, compute_metrics
from swimlanes.timeline.timeline import NO_TIME, Timeline

DEFAULT_THRESHOLD = 0.10
DEFAULT_MIN_ABS_NS = 5_000


def run_origin(tl: Timeline) -> int:
    """The time a run starts: its first host issue, or its earliest time without host spans."""
    issued = tl.issue_start[tl.issue_start != NO_TIME]
    return int(issued.min()) if len(issued) else tl.t0


def _us(v: int | float) -> float | None:
    if v == NO_TIME or (isinstance(v, float) and np.isnan(v)):
        return None
    return round(float(v) / 1000.0, 3)


# -- figures in words (shared with the insight texts) -------------------------------------------
def fmt_time(ns: float) -> str:
    """A duration the way a CUDA engineer reads it: us below a millisecond, else ms."""
    if abs(ns) < 1_000_000:
        return f"{ns / 1000.0:.1f} us"
    return f"{ns / 1e6:.2f} ms"


def fmt_pct(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.0f}%" if whole > 0 else "n/a"


def fmt_gbps(nbytes: float, ns: float) -> str:
    # bytes per ns is GB/s (1e9 / 1e9)
    return f"{nbytes / ns:.1f} GB/s" if ns > 0 else "n/a"


def plural(n: int, word: str, words: str | None = None) -> str:
    """``"1 copy"``, ``"3 copies"``."""
    return f"{n} {word if n == 1 else (words or word + 's')}"


def fmt_bytes(nbytes: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{int(nbytes)} B"


@dataclass(frozen=True)
class Comparison:
    """Per-op comparison columns (one row per op found in both timelines, program order).

    Times are int64 ns relative to each run's origin (:func:`run_origin`); :data:`NO_TIME` marks
    a missing time. ``on_device`` tells whether the row compares device spans (True) or host call
    spans (False). Error columns are model minus measurement; ``duration_error`` is relative to
    the measured duration (NaN where it cannot be computed).
    """

    index: np.ndarray
    ops: list[str]
    streams: list[str | None]
    labels: list[str]
    bytes: np.ndarray
    on_device: np.ndarray
    sim_start: np.ndarray
    sim_end: np.ndarray
    meas_start: np.ndarray
    meas_end: np.ndarray
    start_error_ns: np.ndarray
    end_error_ns: np.ndarray
    duration_error_ns: np.ndarray
    duration_error: np.ndarray
    flagged: np.ndarray
    sim_metrics: Metrics
    meas_metrics: Metrics
    threshold: float = DEFAULT_THRESHOLD
    min_abs_ns: int = DEFAULT_MIN_ABS_NS
    sim_device: str = ""
    meas_device: str = ""
    only_simulated: tuple[int, ...] = field(default_factory=tuple)
    only_measured: tuple[int, ...] = field(default_factory=tuple)

    def __len__(self) -> int:
        return len(self.index)

    @property
    def sim_duration(self) -> np.ndarray:
        return _durations(self.sim_start, self.sim_end)

    @property
    def meas_duration(self) -> np.ndarray:
        return _durations(self.meas_start, self.meas_end)

    @property
    def makespan_error(self) -> float:
        """Relative makespan error of the model, (sim - measured) / measured (NaN if no run)."""
        meas = self.meas_metrics.makespan_ns
        if meas <= 0:
            return float("nan")
        return (self.sim_metrics.makespan_ns - meas) / meas

    @property
    def flagged_indexes(self) -> list[int]:
        """Program indexes of the flagged ops."""
        return [int(i) for i in self.index[self.flagged]]

    def row_of_index(self, program_index: int) -> int | None:
        hits = np.flatnonzero(self.index == program_index)
        return int(hits[0]) if len(hits) else None

    def duration_causes(self, rows: Sequence[int]) -> list[str]:
        """The likely causes of the duration errors of ``rows`` (comparison rows), in words:
        copy bandwidth per direction, and kernel time (a fixed cost or the block model)."""
        texts = []
        copies = []
        for kind in ("h2d", "d2h", "d2d"):
            sel = [r for r in rows if self.ops[r] == kind]
            if sel:
                nbytes = int(self.bytes[sel].sum())
                copies.append(
                    f"{plural(len(sel), kind.upper() + ' copy', kind.upper() + ' copies')} ran "
                    f"at {fmt_gbps(nbytes, int(self.meas_duration[sel].sum()))} on the GPU but "
                    f"at {fmt_gbps(nbytes, int(self.sim_duration[sel].sum()))} in the model"
                )
        if copies:
            texts.append(
                "; ".join(copies) + ": the preset's copy bandwidth or latency does not match "
                "this machine (PCIe link width and generation, NUMA placement of the host "
                "buffer, IOMMU)."
            )
        sel = [r for r in rows if self.ops[r] in ("kernel", "memset")]
        if sel:
            sim = self.sim_duration[sel].astype(np.float64)
            diff = float(np.median(self.meas_duration[sel] - sim))
            ratio = float(np.median(self.meas_duration[sel] / np.maximum(sim, 1.0)))
            text = (
                f"{plural(len(sel), 'kernel')} took {ratio:.2f}x the modelled time (median "
                f"difference {fmt_time(diff)})"
            )
            if float(np.median(sim)) < 50_000 and abs(diff) < 20_000:
                texts.append(text + ": for kernels this short a fixed cost (launch latency) rules.")
            else:
                texts.append(
                    text + ": the block time, residency (blocks per SM) or SM sharing between "
                    "concurrent kernels differs from the model."
                )
        return texts

    def errors_of(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start and end error (us) and duration error (%) of the ops with program indexes
        ``index``, model minus measurement; NaN where an op is not in both timelines or a time
        is missing. The CSV and trace exports take their error figures from here."""
        index = np.asarray(index, dtype=np.int64)
        if not len(self):
            nan = np.full(len(index), np.nan)
            return nan, nan.copy(), nan.copy()
        pos = np.minimum(np.searchsorted(self.index, index), len(self) - 1)
        found = self.index[pos] == index

        def take(col_ns: np.ndarray) -> np.ndarray:
            us = np.where(col_ns != NO_TIME, col_ns / 1000.0, np.nan)
            return np.where(found, us[pos], np.nan)

        dur_pct = np.where(found, 100.0 * self.duration_error[pos], np.nan)
        return take(self.start_error_ns), take(self.end_error_ns), dur_pct

    # -- JSON -----------------------------------------------------------------------------------
    def rows_json(self) -> list[dict[str, Any]]:
        """Per-op rows for ``swimlanes compare --json`` (microseconds, errors model - measured)."""
        rows = []
        for r in range(len(self)):
            dur_err = float(self.duration_error[r])
            rows.append(
                {
                    "index": int(self.index[r]),
                    "op": self.ops[r],
                    "stream": self.streams[r],
                    "label": self.labels[r],
                    "span": "device" if self.on_device[r] else "host",
                    "sim_start_us": _us(int(self.sim_start[r])),
                    "sim_end_us": _us(int(self.sim_end[r])),
                    "meas_start_us": _us(int(self.meas_start[r])),
                    "meas_end_us": _us(int(self.meas_end[r])),
                    "start_error_us": _us(int(self.start_error_ns[r])),
                    "end_error_us": _us(int(self.end_error_ns[r])),
                    "duration_error_pct": None if np.isnan(dur_err) else round(100 * dur_err, 2),
                    "flagged": bool(self.flagged[r]),
                }
            )
        return rows

    def summary_json(self) -> dict[str, Any]:
        """The run-level figures of both timelines (no per-op rows; see :meth:`to_json`)."""
        sim, meas = self.sim_metrics, self.meas_metrics
        err = self.makespan_error
        engines = sorted(set(sim.engine_busy_pct) | set(meas.engine_busy_pct))
        return {
            "device_sim": self.sim_device,
            "device_measured": self.meas_device,
            "makespan_sim_us": _us(sim.makespan_ns),
            "makespan_measured_us": _us(meas.makespan_ns),
            "makespan_error_pct": None if np.isnan(err) else round(100 * err, 2),
            "serial_sim_us": _us(sim.serial_ns),
            "serial_measured_us": _us(meas.serial_ns),
            "speedup_sim": round(float(sim.speedup), 3),
            "speedup_measured": round(float(meas.speedup), 3),
            "overlap_sim_pct": round(float(sim.overlap_pct), 2),
            "overlap_measured_pct": round(float(meas.overlap_pct), 2),
            "engine_busy_pct": {
                name: {
                    "sim": _round_or_none(sim.engine_busy_pct.get(name)),
                    "measured": _round_or_none(meas.engine_busy_pct.get(name)),
                }
                for name in engines
            },
            "gpu_waiting_on_host_sim_us": _us(sim.gpu_waiting_on_host_ns),
            "gpu_waiting_on_host_measured_us": _us(meas.gpu_waiting_on_host_ns),
            "threshold_pct": round(100 * self.threshold, 2),
            "min_abs_us": self.min_abs_ns / 1000.0,
            "flagged": int(self.flagged.sum()),
            "compared": len(self),
            "only_simulated": list(self.only_simulated),
            "only_measured": list(self.only_measured),
        }

    def to_json(self) -> dict[str, Any]:
        """Summary plus ``"ops"``: the whole ``swimlanes compare --json`` object."""
        return {**self.summary_json(), "ops": self.rows_json()}


def _round_or_none(v: float | None) -> float | None:
    return None if v is None else round(float(v), 2)


def _durations(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    ok = (start != NO_TIME) & (end != NO_TIME)
    return np.where(ok, end - start, NO_TIME)


def _spans(tl: Timeline, rows: np.ndarray, use_device: np.ndarray) -> tuple[np.ndarray, ...]:
    """Start/end per row (device span or host call span) relative to the run origin."""
    origin = run_origin(tl)
    start = np.where(use_device, tl.start[rows], tl.issue_start[rows])
    end = np.where(use_device, tl.end[rows], tl.issue_end[rows])
    out = []
    for col in (start, end):
        col = col.astype(np.int64)
        ok = col != NO_TIME
        col[ok] -= origin
        out.append(col)
    return out[0], out[1]


def _noise_floors(
    measured: Timeline, rows: np.ndarray, min_abs_ns: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the smallest start / end error worth flagging: ``min_abs_ns``, or the
    measurement's own spread over repetitions (p90 - p10) where that is larger."""
    floors = []
    for spread in (measured.start_spread, measured.end_spread):
        floor = np.full(len(rows), min_abs_ns, dtype=np.int64)
        if spread is not None:
            col = spread[rows]
            floor = np.where(col != NO_TIME, np.maximum(floor, col), floor)
        floors.append(floor)
    return floors[0], floors[1]


def _matched_rows(sim: Timeline, meas: Timeline) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Program indexes found in both, and the row of each in ``sim`` and ``meas``."""
    common, sim_rows, meas_rows = np.intersect1d(
        sim.index, meas.index, assume_unique=False, return_indices=True
    )
    return common, sim_rows, meas_rows


def compare_timelines(
    simulated: Timeline,
    measured: Timeline,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    min_abs_ns: int = DEFAULT_MIN_ABS_NS,
) -> Comparison:
    """Compare a simulated timeline with a measured one, op by op (see the module docstring)."""
    if not 0 < threshold < 10:
        raise ValueError(f"threshold must be a fraction such as 0.1 (got {threshold})")
    if min_abs_ns < 0:
        raise ValueError(f"min_abs_ns must be >= 0 (got {min_abs_ns})")
    index, sim_rows, meas_rows = _matched_rows(simulated, measured)
    on_device = simulated.on_device[sim_rows] & measured.on_device[meas_rows]
    s_start, s_end = _spans(simulated, sim_rows, on_device)
    m_start, m_end = _spans(measured, meas_rows, on_device)

    have_start = (s_start != NO_TIME) & (m_start != NO_TIME)
    have_end = (s_end != NO_TIME) & (m_end != NO_TIME)
    have_both = have_start & have_end
    start_err = np.where(have_start, s_start - m_start, NO_TIME)
    end_err = np.where(have_end, s_end - m_end, NO_TIME)
    s_dur = np.where(have_both, s_end - s_start, 0)
    m_dur = np.where(have_both, m_end - m_start, 0)
    dur_err_ns = np.where(have_both, s_dur - m_dur, NO_TIME)
    with np.errstate(divide="ignore", invalid="ignore"):
        dur_rel = np.where(have_both & (m_dur > 0), (s_dur - m_dur) / m_dur, np.nan)

    start_floor, end_floor = _noise_floors(measured, meas_rows, min_abs_ns)
    abs_dur = np.abs(s_dur - m_dur)
    dur_floor = np.maximum(start_floor, end_floor)
    dur_flag = have_both & (abs_dur > threshold * np.maximum(s_dur, m_dur)) & (abs_dur > dur_floor)
    abs_start = np.abs(np.where(have_start, s_start - m_start, 0))
    position = np.maximum(np.where(have_end, s_end, 0), np.where(have_end, m_end, 0))
    start_flag = have_start & (abs_start > threshold * position) & (abs_start > start_floor)

    sim_only = np.setdiff1d(simulated.index, index)
    meas_only = np.setdiff1d(measured.index, index)
    return Comparison(
        index=index.astype(np.int64),
        ops=[simulated.op_kind(int(r)) for r in sim_rows],
        streams=[simulated.stream_name(int(r)) for r in sim_rows],
        labels=[simulated.labels[int(r)] for r in sim_rows],
        bytes=simulated.bytes[sim_rows].astype(np.int64),
        on_device=on_device,
        sim_start=s_start,
        sim_end=s_end,
        meas_start=m_start,
        meas_end=m_end,
        start_error_ns=start_err.astype(np.int64),
        end_error_ns=end_err.astype(np.int64),
        duration_error_ns=dur_err_ns.astype(np.int64),
        duration_error=dur_rel.astype(np.float64),
        flagged=dur_flag | start_flag,
        sim_metrics=compute_metrics(simulated),
        meas_metrics=compute_metrics(measured),
        threshold=threshold,
        min_abs_ns=int(min_abs_ns),
        sim_device=simulated.device,
        meas_device=measured.device,
        only_simulated=tuple(int(i) for i in sim_only),
        only_measured=tuple(int(i) for i in meas_only),
    )


# -- accuracy over many examples ---------------------------------------------------------------
@dataclass(frozen=True)
class AccuracyRow:
    example: str
    sim_ms: float
    meas_ms: float

    @property
    def error_pct(self) -> float:
        """Model error of the makespan, (sim - measured) / measured, in percent."""
        return 100.0 * (self.sim_ms - self.meas_ms) / self.meas_ms


@dataclass(frozen=True)
class AccuracyTable:
    """Makespan accuracy over examples: the README's table and its median / worst |error|."""

    rows: tuple[AccuracyRow, ...]

    @property
    def median_abs_error_pct(self) -> float:
        return statistics.median(abs(r.error_pct) for r in self.rows)

    @property
    def worst(self) -> AccuracyRow:
        return max(self.rows, key=lambda r: abs(r.error_pct))

    @property
    def worst_abs_error_pct(self) -> float:
        return abs(self.worst.error_pct)

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [
                {
                    "example": r.example,
                    "sim_ms": round(r.sim_ms, 3),
                    "meas_ms": round(r.meas_ms, 3),
                    "error_pct": round(r.error_pct, 2),
                }
                for r in self.rows
            ],
            "median_abs_error_pct": round(self.median_abs_error_pct, 2),
            "worst_abs_error_pct": round(self.worst_abs_error_pct, 2),
            "worst_example": self.worst.example,
        }

    def to_markdown(self) -> str:
        """A Markdown table with a closing line for the median and worst |error|."""
        lines = [
            "| Example | Simulated (ms) | Measured (ms) | Error |",
            "|---|---:|---:|---:|",
        ]
        for r in self.rows:
            lines.append(
                f"| {r.example} | {r.sim_ms:.3f} | {r.meas_ms:.3f} | {r.error_pct:+.1f}% |"
            )
        lines.append("")
        lines.append(
            f"Median |error| {self.median_abs_error_pct:.1f}%, worst |error| "
            f"{self.worst_abs_error_pct:.1f}% ({self.worst.example})."
        )
        return "\n".join(lines) + "\n"


def accuracy_table(rows: Sequence[tuple[str, float, float]]) -> AccuracyTable:
    """Build the accuracy table from ``(example, simulated ms, measured ms)`` rows.

    Raises ValueError naming the example when a row is unusable (no rows, a measured makespan
    that is not positive, a time that is not a finite number).
    """
    if not rows:
        raise ValueError("accuracy table needs at least one (example, sim_ms, meas_ms) row")
    out = []
    for example, sim_ms, meas_ms in rows:
        sim_f, meas_f = float(sim_ms), float(meas_ms)
        if not (np.isfinite(sim_f) and np.isfinite(meas_f)) or sim_f < 0:
            raise ValueError(f"{example}: times must be finite numbers (got {sim_ms}, {meas_ms})")
        if meas_f <= 0:
            raise ValueError(f"{example}: measured makespan must be positive (got {meas_ms})")
        out.append(AccuracyRow(str(example), sim_f, meas_f))
    return AccuracyTable(tuple(out))
