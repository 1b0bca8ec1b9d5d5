"""Defaults for new ops and streams, and field conversion when an op changes kind or a copy
its host memory.

The editor asks these for what a dropped op, a new stream or a retyped op should hold. The
field defaults of each kind are one table, :data:`NEW_OP_FIELDS`, registered with the op-kind
registry (a kind without defaults fails the coverage test, not a palette drop).
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from swimlanes.model.document import (
    COLLECTIVE_OPS,
    COPY_OPS,
    DEFAULT_STREAM,
    EVENT_OPS,
    HOST_COPY_OPS,
    OP_KINDS,
    PEER_COPY,
    STREAM_OPS,
    Op,
    Pipeline,
)
from swimlanes.model.op_kinds import REGISTRY, op_kind

#: Per kind, the Op fields a new op of that kind gets (besides its stream, event, label and
#: devices, which depend on the document: see :func:`new_op`): each kind's ``defaults`` in
#: the op-kind registry.
NEW_OP_FIELDS: dict[str, dict[str, Any]] = {k.name: dict(k.defaults) for k in REGISTRY}
#: The Op attributes that name devices or a communicator.
DEVICE_FIELDS: tuple[str, ...] = ("device", "src_device", "dst_device", "communicator", "root")
#: The Op attributes an edit may change (not its identity or unknown keys).
OP_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Op) if f.name not in ("uid", "extra"))


class EditError(ValueError):
    """An edit that was refused; the message says why in the user's terms."""


def takes_stream(kind: str) -> bool:
    """Whether an op of this kind is enqueued on a stream."""
    return kind in STREAM_OPS


def _latest_recorded_event(pipeline: Pipeline, before: int | None = None) -> str | None:
    program = pipeline.program if before is None else pipeline.program[:before]
    for op in reversed(program):
        if op.op == "event_record" and op.event:
            return op.event
    return None


def new_event_name(pipeline: Pipeline) -> str:
    """An event name not used yet: e0, e1, ..."""
    used = set(pipeline.events())
    n = 0
    while f"e{n}" in used:
        n += 1
    return f"e{n}"


def converted_fields(op: Op, kind: str, pipeline: Pipeline) -> dict[str, Any]:
    """Field values for ``op`` retyped to ``kind``: keeps what still means something (label,
    stream, size, event, duration) and fills what the new kind needs with sane defaults."""
    if kind not in OP_KINDS:
        raise EditError(f"unknown op kind {kind!r}")
    out: dict[str, Any] = {name: None for name in OP_FIELDS}
    out.update(op=kind, label=op.label)
    if takes_stream(kind):
        out["stream"] = op.stream
    if kind in COPY_OPS or kind == "memset":
        out["bytes"] = op.bytes or NEW_OP_FIELDS[kind]["bytes"]
        if op.op in COPY_OPS or op.op == "memset":
            out["is_async"] = op.is_async
            # (a time measured or typed for another kind of copy does not describe this one)
            if kind == op.op:
                out["duration_us"] = op.duration_us
    if kind in HOST_COPY_OPS and op.op in HOST_COPY_OPS:
        out["host_memory"] = op.host_memory
    if kind == "kernel":
        out["blocks"] = op.blocks or 1024
        out["threads"] = op.threads or 256
        if op.op == "kernel":
            for name in ("duration_us", "block_us", "flops", "bytes"):
                out[name] = getattr(op, name)
        else:
            out["duration_us"] = op.duration_us or 100.0
    if kind == "host":
        out["duration_us"] = op.duration_us if op.duration_us is not None else 10.0
    elif kind == "host_func":
        out["duration_us"] = op.duration_us or 10.0
    if kind in EVENT_OPS:
        if op.event:
            out["event"] = op.event
        elif kind == "event_record":
            out["event"] = new_event_name(pipeline)
        else:
            out["event"] = _latest_recorded_event(pipeline) or new_event_name(pipeline)
    _convert_device_fields(op, kind, pipeline, out)
    return out


def host_memory_changes(op: Op, memory: str) -> dict[str, Any]:
    """The field changes that give copy ``op`` host ``memory`` (pinned or pageable).

    A copy's ``duration_us`` (a trace's measured time, or one typed in) was taken with the
    memory the copy had: a change of memory drops it, so that the model times the copy for
    the new memory (pinning a rebuilt pipeline's pageable copies then saves what the model
    says pinned memory saves, not nothing). Setting the memory it already has keeps it.
    """
    changes: dict[str, Any] = {"host_memory": memory}
    if memory != op.effective_host_memory:
        # (a measured copy-out is pageable memory's alone: a pinned copy has none)
        for key in ("duration_us", "copy_out_us"):
            if getattr(op, key) is not None:
                changes[key] = None
    return {**changes, **_staging_call_changes(op, replace(op, host_memory=memory))}


#: Kinds whose time follows their size (see :func:`size_changes`).
_SIZED_BY_BYTES = frozenset((*COPY_OPS, "memset", *COLLECTIVE_OPS))


def size_changes(op: Op, nbytes: int) -> dict[str, Any]:
    """The field changes that give ``op`` a size of ``nbytes``.

    A copy's, memset's or collective's measured times (``duration_us``, a pageable D2H's
    ``copy_out_us``, a staging call's ``call_us``) were taken at the size it had: a new size
    drops them, so that the model times the op at its new size (halving a captured program's
    copies then saves what the model says, not nothing). A kernel's bytes feed its roofline
    and it keeps its times; setting the size it already has keeps everything.
    """
    changes: dict[str, Any] = {"bytes": nbytes}
    if nbytes == op.bytes or op.op not in _SIZED_BY_BYTES:
        return changes
    for key in ("duration_us", "copy_out_us"):
        if getattr(op, key) is not None:
            changes[key] = None
    if op.call_us is not None and op.stages_on_call:
        changes["call_us"] = None
    return changes


