"""What a plan is made of: the op and behaviour codes, the per-op columns, the limits of one
simulation, and the Plan and Shapes that hold them.

engine.plan builds a Plan (``plan_ops``), from op shapes worked out in bulk
(engine.plan_columns) or one at a time (engine.plan_shape); all three build on this module,
which imports none of them.

The limits are read through this module when used (``plan_model.MAX_OP_NS``), never copied
into another module's names: tests lift them here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from swimlanes.model.document import MAX_DURATION_US, OP_KINDS

K = {name: code for code, name in enumerate(OP_KINDS)}
#: Op kinds that are enqueued on a stream (stream_sync only waits on the host).
ENQUEUED = frozenset(
    K[k]
    for k in ("h2d", "d2h", "d2d", "memset", "kernel", "event_record", "event_wait", "host_func")
)

# What the host thread does for each op (see simulator docstring).
ENQ = 0  # enqueue, return at once
ENQ_WAIT = 1  # enqueue, return when the op is done (sync copy, D2H to pageable memory)
ENQ_STAGE = 2  # enqueue, return once the data is staged (H2D from pageable memory)
ENQ_BARRIER = 3  # enqueue as a device-wide implicit synchronisation (sync memset)
WAIT_STREAM = 4
WAIT_EVENT = 5
WAIT_ALL = 6  # device_sync, free
BUSY = 7  # host work
BARRIER = 8  # malloc: device-wide implicit synchronisation, host does not wait

#: How the host behaves on the ops that are not enqueued on a stream.
HOST_ONLY = {
    "stream_sync": WAIT_STREAM,
    "event_sync": WAIT_EVENT,
    "device_sync": WAIT_ALL,
    "free": WAIT_ALL,
    "malloc": BARRIER,
    "host": BUSY,
}

#: The per-op int columns of a Plan, in the order of a shape's row tuple.
COLUMNS = ("kind", "stream", "run", "queue", "cost", "host", "solo", "nbytes")

# Where an enqueued op runs.
RUN_COPY, RUN_SM, RUN_KERNEL, RUN_INSTANT, RUN_CALLBACK = range(5)

STREAM_LEGACY, STREAM_BLOCKING, STREAM_NON_BLOCKING = range(3)

# -- What one simulation may take ----------------------------------------------------------
# The validator bounds each value of a pipeline (swimlanes.model.document's limits); these
# bound what a device preset makes of them, so that every simulation ends, soon, with a
# correct answer or a ValueError naming the op and the limit (never an overflow).
#: The longest time one op may take on the device, in ns (times the preset derives from
#: bytes, FLOPs or block time included): the validator's MAX_DURATION_US.
MAX_OP_NS = round(MAX_DURATION_US * 1000.0)
#: The program's ops one after another (each with its host call, latencies and copies at
#: their slowest) must take less than this, a quarter of the simulator's clock range (it uses
#: 2**62 ns as "never"): every time of the simulation then fits, whatever overlaps.
MAX_TOTAL_NS = 1 << 60
#: Waves of thread blocks of all kernels together (kernels alone on the device: a kernel of B
#: blocks with R resident per SM on S SMs takes ceil(B / (S * R)) waves). The block scheduler
#: handles one event per wave, about 2 us each on the 2-core machine of README's figures, so
#: this bounds that work to about 2 s however many blocks a kernel has (the validator allows
#: CUDA's 2**31 - 1 per kernel: 8 million waves of 1024-thread blocks on an H200).
MAX_BLOCK_WAVES = 1 << 20


def too_many_waves(index: int, waves: int, most: int, these: str, preset_name: str) -> str:
    """The refusal of a pipeline whose kernels need ``waves`` waves of thread blocks, past
    MAX_BLOCK_WAVES, naming op ``index`` (``these``: that kernel, or the kernels like it,
    which need ``most`` of them)."""
    return (
        f"program[{index}].blocks: the kernels need {waves} waves of thread blocks on "
        f"{preset_name} ({most} of them for {these}): the simulator takes at most "
        f"{MAX_BLOCK_WAVES} in one pipeline (fewer blocks, or smaller blocks, so that more "
        "run at once)"
    )


#: Ops on the legacy default stream, device-wide synchronisations (device_sync, free) and
#: implicit ones (malloc, synchronous memset) each look at every stream: at most this many
#: such looks (about 0.15 us each; 16,384 such ops with 1,024 streams, any number with 8).
MAX_STREAM_CHECKS = 1 << 24


@dataclass
class Plan:
    """Flat per-op lists; index == program index."""

    stream_names: list[str]
    stream_class: list[int]
    priority: list[int]
    queue_of_stream: list[int]
    queue_count: int
    shared_queues: bool = False  # some hardware queue carries more than one stream
    #: The first of the copy channels' queues (H2D's, then D2H's; -1: no copy channels).
    copy_channel_base: int = -1
    #: queue_choice "free": the connection queues 1 .. free_queues, which an op whose planned
    #: queue is one of them picks as it reaches the GPU (RunState.choose_queue); 0: none.
    free_queues: int = 0
    shape_count: int = 0  # distinct op shapes (each worked out once by the planner)
    kind: list[int] = field(default_factory=list)
    queue: list[int] = field(default_factory=list)  # hardware queue of enqueued ops, else -1
    run: list[int] = field(default_factory=list)  # RUN_* for enqueued ops, -1 for host-only
    stream: list[int] = field(default_factory=list)
    #: What a copy engine's preference for more of the same follows, per op: the copy's
    #: channel (a number past the streams') when copy channels are modelled, else its stream.
    copy_key: list[int] = field(default_factory=list)
    host: list[int] = field(default_factory=list)
    cost: list[int] = field(default_factory=list)
    solo: list[int] = field(default_factory=list)
    stage: list[int | None] = field(default_factory=list)  # host staging ns of pageable H2D
    kernel: list[tuple[int, int, int, float] | None] = field(default_factory=list)
    event: list[str | None] = field(default_factory=list)  # event name of each op
    labels: list[str] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)  # left empty: see arrays["nbytes"]
    #: Some of the int columns above as arrays, for the Timeline (see plan._TIMELINE_DTYPES).
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class Shapes:
    """The op shapes of a program, by shape number: each of COLUMNS as an int64 array, and
    ``extras``, each shape's kernel shape (kernels) or staging ns (or None)."""

    columns: dict[str, np.ndarray]
    extras: list[tuple | int | None]

    @classmethod
    def from_rows(cls, shapes: list[tuple[tuple, tuple | int | None]]) -> Shapes:
        """From plan_shape.new_shape's ``(row, extra)`` per shape."""
        rows, extras = zip(*shapes, strict=True)
        values = zip(*rows, strict=True)
        columns = {
            name: np.array(v, dtype=np.int64) for name, v in zip(COLUMNS, values, strict=True)
        }
        return cls(columns, list(extras))

    def rows(self) -> list[tuple[tuple, tuple | int | None]]:
        """``(row, extra)`` per shape, as plan_shape.new_shape gives them."""
        values = [self.columns[name].tolist() for name in COLUMNS]
        return list(zip(zip(*values, strict=True), self.extras, strict=True))


def run_of(kind: int) -> int:
    """Where an enqueued op of this kind runs (-1: host-only op)."""
    if kind not in ENQUEUED:
        return -1
    if kind in (K["h2d"], K["d2h"]):
        return RUN_COPY
    if kind in (K["d2d"], K["memset"]):
        return RUN_SM
    if kind == K["kernel"]:
        return RUN_KERNEL
    if kind == K["host_func"]:
        return RUN_CALLBACK
    return RUN_INSTANT
