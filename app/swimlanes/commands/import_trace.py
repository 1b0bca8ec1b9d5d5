"""``swimlanes import-trace TRACE -o PIPELINE.json [--run RUN.json] [--device D]``: a profiler
trace (PyTorch/Kineto, Chrome), saved run or timeline as an editable pipeline.

The pipeline replays the recorded host program (swimlanes.timeline.reconstruct) with the
host's call costs of ``--device`` (else the preset compare would choose for the measurement).
``--run`` saves the measurement beside it, indexed to the pipeline's program, so that
``swimlanes compare PIPELINE --measured RUN`` and ``swimlanes gui RUN`` line them up op by op.
"""

from __future__ import annotations

import argparse

from swimlanes.model.io import save_pipeline
from swimlanes.services.errors import CommandError
from swimlanes.services.trace_pipeline import rebuild_file
from swimlanes.timeline.compare import fmt_time
from swimlanes.timeline.formats.io import save_run


def run(args: argparse.Namespace) -> int:
    result = rebuild_file(args.trace, args.device)
    rebuilt = result.rebuilt
    try:
        save_pipeline(rebuilt.pipeline, args.output)
        if args.run:
            save_run(args.run, rebuilt.measured, rebuilt.pipeline)
    except OSError as err:
        raise CommandError(f"cannot write: {err}") from None
    program = rebuilt.pipeline.program
    host_ops = sum(1 for op in program if op.op == "host")
    print(
        f"wrote {args.output}: {len(program)} ops ({host_ops} host ops for the program's own "
        f"time) on {len(rebuilt.pipeline.streams)} declared streams"
        + (f"; the measurement to {args.run}" if args.run else "")
    )
    for note in rebuilt.notes:
        print(f"left out: {note}")
    error = result.replay_error
    if error is not None:
        print(
            f"replayed on {result.preset.name}: {fmt_time(result.simulated.makespan_ns)} "
            f"against {fmt_time(rebuilt.measured.makespan_ns)} measured ({100 * error:+.1f}%)"
        )
    return 0
