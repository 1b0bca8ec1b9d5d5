"""An expert system that explains a schedule, grounded in the model that produced it.

:func:`explain` runs every rule of :data:`RULES` over a pipeline and its timeline (simulated or
measured) and returns :class:`Insight` objects, most severe first. Each rule is a small function
with a stable id. The rules about the API calls (``pageable_copy``, ``sync_copy``,
``legacy_default_serialises``, ``launch_bound``) live in ``insight_rules.py``, what they
share in ``insight_context.py``; the schedule
rules here:

* ``false_dependency``: ops held at the head of a hardware queue that another stream shares.
* ``breadth_first_blocking``: ops ready to run but held back by issue order, either in a Fermi
  class GPU's hardware queues or behind a host sync in the middle of the issue loop.
* ``no_overlap``: copies and kernels never running at the same time.
* ``idle_engine_gap``: an engine idle for a long stretch while the others work.
* ``model_disagrees``: with a measurement, the ops the model gets wrong and the likely cause.

The rules about multi-device communication (``exposed_communication``, ``small_collectives``)
live in ``insight_comms.py``.

Where the preset is known, fixes are tried on the model (pinned memory, async copies,
non-blocking streams, 32 connections, another issue order, syncs moved later, free kernel
launches) and the saving is reported. Rules stay quiet below a noise floor (5 us and a few % of
the makespan), and grade an effect by what it costs the run, so that a well-designed pipeline
gets no warnings.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from swimlanes.analysis.insight_comms import exposed_communication, small_collectives
from swimlanes.analysis.insight_context import SEVERITIES, Insight, InsightContext
from swimlanes.analysis.insight_rules import (
    launch_bound,
    legacy_default_serialises,
    pageable_copy,
    sync_copy,
)
from swimlanes.analysis.insight_schedule import (
    _queue_model,
    breadth_first_blocking,
    false_dependency,
    reorder_issue,
)
from swimlanes.analysis.what_if import what_if_preset
from swimlanes.engine import DevicePreset
from swimlanes.model.document import (
    HOST_COPY_OPS,
    OP_KINDS,
    Pipeline,
)
from swimlanes.timeline.compare import compare_timelines, fmt_pct, fmt_time, plural
from swimlanes.timeline.metrics import (
    device_op_mask,
    interval_union,
    overlap_length,
    union_length,
)
from swimlanes.timeline.timeline import NO_TIME, Timeline

__all__ = ["RULES", "Insight", "InsightContext", "explain", "reorder_issue"]

_KERNEL = OP_KINDS.index("kernel")
_HOST_WORK = {
    "host": "CPU work on the issuing thread",
    "malloc": "cudaMalloc, which also synchronises the device",
    "free": "cudaFree, which synchronises the device",
}


def _engine_gaps(ctx: InsightContext, engine: int) -> list[tuple[int, int]]:
    tl = ctx.timeline
    mask = device_op_mask(tl) & (tl.engine == engine)
    starts, ends = interval_union(tl.start[mask], tl.end[mask])
    return [(int(a), int(b)) for a, b in zip(ends[:-1], starts[1:], strict=True)]


def _host_activity(ctx: InsightContext, gap: tuple[int, int]) -> int | None:
    """The host call that overlaps the gap the most (None if the host was idle)."""
    tl = ctx.timeline
    ok = (tl.issue_start != NO_TIME) & (tl.issue_end != NO_TIME)
    cover = np.minimum(tl.issue_end, gap[1]) - np.maximum(tl.issue_start, gap[0])
    cover = np.where(ok, cover, 0)
    best = int(np.argmax(cover)) if len(cover) else 0
    return best if len(cover) and cover[best] > 0 else None


def _gap_cause(ctx: InsightContext, engine: int, gap: tuple[int, int]) -> tuple[int, str] | None:
    """The op that ended the gap and why it had not started, or None when the host held it
    back with a call that another rule explains (blocking copies, syncs, launch cost)."""
    tl = ctx.timeline
    cands = np.flatnonzero(device_op_mask(tl) & (tl.engine == engine) & (tl.start == gap[1]))
    if len(cands) == 0:
        return None
    row = int(cands[0])
    if tl.issue_start[row] != NO_TIME and tl.issue_start[row] > (gap[0] + gap[1]) // 2:
        busy = _host_activity(ctx, gap)
        if busy is None or tl.op_kind(busy) not in _HOST_WORK:
            return None
        return row, (
            f"was issued only at {fmt_time(int(tl.issue_start[row]))}: the host thread was "
            f"busy in {ctx.name(busy)} ({_HOST_WORK[tl.op_kind(busy)]})"
        )
    deps = ctx.deps_of(row)
    if not deps:
        if ctx.ready[row] <= gap[0]:
            return None  # ready all along: a queue or issue-order effect, reported by its rule
        return row, f"became ready only at {fmt_time(int(ctx.ready[row]))}"
    src, kind = max(deps, key=lambda d: int(tl.end[d[0]]))
    via = src
    for _ in range(8):  # look through event records / waits to the op that did the work
        upstream = ctx.deps_of(via)
        if tl.engine[via] >= 0 or not upstream:
            break
        via = max(upstream, key=lambda d: int(tl.end[d[0]]))[0]
    if via != src and tl.engine[via] >= 0:
        return row, f"waited for {ctx.name(via)} (through {ctx.name(src)})"
    return row, f"waited for {ctx.name(src)} ({kind.replace('_', ' ')} order)"


def idle_engine_gap(ctx: InsightContext) -> list[Insight]:
    """Long idle stretches of an engine while the rest of the GPU works."""
    tl = ctx.timeline
    dev = device_op_mask(tl)
    out = []
    for e, engine_name in enumerate(tl.engine_names):
        others = dev & (tl.engine != e)
        if len(tl.engine_device) == len(tl.engine_names):  # several devices: its own device's
            same = np.flatnonzero(tl.engine_device == tl.engine_device[e])
            others &= np.isin(tl.engine, same)
        other_union = interval_union(tl.start[others], tl.end[others])
        found = []
        for gap in _engine_gaps(ctx, e):
            length = gap[1] - gap[0]
            if length < max(0.10 * ctx.makespan, 5_000):
                continue
            busy = overlap_length(other_union, (np.array([gap[0]]), np.array([gap[1]])))
            cause = _gap_cause(ctx, e, gap)
            if busy >= 0.5 * length and cause is not None:
                found.append((length, gap, busy, cause))
        if not found:
            continue
        found.sort(reverse=True)
        worst = found[0][0]
        shown = sorted(found[:3], key=lambda f: f[1])
        parts = []
        for length, gap, busy, (row, why) in shown:
            parts.append(
                f"from {fmt_time(gap[0])} to {fmt_time(gap[1])} ({fmt_time(length)}, other "
                f"engines busy {fmt_pct(busy, length)} of it): the next op {ctx.name(row)} {why}"
            )
        out.append(
            Insight(
                rule="idle_engine_gap",
                severity="warning" if worst >= 0.25 * ctx.makespan else "info",
                title=f"{engine_name} engine idle for {fmt_time(worst)} while others work",
                message=f"The {engine_name} engine sat idle " + "; ".join(parts) + ".",
                advice=(
                    "Give this engine independent work for that stretch: split the data into "
                    "more, smaller chunks on more streams so the next chunk's work is ready "
                    "sooner; issue device work before long host work (or move that work to "
                    "another thread or a cudaLaunchHostFunc callback)."
                ),
                op_indexes=ctx.indexes(r for *_, (r, _) in shown),
            )
        )
    return out


def no_overlap(ctx: InsightContext) -> list[Insight]:
    """Copies and kernels that never run at the same time although both take real time."""
    tl = ctx.timeline
    dev = device_op_mask(tl)
    copies = dev & np.isin(tl.kind, [OP_KINDS.index(k) for k in HOST_COPY_OPS])
    kernels = dev & (tl.kind == _KERNEL)
    copy_busy = union_length(tl.start[copies], tl.end[copies])
    kernel_busy = union_length(tl.start[kernels], tl.end[kernels])
    if min(copy_busy, kernel_busy) < max(0.10 * ctx.makespan, 5_000):
        return []
    both = overlap_length((tl.start[copies], tl.end[copies]), (tl.start[kernels], tl.end[kernels]))
    if both > 0.05 * min(copy_busy, kernel_busy):
        return []
    rows = np.flatnonzero(copies | kernels)
    streams = sorted({tl.stream_name(int(r)) or "?" for r in rows})
    hidden = min(copy_busy, kernel_busy)
    together = (
        "never ran at the same time" if both == 0 else f"overlapped for only {fmt_time(both)}"
    )
    message = (
        f"Host-device copies ({fmt_time(copy_busy)}) and kernels ({fmt_time(kernel_busy)}) "
        f"{together}, although the copy engines work independently of the SMs: up to "
        f"{fmt_time(hidden)} ({fmt_pct(hidden, ctx.makespan)} of the run) could be hidden "
        "behind the other work."
    )
    if len(streams) == 1:
        message += (
            f" All of it is on stream {streams[0]}, and a stream runs its ops one after another."
        )
        advice = (
            "Split the data into chunks and issue each chunk's H2D, kernel and D2H on its own "
            "stream (2 to 4 created streams, pinned host memory, cudaMemcpyAsync), so chunk "
            "n+1's copy runs while chunk n's kernel computes."
        )
    else:
        culprits = "the legacy default stream, pageable or synchronous copies"
        if _queue_model(ctx) == "fermi":
            culprits += ", host syncs, or the issue order in this GPU's hardware queues"
        else:
            culprits += ", or host syncs"
        message += (
            f" The work is spread over {len(streams)} streams, so something serialises them: "
            f"look for {culprits}."
        )
        advice = (
            "Remove what serialises the streams (see the other insights), keep copies async "
            "from pinned memory, and chunk the data so copies and kernels of different chunks "
            "can run together."
        )
    return [
        Insight(
            rule="no_overlap",
            severity="warning",
            title="Copies and kernels never overlap"
            if both == 0
            else "Copies and kernels barely overlap",
            message=message,
            advice=advice,
            op_indexes=ctx.indexes(int(r) for r in rows),
        )
    ]


def _host_cost_text(ctx: InsightContext, measured: Timeline) -> str:
    def median_cost(tl: Timeline) -> float | None:
        ok = (tl.kind == _KERNEL) & (tl.issue_start != NO_TIME) & (tl.issue_end != NO_TIME)
        costs = (tl.issue_end - tl.issue_start)[ok]
        return float(np.median(costs)) if len(costs) else None

    sim_cost, meas_cost = median_cost(ctx.timeline), median_cost(measured)
    if sim_cost is None or meas_cost is None or abs(sim_cost - meas_cost) < 0.25 * sim_cost:
        return ""
    return (
        f" A kernel launch cost the host {fmt_time(meas_cost)} on the GPU machine and "
        f"{fmt_time(sim_cost)} in the model, which moves every later op."
    )


def model_disagrees(ctx: InsightContext) -> list[Insight]:
    """With a measurement: where the model differs from the GPU, and the likely cause."""
    if ctx.measured is None or ctx.timeline.source == "measured":
        return []
    cmp = compare_timelines(ctx.timeline, ctx.measured)
    flagged = [int(r) for r in np.flatnonzero(cmp.flagged)]
    err = cmp.makespan_error
    if not flagged and not (abs(err) > cmp.threshold):
        return []
    dur_flag = [
        r
        for r in flagged
        if cmp.on_device[r]
        and abs(int(cmp.duration_error_ns[r])) > cmp.threshold * max(int(cmp.meas_duration[r]), 1)
    ]
    # an op that only moved because what it waited for was mis-timed is a knock-on, not a cause
    flagged_idx = {int(cmp.index[r]) for r in flagged}
    placed = [
        r
        for r in flagged
        if r not in dur_flag
        and not any(
            int(ctx.timeline.index[src]) in flagged_idx
            for src, _ in ctx.deps_of(ctx.row_of_index[int(cmp.index[r])])
        )
    ]
    causes = cmp.duration_causes(dur_flag)
    if placed:
        causes.append(
            f"{plural(len(placed), 'op')} took about the right time and waited for nothing "
            "mis-timed, but ran at a different moment: an ordering, queue or host-timing "
            f"effect ({ctx.names([ctx.row_of_index[int(cmp.index[r])] for r in placed])})."
        )
    err_text = "n/a" if np.isnan(err) else f"{100 * err:+.1f}%"
    message = (
        f"Makespan: model {fmt_time(cmp.sim_metrics.makespan_ns)}, measured "
        f"{fmt_time(cmp.meas_metrics.makespan_ns)} ({err_text}). {len(flagged)} of "
        f"{plural(len(cmp), 'op')} differ by more than {100 * cmp.threshold:.0f}%. "
        + " ".join(causes)
        + _host_cost_text(ctx, ctx.measured)
    )
    rows_idx = [int(cmp.index[r]) for r in flagged]
    return [
        Insight(
            rule="model_disagrees",
            severity="warning" if abs(err) > cmp.threshold else "info",
            title=f"The model differs from the measurement ({err_text} makespan)",
            message=message.strip(),
            advice=(
                "Calibrate a preset on this GPU (swimlanes calibrate -o gpu.json) and simulate "
                "with --device gpu.json; if one op kind stays off, its behaviour is outside the "
                "model (see the docs' list of what the model does not capture)."
            ),
            op_indexes=tuple(sorted(rows_idx)),
        )
    ]


#: Every rule, in the order their insights are listed at equal severity.
RULES: tuple[Callable[[InsightContext], list[Insight]], ...] = (
    pageable_copy,
    sync_copy,
    legacy_default_serialises,
    false_dependency,
    breadth_first_blocking,
    launch_bound,
    no_overlap,
    idle_engine_gap,
    exposed_communication,
    small_collectives,
    model_disagrees,
)


def explain(
    pipeline: Pipeline,
    timeline: Timeline,
    preset: DevicePreset | str | None = None,
    measured: Timeline | None = None,
) -> list[Insight]:
    """Insights about ``timeline`` (the schedule of ``pipeline``), most severe first.

    ``preset`` (a DevicePreset or preset name) enables what-if estimates; by default the preset
    that simulated the timeline. With ``measured``, the model's disagreements are explained too.
    """
    resolved = what_if_preset(preset, timeline)
    ctx = InsightContext(pipeline, timeline, resolved, measured)
    ctx.timeline_is_model = (
        timeline.source == "simulated"
        and resolved is not None
        and resolved.name == timeline.meta.get("preset")
    )
    found: list[Insight] = []
    for rule in RULES:
        found.extend(rule(ctx))
    order = {rule.__name__: i for i, rule in enumerate(RULES)}
    found.sort(
        key=lambda i: (SEVERITIES.index(i.severity), -(i.estimated_saving_ns or 0), order[i.rule])
    )
    return found
