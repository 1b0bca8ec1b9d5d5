"""Prediction bands as the command line shows them: ``simulate --band`` and ``compare``.

Shared by both commands: computing the band (a refusal becomes a message, not an error), its
JSON keys and its line of text. The wording says what the band is: the sampled runs' p10..p90
(an 80% interval of the run-to-run spread) unless the preset carries a fitted model-error term,
which makes it the range that held the measurement for 90% of the training pipelines.
"""

from __future__ import annotations

from typing import Any

from swimlanes.engine.bands import Band, BandRefused, simulate_band
from swimlanes.engine.presets import DevicePreset
from swimlanes.model.document import Pipeline
from swimlanes.services.errors import CommandError
from swimlanes.timeline.timeline import NO_TIME, Timeline


def compute_band(
    pipeline: Pipeline, preset: DevicePreset, samples: int | None, seed: int
) -> Band | str:
    """The band (``samples`` runs, by pipeline size when None), or why there is none (a
    pipeline too large); a bad sample count is a CommandError."""
    try:
        return simulate_band(pipeline, preset, samples=samples, seed=seed)
    except BandRefused as err:
        return str(err)
    except ValueError as err:
        raise CommandError(str(err)) from None


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


def band_json(band: Band | str) -> dict[str, Any]:
    """Top-level keys: ``makespan_p10_us`` / ``makespan_p50_us`` / ``makespan_p90_us`` (the
    band's low end, the samples' median and the high end), ``band_level_pct``,
    ``band_model_error``, ``band_samples``, ``band_seed``; or ``band_refused`` with the reason."""
    if isinstance(band, str):
        return {"band_refused": band}
    return {
        "makespan_p10_us": _us(band.makespan_low),
        "makespan_p50_us": _us(band.makespan_p50),
        "makespan_p90_us": _us(band.makespan_high),
        "band_level_pct": band.level_pct,
        "band_model_error": band.model_error,
        "band_samples": band.samples,
        "band_seed": band.seed,
    }


def add_op_bands(ops: list[dict[str, Any]], timeline: Timeline, band: Band) -> None:
    """Per op row (rows of ``timeline.ops_json()``): ``end_p10_us`` / ``end_p90_us``."""
    t0 = timeline.t0
    for row, lo, hi in zip(ops, band.end_low.tolist(), band.end_high.tolist(), strict=True):
        row["end_p10_us"] = None if lo == NO_TIME else _us(lo - t0)
        row["end_p90_us"] = None if hi == NO_TIME else _us(hi - t0)


def band_phrase(band: Band) -> str:
    """ "80% of sampled runs between 7.1 and 7.9 ms" (or "90% likely ..." when the model
    error is fitted), in a unit that suits the makespan."""
    scale, unit = (1e6, "ms") if band.makespan_high >= 1_000_000 else (1e3, "us")
    lo, hi = band.makespan_low / scale, band.makespan_high / scale
    if band.model_error:
        return f"{band.level_pct}% likely between {lo:.2f} and {hi:.2f} {unit}"
    return (
        f"{band.level_pct}% of sampled runs between {lo:.2f} and {hi:.2f} {unit} "
        "(run-to-run spread; no fitted model error)"
    )


def band_line(makespan_ns: int, band: Band | str) -> str:
    """The text output's line, e.g. "makespan 7.40 ms, 80% of sampled runs between ..."."""
    if isinstance(band, str):
        return f"band      none: {band}"
    scale, unit = (1e6, "ms") if band.makespan_high >= 1_000_000 else (1e3, "us")
    return f"makespan {makespan_ns / scale:.2f} {unit}, {band_phrase(band)}"
