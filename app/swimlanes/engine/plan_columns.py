"""The planner's op shapes for all shapes at once, column by column (numpy).

``plan_ops`` works out each op shape once. Captured programs give almost every op a shape of
its own, and working them out one at a time (``plan_shape.new_shape``) took about 40% of such a
simulation. :func:`shape_columns` computes the same values column-wise, with the same
floating-point operations in the same order (numpy's float64 arithmetic and ``rint`` are
IEEE's, as Python's ``/``, ``*`` and ``round``; logarithms come from ``math.log`` as in
``presets._interpolate_gbps``), so the plan is identical. ``plan_shape._shape`` stays the readable
statement of these rules; this is the same rules, in bulk. :func:`within_limits` does the same
for the totals of ``plan_limits.check_work``.

It handles the case where every shape is good: when any value would be refused (or is not of
the plain types a validated pipeline holds) it returns None, and plan_ops works the shapes out
one by one, which names the first bad op in program order.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from itertools import repeat
from operator import is_not, itemgetter
from typing import cast

import numpy as np

from swimlanes.engine import plan_model as _model  # its limits: read when used (tests change them)
from swimlanes.engine.plan_model import (
    BARRIER,
    BUSY,
    COLUMNS,
    ENQ,
    ENQ_BARRIER,
    ENQ_STAGE,
    ENQ_WAIT,
    HOST_ONLY,
    RUN_COPY,
    RUN_SM,
    STREAM_LEGACY,
    WAIT_ALL,
    K,
    Plan,
    Shapes,
    run_of,
)
from swimlanes.engine.plan_shape import new_shape
from swimlanes.engine.preset_model import (
    ROOFLINE_BYTES_PER_ELEMENT,
    DevicePreset,
    _sorted_points,
    main_loop_fraction,
    warp_loads,
)
from swimlanes.model.document import DEFAULT_STREAM, STREAM_OPS

_H2D, _D2H, _D2D, _MEMSET = K["h2d"], K["d2h"], K["d2d"], K["memset"]
_KERNEL, _HOST_FUNC = K["kernel"], K["host_func"]
_RUN_OF_KIND = np.array([run_of(k) for k in range(len(K))], dtype=np.int64)
_ON_STREAM = frozenset((*STREAM_OPS, "memset"))  # as Op.stream_name
_ON_STREAM_KIND = np.array([name in _ON_STREAM for name in K], dtype=bool)
_HOST_OF_KIND = np.full(len(K), ENQ, dtype=np.int64)
for _name, _host in HOST_ONLY.items():
    _HOST_OF_KIND[K[_name]] = _host


class _Refused(Exception):
    """A value the one-by-one path would refuse (or treats specially): fall back to it."""


def shape_columns(
    keys: list[tuple], first: list[int], program: list, preset: DevicePreset, plan: Plan,
    stream_index: dict, costs: dict,
) -> Shapes | None:  # fmt: skip
    """The program's Shapes (``keys`` in shape order, as plan_ops builds them; ``first``
    their first ops), or None when one-by-one must decide."""
    try:
        # Times past every limit (a tiny bandwidth) overflow to inf, which is then refused.
        with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
            return _shape_columns(keys, first, program, preset, plan, stream_index, costs)
    except (_Refused, TypeError, ValueError, OverflowError, KeyError, AttributeError):
        return None  # (unvalidated values of odd types, too: the one-by-one path judges them)


def _shape_columns(
    keys: list[tuple], first: list[int], program: list, preset: DevicePreset, plan: Plan,
    stream_index: dict, costs: dict,
) -> Shapes:  # fmt: skip
    names, streams, nbytes, memory, is_async, dur_us, blocks, threads, block_us, flops, bpsm = zip(
        *keys, strict=True
    )
    # Per-shape lists by C-level maps where the rule allows (a comprehension per field cost
    # 2-4 ms at 1e5 shapes).
    kind = list(map(K.__getitem__, names))  # KeyError: an unknown op
    k = np.fromiter(kind, dtype=np.int64, count=len(kind))
    s = _stream_numbers(k, streams, stream_index)
    run = _RUN_OF_KIND[k]
    size = np.array([b or 0 for b in nbytes], dtype=np.int64)
    host = _HOST_OF_KIND[k].copy()
    solo = np.zeros(len(keys), dtype=np.int64)
    extra: list[tuple | int | None] = [None] * len(keys)
    has_dur = _not_none(dur_us)
    dur = _checked_ns(np.fromiter([0.0 if d is None else d * 1000.0 for d in dur_us], np.float64))
    sync = np.array([not (a is None or a) for a in is_async], dtype=bool)
    if not set(memory) <= {None, "pinned", "pageable"}:
        raise _Refused
    pageable = np.fromiter(map(operator.eq, memory, repeat("pageable")), bool, len(memory))
    stage = np.zeros(len(keys), dtype=np.int64)  # (Shapes.stage)
    _copies(preset, k, size, dur, has_dur, sync, pageable, host, solo, extra, stage)
    memset = k == _MEMSET
    solo[memset] = np.where(
        has_dur[memset], dur[memset], _checked_ns(size[memset] / preset.memory_gbps)
    )
    host[memset & sync] = ENQ_BARRIER
    # An op with a blocks_per_sm override is worked out one by one below (rare; that checks
    # the override, on any kind of op).
    special = _not_none(bpsm)
    kernel = np.flatnonzero((k == _KERNEL) & ~special)
    block_waves = np.zeros(len(keys), dtype=np.int64)
    block_waves[kernel] = _kernels(
        preset, kernel, blocks, threads, block_us, flops, size, dur, has_dur, solo, extra
    )
    callback = (k == _HOST_FUNC) | (host == BUSY)
    solo[callback] = np.where(has_dur[callback], dur[callback], 0)
    solo[(run < 0) & (host != BUSY)] = -1
    queue = _queues(preset, plan, k, s, run)
    lookups = stream_index, costs
    cost = np.array([costs[name] for name in K], dtype=np.int64)[k]  # (costs: by name of K)
    values = (k, s, run, queue, cost, host, solo, size)
    shapes = Shapes(dict(zip(COLUMNS, values, strict=True)), extra, stage, block_waves)
    for n in np.flatnonzero(special).tolist():
        _one_shape(shapes, n, new_shape(first[n], program[first[n]], preset, plan, *lookups))
    return shapes


def _one_shape(shapes: Shapes, n: int, shape: tuple[tuple, tuple | int | None]) -> None:
    """Shape ``n`` as plan_shape.new_shape worked it out: ``(row, extra)``."""
    row, x = shape
    shapes.extras[n] = x
    for name, value in zip(COLUMNS, row, strict=True):
        shapes.columns[name][n] = value
    assert shapes.stage is not None and shapes.block_waves is not None
    shapes.stage[n] = x if isinstance(x, int) else 0  # (a kernel's extra is its shape)
    shapes.block_waves[n] = -(-x[0] // x[2]) if isinstance(x, tuple) else 0


def _stream_numbers(k: np.ndarray, streams: tuple, stream_index: dict) -> np.ndarray:
    """Each shape's stream number (Op.stream_name's stream: the legacy default for an op on a
    stream that names none); _Refused if one names no declared stream."""
    s = np.fromiter(map(stream_index.get, streams, [-2] * len(streams)), np.int64, len(streams))
    unnamed = np.fromiter(map(operator.not_, streams), dtype=bool, count=len(streams))
    s[unnamed & _ON_STREAM_KIND[k]] = stream_index.get(DEFAULT_STREAM, -2)
    if np.any(s == -2):
        raise _Refused
    return s


def _not_none(values: Sequence) -> np.ndarray:
    """Which of ``values`` are not None, as a bool array (a C-level pass)."""
    if values.count(None) == len(values):
        return np.zeros(len(values), dtype=bool)
    return np.fromiter(map(is_not, values, [None] * len(values)), dtype=bool, count=len(values))


def _bound() -> int:
    """The longest op time handled here: MAX_OP_NS, and never near int64's range (past that,
    the one-by-one path's Python ints decide)."""
    return min(_model.MAX_OP_NS, 1 << 60)


