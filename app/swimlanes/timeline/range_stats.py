"""What happened in a time range of a Timeline: busy time per lane, copy/compute overlap, ops.

The figures of the chart's ruler (Shift+drag): the same definitions as
:mod:`swimlanes.timeline.metrics` (device ops, host calls, copies, compute, unions of
intervals), with every interval clipped to the range first. Integer nanoseconds throughout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from swimlanes.model.document import OP_KINDS
from swimlanes.timeline.metrics import (
    compute_op_mask,
    copy_op_mask,
    covered_at_least,
    device_op_mask,
    host_call_mask,
    overlap_length,
    union_length,
)
from swimlanes.timeline.timeline import Timeline


@dataclass(frozen=True)
class LaneBusy:
    """Time a lane (the host, a stream, an engine) is busy within the range."""

    kind: str  # "host", "stream" or "engine"
    name: str
    busy_ns: int
    busy_pct: float


@dataclass(frozen=True)
class RangeStats:
    """Figures of ``[start_ns, end_ns)`` (absolute ns, like the timeline's columns).

    ``lanes``: busy time of the host thread (API calls), each stream and each engine;
    ``device_busy_ns``: time any engine runs an op; ``engines_overlap_ns``: time two or more
    engines run at once; ``copy_ns`` / ``compute_ns``: time a copy / a kernel or memset runs;
    ``copy_compute_overlap_ns``: time both do; ``op_counts``: ops (by kind, in OP_KINDS order)
    whose device span, or host call when they have none, meets the range.
    """

    start_ns: int
    end_ns: int
    lanes: list[LaneBusy] = field(default_factory=list)
    device_busy_ns: int = 0
    engines_overlap_ns: int = 0
    copy_ns: int = 0
    compute_ns: int = 0
    copy_compute_overlap_ns: int = 0
    op_counts: dict[str, int] = field(default_factory=dict)

    @property
    def span_ns(self) -> int:
        return max(self.end_ns - self.start_ns, 0)

    def pct(self, ns: int) -> float:
        """``ns`` as a percentage of the range."""
        return 100.0 * ns / self.span_ns if self.span_ns > 0 else 0.0


def _clipped(
    starts: np.ndarray, ends: np.ndarray, lo: int, hi: int
) -> tuple[np.ndarray, np.ndarray]:
    return np.clip(starts, lo, hi), np.clip(ends, lo, hi)


def range_stats(tl: Timeline, start_ns: int, end_ns: int) -> RangeStats:
    """The figures of ``tl`` within ``[start_ns, end_ns)`` (absolute ns; swapped if reversed)."""
    lo, hi = sorted((int(start_ns), int(end_ns)))
    span = hi - lo
    dev = device_op_mask(tl)
    # only ops that meet the range matter: select them once, then work on the few
    dev &= (tl.end > lo) & (tl.start < hi)
    calls = host_call_mask(tl) & (tl.issue_end > lo) & (tl.issue_start < hi)
    d = np.flatnonzero(dev)
    start, end = _clipped(tl.start[d], tl.end[d], lo, hi)
    stream, engine = tl.stream[d], tl.engine[d]

    def busy(mask: np.ndarray) -> int:
        return union_length(start[mask], end[mask])

    def lane(kind_name: str, name: str, ns: int) -> LaneBusy:
        return LaneBusy(kind_name, name, ns, 100.0 * ns / span if span > 0 else 0.0)

    host = union_length(*_clipped(tl.issue_start[calls], tl.issue_end[calls], lo, hi))
    lanes = [lane("host", "Host", host)]
    lanes += [lane("stream", n, busy(stream == s)) for s, n in enumerate(tl.stream_names)]
    engine_sets = [(start[engine == e], end[engine == e]) for e in range(len(tl.engine_names))]
    lanes += [
        lane("engine", n, union_length(*iv))
        for n, iv in zip(tl.engine_names, engine_sets, strict=True)
    ]
    copy = copy_op_mask(tl)[d]
    compute = compute_op_mask(tl)[d]
    # ops counted: device work in the range, or else a host call in it (syncs, host work)
    counted = (tl.on_device & (tl.end > lo) & (tl.start < hi)) | (calls & ~tl.on_device)
    counts = np.bincount(tl.kind[counted].astype(np.int64), minlength=len(OP_KINDS))
    return RangeStats(
        start_ns=lo,
        end_ns=hi,
        lanes=lanes,
        device_busy_ns=union_length(start, end),
        engines_overlap_ns=covered_at_least(engine_sets, 2),
        copy_ns=busy(copy),
        compute_ns=busy(compute),
        copy_compute_overlap_ns=overlap_length(
            (start[compute], end[compute]), (start[copy], end[copy])
        ),
        op_counts={OP_KINDS[k]: int(c) for k, c in enumerate(counts.tolist()) if c},
    )
