"""Prediction bands: how sure the simulator is of a pipeline's times.

A real run varies from one repetition to the next (host API calls jitter, pageable copies run
at a rate that changes from run to run, copy engines pick among ready copies by the order they
became ready), and the model itself is not exact. :func:`simulate_band` simulates the pipeline
``samples`` times with perturbed inputs and takes percentiles over the sampled runs:

* per sample, one factor on all host API costs (``host_scale``) and one on the pageable copy
  rate (``pageable_gbps``);
* per op, a factor on its host call's cost (``host_cost``) and on its device time (``copy`` for
  H2D and D2H copies, ``kernel`` for kernels, D2D copies and memsets).

Each factor is exp(sigma * z) with z standard normal and sigma from the preset's ``spread``
(engine.preset_checks.SPREAD_KEYS; missing keys take DEFAULT_SPREAD), so the sampled runs'
median stays near the plain simulation. A changed copy order follows from the jittered ready
times. The p10 and p90 of the samples are then stretched by the preset's model-error term
(``model_error_low`` / ``model_error_high``, fitted on measured pipelines by
benchmarks/fidelity/fit_band.py): without it the band is an 80% interval of the sampled runs;
with it, the interval the fit made hold the measured time for 90% of the training pipelines.

Deterministic: the same pipeline, preset, ``samples`` and ``seed`` give the same band.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from swimlanes.engine.plan import K, Plan
from swimlanes.engine.preset_checks import DEFAULT_SPREAD
from swimlanes.engine.presets import DevicePreset, get_preset
from swimlanes.engine.simulator import SimulationCancelled, simulate
from swimlanes.model.document import Pipeline
from swimlanes.timeline.timeline import NO_TIME

#: The model's own error, fitted by ``benchmarks/fidelity/fit_band.py --shared`` on the
#: training halves (200 random pipelines each) of the four fidelity data sets measured on
#: 2026-11-24 and 2026-11-25, each on an H200 and an H100, each with its same-call
#: calibration (resources/measurements/fidelity-*.json.gz). With it the held-out halves'
#: measured device spans fell inside the band for 92.0% and 91.0% (H200, 11-24 and 11-25) and
#: 90.0% and 92.0% (H100) of 200 pipelines each, median band width 27.9%, 28.7%, 32.2% and
#: 40.2% of the span. ``swimlanes calibrate`` writes it into every preset it measures. Refit
#: it whenever the simulator's model changes: it is that model's error, not the GPU's.
FITTED_MODEL_ERROR: dict[str, float] = {"model_error_low": -0.0668, "model_error_high": 0.2088}
#: Samples when none are asked for: enough for stable p10 / p90 of small pipelines.
DEFAULT_SAMPLES = 64
#: Fewest samples a band is computed from (below this p10 / p90 are noise).
MIN_SAMPLES = 16
MAX_SAMPLES = 1000
#: Ops times samples simulated at most when the sample count is chosen automatically (about
#: half a second on the 2-core machine of README's figures).
AUTO_OP_SAMPLES = 64_000
#: Pipelines with more ops than this get no band (MIN_SAMPLES runs would take too long).
MAX_BAND_OPS = 20_000
#: The percentiles a band spans before the model error stretches it.
LOW_PCT, HIGH_PCT = 10.0, 90.0

_COPY_KINDS = (K["h2d"], K["d2h"])
_SM_KINDS = (K["kernel"], K["d2d"], K["memset"])


class BandRefused(ValueError):
    """No band for this pipeline and preset: too many ops, or a preset that models no
    variation (the message says why)."""


@dataclass(frozen=True, eq=False)
class Band:
    """Percentiles over sampled runs, stretched by the model error; times in int64 ns.

    ``end_low`` / ``end_high`` are indexed like the simulated timeline's rows (NO_TIME where
    an op has no device end). ``level_pct`` is what the band claims: 80 (the sampled runs'
    p10..p90 alone) or 90 (stretched by a fitted model-error term).
    """

    samples: int
    seed: int
    makespan_low: int
    makespan_p50: int
    makespan_high: int
    span_low: int
    span_p50: int
    span_high: int
    end_low: np.ndarray
    end_high: np.ndarray
    level_pct: int
    model_error: bool

    def contains(self, makespan_ns: int) -> bool:
        """Whether a (measured) makespan lies inside the band."""
        return self.makespan_low <= makespan_ns <= self.makespan_high

    def span_contains(self, span_ns: int) -> bool:
        """Whether a (measured) device span lies inside the band."""
        return self.span_low <= span_ns <= self.span_high


def spread_of(preset: DevicePreset) -> dict[str, float]:
    """The preset's spread figures with defaults filled in."""
    return {**DEFAULT_SPREAD, **preset.spread}


