"""Per-op facts the simulator needs, computed once before the event loop.

``plan_ops`` turns the host program into flat lists (kind code, stream, hardware queue, host
behaviour, alone-on-the-GPU time) so that the event loop touches no ``Op`` objects.
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from swimlanes.engine.blocks import residency, waves
from swimlanes.engine.presets import DevicePreset
from swimlanes.model.document import (
    DEFAULT_STREAM,
    MAX_BLOCKS_PER_SM,
    MAX_DURATION_US,
    OP_KINDS,
    Op,
    Pipeline,
)

K = {name: code for code, name in enumerate(OP_KINDS)}
_CALL_US = operator.attrgetter("call_us")
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

#: The per-op int columns of a Plan, in the order of a shape's row tuple.
COLUMNS = ("kind", "stream", "run", "queue", "cost", "host", "solo", "nbytes")
#: Those the Timeline (and the simulator's queue set-up) need, in these dtypes.
_TIMELINE_DTYPES = {
    "kind": np.int8, "stream": np.int16, "run": np.int8, "solo": np.int64, "nbytes": np.int64,
    "queue": np.int32,
}  # fmt: skip

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
#: Ops on the legacy default stream, device-wide synchronisations (device_sync, free) and
#: implicit ones (malloc, synchronous memset) each look at every stream: at most this many
#: such looks (about 0.15 us each; 16,384 such ops with 1,024 streams, any number with 8).
MAX_STREAM_CHECKS = 1 << 24


class _TooLong(Exception):
    """An op whose time on the device is past MAX_OP_NS (or not a number at all)."""


@dataclass
class Plan:
    """Flat per-op lists; index == program index."""

    stream_names: list[str]
    stream_class: list[int]
    priority: list[int]
    queue_of_stream: list[int]
    queue_count: int
    shared_queues: bool = False  # some hardware queue carries more than one stream
    kind: list[int] = field(default_factory=list)
    queue: list[int] = field(default_factory=list)  # hardware queue of enqueued ops, else -1
    run: list[int] = field(default_factory=list)  # RUN_* for enqueued ops, -1 for host-only
    stream: list[int] = field(default_factory=list)
    host: list[int] = field(default_factory=list)
    cost: list[int] = field(default_factory=list)
    solo: list[int] = field(default_factory=list)
    stage: list[int | None] = field(default_factory=list)  # host staging ns of pageable H2D
    kernel: list[tuple[int, int, int, float] | None] = field(default_factory=list)
    event: list[str | None] = field(default_factory=list)  # event name of each op
    labels: list[str] = field(default_factory=list)
    nbytes: list[int] = field(default_factory=list)  # left empty: see arrays["nbytes"]
    #: Some of the int columns above as arrays, for the Timeline (see _TIMELINE_DTYPES).
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


@dataclass
class Shapes:
    """The op shapes of a program, by shape number: each of COLUMNS as an int64 array, and
    ``extras``, each shape's kernel shape (kernels) or staging ns (or None)."""

    columns: dict[str, np.ndarray]
    extras: list[tuple | int | None]

    @classmethod
    def from_rows(cls, shapes: list[tuple[tuple, tuple | int | None]]) -> Shapes:
        """From _new_shape's ``(row, extra)`` per shape."""
        rows, extras = zip(*shapes, strict=True)
        values = zip(*rows, strict=True)
        columns = {
            name: np.array(v, dtype=np.int64) for name, v in zip(COLUMNS, values, strict=True)
        }
        return cls(columns, list(extras))

    def rows(self) -> list[tuple[tuple, tuple | int | None]]:
        """``(row, extra)`` per shape, as _new_shape gives them."""
        values = [self.columns[name].tolist() for name in COLUMNS]
        return list(zip(zip(*values, strict=True), self.extras, strict=True))


def _stream_tables(pipeline: Pipeline, preset: DevicePreset) -> Plan:
    streams = pipeline.all_streams
    names = [s.name for s in streams]
    klass = []
    for s in streams:
        if s.name == DEFAULT_STREAM or s.kind == "legacy_default":
            klass.append(STREAM_LEGACY)
        elif s.kind == "non_blocking":
            klass.append(STREAM_NON_BLOCKING)
        else:
            klass.append(STREAM_BLOCKING)
    prio = [preset.clamp_priority(s.priority) for s in streams]
    if preset.hardware_queues == "fermi":
        # Queues by engine, not by stream: 0 compute, then one per copy pool.
        qos = [0] * len(streams)
        count = 2 if preset.shared_copy_engine else 3
    else:
        conns = preset.connections or max(1, len(streams) - 1)
        qos, k = [], 0
        for c in klass:
            if c == STREAM_LEGACY:
                qos.append(0)
            else:
                qos.append(1 + k % conns)
                k += 1
        count = 1 + conns
        if preset.copy_queue_per_stream:  # each stream's copies: queue count + stream index
            count += len(streams)
    plan = Plan(names, klass, prio, qos, count)
    plan.shared_queues = preset.hardware_queues == "fermi" or len(set(qos)) < len(qos)
    # A stream whose copies and other work go through two queues needs per-queue chains.
    plan.shared_queues |= preset.hardware_queues == "hyperq" and preset.copy_queue_per_stream
    return plan