def _checked_ns(values: np.ndarray) -> np.ndarray:
    """Times rounded to int ns, as plan_shape._ns (refused past MAX_OP_NS, or not finite)."""
    if not np.all(values <= _bound()):  # (NaN compares false)
        raise _Refused
    return np.rint(values).astype(np.int64)


def _copies(
    preset: DevicePreset, k: np.ndarray, size: np.ndarray, dur: np.ndarray, has_dur: np.ndarray,
    sync: np.ndarray, pageable: np.ndarray, host: np.ndarray, solo: np.ndarray, extra: list,
    staging: np.ndarray,
) -> None:  # fmt: skip
    """Host behaviour, time alone and staging ns of H2D, D2H and D2D copies (plan_shape._shape):
    the staging ns (or copy-out) both as ``extra`` and in ``staging``."""
    d2d = np.flatnonzero(k == _D2D)
    solo[d2d] = np.where(has_dur[d2d], dur[d2d], _checked_ns(2.0 * size[d2d] / preset.memory_gbps))
    for kind, code in (("h2d", _H2D), ("d2h", _D2H)):
        for memory, is_pageable in (("pinned", False), ("pageable", True)):
            rows = np.flatnonzero((k == code) & (pageable == is_pageable))
            if not len(rows):
                continue
            b = size[rows]
            copy = _checked_ns(_copy_ns(preset, kind, b, memory).astype(np.float64))
            solo[rows] = np.where(has_dur[rows], dur[rows], copy)
            waits = sync[rows] | is_pageable
            host[rows] = np.where(waits, ENQ_WAIT, ENQ)
            if not is_pageable:
                continue
            if kind == "h2d":  # an async one returns once staged: its staging time
                stage = _checked_ns(b / _host_gbps(preset, "h2d", b))
                staged = ~sync[rows]
                host[rows[staged]] = ENQ_STAGE
                values = np.where(has_dur[rows], dur[rows], stage)[staged]
                _put(extra, rows[staged].tolist(), values.tolist())
                staging[rows[staged]] = values
            elif preset.pageable_d2h_chunk_bytes:  # the last chunk's copy-out
                chunk = preset.pageable_d2h_chunk_bytes
                out = _checked_ns(np.minimum(b, chunk) / _host_gbps(preset, "d2h", b))
                _put(extra, rows.tolist(), out.tolist())
                staging[rows] = out


