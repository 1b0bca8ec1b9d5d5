"""Two timelines side by side: before and after a change, two designs, two devices.

Unlike :mod:`swimlanes.timeline.compare` (a simulation against the measurement of the same
pipeline), the two timelines may come from different programs, so their ops are matched first:

* ``index``: by program index, when both have the same ops in the same order (one pipeline
  simulated on two devices, or measured twice);
* ``label``: the k-th op with a label in A is the k-th op with that label in B (labels a user
  or a profiler gave: kernel names, ``record_function`` ranges);
* ``stream``: the k-th op of a kind on a stream in A is the k-th op of that kind on that stream
  in B (two runs of one program whose ops carry no useful labels);
* ``auto`` (the default): ``index`` when the op kinds agree row for row, else ``label`` when at
  least half the ops of each have a label found in the other, else ``stream``.

Times are each timeline's own, from its own start (``Timeline.t0``): what is compared is where an
op sits in its run. Deltas are "B minus A": positive means B is later or longer. Qt-free.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from swimlanes.timeline.compare import fmt_time
from swimlanes.timeline.timeline import NO_TIME, Timeline

MATCHES = ("auto", "index", "label", "stream")


@dataclass
class TimelineDiff:
    """Matched rows (``rows_a[i]`` pairs with ``rows_b[i]``) and the rows only one side has."""

    a: Timeline
    b: Timeline
    matched_by: str
    rows_a: np.ndarray
    rows_b: np.ndarray
    only_a: np.ndarray
    only_b: np.ndarray

    @property
    def makespan_delta_ns(self) -> int:
        return self.b.makespan_ns - self.a.makespan_ns

    def spans(self, side: str) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of the matched rows on ``side`` ("a" or "b"), from that timeline's t0:
        the device span where the op has one, else its host call."""
        tl, rows = (self.a, self.rows_a) if side == "a" else (self.b, self.rows_b)
        on = tl.on_device[rows]
        start = np.where(on, tl.start[rows], tl.issue_start[rows])
        end = np.where(on, tl.end[rows], tl.issue_end[rows])
        missing = (start == NO_TIME) | (end == NO_TIME)
        t0 = tl.t0
        return np.where(missing, NO_TIME, start - t0), np.where(missing, NO_TIME, end - t0)

    def deltas(self) -> tuple[np.ndarray, np.ndarray]:
        """Per matched pair, (start delta, duration delta) in ns, B minus A (NO_TIME: a side
        has no span)."""
        sa, ea = self.spans("a")
        sb, eb = self.spans("b")
        missing = (sa == NO_TIME) | (sb == NO_TIME)
        start = np.where(missing, NO_TIME, sb - sa)
        duration = np.where(missing, NO_TIME, (eb - sb) - (ea - sa))
        return start, duration


def diff_timelines(a: Timeline, b: Timeline, match: str = "auto") -> TimelineDiff:
    """Match ``a``'s ops with ``b``'s (see the module doc for ``match``)."""
    if match not in MATCHES:
        raise ValueError(f"match must be one of {', '.join(MATCHES)}, not {match!r}")
    if match == "auto":
        match = _auto_match(a, b)
    key: Callable[[Timeline, int], Hashable]
    if match == "index":
        key = _index_key
    elif match == "label":
        key = _label_key
    else:
        key = _stream_key
    rows_a, rows_b = _match_by(a, b, key)
    return TimelineDiff(
        a,
        b,
        match,
        rows_a,
        rows_b,
        np.setdiff1d(np.arange(len(a)), rows_a),
        np.setdiff1d(np.arange(len(b)), rows_b),
    )


def _index_key(tl: Timeline, r: int) -> Hashable:
    return int(tl.index[r])


def _label_key(tl: Timeline, r: int) -> Hashable:
    return tl.labels[r]


def _stream_key(tl: Timeline, r: int) -> Hashable:
    return (tl.stream_name(r), tl.op_kind(r))


def _auto_match(a: Timeline, b: Timeline) -> str:
    if len(a) == len(b) and np.array_equal(a.kind, b.kind):
        return "index"
    la, lb = {x for x in a.labels if x}, {x for x in b.labels if x}
    shared = la & lb
    if len(a) and len(b):
        in_a = sum(1 for x in a.labels if x in shared) / len(a)
        in_b = sum(1 for x in b.labels if x in shared) / len(b)
        if min(in_a, in_b) >= 0.5:
            return "label"
    return "stream"


