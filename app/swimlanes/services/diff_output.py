"""``swimlanes diff`` as a table."""

from __future__ import annotations

import numpy as np

from swimlanes.timeline.compare import fmt_time
from swimlanes.timeline.diff import TimelineDiff, delta_summary, signed_time
from swimlanes.timeline.timeline import NO_TIME, Timeline


def _title(tl: Timeline) -> str:
    return f"{tl.name or 'unnamed'} ({tl.source}{', ' + tl.device if tl.device else ''})"


def format_diff(d: TimelineDiff, top: int = 15) -> str:
    """Both makespans and their delta, what matched, and the ops that changed most."""
    a, b = d.a, d.b
    lines = [
        f"A: {_title(a)}  makespan {fmt_time(a.makespan_ns)}",
        f"B: {_title(b)}  makespan {fmt_time(b.makespan_ns)}",
        delta_summary(d),
    ]
    start, duration = d.deltas()
    has = (start != NO_TIME) & (duration != NO_TIME)
    order = np.flatnonzero(has)
    order = order[np.argsort(-np.maximum(np.abs(start[order]), np.abs(duration[order])))]
    if len(order):
        lines.append(
            f"{'A #':>6} {'B #':>6}  {'op':<12} {'stream':<12} {'start B-A':>11} "
            f"{'duration B-A':>13}  label"
        )
    for i in order[:top].tolist():
        ra = int(d.rows_a[i])
        lines.append(
            f"{int(a.index[ra]):>6} {int(b.index[d.rows_b[i]]):>6}  {a.op_kind(ra):<12} "
            f"{str(a.stream_name(ra) or '-'):<12} {signed_time(int(start[i])):>11} "
            f"{signed_time(int(duration[i])):>13}  {a.labels[ra]}"
        )
    if len(order) > top:
        lines.append(f"... {len(order) - top} more matched ops (--json lists every one)")
    return "\n".join(lines)
