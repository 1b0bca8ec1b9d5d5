"""Insight rules about scheduling: shared hardware queues and issue order.

Split from insights.py: these rules look at "queue" dependencies, the host's issue order and
what the model says reordering would save.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Literal

import numpy as np

from swimlanes.analysis.insight_context import HOST_SYNC_OPS, Insight, InsightContext, grade
from swimlanes.model.document import (
    DEFAULT_STREAM,
    EVENT_OPS,
    OP_KINDS,
    STREAM_OPS,
    Op,
    Pipeline,
)
from swimlanes.timeline.compare import fmt_pct, fmt_time, plural
from swimlanes.timeline.metrics import (
    device_op_mask,
    interval_union,
)
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME

_QUEUE = DEP_KINDS.index("queue")
_SM_KINDS = [OP_KINDS.index(k) for k in ("kernel", "memset", "d2d")]
#: Host calls after which the program may depend on what the host learnt or did.
_HOST_BARRIERS = ("stream_sync", "event_sync", "device_sync", "host", "malloc", "free")


def _busy_within(union: tuple[np.ndarray, np.ndarray], a: int, b: int) -> int:
    """How much of ``[a, b)`` an interval union covers."""
    return int((np.clip(union[1], a, b) - np.clip(union[0], a, b)).sum())


def _engine_full(ctx: InsightContext, engine: int) -> tuple[np.ndarray, np.ndarray]:
    """When an engine could take no more work: a copy engine (or SMs that run one kernel at a
    time) while it works; otherwise the SMs while every SM is occupied, since kernels share
    SMs (without occupancy data they count as never full)."""
    tl = ctx.timeline
    mask = device_op_mask(tl) & (tl.engine == engine)
    one_at_a_time = ctx.preset is not None and ctx.preset.max_resident_kernels <= 1
    if one_at_a_time or not np.any(mask & np.isin(tl.kind, _SM_KINDS)):
        return interval_union(tl.start[mask], tl.end[mask])
    t, sms = tl.occupancy_time, tl.occupancy_sms
    if tl.sm_count <= 0 or len(t) < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    full = np.flatnonzero(sms[:-1] >= tl.sm_count)
    return interval_union(t[full], t[full + 1])


def _queue_delays(ctx: InsightContext, rows: list[int] | None = None) -> tuple[list[int], int]:
    """Device ops that started after they were ready while their engine was free (waiting for
    a busy engine is contention, not a queue): by default those held by a "queue" dependency,
    or the given rows. Returns the rows held and the total time they were held."""
    tl = ctx.timeline
    dev = device_op_mask(tl)
    if rows is None:
        rows = sorted({int(r) for r in tl.dep_dst[tl.dep_kind == _QUEUE]})
    unions = {e: _engine_full(ctx, e) for e in range(len(tl.engine_names))}
    held_rows, total = [], 0
    for r in rows:
        if not dev[r] or tl.start[r] <= ctx.ready[r]:
            continue
        a, b = int(ctx.ready[r]), int(tl.start[r])
        held = b - a - _busy_within(unions[int(tl.engine[r])], a, b)
        if held > max(1_000, 0.001 * ctx.makespan):  # sub-us steps are rounding, not queues
            held_rows.append(r)
            total += held
    return held_rows, total


def _were(rows: list[int]) -> str:
    return "was" if len(rows) == 1 else "were"


def _their(rows: list[int]) -> str:
    return "its" if len(rows) == 1 else "their"


def _queue_model(ctx: InsightContext) -> str:
    return (ctx.preset.hardware_queues if ctx.preset is not None else "") or "hyperq"


def false_dependency(ctx: InsightContext) -> list[Insight]:
    """Streams aliased onto one hardware queue (more streams than connections)."""
    if _queue_model(ctx) == "fermi":
        return []  # a single queue by design: breadth_first_blocking explains it
    rows, delay = _queue_delays(ctx)
    if not rows or not ctx.significant(delay):
        return []
    tl = ctx.timeline
    default = ctx.preset.connections if ctx.preset is not None else None
    connections = ctx.timeline.meta.get("connections", default)
    streams = sorted({s for s in (tl.stream_name(r) for r in range(len(tl))) if s})
    saving = None
    if ctx.preset is not None:
        wide = dataclasses.replace(ctx.preset, connections=32)
        saving = ctx.what_if_saving("connections32", None, wide)
    conn_text = f"{connections} hardware queues (connections)" if connections else "fewer queues"
    message = (
        f"The program uses {len(streams)} streams but the device has {conn_text}: streams are "
        "mapped onto them round-robin in creation order, and each queue is in order, so an op "
        "that waits at a queue's head holds back the other streams behind it. "
        f"{ctx.names(rows)} {_were(rows)} ready but waited {fmt_time(delay)} in total "
        f"({fmt_pct(delay, ctx.makespan)} of the run) while {_their(rows)} engine was free, "
        "because of such false dependencies."
    )
    if saving is not None and not ctx.significant(saving):
        message += (
            " Here it does not lengthen the run (the model predicts the same makespan with 32 "
            "connections), but these ops finish later than they could."
        )
    elif saving:
        message += f" With 32 connections the model saves {fmt_time(saving)}."
    return [
        Insight(
            rule="false_dependency",
            severity=grade(ctx, delay, saving),
            title="Streams share a hardware queue (false dependencies)",
            message=message,
            advice=(
                "Set CUDA_DEVICE_MAX_CONNECTIONS=32 in the environment before the CUDA context "
                "is created (the default is 8), or use no more busy streams than connections; "
                "streams n and n+connections share a queue, so spread dependent work apart."
            ),
            op_indexes=ctx.indexes(rows),
            estimated_saving_ns=saving,
        )
    ]


def reorder_issue(pipeline: Pipeline, order: str) -> None:
    """Reissue each run of stream ops depth-first (stream by stream) or breadth-first (the
    first op of every stream, then the second, ...), in place. Host calls, synchronous or
    default-stream ops and runs containing events stay where they are, since moving them
    would change what the program means."""
    program = pipeline.program
    out: list[Op] = []
    run: list[Op] = []

    def flush() -> None:
        if any(op.op in EVENT_OPS for op in run):
            out.extend(run)
        else:
            ranks: dict[str | None, int] = {}
            seen: dict[str | None, int] = {}
            keyed = []
            for op in run:
                rank = ranks.setdefault(op.stream_name, len(ranks))
                pos = seen[op.stream_name] = seen.get(op.stream_name, -1) + 1
                keyed.append(((rank, pos) if order == "depth" else (pos, rank), op))
            out.extend(op for _, op in sorted(keyed, key=lambda k: k[0]))
        run.clear()

    for op in program:
        movable = op.op in STREAM_OPS and op.effective_async and op.stream_name != DEFAULT_STREAM
        if movable:
            run.append(op)
        else:
            flush()
            out.append(op)
    flush()
    pipeline.program = out


def _issue_order_what_if(ctx: InsightContext) -> tuple[str, int] | Literal[False] | None:
    """The issue order ("depth" or "breadth") the model prefers and what it saves; False when
    neither order does better, None when the model cannot tell (no preset)."""
    best: tuple[str, int] | Literal[False] | None = None
    for order in ("depth", "breadth"):
        saving = ctx.what_if_saving(f"order-{order}", functools.partial(reorder_issue, order=order))
        if saving is None:
            continue
        if ctx.significant(saving) and (not best or saving > best[1]):
            best = (order, saving)
        elif best is None:
            best = False
    return best


def _fermi_issue_order(ctx: InsightContext) -> Insight | None:
    tl = ctx.timeline
    rows, delay = _queue_delays(ctx, np.flatnonzero(device_op_mask(tl)).tolist())
    if not rows or not ctx.significant(delay):
        return None
    message = (
        "This GPU has one compute queue and one FIFO per copy engine, so work starts in the "
        "order it was issued across all streams: an op waiting for its dependency at a "
        "queue's head holds back every op issued after it."
    )
    if ctx.preset is not None and ctx.preset.completion_signal_delay:
        message += (
            " Also, a kernel's completion is signalled only when the last of the back-to-back "
            "kernels from different streams ends, so a copy waiting for one kernel waits for "
            "all of them."
        )
    message += (
        f" {ctx.names(rows)} {_were(rows)} ready but waited {fmt_time(delay)} in total while "
        f"{_their(rows)} engine was free ({fmt_pct(delay, ctx.makespan)} of the run)."
    )
    better = _issue_order_what_if(ctx)
    advice = (
        "Change the issue order so each engine's queue receives work in the order it can run: "
        "compare depth-first (each stream's H2D, kernel, D2H together) with breadth-first (all "
        "H2D, then all kernels, then all D2H); Hyper-Q GPUs (Kepler and later) remove most of "
        "this effect."
    )
    if better:
        name = "depth-first" if better[0] == "depth" else "breadth-first"
        message += f" Issued {name}, the model predicts {fmt_time(ctx.makespan - better[1])}."
        advice = f"Issue the work {name}. " + advice
        severity = grade(ctx, delay, better[1])
    elif better is False:
        message += " Neither depth-first nor breadth-first issue does better in the model here."
        severity = "info"  # real, but reordering does not fix it
    else:
        severity = grade(ctx, delay)
    return Insight(
        rule="breadth_first_blocking",
        severity=severity,
        title="Issue order holds back ready work in the hardware queues",
        message=message,
        advice=advice,
        op_indexes=ctx.indexes(rows),
        estimated_saving_ns=better[1] if better else None,
    )


def _synced_stream(ctx: InsightContext, sync_row: int) -> str | None:
    """The stream a host sync waits for (an event sync: the stream its event was recorded on)."""
    tl = ctx.timeline
    op = ctx.op(sync_row)
    if tl.op_kind(sync_row) != "event_sync" or op is None:
        return tl.stream_name(sync_row)
    for earlier in reversed(ctx.pipeline.program[: int(tl.index[sync_row])]):
        if earlier.op == "event_record" and earlier.event == op.event:
            return earlier.stream_name
    return None


def _late_after_sync(ctx: InsightContext, sync_row: int) -> tuple[list[int], int]:
    """Device ops on other streams, issued after a host sync, whose dependencies were done
    before the sync began: issued before it, they would have started earlier."""
    tl = ctx.timeline
    synced = _synced_stream(ctx, sync_row)
    begin, back = int(tl.issue_start[sync_row]), int(tl.issue_end[sync_row])
    late, total = [], 0
    for r in range(sync_row + 1, len(tl)):
        kind = tl.op_kind(r)
        if kind in _HOST_BARRIERS:
            break  # the host may need the synced result before going on: stop here
        if not ctx.on_device[r] or tl.stream_name(r) == synced or ctx.deps_of(r, ("event",)):
            continue
        could_start = max(int(ctx.dep_ready[r]), begin)
        if tl.start[r] >= back and back - could_start > 0:
            late.append(r)
            total += back - could_start
    return late, total


def _sync_in_issue_loop(ctx: InsightContext) -> Insight | None:
    tl = ctx.timeline
    found = []
    for row in range(len(tl)):
        if tl.op_kind(row) in HOST_SYNC_OPS and tl.issue_end[row] != NO_TIME:
            late, delay = _late_after_sync(ctx, row)
            if late:
                found.append((delay, row, late))
    total = sum(f[0] for f in found)
    if not found or not ctx.significant(total, 0.03):
        return None
    found.sort(reverse=True)
    parts = [
        f"{ctx.name(row)} blocked the host for "
        f"{fmt_time(int(tl.issue_end[row] - tl.issue_start[row]))} "
        f"while {ctx.names(late, 3)} on other streams had nothing left to wait for"
        for _, row, late in found[:3]
    ]
    more = f" ({len(found) - 3} more syncs like these)" if len(found) > 3 else ""
    rows = [r for _, row, late in found for r in (row, *late)]
    moves = {int(tl.index[row]): [int(tl.index[r]) for r in late] for _, row, late in found}

    def hoist(p: Pipeline) -> None:
        moved = {i for late in moves.values() for i in late}
        out: list[Op] = []
        for i, op in enumerate(p.program):
            out.extend(p.program[j] for j in moves.get(i, ()))
            if i not in moved:
                out.append(op)
        p.program = out

    saving = ctx.what_if_saving("hoist-syncs", hoist)
    message = (
        "; ".join(parts) + f"{more}. Issued only after the sync returned, these ops started "
        f"up to {fmt_time(total)} later in total ({fmt_pct(total, ctx.makespan)} of the run)."
    )
    if saving is not None:
        message += (
            f" Issued before the syncs, the model predicts {fmt_time(ctx.makespan - saving)} "
            f"instead of {fmt_time(ctx.makespan)}."
        )
        if not ctx.significant(saving):
            return None  # they start late but the run is no shorter: nothing to gain
    return Insight(
        rule="breadth_first_blocking",
        severity=grade(ctx, total, saving),
        title=f"{plural(len(found), 'host sync holds', 'host syncs hold')} back other streams",
        message=message,
        advice=(
            "Issue the other streams' work before waiting (breadth-first over the streams), "
            "and wait as late as possible; if the host needs only one stream's result, record "
            "an event there and cudaEventSynchronize on it after everything independent is "
            "issued."
        ),
        op_indexes=ctx.indexes(rows),
        estimated_saving_ns=saving,
    )


def breadth_first_blocking(ctx: InsightContext) -> list[Insight]:
    """Ops ready to run but held back by the order in which the host issued them."""
    found = [_sync_in_issue_loop(ctx)]
    if _queue_model(ctx) == "fermi":
        found.insert(0, _fermi_issue_order(ctx))
    return [i for i in found if i is not None]
