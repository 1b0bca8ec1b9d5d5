"""The pipeline document: streams and the host program (an ordered list of CUDA API calls).

Issue order is list order. The lane view is the program grouped by stream. Keys that this
version does not know are kept in ``extra`` so that saving never loses them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, fields, replace
from typing import Any

FORMAT_NAME = "swimlanes-pipeline"
FORMAT_VERSION = 1

DEFAULT_STREAM = "default"

STREAM_KINDS: tuple[str, ...] = ("legacy_default", "per_thread_default", "blocking", "non_blocking")

COPY_OPS: tuple[str, ...] = ("h2d", "d2h", "d2d")
HOST_COPY_OPS: tuple[str, ...] = ("h2d", "d2h")
EVENT_OPS: tuple[str, ...] = ("event_record", "event_wait", "event_sync")
#: Ops that are enqueued on a stream and do work or ordering there.
STREAM_OPS: tuple[str, ...] = (
    "h2d",
    "d2h",
    "d2d",
    "memset",
    "kernel",
    "event_record",
    "event_wait",
    "stream_sync",
    "host_func",
)
#: Ops that only involve the host thread (and maybe wait on the device).
HOST_OPS: tuple[str, ...] = ("event_sync", "device_sync", "host", "malloc", "free")
OP_KINDS: tuple[str, ...] = (
    "h2d",
    "d2h",
    "d2d",
    "memset",
    "kernel",
    "event_record",
    "event_wait",
    "event_sync",
    "stream_sync",
    "device_sync",
    "host",
    "host_func",
    "malloc",
    "free",
)
HOST_MEMORY_KINDS: tuple[str, ...] = ("pinned", "pageable")

# What each op is called in CUDA; used by tooltips, the host-program view and code export.
CUDA_CALLS: dict[str, str] = {
    "h2d": "cudaMemcpyAsync(..., cudaMemcpyHostToDevice)",
    "d2h": "cudaMemcpyAsync(..., cudaMemcpyDeviceToHost)",
    "d2d": "cudaMemcpyAsync(..., cudaMemcpyDeviceToDevice)",
    "memset": "cudaMemsetAsync",
    "kernel": "kernel<<<grid, block, 0, stream>>>",
    "event_record": "cudaEventRecord",
    "event_wait": "cudaStreamWaitEvent",
    "event_sync": "cudaEventSynchronize",
    "stream_sync": "cudaStreamSynchronize",
    "device_sync": "cudaDeviceSynchronize",
    "host": "host work (CPU busy)",
    "host_func": "cudaLaunchHostFunc",
    "malloc": "cudaMalloc",
    "free": "cudaFree",
}

_uids = itertools.count(1)


def _next_uid() -> int:
    return next(_uids)


@dataclass
class Stream:
    """A CUDA stream. ``priority`` follows CUDA: a lower number is a higher priority."""

    name: str
    kind: str = "blocking"
    priority: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "priority": self.priority}
        out.update(self.extra)
        return out


@dataclass
class Op:
    """One CUDA API call of the host program.

    Fields left ``None`` were absent from the file and take their defaults through the
    ``effective_*`` properties, so that a saved file keeps the shape it was loaded with.
    ``uid`` is a per-process identity for selection and undo; it is never saved.
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
    extra: dict[str, Any] = field(default_factory=dict)

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
        out.update(self.extra)
        return out

    def copy(self) -> Pipeline:
        """A deep copy that keeps op uids (for snapshots)."""
        return Pipeline(
            name=self.name,
            streams=[replace(s, extra=dict(s.extra)) for s in self.streams],
            program=[replace(op, extra=dict(op.extra)) for op in self.program],
            extra=dict(self.extra),
        )
