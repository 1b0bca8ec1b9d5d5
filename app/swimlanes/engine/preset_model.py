"""The device preset's type: :class:`DevicePreset`, the figures of a GPU that the simulator
needs, with its file form (``to_dict``/``from_dict``) and its measured copy-rate tables.

The built-in presets and how a name or a file becomes a preset are in
:mod:`swimlanes.engine.presets`. Units: bandwidths in GB/s (1 GB = 1e9 bytes), times in
microseconds, flops in TFLOP/s.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import asdict, dataclass, field, fields
from typing import Any, cast

# The kinds and bounds live with the checks.
from swimlanes.engine.preset_checks import check_preset, coerce_preset_value
from swimlanes.model.document import OP_KINDS

PRESET_FORMAT = "swimlanes-device"
PRESET_VERSION = 1
#: Bytes of traffic per data element of the synthetic kernel that runs a ``flops``/``bytes``
#: kernel (a float32 read and a float32 write; the executor's streaming kernel).
ROOFLINE_BYTES_PER_ELEMENT = 8
#: The streaming kernel's own figures, fitted on the fidelity benchmark's training halves
#: (H100 and H200, 2026-11-24; kernels that ran alone): they describe the kernel's code, not
#: the host, and ``swimlanes calibrate`` writes them into every preset it makes.
#: ``roofline_overlap_by_occupancy`` is the rule the fidelity benchmark's kernels that ran alone
#: showed (2026-11-25): at low occupancy the measured times exceeded the constant overlap's by a
#: quarter to a third. ``warp_gbps_exponent``: the same kernels' memory traffic per warp fell
#: as a grid kept more warps resident per SM (2.2 GB/s alone, 1.8 with 16 warps on one SM,
#: 1.6 with 4 on every SM; 2026-11-25, nine data sets' training halves).
FITTED_ROOFLINE: dict[str, float | bool] = {
    "roofline_startup_us": 3.0,
    "roofline_tail_efficiency": 0.6,
    "roofline_overlap_by_occupancy": True,
    "warp_gbps_exponent": 0.9,
}

#: How the H100 and H200 hosts measured feed their copy engines, from the fidelity benchmark's
#: random pipelines (2026-11-24 and 2026-11-25, training halves): the copies of one direction
#: took four in-order channels round-robin in issue order (a copy that sat ready while its
#: engine was idle was, in 97% of the idle time, behind an earlier copy four copies before it
#: that waited for its stream). ``swimlanes calibrate`` writes it into every preset it makes.
FITTED_COPY_CHANNELS: dict[str, int] = {"copy_channels": 4}

#: How a call's host cost depends on its place in the program, as factors of the calibrated
#: cost (:mod:`swimlanes.engine.call_context`): pooled medians of each call's measured host
#: time over the model's, on the training halves of the fidelity benchmark's eleven data sets
#: (H100 and H200 hosts, 2026-11-24 and 2026-11-25). They describe how the executor's calls
#: behave, not one host, and ``swimlanes calibrate`` writes them into every preset it makes.
FITTED_CALL_COSTS: dict[str, dict[str, float]] = {
    "call_cost_factors": {
        "first_calls": 1.75,
        "after_blocking": 1.27,
        "roofline_kernel": 1.55,
        "memset": 1.55,
        "d2d": 1.6,
        "host_func": 2.7,
    }
}
#: Every figure fitted on the fidelity benchmark's training halves that ``swimlanes
#: calibrate`` writes into the presets it makes (the bands' model error, which goes into a
#: preset's ``spread``, aside: engine.bands.FITTED_MODEL_ERROR). The fidelity report applies
#: the same to a stored calibration, so the two cannot drift apart.
FITTED_BY_CALIBRATE: dict[str, object] = {
    **FITTED_ROOFLINE,
    **FITTED_COPY_CHANNELS,
    **FITTED_CALL_COSTS,
}


def _issue_costs(**overrides: float) -> dict[str, float]:
    costs = dict.fromkeys(OP_KINDS, 0.0)
    costs.update(overrides)
    return costs


# Host-side API costs as Numba issues the calls. Kernel launch and event record were measured on
# an H200 host (12 us, 1.7 us); the others are estimates until `swimlanes calibrate` measures them.
_NUMBA_COSTS = _issue_costs(
    h2d=9.0,
    d2h=9.0,
    d2d=8.0,
    memset=6.0,
    kernel=12.0,
    event_record=1.7,
    event_wait=1.5,
    event_sync=2.0,
    stream_sync=2.0,
    device_sync=3.0,
    host_func=4.0,
    malloc=15.0,
    free=10.0,
)


def main_loop_fraction(elements: Any, threads: Any) -> Any:
    """The fraction of a synthetic roofline kernel's data elements that its threads take four
    at a time: a grid of ``threads`` threads strides over ``elements`` elements, each thread
    taking groups of four while it has four left and the rest one by one. Both positive:
    ints, or numpy arrays of them (the planner's columns: one formula for both engines)."""
    q, r = divmod(elements, threads)  # r threads have q + 1 elements, the others q
    return (r * ((q + 1) // 4 * 4) + (threads - r) * (q // 4 * 4)) / elements


def warp_loads(warps: int, preset: DevicePreset) -> float:
    """The memory traffic of ``warps`` resident warps of one SM, in single warps' worth
    (``warps ** warp_gbps_exponent``; Python's pow: the planner's columns use it as well, so
    both engines round alike)."""
    exponent = preset.warp_gbps_exponent
    return float(warps) if exponent == 1.0 else float(warps) ** exponent


@dataclass(frozen=True)
class DevicePreset:
    """What the simulator knows about one GPU and the host that drives it."""

    name: str
    description: str = ""
    sm_count: int = 132
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    #: Kernels that may have blocks resident at once (128 on recent GPUs, 1 on pre-Fermi).
    max_resident_kernels: int = 128
    #: CUDA_DEVICE_MAX_CONNECTIONS: hardware queues streams are aliased onto (0: one per stream).
    connections: int = 8
    #: "hyperq": per-connection FIFOs; "fermi": one compute queue plus one FIFO per copy engine.
    hardware_queues: str = "hyperq"
    #: Hyper-Q with ``connections``: how an op comes to its connection's queue. "stream": each
    #: stream's fixed queue, round-robin in creation order. "free": chosen as the op reaches
    #: the GPU: its stream's queue while the stream has an op waiting in one, else the
    #: lowest-numbered empty connection queue, else the next of a round-robin over them (the
    #: H100 and H200 hosts measured: only streams issued while every queue's head was held
    #: waited behind another stream's op). No effect on Fermi or with a queue per stream.
    queue_choice: str = "stream"
    #: Hyper-Q: H2D and D2H copies go through a queue of their stream's own rather than the
    #: stream's shared connection, so a copy held back on one stream never holds back another
    #: stream's copies (measured on H100 and H200: with 16 streams, kernels beyond the 8th
    #: stream waited behind a held-back kernel of the first, copies never did).
    copy_queue_per_stream: bool = False
    #: Hyper-Q: H2D and D2H copies go, in issue order, round-robin onto this many in-order copy
    #: channels per direction (0: not modelled, copies queue as ``copy_queue_per_stream`` and
    #: ``connections`` say), so a copy waiting for its stream holds back the copies issued
    #: behind it in its channel whatever their stream (:data:`FITTED_COPY_CHANNELS`).
    copy_channels: int = 0
    copy_engines_per_direction: int = 1
    #: One copy engine (or pool) serving both directions, as on compute capability 1.x.
    shared_copy_engine: bool = False
    #: "measured": same stream first, then the most recently readied; "fifo": longest waiting.
    copy_order: str = "measured"
    h2d_pinned_gbps: float = 55.0
    d2h_pinned_gbps: float = 55.0
    h2d_pageable_gbps: float = 11.5
    d2h_pageable_gbps: float = 18.0
    copy_latency_us: float = 2.0
    #: Pageable copies go through the driver's pinned staging buffers in chunks (0: not
    #: modelled, the DMA runs at the pageable rate from the call on). H2D: the host copies
    #: each chunk in at its staging rate (:meth:`pageable_host_gbps`) and a chunk's DMA (at the
    #: pinned rate) may start once it is staged: the DMA starts after the first chunk, and
    #: beyond one chunk it moves at the staging rate.
    pageable_h2d_chunk_bytes: int = 0
    #: D2H to pageable memory: the DMA fills chunks of this size that the host copies out (at
    #: :meth:`pageable_host_gbps`); beyond one chunk the DMA moves at that rate, and the call
    #: returns once the last chunk is copied out (0: not modelled).
    pageable_d2h_chunk_bytes: int = 0
    #: Measured points ``[[bytes, GB/s], ...]`` per kind of BANDWIDTH_KINDS; they replace the
    #: latency + bytes/bandwidth model for that kind (log-size interpolation between points).
    bandwidth_table: dict[str, list[list[float]]] = field(default_factory=dict)
    #: While H2D and D2H copies run at once each takes (1 + this) times as long (the H2D
    #: copy only, when ``bidirectional_slowdown_d2h`` is set).
    bidirectional_slowdown: float = 0.105
    #: The D2H copy's own slowdown while an H2D runs (None: ``bidirectional_slowdown``). On
    #: PCIe the D2H payload shares the upstream link with the H2D's read requests, while the
    #: H2D payload comes back on the otherwise idle downstream link: the D2H suffers more.
    bidirectional_slowdown_d2h: float | None = None
    #: A fixed cost each copy pays on top of the slowdown when it runs against the other
    #: direction (the H2D's, and the D2H's unless ``bidirectional_overhead_d2h_us`` is set):
    #: its first and last transfers wait behind the other direction's traffic.
    bidirectional_overhead_us: float = 0.0
    bidirectional_overhead_d2h_us: float | None = None
    #: The engine's extra rest (on top of ``copy_engine_gap_us``) after a copy that ran against
    #: the other direction (the H2D engine's, and the D2H's unless ``bidirectional_rest_d2h_us``
    #: is set): the copy's completion is signalled behind the other direction's traffic.
    bidirectional_rest_us: float = 0.0
    bidirectional_rest_d2h_us: float | None = None
    memory_gbps: float = 4800.0
    peak_tflops: float = 67.0
    #: FLOP/s (GFLOP/s) and memory traffic (GB/s) one resident warp sustains alone: a kernel
    #: timed by ``flops``/``bytes`` whose grid has too few warps to fill the GPU runs at its
    #: warps' rate (an SM's compute at most 1/sm_count of the peak). 0: the whole GPU's rate
    #: whatever the grid.
    warp_gflops: float = 0.0
    warp_gbps: float = 0.0
    #: How a grid's memory traffic per SM grows with the warps it keeps resident per SM:
    #: ``warp_gbps`` x warps ** this (1: in proportion; below 1, each warp's loads wait longer
    #: as more are in flight; :data:`FITTED_ROOFLINE`).
    warp_gbps_exponent: float = 1.0
    #: How much of a ``flops``/``bytes`` kernel's shorter part (compute or memory traffic)
    #: hides under its longer part: 1 is the textbook roofline (the slower of the two), 0 one
    #: after the other. The synthetic kernel that runs such an op loads, computes and stores in
    #: turn, so on an H200 its parts mostly add up.
    roofline_overlap: float = 1.0
    #: Whether that overlap needs warps to hide behind each other: with it, a kernel whose grid
    #: keeps fewer warps resident per SM than the SM holds (``max_threads_per_sm`` / 32) hides
    #: that fraction of ``roofline_overlap`` only (:data:`FITTED_ROOFLINE`).
    roofline_overlap_by_occupancy: bool = False
    #: Device time a kernel timed by ``bytes`` (with or without ``flops``) takes beyond its
    #: roofline: its first loads' latency and the grid's ramp up and down, which a short
    #: kernel cannot hide (:data:`FITTED_ROOFLINE`).
    roofline_startup_us: float = 0.0
    #: Compute rate, as a fraction of the full one, of the elements of a kernel timed by
    #: ``flops`` and ``bytes`` that its synthetic kernel runs through its one-element loop (4
    #: FMAs per loop trip instead of 16, more issue slots spent on the loop itself): each
    #: thread takes its elements (:data:`ROOFLINE_BYTES_PER_ELEMENT` bytes each) four at a time
    #: while it has four, the rest one by one (:func:`main_loop_fraction`;
    #: :data:`FITTED_ROOFLINE`).
    roofline_tail_efficiency: float = 1.0
    #: Device-side delay from a kernel launch call returning to its first block starting.
    kernel_launch_latency_us: float = 4.0
    #: The same for an H2D or D2H copy: from its call returning to its start on an idle engine.
    copy_launch_latency_us: float = 0.0
    #: How long after it may run (its stream's earlier work done, or its call returned on an
    #: idle stream) a ``host_func`` starts: the driver wakes its callback thread.
    host_func_latency_us: float = 0.0
    #: The same for a run's first ``host_func``: the callback thread, idle since before the run,
    #: wakes later. Every host function the thread takes before it has woken starts when it
    #: wakes. 0: as ``host_func_latency_us``.
    host_func_cold_latency_us: float = 0.0
    #: Device-side time a kernel takes beyond its blocks' time (block launch, exit and the
    #: completion signal): its last blocks end this much later.
    kernel_overhead_us: float = 0.0
    #: Device-side delay from an op's completion to the start of an op that waited for it
    #: (stream order, an event, the default stream) on another engine: the completion
    #: semaphore release and acquire between engines.
    dependency_latency_us: float = 0.0
    #: The same between two ops on the SMs (a kernel waiting for a kernel): the compute
    #: front end resolves it without a round trip through memory.
    kernel_dependency_latency_us: float = 0.0
    #: A copy engine's rest between one copy ending and its next copy starting (copies on
    #: one engine are in its own order, so this replaces a dependency latency there).
    copy_engine_gap_us: float = 0.0
    #: How long after the work it waits for is done a blocking call returns to the host, per
    #: kind of SYNC_RETURN_KINDS (the driver notices completion and wakes the thread).
    sync_return_us: dict[str, float] = field(default_factory=dict)
    #: Host time of each API call, per op kind, in microseconds.
    issue_cost_us: dict[str, float] = field(default_factory=lambda: dict(_NUMBA_COSTS))
    #: Host time of a call that repeats the call just before it (the same call on any stream),
    #: per op kind: its code and data are warm in the CPU's caches, so it costs less than
    #: ``issue_cost_us``, which is measured in a varied program (on the shipped h200 preset's
    #: host a Numba kernel launch cost 23.9 us in a loop of launches, 46.0 us among other
    #: calls). Kinds not listed cost ``issue_cost_us``.
    repeat_issue_cost_us: dict[str, float] = field(default_factory=dict)
    #: How much more a call costs by its place in the program, as factors of its cost above:
    #: ``first_calls``, ``after_blocking`` and per kind (:mod:`swimlanes.engine.call_context`,
    #: :data:`FITTED_CALL_COSTS`). Empty: every call costs its issue or repeat cost.
    call_cost_factors: dict[str, float] = field(default_factory=dict)
    #: Host time between one call returning and the next call starting (the issuing
    #: program's own work per op: its loop, argument set-up).
    host_call_gap_us: float = 0.0
    #: Stream priority range, CUDA convention: greatest (numerically lowest) .. least.
    priority_greatest: int = -5
    priority_least: int = 0
    #: Fermi: back-to-back kernels from different streams signal completion only when the
    #: last of them ends.
    completion_signal_delay: bool = False
    #: Run-to-run spread and the model's own error, per key of SPREAD_KEYS (missing keys take
    #: DEFAULT_SPREAD): what engine.bands samples for a prediction band. ``swimlanes
    #: calibrate`` measures the spread; benchmarks/fidelity/fit_band.py fits the model error.
    spread: dict[str, float] = field(default_factory=dict)
    #: GPUs of a multi-GPU machine, each one the GPU the figures above describe.
    gpus: int = 1
    #: What joins them: "nvlink" (through NVSwitch: every pair at full rate) or "pcie";
    #: "" for one GPU.
    link: str = ""
    #: A peer copy's bandwidth between one pair of GPUs, per direction (GB/s).
    link_gbps: float = 0.0
    #: A peer copy's fixed cost on the link (us): its first bytes' round trip.
    link_latency_us: float = 0.0
    #: NCCL collectives: bus bandwidth (GB/s, nccl-tests' ``busbw``), per-call latency (us)
    #: and the SMs each call occupies on each device (NCCL's channels, one block each).
    nccl_bus_gbps: float = 0.0
    nccl_latency_us: float = 0.0
    nccl_channels: int = 0

    def __post_init__(self) -> None:
        check_preset(self)

    def issue_cost_ns(self, kind: str) -> int:
        return round(self.issue_cost_us.get(kind, 0.0) * 1000.0)

    def repeat_issue_cost_ns(self, kind: str) -> int:
        """Host time of a call that repeats the call before it (its issue cost if unlisted)."""
        repeat = self.repeat_issue_cost_us.get(kind)
        return self.issue_cost_ns(kind) if repeat is None else round(repeat * 1000.0)

    def sync_return_ns(self, kind: str) -> int:
        return round(self.sync_return_us.get(kind, 0.0) * 1000.0)

    def cold_callback_extra_ns(self) -> int:
        """How much later than ``host_func_latency_us`` after it may run the run's first host
        function starts (``host_func_cold_latency_us``; 0 when that is 0 or no later)."""
        if not self.host_func_cold_latency_us:
            return 0
        cold = round(self.host_func_cold_latency_us * 1000.0)
        return max(0, cold - round(self.host_func_latency_us * 1000.0))

    def clamp_priority(self, priority: int) -> int:
        """A stream priority clamped into this device's range, as cudaStreamCreateWithPriority."""
        return max(self.priority_greatest, min(self.priority_least, priority))

    def stream_priority(self, priority: int, default_stream: bool) -> int:
        """The priority a stream's kernels run at. A default stream (legacy or per-thread) is
        not created with a priority: CUDA gives it the default one (0), whatever the document
        says; a created stream's priority is clamped as cudaStreamCreateWithPriority does."""
        return self.clamp_priority(0 if default_stream else priority)

    def copy_ns(self, kind: str, nbytes: int, host_memory: str = "pinned") -> int:
        """Time of one copy alone on an idle engine (``kind`` is h2d, d2h or d2d)."""
        if kind == "d2d":
            return round(2.0 * nbytes / self.memory_gbps)
        chunk = self.pageable_chunk_bytes(kind) if host_memory == "pageable" else 0
        if chunk:
            # One chunk's DMA at the pinned rate; the rest follows the host's staging.
            rest = max(0, nbytes - chunk) / self.pageable_host_gbps(kind, nbytes)
            return self.copy_ns(kind, min(nbytes, chunk), "pinned") + round(rest)
        key = f"{kind}_{host_memory}"
        table = self.bandwidth_table.get(key)
        if table:
            return round(nbytes / _interpolate_gbps(table, nbytes))
        gbps = getattr(self, f"{key}_gbps")
        return round(self.copy_latency_us * 1000.0 + nbytes / gbps)

    def pageable_host_gbps(self, kind: str, nbytes: int) -> float:
        """The host's rate of staging in (``h2d``) or copying out (``d2h``) a pageable copy
        of ``nbytes``: the measured ``<kind>_pageable_host`` points, else the pageable rate."""
        table = self.bandwidth_table.get(f"{kind}_pageable_host")
        if table:
            return _interpolate_gbps(table, nbytes)
        return float(getattr(self, f"{kind}_pageable_gbps"))

    def pageable_chunk_bytes(self, kind: str) -> int:
        """The staging chunk of a pageable ``h2d`` or ``d2h`` copy (0: not modelled)."""
        return self.pageable_h2d_chunk_bytes if kind == "h2d" else self.pageable_d2h_chunk_bytes

    def memset_ns(self, nbytes: int) -> int:
        return round(nbytes / self.memory_gbps)

    def roofline_ns(
        self,
        flops: float | None,
        nbytes: int | None,
        blocks: int = 0,
        threads: int = 0,
        per_sm: int = 0,
    ) -> int:
        """A kernel's time from work and traffic: the slower of compute and memory. With its
        grid (``blocks`` of ``threads``, at most ``per_sm`` resident per SM), a grid with few
        warps is held to their rate (``warp_gflops``, ``warp_gbps``)."""
        compute_rate = self.peak_tflops * 1000.0  # flops per ns
        memory_rate = self.memory_gbps  # bytes per ns
        if blocks > 0 and threads > 0 and per_sm > 0:
            sms = min(blocks, self.sm_count)
            warps = min(per_sm, -(-blocks // sms)) * -(-threads // 32)  # per busy SM
            if self.warp_gflops:
                per_sm_rate = min(compute_rate / self.sm_count, warps * self.warp_gflops)
                compute_rate = min(compute_rate, sms * per_sm_rate)
            if self.warp_gbps:
                memory_rate = min(memory_rate, sms * warp_loads(warps, self) * self.warp_gbps)
        overlap = self.roofline_overlap
        if flops and nbytes and blocks > 0 and threads > 0:
            if self.roofline_tail_efficiency != 1.0:
                elements = nbytes // ROOFLINE_BYTES_PER_ELEMENT
                main = main_loop_fraction(elements, blocks * threads) if elements > 0 else 1.0
                compute_rate /= main + (1.0 - main) / self.roofline_tail_efficiency
            if self.roofline_overlap_by_occupancy and per_sm > 0:
                overlap *= min(1.0, warps * 32 / self.max_threads_per_sm)
        compute = (flops or 0.0) / compute_rate
        memory = (nbytes or 0) / memory_rate
        exposed = (1.0 - overlap) * min(compute, memory)
        startup = self.roofline_startup_us * 1000.0 if nbytes else 0.0
        return max(1, round(max(compute, memory) + exposed + startup))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"format": PRESET_FORMAT, "version": PRESET_VERSION}
        out.update(asdict(self))
        return out

    @classmethod
    def from_dict(cls, data: Any) -> DevicePreset:
        """Build a preset from its JSON form; ValueError naming the key on bad input."""
        if not isinstance(data, dict):
            raise ValueError("a device preset must be a JSON object")
        if data.get("format") != PRESET_FORMAT:
            raise ValueError(f"format: not a {PRESET_FORMAT} file")
        if data.get("version") != PRESET_VERSION:
            raise ValueError(
                f"version: unsupported preset version {data.get('version')!r} "
                f"(this Swimlanes reads {PRESET_VERSION})"
            )
        known = {f.name: f for f in fields(cls)}
        kwargs: dict[str, Any] = {}
        for key, value in data.items():
            if key in ("format", "version"):
                continue
            if key not in known:
                raise ValueError(f"{key}: unknown preset key")
            # (Postponed annotations: every field's type is its source text.)
            field_type = cast(str, cls.__dataclass_fields__[key].type)
            kwargs[key] = coerce_preset_value(key, value, field_type)
        if "name" not in kwargs:
            raise ValueError("name: is required")
        if "issue_cost_us" in kwargs:
            kwargs["issue_cost_us"] = {**_issue_costs(), **kwargs["issue_cost_us"]}
        return cls(**kwargs)


def _interpolate_gbps(table: list[list[float]], nbytes: int) -> float:
    """Bandwidth at ``nbytes`` from measured points, linear in log(size), clamped at the ends.

    Between two points: the first segment whose ends hold ``nbytes`` (found by bisection in
    the sorted sizes, which the planner asks for once per copy of its own size)."""
    sizes, rates, logs = _sorted_points(table)
    if nbytes <= sizes[0]:
        return rates[0]
    if nbytes >= sizes[-1]:
        return rates[-1]
    j = bisect_left(sizes, nbytes)  # sizes[j - 1] < nbytes <= sizes[j]
    log0, log1 = logs[j - 1], logs[j]
    f = (math.log(nbytes) - log0) / (log1 - log0)
    b0 = rates[j - 1]
    return b0 + f * (rates[j] - b0)


#: Per table (by identity; the table is kept so that its id stays its own): its points sorted
#: as (sizes, rates, log sizes). Presets are frozen and their tables are never changed.
_SORTED_TABLES: dict[int, tuple[list, tuple[list, list, list]]] = {}


def _sorted_points(table: list[list[float]]) -> tuple[list, list, list]:
    entry = _SORTED_TABLES.get(id(table))
    if entry is None or entry[0] is not table:
        if len(_SORTED_TABLES) >= 256:  # presets made on the fly (bands, calibration)
            _SORTED_TABLES.clear()
        points = sorted(table)
        sizes = [p[0] for p in points]
        # math.log refuses sizes <= 0 (the validated presets have none) only when used.
        logs = [math.log(x) if x > 0 else math.nan for x in sizes]
        entry = _SORTED_TABLES[id(table)] = (table, (sizes, [p[1] for p in points], logs))
    return entry[1]
