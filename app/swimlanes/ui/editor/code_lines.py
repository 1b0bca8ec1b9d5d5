"""The host program as code-like lines: ``cudaMemcpyAsync(d_a, h_a, 64 MiB, H2D, s1)``.

Buffers are named after the op's label when it is a C identifier, else a, b, c ... in program
order, so that a chunk's copies and kernel read like the CUDA a user would write. The legacy
default stream is written ``0``, as in CUDA.
"""

from __future__ import annotations

import re

from swimlanes.model.document import (
    COLLECTIVE_OPS,
    DEFAULT_DEVICE,
    DEFAULT_STREAM,
    PEER_COPY,
    Op,
    Pipeline,
)
from swimlanes.ui.editor.common import format_us
from swimlanes.units import format_bytes

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DIRECTION = {"h2d": "H2D", "d2h": "D2H", "d2d": "D2D"}
#: Where a line's comment starts (every line has at most one).
_COMMENT = "  // "


def _letters(n: int) -> str:
    out = ""
    n += 1
    while n:
        n, rem = divmod(n - 1, 26)
        out = chr(ord("a") + rem) + out
    return out


def _stream(op: Op) -> str:
    name = op.stream_name or DEFAULT_STREAM
    return "0" if name == DEFAULT_STREAM else name


def _kernel_line(op: Op) -> str:
    name = op.label if op.label and _IDENT.match(op.label) else "kernel"
    line = f"{name}<<<{op.blocks}, {op.threads}, 0, {_stream(op)}>>>"
    if op.duration_us is not None:
        timing = format_us(op.duration_us)
    elif op.block_us is not None:
        timing = f"{format_us(op.block_us)} per block"
    else:
        parts = []
        if op.flops is not None:
            parts.append(f"{op.flops:.3g} FLOP")
        if op.bytes is not None:
            parts.append(format_bytes(op.bytes))
        timing = ", ".join(parts)
    if op.label and not _IDENT.match(op.label):
        timing = f"{op.label}: {timing}"
    return f"{line}  // {timing}"


def _copy_line(op: Op, buf: str) -> str:
    size = format_bytes(op.bytes or 0)
    direction = _DIRECTION[op.op]
    dst, src = {
        "h2d": (f"d_{buf}", f"h_{buf}"),
        "d2h": (f"h_{buf}", f"d_{buf}"),
        "d2d": (f"d_{buf}2", f"d_{buf}"),
    }[op.op]
    notes = []
    if op.op in ("h2d", "d2h") and op.effective_host_memory == "pageable":
        notes.append("pageable")
    if op.duration_us is not None:
        notes.append(format_us(op.duration_us))
    if op.copy_out_us is not None and op.effective_host_memory == "pageable":
        notes.append(f"{format_us(op.copy_out_us)} copying out")  # (a capture's, measured)
    if op.effective_async:
        line = f"cudaMemcpyAsync({dst}, {src}, {size}, {direction}, {_stream(op)})"
    else:
        line = f"cudaMemcpy({dst}, {src}, {size}, {direction})"
        if _stream(op) != "0":
            notes.append(f"after {_stream(op)}")
    return line + (f"  // {', '.join(notes)}" if notes else "")


def _peer_copy_line(op: Op, buf: str, pipeline: Pipeline | None) -> str:
    home = pipeline.stream_device(op.stream_name) if pipeline is not None else DEFAULT_DEVICE
    src, dst = op.src_device or home, op.dst_device or home
    size = format_bytes(op.bytes or 0)
    return f"cudaMemcpyPeerAsync(d_{buf}_{dst}, {dst}, d_{buf}, {src}, {size}, {_stream(op)})"


