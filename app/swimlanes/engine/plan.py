"""Per-op facts the simulator needs, computed once before the event loop.

``plan_ops`` turns the host program into flat per-op columns (kind code, stream, hardware queue,
host behaviour, alone-on-the-GPU time) so that the event loop touches no ``Op`` objects. They
stay numpy arrays (or per-shape values) until the Python loop reads them as lists: the compiled
core takes the arrays (``Plan.column``).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from swimlanes.engine.call_context import (
    ASYNC_CALLS,
    FIRST_CALLS,
    HOST_BLOCKING_CALLS,
)
from swimlanes.engine.plan_columns import shape_columns
from swimlanes.engine.plan_limits import check_work
from swimlanes.engine.plan_model import (
    BARRIER,
    BUSY,
    COLUMNS,
    ENQ,
    ENQ_BARRIER,
    ENQ_STAGE,
    ENQ_WAIT,
    ENQUEUED,
    MAX_OP_NS,
    RUN_CALLBACK,
    RUN_COPY,
    RUN_INSTANT,
    RUN_KERNEL,
    RUN_SM,
    STREAM_BLOCKING,
    STREAM_LEGACY,
    STREAM_NON_BLOCKING,
    WAIT_ALL,
    WAIT_EVENT,
    WAIT_STREAM,
    K,
    Plan,
    Shapes,
    run_of,
)
from swimlanes.engine.plan_shape import new_shape
from swimlanes.engine.presets import DevicePreset
from swimlanes.model.document import DEFAULT_STREAM, EVENT_OPS, Op, Pipeline

# The op codes, columns and Plan live in plan_model (plan_columns and plan_shape build on them
# too); the simulator and the run state import them from here. MAX_OP_NS is a copy for
# importers that read it once: the planner reads the limits from plan_model when used.
__all__ = [
    "BARRIER", "BUSY", "COLUMNS", "ENQ", "ENQ_BARRIER", "ENQ_STAGE", "ENQ_WAIT", "ENQUEUED",
    "MAX_OP_NS", "RUN_CALLBACK", "RUN_COPY", "RUN_INSTANT", "RUN_KERNEL", "RUN_SM",
    "STREAM_BLOCKING", "STREAM_LEGACY", "STREAM_NON_BLOCKING", "WAIT_ALL", "WAIT_EVENT",
    "WAIT_STREAM", "K", "Plan", "Shapes", "chain_links", "plan_ops", "run_of",
]  # fmt: skip

_CALL_US = operator.attrgetter("call_us")
_COPY_OUT_US = operator.attrgetter("copy_out_us")
#: The per-op int columns of a Plan that the Timeline (and the simulator's queue set-up) need,
#: in these dtypes.
_TIMELINE_DTYPES = {
    "kind": np.int8, "stream": np.int16, "run": np.int8, "solo": np.int64, "nbytes": np.int64,
    "queue": np.int32,
}  # fmt: skip
_KERNEL = K["kernel"]
_NAMES = list(K)
_REST = operator.itemgetter(slice(2, None))  # a shape's key past its op and stream
_EVENT_KINDS = np.array([name in EVENT_OPS for name in K], dtype=bool)
_NONE = np.array(None, dtype=object)
#: Kinds of call that hold the host (copies: when synchronous or pageable) and kinds that
#: enqueue work: engine.call_context's sets, as codes.
_HOST_BLOCKING_KINDS = [K[name] for name in HOST_BLOCKING_CALLS]
_HOST_COPY_KINDS = [K["h2d"], K["d2h"]]
_ASYNC_KINDS = [K[name] for name in ASYNC_CALLS]


def _stream_tables(pipeline: Pipeline, preset: DevicePreset) -> Plan:
    streams = pipeline.all_streams
    names = [s.name for s in streams]
    klass, prio = [], []
    for s in streams:
        if s.name == DEFAULT_STREAM or s.kind == "legacy_default":
            klass.append(STREAM_LEGACY)
        elif s.kind == "non_blocking":
            klass.append(STREAM_NON_BLOCKING)
        else:
            klass.append(STREAM_BLOCKING)
        default = klass[-1] == STREAM_LEGACY or s.kind == "per_thread_default"
        prio.append(preset.stream_priority(s.priority, default))
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
        channels = 2 * preset.copy_channels  # then the copy channels (see _copy_channels)
        count += channels
        if preset.copy_queue_per_stream:  # each stream's copies: queue count + stream index
            count += len(streams)
    plan = Plan(names, klass, prio, qos, count)
    plan.shared_queues = preset.hardware_queues == "fermi" or len(set(qos)) < len(qos)
    # A stream whose copies and other work go through two queues needs per-queue chains.
    hyperq = preset.hardware_queues == "hyperq"
    plan.shared_queues |= hyperq and (preset.copy_queue_per_stream or preset.copy_channels > 0)
    if hyperq and preset.copy_channels:
        plan.copy_channel_base = 1 + conns
    if hyperq and preset.connections and preset.queue_choice == "free":
        plan.free_queues = conns
    return plan


def _copy_channels(plan: Plan, preset: DevicePreset) -> None:
    """Each H2D and D2H copy's queue: one of its direction's copy channels (the preset's
    ``copy_channels``). When a direction's copies come from no more streams than it has
    channels, each stream keeps a channel of its own (in the order of their first copies);
    otherwise the copies take the channels round-robin, in issue order. The reference
    simulator's program._CopyChannels does the same.

    Also sets ``plan.copy_key``: what a copy engine's preference for more of the same follows
    (engine.copies.choose_copy): the copy's channel, else its stream."""
    base, n = plan.copy_channel_base, preset.copy_channels
    if base < 0:
        plan.set_column("copy_key", *plan.source("stream"))  # type: ignore[misc]
        return
    queue, kind, stream = plan.arrays["queue"], plan.arrays["kind"], plan.arrays["stream"]
    key = np.array(stream, dtype=np.int64)
    for direction, code in enumerate((K["h2d"], K["d2h"])):
        rows = np.flatnonzero((kind == code) & (queue >= 0))
        queue[rows] = base + direction * n + channel_of_copies(stream[rows].tolist(), n)
        # Channel keys follow the stream numbers (-1 is the legacy default stream's).
        key[rows] = len(plan.stream_names) + queue[rows]
    plan.set_column("queue", None, queue)
    plan.set_column("copy_key", None, key)