def _match_by(
    a: Timeline, b: Timeline, key: Callable[[Timeline, int], Hashable]
) -> tuple[np.ndarray, np.ndarray]:
    """The k-th row of a key in A with the k-th row of that key in B (rows in time order of
    their issue, so a reordered program still pairs its repeated ops in order)."""
    seen: dict[Hashable, list[int]] = defaultdict(list)
    for r in _in_issue_order(b):
        seen[key(b, r)].append(r)
    taken: dict[Hashable, int] = defaultdict(int)
    pairs: list[tuple[int, int]] = []
    for r in _in_issue_order(a):
        k = key(a, r)
        slot = taken[k]
        if slot < len(seen.get(k, ())):
            pairs.append((r, seen[k][slot]))
            taken[k] = slot + 1
    pairs.sort()
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    arr = np.asarray(pairs, dtype=np.int64)
    return arr[:, 0], arr[:, 1]


def _in_issue_order(tl: Timeline) -> list[int]:
    when = np.where(tl.issue_start != NO_TIME, tl.issue_start, tl.start)
    return np.argsort(when, kind="stable").tolist()


def signed_time(ns: int) -> str:
    """A delta as ``+1.25 ms`` / ``-40.0 us`` ("" for NO_TIME)."""
    return "" if ns == NO_TIME else ("+" if ns >= 0 else "-") + fmt_time(abs(ns))


def delta_summary(d: TimelineDiff) -> str:
    """``B - A: -3.14 ms (-6.9%); 13 ops matched by index, 0 only in A, 0 only in B``."""
    base = d.a.makespan_ns
    pct = f" ({100.0 * d.makespan_delta_ns / base:+.1f}%)" if base else ""
    return (
        f"B - A: {signed_time(d.makespan_delta_ns)}{pct}; {len(d.rows_a)} ops matched by "
        f"{d.matched_by}, {len(d.only_a)} only in A, {len(d.only_b)} only in B"
    )


def _us(ns: int) -> float | None:
    return None if ns == NO_TIME else round(int(ns) / 1000.0, 3)


def _side(tl: Timeline) -> dict[str, Any]:
    return {
        "name": tl.name,
        "source": tl.source,
        "device": tl.device,
        "ops": len(tl),
        "makespan_us": _us(tl.makespan_ns),
    }


def diff_json(d: TimelineDiff) -> dict[str, Any]:
    """The ``swimlanes diff --json`` object: both sides, the makespan delta, every matched op
    with its start and duration on each side and the deltas (B minus A, us), and the program
    indices only one side has."""
    sa, ea = d.spans("a")
    sb, eb = d.spans("b")
    start_delta, duration_delta = d.deltas()
    ops = []
    for i, (ra, rb) in enumerate(zip(d.rows_a.tolist(), d.rows_b.tolist(), strict=True)):
        ops.append(
            {
                "a_index": int(d.a.index[ra]),
                "b_index": int(d.b.index[rb]),
                "op": d.a.op_kind(ra),
                "stream": d.a.stream_name(ra),
                "label": d.a.labels[ra],
                "a_start_us": _us(sa[i]),
                "b_start_us": _us(sb[i]),
                "start_delta_us": _us(start_delta[i]),
                "a_duration_us": None if sa[i] == NO_TIME else _us(ea[i] - sa[i]),
                "b_duration_us": None if sb[i] == NO_TIME else _us(eb[i] - sb[i]),
                "duration_delta_us": _us(duration_delta[i]),
            }
        )
    base = d.a.makespan_ns
    return {
        "a": _side(d.a),
        "b": _side(d.b),
        "matched_by": d.matched_by,
        "makespan_delta_us": _us(d.makespan_delta_ns),
        "makespan_delta_pct": round(100.0 * d.makespan_delta_ns / base, 2) if base else None,
        "ops": ops,
        "only_in_a": [int(d.a.index[r]) for r in d.only_a.tolist()],
        "only_in_b": [int(d.b.index[r]) for r in d.only_b.tolist()],
    }
