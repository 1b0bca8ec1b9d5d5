"""Device presets: the figures of a GPU that the simulator needs.

A preset is a frozen :class:`DevicePreset` (engine/preset_model.py). Built-in presets live in
this module; a preset file (``{"format": "swimlanes-device", "version": 1, ...}``, written by
``swimlanes calibrate``) loads through :func:`get_preset` with a path. The ``h200`` preset is read from
``resources/presets/h200.json`` when that file exists (the calibrated figures), otherwise the
built-in figures below are used.

Units: bandwidths in GB/s (1 GB = 1e9 bytes), times in microseconds, flops in TFLOP/s.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from swimlanes.engine.multi_presets import MULTI_GPU_PRESETS, multi_gpu_changes

# The kinds and bounds live with the checks; imported from here by callers that predate them.
from swimlanes.engine.preset_checks import (  # noqa: F401 - re-exported
    BANDWIDTH_KINDS,
    COPY_ORDERS,
    HARDWARE_QUEUE_MODELS,
    MAX_CONNECTIONS,
    MAX_PRESET_FILE_BYTES,
    SPREAD_KEYS,
    SYNC_RETURN_KINDS,
    check_preset,
    coerce_preset_value,
)
from swimlanes.engine.preset_model import (  # noqa: F401 - DevicePreset's home; re-exported
    _NUMBA_COSTS,
    PRESET_FORMAT,
    PRESET_VERSION,
    DevicePreset,
    _issue_costs,
)
from swimlanes.resources import presets_dir

_PCIE2_COSTS = _issue_costs(
    h2d=10.0, d2h=10.0, d2d=8.0, memset=6.0, kernel=7.0, event_record=3.0, event_wait=2.0,
    event_sync=3.0, stream_sync=3.0, device_sync=4.0, host_func=5.0, malloc=20.0, free=15.0,
)  # fmt: skip

_BUILTIN: dict[str, DevicePreset] = {
    "ideal": DevicePreset(
        name="ideal",
        description="A textbook GPU: free API calls, no latencies, one copy engine per "
        "direction serving copies in the order they became ready, no bidirectional slowdown "
        "and a queue per stream, so schedules show only stream semantics (use it for lessons "
        "and hand-computed examples).",
        copy_order="fifo",
        sm_count=128,
        connections=0,
        spread=dict.fromkeys(SPREAD_KEYS, 0.0),  # exact: no prediction band
        h2d_pinned_gbps=25.0,
        d2h_pinned_gbps=25.0,
        h2d_pageable_gbps=10.0,
        d2h_pageable_gbps=10.0,
        copy_latency_us=0.0,
        bidirectional_slowdown=0.0,
        memory_gbps=2000.0,
        peak_tflops=20.0,
        kernel_launch_latency_us=0.0,
        issue_cost_us=_issue_costs(),
    ),
    # The dataclass defaults are the H200 figures. Measured: pinned ~55 GB/s per direction
    # alone and ~99.5 GB/s for both at once, i.e. each direction takes 1.105x as long while the
    # other runs (the 5% figure quoted for some sizes is lower); calibration refines all of it.
    "h200": DevicePreset(
        name="h200",
        description="NVIDIA H200 (Hopper, 132 SMs) driven from Numba: measured copy rates "
        "(pinned ~55 GB/s per direction, ~99.5 GB/s both at once, pageable H2D ~11.5 and "
        "D2H ~18 GB/s) and API costs; teaches what a modern GPU really does.",
    ),
    "a100": DevicePreset(
        name="a100",
        description="NVIDIA A100 PCIe (Ampere, 108 SMs, PCIe 4 ~25 GB/s): a common datacenter "
        "GPU where copies dominate sooner than on an H200.",
        sm_count=108,
        h2d_pinned_gbps=25.0,
        d2h_pinned_gbps=25.0,
        h2d_pageable_gbps=9.0,
        d2h_pageable_gbps=10.0,
        bidirectional_slowdown=0.1,
        memory_gbps=1935.0,
        peak_tflops=19.5,
    ),
    # GeForce boards report asyncEngineCount = 2 (cudaGetDeviceProperties / deviceQuery
    # "Concurrent copy and kernel execution: Yes with 2 copy engine(s)"), i.e. one per direction.
    "rtx4090": DevicePreset(
        name="rtx4090",
        description="NVIDIA GeForce RTX 4090 (Ada, 128 SMs, 1536 threads per SM, PCIe 4): a "
        "desktop GPU with one copy engine per direction.",
        sm_count=128,
        max_threads_per_sm=1536,
        max_blocks_per_sm=24,
        h2d_pinned_gbps=24.0,
        d2h_pinned_gbps=25.0,
        h2d_pageable_gbps=10.0,
        d2h_pageable_gbps=9.0,
        bidirectional_slowdown=0.15,
        memory_gbps=1008.0,
        peak_tflops=82.6,
    ),
    "c1060": DevicePreset(
        name="c1060",
        description="Tesla C1060 (compute 1.3, 30 SMs): one copy engine for both directions "
        "and one compute queue, no concurrent kernels; shows why issue order mattered.",
        sm_count=30,
        max_threads_per_sm=1024,
        max_blocks_per_sm=8,
        max_resident_kernels=1,
        connections=1,
        hardware_queues="fermi",
        copy_order="fifo",
        shared_copy_engine=True,
        h2d_pinned_gbps=5.5,
        d2h_pinned_gbps=5.5,
        h2d_pageable_gbps=3.0,
        d2h_pageable_gbps=3.0,
        copy_latency_us=10.0,
        bidirectional_slowdown=0.0,
        memory_gbps=102.0,
        peak_tflops=0.62,
        kernel_launch_latency_us=5.0,
        issue_cost_us=_PCIE2_COSTS,
        priority_greatest=0,
    ),
    "c2050": DevicePreset(
        name="c2050",
        description="Tesla C2050 (Fermi, 14 SMs): one copy engine per direction but a single "
        "compute queue, and back-to-back kernels from different streams signal completion "
        "only when the last ends; breadth-first issue can be slower than depth-first.",
        sm_count=14,
        max_threads_per_sm=1536,
        max_blocks_per_sm=8,
        max_resident_kernels=16,
        connections=1,
        hardware_queues="fermi",
        copy_order="fifo",
        h2d_pinned_gbps=6.0,
        d2h_pinned_gbps=6.0,
        h2d_pageable_gbps=3.5,
        d2h_pageable_gbps=3.5,
        copy_latency_us=8.0,
        bidirectional_slowdown=0.05,
        memory_gbps=144.0,
        peak_tflops=1.03,
        kernel_launch_latency_us=5.0,
        issue_cost_us=_PCIE2_COSTS,
        priority_greatest=0,
        completion_signal_delay=True,
    ),
    "k20c": DevicePreset(
        name="k20c",
        description="Tesla K20c (Kepler GK110, 13 SMs): Hyper-Q with 32 hardware queues and "
        "one copy engine per direction; the false dependencies of Fermi disappear.",
        sm_count=13,
        max_blocks_per_sm=16,
        max_resident_kernels=32,
        connections=32,
        h2d_pinned_gbps=6.0,
        d2h_pinned_gbps=6.5,
        h2d_pageable_gbps=3.5,
        d2h_pageable_gbps=3.5,
        copy_latency_us=6.0,
        bidirectional_slowdown=0.05,
        memory_gbps=208.0,
        peak_tflops=3.52,
        kernel_launch_latency_us=4.0,
        issue_cost_us=_PCIE2_COSTS,
        priority_greatest=-1,
    ),
}


def _multi_preset(name: str) -> DevicePreset:
    """A multi-GPU preset: the h200 preset's GPU with the machine's link and NCCL figures."""

    gpu = get_preset("h200")
    return replace(gpu, **multi_gpu_changes(name, gpu.issue_cost_us, gpu.h2d_pinned_gbps))


def preset_names() -> list[str]:
    """Names of the built-in single-GPU presets, in the order they are listed."""
    return list(_BUILTIN)


def multi_preset_names() -> list[str]:
    """Names of the built-in multi-GPU presets (listed after :func:`preset_names`)."""
    return list(MULTI_GPU_PRESETS)


def load_preset(path: str | Path) -> DevicePreset:
    """Read a ``swimlanes-device`` JSON file; ValueError with a clear message on bad input
    (a file that is not UTF-8 text, too large or too deeply nested JSON, bad keys)."""
    from swimlanes.model.io import binary_kind, parse_json
    from swimlanes.model.validate import PipelineError

    p = Path(path)
    name = _shorten(p.name)
    try:
        if p.stat().st_size > MAX_PRESET_FILE_BYTES:
            raise ValueError(f"{name}: too large for a device preset")
        raw = p.read_bytes()
    except OSError as err:
        raise ValueError(f"cannot read preset {name}: {err.strerror or err}") from None
    what = binary_kind(raw)
    if what is not None:
        raise ValueError(f"{name} is not a device preset file ({what})")
    try:
        data = parse_json(raw.decode("utf-8"), raw)
    except PipelineError as err:
        raise ValueError(f"{name}: {err}") from None
    try:
        return DevicePreset.from_dict(data)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{name}: {err}") from None


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def _is_file(path: Path) -> bool:
    """Path.is_file, False for a name the system refuses (too long, a NUL character)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def get_preset(name_or_path: str | Path) -> DevicePreset:
    """A built-in preset by name, or a preset file by path (ValueError listing names if neither)."""
    key = str(name_or_path)
    if key in _BUILTIN:
        calibrated = presets_dir() / f"{key}.json"
        if key == "h200" and calibrated.is_file():
            return load_preset(calibrated)
        return _BUILTIN[key]
    if key in MULTI_GPU_PRESETS:
        return _multi_preset(key)
    path = Path(key)
    if path.suffix == ".json" or _is_file(path):
        if not _is_file(path):
            raise ValueError(f"no preset file {_shorten(key)!r}")
        return load_preset(path)
    names = ", ".join([*_BUILTIN, *MULTI_GPU_PRESETS])
    raise ValueError(f"unknown device {_shorten(key)!r}; choose one of {names} or a .json file")


