"""What the reference simulator knows about each op before it runs: its stream, hardware queue,
what the host does on its call, what the call costs and how long the op takes alone.

Times derived from a preset's figures (a copy's, a memset's, a roofline kernel's) come from the
preset's own methods: they are the preset's physics, not the simulator's semantics.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from swimlanes.engine.blocks import residency, waves
from swimlanes.engine.call_context import context_cost_ns
from swimlanes.engine.presets import DevicePreset
from swimlanes.model.document import (
    COLLECTIVE_OPS,
    DEFAULT_STREAM,
    MULTI_DEVICE_OPS,
    Op,
    Pipeline,
)


class StreamClass(Enum):
    LEGACY = "legacy default stream"
    BLOCKING = "blocking"  # also per-thread default streams: they sync with the legacy stream
    NON_BLOCKING = "non-blocking"


class Engine(Enum):
    """Where an op runs once it leaves its hardware queue."""

    COPY = "copy engine"  # h2d, d2h
    SM_COPY = "SMs, one wave"  # d2d, memset
    KERNEL = "SMs, block scheduler"
    INSTANT = "nowhere: done as it leaves"  # event_record, event_wait
    CALLBACK = "host callback thread"  # host_func
    PEER = "a copy engine at each end and the link between"  # peer_copy (several devices)
    COLLECTIVE = "every participant's SMs (NCCL channels) and the ring links"  # all_reduce, ...


class HostCall(Enum):
    """What the host thread does on an op's call."""

    ENQUEUE = "enqueue and return"
    ENQUEUE_AND_WAIT = "enqueue, return when the op is done"
    ENQUEUE_AND_STAGE = "enqueue, return once the data is staged"
    ENQUEUE_BARRIER = "enqueue as a device-wide implicit synchronisation"
    WAIT_STREAM = "wait for the stream's last op"
    WAIT_EVENT = "wait for the event's last record"
    WAIT_ALL = "wait for every stream's last op"
    BUSY = "keep the host busy"
    BARRIER = "device-wide implicit synchronisation, no wait"


#: The engine class of an op for dependency latencies (see Simulation.latency).
SMS, H2D_CLASS, D2H_CLASS, CALLBACK_CLASS, NO_CLASS = 0, 1, 2, 3, -1


@dataclass
class StreamFacts:
    name: str
    klass: StreamClass
    priority: int  # clamped to the device's range; lower runs first
    queue: int  # its hardware queue (Hyper-Q connection)


@dataclass
class KernelShape:
    blocks: int
    slots_per_block: int  # thread slots of an SM one block holds
    max_resident: int  # blocks of this kernel that fit on the whole GPU at once
    block_ns: float  # one wave's time


@dataclass
class OpFacts:
    index: int
    kind: str
    label: str
    stream: int  # index into the stream table, -1: none
    queue: int  # hardware queue, -1: not enqueued
    engine: Engine | None  # None: a host-only call
    call: HostCall
    cost_ns: int  # the call's host time, including the host's gap before it
    solo_ns: int  # time alone on the device (host work: its duration), -1: none
    nbytes: int
    event: str | None
    stage_ns: int | None = None  # pageable H2D: staging; pageable D2H: last chunk copied out
    kernel: KernelShape | None = None
    engine_class: int = NO_CLASS
    #: What a copy engine's preference for more of the same follows: the copy's channel (a
    #: number past the streams'), None: its stream.
    copy_key: int | None = None
    #: queue_choice "free": the connection queues it chooses ``queue`` among as it reaches
    #: the GPU (Simulation.hardware_queue); empty: it joins ``queue``.
    choices: range = range(0)


def stream_table(pipeline: Pipeline, preset: DevicePreset) -> tuple[list[StreamFacts], int]:
    """Every stream (the implicit legacy default first) and the number of hardware queues."""
    streams = pipeline.all_streams
    facts: list[StreamFacts] = []
    if preset.hardware_queues == "fermi":
        queue_count = 2 if preset.shared_copy_engine else 3
    else:
        connections = preset.connections or max(1, len(streams) - 1)
        # The connections, then each direction's copy channels, then per-stream copy queues.
        queue_count = 1 + connections + 2 * preset.copy_channels
        if preset.copy_queue_per_stream:
            queue_count += len(streams)
    assigned = 0
    for s in streams:
        if s.name == DEFAULT_STREAM or s.kind == "legacy_default":
            klass = StreamClass.LEGACY
        elif s.kind == "non_blocking":
            klass = StreamClass.NON_BLOCKING
        else:
            klass = StreamClass.BLOCKING
        if preset.hardware_queues == "fermi":
            queue = 0
        elif klass is StreamClass.LEGACY:
            queue = 0  # the legacy default stream has a queue of its own
        else:  # round-robin over the connections, in creation order
            queue = 1 + assigned % connections
            assigned += 1
        default = klass is StreamClass.LEGACY or s.kind == "per_thread_default"
        priority = preset.stream_priority(s.priority, default)
        facts.append(StreamFacts(s.name, klass, priority, queue))
    return facts, queue_count


