"""``swimlanes run FILE [--repeat N] [--warmup N] [--backend B] [--json] [-o RUN.json]``.

Runs the pipeline on this machine's GPU and prints the measured timeline: the same table and
JSON shape as ``simulate`` (per-op spread included), plus the measurement back end and the
repetition count. ``-o`` saves the run (timeline and pipeline) for ``compare --measured`` and
the GUI. Without a GPU it says so and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from swimlanes.cli import CommandError
from swimlanes.model.document import Pipeline
from swimlanes.model.io import load_pipeline
from swimlanes.resources import pipeline_argument
from swimlanes.timeline.timeline import Timeline


def measure(pipeline: Pipeline, repeat: int, warmup: int, backend: str) -> Timeline:
    """Execute on the GPU; GPU problems become a :class:`CommandError` (exit 2)."""
    from swimlanes.gpu import NO_GPU_MESSAGE, ExecutionCancelled, GpuError, cuda_available

    if repeat < 1 or warmup < 0:
        raise CommandError("--repeat must be at least 1 and --warmup at least 0")
    if not cuda_available():
        raise CommandError(NO_GPU_MESSAGE)
    from swimlanes.gpu.executor import execute

    try:
        return execute(pipeline, repeat=repeat, warmup=warmup, backend=backend)
    except GpuError as err:
        raise CommandError(str(err)) from None
    except ExecutionCancelled:
        raise CommandError("the run was cancelled") from None


def run_json(pipeline: Pipeline, timeline: Timeline) -> dict:
    """``simulate --json``'s object for a measured timeline, plus backend and repeat."""
    from swimlanes.commands.simulate import simulation_json
    from swimlanes.timeline.metrics import compute_metrics

    out = simulation_json(pipeline, timeline, compute_metrics(timeline))
    out["backend"] = timeline.meta.get("backend")
    out["repeat"] = timeline.meta.get("repeat")
    out["note"] = timeline.meta.get("note")
    return out


def run(args: argparse.Namespace) -> int:
    from swimlanes.commands.simulate import format_table
    from swimlanes.timeline.io import save_run
    from swimlanes.timeline.metrics import compute_metrics

    pipeline = load_pipeline(pipeline_argument(args.file))
    timeline = measure(pipeline, args.repeat, args.warmup, args.backend)
    if args.output:
        try:
            save_run(args.output, timeline, pipeline)
        except OSError as err:
            raise CommandError(f"cannot write {args.output}: {err}") from None
    if args.json:
        print(json.dumps(run_json(pipeline, timeline), indent=2))
    else:
        table = format_table(pipeline, timeline, compute_metrics(timeline))
        print(table.replace(": simulated on ", ": measured on ", 1))
        meta = timeline.meta
        print(f"backend   {meta.get('backend')} ({meta.get('note')})")
        print(f"repeat    {meta.get('repeat')} timed runs; times are medians")
    if args.output:
        print(f"saved {Path(args.output)}", file=sys.stderr)
    return 0