def preset_summary(preset: DevicePreset) -> dict[str, Any]:
    """Key figures for listings and tooltips (plain JSON types)."""
    if preset.shared_copy_engine:
        engines = f"{preset.copy_engines_per_direction} shared by both directions"
    else:
        engines = f"{preset.copy_engines_per_direction} per direction"
    return {
        "name": preset.name,
        "description": preset.description,
        "sm_count": preset.sm_count,
        "max_resident_kernels": preset.max_resident_kernels,
        "hardware_queues": preset.hardware_queues,
        "connections": preset.connections or "one per stream",
        "queue_choice": preset.queue_choice,
        "copy_engines": engines,
        "copy_order": preset.copy_order,
        "h2d_pinned_gbps": preset.h2d_pinned_gbps,
        "d2h_pinned_gbps": preset.d2h_pinned_gbps,
        "h2d_pageable_gbps": preset.h2d_pageable_gbps,
        "d2h_pageable_gbps": preset.d2h_pageable_gbps,
        "bidirectional_slowdown": preset.bidirectional_slowdown,
        "memory_gbps": preset.memory_gbps,
        "peak_tflops": preset.peak_tflops,
        "kernel_launch_latency_us": preset.kernel_launch_latency_us,
        "copy_launch_latency_us": preset.copy_launch_latency_us,
        "kernel_launch_cost_us": preset.issue_cost_us.get("kernel", 0.0),
        "host_call_gap_us": preset.host_call_gap_us,
        "kernel_overhead_us": preset.kernel_overhead_us,
        "dependency_latency_us": preset.dependency_latency_us,
        "kernel_dependency_latency_us": preset.kernel_dependency_latency_us,
        "copy_engine_gap_us": preset.copy_engine_gap_us,
        "bidirectional_slowdown_d2h": preset.bidirectional_slowdown_d2h,
        "bidirectional_overhead_us": preset.bidirectional_overhead_us,
        "bidirectional_overhead_d2h_us": preset.bidirectional_overhead_d2h_us,
        "bidirectional_rest_us": preset.bidirectional_rest_us,
        "bidirectional_rest_d2h_us": preset.bidirectional_rest_d2h_us,
        "sync_return_us": dict(preset.sync_return_us),
        "priority_range": [preset.priority_greatest, preset.priority_least],
        "completion_signal_delay": preset.completion_signal_delay,
        "calibrated": bool(preset.bandwidth_table),
        **_multi_summary(preset),
    }


def _multi_summary(preset: DevicePreset) -> dict[str, Any]:
    """A multi-GPU preset's own figures (nothing for one GPU, whose summary keeps its shape)."""
    if preset.gpus <= 1:
        return {}
    return {
        "gpus": preset.gpus,
        "link": preset.link,
        "link_gbps": preset.link_gbps,
        "link_latency_us": preset.link_latency_us,
        "nccl_bus_gbps": preset.nccl_bus_gbps,
        "nccl_latency_us": preset.nccl_latency_us,
        "nccl_channels": preset.nccl_channels,
    }
