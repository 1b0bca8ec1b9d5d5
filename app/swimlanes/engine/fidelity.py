"""How well the simulator predicts measured runs: per run and over a set of runs.

The figure a user cares about first is the **device span**: from the first op's start on the
device to the last op's end (host-only time before the first op and after the last is not the
GPU's). For each measured run the pipeline is simulated on a preset and compared:

* ``error``: (simulated - measured) / measured device span;
* per-op start and end errors as fractions of the measured device span (ops with a device span
  in both timelines), so that a 50 us miss counts the same in a 1 ms and a 1 ms in a 20 ms run;
* where a prediction band is given (:mod:`swimlanes.engine.bands`), whether the measured span
  fell inside its p10..p90.

:func:`summarize` gives the set's median, p90 and worst |error|, the per-op error quantiles and
the runs that miss by more than a threshold. Used by the fidelity benchmark
(benchmarks/fidelity/).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from swimlanes.engine.presets import DevicePreset
from swimlanes.engine.simulator import simulate
from swimlanes.model.document import Pipeline
from swimlanes.timeline.compare import compare_timelines
from swimlanes.timeline.timeline import NO_TIME, Timeline

#: A run whose device span the model misses by more than this is listed as a miss.
DEFAULT_MISS = 0.05


@dataclass(frozen=True)
class RunAccuracy:
    """One measured run against its simulation."""

    name: str
    sim_span_ns: int
    meas_span_ns: int
    #: Per-op |start error| and |end error| as fractions of the measured device span.
    start_errors: np.ndarray
    end_errors: np.ndarray
    #: The op (program index, label) whose end the model misses most, and by how much (ns).
    worst_op: tuple[int, str, int] | None
    band_ns: tuple[int, int] | None = None

    @property
    def error(self) -> float:
        """(simulated - measured) / measured device span."""
        return (self.sim_span_ns - self.meas_span_ns) / self.meas_span_ns

    @property
    def in_band(self) -> bool | None:
        if self.band_ns is None:
            return None
        return self.band_ns[0] <= self.meas_span_ns <= self.band_ns[1]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "sim_span_us": round(self.sim_span_ns / 1000.0, 3),
            "meas_span_us": round(self.meas_span_ns / 1000.0, 3),
            "error_pct": round(100.0 * self.error, 3),
            "median_end_error_pct": _pct(np.median(self.end_errors))
            if len(self.end_errors)
            else None,
            "max_end_error_pct": _pct(self.end_errors.max()) if len(self.end_errors) else None,
        }
        if self.worst_op is not None:
            index, label, err = self.worst_op
            out["worst_op"] = {"index": index, "label": label, "end_error_us": err / 1000.0}
        if self.band_ns is not None:
            out["band_p10_us"] = round(self.band_ns[0] / 1000.0, 3)
            out["band_p90_us"] = round(self.band_ns[1] / 1000.0, 3)
            out["in_band"] = self.in_band
        return out


def _pct(fraction: float | np.floating) -> float:
    return round(100.0 * float(fraction), 3)


def run_accuracy(
    name: str,
    pipeline: Pipeline,
    measured: Timeline,
    preset: DevicePreset,
    *,
    simulated: Timeline | None = None,
    band_ns: tuple[int, int] | None = None,
) -> RunAccuracy:
    """Simulate ``pipeline`` on ``preset`` (unless ``simulated`` is given) and compare it with
    ``measured``. ValueError when the measurement has no device span."""
    meas_span = measured.device_span_ns
    if meas_span <= 0:
        raise ValueError(f"{name}: the measured run has no device span")
    sim = simulated if simulated is not None else simulate(pipeline, preset)
    cmp = compare_timelines(sim, measured)
    both = cmp.on_device & (cmp.sim_start != NO_TIME) & (cmp.meas_start != NO_TIME)
    # Times of both timelines count from the first host call, so starts and ends line up.
    start_err = np.abs(cmp.sim_start[both] - cmp.meas_start[both]) / meas_span
    end_diff = cmp.sim_end[both] - cmp.meas_end[both]
    worst = None
    if len(end_diff):
        k = int(np.argmax(np.abs(end_diff)))
        row = int(np.flatnonzero(both)[k])
        worst = (int(cmp.index[row]), cmp.labels[row], int(end_diff[k]))
    return RunAccuracy(
        name=name,
        sim_span_ns=sim.device_span_ns,
        meas_span_ns=meas_span,
        start_errors=start_err.astype(np.float64),
        end_errors=(np.abs(end_diff) / meas_span).astype(np.float64),
        worst_op=worst,
        band_ns=band_ns,
    )


def summarize(rows: Sequence[RunAccuracy], miss: float = DEFAULT_MISS) -> dict[str, Any]:
    """Median, p90 and worst |device span error| (percent), per-op start/end error quantiles
    (percent of the device span, over all ops of all runs), the misses (runs over ``miss``) and,
    where runs have bands, the band coverage and median band width."""
    if not rows:
        raise ValueError("no runs to summarise")
    errors = np.abs(np.array([r.error for r in rows]))
    starts = np.concatenate([r.start_errors for r in rows])
    ends = np.concatenate([r.end_errors for r in rows])
    out: dict[str, Any] = {
        "runs": len(rows),
        "median_error_pct": _pct(np.median(errors)),
        "p90_error_pct": _pct(np.percentile(errors, 90)),
        "worst_error_pct": _pct(errors.max()),
        "worst_run": rows[int(np.argmax(errors))].name,
        "mean_signed_error_pct": _pct(np.mean([r.error for r in rows])),
        "ops": int(len(ends)),
        "op_start_error_pct": _quantiles(starts),
        "op_end_error_pct": _quantiles(ends),
        "miss_threshold_pct": _pct(miss),
        "misses": [r.name for r in rows if abs(r.error) > miss],
    }
    banded = [r for r in rows if r.band_ns is not None]
    if banded:
        # (banded holds only rows with a band, which mypy cannot see through the filter.)
        widths = [(r.band_ns[1] - r.band_ns[0]) / r.meas_span_ns for r in banded]  # type: ignore[index]
        out["band_runs"] = len(banded)
        out["band_coverage_pct"] = _pct(np.mean([bool(r.in_band) for r in banded]))
        out["median_band_width_pct"] = _pct(np.median(widths))
    return out


def _quantiles(values: np.ndarray) -> dict[str, float | None]:
    if not len(values):
        return {"median": None, "p90": None, "max": None}
    return {
        "median": _pct(np.median(values)),
        "p90": _pct(np.percentile(values, 90)),
        "max": _pct(values.max()),
    }


def format_summary(title: str, summary: dict[str, Any]) -> str:
    """A few lines for a terminal."""
    lines = [
        f"{title}: {summary['runs']} runs, device span error median "
        f"{summary['median_error_pct']:.1f}%, p90 {summary['p90_error_pct']:.1f}%, worst "
        f"{summary['worst_error_pct']:.1f}% ({summary['worst_run']}); mean signed "
        f"{summary['mean_signed_error_pct']:+.1f}%",
        f"  per-op end error (% of span) median {summary['op_end_error_pct']['median']}, p90 "
        f"{summary['op_end_error_pct']['p90']}; start median "
        f"{summary['op_start_error_pct']['median']}, p90 {summary['op_start_error_pct']['p90']}",
        f"  {len(summary['misses'])} runs miss by more than {summary['miss_threshold_pct']:.0f}%",
    ]
    if "band_coverage_pct" in summary:
        lines.append(
            f"  measured span inside the p10-p90 band in {summary['band_coverage_pct']:.0f}% of "
            f"{summary['band_runs']} runs; median band width {summary['median_band_width_pct']:.1f}%"
        )
    return "\n".join(lines)
