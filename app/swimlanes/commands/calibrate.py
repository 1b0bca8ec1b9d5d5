"""``swimlanes calibrate [-o PRESET.json] [--quick] [--raw RAW.json] [--time-limit S]
[--no-cache]``: fit a device preset.

Measures this machine's GPU (see swimlanes.gpu.calibrate) and writes a preset file that
``--device FILE`` accepts, then prints a summary. Without ``-o`` the preset goes to
``<device>-calibrated.json`` in the current folder. Unless ``--no-cache``, the preset is also
cached as this host's calibration (swimlanes.gpu.preset_cache), which runs and ``compare`` use.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from swimlanes.services.errors import CommandError

if TYPE_CHECKING:
    from swimlanes.gpu.host import HostIdentity


def run(args: argparse.Namespace) -> int:
    from swimlanes.gpu import NO_GPU_MESSAGE, ExecutionCancelled, GpuError, cuda_available

    limit = getattr(args, "time_limit", None)
    if limit is not None and not limit >= 0:  # also refuses nan
        raise CommandError(f"--time-limit must be 0 or more seconds, not {limit}")
    if not cuda_available():
        raise CommandError(NO_GPU_MESSAGE)
    from swimlanes.gpu.backend import make_backend
    from swimlanes.gpu.calibrate import calibrate
    from swimlanes.gpu.calibration_summary import summary_lines
    from swimlanes.gpu.host import this_host
    from swimlanes.model.io import dump_json_atomic

    def progress(fraction: float) -> None:
        print(f"\rcalibrating... {100 * fraction:3.0f}%", end="", file=sys.stderr, flush=True)

    try:
        backend = make_backend()
        host = this_host(backend)
        preset, raw = calibrate(
            quick=args.quick,
            progress=progress,
            cuda_backend=backend,
            time_limit_s=limit,
        )
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
    if not getattr(args, "no_cache", False):
        _cache(preset, host, args.quick)
    return 0


def _cache(preset: dict, host: HostIdentity, quick: bool) -> None:
    """Store the preset as this host's calibration (runs and compare then use it)."""
    from swimlanes.gpu.preset_cache import store

    try:
        entry = store(preset, host, quick=quick)
    except (OSError, ValueError) as err:
        print(f"warning: cannot cache the preset for this host: {err}", file=sys.stderr)
        return
    print(f"cached for {host.describe()} as {entry.path}")