def async_changes(op: Op, is_async: bool) -> dict[str, Any]:
    """The field changes that make copy ``op`` asynchronous or not (see
    :func:`_staging_call_changes`)."""
    changes: dict[str, Any] = {"is_async": is_async}
    return {**changes, **_staging_call_changes(op, replace(op, is_async=is_async))}


def _staging_call_changes(op: Op, edited: Op) -> dict[str, Any]:
    """An async pageable H2D's measured ``call_us`` is the whole call, its staging included
    (see :attr:`Op.stages_on_call`): an edit that makes a copy start or stop staging on its
    call drops it, so that the call costs what the preset says for the call it now is."""
    if op.call_us is not None and op.stages_on_call != edited.stages_on_call:
        return {"call_us": None}
    return {}


def _convert_device_fields(op: Op, kind: str, pipeline: Pipeline, out: dict[str, Any]) -> None:
    """The device keys of ``op`` retyped to ``kind``: kept where the new kind takes them, the
    rest filled as for a new op (a peer copy or a collective needs a size too)."""
    spec = op_kind(kind)
    for key in DEVICE_FIELDS:
        if key in spec.fields:
            out[key] = getattr(op, key)
    if kind == PEER_COPY or kind in COLLECTIVE_OPS:
        out["bytes"] = op.bytes or NEW_OP_FIELDS[kind]["bytes"]
    probe = Op(op=kind, **{key: out[key] for key in DEVICE_FIELDS})
    _set_devices(probe, pipeline, op.stream if takes_stream(op.op) else None)
    for key in DEVICE_FIELDS:
        out[key] = getattr(probe, key)


def new_stream_name(pipeline: Pipeline) -> str:
    """A stream name not used yet: s1, s2, ... (one set of the names: linear, not one pass
    over the streams per candidate)."""
    used = {s.name for s in pipeline.all_streams}
    n = 1
    while f"s{n}" in used:
        n += 1
    return f"s{n}"


def new_op(
    kind: str, pipeline: Pipeline, stream: str | None = None, index: int | None = None
) -> Op:
    """A new op of ``kind`` with sensible defaults, for palette drops.

    Copies are 64 MiB pinned async; kernels 1024 x 256 threads for 100 us; an event record
    gets a new event name, a wait or event sync the event most recently recorded before
    ``index`` (the insertion point; the end when None). A peer copy of 64 MiB goes from the
    stream's device to the next device; a collective of 25 MiB runs on the first
    communicator. A host-only op dropped on a lane is issued by that stream's device.
    """
    if kind not in OP_KINDS:
        raise EditError(f"unknown op kind {kind!r}")
    op = Op(op=kind, **NEW_OP_FIELDS[kind])
    if takes_stream(kind) and stream not in (None, DEFAULT_STREAM):
        op.stream = stream
    if kind == "kernel":
        op.label = _new_kernel_label(pipeline)
    if kind == "event_record":
        op.event = new_event_name(pipeline)
    elif kind in EVENT_OPS:
        op.event = _latest_recorded_event(pipeline, index) or new_event_name(pipeline)
    _set_devices(op, pipeline, stream)
    return op


def _set_devices(op: Op, pipeline: Pipeline, stream: str | None) -> None:
    """Fill the device keys a new or retyped ``op`` needs (only where they differ from the
    defaults, so that a single-device document keeps its shape)."""
    names = pipeline.device_names
    own = pipeline.stream_device(stream)
    if "device" in op_kind(op.op).fields and own != names[0]:
        op.device = own
    if op.op == PEER_COPY and len(names) > 1 and op.dst_device is None:
        op.dst_device = names[(names.index(own) + 1) % len(names)]
    if op.op in COLLECTIVE_OPS and op.communicator is None and pipeline.communicators:
        op.communicator = pipeline.communicators[0].name


def _new_kernel_label(pipeline: Pipeline) -> str:
    used = {op.label for op in pipeline.program}
    n = 0
    while f"K{n}" in used:
        n += 1
    return f"K{n}"


def _member_stream(pipeline: Pipeline, device: str, preferred: str | None) -> str | None:
    """A stream of ``device`` for a new collective: ``preferred`` if it is one, else the first
    declared stream of the device (the legacy default for the first device)."""
    if preferred is not None and pipeline.stream_device(preferred) == device:
        return None if preferred == DEFAULT_STREAM else preferred
    for s in pipeline.streams:
        if pipeline.stream_device(s.name) == device:
            return s.name
    if device == pipeline.device_names[0]:
        return None
    raise EditError(f"{device} has no stream for its part of the collective: add one first")


def new_ops(
    kind: str, pipeline: Pipeline, stream: str | None = None, index: int | None = None
) -> list[Op]:
    """The ops a palette drop of ``kind`` inserts: one :func:`new_op`, except for a collective,
    which every member device of its communicator must call: one op per member, on
    ``stream`` for the member it belongs to and on the first stream of each other member."""
    op = new_op(kind, pipeline, stream, index)
    if kind not in COLLECTIVE_OPS or op.communicator is None:
        return [op]
    comm = pipeline.communicator(op.communicator)
    assert comm is not None
    ops = []
    for device in comm.devices:
        member = op.copy()
        member.stream = _member_stream(pipeline, device, stream)
        ops.append(member)
    return ops