def plan_ops(pipeline: Pipeline, preset: DevicePreset) -> Plan:
    """Flatten the program; ValueError naming the op on anything the model cannot run.

    Each op shape is worked out once and its row tuple is shared by all ops of that shape:
    all shapes at once by engine.plan_columns (captured programs give almost every op a shape
    of its own), or, when that refuses a value, one by one in program order by _new_shape, so
    that the first bad op is the one named. The per-op passes are comprehensions and C-level
    maps, much faster than one loop with appends.
    """
    plan = _stream_tables(pipeline, preset)
    program = pipeline.program
    if not program:
        return plan
    stream_index: dict[str | None, int] = {n: k for k, n in enumerate(plan.stream_names)}
    stream_index[None] = -1
    # A call's cost here includes the host's gap before it (RunState takes it off the first).
    gap = round(preset.host_call_gap_us * 1000.0)
    costs = {name: gap + preset.issue_cost_ns(name) for name in K}
    # One pass over the Op objects (scattered in memory: each pass over them costs cache
    # misses); everything after it works on compact lists and arrays.
    ids: list[int] = []
    # Shape -> its number, in order of first use (setdefault is given the next number, kept
    # only for a new shape: no Python-level call per op).
    shape_ids: dict[tuple, int] = {}
    number = shape_ids.setdefault
    add_id, add_label, add_event = ids.append, plan.labels.append, plan.event.append
    # Default labels by kind, then event (two lookups cost less than hashing a pair per op).
    defaults: defaultdict[str, dict[str | None, str]] = defaultdict(dict)
    for op in program:
        add_id(number((op.op, op.stream, op.bytes, op.host_memory, op.is_async,
                       op.duration_us, op.blocks, op.threads, op.block_us, op.flops,
                       _blocks_per_sm_key(op.extra) if op.extra else None), len(shape_ids)))  # fmt: skip
        event = op.event
        add_event(event)
        add_label(op.label or defaults[op.op].get(event) or _default_label(op, defaults))
    shape_of_op = np.fromiter(ids, dtype=np.intp, count=len(ids))
    # Each shape's first op (shapes are numbered in program order of their first op).
    first = np.unique(shape_of_op, return_index=True)[1].tolist()
    # All shapes at once, column by column; one by one (naming the first bad op) if refused.
    from swimlanes.engine.plan_columns import shape_columns  # (it builds on this module)

    # The keys alone from here (their table is the biggest transient of planning; the keys,
    # one tuple per shape, go once the repeat costs are known).
    keys = list(shape_ids)
    del shape_ids, number
    shapes = shape_columns(keys, first, program, preset, plan, stream_index, costs)
    if shapes is None:
        shapes = Shapes.from_rows(
            [_new_shape(i, program[i], preset, plan, stream_index, costs) for i in first]
        )
    _check_work(shapes, shape_of_op, first, plan, preset)
    repeat_costs = _repeat_costs(keys, shape_of_op, shapes, preset, gap)
    del keys
    # Each column: the shapes' values picked by shape number. The event loop reads Python lists
    # (mapped from the shapes' values, so ops share their int objects); the Timeline takes
    # numpy gathers of its columns, in its dtypes.
    for name in COLUMNS:
        values = shapes.columns[name]
        if name in _TIMELINE_DTYPES:
            plan.arrays[name] = values.astype(_TIMELINE_DTYPES[name])[shape_of_op]
        if name == "nbytes":
            continue  # the loop reads an op's bytes rarely: from plan.arrays
        shared = _shared_ints(values) if name == "cost" else values.tolist()
        setattr(plan, name, list(map(shared.__getitem__, ids)))
    if repeat_costs is not None:
        plan.cost = repeat_costs
    # A call with its own measured host time (a captured program's) costs that instead.
    measured = [(i, c) for i, c in enumerate(map(_CALL_US, program)) if c is not None]
    if measured:
        plan.cost = list(plan.cost)
        for i, call_us in measured:
            plan.cost[i] = gap + round(call_us * 1000.0)
    # Per op: the kernel shape of kernels, the staging time of pageable async H2D copies.
    extras, is_kernel = shapes.extras, (shapes.columns["kind"] == _KERNEL).tolist()
    kernel = [x if y else None for x, y in zip(extras, is_kernel, strict=True)]
    stage = [None if y else x for x, y in zip(extras, is_kernel, strict=True)]
    # (Typed as any op's extra: kernels' are their shapes, the others' their staging ns.)
    plan.kernel = list(map(kernel.__getitem__, ids))  # type: ignore[arg-type]
    if any(x is not None for x in stage):
        plan.stage = list(map(stage.__getitem__, ids))  # type: ignore[arg-type]
    return plan