def _put(extra: list, rows: list[int], values: list) -> None:
    """``extra[r] = v`` for each row and value (a C-level pass)."""
    for _ in map(extra.__setitem__, rows, values):
        pass


def _copy_ns(preset: DevicePreset, kind: str, b: np.ndarray, memory: str) -> np.ndarray:
    """DevicePreset.copy_ns of each size in ``b`` (int ns, not yet checked)."""
    chunk = preset.pageable_chunk_bytes(kind) if memory == "pageable" else 0
    if chunk:
        rest = np.maximum(0, b - chunk) / _host_gbps(preset, kind, b)
        first = _copy_ns(preset, kind, np.minimum(b, chunk), "pinned")
        return first + _rounded(rest)
    table = preset.bandwidth_table.get(f"{kind}_{memory}")
    if table:
        return _rounded(b / _interpolate_gbps(table, b))
    gbps = getattr(preset, f"{kind}_{memory}_gbps")
    return _rounded(preset.copy_latency_us * 1000.0 + b / gbps)


def _rounded(values: np.ndarray) -> np.ndarray:
    """round() of each value (bounded, so that the int64 sum after it cannot overflow)."""
    if not np.all(values <= _bound()):
        raise _Refused
    return np.rint(values).astype(np.int64)


def _host_gbps(preset: DevicePreset, kind: str, b: np.ndarray) -> np.ndarray | float:
    """DevicePreset.pageable_host_gbps of each size in ``b``."""
    table = preset.bandwidth_table.get(f"{kind}_pageable_host")
    if table:
        return _interpolate_gbps(table, b)
    return float(getattr(preset, f"{kind}_pageable_gbps"))


def _interpolate_gbps(table: list[list[float]], b: np.ndarray) -> np.ndarray:
    """presets._interpolate_gbps of each size in ``b``: the same segment, the same steps."""
    sizes, rates, logs = _sorted_points(table)
    out = np.empty(len(b), dtype=np.float64)
    inside = (b > sizes[0]) & (b < sizes[-1])
    out[b >= sizes[-1]] = rates[-1]
    out[b <= sizes[0]] = rates[0]  # (after the line above: a one-point table's clamp)
    mid = b[inside]
    j = np.searchsorted(np.array(sizes, dtype=np.float64), mid, side="left")
    log_size = np.array([math.log(x) for x in mid.tolist()], dtype=np.float64)
    logs_a, rates_a = np.array(logs, dtype=np.float64), np.array(rates, dtype=np.float64)
    log0, b0 = logs_a[j - 1], rates_a[j - 1]
    f = (log_size - log0) / (logs_a[j] - log0)
    out[inside] = b0 + f * (rates_a[j] - b0)
    return out


