"""The critical path as ``swimlanes critical-path`` prints it: a table and a JSON object."""

from __future__ import annotations

from typing import Any

from swimlanes.analysis.critical_path import LINK_NAMES, CriticalPath
from swimlanes.timeline.compare import fmt_time
from swimlanes.timeline.timeline import Timeline


def _us(ns: int) -> float:
    return round(ns / 1000.0, 3)


def critical_path_json(tl: Timeline, cp: CriticalPath) -> dict[str, Any]:
    """``makespan_us``, the ``path`` (first step first), ``share_us`` by what filled the path,
    and per-op ``slack_us`` (device) and ``host_slack_us`` (its call); None where an op has no
    such span. Times are microseconds from the timeline's start."""
    t0 = tl.t0
    path = [
        {
            "index": int(tl.index[s.row]),
            "op": tl.op_kind(s.row),
            "stream": tl.stream_name(s.row),
            "label": tl.labels[s.row],
            "on": "host" if s.on_host else "device",
            "start_us": _us(s.start_ns - t0),
            "end_us": _us(s.end_ns - t0),
            "via": s.via,
            "lag_us": _us(s.lag_ns),
        }
        for s in cp.steps
    ]
    ops = [
        {
            "index": int(tl.index[r]),
            "slack_us": None if cp.device_slack_ns[r] < 0 else _us(int(cp.device_slack_ns[r])),
            "host_slack_us": None if cp.host_slack_ns[r] < 0 else _us(int(cp.host_slack_ns[r])),
        }
        for r in range(len(tl))
    ]
    share = {k: _us(v) for k, v in cp.share_ns(tl).items()}
    return {"makespan_us": _us(cp.makespan_ns), "path": path, "share_us": share, "ops": ops}


def format_critical_path(tl: Timeline, cp: CriticalPath, slack_rows: int = 10) -> str:
    """The path as a table (what waited for what), its share by kind, and the ops with the
    least slack that are not on it."""
    t0 = tl.t0
    lines = [
        f"critical path of {tl.name or 'the timeline'}: {len(cp.steps)} steps over "
        f"{fmt_time(cp.makespan_ns)}",
        f"{'#':>6}  {'op':<12} {'on':<6} {'stream':<12} {'start':>11} {'end':>11}  "
        f"{'after':<32} label",
    ]
    for s in cp.steps:
        via = "" if s.via is None else LINK_NAMES[s.via]
        if s.via is not None and s.lag_ns:
            via += f" +{fmt_time(s.lag_ns)}"
        lines.append(
            f"{int(tl.index[s.row]):>6}  {tl.op_kind(s.row):<12} "
            f"{'host' if s.on_host else 'device':<6} {str(tl.stream_name(s.row) or '-'):<12} "
            f"{fmt_time(s.start_ns - t0):>11} {fmt_time(s.end_ns - t0):>11}  {via:<32} "
            f"{tl.labels[s.row]}"
        )
    total = max(1, cp.makespan_ns)
    share = cp.share_ns(tl)
    lines.append(
        "along the path: "
        + ", ".join(f"{k} {fmt_time(v)} ({100 * v / total:.0f}%)" for k, v in share.items() if v)
    )
    lines += _least_slack(tl, cp, slack_rows)
    return "\n".join(lines)


def _least_slack(tl: Timeline, cp: CriticalPath, count: int) -> list[str]:
    rows = cp.least_slack_rows(count)
    if not rows:
        return []
    out = ["ops off the path with the least slack (how much later each could end):"]
    for r in rows:
        out.append(
            f"{int(tl.index[r]):>6}  {tl.op_kind(r):<12} {str(tl.stream_name(r) or '-'):<12} "
            f"slack {fmt_time(int(cp.device_slack_ns[r])):>11}  {tl.labels[r]}"
        )
    return out
