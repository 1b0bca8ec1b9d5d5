"""The registry of op kinds: one frozen :class:`OpKind` per kind of CUDA API call.

Every fact about a kind that more than one layer needs lives here once: where it runs, whether
it is enqueued on a stream, which document keys it takes, what it is called in CUDA and in the
UI, its legend category and colour, and its help text. The tuples of ``model.document``
(``OP_KINDS``, ``STREAM_OPS``, ...) are derived from this table, in this order.

Layers that act per kind (the simulator, the executor, the code emitters, the inspector)
keep their own table keyed by kind and register it with :func:`register_layer`;
``tests/test_op_kind_coverage.py`` checks that every registered layer covers every kind, so a
new kind cannot be half added. CONTRIBUTING.md gives the recipe for adding one.

No Qt and no numpy here: the model layer is imported by everything else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

#: Where an op's device work runs. ``none``: it takes no engine time (event ops, syncs and
#: host-only ops); ``host``: the host thread itself is busy.
ENGINES: tuple[str, ...] = (
    "copy_h2d",
    "copy_d2h",
    "sms",
    "callback",
    "link",
    "collective",
    "none",
    "host",
)

# Okabe & Ito (2008): distinguishable with the common colour-vision deficiencies.
_SKY_BLUE, _ORANGE, _YELLOW, _GREY = "#56B4E9", "#E69F00", "#F0E442", "#999999"
_GREEN, _PURPLE, _VERMILLION, _BLUE = "#009E73", "#CC79A7", "#D55E00", "#0072B2"


@dataclass(frozen=True)
class OpKind:
    """What Swimlanes knows of one kind of op.

    ``fields`` are the document keys the kind takes besides ``op`` and :data:`COMMON_FIELDS`
    (which every kind takes); ``required`` those it cannot do without. ``host_blocking``:
    ``"never"``, ``"always"`` (the host waits for device work: syncs, ``free``), ``"busy"`` (the
    host thread works: ``host``) or ``"depends"`` (copies: on ``async`` and host memory).
    """

    name: str
    title: str
    category: str
    colour: str
    engine: str
    on_stream: bool
    host_blocking: str
    fields: tuple[str, ...]
    required: tuple[str, ...]
    cuda_call: str
    help: str
    multi_device: bool = False
    #: What a new op of this kind holds (the editor's palette drop), as (field, value) pairs of
    #: ``Op`` attributes: its stream, event, label and devices depend on the document.
    defaults: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"{self.name}: unknown engine {self.engine!r}")
        missing = set(self.required) - set(self.fields) - set(COMMON_FIELDS)
        if missing:
            raise ValueError(f"{self.name}: required keys {sorted(missing)} are not its fields")


#: Keys every kind takes: ``bytes`` and ``duration_us`` (a measured time that overrides the
#: preset's model) mean something for every op that does work.
COMMON_FIELDS: tuple[str, ...] = ("label", "call_us", "bytes", "duration_us")

_COPY_FIELDS = ("stream", "host_memory", "async")
_COLLECTIVE_FIELDS = ("stream", "communicator")
_COLLECTIVE_HELP = (
    "Runs across the communicator's devices: every device issues it on one of its streams, "
    "and it starts when the last of them reaches it. It takes some of each device's SMs "
    "(NCCL's channels) and the links between them."
)

#: Every op kind, in the order of the document's ``OP_KINDS`` (a timeline's ``kind`` column
#: indexes it, so new kinds are appended, never inserted).
_MIB = 1 << 20
#: A new copy's, memset's or allocation's size; a new collective's is PyTorch DDP's default
#: gradient bucket.
_NEW_BYTES, _NEW_COLLECTIVE_BYTES = 64 * _MIB, 25 * _MIB
_NEW_HOST_COPY = (("bytes", _NEW_BYTES), ("host_memory", "pinned"), ("is_async", True))
_NEW_DEVICE_COPY = (("bytes", _NEW_BYTES), ("is_async", True))

REGISTRY: tuple[OpKind, ...] = (
    OpKind(
        "h2d", "H2D copy", "H2D copy", _SKY_BLUE, "copy_h2d", True, "depends", _COPY_FIELDS,
        ("bytes",), "cudaMemcpyAsync(..., cudaMemcpyHostToDevice)",
        "Copies host memory to the device on a copy engine; from pageable memory the host "
        "stages the data first.",
        defaults=_NEW_HOST_COPY,
    ),
    OpKind(
        "d2h", "D2H copy", "D2H copy", _ORANGE, "copy_d2h", True, "depends",
        (*_COPY_FIELDS, "copy_out_us"),
        ("bytes",), "cudaMemcpyAsync(..., cudaMemcpyDeviceToHost)",
        "Copies device memory to the host on a copy engine; to pageable memory the host "
        "waits until it is done.",
        defaults=_NEW_HOST_COPY,
    ),
    OpKind(
        "d2d", "D2D copy", "D2D copy", _YELLOW, "sms", True, "depends",
        ("stream", "async"), ("bytes",), "cudaMemcpyAsync(..., cudaMemcpyDeviceToDevice)",
        "Copies between two device buffers, inside device memory.",
        defaults=_NEW_DEVICE_COPY,
    ),
    OpKind(
        "memset", "Memset", "Memset", _GREY, "sms", True, "depends",
        ("stream", "async"), ("bytes",), "cudaMemsetAsync",
        "Fills device memory with a byte value, on the stream.",
        defaults=_NEW_DEVICE_COPY,
    ),
    OpKind(
        "kernel", "Kernel", "Kernel", _GREEN, "sms", True, "never",
        ("stream", "blocks", "threads", "block_us", "flops", "blocks_per_sm"),
        ("blocks", "threads"),
        "kernel<<<grid, block, 0, stream>>>",
        "Launches a grid of thread blocks that the SMs run; concurrent kernels share the SMs.",
        defaults=(("blocks", 1024), ("threads", 256), ("duration_us", 100.0)),
    ),
    OpKind(
        "event_record", "Event record", "Event", _PURPLE, "none", True, "never",
        ("stream", "event"), ("event",), "cudaEventRecord",
        "Marks a point in the stream; the event completes when the stream's earlier work is "
        "done.",
    ),
    OpKind(
        "event_wait", "Event wait", "Event", _PURPLE, "none", True, "never",
        ("stream", "event"), ("event",), "cudaStreamWaitEvent",
        "Makes later work in the stream wait until the event completes, without blocking the "
        "host.",
    ),
    OpKind(
        "event_sync", "Event sync", "Sync", _VERMILLION, "none", False, "always",
        ("event", "device"), ("event",), "cudaEventSynchronize",
        "Blocks the host thread until the event completes.",
    ),
    OpKind(
        "stream_sync", "Stream sync", "Sync", _VERMILLION, "none", True, "always",
        ("stream",), (), "cudaStreamSynchronize",
        "Blocks the host thread until all work in the stream is done.",
    ),
    OpKind(
        "device_sync", "Device sync", "Sync", _VERMILLION, "none", False, "always",
        ("device",), (), "cudaDeviceSynchronize",
        "Blocks the host thread until all work on the device is done.",
    ),
    OpKind(
        "host", "Host work", "Host work", _BLUE, "host", False, "busy",
        ("device",), ("duration_us",), "host work (CPU busy)",
        "The host thread is busy with CPU work for a while and issues nothing.",
        defaults=(("duration_us", 10.0),),
    ),
    OpKind(
        "host_func", "Host function", "Host function", _BLUE, "callback", True, "never",
        ("stream",), (), "cudaLaunchHostFunc",
        "Runs a host function in stream order; the stream waits for it to return.",
        defaults=(("duration_us", 10.0),),
    ),
    OpKind(
        "malloc", "Malloc", "Memory", "#4D4D4D", "none", False, "never",
        ("device",), (), "cudaMalloc",
        "Allocates device memory; it synchronises the device implicitly.",
        defaults=(("bytes", _NEW_BYTES),),
    ),
    OpKind(
        "free", "Free", "Memory", "#4D4D4D", "none", False, "always",
        ("device",), (), "cudaFree",
        "Frees device memory; it synchronises the device implicitly.",
    ),
    OpKind(
        "peer_copy", "Peer copy", "Peer copy", "#8FD3F5", "link", True, "never",
        ("stream", "src_device", "dst_device"), ("bytes",),
        "cudaMemcpyPeerAsync",
        "Copies from one device's memory to another's over NVLink or PCIe, on a copy engine "
        "at each end; a copy from a device to itself stays in its memory.",
        multi_device=True,
        defaults=(("bytes", _NEW_BYTES),),
    ),
    OpKind(
        "all_reduce", "All-reduce", "Collective", "#A05A2C", "collective", True, "never",
        _COLLECTIVE_FIELDS, ("bytes", "communicator"), "ncclAllReduce",
        "Sums a buffer across devices and leaves the sum on every one. " + _COLLECTIVE_HELP,
        multi_device=True,
        defaults=(("bytes", _NEW_COLLECTIVE_BYTES),),
    ),
    OpKind(
        "reduce_scatter", "Reduce-scatter", "Collective", "#A05A2C", "collective", True,
        "never", _COLLECTIVE_FIELDS, ("bytes", "communicator"), "ncclReduceScatter",
        "Sums a buffer across devices and leaves one slice of the sum on each. "
        + _COLLECTIVE_HELP,
        multi_device=True,
        defaults=(("bytes", _NEW_COLLECTIVE_BYTES),),
    ),
    OpKind(
        "all_gather", "All-gather", "Collective", "#A05A2C", "collective", True, "never",
        _COLLECTIVE_FIELDS, ("bytes", "communicator"), "ncclAllGather",
        "Gathers every device's slice into a whole buffer on every device (bytes: the whole "
        "buffer). " + _COLLECTIVE_HELP,
        multi_device=True,
        defaults=(("bytes", _NEW_COLLECTIVE_BYTES),),
    ),
    OpKind(
        "broadcast", "Broadcast", "Collective", "#A05A2C", "collective", True, "never",
        (*_COLLECTIVE_FIELDS, "root"), ("bytes", "communicator"), "ncclBroadcast",
        "Copies the root device's buffer to every device. " + _COLLECTIVE_HELP,
        multi_device=True,
        defaults=(("bytes", _NEW_COLLECTIVE_BYTES),),
    ),
)  # fmt: skip

BY_NAME: dict[str, OpKind] = {k.name: k for k in REGISTRY}

#: The order the editor's palette (and its kind menus) list the kinds in: data movement,
#: compute, ordering, host, then the multi-device kinds. Every kind has its place here
#: (tests/test_op_kind_coverage.py checks it).
PALETTE_ORDER: tuple[str, ...] = (
    "h2d", "d2h", "d2d", "memset", "kernel", "event_record", "event_wait", "stream_sync",
    "event_sync", "device_sync", "host", "host_func", "malloc", "free",
    "peer_copy", "all_reduce", "reduce_scatter", "all_gather", "broadcast",
)  # fmt: skip

#: Per layer, the kinds it handles; see :func:`register_layer`.
_LAYERS: dict[str, frozenset[str]] = {}


def op_kind(name: str) -> OpKind:
    """The spec of kind ``name`` (KeyError names the kinds there are)."""
    try:
        return BY_NAME[name]
    except KeyError:
        raise KeyError(f"unknown op kind {name!r}: one of {', '.join(BY_NAME)}") from None


def kinds_where(**conditions: object) -> tuple[str, ...]:
    """Names of the kinds whose attributes equal ``conditions``, in registry order.

    ``kinds_where(engine="sms")`` gives the kinds the SMs run."""
    return tuple(
        k.name
        for k in REGISTRY
        if all(getattr(k, attr) == value for attr, value in conditions.items())
    )


def register_layer(layer: str, kinds: Iterable[str]) -> None:
    """Declare that ``layer`` (say ``"executor"``) handles ``kinds``: its per-kind table's keys.

    Called by each layer at import; the coverage test imports the layers and checks that each
    one's kinds are exactly the registry's."""
    _LAYERS[layer] = frozenset(kinds)


def registered_layers() -> dict[str, frozenset[str]]:
    """The layers registered so far (those whose modules were imported), with their kinds."""
    return dict(_LAYERS)
