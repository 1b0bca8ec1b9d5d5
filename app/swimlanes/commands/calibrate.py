"""``swimlanes calibrate [-o PRESET.json] [--quick] [--raw RAW.json]``: fit a device preset.

Measures this machine's GPU (see swimlanes.gpu.calibrate) and writes a preset file that
``--device FILE`` accepts, then prints a summary. Without ``-o`` the preset goes to
``<device>-calibrated.json`` in the current folder.
"""

from __future__ import annotations

import argparse
import sys

from swimlanes.cli import CommandError


def run(args: argparse.Namespace) -> int:
    from swimlanes.gpu import NO_GPU_MESSAGE, ExecutionCancelled, GpuError, cuda_available

    if not cuda_available():
        raise CommandError(NO_GPU_MESSAGE)
    from swimlanes.gpu.calibrate import calibrate, summary_lines
    from swimlanes.model.io import dump_json_atomic

    def progress(fraction: float) -> None:
        print(f"\rcalibrating... {100 * fraction:3.0f}%", end="", file=sys.stderr, flush=True)

    try:
        preset, raw = calibrate(quick=args.quick, progress=progress)
    except GpuError as err:
        raise CommandError(str(err)) from None
    except ExecutionCancelled:
        raise CommandError("calibration was cancelled") from None
    finally:
        print(file=sys.stderr)
    output = args.output or f"{preset['name']}-calibrated.json"
    try:
        dump_json_atomic(preset, output)
        if args.raw:
            dump_json_atomic(raw, args.raw)
    except OSError as err:
        raise CommandError(f"cannot write the preset: {err}") from None
    for line in summary_lines(preset, raw):
        print(line)
    print(f"wrote {output}" + (f" and {args.raw}" if args.raw else ""))
    return 0
