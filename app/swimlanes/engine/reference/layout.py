"""The facts of a multi-device program: each device's streams, hardware queues and ops, worked
out by the single-device tables (``program.py``) on the device's own part of the program and
numbered across the whole program; and the checks a multi-device program must pass.

Each device's host thread issues its own ops, so the single-device rules that depend on the
order of calls (a call that repeats the call before it runs warm) apply per device.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from swimlanes.engine.presets import DevicePreset
from swimlanes.engine.reference.program import (
    SMS,
    Engine,
    OpFacts,
    StreamFacts,
    op_table,
    shared_queues,
    stream_table,
)
from swimlanes.model.document import (
    COLLECTIVE_OPS,
    DEFAULT_STREAM,
    PEER_COPY,
    Op,
    Pipeline,
    Stream,
)


class MultiDeviceError(ValueError):
    """A pipeline the multi-device simulator cannot run: more devices than the preset's GPUs,
    a peer copy or collective naming a device or communicator that is not there, collectives
    that do not match across their communicator, or collectives that wait for each other."""


@dataclass
class DeviceLayout:
    """One device's part of the program."""

    index: int
    name: str
    ops: list[int] = field(default_factory=list)  # what its host thread issues, in order
    streams: list[int] = field(default_factory=list)  # its streams (global numbers)
    queue_base: int = 0  # its first hardware queue
    queue_count: int = 0
    shared_queues: bool = False


@dataclass
class Layout:
    """The whole program's facts, numbered across devices."""

    devices: list[DeviceLayout]
    ops: list[OpFacts]
    streams: list[StreamFacts]
    stream_device: list[int]
    op_device: list[int]  # the device whose host thread issues each op
    queue_count: int
    #: Per peer copy between two devices: (source, destination, latency ns): its data flows
    #: over the link once the latency has passed (none for a measured ``duration_us``).
    peers: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    #: Per collective op: its communicator's devices (rank order).
    members: dict[int, list[int]] = field(default_factory=dict)


def device_of_ops(pipeline: Pipeline) -> list[str]:
    """The device whose host thread issues each op (MultiDeviceError for unknown devices)."""
    names = pipeline.device_names
    out = []
    for i, op in enumerate(pipeline.program):
        device = pipeline.op_device(op)
        if device not in names:
            raise MultiDeviceError(f"program[{i}]: no device {device!r} in the pipeline")
        out.append(device)
    return out


def layout(pipeline: Pipeline, preset: DevicePreset) -> Layout:
    """Every device's streams, queues and ops, with global numbers (see the module docstring)."""
    names = pipeline.device_names
    if len(names) > preset.gpus:
        raise MultiDeviceError(
            f"the pipeline names {len(names)} devices but the {preset.name} preset has "
            f"{preset.gpus} GPU{'s' if preset.gpus > 1 else ''}: choose a preset of "
            f"{len(names)} GPUs or more (such as {_suggest(len(names))})"
        )
    issuer = device_of_ops(pipeline)
    global_streams = pipeline.all_streams
    stream_device = [names.index(_stream_device(pipeline, s)) for s in global_streams]
    n = len(pipeline.program)
    ops: list[OpFacts | None] = [None] * n
    streams: list[StreamFacts | None] = [None] * len(global_streams)
    devices, queue_base = [], 0
    for d, name in enumerate(names):
        dev = DeviceLayout(d, name, ops=[i for i in range(n) if issuer[i] == name])
        dev.streams = [k for k, sd in enumerate(stream_device) if sd == d]
        sub, implicit = _device_part(pipeline, [global_streams[k] for k in dev.streams], dev.ops)
        local_streams, queue_count = stream_table(sub, preset)
        local_ops = op_table(sub, preset, local_streams, queue_count)
        dev.queue_base, dev.queue_count = queue_base, queue_count
        dev.shared_queues = shared_queues(local_ops, local_streams, preset)
        # The part's streams are the device's in order, after the implicit "default" if any.
        to_global = [-1] * implicit + dev.streams
        for k, stream_facts in zip(to_global, local_streams, strict=True):
            if k >= 0:
                name, queue = global_streams[k].name, stream_facts.queue + queue_base
                streams[k] = replace(stream_facts, name=name, queue=queue)
        for i, facts in zip(dev.ops, local_ops, strict=True):
            queue = facts.queue + queue_base if facts.queue >= 0 else -1
            stream = to_global[facts.stream] if facts.stream >= 0 else -1
            choices = range(facts.choices.start + queue_base, facts.choices.stop + queue_base)
            ops[i] = replace(facts, index=i, stream=stream, queue=queue, choices=choices)
        queue_base += queue_count
        devices.append(dev)
    out = Layout(devices, [o for o in ops if o is not None],
                 [s for s in streams if s is not None], stream_device, [names.index(x) for x in
                 issuer], queue_base)  # fmt: skip
    _multi_device_ops(pipeline, preset, out)
    return out


