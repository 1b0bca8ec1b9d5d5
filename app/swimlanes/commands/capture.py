"""``swimlanes capture [-o RUN.json] [--pipeline P.json] [--trace T.json.gz] [--range R]
[--device D] -- python prog.py ARGS``: run a Python program under CUPTI and keep what it did
on the GPU as a measured run and an editable pipeline.

The program runs in this process (PyTorch, CuPy and Numba programs alike; see
swimlanes.gpu.capture). The trace (PyTorch profiler layout, which Perfetto opens) is written to
``--trace``, the measured run with its rebuilt pipeline to ``-o``, the pipeline alone to
``--pipeline``; then how closely the unedited pipeline's simulation replays the measurement.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from pathlib import Path

from swimlanes.model.io import save_pipeline
from swimlanes.services.errors import CommandError
from swimlanes.services.trace_pipeline import TracePipeline, rebuild
from swimlanes.timeline.compare import fmt_time
from swimlanes.timeline.formats.io import save_run
from swimlanes.timeline.formats.trace_import import read_timelines
from swimlanes.timeline.formats.trace_source import TraceError


def program_argv(words: list[str]) -> list[str]:
    """The program to run from what followed ``--``: ``python prog.py ARGS`` (any python) or
    ``prog.py ARGS``, ``python -m module ARGS`` or ``python -c CODE ARGS``."""
    words = words[1:] if words[:1] == ["--"] else list(words)
    if words and Path(words[0]).name.startswith("python"):
        words = words[1:]
    if not words:
        raise CommandError("no program to capture: give it after --, as in -- python prog.py")
    if words[0] in ("-m", "-c"):
        if len(words) < 2:
            what = "a module name" if words[0] == "-m" else "the program's code"
            raise CommandError(f"{words[0]} needs {what}, as in -- python {words[0]} ...")
    elif not Path(words[0]).is_file():
        raise CommandError(f"no such program: {words[0]}")
    return words


def program_stem(argv: list[str]) -> str:
    """The name the capture's files take from the program: its script's or module's name
    (``program`` for ``-c CODE``)."""
    if argv[0] == "-c":
        return "program"
    if argv[0] == "-m":  # a dotted module name: its last part (pkg.train: train)
        return argv[1].rsplit(".", 1)[-1] or "program"
    return Path(argv[0]).stem


def run(args: argparse.Namespace) -> int:
    from swimlanes.gpu import NO_GPU_MESSAGE, GpuError, cuda_available

    argv = program_argv(args.program)
    if not cuda_available():
        raise CommandError(NO_GPU_MESSAGE)
    from swimlanes.gpu.capture import capture_program

    stem = program_stem(argv)
    try:
        doc = capture_program(argv, keep=args.range, log=lambda m: print(m, file=sys.stderr))
    except GpuError as err:
        raise CommandError(str(err)) from None
    trace = Path(args.trace or f"{stem}.capture.json.gz")
    text = json.dumps(doc)
    try:
        if trace.suffix == ".gz":
            with gzip.open(trace, "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            trace.write_text(text, encoding="utf-8")
        timelines, _ = read_timelines([text])
    except OSError as err:
        raise CommandError(f"cannot write the trace: {err}") from None
    except TraceError as err:
        raise CommandError(f"the capture holds no GPU work to keep: {err}") from None
    timeline = timelines[0]
    timeline.name = stem
    result = rebuild(timeline, args.device, name=stem)
    run_path = Path(args.output or f"{stem}.run.json")
    try:
        save_run(run_path, result.rebuilt.measured, result.rebuilt.pipeline)
        if args.pipeline:
            save_pipeline(result.rebuilt.pipeline, args.pipeline)
    except OSError as err:
        raise CommandError(f"cannot write: {err}") from None
    _report(result, trace, run_path, args.pipeline)
    return 0


def _report(result: TracePipeline, trace: Path, run_path: Path, pipeline: str | None) -> None:
    rebuilt = result.rebuilt
    program = rebuilt.pipeline.program
    print(f"trace     {trace} ({len(rebuilt.measured)} calls and GPU records kept)")
    print(f"run       {run_path} (the measurement and its pipeline of {len(program)} ops)")
    if pipeline:
        print(f"pipeline  {pipeline}")
    for note in rebuilt.notes:
        print(f"left out  {note}")
    error = result.replay_error
    if error is not None:
        print(
            f"replay    {fmt_time(result.simulated.makespan_ns)} simulated on "
            f"{result.preset.name} against {fmt_time(rebuilt.measured.makespan_ns)} measured "
            f"({100 * error:+.1f}%)"
        )
