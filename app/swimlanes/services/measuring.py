"""Measuring a pipeline on this GPU for the command line (``run`` and ``compare``): GPU
problems become a :class:`CommandError`, and a host with no cached calibration is calibrated
first, with progress on stderr."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from swimlanes.model.document import Pipeline
from swimlanes.services.errors import CommandError
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
    # swimlanes.gpu is imported here, not at the top: numba stays unloaded until a GPU run.
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
