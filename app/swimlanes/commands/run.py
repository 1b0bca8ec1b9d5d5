"""``swimlanes run FILE... [--repeat N] [--warmup N] [--backend B] [--json] [-o RUN.json]
[--out-dir DIR] [--no-calibrate]``.

Runs each pipeline on this machine's GPU and prints the measured timeline: the same table and
JSON shape as ``simulate`` (per-op spread included), plus the measurement back end and the
repetition count. ``-o`` saves the run (timeline and pipeline) for ``compare --measured`` and
the GUI. On a host with no cached calibration a quick one runs first and is cached (see
swimlanes.services.measuring; ``--no-calibrate`` skips it). Several files run in one process
(the GPU context and compiled kernels are made once): ``--out-dir`` saves each as
``DIR/<name>.run.json``, ``--json`` then prints one JSON object per line with its ``file``, and
a pipeline that fails is reported while the others still run (exit 1 if any failed). Without a
GPU it says so and exits 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from swimlanes.model.document import Pipeline
from swimlanes.model.io import load_pipeline
from swimlanes.model.validate import PipelineError
from swimlanes.resources import pipeline_argument
from swimlanes.services.errors import CommandError
from swimlanes.services.json_text import json_text
from swimlanes.services.measuring import measure
from swimlanes.services.simulation import format_table, simulation_json
from swimlanes.timeline.formats.io import save_run
from swimlanes.timeline.metrics import compute_metrics
from swimlanes.timeline.timeline import Timeline


def run_json(pipeline: Pipeline, timeline: Timeline) -> dict:
    """``simulate --json``'s object for a measured timeline, plus backend and repeat."""
    out = simulation_json(pipeline, timeline, compute_metrics(timeline))
    out["backend"] = timeline.meta.get("backend")
    out["repeat"] = timeline.meta.get("repeat")
    out["note"] = timeline.meta.get("note")
    return out


def run(args: argparse.Namespace) -> int:
    files: list[str] = args.file
    if args.output and len(files) > 1:
        raise CommandError("-o saves one run: with several pipelines use --out-dir DIR")
    if len(files) == 1:
        return _run_one(args, files[0], args.output or _out_dir_path(args, files[0]))
    from swimlanes.gpu import NO_GPU_MESSAGE, cuda_available

    if not cuda_available():
        raise CommandError(NO_GPU_MESSAGE)
    failed = 0
    for file in files:
        print(f"== {file}", file=sys.stderr)
        try:
            _run_one(args, file, _out_dir_path(args, file))
        except (CommandError, PipelineError, OSError) as err:
            # One bad pipeline must not lose the measurements of the others.
            failed += 1
            problems = err.problems if isinstance(err, PipelineError) else [err]
            for problem in problems:
                print(f"error: {file}: {problem}", file=sys.stderr)
    if failed:
        print(f"{failed} of {len(files)} pipelines failed", file=sys.stderr)
    return 1 if failed else 0


def _out_dir_path(args: argparse.Namespace, file: str) -> str | None:
    if not args.out_dir:
        return None
    return str(Path(args.out_dir) / f"{Path(file).stem}.run.json")


def _run_one(args: argparse.Namespace, file: str, output: str | None) -> int:
    pipeline = load_pipeline(pipeline_argument(file))
    timeline = measure(
        pipeline, args.repeat, args.warmup, args.backend, calibrate=not args.no_calibrate
    )
    if output:
        try:
            Path(output).parent.mkdir(parents=True, exist_ok=True)
            save_run(output, timeline, pipeline)
        except OSError as err:
            raise CommandError(f"cannot write {output}: {err}") from None
    if args.json:
        out = run_json(pipeline, timeline)
        if len(args.file) > 1:  # one JSON object per line, each naming its file
            print(json.dumps({"file": file, **out}))
        else:
            print(json_text(out))
    else:
        table = format_table(pipeline, timeline, compute_metrics(timeline))
        print(table.replace(": simulated on ", ": measured on ", 1))
        meta = timeline.meta
        print(f"backend   {meta.get('backend')} ({meta.get('note')})")
        print(f"repeat    {meta.get('repeat')} timed runs; times are the median run's")
        calibration = meta.get("calibration")
        if isinstance(calibration, dict):
            print(f"preset    {calibration.get('path')} (this host's calibration)")
    if output:
        print(f"saved {Path(output)}", file=sys.stderr)
    return 0
