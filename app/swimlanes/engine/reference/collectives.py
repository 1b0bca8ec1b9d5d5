"""NCCL collectives: which ops form one call across a communicator, what it costs, and the SMs
it takes on each device.

On communicator C the k-th collective op of C that each member device issues (in program
order) forms instance k; each member issues exactly one op per instance, of one kind and size
(and root, for a broadcast). An instance starts when the last of its ops leaves its hardware
queue (its stream order and queue let it go): all its ops get that start and one end. Its time
is ``nccl_latency_us + bytes * factor / nccl_bus_gbps`` with the ring's factor (2(n-1)/n for
all_reduce, (n-1)/n for reduce_scatter and all_gather, 1 for broadcast; n the communicator's
size); on one device it is a local copy, ``nccl_latency_us + 2 * bytes / memory_gbps``. A
measured ``duration_us`` (the first op's) replaces it. While it runs it holds
``nccl_channels`` SMs on each participating device (one block of each SM's whole thread
capacity: kernels get the rest; blocks already running keep their SMs) and the ring's links,
member i to member i + 1.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from swimlanes.engine.presets import DevicePreset
from swimlanes.engine.reference.devices import Clock, Sms, SmWork
from swimlanes.engine.reference.layout import MultiDeviceError
from swimlanes.model.document import Pipeline

#: The ring's bytes on the busiest link per byte of the buffer, by kind (n: devices).
RING_FACTOR: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2.0 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
}


@dataclass(eq=False)
class Instance:
    """One collective call across its communicator."""

    communicator: str
    number: int
    ops: list[int]  # one per member, in rank order
    devices: list[int]
    duration_ns: int
    arrived: set[int] = field(default_factory=set)
    start: int = -1
    works: list[SmWork] = field(default_factory=list)


@dataclass
class CollectiveEnd:
    """A collective instance ends on every participating device."""

    instance: Instance


def collective_ns(preset: DevicePreset, kind: str, nbytes: int, devices: int) -> int:
    """A collective's time (see the module docstring)."""
    latency = round(preset.nccl_latency_us * 1000.0)
    if devices == 1:
        return latency + round(2.0 * nbytes / preset.memory_gbps)
    return latency + round(nbytes * RING_FACTOR[kind](devices) / preset.nccl_bus_gbps)


def instances(
    pipeline: Pipeline, preset: DevicePreset, op_device: list[int], members: dict[int, list[int]]
) -> dict[int, Instance]:
    """Per collective op, its instance; MultiDeviceError naming the first op that does not
    match its instance (or that no member issues), so that no call can wait for ever."""
    names = pipeline.device_names
    per: dict[tuple[str, int], list[int]] = {}  # (communicator, device) -> its ops in order
    for i in sorted(members):
        op = pipeline.program[i]
        name = str(op.communicator)
        if op_device[i] not in members[i]:
            raise MultiDeviceError(
                f"program[{i}]: {op.op} on {name!r} is issued on {names[op_device[i]]}, which "
                "is not one of its devices"
            )
        per.setdefault((name, op_device[i]), []).append(i)
    out: dict[int, Instance] = {}
    for comm in pipeline.communicators:
        devices = [names.index(d) for d in comm.devices if d in names]
        lists = [per.get((comm.name, d), []) for d in devices]
        if not any(lists):
            continue
        counts = [len(x) for x in lists]
        if len(set(counts)) > 1:
            shown = ", ".join(f"{names[d]} {c}" for d, c in zip(devices, counts, strict=True))
            raise MultiDeviceError(
                f"communicator {comm.name!r}: its devices issue different numbers of "
                f"collectives ({shown}); each must issue one op per call"
            )
        for k, ops in enumerate(zip(*lists, strict=True)):
            _check_instance(pipeline, comm.name, k, list(ops))
            first = pipeline.program[ops[0]]
            duration = (
                round(first.duration_us * 1000.0)
                if first.duration_us is not None
                else collective_ns(preset, first.op, first.bytes or 0, len(devices))
            )
            instance = Instance(comm.name, k, list(ops), devices, duration)
            out.update(dict.fromkeys(ops, instance))
    return out


def _check_instance(pipeline: Pipeline, comm: str, k: int, ops: list[int]) -> None:
    first = pipeline.program[ops[0]]
    for i in ops[1:]:
        op = pipeline.program[i]
        for what, a, b in (("kind", first.op, op.op), ("bytes", first.bytes, op.bytes),
                           ("root", first.root, op.root)):  # fmt: skip
            if a != b:
                raise MultiDeviceError(
                    f"program[{i}]: collective call {k + 1} on {comm!r} has {what} {b!r} here "
                    f"but {a!r} at program[{ops[0]}]: every device must make the same call"
                )


def hold_channels(sms: Sms, op: int, channels: int, t: int) -> SmWork:
    """Take ``channels`` whole SMs for a collective at ``t`` (kernels' blocks get the rest:
    already running blocks keep theirs, so the SMs may be over-committed for a while). The
    block scheduler's next look records the SMs busy."""
    per_sm = sms.preset.max_threads_per_sm
    work = SmWork(op, -(1 << 62), (t, op), 0, per_sm, channels, 0.0, started=True)
    work.resident = channels
    sms.free -= channels * per_sm
    sms.resident_kernels += 1
    sms.pending.insert(0, work)  # (first: its priority is above any stream's)
    return work


def release_channels(sms: Sms, work: SmWork) -> None:
    sms.free += work.resident * work.slots_per_block
    sms.pending.remove(work)
    sms.resident_kernels -= 1


class Collectives:
    """The instances and their progress."""

    def __init__(self, by_op: dict[int, Instance], clock: Clock) -> None:
        self.by_op = by_op
        self.clock = clock

    def arrive(self, i: int, t: int) -> Instance | None:
        """Op ``i`` left its queue at ``t``; returns its instance if that may start now."""
        instance = self.by_op[i]
        instance.arrived.add(i)
        if len(instance.arrived) < len(instance.ops):
            return None
        instance.start = t
        self.clock.at(t + instance.duration_ns, CollectiveEnd(instance))
        return instance