def _kernels(
    preset: DevicePreset, rows: np.ndarray, blocks: tuple, threads: tuple, block_us: tuple,
    flops: tuple, size: np.ndarray, dur: np.ndarray, has_dur: np.ndarray, solo: np.ndarray,
    extra: list,
) -> np.ndarray | int:  # fmt: skip
    """Time alone and kernel shape of the kernels ``rows`` (no blocks_per_sm override); returns
    their waves of blocks alone (ceil(blocks / resident), as plan_limits.check_work counts them)."""
    if not len(rows):
        return 0
    pick = rows.tolist()
    n_blocks = np.array([b or 1 for b in map(blocks.__getitem__, pick)], dtype=np.int64)
    n_threads = np.array([t or 256 for t in map(threads.__getitem__, pick)], dtype=np.int64)
    # blocks.residency and blocks.waves
    per_sm = np.maximum(
        1, np.minimum(preset.max_blocks_per_sm, preset.max_threads_per_sm // np.maximum(1, n_threads))
    )  # fmt: skip
    n_waves = np.maximum(1, np.ceil(n_blocks / (preset.sm_count * per_sm))).astype(np.int64)
    times = list(map(block_us.__getitem__, pick))
    has_block = _not_none(times)
    block_ns = _checked_ns(
        np.fromiter([0.0 if t is None else t * 1000.0 for t in times], np.float64)
    )
    if not np.all(np.maximum(1, block_ns) * n_waves.astype(np.float64) <= _bound()):
        raise _Refused  # (checked in float first: the int64 product must not overflow)
    by_blocks = np.maximum(1, block_ns) * n_waves
    by_flops = np.array([f or 0.0 for f in map(flops.__getitem__, pick)], dtype=np.float64)
    roofline = _checked_ns(_roofline(preset, by_flops, size[rows], n_blocks, n_threads, per_sm))
    total = np.where(
        has_block, by_blocks, np.where(has_dur[rows], np.maximum(1, dur[rows]), roofline)
    )
    solo[rows] = total + round(preset.kernel_overhead_us * 1000.0)
    cost = preset.max_threads_per_sm // per_sm
    shapes = zip(n_blocks.tolist(), cost.tolist(), (preset.sm_count * per_sm).tolist(),
                 (total / n_waves).tolist(), strict=True)  # fmt: skip
    _put(extra, pick, list(shapes))
    return -(-n_blocks // (preset.sm_count * per_sm))


def _roofline(
    p: DevicePreset, flops: np.ndarray, nbytes: np.ndarray, blocks: np.ndarray,
    threads: np.ndarray, per_sm: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """DevicePreset.roofline_ns before its round (the max(1, ...) after it: see the caller)."""
    compute_rate: np.ndarray | float = p.peak_tflops * 1000.0
    memory_rate: np.ndarray | float = p.memory_gbps
    sms = np.minimum(blocks, p.sm_count)
    warps = np.minimum(per_sm, -(-blocks // sms)) * -(-threads // 32)
    if p.warp_gflops:
        per_sm_rate = np.minimum(compute_rate / p.sm_count, warps * p.warp_gflops)
        compute_rate = np.minimum(compute_rate, sms * per_sm_rate)
    if p.warp_gbps:
        # (per distinct warp count: a few dozen at most)
        distinct, where = np.unique(warps, return_inverse=True)
        loads = np.array([warp_loads(w, p) for w in distinct.tolist()], dtype=np.float64)[where]
        memory_rate = np.minimum(memory_rate, (sms * loads) * p.warp_gbps)
    both = (flops > 0) & (nbytes > 0)
    if p.roofline_tail_efficiency != 1.0:  # the one-element loop: see DevicePreset
        elements = (nbytes // ROOFLINE_BYTES_PER_ELEMENT).astype(np.int64)
        grid = np.maximum(blocks * threads, 1).astype(np.int64)
        main = np.where(elements > 0, main_loop_fraction(np.maximum(elements, 1), grid), 1.0)
        slowdown = main + (1.0 - main) / p.roofline_tail_efficiency
        compute_rate = np.where(both, compute_rate / slowdown, compute_rate)
    overlap: np.ndarray | float = p.roofline_overlap
    if p.roofline_overlap_by_occupancy:
        occupancy = np.minimum(1.0, warps * 32 / p.max_threads_per_sm)
        overlap = np.where(both, p.roofline_overlap * occupancy, p.roofline_overlap)
    compute = flops / compute_rate
    memory = nbytes / memory_rate
    exposed = (1.0 - overlap) * np.minimum(compute, memory)
    startup = np.where(nbytes > 0, p.roofline_startup_us * 1000.0, 0.0)
    value = np.maximum(compute, memory) + exposed + startup
    # max(1, round(value)): values below 0.5 round to 0 and become 1.
    return np.where(np.rint(value) < 1, 1.0, value)


def _queues(
    preset: DevicePreset, plan: Plan, k: np.ndarray, s: np.ndarray, run: np.ndarray
) -> np.ndarray:
    """Each shape's hardware queue (-1: not enqueued), as plan_shape.new_shape."""
    enqueued = run >= 0
    copy = (k == _H2D) | (k == _D2H)
    if preset.hardware_queues == "fermi":
        queue = np.zeros(len(k), dtype=np.int64)
        queue[k == _H2D] = 1
        queue[k == _D2H] = 1 if preset.shared_copy_engine else 2
    else:
        queue = np.array(plan.queue_of_stream, dtype=np.int64)[np.maximum(s, 0)]
        if preset.copy_queue_per_stream:
            queue = np.where(copy, plan.queue_count - len(plan.stream_names) + s, queue)
    return np.where(enqueued, queue, -1)


def within_limits(
    shapes: Shapes, count: np.ndarray, plan: Plan, slack: int, slowest_copy: float
) -> bool:
    """True when plan_limits.check_work's three totals are clearly below their limits (the time
    total, a float sum, by a margin its summation order cannot cross); False: let it add them
    up shape by shape, as it words its refusal."""
    s, run, cost, host, solo = (
        shapes.columns[c] for c in ("stream", "run", "cost", "host", "solo")
    )  # fmt: skip
    stage, block_waves = shapes.stage, shapes.block_waves
    if stage is None or block_waves is None:
        stage, block_waves = _stage_and_waves(shapes)
    device = np.maximum(solo, 0) * np.where(run == RUN_COPY, slowest_copy, 1.0)
    total_ns = float(np.sum(count * (cost + device + stage + slack)))
    # A kernel's waves alone: ceil(blocks / resident); d2d copies and memsets take one.
    waves = np.where(run == RUN_SM, 1, block_waves)
    total_waves = int(np.sum(count * waves))
    classes = np.array([*plan.stream_class, -1], dtype=np.int64)  # (s = -1: no stream)
    syncs = ((run >= 0) & (classes[s] == STREAM_LEGACY)) | np.isin(
        host, (BARRIER, ENQ_BARRIER, WAIT_ALL)
    )
    checks = int(np.sum(count[syncs])) * len(plan.stream_names)
    return (
        total_ns < _model.MAX_TOTAL_NS * 0.999
        and total_waves <= _model.MAX_BLOCK_WAVES
        and checks <= _model.MAX_STREAM_CHECKS
    )


def _stage_and_waves(shapes: Shapes) -> tuple[np.ndarray, np.ndarray]:
    """Shapes.stage and Shapes.block_waves from the shapes' extras (shapes worked out one by
    one)."""
    extras = shapes.extras
    # Kernels' extras are their shapes (tuples), other ops' their staging ns (or None).
    kernels = shapes.columns["kind"] == _KERNEL
    rows, others = np.flatnonzero(kernels).tolist(), np.flatnonzero(~kernels).tolist()
    stage = np.zeros(len(extras), dtype=np.int64)
    stage[others] = [x if isinstance(x, int) else 0 for x in map(extras.__getitem__, others)]
    blocks, resident = np.zeros(len(extras), dtype=np.int64), np.ones(len(extras), dtype=np.int64)
    if rows:
        kernel_shapes = cast("list[tuple]", list(map(extras.__getitem__, rows)))
        blocks[rows] = list(map(itemgetter(0), kernel_shapes))
        resident[rows] = list(map(itemgetter(2), kernel_shapes))
    return stage, -(-blocks // resident)