def channel_of_copies(streams: list[int], channels: int) -> np.ndarray:
    """The channel (0 .. channels - 1) of each of one direction's copies, given each copy's
    stream in issue order: the stream's own channel when there are at most ``channels``
    streams, else round-robin in issue order. Measured (random pipelines, training halves of
    nine H100 / H200 sets): copies of two to four streams ran each stream's in issue order
    while another stream's overtook them, which round-robin channels would not allow."""
    # The streams in order of their first copies (dict.fromkeys keeps the first of each).
    rank = {s: n for n, s in enumerate(dict.fromkeys(streams))}
    if len(rank) <= channels:
        return np.fromiter(map(rank.__getitem__, streams), dtype=np.int64, count=len(streams))
    return np.arange(len(streams), dtype=np.int64) % channels


def plan_ops(pipeline: Pipeline, preset: DevicePreset) -> Plan:
    """Flatten the program; ValueError naming the op on anything the model cannot run.

    Each op shape is worked out once and its row tuple is shared by all ops of that shape:
    all shapes at once by engine.plan_columns (captured programs give almost every op a shape
    of its own), or, when that refuses a value, one by one in program order by
    engine.plan_shape, so that the first bad op is the one named. The per-op passes are
    comprehensions and C-level maps, much faster than one loop with appends.
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
    # The ops' own labels (the defaults are picked by kind afterwards: see _labels).
    given: list[str | None] = []
    add_id, add_given, add_event = ids.append, given.append, plan.event.append
    for op in program:
        add_id(number((op.op, op.stream, op.bytes, op.host_memory, op.is_async,
                       op.duration_us, op.blocks, op.threads, op.block_us, op.flops,
                       _blocks_per_sm_key(op.extra) if op.extra else None), len(shape_ids)))  # fmt: skip
        add_event(op.event)
        add_given(op.label)
    shape_of_op = np.fromiter(ids, dtype=np.intp, count=len(ids))
    # Each shape's first op: shapes are numbered 0, 1, ... in program order of their first
    # op, so an op is its shape's first when its number is past all before it.
    new = np.ones(len(ids), dtype=bool)
    new[1:] = shape_of_op[1:] > np.maximum.accumulate(shape_of_op)[:-1]
    first = np.flatnonzero(new).tolist()
    # All shapes at once, column by column; one by one (naming the first bad op) if refused.
    # The keys alone from here (their table is the biggest transient of planning; the keys,
    # one tuple per shape, go once the repeat costs are known).
    keys = list(shape_ids)
    plan.shape_count = len(keys)
    del shape_ids, number
    shapes = shape_columns(keys, first, program, preset, plan, stream_index, costs)
    if shapes is None:
        shapes = Shapes.from_rows(
            [new_shape(i, program[i], preset, plan, stream_index, costs) for i in first]
        )
    check_work(shapes, shape_of_op, first, plan, preset)
    repeat_costs = _repeat_costs(keys, shape_of_op, shapes, preset, gap)
    scale = _kind_scales(keys, shapes, preset) if preset.call_cost_factors else None
    del keys
    # Each column: the shapes' values picked by shape number, as Python lists only when read
    # (the Python loop; the compiled core takes arrays); the Timeline takes numpy gathers of
    # its columns, in its dtypes.
    plan.n_ops, plan.shape_of_op = len(ids), shape_of_op
    del ids
    for name in COLUMNS:
        values = shapes.columns[name]
        if name in _TIMELINE_DTYPES:
            plan.arrays[name] = values.astype(_TIMELINE_DTYPES[name])[shape_of_op]
        if name == "cost":
            plan.set_column(name, None, values[shape_of_op])
        elif name != "nbytes":  # (the loop reads an op's bytes rarely: from plan.arrays)
            plan.set_column(name, values)
    if repeat_costs is not None:
        plan.set_column("cost", None, repeat_costs)
    _extra_columns(plan, shapes)
    plan.labels = _labels(given, plan.event, plan.arrays["kind"])
    _copy_channels(plan, preset)
    if scale is not None:
        _context_costs(plan, scale[shape_of_op], preset, gap)
    _measured_calls(plan, program, gap)
    _measured_copy_outs(plan, program, preset)
    return plan


def _extra_columns(plan: Plan, shapes: Shapes) -> None:
    """Per op: the kernel shape of kernels, the staging time of pageable async H2D copies
    (numpy's object arrays pick them in C: a comprehension per column cost 3 ms at 1e5)."""
    extras = np.fromiter(shapes.extras, dtype=object, count=len(shapes.extras))
    is_kernel = shapes.columns["kind"] == _KERNEL
    plan.set_column("kernel", np.where(is_kernel, extras, _NONE).tolist())
    stage = np.where(is_kernel, _NONE, extras).tolist()
    if stage.count(None) != len(stage):
        plan.set_column("stage", stage)


def _kind_scales(keys: list[tuple], shapes: Shapes, preset: DevicePreset) -> np.ndarray:
    """Each shape's call-cost factor for its kind (``call_cost_factors``; a kernel timed by
    FLOPs and bytes alone has the roofline kernels' factor: engine.call_context)."""
    factors = preset.call_cost_factors
    kind = shapes.columns["kind"]
    scale = np.array([factors.get(name, 1.0) for name in K], dtype=np.float64)[kind]
    roofline = factors.get("roofline_kernel", 1.0)
    if roofline != 1.0:
        kernels = np.flatnonzero(kind == _KERNEL).tolist()
        # key: (op, stream, bytes, memory, async, duration_us, blocks, threads, block_us, flops ...)
        # call_context._kind_key's roofline test, inline (a call per kernel shape cost 6 ms at 1e5
        # ops): no duration, no block time, FLOPs and bytes.
        rows = [
            i
            for i, key in zip(kernels, map(keys.__getitem__, kernels), strict=True)
            if key[5] is None and key[8] is None and key[9] and key[2]
        ]
        scale[rows] = roofline
    return scale


def _context_costs(plan: Plan, scale: np.ndarray, preset: DevicePreset, gap: int) -> None:
    """Each call's cost by its place in the program (``call_cost_factors``: see
    engine.call_context, whose ``context_cost_ns`` states the rule op by op; this is the same
    rule over the program's columns, with the same floating-point steps). ``scale`` is each
    op's factor for its kind. The planned program is one host thread's, in order."""
    factors = preset.call_cost_factors
    kind = plan.arrays["kind"].astype(np.int64)
    host = plan.column("host")
    blocking = np.isin(kind, _HOST_BLOCKING_KINDS) | (
        np.isin(kind, _HOST_COPY_KINDS) & np.isin(host, (ENQ_WAIT, ENQ_STAGE))
    )
    applies = np.isin(kind, _ASYNC_KINDS) & ~blocking
    calls = applies & (kind != _KERNEL)
    first = calls & (np.arange(len(kind)) < FIRST_CALLS)
    after = np.zeros(len(kind), dtype=bool)
    after[1:] = blocking[:-1]
    after &= calls & ~first
    scale = np.where(after, scale * factors.get("after_blocking", 1.0), scale)
    cost = plan.column("cost") - gap
    issue = np.array([preset.issue_cost_ns(name) for name in K], dtype=np.int64)[kind]
    cold = np.rint(issue * scale * factors.get("first_calls", 1.0)).astype(np.int64)
    scaled = np.where(applies & (scale != 1.0), np.rint(cost * scale).astype(np.int64), cost)
    plan.set_column("cost", None, np.where(first, cold, scaled) + gap)


def _measured_calls(plan: Plan, program: list[Op], gap: int) -> None:
    """A call with its own measured host time (a captured program's) costs that instead of
    the preset's cost. An async pageable H2D's measured call is the whole call, staging
    included: it costs the preset's cost and stages for the rest (none if that is longer)."""
    measured = _measured(program, _CALL_US)
    if not measured:
        return
    plan.cost = list(plan.cost)
    for i, call_us in measured:
        call = round(call_us * 1000.0)
        if plan.host[i] == ENQ_STAGE:  # (plan.stage is set for every such op)
            plan.stage[i] = max(0, call - (plan.cost[i] - gap))
        else:
            plan.cost[i] = gap + call


def _measured_copy_outs(plan: Plan, program: list[Op], preset: DevicePreset) -> None:
    """A pageable D2H with its measured ``copy_out_us`` returns that long after its DMA ended
    (at least the preset's return of a copy call), instead of after the modelled copy-out."""
    measured = _measured(program, _COPY_OUT_US)
    if not measured:
        return
    if not plan.stage:  # (no op stages or copies out by the model: a list to hold these)
        plan.stage = [None] * plan.n_ops
    back = preset.sync_return_ns("sync_copy")
    for i, copy_out_us in measured:
        if plan.host[i] == ENQ_WAIT and program[i].effective_host_memory == "pageable":
            plan.stage[i] = max(0, round(copy_out_us * 1000.0) - back)


def _measured(program: list[Op], field: operator.attrgetter) -> list[tuple[int, float]]:
    """``(op index, value)`` of the ops whose ``field`` is set (a C-level pass to find none)."""
    values = list(map(field, program))
    if values.count(None) == len(values):
        return []
    return [(i, v) for i, v in enumerate(values) if v is not None]


def _repeat_costs(
    keys: list[tuple],
    shape_of_op: np.ndarray,
    shapes: Shapes,
    preset: DevicePreset,
    gap: int,
) -> np.ndarray | None:
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
    kind_of_op = shapes.columns["kind"][shape_of_op]
    both = np.flatnonzero(~repeat[1:] & (kind_of_op[1:] == kind_of_op[:-1])) + 1
    if len(both):
        # keys[a][2:] == keys[b][2:] for each pair, by C-level maps
        before = map(_REST, map(keys.__getitem__, shape_of_op[both - 1].tolist()))
        after = map(_REST, map(keys.__getitem__, shape_of_op[both].tolist()))
        repeat[both] = list(map(operator.eq, before, after))
    if not repeat.any():
        return None  # no call repeats the one before it: every call costs issue_cost_us
    # Each kind's warm cost, by kind code (K numbers the kinds 0, 1, ...).
    warm = np.array([gap + preset.repeat_issue_cost_ns(name) for name in K], dtype=np.int64)
    cold = shapes.columns["cost"]
    return np.where(repeat, warm[kind_of_op], cold[shape_of_op])


def _blocks_per_sm_key(extra: dict) -> object:
    """An op's ``blocks_per_sm`` as part of its shape's key (hashable even when it is not an
    integer: new_shape then refuses it, naming the op)."""
    value = extra.get("blocks_per_sm")
    return value if value is None or type(value) is int else repr(value)


def _labels(given: list[str | None], events: list[str | None], kind: np.ndarray) -> list[str]:
    """Each op's Op.display_label: its own label, else one made from its kind (and, for
    event ops, its event), one str object per distinct default (picked by kind in C)."""
    display: Callable[[Any], str] = Op.__dict__["display_label"].fget  # (the property's rule)
    defaults = np.array([display(_Unlabelled(name, None)) for name in K], dtype=object)
    labels = defaults[kind].tolist()
    # Event ops' by their event (an op without one keeps its kind's).
    for code in np.flatnonzero(_EVENT_KINDS).tolist():
        rows = np.flatnonzero(kind == code).tolist()
        named = list(map(events.__getitem__, rows))
        label = {e: display(_Unlabelled(_NAMES[code], e)) for e in set(named)}
        for _ in map(labels.__setitem__, rows, map(label.__getitem__, named)):
            pass
    if any(given):
        labels = [g or d for g, d in zip(given, labels, strict=True)]
    return labels


class _Unlabelled(NamedTuple):
    """An op without a label of its own, as Op.display_label reads it."""

    op: str
    event: str | None
    label: None = None


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
