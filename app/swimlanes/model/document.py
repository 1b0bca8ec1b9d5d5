"""The pipeline document: streams and the host program (an ordered list of CUDA API calls).

Issue order is list order. The lane view is the program grouped by stream. Keys that this
version does not know are kept in ``extra`` so that saving never loses them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields, replace
from typing import Any

from swimlanes.model.op_kinds import REGISTRY, kinds_where

FORMAT_NAME = "swimlanes-pipeline"
FORMAT_VERSION = 1

DEFAULT_STREAM = "default"

STREAM_KINDS: tuple[str, ...] = ("legacy_default", "per_thread_default", "blocking", "non_blocking")

COPY_OPS: tuple[str, ...] = ("h2d", "d2h", "d2d")
#: A copy between two devices' memories (cudaMemcpyPeerAsync), over NVLink or PCIe.
PEER_COPY = "peer_copy"
#: NCCL collectives: one op per participating device's stream, on a communicator.
COLLECTIVE_OPS: tuple[str, ...] = ("all_reduce", "reduce_scatter", "all_gather", "broadcast")
#: Ops that involve more than one device: they need a multi-device preset to be meaningful.
MULTI_DEVICE_OPS: tuple[str, ...] = (PEER_COPY, *COLLECTIVE_OPS)
HOST_COPY_OPS: tuple[str, ...] = ("h2d", "d2h")
EVENT_OPS: tuple[str, ...] = ("event_record", "event_wait", "event_sync")
#: Ops that are enqueued on a stream and do work or ordering there.
STREAM_OPS: tuple[str, ...] = kinds_where(on_stream=True)
#: Ops that only involve the host thread (and maybe wait on the device).
HOST_OPS: tuple[str, ...] = kinds_where(on_stream=False)
#: Every kind, in registry order (a timeline's ``kind`` column indexes this tuple).
OP_KINDS: tuple[str, ...] = tuple(k.name for k in REGISTRY)
HOST_MEMORY_KINDS: tuple[str, ...] = ("pinned", "pageable")

# -- Limits ----------------------------------------------------------------------------------
# What a pipeline may hold: the validator refuses more (naming the JSON path and the limit),
# the editor's inspector refuses the same values, and so every file that loads can be simulated.
# The simulator counts time in int64 nanoseconds and uses 2**62 ns as "never", so every time
# in a simulation must stay below 2**62 ns. The op count and the time one op may take are chosen
# so that the whole program, op after op, stays far below that: MAX_OPS * MAX_DURATION_US is
# 1.05e18 ns < 2**60 ns, a quarter of the range, which leaves room for a device preset's own
# per-call costs and latencies (bounded in engine/presets.py) and for copies slowed by copies
# in the other direction. Times a preset derives from sizes (bytes / bandwidth, FLOPs / peak) are
# checked against the same per-op limit when the simulation is planned (engine/plan.py).

#: Ops in one program (about 360 MB of document in memory; the simulator takes ~5 s per 1e6).
MAX_OPS = 1 << 20
#: Declared streams (the editor shows one lane each; real programs use a few dozen).
MAX_STREAMS = 1024
#: The longest time one op may take, in microseconds (1,000 s): ``duration_us``, ``block_us``
#: and a kernel's total block time ``blocks * block_us`` (its time on a GPU that runs one
#: block at a time, the worst case of any preset).
MAX_DURATION_US = 1e9
#: The largest copy, memset, allocation or kernel memory traffic: 1 TiB (2**40 bytes). At the
#: slowest built-in preset's rate (3 GB/s) such a copy takes 367 s, under MAX_DURATION_US.
MAX_BYTES = 1 << 40
#: The most floating-point operations one kernel may do (roofline timing).
MAX_FLOPS = 1e15
#: Thread blocks of one kernel: CUDA's own grid limit (gridDim.x <= 2**31 - 1).
MAX_BLOCKS = (1 << 31) - 1
#: Threads of one block: CUDA's limit on every GPU since Fermi.
MAX_THREADS_PER_BLOCK = 1024
#: A kernel's ``blocks_per_sm`` residency override (2048 threads per SM at most, one each).
MAX_BLOCKS_PER_SM = 2048
#: Declared devices (one host thread and one set of engines each; NCCL's largest single-node
#: systems have 8 GPUs, so 64 leaves room for a rack of them).
MAX_DEVICES = 64
#: Declared host threads (each issues its own ops; a real program has a few dozen at most).
MAX_HOST_THREADS = 256
#: Declared communicators (each a set of devices; all subsets of 8 devices are 255).
MAX_COMMUNICATORS = 1024
#: Stream priorities are C ints in CUDA.
MIN_PRIORITY, MAX_PRIORITY = -(1 << 31), (1 << 31) - 1
#: Characters of a stream, event or pipeline name, or an op label.
MAX_NAME_CHARS = 256
#: Characters of the ``device`` key (a preset name or a preset file's path: PATH_MAX).
MAX_DEVICE_CHARS = 4096
#: Characters of the ``description`` and ``lesson`` texts.
MAX_TEXT_CHARS = 65536
#: Arrays and objects inside each other, anywhere in the file (a pipeline needs 4).
MAX_JSON_DEPTH = 64
#: Integer literals anywhere in the file must fit in 64 bits (signed).
MIN_JSON_INT, MAX_JSON_INT = -(1 << 63), (1 << 63) - 1

# What each op is called in CUDA; used by tooltips, the host-program view and code export.
CUDA_CALLS: dict[str, str] = {k.name: k.cuda_call for k in REGISTRY}

#: The device of a single-device pipeline, and the first device of any pipeline that declares
#: none: every stream and host op without a ``device`` belongs to the first device.
DEFAULT_DEVICE = "gpu0"

_uids = itertools.count(1)


def _next_uid() -> int:
    return next(_uids)


@dataclass
class Stream:
    """A CUDA stream. ``priority`` follows CUDA: a lower number is a higher priority."""

    name: str
    kind: str = "blocking"
    priority: int = 0
    #: The device the stream belongs to (None: the pipeline's first device).
    device: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: The host thread the stream belongs to (None: its device's first thread). A
    #: per-thread default stream is that thread's own; the ops of any other stream are issued
    #: by it unless an op names another thread. The legacy default stream has none.
    host_thread: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "priority": self.priority}
        if self.device is not None:
            out["device"] = self.device
        if self.host_thread is not None:
            out["host_thread"] = self.host_thread
        out.update(self.extra)
        return out


@dataclass
class HostThread:
    """One host thread of the program: it issues its own ops in program order, and its
    synchronisations block only it. ``device`` is its current device (``cudaSetDevice``;
    None: the pipeline's first device). A pipeline that declares no host threads has one per
    device, named after the device."""

    name: str
    device: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.device is not None:
            out["device"] = self.device
        out.update(self.extra)
        return out


@dataclass
class Device:
    """One GPU of a multi-device pipeline; each has its own engines and its own host thread
    (one process or thread per GPU, as real programs have). ``name`` is how streams, host ops,
    peer copies and communicators refer to it; devices are numbered in declaration order."""

    name: str
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **self.extra}


@dataclass
class Communicator:
    """An NCCL communicator: the devices (ranks, in this order) its collectives run across."""

    name: str
    devices: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "devices": list(self.devices), **self.extra}


@dataclass(slots=True)
class Op:
    """One CUDA API call of the host program.

    Fields left ``None`` were absent from the file and take their defaults through the
    ``effective_*`` properties, so that a saved file keeps the shape it was loaded with.
    ``uid`` is a per-process identity for selection and undo; it is never saved.
    (Slots: a captured program holds up to millions of ops; without a dict each, 1e6 random ops
    took 348 MB instead of 412, traced by tracemalloc.)
    """

    op: str
    stream: str | None = None
    label: str | None = None
    bytes: int | None = None
    host_memory: str | None = None
    is_async: bool | None = None
    duration_us: float | None = None
    blocks: int | None = None
    threads: int | None = None
    block_us: float | None = None
    flops: float | None = None
    event: str | None = None
    #: The call's own host time in us, measured (a captured or imported program's): it replaces
    #: the device preset's issue cost for this call, so that a rebuilt program keeps its pace
    #: (an async pageable H2D's covers its staging too: see ``stages_on_call``).
    call_us: float | None = None
    #: A pageable D2H's host time from the end of its DMA to its call's return (copying the
    #: last chunk out of the driver's staging buffer, then returning), measured (a captured
    #: program's): it replaces the preset's copy-out and return for this call.
    copy_out_us: float | None = None
    #: The host thread (named by its device) that issues a host-only op (``host``,
    #: ``event_sync``, ``device_sync``, ``malloc``, ``free``); None: the first device's. Ops on
    #: a stream are issued by the thread of the stream's device.
    device: str | None = None
    #: A peer copy's source and destination devices (None: the stream's device).
    src_device: str | None = None
    dst_device: str | None = None
    #: A collective's communicator (a name from the pipeline's ``communicators``).
    communicator: str | None = None
    #: A broadcast's root device (None: the communicator's first device).
    root: str | None = None
    #: The host thread that issues the op (None: its stream's thread, else its device's first).
    host_thread: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    uid: int = field(default_factory=_next_uid, compare=False, repr=False)

    # -- defaults ---------------------------------------------------------------------------
    @property
    def stream_name(self) -> str | None:
        """The stream the op is enqueued on (the legacy default when none is given)."""
        if self.op in STREAM_OPS or self.op == "memset":
            return self.stream or DEFAULT_STREAM
        return self.stream

    @property
    def effective_async(self) -> bool:
        return True if self.is_async is None else self.is_async

    @property
    def effective_host_memory(self) -> str:
        return self.host_memory or "pinned"

    @property
    def stages_on_call(self) -> bool:
        """An async H2D from pageable memory: its call returns once the host has staged the
        data, so a measured ``call_us`` is the whole call, staging included."""
        return (
            self.op == "h2d" and self.effective_host_memory == "pageable" and self.effective_async
        )

    @property
    def display_label(self) -> str:
        """The op's label, or a short name made from its kind."""
        if self.label:
            return self.label
        if self.op in EVENT_OPS and self.event:
            return f"{self.op.replace('_', ' ')} {self.event}"
        return self.op.upper() if self.op in COPY_OPS else self.op.replace("_", " ")

    def copy(self) -> Op:
        """A copy with a fresh uid (duplicate / paste)."""
        return replace(self, extra=dict(self.extra), uid=_next_uid())

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op}
        for f in fields(self):
            if f.name in ("op", "extra", "uid"):
                continue
            value = getattr(self, f.name)
            if value is None:
                continue
            out["async" if f.name == "is_async" else f.name] = value
        out.update(self.extra)
        return out