def auto_samples(n_ops: int) -> int:
    """How many samples to take for a pipeline of ``n_ops`` ops (BandRefused if too large)."""
    if n_ops > MAX_BAND_OPS:
        raise BandRefused(
            f"no prediction band for {n_ops:,} ops: at most {MAX_BAND_OPS:,} "
            "(each band simulates the pipeline many times)"
        )
    return max(MIN_SAMPLES, min(DEFAULT_SAMPLES, AUTO_OP_SAMPLES // max(1, n_ops)))


def simulate_band(
    pipeline: Pipeline,
    device: DevicePreset | str = "h200",
    *,
    samples: int | None = None,
    seed: int = 0,
    progress: Callable[[float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
) -> Band:
    """Simulate ``pipeline`` ``samples`` times with perturbed inputs; see the module docstring.

    ``samples`` None chooses by size (:func:`auto_samples`). Raises BandRefused for pipelines
    too large, ValueError as :func:`simulate` does, SimulationCancelled when ``cancel()``.
    """
    preset = device if isinstance(device, DevicePreset) else get_preset(device)
    from swimlanes.engine.multi import needs_multi_device

    if needs_multi_device(pipeline):
        what = "several GPUs" if pipeline.is_multi_device else "several host threads"
        raise BandRefused(f"prediction bands are not available yet for pipelines of {what}")
    n_ops = len(pipeline.program)
    if samples is None:
        samples = auto_samples(n_ops)
    elif not MIN_SAMPLES <= samples <= MAX_SAMPLES:
        raise ValueError(f"band samples must be from {MIN_SAMPLES} to {MAX_SAMPLES}")
    elif n_ops > MAX_BAND_OPS:
        auto_samples(n_ops)  # raises BandRefused with the reason
    spread = spread_of(preset)
    if not any(spread.values()):
        raise BandRefused(
            f"the {preset.name} preset models no run-to-run variation: its schedule is exact"
        )
    perturb = _Perturbation(pipeline, preset, spread, np.random.default_rng(seed))
    makespans = np.zeros(samples, dtype=np.int64)
    spans = np.zeros(samples, dtype=np.int64)
    ends = np.zeros((samples, n_ops), dtype=np.int64)
    for k in range(samples):
        if cancel is not None and cancel():
            raise SimulationCancelled("prediction band cancelled")
        perturb.draw()
        tl = simulate(pipeline, preset, cancel=cancel, adjust_plan=perturb.apply)
        makespans[k], spans[k] = tl.makespan_ns, tl.device_span_ns
        ends[k] = tl.end
        if progress is not None:
            progress((k + 1) / samples)
    return _band(samples, seed, makespans, spans, ends, spread)


def _band(
    samples: int,
    seed: int,
    makespans: np.ndarray,
    spans: np.ndarray,
    ends: np.ndarray,
    spread: dict[str, float],
) -> Band:
    low_f, high_f = 1.0 + spread["model_error_low"], 1.0 + spread["model_error_high"]
    m10, m50, m90 = np.percentile(makespans, [LOW_PCT, 50.0, HIGH_PCT])
    s10, s50, s90 = np.percentile(spans, [LOW_PCT, 50.0, HIGH_PCT])
    has_end = (ends != NO_TIME).all(axis=0)
    end_low = np.full(ends.shape[1], NO_TIME, dtype=np.int64)
    end_high = end_low.copy()
    if has_end.any():
        e10, e90 = np.percentile(ends[:, has_end], [LOW_PCT, HIGH_PCT], axis=0)
        end_low[has_end] = np.floor(e10 * low_f).astype(np.int64)
        end_high[has_end] = np.ceil(e90 * high_f).astype(np.int64)
    fitted = spread["model_error_low"] < 0.0 or spread["model_error_high"] > 0.0
    return Band(
        samples=samples,
        seed=seed,
        makespan_low=int(np.floor(m10 * low_f)),
        makespan_p50=int(round(m50)),
        makespan_high=int(np.ceil(m90 * high_f)),
        span_low=int(np.floor(s10 * low_f)),
        span_p50=int(round(s50)),
        span_high=int(np.ceil(s90 * high_f)),
        end_low=end_low,
        end_high=end_high,
        level_pct=90 if fitted else 80,
        model_error=fitted,
    )


class _Perturbation:
    """Draws one sample's factors (:meth:`draw`) and applies them to a fresh plan (:meth:`apply`,
    the simulator's ``adjust_plan`` hook)."""

    def __init__(
        self,
        pipeline: Pipeline,
        preset: DevicePreset,
        spread: dict[str, float],
        rng: np.random.Generator,
    ) -> None:
        self.rng = rng
        self.spread = spread
        self.gap = round(preset.host_call_gap_us * 1000.0)
        program = pipeline.program
        self.n = len(program)
        kinds = np.array([K[op.op] for op in program], dtype=np.int64)
        self.is_copy = np.isin(kinds, _COPY_KINDS)
        self.is_sm = np.isin(kinds, _SM_KINDS)
        self.kernels = np.flatnonzero(kinds == K["kernel"]).tolist()
        self.pageable = self.is_copy & np.array(
            [op.effective_host_memory == "pageable" for op in program], dtype=bool
        )
        # The device-time sigma of each op (host-only ops and events keep their times).
        self.device_sigma = np.where(
            self.is_copy, spread["copy"], np.where(self.is_sm, spread["kernel"], 0.0)
        )
        self.cost_f = np.ones(self.n)
        self.device_f = np.ones(self.n)

    def draw(self) -> None:
        """This sample's factors: two per run, then one per op for its call and its device time
        (always drawn, in this order, so a seed gives the same runs whatever the spread)."""
        rng, s = self.rng, self.spread
        z_host, z_pageable = rng.standard_normal(2)
        z_cost = rng.standard_normal(self.n)
        z_device = rng.standard_normal(self.n)
        self.cost_f = np.exp(s["host_scale"] * z_host + s["host_cost"] * z_cost)
        self.device_f = np.exp(self.device_sigma * z_device)
        self.device_f[self.pageable] *= np.exp(s["pageable_gbps"] * z_pageable)

    def apply(self, plan: Plan) -> None:
        """Scale the plan's host costs (beyond the host's gap between calls), device times,
        kernel block times and pageable staging times by this sample's factors."""
        if not self.n:
            return
        gap = self.gap
        cost = np.asarray(plan.cost, dtype=np.float64)
        plan.cost = (
            np.rint(gap + np.maximum(cost - gap, 0.0) * self.cost_f).astype(np.int64).tolist()
        )
        solo = np.asarray(plan.solo, dtype=np.float64)
        scaled = np.where(solo > 0, np.maximum(1.0, np.rint(solo * self.device_f)), solo)
        plan.solo = scaled.astype(np.int64).tolist()
        f = self.device_f
        for i in self.kernels:
            shape = plan.kernel[i]
            if shape is not None:
                blocks, cost_slots, max_res, block_ns = shape
                plan.kernel[i] = (blocks, cost_slots, max_res, max(1.0, block_ns * float(f[i])))
        if plan.stage:
            stage = plan.stage
            for i in np.flatnonzero(self.pageable).tolist():
                if (ns := stage[i]) is not None:
                    stage[i] = max(1, round(ns * float(f[i])))
