"""Planning a multi-device run: which device and host thread issue each op, each device's own
resource plan, and the buffers, ranks and instances of peer copies and collectives.

Pure Python (no numba), so it is tested everywhere. Each device gets a sub-pipeline (its
streams and the ops its host thread issues, in program order) planned by
:func:`swimlanes.gpu.plan.make_plan` exactly as a single-device run is; peer copies and
collectives are then resolved here. Their device buffers are sized per op (a collective's
send and receive buffers on its device; a peer copy's source buffer on the source device and
its destination buffer on the destination device). Everything that would make the run hang
or fail midway (too few GPUs, a collective some member never issues, members that disagree on
its kind or size) is refused here, before anything is allocated.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from swimlanes.gpu.errors import GpuError, gib
from swimlanes.gpu.plan import HOST_RESERVE_BYTES, DeviceInfo, ResourcePlan, make_plan
from swimlanes.model.document import (
    COLLECTIVE_OPS,
    DEFAULT_STREAM,
    MULTI_DEVICE_OPS,
    PEER_COPY,
    Pipeline,
)

#: float32: the element NCCL reduces here, so bytes are rounded down to whole elements.
ELEMENT_BYTES = 4


@dataclass(frozen=True)
class MultiOp:
    """One program op of a multi-device run, resolved to its device and local index."""

    index: int
    device: int
    local: int
    kind: str
    #: The host thread that issues it (its position in :attr:`MultiPlan.threads`).
    thread: int = 0
    #: Peer copy ends (device positions); -1 for other kinds.
    src: int = -1
    dst: int = -1
    #: Collectives: communicator, this device's rank, the ranks, instance (k-th op of the
    #: communicator on each member), root rank (broadcast) and float32 element counts.
    comm: str | None = None
    rank: int = 0
    nranks: int = 1
    instance: int = 0
    root: int = 0
    send_bytes: int = 0
    recv_bytes: int = 0
    count: int = 0


@dataclass
class MultiPlan:
    """Per device its sub-pipeline and resource plan, and every op in program order."""

    devices: list[str]
    sub: list[Pipeline]
    plans: list[ResourcePlan]
    ops: list[MultiOp]
    #: Communicator name -> member device positions, in rank order.
    communicators: dict[str, list[int]] = field(default_factory=dict)
    #: Per device, bytes of the per-op peer-copy and collective buffers it holds.
    extra_bytes: list[int] = field(default_factory=list)
    #: The program's host threads (one per device, named after it, where it declares none)
    #: and each one's device position.
    threads: list[str] = field(default_factory=list)
    thread_device: list[int] = field(default_factory=list)

    def thread_order(self, thread: int) -> list[int]:
        """The local indexes (in its device's plan) of the ops host thread ``thread`` issues,
        in program order."""
        return [op.local for op in self.ops if op.thread == thread]

    def device_bytes(self, d: int) -> int:
        return self.plans[d].device_bytes + self.extra_bytes[d]

    def pairs(self) -> set[tuple[int, int]]:
        """Device pairs a peer copy or a ring collective moves data between (src, dst)."""
        out: set[tuple[int, int]] = set()
        for op in self.ops:
            if op.kind == PEER_COPY and op.src != op.dst:
                out.add((op.src, op.dst))
        used = {op.comm for op in self.ops if op.comm is not None}
        for name, members in self.communicators.items():
            n = len(members) if name in used else 0
            for i in range(n if n > 1 else 0):
                out.add((members[i], members[(i + 1) % n]))
        return out


def needs_multi(pipeline: Pipeline) -> bool:
    """Whether the multi-device executor runs ``pipeline``: several devices, several host
    threads on a device, or any peer copy or collective (even on one device)."""
    return (
        pipeline.is_multi_device
        or pipeline.is_multi_thread
        or any(op.op in MULTI_DEVICE_OPS for op in pipeline.program)
    )


def check_device_count(pipeline: Pipeline, available: int) -> None:
    """Refuse, before anything runs, a pipeline naming more devices than this machine has."""
    names = pipeline.device_names
    if len(names) > available:
        raise GpuError(
            f"this pipeline names {len(names)} devices ({', '.join(names)}) but this machine "
            f"has {available} GPU{'s' if available != 1 else ''}: run it on a machine with "
            f"{len(names)}, or simulate it"
        )


def _sub_pipeline(pipeline: Pipeline, device: str, first: bool) -> tuple[Pipeline, list[int]]:
    streams = [s for s in pipeline.streams if pipeline.stream_device(s.name) == device]
    indexes = [i for i, op in enumerate(pipeline.program) if pipeline.op_device(op) == device]
    sub = Pipeline(
        name=pipeline.name,
        streams=streams,
        program=[pipeline.program[i] for i in indexes],
    )
    if not first and not any(s.name == DEFAULT_STREAM for s in streams):
        # The implicit legacy default stream is the first device's: another device's plan must
        # not create (and touch) one of its own.
        sub.extra["_no_default"] = True
    return sub, indexes


def make_multi_plan(pipeline: Pipeline, infos: list[DeviceInfo]) -> MultiPlan:
    """Resolve every op of ``pipeline`` to its device; GpuError for what cannot run."""
    names = pipeline.device_names
    position = {name: i for i, name in enumerate(names)}
    comms = _communicators(pipeline, position)
    subs, plans, ops_by_index = [], [], {}
    for d, name in enumerate(names):
        sub, indexes = _sub_pipeline(pipeline, name, d == 0)
        plan = make_plan(sub, infos[d])
        if sub.extra.pop("_no_default", False):
            plan.streams = [s for s in plan.streams if s.name != DEFAULT_STREAM]
        subs.append(sub)
        plans.append(plan)
        for local, index in enumerate(indexes):
            ops_by_index[index] = (d, local)
    extra = [0] * len(names)
    instances: dict[tuple[str, int], int] = {}
    ops: list[MultiOp] = []
    threads = pipeline.thread_list()
    thread_names = [t for t, _ in threads]
    thread_of = {t: i for i, t in enumerate(thread_names)}
    for index, op in enumerate(pipeline.program):
        d, local = ops_by_index[index]
        thread = thread_of[pipeline.op_thread(op)]
        base = MultiOp(index=index, device=d, local=local, kind=op.op, thread=thread)
        if op.op == PEER_COPY:
            src = position.get(op.src_device or names[d], -1)
            dst = position.get(op.dst_device or names[d], -1)
            if src < 0 or dst < 0:
                raise GpuError(f"op {index}: its peer copy names a device the pipeline lacks")
            nbytes = int(op.bytes or 0)
            extra[src] += nbytes
            extra[dst] += nbytes
            base = _replace(base, src=src, dst=dst, send_bytes=nbytes, recv_bytes=nbytes)
        elif op.op in COLLECTIVE_OPS:
            base = _collective(base, op.communicator, op.root, int(op.bytes or 0), comms, names)
            key = (base.comm or "", d)
            base = _replace(base, instance=instances.get(key, 0))
            instances[key] = base.instance + 1
            extra[d] += base.send_bytes + base.recv_bytes
        ops.append(base)
    _check_instances(ops, comms, names)
    thread_device = [position[d] for _, d in threads]
    return MultiPlan(list(names), subs, plans, ops, comms, extra, thread_names, thread_device)


def _replace(op: MultiOp, **changes: object) -> MultiOp:
    from dataclasses import replace

    return replace(op, **changes)  # type: ignore[arg-type]


def _communicators(pipeline: Pipeline, position: dict[str, int]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for c in pipeline.communicators:
        members = [position.get(name, -1) for name in c.devices]
        if not members or min(members) < 0 or len(set(members)) != len(members):
            raise GpuError(
                f"communicator {c.name!r} must name distinct devices of the pipeline "
                f"(it names {', '.join(c.devices) or 'none'})"
            )
        out[c.name] = members
    return out


def _collective(
    op: MultiOp,
    comm: str | None,
    root: str | None,
    nbytes: int,
    comms: dict[str, list[int]],
    names: list[str],
) -> MultiOp:
    members = comms.get(comm or "")
    if members is None:
        raise GpuError(f"op {op.index}: its {op.kind} names no communicator of the pipeline")
    if op.device not in members:
        raise GpuError(
            f"op {op.index}: {names[op.device]} issues a {op.kind} on communicator {comm!r}, "
            "which it is not a member of"
        )
    n = len(members)
    root_rank = 0
    if root is not None:
        if root not in names or names.index(root) not in members:
            raise GpuError(
                f"op {op.index}: broadcast root {root!r} is not in communicator {comm!r}"
            )
        root_rank = members.index(names.index(root))
    whole = max(n, nbytes // (ELEMENT_BYTES * n) * n) * ELEMENT_BYTES  # divisible by n
    part = whole // n
    send, recv = {
        "all_reduce": (whole, whole),
        "broadcast": (whole, whole),
        "reduce_scatter": (whole, part),
        "all_gather": (part, whole),
    }[op.kind]
    count = {"reduce_scatter": part, "all_gather": part}.get(op.kind, whole) // ELEMENT_BYTES
    return _replace(
        op, comm=comm, rank=members.index(op.device), nranks=n, root=root_rank,
        send_bytes=send, recv_bytes=recv, count=count,
    )  # fmt: skip


def _check_instances(ops: list[MultiOp], comms: dict[str, list[int]], names: list[str]) -> None:
    """Every member issues the same collectives of each communicator, in the same order, with
    the same kind, size and root: otherwise NCCL would wait forever for the missing rank."""
    seen: dict[tuple[str, int], dict[int, MultiOp]] = {}
    for op in ops:
        if op.comm is not None:
            seen.setdefault((op.comm, op.instance), {})[op.device] = op
    for (comm, k), by_device in seen.items():
        missing = [names[d] for d in comms[comm] if d not in by_device]
        if missing:
            first = next(iter(by_device.values()))
            raise GpuError(
                f"op {first.index}: collective {k + 1} of communicator {comm!r} is never issued "
                f"by {', '.join(missing)}: every member must issue it, or NCCL waits forever"
            )
        shapes = {(o.kind, o.count, o.root) for o in by_device.values()}
        if len(shapes) > 1:
            first = min(by_device.values(), key=lambda o: o.index)
            raise GpuError(
                f"op {first.index}: the members of communicator {comm!r} disagree on its "
                f"collective {k + 1} (kind, bytes or root must be the same on every device)"
            )


def check_multi_memory(
    plan: MultiPlan, infos: list[DeviceInfo], host_available: int | None = None
) -> None:
    """Refuse, before allocating anything, a plan that needs more memory than a device has,
    or more host memory (every device's pinned and pageable buffers) than is free."""
    if host_available is not None:
        host = sum(p.pinned_bytes + p.pageable_bytes for p in plan.plans)
        usable = max(0, host_available - HOST_RESERVE_BYTES)
        if host > usable:
            raise GpuError(
                f"this pipeline needs {gib(host)} of host memory (pinned and pageable, all "
                f"devices), {gib(usable)} is free"
            )
    for d, info in enumerate(infos):
        need = plan.device_bytes(d)
        if need > info.free_bytes:
            raise GpuError(
                f"this pipeline needs {gib(need)} of device memory on {plan.devices[d]}, "
                f"{gib(info.free_bytes)} is free"
            )