def free_connections(preset: DevicePreset) -> range:
    """The connection queues that ops choose among as they reach the GPU: with
    ``queue_choice`` "free" on Hyper-Q with ``connections``, queues 1 to ``connections``
    (the legacy default stream's is 0); otherwise none (each stream keeps its own)."""
    if preset.hardware_queues != "hyperq" or not preset.connections:
        return range(0)
    if preset.queue_choice != "free":
        return range(0)
    return range(1, 1 + preset.connections)


def op_table(
    pipeline: Pipeline, preset: DevicePreset, streams: list[StreamFacts], queue_count: int
) -> list[OpFacts]:
    """The facts of every op of the program, in program order."""
    index = {s.name: k for k, s in enumerate(streams)}
    gap = round(preset.host_call_gap_us * 1000.0)
    facts = []
    previous_call: tuple | None = None
    previous_op: Op | None = None
    channels = _CopyChannels(preset, streams, queue_count, pipeline.program)
    connections = free_connections(preset)
    for i, op in enumerate(pipeline.program):
        stream = -1 if op.stream_name is None else index[op.stream_name]
        engine = _ENGINE.get(op.op)
        # A call that repeats the call just before it (any stream) runs warm.
        call_key = _call_key(op)
        repeat = bool(preset.repeat_issue_cost_us) and call_key == previous_call
        previous_call = call_key
        cost = preset.repeat_issue_cost_ns(op.op) if repeat else preset.issue_cost_ns(op.op)
        cost = context_cost_ns(op, i, previous_op, cost, preset)
        previous_op = op
        call, solo, extra = _host_and_solo(op, preset)
        if op.call_us is not None:  # the call's own measured time replaces the preset's
            measured = round(op.call_us * 1000.0)
            if call is HostCall.ENQUEUE_AND_STAGE:  # the whole call: staging is the rest
                extra = max(0, measured - cost)
            else:
                cost = measured
        copy_key = None
        if channels.takes(op, engine):
            queue = channels.queue(op)
            copy_key = len(streams) + queue
        else:
            queue = _queue(op, engine, stream, streams, queue_count, preset)
        choices = connections if queue in connections else range(0)
        fact = OpFacts(
            index=i,
            kind=op.op,
            label=op.display_label,
            stream=stream,
            queue=queue,
            engine=engine,
            call=call,
            cost_ns=gap + cost,
            solo_ns=solo,
            nbytes=op.bytes or 0,
            event=op.event,
            engine_class=_engine_class(op.op, preset),
            copy_key=copy_key,
            choices=choices,
        )
        if (
            op.copy_out_us is not None
            and call is HostCall.ENQUEUE_AND_WAIT
            and op.effective_host_memory == "pageable"
        ):  # its measured copy-out and return replace the model's
            extra = max(0, round(op.copy_out_us * 1000.0) - preset.sync_return_ns("sync_copy"))
        if isinstance(extra, KernelShape):
            fact.kernel = extra
        else:
            fact.stage_ns = extra
        facts.append(fact)
    return facts