def _repeat_costs(
    keys: list[tuple],
    shape_of_op: np.ndarray,
    shapes: Shapes,
    preset: DevicePreset,
    gap: int,
) -> list[int] | None:
    """Per op, its call's host cost where a call that repeats the one before it (the same
    call on any stream) costs ``repeat_issue_cost_us``; None when the preset has no such
    figures. Worked out per shape, then compared op to op by numpy."""
    if not preset.repeat_issue_cost_us or not len(shape_of_op):
        return None
    # Ops of one shape make the same call. Ops of two shapes do when their keys, (op,
    # stream, ...), differ in the stream alone: compared only where two calls in a row are
    # of one kind of op.
    repeat = np.zeros(len(shape_of_op), dtype=bool)
    repeat[1:] = shape_of_op[1:] == shape_of_op[:-1]
    names, kind_of_op = [key[0] for key in keys], shapes.columns["kind"][shape_of_op]
    both = np.flatnonzero(~repeat[1:] & (kind_of_op[1:] == kind_of_op[:-1])) + 1
    if len(both):
        repeat[both] = [
            keys[a][2:] == keys[b][2:]
            for a, b in zip(shape_of_op[both - 1].tolist(), shape_of_op[both].tolist(), strict=True)
        ]
    if not repeat.any():
        return None  # no call repeats the one before it: every call costs issue_cost_us
    warm_of_kind = {name: gap + preset.repeat_issue_cost_ns(name) for name in K}
    warm = np.array([warm_of_kind[name] for name in names], dtype=np.int64)
    cold = shapes.columns["cost"]
    per_op = np.where(repeat, warm[shape_of_op], cold[shape_of_op])
    return _shared_ints(per_op)


def _shared_ints(values: np.ndarray) -> list[int]:
    """``values.tolist()`` for a column of few distinct values, with one int object per value
    (not one per item: 32 MB per million items)."""
    distinct, which = np.unique(values, return_inverse=True)
    return list(map(distinct.tolist().__getitem__, which.ravel().tolist()))


def _blocks_per_sm_key(extra: dict) -> object:
    """An op's ``blocks_per_sm`` as part of its shape's key (hashable even when it is not an
    integer: _new_shape then refuses it, naming the op)."""
    value = extra.get("blocks_per_sm")
    return value if value is None or type(value) is int else repr(value)


