"""One op shape at a time: the planner's rules for what an op does, stated readably.

``plan_ops`` works out each op shape once, in bulk (engine.plan_columns, the same rules
column by column) or, when that refuses a value, one by one in program order with
:func:`new_shape`, which names the first bad op.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

from swimlanes.engine import plan_model as _model  # its limits: read when used (tests change them)
from swimlanes.engine.blocks import residency, waves
from swimlanes.engine.plan_model import (
    ENQ,
    ENQ_BARRIER,
    ENQ_STAGE,
    ENQ_WAIT,
    HOST_ONLY,
    K,
    Plan,
    run_of,
)
from swimlanes.engine.presets import DevicePreset
from swimlanes.model.document import MAX_BLOCKS_PER_SM, MAX_DURATION_US, Op

_RUN = {k: run_of(k) for k in K.values()}
_H2D, _D2H = K["h2d"], K["d2h"]


class _TooLong(Exception):
    """An op whose time on the device is past MAX_OP_NS (or not a number at all)."""


def new_shape(
    i: int, op: Op, preset: DevicePreset, plan: Plan, stream_index: dict, costs: dict
) -> tuple[tuple, tuple | int | None]:
    """The row of op ``i``, the first of its shape, and its kernel shape or staging ns."""
    name = op.op
    k = K.get(name)
    if k is None:
        raise ValueError(f"program[{i}].op: unknown op {name!r}")
    s = stream_index.get(op.stream_name, -2)
    if s == -2:
        raise ValueError(f"program[{i}].stream: names no declared stream ({op.stream!r})")
    run = _RUN[k]
    if run < 0:
        q = -1
    elif preset.hardware_queues == "fermi":
        # Queue 0 is the compute queue, then the copy queues (one if the engine is shared).
        q = {_H2D: 1, _D2H: 1 if preset.shared_copy_engine else 2}.get(k, 0)
    elif preset.copy_queue_per_stream and k in (_H2D, _D2H):
        q = plan.queue_count - len(plan.stream_names) + s
    else:
        q = plan.queue_of_stream[s]
    override = op.extra.get("blocks_per_sm") if op.extra else None
    if override is not None and (
        isinstance(override, bool)
        or not isinstance(override, int)
        or not 1 <= override <= MAX_BLOCKS_PER_SM
    ):
        raise ValueError(
            f"program[{i}].blocks_per_sm: must be an integer from 1 to {MAX_BLOCKS_PER_SM}"
        )
    try:
        host, solo, extra = _shape(op, preset)
    except _TooLong as err:
        raise ValueError(
            f"program[{i}]: this {name} takes {err} on {preset.name}: the simulator takes at "
            f"most {MAX_DURATION_US:g} us per op"
        ) from None
    return (k, s, run, q, costs[name], host, solo, op.bytes or 0), extra


def _ns(value: float) -> int:
    """A time in ns rounded, or _TooLong if it is past MAX_OP_NS (or infinite, or NaN)."""
    if not value <= _model.MAX_OP_NS:  # (NaN compares false)
        raise _TooLong(f"{value / 1000.0:.4g} us" if math.isfinite(value) else "forever")
    return round(value)


def _preset_ns(compute: Callable[..., float], *args: object) -> int:
    """``compute(*args)`` (a preset's time of a copy, memset or roofline kernel), checked."""
    try:
        return _ns(compute(*args))
    except OverflowError:  # the preset's own rounding of an infinite time
        raise _TooLong("forever") from None


def _shape(op: Op, preset: DevicePreset) -> tuple[int, int, tuple | int | None]:
    """(how the host behaves on this op, its time alone on the device or -1, and its kernel
    shape or staging ns: see plan.plan_ops)."""
    name = op.op
    dur = None if op.duration_us is None else _ns(op.duration_us * 1000.0)
    if name in ("h2d", "d2h", "d2d"):
        memory = (op.host_memory or "pinned") if name != "d2d" else "pinned"
        solo = dur if dur is not None else _preset_ns(preset.copy_ns, name, op.bytes or 0, memory)
        if name == "d2d":
            return ENQ, solo, None
        sync = not (op.is_async is None or op.is_async)  # effective_async, inlined
        if name == "h2d" and memory == "pageable" and not sync:
            stage = _ns((op.bytes or 0) / preset.pageable_host_gbps("h2d", op.bytes or 0))
            return ENQ_STAGE, solo, dur if dur is not None else stage
        chunk = preset.pageable_d2h_chunk_bytes
        copy_out = None
        if name == "d2h" and memory == "pageable" and chunk:
            # The call returns once the host has copied the last chunk out.
            nbytes = op.bytes or 0
            copy_out = _ns(min(nbytes, chunk) / preset.pageable_host_gbps("d2h", nbytes))
        return (ENQ_WAIT if sync or memory == "pageable" else ENQ), solo, copy_out
    if name == "memset":
        solo = dur if dur is not None else _preset_ns(preset.memset_ns, op.bytes or 0)
        return (ENQ if op.is_async is None or op.is_async else ENQ_BARRIER), solo, None
    if name == "kernel":
        threads = op.threads or 256
        blocks = op.blocks or 1
        per_sm = residency(preset, threads, op.extra.get("blocks_per_sm") if op.extra else None)
        n_waves = waves(preset, blocks, per_sm)
        if op.block_us is not None:
            total = _ns(max(1, _ns(op.block_us * 1000.0)) * n_waves)
        elif dur is not None:
            total = max(1, dur)
        else:
            total = _preset_ns(preset.roofline_ns, op.flops, op.bytes, blocks, threads, per_sm)
        cost = preset.max_threads_per_sm // per_sm
        kernel = (blocks, cost, preset.sm_count * per_sm, total / n_waves)
        return ENQ, total + round(preset.kernel_overhead_us * 1000.0), kernel
    if name in ("event_record", "event_wait"):
        return ENQ, 0, None
    if name == "host_func":
        return ENQ, dur or 0, None
    return HOST_ONLY[name], (dur or 0) if name == "host" else -1, None


#: The kinds whose ``duration_us`` overrides a time the preset models from their size.
_SIZED = ("h2d", "d2h", "d2d", "memset")


def preset_times_us(op: Op, preset: DevicePreset) -> dict[str, float]:
    """What ``preset`` makes of ``op``'s times where the op carries none of its own, in us:
    ``call_us`` (the call's host time: the issue cost, plus staging for a call that stages),
    ``duration_us`` (a copy's or memset's time alone) and ``copy_out_us`` (a pageable D2H's,
    from its DMA's end to its call's return). The editor shows them beside the op's own
    (measured or typed) times; a kind the preset does not time here has only ``call_us``, and
    a time past the simulator's limit is left out."""
    plain = replace(op, duration_us=None, call_us=None, copy_out_us=None)
    call = preset.issue_cost_ns(op.op)
    out: dict[str, float] = {}
    if op.op in _SIZED:
        try:
            host, solo, extra = _shape(plain, preset)
        except _TooLong:
            return {"call_us": call / 1000.0}
        out["duration_us"] = solo / 1000.0
        if host == ENQ_STAGE and isinstance(extra, int):
            call += extra
        if op.op == "d2h" and plain.effective_host_memory == "pageable":
            back = preset.sync_return_ns("sync_copy")
            out["copy_out_us"] = ((extra if isinstance(extra, int) else 0) + back) / 1000.0
    out["call_us"] = call / 1000.0
    return out
