"""Schedule metrics of a Timeline: makespan, serial time, speedup, engine busy time and overlap.

Every figure is a length of a union or intersection of intervals, computed with vectorised
numpy (sort + cumulative max), so a 1e6-op timeline takes well under a second.

A *device op* is a row with a device span that runs on an engine (``engine >= 0``): copies,
memsets and kernels. Sync and event ops may carry a device span (measured waits) but do no work,
so they count neither as engine time nor as serial time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from swimlanes.model.document import COPY_OPS, OP_KINDS
from swimlanes.timeline.timeline import NO_TIME, Timeline

_COPY_KINDS = np.array([OP_KINDS.index(k) for k in COPY_OPS], dtype=np.int8)
# Memsets are carried out on the SMs like a kernel, so they count as compute.
_COMPUTE_KINDS = np.array([OP_KINDS.index(k) for k in ("kernel", "memset")], dtype=np.int8)


def interval_union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of ``[start, end)`` intervals as sorted, disjoint ``(starts, ends)`` arrays.

    Empty and inverted intervals are dropped; touching intervals merge.
    """
    s = np.asarray(starts, dtype=np.int64)
    e = np.asarray(ends, dtype=np.int64)
    keep = e > s
    s, e = s[keep], e[keep]
    if len(s) == 0:
        return s, e
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    reach = np.maximum.accumulate(e)
    first = np.empty(len(s), dtype=bool)
    first[0] = True
    first[1:] = s[1:] > reach[:-1]
    heads = np.flatnonzero(first)
    last = np.append(heads[1:] - 1, len(s) - 1)
    return s[heads], reach[last]


def covered_before(union: tuple[np.ndarray, np.ndarray], times: np.ndarray) -> np.ndarray:
    """How long an interval union (as :func:`interval_union` returns it) covers before each
    of ``times``."""
    starts, ends = union
    t = np.asarray(times, dtype=np.int64)
    if len(starts) == 0:
        return np.zeros(len(t), dtype=np.int64)
    before = np.concatenate(([0], np.cumsum(ends - starts)))  # covered before each interval
    k = np.searchsorted(starts, t, side="right")  # intervals starting at or before t
    last = np.maximum(k - 1, 0)
    inside = np.minimum(t, ends[last]) - starts[last]
    return np.where(k > 0, before[last] + inside, 0)


