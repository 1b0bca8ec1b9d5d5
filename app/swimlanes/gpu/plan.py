"""Resource planning for a run: what to allocate, compile and create before the timed region.

Pure Python (no numba), so it is tested everywhere. Buffers are pooled per stream: each stream
gets one device buffer sized by the largest op on it (plus a second one for device-to-device
copies and memory-bound kernels) and one pinned / one pageable host buffer sized by its largest
host copy. Every op of that stream and every repetition reuses them, as a real double-buffered
pipeline reuses its chunk buffers; only ``malloc`` ops allocate inside the timed region.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from swimlanes.engine.preset_model import ROOFLINE_BYTES_PER_ELEMENT
from swimlanes.gpu.errors import GpuError, gib
from swimlanes.model.document import DEFAULT_STREAM, Op, Pipeline, Stream

#: Bytes a ``malloc`` op allocates when it names none.
DEFAULT_MALLOC_BYTES = 1 << 20
#: Fused multiply-adds per thread per loop trip of the flops kernel (2 flops each).
FMA_PER_TRIP = 16
#: The flops kernel's trip count is an int32.
MAX_FMA_TRIPS = 2**31 - 1
#: FMAs per element per loop trip of the streaming kernel (its trip count is an int32 too).
STREAM_FMA_PER_TRIP = 4
#: Bytes one element of the streaming kernel moves (a float32 read plus a float32 write).
STREAM_BYTES_PER_ELEMENT = ROOFLINE_BYTES_PER_ELEMENT
#: Pinned memory must leave this much host memory free (the OS and the app need some).
HOST_RESERVE_BYTES = 1 << 30


@dataclass(frozen=True)
class DeviceInfo:
    """What planning needs to know about the GPU."""

    name: str
    sm_count: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    free_bytes: int
    total_bytes: int


@dataclass(frozen=True)
class KernelPlan:
    """The synthetic kernel an op runs: ``spin`` (exact time per block), ``fma`` or ``stream``."""

    variant: str
    blocks: int
    threads: int
    block_ns: int = 0
    fma_iters: int = 0
    elements: int = 0
    fma_per_element: int = 0
    #: "op" for a pipeline's kernel, "warm-up" for the executor's own untimed launches.
    purpose: str = "op"
    #: The op's ``blocks_per_sm``: at most this many blocks per SM (0: as many as fit).
    blocks_per_sm: int = 0


@dataclass
class StreamBuffers:
    """Sizes of one stream's pooled buffers (bytes; 0 means not needed)."""

    device: int = 0
    device2: int = 0
    pinned: int = 0
    pageable: int = 0


@dataclass(frozen=True)
class OpPlan:
    """One program op, resolved: stream, sizes, kernel, event and malloc slots."""

    index: int
    kind: str
    label: str
    stream: str | None
    nbytes: int
    host_memory: str
    is_async: bool
    kernel: KernelPlan | None = None
    event: str | None = None
    malloc_slot: int | None = None
    duration_ns: int = 0


@dataclass
class ResourcePlan:
    """Everything a run allocates, in the order the executor creates it."""

    ops: list[OpPlan]
    streams: list[Stream]
    buffers: dict[str, StreamBuffers]
    events: list[str]
    malloc_bytes: list[int] = field(default_factory=list)
    kernels: list[KernelPlan] = field(default_factory=list)

    @property
    def device_bytes(self) -> int:
        """Peak device memory: pooled buffers plus every slot a malloc or free touches."""
        pooled = sum(b.device + b.device2 for b in self.buffers.values())
        return pooled + sum(self.malloc_bytes)

    @property
    def pinned_bytes(self) -> int:
        return sum(b.pinned for b in self.buffers.values())

    @property
    def pageable_bytes(self) -> int:
        return sum(b.pageable for b in self.buffers.values())

    @property
    def host_func_count(self) -> int:
        return sum(1 for op in self.ops if op.kind == "host_func")


