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
from typing import Generic, TypeVar

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


#: Per-op columns a Plan builds as Python lists only when they are read (the Python event loop,
#: ``adjust_plan``): the planner keeps them as arrays, which the compiled core takes directly.
LIST_COLUMNS = ("kind", "queue", "run", "stream", "copy_key", "host", "cost", "solo", "stage",
                "kernel")  # fmt: skip

_T = TypeVar("_T")


class _Column(Generic[_T]):
    """A per-op column of a Plan, read and written as a list; built from the planner's arrays
    on first read (see Plan.set_column). Once built, or assigned, the list is the column: a
    caller may change it in place."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, plan: Plan, owner: type | None = None) -> list[_T]:
        lists = plan._lists
        values = lists.get(self.name)
        if values is None:
            values = lists[self.name] = plan._build_list(self.name)
        return values

    def __set__(self, plan: Plan, values: list[_T]) -> None:
        plan._lists[self.name] = values
        plan._sources.pop(self.name, None)


@dataclass
class Plan:
    """Flat per-op columns; index == program index."""

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
    n_ops: int = 0
    event: list[str | None] = field(default_factory=list)  # event name of each op
    labels: list[str] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)  # left empty: see arrays["nbytes"]
    #: Some of the int columns above as arrays, for the Timeline (see plan._TIMELINE_DTYPES).
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    #: Each op's shape number (the planner's), by which per-shape sources are picked.
    shape_of_op: np.ndarray | None = field(default=None, repr=False)
    # The columns not built as lists yet: (values per shape, None) or (None, values per op).
    _sources: dict[str, tuple] = field(default_factory=dict, repr=False)
    _lists: dict[str, list] = field(default_factory=dict, repr=False)

    kind = _Column[int]()
    queue = _Column[int]()  # hardware queue of enqueued ops, else -1
    run = _Column[int]()  # RUN_* for enqueued ops, -1 for host-only
    stream = _Column[int]()
    #: What a copy engine's preference for more of the same follows, per op: the copy's
    #: channel (a number past the streams') when copy channels are modelled, else its stream.
    copy_key = _Column[int]()
    host = _Column[int]()
    cost = _Column[int]()
    solo = _Column[int]()
    stage = _Column["int | None"]()  # host staging ns of pageable H2D (empty: none stages)
    kernel = _Column["tuple[int, int, int, float] | None"]()

    def set_column(
        self, name: str, per_shape: np.ndarray | list | None, per_op: np.ndarray | None = None
    ) -> None:
        """Column ``name`` from its values per shape (picked by ``shape_of_op``) or per op,
        built as a list only when read."""
        self._lists.pop(name, None)
        self._sources[name] = (per_shape, per_op)

    def has_list(self, name: str) -> bool:
        """Whether column ``name`` is a list (read or assigned since planning)."""
        return name in self._lists

    def column(self, name: str) -> np.ndarray:
        """Int column ``name`` as int64 per op (OverflowError: a value past int64)."""
        if name in self._lists or name not in self._sources:
            values = getattr(self, name)
            return np.fromiter(values, dtype=np.int64, count=len(values))
        per_shape, per_op = self._sources[name]
        if per_op is not None:
            return np.asarray(per_op, dtype=np.int64)
        assert self.shape_of_op is not None  # (per-shape sources come with it)
        return np.asarray(per_shape, dtype=np.int64)[self.shape_of_op]

    def item(self, name: str, i: int) -> int:
        """Item ``i`` of int column ``name`` (its list left unbuilt)."""
        if name in self._lists or name not in self._sources:
            return getattr(self, name)[i]
        per_shape, per_op = self._sources[name]
        if per_op is not None:
            return int(per_op[i])
        assert self.shape_of_op is not None
        return int(per_shape[self.shape_of_op[i]])

    def source(self, name: str) -> tuple | None:
        """Column ``name``'s unbuilt source (see set_column); None once it is a list."""
        return None if name in self._lists else self._sources.get(name)

    def _build_list(self, name: str) -> list:
        source = self._sources.pop(name, None)
        if source is None:
            return []
        per_shape, per_op = source
        if per_op is not None:
            return shared_ints(per_op)
        if isinstance(per_shape, np.ndarray):
            per_shape = per_shape.tolist()
        assert self.shape_of_op is not None
        # One int object per shape's value, shared by the ops of that shape.
        return list(map(per_shape.__getitem__, self.shape_of_op.tolist()))


def shared_ints(values: np.ndarray) -> list[int]:
    """``values.tolist()`` for a column of few distinct values, with one int object per value
    (not one per item: 32 MB per million items)."""
    distinct, which = np.unique(values, return_inverse=True)
    return list(map(distinct.tolist().__getitem__, which.ravel().tolist()))


@dataclass
class Shapes:
    """The op shapes of a program, by shape number: each of COLUMNS as an int64 array, and
    ``extras``, each shape's kernel shape (kernels) or staging ns (or None). ``stage`` (the
    int extras, else 0) and ``block_waves`` (a kernel's waves of blocks alone, else 0) come
    with shapes worked out in bulk; None: read them from ``extras``."""

    columns: dict[str, np.ndarray]
    extras: list[tuple | int | None]
    stage: np.ndarray | None = None
    block_waves: np.ndarray | None = None

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
