"""``swimlanes simulate FILE [--device NAME] [--json] [--band [--band-samples N] [--seed S]]``:
the simulated timeline as a table (``--band``: and its prediction band)."""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import Any

from swimlanes.analysis.insights import Insight, explain
from swimlanes.cli import CommandError
from swimlanes.model.document import Pipeline
from swimlanes.model.io import load_pipeline
from swimlanes.resources import pipeline_argument
from swimlanes.timeline.metrics import Metrics, compute_metrics, metrics_json
from swimlanes.timeline.timeline import NO_TIME, Timeline

#: Used when neither ``--device`` nor the pipeline's ``device`` key names one.
FALLBACK_DEVICE = "h200"


def device_choice(pipeline: Pipeline, requested: str | None) -> str:
    """The preset to simulate on: ``--device``, else the pipeline's ``device`` key, else h200."""
    if requested:
        return requested
    preferred = pipeline.extra.get("device")
    return preferred if isinstance(preferred, str) and preferred.strip() else FALLBACK_DEVICE


def simulate_file(path: str | Path, requested_device: str | None) -> tuple[Pipeline, Timeline]:
    """Load, pick the device and simulate; user errors become :class:`CommandError`."""
    from swimlanes.engine import get_preset, simulate

    pipeline = load_pipeline(pipeline_argument(str(path)))
    device = device_choice(pipeline, requested_device)
    try:
        preset = get_preset(device)
    except ValueError as err:
        where = "" if requested_device else f" (the device named in {Path(path).name})"
        raise CommandError(f"{err}{where}") from None
    try:
        timeline = simulate(pipeline, preset)
    except ValueError as err:
        raise CommandError(f"cannot simulate {Path(path).name}: {err}") from None
    return pipeline, timeline


def simulation_json(pipeline: Pipeline, timeline: Timeline, m: Metrics) -> dict[str, Any]:
    """The ``--json`` object: headline figures, every op, and engine busy time."""
    figures = metrics_json(m)
    return {
        "pipeline": pipeline.name,
        "device": timeline.device,
        "makespan_us": figures["makespan_us"],
        "serial_us": figures["serial_us"],
        "speedup": figures["speedup"],
        "engines": figures["engine_busy_us"],
        "ops": timeline.ops_json(),
        "metrics": figures,
    }


def _cell(v: int, t0: int) -> str:
    return "-" if v == NO_TIME else f"{(int(v) - t0) / 1000.0:.1f}"


def format_table(pipeline: Pipeline, timeline: Timeline, m: Metrics) -> str:
    """Op rows (times in microseconds from the first host call), then the summary figures.

    Works for measured timelines too: the heading says which it is.
    """
    t0 = timeline.t0
    width = max([5, *(len(label) for label in timeline.labels)])
    width = min(width, 32)
    head = (
        f"{'#':>4}  {'op':<12} {'stream':<12} {'label':<{width}} "
        f"{'issue':>10} {'start':>10} {'end':>10} {'duration':>10}"
    )
    lines = [
        pipeline.name,
        f"{timeline.source} on {timeline.device}, {len(timeline)} ops; "
        "times in us from the first host call",
        "",
        head,
        "-" * len(head),
    ]
    for r in range(len(timeline)):
        start, end = int(timeline.start[r]), int(timeline.end[r])
        duration = "-" if NO_TIME in (start, end) else f"{(end - start) / 1000.0:.1f}"
        lines.append(
            f"{int(timeline.index[r]):>4}  {timeline.op_kind(r):<12} "
            f"{(timeline.stream_name(r) or '(host)')[:12]:<12} "
            f"{timeline.labels[r][:width]:<{width}} {_cell(timeline.issue_start[r], t0):>10} "
            f"{_cell(start, t0):>10} {_cell(end, t0):>10} {duration:>10}"
        )
    lines += [
        "",
        f"{'makespan':<26}{m.makespan_ns / 1000.0:>12.1f} us",
        f"{'serial':<26}{m.serial_ns / 1000.0:>12.1f} us   (device ops one after another)",
        f"{'speedup':<26}{m.speedup:>12.2f}x",
    ]
    rows = [
        (f"{name} busy", busy, m.engine_busy_pct[name]) for name, busy in m.engine_busy_ns.items()
    ]
    rows.append(("2+ engines busy (overlap)", m.overlap_ns, m.overlap_pct))
    lines += [f"{label:<26}{ns / 1000.0:>12.1f} us   {pct:5.1f}%" for label, ns, pct in rows]
    return "\n".join(lines)


def format_insights(insights: list[Insight]) -> str:
    """Insights as text: severity, title, what happens and what to change."""
    if not insights:
        return "Insights: none; the model sees nothing to improve."
    lines = ["Insights:"]
    for ins in insights:
        saving = ""
        if ins.estimated_saving_ns:
            saving = f" (saves ~{ins.estimated_saving_ns / 1e6:.2f} ms)"
        lines.append(f"[{ins.severity}] {ins.title}{saving}")
        lines += [f"    {line}" for line in textwrap.wrap(ins.message, 96)]
        lines += [f"    -> {line}" for line in textwrap.wrap(ins.advice, 93)]
        lines.append(f"    ops: {', '.join(f'#{i}' for i in ins.op_indexes)}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    pipeline, timeline = simulate_file(args.file, args.device)
    m = compute_metrics(timeline)
    insights = explain(pipeline, timeline) if args.insights else None
    band = _band(pipeline, timeline, args) if getattr(args, "band", False) else None
    if args.json:
        out = simulation_json(pipeline, timeline, m)
        if band is not None:
            _add_band_json(out, timeline, band)
        if insights is not None:
            out["insights"] = [ins.to_json() for ins in insights]
        print(json.dumps(out, indent=2))
    else:
        print(format_table(pipeline, timeline, m))
        if band is not None:
            from swimlanes.commands.band_output import band_line

            print(band_line(timeline.makespan_ns, band))
        if insights is not None:
            print()
            print(format_insights(insights))
    return 0


def _band(pipeline: Pipeline, timeline: Timeline, args: argparse.Namespace) -> Any:
    """The prediction band on the preset just simulated on (see commands.band_output)."""
    from swimlanes.commands.band_output import compute_band
    from swimlanes.engine import get_preset

    return compute_band(pipeline, get_preset(device_choice(pipeline, args.device)), args)


def _add_band_json(out: dict[str, Any], timeline: Timeline, band: Any) -> None:
    from swimlanes.commands.band_output import add_op_bands, band_json

    out.update(band_json(band))
    if not isinstance(band, str):
        add_op_bands(out["ops"], timeline, band)
