"""``swimlanes run FILE... [--repeat N] [--warmup N] [--backend B] [--json] [-o RUN.json]
[--out-dir DIR] [--no-calibrate]``.

Runs each pipeline on this machine's GPU and prints the measured timeline: the same table and
JSON shape as ``simulate`` (per-op spread included), plus the measurement back end and the
repetition count. ``-o`` saves the run (timeline and pipeline) for ``compare --measured`` and
the GUI. On a host with no cached calibration a quick one runs first and is cached (see
swimlanes.gpu.auto_calibrate; ``--no-calibrate`` skips it). Several files run in one process
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
from typing import TYPE_CHECKING

from swimlanes.cli import CommandError
from swimlanes.model.document import Pipeline
from swimlanes.model.io import load_pipeline
from swimlanes.model.validate import PipelineError
from swimlanes.resources import pipeline_argument
from swimlanes.timeline.timeline import Timeline

if TYPE_CHECKING:
    from swimlanes.gpu.host import HostIdentity
    from swimlanes.gpu.preset_cache import CachedPreset


def measure(
    pipeline: Pipeline, repeat: int, warmup: int, backend: str, *, calibrate: bool = False
) -> Timeline:
    """Execute on the GPU; GPU problems become a :class:`CommandError` (exit 2). With
    ``calibrate`` this host is first calibrated quickly if the cache has no preset of it, and
    the run records the preset it was calibrated against (``meta["calibration"]``)."""
    from swimlanes.gpu import NO_GPU_MESSAGE, ExecutionCancelled, GpuError, cuda_available

    if repeat < 1 or warmup < 0:
        raise CommandError("--repeat must be at least 1 and --warmup at least 0")
    if not cuda_available():
        raise CommandError(NO_GPU_MESSAGE)
    from swimlanes.gpu.executor import execute

    entry = this_host_preset() if calibrate else None
    try:
        timeline = execute(pipeline, repeat=repeat, warmup=warmup, backend=backend)
    except GpuError as err:
        raise CommandError(str(err)) from None
    except ExecutionCancelled:
        raise CommandError("the run was cancelled") from None
    if entry is not None:
        timeline.meta["calibration"] = entry.reference()
    return timeline


def this_host_preset() -> CachedPreset | None:
    """This host's cached preset, calibrated now (quick, progress on stderr, Ctrl+C cancels
    and caches nothing) if there is none; None with a warning if the cache cannot be written."""
    from swimlanes.gpu import ExecutionCancelled, GpuError
    from swimlanes.gpu.auto_calibrate import ensure_calibrated

    def started(host: HostIdentity) -> None:
        print(
            f"no calibration of this GPU on {host.describe()} yet: calibrating it first "
            "(quick, once per host; Ctrl+C cancels, --no-calibrate skips it)",
            file=sys.stderr,
        )

    def progress(fraction: float) -> None:
        print(f"\rcalibrating... {100 * fraction:3.0f}%", end="", file=sys.stderr, flush=True)

    try:
        entry, new = ensure_calibrated(progress=progress, on_start=started)
    except GpuError as err:
        raise CommandError(
            f"calibrating this GPU failed: {err} (--no-calibrate skips it)"
        ) from None
    except ExecutionCancelled:
        raise CommandError("the calibration was cancelled") from None
    except OSError as err:
        print(f"\nwarning: cannot cache this host's calibration: {err}", file=sys.stderr)
        return None
    if new:
        print(f"\ncached this host's preset as {entry.path}", file=sys.stderr)
    return entry


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
    from swimlanes.commands.simulate import format_table
    from swimlanes.timeline.io import save_run
    from swimlanes.timeline.metrics import compute_metrics

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
            print(json.dumps(out, indent=2))
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
