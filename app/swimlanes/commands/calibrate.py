"""``swimlanes calibrate [-o PRESET.json] [--quick] [--raw RAW.json] [--time-limit S]
[--no-cache] [--links | --no-links]``: fit a device preset.

Measures this machine's GPU (see swimlanes.gpu.calibrate) and writes a preset file that
``--device FILE`` accepts, then prints a summary. Without ``-o`` the preset goes to
``<device>-calibrated.json`` in the current folder. Unless ``--no-cache``, the preset is also
cached as this host's calibration (swimlanes.gpu.preset_cache), which runs and ``compare`` use.
With 2 GPUs or more (unless ``--no-links``) the links between them and NCCL's collectives are
measured too (swimlanes.gpu.calibrate_links) and go into the same preset; ``--links`` measures
only those, into this host's cached preset (or the built-in one of this GPU).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

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
    from swimlanes.gpu.calibration_summary import links_lines, summary_lines
    from swimlanes.gpu.host import this_host
    from swimlanes.model.io import dump_json_atomic

    def progress(fraction: float) -> None:
        print(f"\rcalibrating... {100 * fraction:3.0f}%", end="", file=sys.stderr, flush=True)

    try:
        backend = make_backend()
        host = this_host(backend)
        args.links = getattr(args, "links", False)
        raw: dict[str, Any] = {}
        if args.links:
            preset = _base_preset(host, args)
        else:
            preset, raw = calibrate(
                quick=args.quick, progress=progress, cuda_backend=backend, time_limit_s=limit
            )
        if args.links or not getattr(args, "no_links", False):
            preset, raw = _links(preset, raw, args, progress)
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
    lines = links_lines(preset, raw) if args.links else summary_lines(preset, raw)
    for line in lines:
        print(line)
    print(f"wrote {output}" + (f" and {args.raw}" if args.raw else ""))
    if not getattr(args, "no_cache", False):
        _cache(preset, host, args.quick)
    return 0


def _base_preset(host: HostIdentity, args: argparse.Namespace) -> dict:
    """What ``--links`` adds the links to: this host's cached preset, else the built-in preset
    of this GPU (then written but not cached: its other figures are not this host's)."""
    from swimlanes.engine.presets import get_preset, load_preset
    from swimlanes.gpu.calibrate import preset_name
    from swimlanes.gpu.preset_cache import find_for_host

    entry = find_for_host(host)
    if entry is not None:
        return load_preset(entry.path).to_dict()
    if not getattr(args, "no_cache", False):
        print(
            "note: no calibration of this host is cached: the links go into the built-in "
            "preset of this GPU, which is written but not cached",
            file=sys.stderr,
        )
        args.no_cache = True
    return get_preset(preset_name(host.gpu)).to_dict()


def _links(preset: dict, raw: dict, args: argparse.Namespace, progress: Any) -> tuple[dict, dict]:
    """The preset with the links and collectives measured, where there are 2 GPUs or more
    (or ``--links`` asked for them)."""
    from swimlanes.gpu.backend import device_count
    from swimlanes.gpu.calibrate_links import apply_links, calibrate_links

    gpus = device_count()
    simulated = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    if not args.links and (gpus < 2 or simulated):  # simulated GPUs only when asked for
        return preset, raw
    print(file=sys.stderr)
    fields, links_raw = calibrate_links(gpus=gpus, quick=args.quick, progress=progress)
    text = (
        f"Links and NCCL measured by `swimlanes calibrate` on {links_raw['date'][:10]} over "
        f"{gpus} GPUs (peer copies per pair, all-reduce, reduce-scatter and all-gather 1 KB to "
        f"1 GB; NCCL {links_raw.get('nccl')}; channels from NCCL's log)."
    )
    return apply_links(preset, fields, text), {**raw, "links": links_raw}


def _cache(preset: dict, host: HostIdentity, quick: bool) -> None:
    """Store the preset as this host's calibration (runs and compare then use it)."""
    from swimlanes.gpu.preset_cache import store

    try:
        entry = store(preset, host, quick=quick)
    except (OSError, ValueError) as err:
        print(f"warning: cannot cache the preset for this host: {err}", file=sys.stderr)
        return
    print(f"cached for {host.describe()} as {entry.path}")
