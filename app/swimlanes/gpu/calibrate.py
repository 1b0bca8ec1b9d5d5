"""Measure the GPU this runs on and fit a device preset for the simulator.

Every measurement is a small generated pipeline run through the executor (so host costs are
those of the calls the executor really makes, and device spans come from the same back end as
``swimlanes run``):

* copy time vs size, 1 KB .. 1 GB, per direction, pinned and pageable, each copy alone
  (``bandwidth_table`` and the per-kind GB/s at 256 MB, ``copy_latency_us`` from 1 KB copies);
* an H2D and a D2H copy at once (``bidirectional_slowdown``);
* same-direction copies on several streams: the order the copy engine ran them;
* the host cost of each API call (``issue_cost_us``), kernel launch latency on an idle GPU;
* SM count and block limits (device attributes) and the synthetic kernels' measured residency
  (waves of 100 us blocks), device-to-device copy and memset bandwidth (``memory_gbps``) and
  the FMA kernel's rate (``peak_tflops``);
* a kernel's time beyond its blocks' (``kernel_overhead_us``) and how late each kind of
  blocking call returns after the work it waits for (``sync_return_us``);
* a small pipeline of dependent copies and kernels, and of copies in both directions at once,
  fitted by ``swimlanes.engine.fit.fit_timing`` (the host's gap between calls, copy launch and
  dependency latencies, the copy engine's rest, the per-direction bidirectional slowdown,
  fixed cost and rest), the same fit the shipped example measurements go through.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from swimlanes.gpu.backend import make_backend
from swimlanes.gpu.backend_api import CudaBackend
from swimlanes.gpu.calibration_probes import MB, Calibration
from swimlanes.gpu.calibration_programs import cross_checked_bidirectional
from swimlanes.gpu.plan import DeviceInfo

REFERENCE_SIZE = 256 * MB
PAGEABLE_H2D_CHUNK, PAGEABLE_D2H_CHUNK = MB, 2 * MB
#: A quick calibration (the one a GPU run makes first on a new host) stops measuring its
#: optional probes once this many seconds have passed, so a first run never waits longer.
QUICK_TIME_LIMIT_S = 20.0

#: The bandwidth-table kinds that also set a preset's ``<kind>_gbps`` figure.
_RATE_KINDS = ("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable")


def _gbps_at(table: list[list[float]], n: int) -> float:
    return min(table, key=lambda p: abs(math.log(p[0] / n)))[1]


def preset_name(device: str) -> str:
    """The built-in preset of a GPU by its name (``h200`` for an NVIDIA H200, ``a100`` for an
    NVIDIA A100-SXM4-80GB, ``rtx4090`` for a GeForce RTX 4090), else a slug of the name."""
    from swimlanes.engine import preset_names

    packed = re.sub(r"[^A-Z0-9]+", "", device.upper())
    for name in preset_names():
        if name != "ideal" and name.upper() in packed:
            return name
    return re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-") or "gpu"


def calibrate(
    *,
    quick: bool = False,
    progress: Callable[[float], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    cuda_backend: CudaBackend | None = None,
    time_limit_s: float | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Measure the GPU; returns (preset JSON dict, raw measurements dict).

    ``time_limit_s`` (default: :data:`QUICK_TIME_LIMIT_S` when ``quick``, none otherwise) skips
    the optional probes once passed; ``raw["skipped"]`` names them and the preset's
    description says so.
    """
    be = cuda_backend if cuda_backend is not None else make_backend()
    info = be.device_info()
    c = Calibration(be, quick, progress, cancel)
    c.time_limit_s = time_limit_s if time_limit_s is not None or not quick else QUICK_TIME_LIMIT_S
    ref = REFERENCE_SIZE if not quick else 64 * MB
    # What every preset needs comes first; the optional probes follow, most useful first, and
    # are skipped (their figures kept from the built-in preset) once the time limit is past.
    measured: dict[str, Any] = {"bandwidth_table": c.copy_sweep()}
    measured.update(c.issue_costs())
    measured.update(c.launch_latency())
    measured["sync_return_us"] = c.sync_return()
    measured["memory_gbps"], measured["peak_tflops"] = c.memory_and_flops(info.sm_count)
    measured["priority_least"], measured["priority_greatest"] = _priority_range(be)
    measured.update(_optional_probes(c, be, info, ref))
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    # The timing fit takes the copy rates and issue costs just measured as known.
    if not c.over_time("timing"):
        timing, c.raw["bidirectional_check"] = cross_checked_bidirectional(
            c.timing(_fit_preset(info, measured, ref, when)), c.raw.get("bidirectional")
        )
        measured.update(timing)
    preset = _fit_preset(info, measured, ref, when)
    if c.skipped:
        preset["description"] += (
            f" Quick calibration: {', '.join(c.skipped)} not measured within its "
            f"{c.time_limit_s:g} s limit (built-in figures kept)."
        )
    c.raw.update(
        device=info.name,
        date=when,
        quick=quick,
        sm_count=info.sm_count,
        seconds=round(time.monotonic() - c.started, 1),
        skipped=c.skipped,
    )
    if progress is not None:
        progress(1.0)
    return preset, c.raw