def _check_work(
    shapes: Shapes,
    shape_of_op: np.ndarray,
    first: list[int],
    plan: Plan,
    preset: DevicePreset,
) -> None:
    """Refuse (ValueError naming the op and the limit) a program that would take the
    simulator too long (MAX_BLOCK_WAVES, MAX_STREAM_CHECKS) or whose times would not fit its
    clock (MAX_TOTAL_NS); worked out per shape, times how often each shape occurs (first
    in bulk, and shape by shape only when that comes near a limit, to name it exactly)."""
    from swimlanes.engine.plan_columns import within_limits  # (it builds on this module)

    count_array = np.bincount(shape_of_op, minlength=len(shapes.extras))
    count = count_array.tolist()
    # A bound on the slack one op may add beyond its host call and its time alone: launch
    # and dependency latencies, a blocking call's return, a copy engine's rests, the fixed cost
    # of a copy against the other direction.
    p = preset
    slack_us = (
        max(p.kernel_launch_latency_us, p.copy_launch_latency_us)
        + max(p.dependency_latency_us, p.kernel_dependency_latency_us)
        + max(p.sync_return_us.values(), default=0.0)
        + p.copy_engine_gap_us
        + max(p.bidirectional_rest_us, p.bidirectional_rest_d2h_us or 0.0)
        + max(p.bidirectional_overhead_us, p.bidirectional_overhead_d2h_us or 0.0)
    )
    slack = round(slack_us * 1000.0)
    slowest_copy = 1.0 + max(p.bidirectional_slowdown, p.bidirectional_slowdown_d2h or 0.0)
    if within_limits(shapes, count_array, plan, slack, slowest_copy):
        return
    total_ns = total_waves = checks = 0
    most = (0, 0)  # (waves of a kernel shape times its count, shape)
    n_streams = len(plan.stream_names)
    for n, ((_k, s, run, _q, cost, host, solo, _b), extra) in enumerate(shapes.rows()):
        c = count[n]
        device = max(solo, 0) * (slowest_copy if run == RUN_COPY else 1.0)
        stage = extra if isinstance(extra, int) else 0
        total_ns += c * (cost + device + stage + slack)
        if run == RUN_KERNEL:
            assert isinstance(extra, tuple)  # a kernel's extra is its shape
            blocks, _cost, max_resident, _block_ns = extra
            w = -(-blocks // max_resident)
            most = max(most, (c * w, n))
        else:
            w = 1 if run == RUN_SM else 0  # d2d copies and memsets: one wave
        total_waves += c * w
        legacy = run >= 0 and s >= 0 and plan.stream_class[s] == STREAM_LEGACY
        if legacy or host in (BARRIER, ENQ_BARRIER, WAIT_ALL):
            checks += c * n_streams
    if total_waves > MAX_BLOCK_WAVES:
        n = most[1]
        i = first[n]
        these = "this kernel" if count[n] == 1 else f"the {count[n]} kernels like this one"
        raise ValueError(
            f"program[{i}].blocks: the kernels need {total_waves} waves of thread blocks on "
            f"{preset.name} ({most[0]} of them for {these}): the simulator takes at most "
            f"{MAX_BLOCK_WAVES} in one pipeline (fewer blocks, or smaller blocks, so that more "
            "run at once)"
        )
    if checks > MAX_STREAM_CHECKS:
        raise ValueError(
            f"program: {checks // max(1, n_streams)} ops on the legacy default stream or "
            f"synchronising the whole device, each checking all {n_streams} streams: the "
            f"simulator takes at most {MAX_STREAM_CHECKS} such checks in one pipeline (fewer "
            "streams, or fewer such ops)"
        )
    if total_ns > MAX_TOTAL_NS:
        raise ValueError(
            f"program: its ops one after another take {total_ns / 1000.0:.4g} us on "
            f"{preset.name}, past the simulator's clock of {MAX_TOTAL_NS / 1000.0:.4g} us "
            f"({MAX_TOTAL_NS / 3.15576e16:.3g} years)"
        )


def _default_label(op: Op, defaults: defaultdict[str, dict[str | None, str]]) -> str:
    label = defaults[op.op][op.event] = op.display_label
    return label


def _new_shape(
    i: int, op: Op, preset: DevicePreset, plan: Plan, stream_index: dict, costs: dict
) -> tuple[tuple, tuple | int | None]:
    """The row of op ``i``, the first of its shape, and its kernel shape or staging ns."""
    name = op.op
    k = K.get(name)
    if k is None:
        raise ValueError(f"program[{i}].op: unknown op {name!r}")
    s = stream_index.get(op.stream_name, -2)
    if s == -2:
        raise ValueError(f"program[{i}].stream: names no declared stream ({op.stream!r})")
    run = _RUN[k]
    if run < 0:
        q = -1
    elif preset.hardware_queues == "fermi":
        # Queue 0 is the compute queue, then the copy queues (one if the engine is shared).
        q = {_H2D: 1, _D2H: 1 if preset.shared_copy_engine else 2}.get(k, 0)
    elif preset.copy_queue_per_stream and k in (_H2D, _D2H):
        q = plan.queue_count - len(plan.stream_names) + s
    else:
        q = plan.queue_of_stream[s]
    override = op.extra.get("blocks_per_sm") if op.extra else None
    if override is not None and (
        isinstance(override, bool)
        or not isinstance(override, int)
        or not 1 <= override <= MAX_BLOCKS_PER_SM
    ):
        raise ValueError(
            f"program[{i}].blocks_per_sm: must be an integer from 1 to {MAX_BLOCKS_PER_SM}"
        )
    try:
        host, solo, extra = _shape(op, preset)
    except _TooLong as err:
        raise ValueError(
            f"program[{i}]: this {name} takes {err} on {preset.name}: the simulator takes at "
            f"most {MAX_DURATION_US:g} us per op"
        ) from None
    return (k, s, run, q, costs[name], host, solo, op.bytes or 0), extra


def _ns(value: float) -> int:
    """A time in ns rounded, or _TooLong if it is past MAX_OP_NS (or infinite, or NaN)."""
    if not value <= MAX_OP_NS:  # (NaN compares false)
        raise _TooLong(f"{value / 1000.0:.4g} us" if math.isfinite(value) else "forever")
    return round(value)


def _preset_ns(compute: Callable[..., float], *args: object) -> int:
    """``compute(*args)`` (a preset's time of a copy, memset or roofline kernel), checked."""
    try:
        return _ns(compute(*args))
    except OverflowError:  # the preset's own rounding of an infinite time
        raise _TooLong("forever") from None


def _shape(op: Op, preset: DevicePreset) -> tuple[int, int, tuple | int | None]:
    """(how the host behaves on this op, its time alone on the device or -1, and its kernel
    shape or staging ns: see plan_ops)."""
    name = op.op
    dur = None if op.duration_us is None else _ns(op.duration_us * 1000.0)
    if name in ("h2d", "d2h", "d2d"):
        memory = (op.host_memory or "pinned") if name != "d2d" else "pinned"
        solo = dur if dur is not None else _preset_ns(preset.copy_ns, name, op.bytes or 0, memory)
        if name == "d2d":
            return ENQ, solo, None
        sync = not (op.is_async is None or op.is_async)  # effective_async, inlined
        if name == "h2d" and memory == "pageable" and not sync:
            stage = _ns((op.bytes or 0) / preset.pageable_host_gbps("h2d", op.bytes or 0))
            return ENQ_STAGE, solo, dur if dur is not None else stage
        chunk = preset.pageable_d2h_chunk_bytes
        copy_out = None
        if name == "d2h" and memory == "pageable" and chunk:
            # The call returns once the host has copied the last chunk out.
            nbytes = op.bytes or 0
            copy_out = _ns(min(nbytes, chunk) / preset.pageable_host_gbps("d2h", nbytes))
        return (ENQ_WAIT if sync or memory == "pageable" else ENQ), solo, copy_out
    if name == "memset":
        solo = dur if dur is not None else _preset_ns(preset.memset_ns, op.bytes or 0)
        return (ENQ if op.is_async is None or op.is_async else ENQ_BARRIER), solo, None
    if name == "kernel":
        threads = op.threads or 256
        blocks = op.blocks or 1
        per_sm = residency(preset, threads, op.extra.get("blocks_per_sm") if op.extra else None)
        n_waves = waves(preset, blocks, per_sm)
        if op.block_us is not None:
            total = _ns(max(1, _ns(op.block_us * 1000.0)) * n_waves)
        elif dur is not None:
            total = max(1, dur)
        else:
            total = _preset_ns(preset.roofline_ns, op.flops, op.bytes, blocks, threads, per_sm)
        cost = preset.max_threads_per_sm // per_sm
        kernel = (blocks, cost, preset.sm_count * per_sm, total / n_waves)
        return ENQ, total + round(preset.kernel_overhead_us * 1000.0), kernel
    if name in ("event_record", "event_wait"):
        return ENQ, 0, None
    if name == "host_func":
        return ENQ, dur or 0, None
    return _HOST_ONLY[name], (dur or 0) if name == "host" else -1, None


#: How the host behaves on the ops that are not enqueued on a stream.
_HOST_ONLY = {
    "stream_sync": WAIT_STREAM,
    "event_sync": WAIT_EVENT,
    "device_sync": WAIT_ALL,
    "free": WAIT_ALL,
    "malloc": BARRIER,
    "host": BUSY,
}


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


_RUN = {k: run_of(k) for k in K.values()}
_KERNEL, _H2D, _D2H = K["kernel"], K["h2d"], K["d2h"]


def chain_links(group: np.ndarray, member: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ops where ``member`` holds, chained by ``group`` (a stream, a hardware queue) in
    program order: per op, the previous and the next op of its chain (-1: none, or not a
    member)."""
    rows = np.flatnonzero(member)
    rows = rows[np.argsort(group[rows], kind="stable")]
    same = group[rows[1:]] == group[rows[:-1]]
    before, after = rows[:-1][same], rows[1:][same]
    prev = np.full(len(group), -1, dtype=np.int64)
    nxt = np.full(len(group), -1, dtype=np.int64)
    prev[after] = before
    nxt[before] = after
    return prev, nxt
