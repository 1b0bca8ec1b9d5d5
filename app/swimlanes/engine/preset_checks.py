"""The bounds of a device preset's figures, and the checks a preset (built in, or read from a
file) passes before the simulator may use it. Split from presets.py, which holds the presets
themselves.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from swimlanes.model.document import (
    MAX_BYTES,
    MAX_NAME_CHARS,
    MAX_PRIORITY,
    MAX_TEXT_CHARS,
    MIN_PRIORITY,
    OP_KINDS,
)

if TYPE_CHECKING:
    from swimlanes.engine.presets import DevicePreset

HARDWARE_QUEUE_MODELS: tuple[str, ...] = ("hyperq", "fermi")
#: How an op's Hyper-Q connection queue is chosen (DevicePreset.queue_choice).
QUEUE_CHOICES: tuple[str, ...] = ("stream", "free")
#: How a copy engine picks among ready copies (see engine.copies.choose_copy).
COPY_ORDERS: tuple[str, ...] = ("measured", "fifo", "stream_fifo")
#: Keys of ``bandwidth_table``: measured size -> bandwidth points per transfer kind.
#: The ``_host`` kinds are the host's side of a pageable copy (staging in, copying out) per
#: size: bytes over the whole call of a copy alone.
BANDWIDTH_KINDS: tuple[str, ...] = (
    "h2d_pinned",
    "d2h_pinned",
    "h2d_pageable",
    "d2h_pageable",
    "h2d_pageable_host",
    "d2h_pageable_host",
)
#: Keys of ``sync_return_us``: the blocking calls whose return lags the work they wait for
#: (``sync_copy``: a copy call that returns when the copy is done; ``device_sync`` also
#: covers ``free``, which synchronises the device).
SYNC_RETURN_KINDS: tuple[str, ...] = ("stream_sync", "event_sync", "device_sync", "sync_copy")
MAX_CONNECTIONS = 32
#: What joins the GPUs of a multi-GPU preset ("": one GPU).
LINK_KINDS: tuple[str, ...] = ("", "nvlink", "pcie")
#: GPUs of one multi-GPU preset (the largest NVSwitch systems of one host have 8 to 72).
MAX_GPUS = 72
#: Keys of ``spread`` (engine.bands). The first five are relative standard deviations (of the
#: log of a factor, so 0.05 is about 5%) of what varies from one run to the next:
#: ``host_cost`` each API call's host cost, ``host_scale`` all host costs of a run together
#: (clock and cache state), ``copy`` each copy's time, ``pageable_gbps`` the pageable copy
#: rate of a run, ``kernel`` each kernel's (and D2D copy's, memset's) time. The last two are
#: the model's own error, fractions of the predicted time fitted on measured pipelines:
#: the band's low end is stretched by ``model_error_low`` (<= 0) and its high end by
#: ``model_error_high`` (>= 0).
SPREAD_KEYS: tuple[str, ...] = (
    "host_cost",
    "host_scale",
    "copy",
    "pageable_gbps",
    "kernel",
    "model_error_low",
    "model_error_high",
)
#: The figures a preset without a ``spread`` key uses: modest run-to-run jitter, no model error.
DEFAULT_SPREAD: dict[str, float] = {
    "host_cost": 0.05,
    "host_scale": 0.02,
    "copy": 0.01,
    "pageable_gbps": 0.05,
    "kernel": 0.01,
    "model_error_low": 0.0,
    "model_error_high": 0.0,
}
#: Largest relative spread (and model error above the prediction) a preset may give.
MAX_SPREAD = 10.0
#: Limits of a preset's figures: beyond them no GPU exists, and the simulator's per-op time
#: limit (engine.plan.MAX_OP_NS) and clock would be at risk. Counts (SMs, threads and blocks
#: per SM, resident kernels) at most MAX_COUNT; copy engines per direction at most
#: MAX_COPY_ENGINES; every time in microseconds (latencies, API costs, rests) at most
#: MAX_PRESET_US (1 s); bandwidths and peak FLOP/s positive and at most MAX_RATE; the
#: bidirectional slowdowns at most MAX_SLOWDOWN (a copy 11 times as slow).
MAX_COUNT = 1 << 20
MAX_COPY_ENGINES = 64
MAX_PRESET_US = 1e6
#: The keys of a preset's ``call_cost_factors`` (:mod:`swimlanes.engine.call_context`).
CALL_COST_FACTOR_KEYS: tuple[str, ...] = (
    "first_calls",
    "after_blocking",
    "roofline_kernel",
    "memset",
    "d2d",
    "host_func",
)
MAX_CALL_COST_FACTOR = 10.0
MAX_RATE = 1e9
MAX_SLOWDOWN = 10.0
#: Measured points per kind in a bandwidth table.
MAX_TABLE_POINTS = 1024
#: Largest preset file read.
MAX_PRESET_FILE_BYTES = 16 * 1024 * 1024


def coerce_preset_value(key: str, value: Any, type_name: str) -> Any:
    def bad(expected: str) -> ValueError:
        shown = repr(value) if isinstance(value, int | float | bool | None) else None
        if isinstance(value, str):
            shown = repr(value[:40]) + ("..." if len(value) > 40 else "")
        elif isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
            shown = None
        return ValueError(f"{key}: must be {expected}" + (f" (got {shown})" if shown else ""))

    if type_name == "str":
        if not isinstance(value, str):
            raise bad("a string")
        longest = MAX_TEXT_CHARS if key == "description" else MAX_NAME_CHARS
        if len(value) > longest:
            raise ValueError(f"{key}: must be at most {longest} characters (got {len(value)})")
        return value
    if type_name == "bool":
        if not isinstance(value, bool):
            raise bad("true or false")
        return value
    if type_name == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad("an integer")
        if not MIN_PRIORITY <= value <= MAX_PRIORITY:
            raise ValueError(f"{key}: must be from {MIN_PRIORITY} to {MAX_PRIORITY}")
        return value
    if type_name == "float | None" and value is None:
        return None
    if type_name in ("float", "float | None"):
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise bad("a number")
        return float(value)
    if type_name.startswith("dict[str, float]"):
        if not isinstance(value, dict):
            raise bad("an object of kind -> microseconds")
        return {
            str(k)[:40]: coerce_preset_value(f"{key}.{k}"[:80], v, "float")
            for k, v in value.items()
        }
    if not isinstance(value, dict):
        raise bad("an object of kind -> [[bytes, GB/s], ...]")
    table: dict[str, list[list[float]]] = {}
    for kind, points in value.items():
        kind = str(kind)[:40]
        if not isinstance(points, list) or not all(
            isinstance(p, list | tuple) and len(p) == 2 for p in points
        ):
            raise ValueError(f"{key}.{kind}: must be a list of [bytes, GB/s] pairs")
        if len(points) > MAX_TABLE_POINTS:
            raise ValueError(f"{key}.{kind}: at most {MAX_TABLE_POINTS} points")
        table[kind] = [
            [coerce_preset_value(f"{key}.{kind}", x, "float") for x in p] for p in points
        ]
    return table


def check_preset(p: DevicePreset) -> None:
    """Raise ValueError naming the first key whose value cannot describe a GPU."""
    positive_ints = ("sm_count", "max_threads_per_sm", "max_blocks_per_sm", "max_resident_kernels")
    for key in positive_ints + ("copy_engines_per_direction",):
        limit: float = MAX_COPY_ENGINES if key == "copy_engines_per_direction" else MAX_COUNT
        if getattr(p, key) < 1:
            raise ValueError(f"{key}: must be at least 1")
        if getattr(p, key) > limit:
            raise ValueError(f"{key}: must be at most {limit}")
    if len(p.name) > MAX_NAME_CHARS or len(p.description) > MAX_TEXT_CHARS:
        raise ValueError(f"name: must be at most {MAX_NAME_CHARS} characters")
    if not 0 <= p.connections <= MAX_CONNECTIONS:
        raise ValueError(f"connections: must be 1..{MAX_CONNECTIONS} (0: one queue per stream)")
    if not 0 <= p.copy_channels <= MAX_CONNECTIONS:
        raise ValueError(f"copy_channels: must be 0..{MAX_CONNECTIONS} (0: not modelled)")
    if p.copy_order not in COPY_ORDERS:
        raise ValueError(f"copy_order: must be one of {', '.join(COPY_ORDERS)}")
    if p.hardware_queues not in HARDWARE_QUEUE_MODELS:
        raise ValueError(f"hardware_queues: must be one of {', '.join(HARDWARE_QUEUE_MODELS)}")
    if p.queue_choice not in QUEUE_CHOICES:
        raise ValueError(f"queue_choice: must be one of {', '.join(QUEUE_CHOICES)}")
    for key in (
        "h2d_pinned_gbps",
        "d2h_pinned_gbps",
        "h2d_pageable_gbps",
        "d2h_pageable_gbps",
        "memory_gbps",
        "peak_tflops",
    ):
        if not 0 < getattr(p, key) <= MAX_RATE:
            raise ValueError(f"{key}: must be a positive number (at most {MAX_RATE:g})")
    for key in (
        "copy_latency_us",
        "kernel_launch_latency_us",
        "copy_launch_latency_us",
        "host_call_gap_us",
        "kernel_overhead_us",
        "dependency_latency_us",
        "kernel_dependency_latency_us",
        "copy_engine_gap_us",
        "host_func_latency_us",
        "host_func_cold_latency_us",
        "bidirectional_slowdown",
        "bidirectional_overhead_us",
        "bidirectional_rest_us",
    ):
        limit = MAX_SLOWDOWN if key == "bidirectional_slowdown" else MAX_PRESET_US
        if not 0 <= getattr(p, key) <= limit:
            raise ValueError(f"{key}: must be a number from 0 to {limit:g}")
    for key in (
        "bidirectional_slowdown_d2h",
        "bidirectional_overhead_d2h_us",
        "bidirectional_rest_d2h_us",
    ):
        limit = MAX_SLOWDOWN if key == "bidirectional_slowdown_d2h" else MAX_PRESET_US
        if getattr(p, key) is not None and not 0 <= getattr(p, key) <= limit:
            raise ValueError(f"{key}: must be a number from 0 to {limit:g} (or null)")
    for kind, lag in p.sync_return_us.items():
        if kind not in SYNC_RETURN_KINDS:
            raise ValueError(
                f"sync_return_us.{kind}: must be one of {', '.join(SYNC_RETURN_KINDS)}"
            )
        if not 0 <= lag <= MAX_PRESET_US:
            raise ValueError(f"sync_return_us.{kind}: must be a number from 0 to {MAX_PRESET_US:g}")
    for kind, cost in p.issue_cost_us.items():
        if kind not in OP_KINDS:
            raise ValueError(f"issue_cost_us.{kind}: unknown op kind")
        if not 0 <= cost <= MAX_PRESET_US:
            raise ValueError(f"issue_cost_us.{kind}: must be a number from 0 to {MAX_PRESET_US:g}")
    for kind, cost in p.repeat_issue_cost_us.items():
        if kind not in OP_KINDS:
            raise ValueError(f"repeat_issue_cost_us.{kind}: unknown op kind")
        if not 0 <= cost <= MAX_PRESET_US:
            raise ValueError(
                f"repeat_issue_cost_us.{kind}: must be a number from 0 to {MAX_PRESET_US:g}"
            )
    for key, factor in p.call_cost_factors.items():
        if key not in CALL_COST_FACTOR_KEYS:
            raise ValueError(
                f"call_cost_factors.{key}: must be one of {', '.join(CALL_COST_FACTOR_KEYS)}"
            )
        if not 0 < factor <= MAX_CALL_COST_FACTOR:
            raise ValueError(
                f"call_cost_factors.{key}: must be a number above 0, at most "
                f"{MAX_CALL_COST_FACTOR:g}"
            )
    for kind, points in p.bandwidth_table.items():
        if kind not in BANDWIDTH_KINDS:
            raise ValueError(f"bandwidth_table.{kind}: must be one of {', '.join(BANDWIDTH_KINDS)}")
        if any(size <= 0 or not 0 < gbps <= MAX_RATE for size, gbps in points):
            raise ValueError(f"bandwidth_table.{kind}: sizes and bandwidths must be positive")
    if not 0 <= p.roofline_overlap <= 1:
        raise ValueError("roofline_overlap: must be a number from 0 to 1")
    if not 0 < p.roofline_tail_efficiency <= 1:
        raise ValueError("roofline_tail_efficiency: must be a number above 0, at most 1")
    if not 0 <= p.roofline_startup_us <= 1000:
        raise ValueError("roofline_startup_us: must be a number from 0 to 1000")
    if not 0 < p.warp_gbps_exponent <= 1:
        raise ValueError("warp_gbps_exponent: must be a number above 0, at most 1")
    for key in ("warp_gflops", "warp_gbps"):
        if not 0 <= getattr(p, key) <= MAX_RATE:
            raise ValueError(f"{key}: must be a number from 0 to {MAX_RATE:g}")
    for key in ("pageable_h2d_chunk_bytes", "pageable_d2h_chunk_bytes"):
        if not 0 <= getattr(p, key) <= MAX_BYTES:
            raise ValueError(f"{key}: must be from 0 to {MAX_BYTES} bytes")
    _check_spread(p.spread)
    _check_multi(p)
    if p.priority_greatest > p.priority_least:
        raise ValueError("priority_greatest: must be <= priority_least (lower is higher)")


def _check_multi(p: DevicePreset) -> None:
    """The multi-GPU figures: a machine of several GPUs needs its link and NCCL figures."""
    if not 1 <= p.gpus <= MAX_GPUS:
        raise ValueError(f"gpus: must be from 1 to {MAX_GPUS}")
    if p.link not in LINK_KINDS:
        raise ValueError("link: must be nvlink, pcie or empty (one GPU)")
    if p.gpus > 1 and not p.link:
        raise ValueError("link: a preset of several GPUs must say what joins them")
    for key in ("link_gbps", "nccl_bus_gbps"):
        value = getattr(p, key)
        if not 0 <= value <= MAX_RATE or (p.gpus > 1 and value == 0):
            what = "positive" if p.gpus > 1 else "from 0"
            raise ValueError(f"{key}: must be a number {what} (at most {MAX_RATE:g} GB/s)")
    for key in ("link_latency_us", "nccl_latency_us"):
        if not 0 <= getattr(p, key) <= MAX_PRESET_US:
            raise ValueError(f"{key}: must be a number from 0 to {MAX_PRESET_US:g}")
    if not 0 <= p.nccl_channels <= p.sm_count:
        raise ValueError(f"nccl_channels: must be from 0 to the SM count ({p.sm_count})")


def _check_spread(spread: dict[str, float]) -> None:
    for key, value in spread.items():
        if key not in SPREAD_KEYS:
            raise ValueError(f"spread.{key}: must be one of {', '.join(SPREAD_KEYS)}")
        low, high = (-0.99, 0.0) if key == "model_error_low" else (0.0, MAX_SPREAD)
        if not low <= value <= high:
            raise ValueError(f"spread.{key}: must be a number from {low:g} to {high:g}")