def _optional_probes(c: Calibration, be: CudaBackend, info: DeviceInfo, ref: int) -> dict[str, Any]:
    """The probes a preset can do without (the built-in figures stand in), most useful first."""
    from swimlanes.engine.bands import FITTED_MODEL_ERROR
    from swimlanes.gpu.calibrate_spread import measure_spread  # run-to-run spread: bands

    out: dict[str, Any] = {}
    if not c.over_time("spread"):
        # The host's run-to-run spread, and the model's own error (fitted on the benchmark).
        spread = measure_spread(be, quick=c.quick, cancel=c.cancel)
        out["spread"] = {**spread, **FITTED_MODEL_ERROR}
    if not c.over_time("bidirectional copies"):
        out.update(c.bidirectional(ref))
    if not c.over_time("copy order"):
        out["copy_order"] = c.copy_order(64 * MB)
    if not c.over_time("grid rates"):
        out.update(c.grid_rates(info.sm_count))
    if not c.over_time("host function latency"):
        out.update(c.host_func_latency())
    if not c.over_time("hardware queues"):
        out.update(c.hardware_queues())
    if not c.over_time("residency"):
        residency = c.residency(info.sm_count, info.max_threads_per_sm, info.max_blocks_per_sm)
        c.raw["residency_matches_model"] = residency["all_match"]
    return out


def _fit_preset(info: DeviceInfo, measured: dict[str, Any], ref: int, when: str) -> dict:
    """The preset: the built-in one of this GPU (if any) with every measured figure put in."""
    from swimlanes.engine.preset_model import FITTED_BY_CALIBRATE
    from swimlanes.engine.presets import DevicePreset, get_preset

    name = preset_name(info.name)
    from swimlanes.engine import preset_names

    built_in = name in preset_names()
    fields = (get_preset(name) if built_in else DevicePreset(name=name)).to_dict()
    table = measured["bandwidth_table"]
    # The streaming kernel's own figures, how Hyper-Q GPUs feed their copy engines, how a
    # call's cost depends on its place in the program: the same on every host.
    fields.update(FITTED_BY_CALIBRATE)
    fields.update(
        measured,
        name=name,
        description=(
            f"{info.name} calibrated by `swimlanes calibrate` on {when}: copy rates per size, "
            "API costs as the Numba executor makes the calls (with CUPTI tracing on, as "
            "`swimlanes run` measures), launch, dependency and sync return latencies, "
            "bidirectional copy costs, SM limits."
        ),
        sm_count=info.sm_count,
        max_threads_per_sm=info.max_threads_per_sm,
        max_blocks_per_sm=info.max_blocks_per_sm,
        copy_latency_us=round(table["h2d_pinned"][0][0] / table["h2d_pinned"][0][1] / 1000.0, 3),
        # The driver's staging chunks, as measured on H100 and H200 hosts (driver 580): a
        # pageable H2D's DMA started once 1 MiB was staged, and a pageable D2H of up to 2 MiB
        # ran at the pinned rate, beyond that at the host's copy-out rate.
        pageable_h2d_chunk_bytes=PAGEABLE_H2D_CHUNK,
        pageable_d2h_chunk_bytes=PAGEABLE_D2H_CHUNK,
        issue_cost_us={**fields.get("issue_cost_us", {}), **measured["issue_cost_us"]},
        **{f"{key}_gbps": _gbps_at(table[key], ref) for key in table if key in _RATE_KINDS},
    )
    return DevicePreset.from_dict(fields).to_dict()  # validates every figure


def _priority_range(be: CudaBackend) -> tuple[int, int]:
    """(least, greatest) stream priority; the simulator backend reports CUDA's usual 0, -5."""
    drv = getattr(be, "drv", None)
    if drv is None:
        return 0, -5
    # Only the real backend has a driver, and with it check() (not part of CudaBackend).
    call = drv.cuCtxGetStreamPriorityRange()
    lo, hi = be.check(call, "cuCtxGetStreamPriorityRange")  # type: ignore[attr-defined]
    return int(lo), int(hi)