def _device_part(pipeline: Pipeline, own: list[Stream], ops: list[int]) -> tuple[Pipeline, int]:
    """A device's part of the program as a pipeline of its own: its streams and the ops its
    host thread issues. Its legacy default stream, if it has one, is named "default" there
    (so that the part has no other); returns also 1 if the part's streams begin with an
    implicit "default" stream of its own (a device without a legacy stream), else 0."""
    legacy = next((s.name for s in own if s.name == DEFAULT_STREAM or s.kind ==
                   "legacy_default"), None)  # fmt: skip
    rename = {legacy: DEFAULT_STREAM} if legacy is not None else {}
    streams = [Stream(rename.get(s.name, s.name), s.kind, s.priority) for s in own]
    program = [pipeline.program[i] for i in ops]
    program = [replace(op, stream=rename[op.stream]) if op.stream in rename else op
               for op in program]  # fmt: skip
    return Pipeline(pipeline.name, streams, program), int(legacy is None)


def _suggest(devices: int) -> str:
    if devices > 8:
        return f'a preset file with "gpus": {devices}'
    return next(f"{n}x-h200-nvlink" for n in (2, 4, 8) if n >= devices)


def _stream_device(pipeline: Pipeline, stream: Stream) -> str:
    device = stream.device or pipeline.device_names[0]
    if device not in pipeline.device_names:
        raise MultiDeviceError(f"stream {stream.name!r}: no device {device!r} in the pipeline")
    return device


def _multi_device_ops(pipeline: Pipeline, preset: DevicePreset, out: Layout) -> None:
    """Peer copies get their ends and times; collectives their communicator's devices."""
    names = pipeline.device_names
    for i, op in enumerate(pipeline.program):
        if op.op == PEER_COPY:
            _peer_copy(i, op, names, out, preset)
        elif op.op in COLLECTIVE_OPS:
            comm = pipeline.communicator(op.communicator)
            if comm is None:
                raise MultiDeviceError(
                    f"program[{i}]: {op.op} on communicator {op.communicator!r}, which the "
                    "pipeline does not declare"
                )
            missing = [d for d in comm.devices if d not in names]
            if missing or not comm.devices or len(set(comm.devices)) < len(comm.devices):
                raise MultiDeviceError(
                    f"communicator {comm.name!r}: its devices must be distinct devices of the "
                    "pipeline" + (f" ({missing[0]!r} is not)" if missing else "")
                )
            out.members[i] = [names.index(d) for d in comm.devices]


def _peer_copy(i: int, op: Op, names: list[str], out: Layout, preset: DevicePreset) -> None:
    own = names[out.stream_device[out.ops[i].stream]]
    src, dst = op.src_device or own, op.dst_device or own
    for end in (src, dst):
        if end not in names:
            raise MultiDeviceError(f"program[{i}]: peer copy to or from {end!r}, not a device")
    facts = out.ops[i]
    duration = None if op.duration_us is None else round(op.duration_us * 1000.0)
    if src == dst:  # a copy inside one device's memory: a D2D copy
        solo = duration if duration is not None else preset.copy_ns("d2d", facts.nbytes)
        out.ops[i] = replace(facts, engine=Engine.SM_COPY, solo_ns=solo, engine_class=SMS)
        return
    latency = 0 if duration is not None else link_latency_ns(preset)
    out.peers[i] = (names.index(src), names.index(dst), latency)
    out.ops[i] = replace(facts, solo_ns=peer_copy_ns(preset, facts.nbytes, duration))


def peer_copy_ns(preset: DevicePreset, nbytes: int, duration: int | None) -> int:
    """A peer copy's time alone: the link's latency, then its bytes at the link's rate (a
    measured ``duration_us`` replaces both)."""
    if duration is not None:
        return duration
    return link_latency_ns(preset) + round(nbytes / preset.link_gbps)


def link_latency_ns(preset: DevicePreset) -> int:
    return round(preset.link_latency_us * 1000.0)