_ENGINE = {
    "h2d": Engine.COPY,
    "d2h": Engine.COPY,
    "d2d": Engine.SM_COPY,
    "memset": Engine.SM_COPY,
    "kernel": Engine.KERNEL,
    "event_record": Engine.INSTANT,
    "event_wait": Engine.INSTANT,
    "host_func": Engine.CALLBACK,
    # Several devices (engine/reference/system.py gives them their times; a peer copy from a
    # device to itself runs as a D2D copy there).
    "peer_copy": Engine.PEER,
    "all_reduce": Engine.COLLECTIVE,
    "reduce_scatter": Engine.COLLECTIVE,
    "all_gather": Engine.COLLECTIVE,
    "broadcast": Engine.COLLECTIVE,
}
#: The host-only calls and what the host does on each (see _host_and_solo).
_HOST_CALLS = {
    "stream_sync": HostCall.WAIT_STREAM,
    "event_sync": HostCall.WAIT_EVENT,
    "device_sync": HostCall.WAIT_ALL,
    "free": HostCall.WAIT_ALL,  # cudaFree synchronises the device
    "malloc": HostCall.BARRIER,
    "host": HostCall.BUSY,
}
#: Every kind the reference simulator handles (its per-kind tables).
REFERENCE_KINDS: tuple[str, ...] = (*_ENGINE, *_HOST_CALLS)


def _call_key(op: Op) -> tuple:
    """The API call an op makes, stream aside."""
    per_sm = op.extra.get("blocks_per_sm") if op.extra else None
    return (op.op, op.bytes, op.host_memory, op.is_async, op.duration_us, op.blocks,
            op.threads, op.block_us, op.flops, per_sm)  # fmt: skip


def _queue(
    op: Op,
    engine: Engine | None,
    stream: int,
    streams: list[StreamFacts],
    queue_count: int,
    preset: DevicePreset,
) -> int:
    if engine is None:
        return -1
    if preset.hardware_queues == "fermi":
        # One compute queue (0) and one queue per copy engine, filled in issue order.
        if op.op == "h2d":
            return 1
        if op.op == "d2h":
            return 1 if preset.shared_copy_engine else 2
        return 0
    if preset.copy_queue_per_stream and op.op in ("h2d", "d2h", "peer_copy"):
        return queue_count - len(streams) + stream  # each stream's copies: a queue of their own
    return streams[stream].queue


class _CopyChannels:
    """Hyper-Q copy channels (the preset's ``copy_channels``): a direction's H2D or D2H
    copies from at most that many streams keep a channel per stream (in the order of each
    stream's first copy); from more streams they take the channels round-robin, in issue
    order."""

    def __init__(
        self,
        preset: DevicePreset,
        streams: list[StreamFacts],
        queue_count: int,
        program: list[Op],
    ):
        self.n = preset.copy_channels if preset.hardware_queues == "hyperq" else 0
        # The channels follow the connections: before the per-stream copy queues, if any.
        per_stream = len(streams) if preset.copy_queue_per_stream else 0
        self.base = queue_count - per_stream - 2 * self.n
        self.issued = {"h2d": 0, "d2h": 0}
        # Per direction: each stream's own channel, or None (more streams than channels).
        self.own: dict[str, dict[str | None, int] | None] = {}
        for kind in self.issued:
            own: dict[str | None, int] = {}
            for op in program:
                if op.op == kind:
                    own.setdefault(op.stream_name, len(own))
            self.own[kind] = own if len(own) <= self.n else None

    def takes(self, op: Op, engine: Engine | None) -> bool:
        return self.n > 0 and engine is not None and op.op in self.issued

    def queue(self, op: Op) -> int:
        k = self.issued[op.op]
        self.issued[op.op] = k + 1
        own = self.own[op.op]
        channel = k % self.n if own is None else own[op.stream_name]
        return self.base + (0 if op.op == "h2d" else self.n) + channel


def _engine_class(kind: str, preset: DevicePreset) -> int:
    if kind == "peer_copy":  # its source's outgoing copy engine
        return H2D_CLASS if preset.shared_copy_engine else D2H_CLASS
    if kind in ("h2d", "d2h"):
        return H2D_CLASS if kind == "h2d" or preset.shared_copy_engine else D2H_CLASS
    if kind in ("kernel", "d2d", "memset", *COLLECTIVE_OPS):
        return SMS
    return CALLBACK_CLASS if kind == "host_func" else NO_CLASS


