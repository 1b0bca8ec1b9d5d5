"""Defaults for new ops and streams, and field conversion when an op changes kind.

The editor asks these for what a dropped op, a new stream or a retyped op should hold.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from swimlanes.model.document import (
    COPY_OPS,
    DEFAULT_STREAM,
    EVENT_OPS,
    HOST_COPY_OPS,
    OP_KINDS,
    STREAM_OPS,
    Op,
    Pipeline,
)

MIB = 1024 * 1024
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
        out["bytes"] = op.bytes or 64 * MIB
        if op.op in COPY_OPS or op.op == "memset":
            out["is_async"] = op.is_async
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
    return out


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
    ``index`` (the insertion point; the end when None).
    """
    if kind not in OP_KINDS:
        raise EditError(f"unknown op kind {kind!r}")
    op = Op(op=kind)
    if takes_stream(kind) and stream not in (None, DEFAULT_STREAM):
        op.stream = stream
    if kind in HOST_COPY_OPS:
        op.bytes, op.host_memory, op.is_async = 64 * MIB, "pinned", True
    elif kind == "d2d" or kind == "memset":
        op.bytes, op.is_async = 64 * MIB, True
    elif kind == "kernel":
        op.blocks, op.threads, op.duration_us = 1024, 256, 100.0
        op.label = _new_kernel_label(pipeline)
    elif kind in ("host", "host_func"):
        op.duration_us = 10.0
    elif kind == "malloc":
        op.bytes = 64 * MIB
    if kind == "event_record":
        op.event = new_event_name(pipeline)
    elif kind in EVENT_OPS:
        op.event = _latest_recorded_event(pipeline, index) or new_event_name(pipeline)
    return op


def _new_kernel_label(pipeline: Pipeline) -> str:
    used = {op.label for op in pipeline.program}
    n = 0
    while f"K{n}" in used:
        n += 1
    return f"K{n}"
