"""Calibrate this host once, quickly, before its first GPU run, and cache the preset.

``swimlanes run``, ``swimlanes compare`` and the app's Run on GPU call
:func:`ensure_calibrated` first: when the cache holds a calibration of this GPU, driver, CPU and
host it is returned at once; otherwise a quick calibration (``calibrate(quick=True)``, a few
seconds on an H200 host, with progress and cancel) runs and is cached. A cancelled or failed
calibration caches nothing. Qt-free; numba is imported only when a backend is made.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from swimlanes.gpu.host import HostIdentity, this_host
from swimlanes.gpu.preset_cache import CachedPreset, find_for_host, store


def ensure_calibrated(
    *,
    progress: Callable[[float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    cuda_backend: Any = None,  # noqa: ANN401 - a CudaBackend; tests pass the simulator's
    on_start: Callable[[HostIdentity], None] | None = None,
) -> tuple[CachedPreset, bool]:
    """This host's cached preset, calibrating and caching one first if there is none.

    Returns ``(entry, calibrated_now)``. ``on_start(host)`` is called just before a calibration
    starts (to tell the user why the run waits). Raises GpuError, ExecutionCancelled, or
    OSError when the cache folder cannot be written.
    """
    from swimlanes.gpu.backend import make_backend

    be = cuda_backend if cuda_backend is not None else make_backend()
    try:
        host = this_host(be)
        entry = find_for_host(host)
        if entry is not None:
            return entry, False
        if on_start is not None:
            on_start(host)
        from swimlanes.gpu.calibrate import calibrate

        preset, _raw = calibrate(quick=True, progress=progress, cancel=cancel, cuda_backend=be)
        return store(preset, host, quick=True), True
    finally:
        if cuda_backend is None:
            with contextlib.suppress(Exception):  # best effort: frees numba's deferred frees
                be.close()
