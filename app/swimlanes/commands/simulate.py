"""``swimlanes simulate FILE [--device NAME] [--json] [--band [--band-samples N] [--seed S]]``:
the simulated timeline as a table (``--band``: and its prediction band)."""

from __future__ import annotations

import argparse
import sys
import textwrap
from typing import TYPE_CHECKING, Any

from swimlanes.services.json_text import json_chunks
from swimlanes.services.simulation import format_table, simulate_file, simulation_json
from swimlanes.timeline.metrics import compute_metrics

# The insights and the prediction band are imported where --insights and --band ask for them:
# a plain simulate (a script's, a benchmark's) does not pay for their modules at start-up.
if TYPE_CHECKING:
    from swimlanes.analysis.insights import Insight
    from swimlanes.engine.bands import Band
    from swimlanes.model.document import Pipeline
    from swimlanes.timeline.timeline import Timeline


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
    insights = _insights(pipeline, timeline) if args.insights else None
    band = _band(pipeline, timeline, args) if getattr(args, "band", False) else None
    if args.json:
        # Without a band (which adds keys to each op's row) the rows are written as text
        # straight from the timeline's columns.
        out = simulation_json(pipeline, timeline, m, rows_as_text=band is None)
        if band is not None:
            _add_band_json(out, timeline, band)
        if insights is not None:
            out["insights"] = [ins.to_json() for ins in insights]
        # print(json_text(out)), without joining the text into one string first
        write = sys.stdout.write
        for chunk in json_chunks(out):
            write(chunk)
        write("\n")
    else:
        print(format_table(pipeline, timeline, m))
        if band is not None:
            from swimlanes.services.band_output import band_line

            print(band_line(timeline.makespan_ns, band))
        if insights is not None:
            print()
            print(format_insights(insights))
    return 0


def _insights(pipeline: Pipeline, timeline: Timeline) -> list[Insight]:
    from swimlanes.analysis.insights import explain

    return explain(pipeline, timeline)


def _band(pipeline: Pipeline, timeline: Timeline, args: argparse.Namespace) -> Band | str:
    """The prediction band on the preset just simulated on (see services.band_output)."""
    from swimlanes.engine import get_preset
    from swimlanes.services.band_output import compute_band
    from swimlanes.services.devices import device_choice

    preset = get_preset(device_choice(pipeline, args.device))
    return compute_band(pipeline, preset, args.band_samples, args.seed)


def _add_band_json(out: dict[str, Any], timeline: Timeline, band: Band | str) -> None:
    from swimlanes.services.band_output import add_op_bands, band_json

    out.update(band_json(band))
    if not isinstance(band, str):
        add_op_bands(out["ops"], timeline, band)