def _host_and_solo(op: Op, preset: DevicePreset) -> tuple[HostCall, int, KernelShape | int | None]:
    """What the host does on the call, the op's time alone (-1: none) and its kernel shape or
    staging time."""
    name = op.op
    duration = None if op.duration_us is None else round(op.duration_us * 1000.0)
    nbytes = op.bytes or 0
    if name == "d2d":
        solo = duration if duration is not None else preset.copy_ns("d2d", nbytes, "pinned")
        return HostCall.ENQUEUE, solo, None
    if name in ("h2d", "d2h"):
        memory = op.effective_host_memory
        solo = duration if duration is not None else preset.copy_ns(name, nbytes, memory)
        sync = not op.effective_async
        if name == "h2d" and memory == "pageable" and not sync:
            staging = round(nbytes / preset.pageable_host_gbps("h2d", nbytes))
            stage: int | None = duration if duration is not None else staging
            return HostCall.ENQUEUE_AND_STAGE, solo, stage
        stage = None
        chunk = preset.pageable_d2h_chunk_bytes
        if name == "d2h" and memory == "pageable" and chunk:
            stage = round(min(nbytes, chunk) / preset.pageable_host_gbps("d2h", nbytes))
        waits = sync or memory == "pageable"
        return (HostCall.ENQUEUE_AND_WAIT if waits else HostCall.ENQUEUE), solo, stage
    if name == "memset":
        solo = duration if duration is not None else preset.memset_ns(nbytes)
        call = HostCall.ENQUEUE if op.effective_async else HostCall.ENQUEUE_BARRIER
        return call, solo, None
    if name == "kernel":
        return (HostCall.ENQUEUE, *_kernel(op, preset, duration))
    if name in ("event_record", "event_wait"):
        return HostCall.ENQUEUE, 0, None
    if name == "host_func":
        return HostCall.ENQUEUE, duration or 0, None
    if name == "host":
        return HostCall.BUSY, duration or 0, None
    if name in MULTI_DEVICE_OPS:  # their times need the other devices: system.py sets them
        return HostCall.ENQUEUE, 0, None
    return _HOST_CALLS[name], -1, None


def _kernel(op: Op, preset: DevicePreset, duration: int | None) -> tuple[int, KernelShape]:
    """A kernel's time alone (its blocks' waves plus the kernel overhead) and its shape."""
    threads = op.threads or 256
    blocks = op.blocks or 1
    per_sm = residency(preset, threads, op.extra.get("blocks_per_sm"))
    n_waves = waves(preset, blocks, per_sm)
    if op.block_us is not None:
        total = max(1, round(op.block_us * 1000.0)) * n_waves
    elif duration is not None:
        total = max(1, duration)
    else:
        total = preset.roofline_ns(op.flops, op.bytes, blocks, threads, per_sm)
    shape = KernelShape(
        blocks=blocks,
        slots_per_block=preset.max_threads_per_sm // per_sm,
        max_resident=preset.sm_count * per_sm,
        block_ns=total / n_waves,
    )
    return total + round(preset.kernel_overhead_us * 1000.0), shape


def latency_table(preset: DevicePreset) -> Callable[[int, int], int] | None:
    """The delay from an op's completion on one engine class to a waiting op's start on
    another, or None when the preset has none."""
    sms = round(preset.kernel_dependency_latency_us * 1000.0)
    other = round(preset.dependency_latency_us * 1000.0)
    callback = round(preset.host_func_latency_us * 1000.0)
    if not (sms or other or callback):
        return None

    def latency(a: int, b: int) -> int:
        if a == NO_CLASS or b == NO_CLASS:
            return 0
        if b == CALLBACK_CLASS:
            return callback  # a host function waits for its callback thread to wake
        if a != b:
            return other
        return sms if a == 0 else 0  # copies of one class: their engine spaces them

    return latency


def event_records(ops: list[OpFacts]) -> dict[int, int]:
    """Per event_wait and event_sync: the latest event_record of its event before it."""
    latest: dict[str | None, int] = {}
    record_of = {}
    for i, op in enumerate(ops):
        if op.kind == "event_record":
            latest[op.event] = i
        elif op.kind in ("event_wait", "event_sync") and op.event in latest:
            record_of[i] = latest[op.event]
    return record_of


def next_in_stream(ops: list[OpFacts]) -> list[int]:
    after = [-1] * len(ops)
    last: dict[int, int] = {}
    for i, op in enumerate(ops):
        if op.engine is None:
            continue
        if op.stream in last:
            after[last[op.stream]] = i
        last[op.stream] = i
    return after


def shared_queues(ops: list[OpFacts], streams: list[StreamFacts], preset: DevicePreset) -> bool:
    """Whether some hardware queue carries ops of more than one stream."""
    if preset.hardware_queues == "fermi":
        return True
    if preset.copy_queue_per_stream or preset.copy_channels:  # copies in queues of their own
        return True
    return len({s.queue for s in streams}) < len(streams)
