"""What both code generators need for a multi-device or multi-thread pipeline: which host
thread issues each op, the NCCL communicators and each collective's element counts, the peer-copy buffers, and the
host-side handshakes that keep cross-device event waits in the program's order.

A pipeline is exported as a multi-device program when it declares more than one device, uses
a multi-device kind (a peer copy, a collective) or has several host threads on a device;
otherwise the single-device generators run unchanged, so their output stays byte for byte what
it was. Devices and communicators are
referred to by their index in the generated code, never by their names.

Generated programs run one host thread per host thread of the pipeline (one per device where it
declares none, as the simulator's semantics do): thread ``t`` issues its own ops in program
order, on its device. A per-thread default stream is ``cudaStreamPerThread`` (Numba's
``per_thread_default_stream()``), which means the calling thread's own stream, and only its
owning thread issues on it. An event is one CUDA event per (event, device), since a record must
be on a stream of the event's device; a wait uses the event of the device whose record came
last before it in the program list. When that record is issued by another thread, the waiting thread first waits on the host for the record to be issued (a "mark"), so
that the wait cannot run ahead of the record it refers to, as it does not in the simulator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swimlanes.codegen.plan import INT32_MAX, CodegenError, checked_int, identifier
from swimlanes.model.document import COLLECTIVE_OPS, MULTI_DEVICE_OPS, Op, Pipeline

#: Bytes of one NCCL element: the generated programs reduce ncclFloat (fp32) buffers.
ELEMENT_BYTES = 4


def is_multi_device(pipeline: Pipeline) -> bool:
    """Whether ``pipeline`` is exported as a multi-device program."""
    return (
        pipeline.is_multi_device
        or pipeline.is_multi_thread
        or any(op.op in MULTI_DEVICE_OPS for op in pipeline.program)
    )


@dataclass(frozen=True)
class Collective:
    """One collective op's arguments: the rank of its device in its communicator, the
    element count NCCL is given (per rank for reduce-scatter and all-gather), and the root's
    rank (broadcast)."""

    comm: int
    rank: int
    count: int
    root: int = 0


@dataclass
class MultiPlan:
    """Devices, host threads, communicators, per-op devices and threads, and the cross-thread
    handshakes of a pipeline."""

    pipeline: Pipeline
    devices: list[str]
    #: Program index -> index of the device whose thread issues it.
    op_device: list[int] = field(default_factory=list)
    #: The host threads in :meth:`Pipeline.thread_list` order, and each one's device index
    #: (one thread per device, in device order, where the pipeline declares none).
    threads: list[str] = field(default_factory=list)
    thread_device: list[int] = field(default_factory=list)
    #: Program index -> index of the host thread that issues it.
    op_thread: list[int] = field(default_factory=list)
    #: Communicator identifiers and their devices' indexes, in declaration order.
    comm_ids: list[str] = field(default_factory=list)
    comm_devices: list[list[int]] = field(default_factory=list)
    collectives: dict[int, Collective] = field(default_factory=dict)
    #: Program index of a peer copy -> (source device, destination device).
    peers: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: Per device: bytes of the collective send / receive and peer out / in buffers.
    coll_bytes: list[int] = field(default_factory=list)
    peer_out_bytes: list[int] = field(default_factory=list)
    peer_in_bytes: list[int] = field(default_factory=list)
    #: Program index of an event wait or sync -> the device of the record it waits for.
    event_device: dict[int, int] = field(default_factory=dict)
    #: Program index of a record that another thread waits for -> its mark number.
    marks: dict[int, int] = field(default_factory=dict)
    #: Program index of a wait or sync -> the mark it waits on first.
    waits_on_mark: dict[int, int] = field(default_factory=dict)

    def ops_of(self, thread: int) -> list[int]:
        """Program indexes issued by host thread ``thread``, in order."""
        return [i for i, t in enumerate(self.op_thread) if t == thread]

    def threads_of(self, device: int) -> list[int]:
        """The host threads (indexes) that run on device ``device``."""
        return [t for t, d in enumerate(self.thread_device) if d == device]

    def run_name(self, thread: int) -> str:
        """The generated function that host thread ``thread`` runs: named per device where each
        device has one thread (so those programs keep their shape), else per thread."""
        kind = "thread" if self.pipeline.is_multi_thread else "device"
        return f"run_{kind}_{thread}"

    @property
    def peer_pairs(self) -> list[tuple[int, int]]:
        """Device pairs (lower index first) that peer copies join, between distinct devices."""
        return sorted({(min(s, d), max(s, d)) for s, d in self.peers.values() if s != d})


def nccl_call(kind: str, c: Collective, dtype: str, sum_op: str) -> tuple[str, str]:
    """The NCCL function of a collective ``kind`` and its arguments between the buffers and
    the communicator (count, data type, reduction or root), in the export's spelling of
    ``ncclFloat`` (``dtype``) and ``ncclSum`` (``sum_op``)."""
    calls = {
        "all_reduce": ("ncclAllReduce", f"{c.count}, {dtype}, {sum_op}"),
        "reduce_scatter": ("ncclReduceScatter", f"{c.count}, {dtype}, {sum_op}"),
        "all_gather": ("ncclAllGather", f"{c.count}, {dtype}"),
        "broadcast": ("ncclBroadcast", f"{c.count}, {dtype}, {c.root}"),
    }
    return calls[kind]


def _device_index(plan: MultiPlan, name: str | None, where: str) -> int:
    try:
        return plan.devices.index(name or plan.devices[0])
    except ValueError:
        raise CodegenError(f"{where}: no device {name!r}") from None


def _plan_collective(plan: MultiPlan, op: Op, index: int, device: int) -> None:
    where = f"program[{index}]"
    names = [c.name for c in plan.pipeline.communicators]
    if op.communicator not in names:
        raise CodegenError(f"{where}.communicator: no communicator {op.communicator!r}")
    c = names.index(op.communicator)
    members = plan.comm_devices[c]
    if device not in members:
        raise CodegenError(
            f"{where}: device {plan.devices[device]!r} is not in {op.communicator!r}"
        )
    n = len(members)
    elements = max(1, checked_int(op.bytes or ELEMENT_BYTES, f"{where}.bytes", 1) // ELEMENT_BYTES)
    per_rank = op.op in ("reduce_scatter", "all_gather")
    count = checked_int(max(1, elements // n) if per_rank else elements, f"{where}.bytes")
    root = 0
    if op.op == "broadcast" and op.root is not None:
        root_dev = _device_index(plan, op.root, f"{where}.root")
        if root_dev not in members:
            raise CodegenError(f"{where}.root: {op.root!r} is not in {op.communicator!r}")
        root = members.index(root_dev)
    plan.collectives[index] = Collective(c, members.index(device), count, root)
    need = count * ELEMENT_BYTES * (n if per_rank else 1)
    plan.coll_bytes[device] = max(plan.coll_bytes[device], need)


def _plan_events(plan: MultiPlan) -> None:
    last_record: dict[str, int] = {}
    for i, op in enumerate(plan.pipeline.program):
        if not op.event:
            continue
        if op.op == "event_record":
            last_record[op.event] = i
        elif op.op in ("event_wait", "event_sync"):
            rec = last_record.get(op.event)
            if rec is None:  # never recorded before: CUDA's wait completes at once
                plan.event_device[i] = plan.op_device[i]
                continue
            plan.event_device[i] = plan.op_device[rec]
            if plan.op_thread[rec] != plan.op_thread[i]:
                mark = plan.marks.setdefault(rec, len(plan.marks))
                plan.waits_on_mark[i] = mark


def _plan_threads(plan: MultiPlan) -> None:
    for name, device in plan.pipeline.thread_list():
        plan.threads.append(name)
        plan.thread_device.append(_device_index(plan, device, f"host thread {name!r}"))


def make_multi_plan(pipeline: Pipeline) -> MultiPlan:
    """The multi-device facts of ``pipeline`` (a :class:`CodegenError` names what is wrong)."""
    devices = pipeline.device_names
    checked_int(len(devices), "devices", 1, INT32_MAX)
    plan = MultiPlan(pipeline, devices)
    n = len(devices)
    plan.coll_bytes, plan.peer_out_bytes, plan.peer_in_bytes = [0] * n, [0] * n, [0] * n
    for c in pipeline.communicators:
        ident = identifier(c.name, "comm")
        while ident in plan.comm_ids:
            ident += "_"
        plan.comm_ids.append(ident)
        plan.comm_devices.append(
            [_device_index(plan, d, f"communicator {c.name!r}") for d in c.devices]
        )
    _plan_threads(plan)
    for i, op in enumerate(pipeline.program):
        where = f"program[{i}]"
        device = _device_index(plan, pipeline.op_device(op), f"{where}.device")
        plan.op_device.append(device)
        thread = pipeline.op_thread(op)
        if thread not in plan.threads:
            raise CodegenError(f"{where}.host_thread: no host thread {thread!r}")
        plan.op_thread.append(plan.threads.index(thread))
        if op.op in COLLECTIVE_OPS:
            _plan_collective(plan, op, i, device)
        elif op.op == "peer_copy":
            stream_dev = plan.devices[device]
            src = _device_index(plan, op.src_device or stream_dev, f"{where}.src_device")
            dst = _device_index(plan, op.dst_device or stream_dev, f"{where}.dst_device")
            nbytes = checked_int(op.bytes or 1, f"{where}.bytes", 1)
            plan.peers[i] = (src, dst)
            plan.peer_out_bytes[src] = max(plan.peer_out_bytes[src], nbytes)
            plan.peer_in_bytes[dst] = max(plan.peer_in_bytes[dst], nbytes)
    _plan_events(plan)
    return plan


def thread_label_changes(plan: MultiPlan, thread: int) -> list[tuple[int, str | None]]:
    """Host thread ``thread``'s program indexes, each with the label to make current before its
    code (None where the thread's current label is already right): as ``label_changes``, but per
    host thread, since each thread keeps its own current label."""
    out: list[tuple[int, str | None]] = []
    current = ""
    for i in plan.ops_of(thread):
        label = plan.pipeline.program[i].label or ""
        out.append((i, None if label == current else label))
        current = label
    return out