def _collective_line(op: Op, buf: str) -> str:
    """An NCCL call: ncclAllReduce(sendbuf, recvbuf, count, op, comm, stream), bytes for the
    count (the editor knows sizes, not element types)."""
    size = format_bytes(op.bytes or 0)
    comm = op.communicator or "comm"
    stream = _stream(op)
    if op.op == "all_reduce":
        return f"ncclAllReduce(d_{buf}, d_{buf}, {size}, ncclSum, {comm}, {stream})"
    if op.op == "reduce_scatter":
        return f"ncclReduceScatter(d_{buf}, d_{buf}_part, {size}, ncclSum, {comm}, {stream})"
    if op.op == "all_gather":
        return f"ncclAllGather(d_{buf}_part, d_{buf}, {size}, {comm}, {stream})"
    root = f"root={op.root}" if op.root else "root=0"
    return f"ncclBroadcast(d_{buf}, d_{buf}, {size}, {root}, {comm}, {stream})"


def code_line(op: Op, buf: str = "a", pipeline: Pipeline | None = None) -> str:
    """One op as the CUDA call it stands for; ``buf`` names the buffer it touches (the
    ``pipeline`` gives a peer copy's default devices: its stream's). A call with its own
    measured host time (a captured program's ``call_us``) says so in its comment."""
    line = _call_line(op, buf, pipeline)
    if op.call_us is None:
        return line
    note = f"call {format_us(op.call_us)} (measured)"
    return f"{line}, {note}" if _COMMENT in line else f"{line}{_COMMENT}{note}"


def _call_line(op: Op, buf: str, pipeline: Pipeline | None) -> str:
    kind = op.op
    if kind in _DIRECTION:
        return _copy_line(op, buf)
    if kind == PEER_COPY:
        return _peer_copy_line(op, buf, pipeline)
    if kind in COLLECTIVE_OPS:
        return _collective_line(op, buf)
    if kind == "memset":
        size = format_bytes(op.bytes or 0)
        if op.effective_async:
            return f"cudaMemsetAsync(d_{buf}, 0, {size}, {_stream(op)})"
        return f"cudaMemset(d_{buf}, 0, {size})"
    if kind == "kernel":
        return _kernel_line(op)
    if kind == "event_record":
        return f"cudaEventRecord({op.event}, {_stream(op)})"
    if kind == "event_wait":
        return f"cudaStreamWaitEvent({_stream(op)}, {op.event})"
    if kind == "event_sync":
        return f"cudaEventSynchronize({op.event})"
    if kind == "stream_sync":
        return f"cudaStreamSynchronize({_stream(op)})"
    if kind == "device_sync":
        return "cudaDeviceSynchronize()"
    if kind == "host":
        return f"host_work()  // {format_us(op.duration_us or 0)} on the CPU"
    if kind == "host_func":
        return (
            f"cudaLaunchHostFunc({_stream(op)}, host_fn, NULL)  // {format_us(op.duration_us or 0)}"
        )
    if kind == "malloc":
        return f"cudaMalloc(&d_{buf}, {format_bytes(op.bytes or 0)})"
    return f"cudaFree(d_{buf})"


def program_lines(pipeline: Pipeline) -> list[str]:
    """Every op of the program as a code line.

    Each H2D, D2D, memset or malloc names a new buffer; a D2H reads the buffer its stream
    loaded last, so a chunk's H2D and D2H name the same buffer; a free frees the last malloc.
    A collective names its buffer after its label (the devices' ops of one all-reduce share
    it). In a pipeline of several devices each line starts with the host thread (named by its
    device) that issues the call.
    """
    lines = []
    threads = pipeline.is_multi_device
    count = 0
    last_on_stream: dict[str | None, str] = {}
    last_malloc = "a"
    for op in pipeline.program:
        if op.op in ("h2d", "d2d", "memset", "malloc") or (
            op.op == "d2h" and op.stream_name not in last_on_stream
        ):
            buf = op.label if op.label and _IDENT.match(op.label) else _letters(count)
            count += 1
            last_on_stream[op.stream_name] = buf
            if op.op == "malloc":
                last_malloc = buf
        elif op.op == "free":
            buf = last_malloc
        elif op.op in COLLECTIVE_OPS and op.label and _IDENT.match(op.label):
            buf = op.label
        else:
            buf = last_on_stream.get(op.stream_name, "a")
        line = code_line(op, buf, pipeline)
        lines.append(f"[{pipeline.op_device(op)}] {line}" if threads else line)
    return lines