def union_length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total time covered by at least one of the intervals."""
    us, ue = interval_union(starts, ends)
    return int((ue - us).sum())


def overlap_length(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> int:
    """Time covered by both interval sets ``a`` and ``b`` (each ``(starts, ends)``)."""
    la = union_length(*a)
    lb = union_length(*b)
    both = union_length(np.concatenate([a[0], b[0]]), np.concatenate([a[1], b[1]]))
    return la + lb - both


def covered_at_least(sets: list[tuple[np.ndarray, np.ndarray]], k: int) -> int:
    """Time during which at least ``k`` of the interval sets are covering (each set is unioned
    first, so one set never counts twice)."""
    unions = [interval_union(s, e) for s, e in sets]
    if not unions:
        return 0
    starts = np.concatenate([u[0] for u in unions])
    ends = np.concatenate([u[1] for u in unions])
    if len(starts) == 0:
        return 0
    times = np.concatenate([starts, ends])
    steps = np.concatenate([np.ones(len(starts), np.int64), -np.ones(len(ends), np.int64)])
    # Ends sort before starts at the same time, so touching intervals do not overlap.
    order = np.lexsort((steps, times))
    times, steps = times[order], steps[order]
    depth = np.cumsum(steps)
    spans = np.diff(times)
    return int(spans[depth[:-1] >= k].sum())


@dataclass(frozen=True)
class Metrics:
    """Figures of one timeline, in integer nanoseconds (percentages are of the makespan).

    * ``makespan_ns``: first host call to the last thing done (``Timeline.makespan_ns``);
    * ``serial_ns``: the device ops one after another, each alone on the device (``solo_ns``,
      or its span where unknown); ``speedup`` = serial / makespan;
    * ``engine_busy_ns`` / ``stream_busy_ns``: time each engine / stream runs at least one op;
    * ``overlap_ns``: time two or more engines are busy at once; ``compute_copy_overlap_ns``:
      time kernels (or memsets) run while a copy runs;
    * ``gpu_idle_ns``: makespan time with no device op running; ``host_busy_ns``: time the host
      thread is in an API call or host work; ``gpu_waiting_on_host_ns``: time the device is
      idle while the host is busy (the device waits for the host to issue work).
    """

    makespan_ns: int
    serial_ns: int
    speedup: float
    engine_busy_ns: dict[str, int]
    engine_busy_pct: dict[str, float]
    stream_busy_ns: dict[str, int]
    overlap_ns: int
    overlap_pct: float
    compute_copy_overlap_ns: int
    gpu_idle_ns: int
    host_busy_ns: int
    gpu_waiting_on_host_ns: int
    device_ops: int


def device_op_mask(tl: Timeline) -> np.ndarray:
    """Rows that do work on an engine (copies, memsets, kernels) and have a device span."""
    return tl.on_device & (tl.engine >= 0)


def copy_op_mask(tl: Timeline) -> np.ndarray:
    """Rows that are copies (H2D, D2H, D2D)."""
    return np.isin(tl.kind, _COPY_KINDS)


def compute_op_mask(tl: Timeline) -> np.ndarray:
    """Rows that compute on the SMs: kernels, and memsets (carried out like a kernel)."""
    return np.isin(tl.kind, _COMPUTE_KINDS)


def host_call_mask(tl: Timeline) -> np.ndarray:
    """Rows with a host API call span (the host thread is busy in it)."""
    return (tl.issue_start != NO_TIME) & (tl.issue_end != NO_TIME)


def _pct(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def _spans(tl: Timeline, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return tl.start[mask], tl.end[mask]


def compute_metrics(tl: Timeline) -> Metrics:
    """All the summary figures of ``tl`` (an empty timeline gives zeros)."""
    dev = device_op_mask(tl)
    makespan = tl.makespan_ns
    solo = tl.solo_ns[dev]
    run = tl.end[dev] - tl.start[dev]
    serial = int(np.where(solo != NO_TIME, solo, run).sum())

    engine_sets: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for e, name in enumerate(tl.engine_names):
        engine_sets[name] = _spans(tl, dev & (tl.engine == e))
    engine_busy = {name: union_length(*iv) for name, iv in engine_sets.items()}
    stream_busy = {
        name: union_length(*_spans(tl, dev & (tl.stream == s)))
        for s, name in enumerate(tl.stream_names)
    }
    overlap = covered_at_least(list(engine_sets.values()), 2)
    compute = _spans(tl, dev & compute_op_mask(tl))
    copies = _spans(tl, dev & copy_op_mask(tl))
    device_all = _spans(tl, dev)
    device_busy = union_length(*device_all)

    has_issue = host_call_mask(tl)
    host = (tl.issue_start[has_issue], tl.issue_end[has_issue])
    host_busy = union_length(*host)
    host_or_device = union_length(
        np.concatenate([host[0], device_all[0]]), np.concatenate([host[1], device_all[1]])
    )
    return Metrics(
        makespan_ns=makespan,
        serial_ns=serial,
        speedup=serial / makespan if makespan > 0 else 0.0,
        engine_busy_ns=engine_busy,
        engine_busy_pct={k: _pct(v, makespan) for k, v in engine_busy.items()},
        stream_busy_ns=stream_busy,
        overlap_ns=overlap,
        overlap_pct=_pct(overlap, makespan),
        compute_copy_overlap_ns=overlap_length(compute, copies),
        gpu_idle_ns=max(makespan - device_busy, 0),
        host_busy_ns=host_busy,
        gpu_waiting_on_host_ns=host_or_device - device_busy,
        device_ops=int(dev.sum()),
    )


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


def metrics_json(m: Metrics) -> dict[str, Any]:
    """The metrics in the CLI's JSON shape: times as ``*_us`` floats, percentages as ``*_pct``."""
    return {
        "makespan_us": _us(m.makespan_ns),
        "serial_us": _us(m.serial_ns),
        "speedup": round(m.speedup, 4),
        "engine_busy_us": {k: _us(v) for k, v in m.engine_busy_ns.items()},
        "engine_busy_pct": {k: round(v, 2) for k, v in m.engine_busy_pct.items()},
        "stream_busy_us": {k: _us(v) for k, v in m.stream_busy_ns.items()},
        "overlap_us": _us(m.overlap_ns),
        "overlap_pct": round(m.overlap_pct, 2),
        "compute_copy_overlap_us": _us(m.compute_copy_overlap_ns),
        "gpu_idle_us": _us(m.gpu_idle_ns),
        "host_busy_us": _us(m.host_busy_ns),
        "gpu_waiting_on_host_us": _us(m.gpu_waiting_on_host_ns),
        "device_ops": m.device_ops,
    }
