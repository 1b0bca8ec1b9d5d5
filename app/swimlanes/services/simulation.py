"""Simulating a pipeline file, and the table and JSON forms of a simulated (or measured)
timeline that ``simulate``, ``run`` and the headless app print."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from swimlanes import engine
from swimlanes.model.document import Pipeline
from swimlanes.model.io import load_pipeline
from swimlanes.resources import pipeline_argument
from swimlanes.services.devices import device_choice
from swimlanes.services.errors import CommandError
from swimlanes.services.json_text import EncodedRows
from swimlanes.timeline.json_rows import op_rows_text
from swimlanes.timeline.metrics import Metrics, metrics_json
from swimlanes.timeline.timeline import NO_TIME, Timeline


def simulate_file(path: str | Path, requested_device: str | None) -> tuple[Pipeline, Timeline]:
    """Load, pick the device and simulate; user errors become :class:`CommandError`."""
    pipeline = load_pipeline(pipeline_argument(str(path)))
    device = device_choice(pipeline, requested_device)
    try:
        preset = engine.get_preset(device)
    except ValueError as err:
        where = "" if requested_device else f" (the device named in {Path(path).name})"
        raise CommandError(f"{err}{where}") from None
    try:
        # Through the package, not a name bound at import, so that a stand-in engine
        # (the fuzz suite's broken or wrong simulators) is the one the command line runs.
        timeline = engine.simulate(pipeline, preset)
    except ValueError as err:
        raise CommandError(f"cannot simulate {Path(path).name}: {err}") from None
    return pipeline, timeline


def simulate_pipeline(pipeline: Pipeline, requested_device: str | None) -> Timeline:
    """Simulate a pipeline already loaded (a run's own pipeline) on the preset
    :func:`device_choice` picks; a refusal becomes a :class:`CommandError`."""
    try:
        preset = engine.get_preset(device_choice(pipeline, requested_device))
        return engine.simulate(pipeline, preset)
    except ValueError as err:
        raise CommandError(f"cannot simulate the run's pipeline: {err}") from None


def simulation_json(
    pipeline: Pipeline, timeline: Timeline, m: Metrics, *, rows_as_text: bool = False
) -> dict[str, Any]:
    """The ``--json`` object: headline figures, every op, and engine busy time.

    ``rows_as_text``: the ops as :class:`EncodedRows` (their JSON text, written from the
    timeline's columns; for :func:`json_text` only) instead of a list of dicts."""
    figures = metrics_json(m)
    ops: list[dict[str, Any]] | EncodedRows = (
        EncodedRows(partial(op_rows_text, timeline))
        if rows_as_text and len(timeline)
        else timeline.ops_json()
    )
    return {
        "pipeline": pipeline.name,
        "device": timeline.device,
        "makespan_us": figures["makespan_us"],
        "serial_us": figures["serial_us"],
        "speedup": figures["speedup"],
        "engines": figures["engine_busy_us"],
        "ops": ops,
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


def timeline_of_file(arg: str, device: str | None) -> Timeline:
    """A pipeline (file or example name) simulated on ``device``, or the timeline of a saved
    run, timeline file or trace, as it was measured (``diff`` and ``critical-path``)."""
    # Imported here: the trace readers are not needed to simulate (simulate --json's start-up).
    from swimlanes.services.runs import is_pipeline_file, load_trace

    path = Path(pipeline_argument(arg))
    if path.is_file() and not is_pipeline_file(path):
        timeline, _ = load_trace(path)
        return timeline
    _, timeline = simulate_file(arg, device)
    return timeline
