"""Validation of one op of the host program: its kind, the keys that kind takes, and each
key's type and limit.

Which keys a kind takes and requires comes from the op-kind registry
(:mod:`swimlanes.model.op_kinds`); the keys that name devices and communicators are checked by
:mod:`swimlanes.model.validate_devices`. Plain ops (only keys of their kind, each of the plain
type and in range) take a fast path that builds the same :class:`Op` with fewer checks.
"""

from __future__ import annotations

import math
from collections.abc import Container
from dataclasses import fields
from typing import Any

from swimlanes.model.document import (
    HOST_MEMORY_KINDS,
    MAX_BLOCKS,
    MAX_BLOCKS_PER_SM,
    MAX_BYTES,
    MAX_DURATION_US,
    MAX_FLOPS,
    MAX_NAME_CHARS,
    MAX_THREADS_PER_BLOCK,
    OP_KINDS,
    Op,
)
from swimlanes.model.op_kinds import COMMON_FIELDS, REGISTRY, op_kind
from swimlanes.model.validate_checks import Checker, short
from swimlanes.model.validate_devices import DEVICE_KEYS, Scope, parse_op_device_keys
from swimlanes.model.validate_threads import parse_op_thread

#: The keys an :class:`Op` holds in its own fields (the file's names: ``async``); the rest of
#: an op's keys are kept in ``Op.extra`` (``blocks_per_sm`` among them).
_OP_KEYS = frozenset(
    "async" if f.name == "is_async" else f.name
    for f in fields(Op)
    if f.name not in ("extra", "uid")
)


def _parse_kernel(c: Checker, raw: dict, path: str, op: Op) -> None:
    op.blocks = c.positive_int(raw, "blocks", path, required=True, maximum=MAX_BLOCKS)
    op.threads = c.positive_int(raw, "threads", path, required=True, maximum=MAX_THREADS_PER_BLOCK)
    op.block_us = c.number(
        raw, "block_us", path, positive=True, maximum=MAX_DURATION_US, unit=" us"
    )
    op.flops = c.number(raw, "flops", path, positive=True, maximum=MAX_FLOPS)
    if op.block_us is not None and op.blocks is not None:
        total = op.block_us * op.blocks
        if total > MAX_DURATION_US:
            c.add(
                f"{path}.block_us",
                f"{op.blocks} blocks of {op.block_us:g} us make {total:.4g} us of block time: "
                f"at most {MAX_DURATION_US:g} us in one kernel",
            )
    if "blocks_per_sm" in raw:
        c.positive_int(raw, "blocks_per_sm", path, required=False, maximum=MAX_BLOCKS_PER_SM)
    timing = [k for k in ("block_us", "duration_us") if k in raw]
    roofline = [k for k in ("flops", "bytes") if k in raw]
    if len(timing) + (1 if roofline else 0) != 1:
        c.add(path, "a kernel needs exactly one of block_us, duration_us, or flops/bytes")


#: The keys only kernels take.
_KERNEL_KEYS = ("blocks", "threads", "block_us", "flops", "blocks_per_sm")


def kinds_where_required(key: str) -> tuple[str, ...]:
    """The kinds that require ``key``, in registry order."""
    return tuple(spec.name for spec in REGISTRY if key in spec.required)


#: Per op kind, the keys a plain op of that kind may have (see _plain_op): the kind's keys
#: from the registry, less those the fast path leaves to the full one (keys naming devices,
#: and ``blocks_per_sm``, which is kept in ``extra``). Kinds that involve several devices
#: always take the full path.
_PLAIN_KEYS: dict[str, frozenset[str]] = {
    spec.name: frozenset({"op", *COMMON_FIELDS, *spec.fields} - {*DEVICE_KEYS, "blocks_per_sm"})
    for spec in REGISTRY
    if not spec.multi_device
}
#: Kinds whose plain op may be ``{"op", "stream", "bytes"}`` alone, with nothing else to check
#: (a kernel needs its grid; the other kinds with bytes take no stream or are multi-device).
_STREAM_AND_BYTES = frozenset(("h2d", "d2h", "d2d", "memset"))
#: Kinds whose ``bytes`` and ``event`` are required.
_NEEDS_BYTES = frozenset(kinds_where_required("bytes"))
_NEEDS_EVENT = frozenset(kinds_where_required("event"))