def blocks_per_sm(op: Op, info: DeviceInfo) -> int:
    """Resident blocks of this kernel per SM: the thread and block limits, or the op's
    ``blocks_per_sm`` (clamped to the block limit), the same rule as the simulator's."""
    override = op.extra.get("blocks_per_sm")
    if isinstance(override, int) and override > 0:
        return min(override, info.max_blocks_per_sm)
    threads = op.threads or 1
    return max(1, min(info.max_blocks_per_sm, info.max_threads_per_sm // threads))


def kernel_waves(op: Op, info: DeviceInfo) -> int:
    """How many rounds of blocks the kernel needs when it has the GPU to itself."""
    per_wave = blocks_per_sm(op, info) * max(1, info.sm_count)
    return max(1, math.ceil((op.blocks or 1) / per_wave))


def plan_kernel(op: Op, info: DeviceInfo) -> KernelPlan:
    """Pick the synthetic kernel that does what the op says."""
    blocks, threads = op.blocks or 1, op.threads or 1
    override = op.extra.get("blocks_per_sm")
    limit = blocks_per_sm(op, info) if isinstance(override, int) and override > 0 else 0
    if op.block_us is not None:
        block_ns = round(op.block_us * 1000)
        return KernelPlan("spin", blocks, threads, block_ns=block_ns, blocks_per_sm=limit)
    if op.duration_us is not None:
        block_ns = round(op.duration_us * 1000 / kernel_waves(op, info))
        return KernelPlan("spin", blocks, threads, block_ns=block_ns, blocks_per_sm=limit)
    flops = float(op.flops or 0.0)
    if op.bytes:
        elements = max(1, op.bytes // STREAM_BYTES_PER_ELEMENT)
        per = math.ceil(flops / (2 * elements)) if flops else 0
        per = min(per, MAX_FMA_TRIPS * STREAM_FMA_PER_TRIP)
        return KernelPlan(
            "stream", blocks, threads, elements=elements, fma_per_element=per, blocks_per_sm=limit
        )
    total_threads = blocks * threads
    iters = min(MAX_FMA_TRIPS, max(1, math.ceil(flops / (2 * FMA_PER_TRIP * total_threads))))
    return KernelPlan("fma", blocks, threads, fma_iters=iters, blocks_per_sm=limit)


def _op_stream(op: Op) -> str | None:
    if op.op in ("h2d", "d2h", "d2d", "memset") and op.stream is None:
        return DEFAULT_STREAM
    return op.stream_name


def make_plan(pipeline: Pipeline, info: DeviceInfo) -> ResourcePlan:
    """Resolve every op and size the pooled buffers, malloc slots and events."""
    streams = pipeline.all_streams
    buffers: dict[str, StreamBuffers] = {}
    ops: list[OpPlan] = []
    kernels: list[KernelPlan] = []
    malloc_bytes: list[int] = []
    outstanding: list[int] = []
    for i, op in enumerate(pipeline.program):
        stream = _op_stream(op)
        nbytes = int(op.bytes or 0)
        kernel = plan_kernel(op, info) if op.op == "kernel" else None
        slot = None
        if op.op == "malloc":
            slot = len(malloc_bytes)
            malloc_bytes.append(nbytes or DEFAULT_MALLOC_BYTES)
            outstanding.append(slot)
        elif op.op == "free":
            if outstanding:
                slot = outstanding.pop()
            else:  # a free with nothing to free releases a buffer allocated up front
                slot = len(malloc_bytes)
                malloc_bytes.append(DEFAULT_MALLOC_BYTES)
        if stream is not None:
            _grow(buffers.setdefault(stream, StreamBuffers()), op, nbytes)
        if kernel is not None:
            kernels.append(kernel)
        ops.append(
            OpPlan(
                index=i,
                kind=op.op,
                label=op.display_label,
                stream=stream,
                nbytes=nbytes,
                host_memory=op.effective_host_memory,
                is_async=op.effective_async,
                kernel=kernel,
                event=op.event,
                malloc_slot=slot,
                duration_ns=round((op.duration_us or 0.0) * 1000),
            )
        )
    return ResourcePlan(ops, streams, buffers, pipeline.events(), malloc_bytes, kernels)


def _grow(buf: StreamBuffers, op: Op, nbytes: int) -> None:
    if op.op in ("h2d", "d2h"):
        buf.device = max(buf.device, nbytes)
        if op.effective_host_memory == "pinned":
            buf.pinned = max(buf.pinned, nbytes)
        else:
            buf.pageable = max(buf.pageable, nbytes)
    elif op.op in ("d2d", "memset"):
        buf.device = max(buf.device, nbytes)
        if op.op == "d2d":
            buf.device2 = max(buf.device2, nbytes)
    elif op.op == "kernel" and op.bytes:
        half = (op.bytes // STREAM_BYTES_PER_ELEMENT) * 4
        buf.device = max(buf.device, half)
        buf.device2 = max(buf.device2, half)


def check_memory(plan: ResourcePlan, info: DeviceInfo, host_available: int | None) -> None:
    """Refuse, before allocating anything, a plan that needs more memory than is free."""
    if plan.device_bytes > info.free_bytes:
        raise GpuError(
            f"this pipeline needs {gib(plan.device_bytes)} of device memory, "
            f"{gib(info.free_bytes)} is free"
        )
    if host_available is None:
        return
    usable = max(0, host_available - HOST_RESERVE_BYTES)
    if plan.pinned_bytes + plan.pageable_bytes > usable:
        parts = [
            f"{gib(n)} of {kind}"
            for n, kind in ((plan.pinned_bytes, "pinned"), (plan.pageable_bytes, "pageable"))
            if n
        ]
        raise GpuError(
            f"this pipeline needs {' and '.join(parts)} host memory, {gib(usable)} is free"
        )