@dataclass
class Pipeline:
    """A whole document: name, declared streams and the host program in issue order."""

    name: str = "untitled"
    streams: list[Stream] = field(default_factory=list)
    program: list[Op] = field(default_factory=list)
    #: Declared devices (empty: one device, :data:`DEFAULT_DEVICE`).
    devices: list[Device] = field(default_factory=list)
    communicators: list[Communicator] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    #: Declared host threads (empty: one per device, named after it).
    host_threads: list[HostThread] = field(default_factory=list)

    # -- devices --------------------------------------------------------------------------------
    @property
    def device_names(self) -> list[str]:
        """The devices in order; a pipeline that declares none has one, :data:`DEFAULT_DEVICE`."""
        return [d.name for d in self.devices] or [DEFAULT_DEVICE]

    @property
    def is_multi_device(self) -> bool:
        """Whether the pipeline declares more than one device."""
        return len(self.devices) > 1

    def stream_device(self, stream_name: str | None) -> str:
        """The device a stream belongs to (the first device for unknown or unset ones)."""
        stream = self.stream(stream_name) if stream_name is not None else None
        if stream is not None and stream.device is not None:
            return stream.device
        return self.device_names[0]

    def op_device(self, op: Op) -> str:
        """The device whose host thread issues ``op``: its stream's, else its own ``device``
        (or its host thread's)."""
        name = op.stream_name
        if name is not None:
            return self.stream_device(name)
        if op.device is None and op.host_thread is not None:
            return self.thread_device(op.host_thread)
        return op.device or self.device_names[0]

    # -- host threads ---------------------------------------------------------------------------
    def thread_list(self) -> list[tuple[str, str]]:
        """Every host thread as (name, device), grouped by device in device order: the
        declared threads of each device, or one named after the device where it has none."""
        first = self.device_names[0]
        out: list[tuple[str, str]] = []
        for device in self.device_names:
            own = [t.name for t in self.host_threads if (t.device or first) == device]
            out += [(name, device) for name in own] or [(device, device)]
        return out

    @property
    def is_multi_thread(self) -> bool:
        """Whether some device has more than one host thread."""
        return len(self.thread_list()) > len(self.device_names)

    def thread_device(self, thread: str) -> str:
        """The device of host thread ``thread`` (the first device for unknown names)."""
        first = self.device_names[0]
        for t in self.host_threads:
            if t.name == thread:
                return t.device or first
        return thread if thread in self.device_names else first

    def device_thread(self, device: str) -> str:
        """The first host thread of ``device`` (the one its ops default to)."""
        return next((name for name, d in self.thread_list() if d == device), device)

    def stream_thread(self, stream_name: str) -> str:
        """The host thread stream ``stream_name`` belongs to (its device's first by default)."""
        stream = self.stream(stream_name)
        if stream is not None and stream.host_thread is not None:
            return stream.host_thread
        return self.device_thread(self.stream_device(stream_name))

    def op_thread(self, op: Op) -> str:
        """The host thread that issues ``op``: its own ``host_thread``, else its stream's,
        else its device's first."""
        if op.host_thread is not None:
            return op.host_thread
        name = op.stream_name
        if name is not None:
            return self.stream_thread(name)
        return self.device_thread(op.device or self.device_names[0])

    def communicator(self, name: str | None) -> Communicator | None:
        return next((c for c in self.communicators if c.name == name), None)

    @property
    def all_streams(self) -> list[Stream]:
        """Declared streams with the implicit legacy default stream first if undeclared."""
        if any(s.name == DEFAULT_STREAM for s in self.streams):
            return list(self.streams)
        return [Stream(DEFAULT_STREAM, "legacy_default", 0), *self.streams]

    def stream(self, name: str) -> Stream | None:
        return next((s for s in self.all_streams if s.name == name), None)

    def op_index(self, uid: int) -> int:
        """Program index of the op with this uid (ValueError if absent)."""
        for i, op in enumerate(self.program):
            if op.uid == uid:
                return i
        raise ValueError(f"no op with uid {uid}")

    def events(self) -> list[str]:
        """Event names in order of first use."""
        seen: dict[str, None] = {}
        for op in self.program:
            if op.event:
                seen.setdefault(op.event)
        return list(seen)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "name": self.name,
            "streams": [s.to_dict() for s in self.streams],
            "program": [op.to_dict() for op in self.program],
        }
        # Written only when declared, so that a single-device file keeps its shape.
        if self.devices:
            out["devices"] = [d.to_dict() for d in self.devices]
        if self.communicators:
            out["communicators"] = [c.to_dict() for c in self.communicators]
        if self.host_threads:
            out["host_threads"] = [t.to_dict() for t in self.host_threads]
        out.update(self.extra)
        return out

    def copy(self) -> Pipeline:
        """A deep copy that keeps op uids (for snapshots)."""
        return Pipeline(
            name=self.name,
            streams=[replace(s, extra=dict(s.extra)) for s in self.streams],
            program=[replace(op, extra=dict(op.extra)) for op in self.program],
            devices=[replace(d, extra=dict(d.extra)) for d in self.devices],
            communicators=[
                replace(c, devices=list(c.devices), extra=dict(c.extra)) for c in self.communicators
            ],
            extra=dict(self.extra),
            host_threads=[replace(t, extra=dict(t.extra)) for t in self.host_threads],
        )