def _plain_number(v: Any, positive: bool, maximum: float) -> bool:
    """``v`` is an int or finite float in range (what Checker.number accepts, or less)."""
    t = type(v)
    if t is not int and (t is not float or not math.isfinite(v)):
        return False
    return (v > 0 if positive else v >= 0) and v <= maximum


def _plain_name(v: Any) -> bool:
    return type(v) is str and len(v) <= MAX_NAME_CHARS and bool(v.strip())


def _plain_op(raw: dict, stream_names: Container[str]) -> Op | None:
    """The op of ``raw`` when it is plainly valid: only keys its kind takes, each of the
    plain type and in range, and the keys its kind requires. Anything else (None) takes the
    full path of _parse_op, which accepts at least what this accepts, and builds the same Op:
    this only saves the full path's per-key checks on the ops of big programs."""
    kind = raw.get("op")
    if type(kind) is not str:
        return None
    allowed = _PLAIN_KEYS.get(kind)
    if allowed is None or not raw.keys() <= allowed or None in raw.values():
        return None  # (null is no key's plain value)
    get = raw.get
    label, stream, nbytes = get("label"), get("stream"), get("bytes")
    if label is not None and (type(label) is not str or len(label) > MAX_NAME_CHARS):
        return None
    # (_plain_name, inlined: this runs once per op of a big program)
    if stream is not None and (
        type(stream) is not str
        or stream not in stream_names
        or len(stream) > MAX_NAME_CHARS
        or not stream.strip()
    ):
        return None
    if nbytes is None:
        if kind in _NEEDS_BYTES:
            return None
    elif not (type(nbytes) is int and 0 < nbytes <= MAX_BYTES):
        return None
    if len(raw) == 3 and kind in _STREAM_AND_BYTES and stream is not None and nbytes is not None:
        # {"op", "stream", "bytes"} alone (most copies of big programs): nothing else to check
        return Op(kind, stream, None, nbytes)
    return _plain_rest(raw, kind, stream, label, nbytes)


def _plain_rest(
    raw: dict, kind: str, stream: str | None, label: str | None, nbytes: int | None
) -> Op | None:
    """_plain_op's checks of the keys after ``op``, ``label``, ``stream`` and ``bytes``."""
    get = raw.get
    memory, is_async, duration = get("host_memory"), get("async"), get("duration_us")
    if memory is not None and memory not in HOST_MEMORY_KINDS:
        return None
    if is_async is not None and type(is_async) is not bool:
        return None
    if "duration_us" in raw and not _plain_number(duration, kind != "host", MAX_DURATION_US):
        return None
    if kind == "host" and duration is None:
        return None
    call, copy_out = get("call_us"), get("copy_out_us")
    if call is not None and not _plain_number(call, False, MAX_DURATION_US):
        return None
    if copy_out is not None and not _plain_number(copy_out, False, MAX_DURATION_US):
        return None
    event = get("event")
    if kind in _NEEDS_EVENT and not _plain_name(event):
        return None
    blocks = threads = block_us = flops = None
    if kind == "kernel":
        blocks, threads = get("blocks"), get("threads")
        block_us, flops = get("block_us"), get("flops")
        if not (type(blocks) is int and 0 < blocks <= MAX_BLOCKS):
            return None
        if not (type(threads) is int and 0 < threads <= MAX_THREADS_PER_BLOCK):
            return None
        if block_us is not None and not (
            _plain_number(block_us, True, MAX_DURATION_US) and block_us * blocks <= MAX_DURATION_US
        ):
            return None
        if flops is not None and not _plain_number(flops, True, MAX_FLOPS):
            return None
        forms = ("block_us" in raw) + ("duration_us" in raw) + ("flops" in raw or "bytes" in raw)
        if forms != 1:
            return None
    return Op(
        kind, stream, label, nbytes, memory, is_async, duration, blocks, threads, block_us,
        flops, event, call, copy_out,
    )  # fmt: skip


def parse_ops(c: Checker, raws: list, scope: Scope) -> list[Op | None]:
    """The op of each item of ``raws`` (the program), None for those with problems (reported
    at ``program[i]``); as parse_op of each, with the JSON path built only for ops that are
    not plainly valid."""
    plain, names = _plain_op, scope.stream_device
    ops: list[Op | None] = [plain(raw, names) if type(raw) is dict else None for raw in raws]
    if None in ops:
        for i, (raw, op) in enumerate(zip(raws, ops, strict=True)):
            if op is None:
                ops[i] = _parse_op(c, raw, f"program[{i}]", scope)
    return ops


