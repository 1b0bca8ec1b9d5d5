"""``swimlanes compare FILE [--device NAME] [--repeat N] [--measured RUN.json] [--json]
[--no-calibrate]``.

Measures the pipeline on this GPU (or takes a saved run with ``--measured``; without a GPU, the
shipped H200 measurement of a shipped example, saying so), simulates it, and reports per-op
start/end errors and the makespan error (model minus measurement). The simulation runs on
``--device``, else on the cached calibration of the host the measurement came from (this host
is calibrated first when measuring now and it has none; ``--no-calibrate`` skips that), else,
with a warning, on another host's calibration of that GPU or the shipped preset (``h200``).
The text output names the preset and where and when it was calibrated; ``--json`` adds
``preset`` and ``preset_warning``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from swimlanes.engine import get_preset, simulate
from swimlanes.model.document import Pipeline
from swimlanes.model.io import load_pipeline
from swimlanes.resources import pipeline_argument
from swimlanes.services.band_output import band_json, band_phrase, compute_band
from swimlanes.services.errors import CommandError
from swimlanes.services.measuring import measure
from swimlanes.services.runs import load_measurement, shipped_measurement
from swimlanes.timeline.compare import compare_timelines
from swimlanes.timeline.timeline import NO_TIME, Timeline

if TYPE_CHECKING:
    from swimlanes.gpu.preset_choice import PresetChoice


def measured_timeline(args: argparse.Namespace, pipeline: Pipeline) -> tuple[Timeline, str]:
    """The measured side and where it came from."""
    from swimlanes.gpu import NO_GPU_MESSAGE, cuda_available

    path: str | Path | None = args.measured
    if path is None and not cuda_available():
        path = shipped_measurement(args.file)
        if path is None:
            raise CommandError(f"{NO_GPU_MESSAGE}; no saved measurement of {Path(args.file).name}")
        print(
            f"{NO_GPU_MESSAGE}: comparing with the shipped measurement {path.name}", file=sys.stderr
        )
    if path is not None:
        return load_measurement(path), str(path)
    # The calibration is only for the comparison: not needed when --device names the preset.
    calibrate = not (getattr(args, "no_calibrate", False) or args.device)
    return measure(pipeline, args.repeat, 1, args.backend, calibrate=calibrate), "this GPU"


def _us(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def format_comparison(data: dict, source: str) -> str:
    """The text form of ``swimlanes compare``: per op the simulated and measured span and the
    end error, model minus measurement (``data`` is :meth:`Comparison.to_json` plus
    ``pipeline``), then the makespans and how many ops are flagged."""
    lines = [
        f"{data['pipeline']}: simulated on {data['device_sim']}, measured on "
        f"{data['device_measured']} ({source}); times in us, errors = model - measurement",
        "",
        f"{'#':>4}  {'op':<12} {'label':<20} {'sim start':>10} {'sim end':>10} "
        f"{'meas start':>10} {'meas end':>10} {'end err':>9}  flag",
    ]
    for r in data["ops"]:
        lines.append(
            f"{r['index']:>4}  {r['op']:<12} {(r['label'] or '')[:20]:<20} {_us(r['sim_start_us']):>10} "
            f"{_us(r['sim_end_us']):>10} {_us(r['meas_start_us']):>10} {_us(r['meas_end_us']):>10} "
            f"{_us(r['end_error_us']):>9}  {'!' if r['flagged'] else ''}"
        )
    err = data["makespan_error_pct"]
    lines += [
        "",
        f"makespan  simulated {_us(data['makespan_sim_us'])} us, measured "
        f"{_us(data['makespan_measured_us'])} us, error {'-' if err is None else f'{err:+.1f}%'}",
        f"flagged   {sum(1 for r in data['ops'] if r['flagged'])} of {len(data['ops'])} ops",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    pipeline = load_pipeline(pipeline_argument(args.file))
    measured, source = measured_timeline(args, pipeline)
    if not len(measured) or measured.t0 == NO_TIME:
        raise CommandError("the measurement holds no ops")
    choice = host_preset(args.device, measured)
    try:
        simulated = simulate(pipeline, get_preset(choice.device))
    except ValueError as err:
        raise CommandError(str(err)) from None
    data = compare_timelines(simulated, measured).to_json()
    data["pipeline"] = pipeline.name
    data["measured_source"] = source
    data["backend"] = measured.meta.get("backend")
    data["preset"] = choice.to_json()
    data["preset_warning"] = choice.warning
    band = _band_verdict(pipeline, choice.device, measured, args, data)
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(format_comparison(data, source))
        print(band)
        print(f"preset    {choice.device}: {choice.origin}")
    if choice.warning and not args.json:
        print(f"warning: {choice.warning}", file=sys.stderr)
    return 0


def host_preset(requested: str | None, measured: Timeline) -> PresetChoice:
    """The preset to simulate on: ``requested``, else the calibration of the measurement's
    host (see swimlanes.gpu.preset_choice); skipped cache files are reported on stderr."""
    from swimlanes.gpu.preset_choice import choose_preset

    choice, problems = choose_preset(measured, requested)
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    return choice


def _band_verdict(
    pipeline: Pipeline, device: str, measured: Timeline, args: argparse.Namespace, data: dict
) -> str:
    """Add the prediction band and ``measured_in_band`` to ``data``; the text line."""
    band = compute_band(pipeline, get_preset(device), args.band_samples, args.seed)
    data.update(band_json(band))
    if isinstance(band, str):
        data["measured_in_band"] = None
        return f"band      none: {band}"
    inside = band.contains(measured.makespan_ns)
    data["measured_in_band"] = inside
    verdict = "inside" if inside else "outside"
    return f"band      predicted {band_phrase(band)}: the measurement is {verdict}"
