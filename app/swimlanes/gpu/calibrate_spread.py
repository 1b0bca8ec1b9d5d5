"""Measure run-to-run spread for a preset's ``spread`` figures (engine.bands).

One small pipeline (kernel launches, pinned and pageable copies on one stream) runs several
times through the executor, one timed repetition each, and the spread of what varies is turned
into the relative standard deviations of engine.preset_checks.SPREAD_KEYS: within a run, how
much calls and kernels of the same shape differ (``host_cost``, ``kernel``, ``copy``); between
runs, how much a run's typical call cost and its pageable copies differ (``host_scale``,
``pageable_gbps``). The model-error keys are not measured here (benchmarks/fidelity/fit_band.py
fits them against measured pipelines). numba is imported only through the executor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from swimlanes.gpu.errors import ExecutionCancelled
from swimlanes.model.document import OP_KINDS
from swimlanes.model.validate import pipeline_from_dict
from swimlanes.timeline.timeline import NO_TIME, Timeline

MB = 1 << 20
#: Largest figure stored: a relative spread past this says the measurement went wrong.
MAX_FIGURE = 1.0
#: A robust standard deviation from the 10th..90th percentile range of a normal sample.
_P10_P90_SIGMAS = 2.563


def spread_program(quick: bool = False) -> list[dict[str, Any]]:
    """Kernels, then pinned and pageable copies, one after another on stream ``s``."""
    kernels = 8 if quick else 16
    program: list[dict[str, Any]] = [
        {"op": "kernel", "stream": "s", "blocks": 132, "threads": 256, "duration_us": 20}
        for _ in range(kernels)
    ]
    program += [{"op": "h2d", "stream": "s", "bytes": 4 * MB, "label": "pinned"}] * 4
    program += [
        {"op": "h2d", "stream": "s", "bytes": 8 * MB, "host_memory": "pageable", "label": "pg"}
    ] * 2
    program.append({"op": "device_sync"})
    return program


def measure_spread(
    cuda_backend: Any = None,
    *,
    quick: bool = False,
    cancel: Callable[[], bool] | None = None,
) -> dict[str, float]:
    """Run the spread pipeline a few times; the ``spread`` figures (see the module docstring)."""
    from swimlanes.gpu.executor import execute

    doc = {"format": "swimlanes-pipeline", "version": 1, "name": "calibrate spread"}
    pipeline = pipeline_from_dict(
        {**doc, "streams": [{"name": "s"}], "program": spread_program(quick)}
    )
    runs: list[Timeline] = []
    for k in range(3 if quick else 5):
        if cancel is not None and cancel():
            raise ExecutionCancelled("calibration cancelled")
        runs.append(
            execute(pipeline, repeat=1, warmup=1 if k == 0 else 0, cuda_backend=cuda_backend)
        )
    return spread_figures(runs)


def spread_figures(runs: list[Timeline]) -> dict[str, float]:
    """The figures from runs of :func:`spread_program` (each one timed repetition)."""
    kernel_rows = np.flatnonzero(runs[0].kind == OP_KINDS.index("kernel"))
    pinned = [r for r, label in enumerate(runs[0].labels) if label == "pinned"]
    pageable = [r for r, label in enumerate(runs[0].labels) if label == "pg"]
    calls = [_logs(tl.issue_start, tl.issue_end, kernel_rows) for tl in runs]
    kernels = [_logs(tl.start, tl.end, kernel_rows) for tl in runs]
    copies = [_logs(tl.start, tl.end, pinned) for tl in runs]
    pages = [_logs(tl.start, tl.end, pageable) for tl in runs]
    figures = {
        "host_cost": np.median([_robust_sigma(c) for c in calls]),
        "host_scale": _sigma([np.median(c) for c in calls if len(c)]),
        "kernel": np.median([_robust_sigma(k) for k in kernels]),
        "copy": _robust_sigma(np.concatenate([c - np.median(c) for c in copies if len(c)])),
        "pageable_gbps": _sigma([np.mean(p) for p in pages if len(p)]),
    }
    return {k: round(min(MAX_FIGURE, max(0.0, float(v))), 4) for k, v in figures.items()}


def _logs(start: np.ndarray, end: np.ndarray, rows: Any) -> np.ndarray:
    """log of the positive durations of ``rows`` (missing times left out)."""
    idx = np.asarray(rows, dtype=np.int64)
    s, e = start[idx], end[idx]
    ok = (s != NO_TIME) & (e != NO_TIME)
    d = (e[ok] - s[ok]).astype(np.float64)
    return np.log(d[d > 0])


def _robust_sigma(logs: np.ndarray) -> float:
    if len(logs) < 2:
        return 0.0
    p10, p90 = np.percentile(logs, [10, 90])
    return float((p90 - p10) / _P10_P90_SIGMAS)


def _sigma(values: list[float]) -> float:
    return float(np.std(values, ddof=1)) if len(values) >= 2 else 0.0