def parse_op(c: Checker, raw: Any, path: str, scope: Scope) -> Op | None:
    """The op of ``raw`` (at JSON path ``path``), or None with its problems reported."""
    if type(raw) is dict:
        op = _plain_op(raw, scope.stream_device)
        if op is not None:
            return op
    return _parse_op(c, raw, path, scope)


def _parse_op(c: Checker, raw: Any, path: str, scope: Scope) -> Op | None:
    """parse_op's full path: every key checked, every problem reported."""
    if not isinstance(raw, dict):
        c.add(path, "must be an object")
        return None
    kind = raw.get("op")
    if not isinstance(kind, str) or kind not in OP_KINDS:
        c.add(f"{path}.op", f"must be one of {', '.join(OP_KINDS)} (got {short(kind)})")
        return None
    before = len(c.problems)
    op = Op(op=kind, extra={k: v for k, v in raw.items() if k not in _OP_KEYS})
    _parse_keys(c, raw, path, op, scope)
    if op.extra:
        c.json_values({k: v for k, v in op.extra.items() if k != "blocks_per_sm"}, path)
    return op if len(c.problems) == before else None


def _parse_label_and_stream(c: Checker, raw: dict, path: str, op: Op, scope: Scope) -> None:
    if "label" in raw:
        label = raw["label"]
        if not isinstance(label, str):
            c.add(f"{path}.label", "must be a string")
        elif len(label) > MAX_NAME_CHARS:
            c.add(
                f"{path}.label", f"must be at most {MAX_NAME_CHARS} characters (got {len(label)})"
            )
        else:
            op.label = label
    if "stream" in raw:
        op.stream = c.string(raw, "stream", path, required=False)
        if op.stream is not None and op.stream not in scope.stream_device:
            c.add(f"{path}.stream", f"names no declared stream ({short(op.stream)})")
        if not op_kind(op.op).on_stream:
            c.add(f"{path}.stream", f"a {op.op} op takes no stream")


def _parse_keys(c: Checker, raw: dict, path: str, op: Op, scope: Scope) -> None:
    """Check and set every key of ``raw`` that ``op`` holds in its own fields."""
    kind, spec = op.op, op_kind(op.op)
    _parse_label_and_stream(c, raw, path, op, scope)
    op.bytes = c.positive_int(
        raw, "bytes", path, required="bytes" in spec.required, maximum=MAX_BYTES,
        unit=" bytes, 1 TiB",
    )  # fmt: skip
    if "host_memory" in raw:
        memory = raw["host_memory"]
        if "host_memory" not in spec.fields:
            c.add(f"{path}.host_memory", "only h2d and d2h copies touch host memory")
        elif not isinstance(memory, str) or memory not in HOST_MEMORY_KINDS:
            c.add(f"{path}.host_memory", "must be 'pinned' or 'pageable'")
        else:
            op.host_memory = memory
    if "async" in raw:
        if not isinstance(raw["async"], bool):
            c.add(f"{path}.async", "must be true or false")
        elif "async" not in spec.fields:
            c.add(f"{path}.async", "only copies and memsets can be synchronous or asynchronous")
        else:
            op.is_async = raw["async"]
    op.duration_us = c.number(
        raw, "duration_us", path, positive=kind != "host", maximum=MAX_DURATION_US, unit=" us"
    )
    op.call_us = c.number(raw, "call_us", path, positive=False, maximum=MAX_DURATION_US, unit=" us")
    if "copy_out_us" in raw:
        if "copy_out_us" not in spec.fields:
            c.add(f"{path}.copy_out_us", "only a d2h copy copies its data out on the host")
        else:
            op.copy_out_us = c.number(
                raw, "copy_out_us", path, positive=False, maximum=MAX_DURATION_US, unit=" us"
            )
    if kind == "kernel":
        _parse_kernel(c, raw, path, op)
    elif "duration_us" in spec.required and op.duration_us is None and "duration_us" not in raw:
        c.add(f"{path}.duration_us", "is required for host work (a number >= 0)")
    if "event" in spec.fields:
        op.event = c.string(raw, "event", path, required="event" in spec.required)
    elif "event" in raw:
        c.add(f"{path}.event", f"a {kind} op takes no event")
    for key in _KERNEL_KEYS:
        if key in raw and key not in spec.fields:
            c.add(f"{path}.{key}", "only kernels take this")
    parse_op_device_keys(c, raw, path, op, scope)
    parse_op_thread(c, raw, path, op, scope)
