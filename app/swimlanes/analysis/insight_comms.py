"""Insight rules about multi-device communication: NCCL collectives that the SMs do not hide
(``exposed_communication``) and collectives too small for their per-call cost
(``small_collectives``). Both read :mod:`swimlanes.analysis.communication`; the second prices
merging pairs of consecutive collectives (buckets twice as large) with a what-if simulation.
"""

from __future__ import annotations

import numpy as np

from swimlanes.analysis.communication import DeviceCommunication, communication_summary
from swimlanes.analysis.insight_context import Insight, InsightContext, grade, saving_text
from swimlanes.model.document import COLLECTIVE_OPS, OP_KINDS, Op, Pipeline, Stream
from swimlanes.timeline.compare import fmt_bytes, fmt_pct, fmt_time, plural
from swimlanes.timeline.metrics import interval_union, overlap_length

_SM_KINDS = [OP_KINDS.index(k) for k in ("kernel", "memset", "d2d")]
#: A collective whose per-call latency is more than this share of its time is "small".
LATENCY_SHARE = 0.30
#: Exposed communication is reported when it is at least this share of the collectives' time.
EXPOSED_SHARE = 0.5


def _latency_us(ctx: InsightContext) -> float:
    return float(getattr(ctx.preset, "nccl_latency_us", 0.0) or 0.0)


def _summary(ctx: InsightContext) -> list[DeviceCommunication]:
    return communication_summary(ctx.timeline, _latency_us(ctx))


def _exposed_rows(ctx: InsightContext, dev: DeviceCommunication, d: int) -> list[tuple[int, int]]:
    """(exposed ns, row) of device ``d``'s collectives, most exposed first."""
    tl = ctx.timeline
    devices = (
        tl.host_device if tl.device_names and len(tl.host_device) == len(tl) else np.zeros(len(tl))
    )
    sm = np.isin(tl.kind, _SM_KINDS) & ctx.on_device
    sm &= (tl.engine >= 0) & (devices == d)
    kernels = interval_union(tl.start[sm], tl.end[sm])
    out = []
    for r in dev.rows:
        one = (np.array([tl.start[r]]), np.array([tl.end[r]]))
        exposed = int(tl.end[r] - tl.start[r]) - overlap_length(kernels, one)
        if exposed > 0:
            out.append((exposed, r))
    return sorted(out, key=lambda x: (-x[0], x[1]))


def exposed_communication(ctx: InsightContext) -> list[Insight]:
    """Collectives running while their device's SMs have nothing else to do."""
    summary = _summary(ctx)
    worst = max(
        (
            (dev.exposed_ns, d, dev)
            for d, dev in enumerate(summary)
            if dev.calls and dev.compute_ns > 0
        ),
        default=None,
        key=lambda x: x[0],
    )
    if worst is None:
        return []
    exposed, d, dev = worst
    if exposed < EXPOSED_SHARE * dev.communication_ns or not ctx.significant(exposed, 0.05):
        return []
    rows = _exposed_rows(ctx, dev, d)
    named = [r for _, r in rows[:4]]
    others = sum(1 for x in summary if x.calls and x.exposed_ns >= 0.9 * exposed) - 1
    where = f"{dev.device}" + (
        f" (and {plural(others, 'other device')} alike)" if others > 0 else ""
    )
    shared = _shared_streams(ctx, dev)
    message = (
        f"On {where}, {plural(dev.calls, 'collective')} ran for {fmt_time(dev.communication_ns)}, "
        f"and for {fmt_time(exposed)} of it ({fmt_pct(exposed, dev.communication_ns)}) no kernel "
        f"ran beside them: the SMs waited for the communication instead of hiding it. The "
        f"most exposed: {ctx.names(named)}. That is {fmt_pct(exposed, ctx.makespan)} of the run."
    )
    if len(shared) == dev.calls:
        message += (
            " They run on the same stream as the kernels, so stream order makes the next "
            "kernels wait for each of them."
        )
    elif shared:
        message += (
            f" {ctx.names(shared)} share a stream with the kernels, so stream order makes the "
            "next kernels wait for them."
        )
    saving = ctx.what_if_saving("comm-stream", separate_comm_streams) if shared else None
    message += saving_text(
        ctx,
        saving,
        "With the collectives on a communication stream of their own (each waiting on an event "
        "where it was issued, the stream's later ops waiting only for the last one)",
    )
    return [
        Insight(
            rule="exposed_communication",
            severity=grade(ctx, exposed, saving),
            title=f"Communication not overlapped: {fmt_time(exposed)} on {dev.device}",
            message=message,
            advice=(
                "Issue the collectives on a communication stream of their own (one per device), "
                "each waiting on an event recorded right after the kernels that produce its "
                "data, and start them early: bucket the data (as PyTorch DDP buckets gradients) "
                "so that the first collectives run while the later kernels still compute."
            ),
            op_indexes=ctx.indexes(r for _, r in rows),
            estimated_saving_ns=saving,
        )
    ]


def separate_comm_streams(pipeline: Pipeline) -> None:
    """Move the collectives that share a stream with kernels onto a new stream of the same
    device: each waits on an event recorded where it was issued, and the original stream's
    ops after the last of them wait for it (the ops in between no longer do: the what-if
    assumes they do not read the collectives' results, as a DDP backward pass does not)."""
    kernel_streams = {op.stream_name for op in pipeline.program if op.op == "kernel"}
    moved = {
        i
        for i, op in enumerate(pipeline.program)
        if op.op in COLLECTIVE_OPS and op.stream_name in kernel_streams
    }
    last = {pipeline.program[i].stream_name: i for i in sorted(moved)}
    names = {s.name for s in pipeline.all_streams}
    comm_of: dict[str, str] = {}
    program: list[Op] = []
    for i, op in enumerate(pipeline.program):
        stream = op.stream_name or ""
        if i not in moved:
            program.append(op)
            continue
        if stream not in comm_of:
            comm = f"{stream} comm"
            while comm in names:
                comm += " (what-if)"
            names.add(comm)
            comm_of[stream] = comm
            pipeline.streams.append(
                Stream(comm, "non_blocking", device=pipeline.stream_device(stream))
            )
        comm, ready = comm_of[stream], f"{stream} what-if {i}"
        program += [Op("event_record", stream, event=ready), Op("event_wait", comm, event=ready)]
        op.stream = comm
        program.append(op)
        if last[stream] == i:
            done = f"{stream} what-if done"
            program += [Op("event_record", comm, event=done), Op("event_wait", stream, event=done)]
    pipeline.program = program


def _shared_streams(ctx: InsightContext, dev: DeviceCommunication) -> list[int]:
    """Collective rows whose stream also runs this device's kernels."""
    tl = ctx.timeline
    kernel_streams = set(tl.stream[ctx.on_device & np.isin(tl.kind, _SM_KINDS)].tolist())
    return [r for r in dev.rows if int(tl.stream[r]) in kernel_streams]


def merge_pairs(pipeline: Pipeline) -> None:
    """Merge consecutive collectives two by two on every communicator: the first of each pair
    is removed on every member device and its bytes added to the second (buckets twice as
    large: half the calls, each issued when the later bucket is ready). An odd last one stays."""
    seen: dict[tuple[str, str], int] = {}
    first_of_pair: dict[tuple[str, str], Op] = {}
    drop: set[int] = set()
    for op in pipeline.program:
        if op.op not in COLLECTIVE_OPS or op.communicator is None:
            continue
        key = (op.communicator, pipeline.op_device(op))
        k = seen.get(key, 0)
        seen[key] = k + 1
        if k % 2 == 0:
            first_of_pair[key] = op
        else:
            first = first_of_pair.pop(key)
            op.bytes = (op.bytes or 0) + (first.bytes or 0)
            drop.add(first.uid)
    pipeline.program = [op for op in pipeline.program if op.uid not in drop]


def small_collectives(ctx: InsightContext) -> list[Insight]:
    """Collectives whose fixed per-call latency is a large share of their time."""
    latency = _latency_us(ctx)
    if latency <= 0:
        return []
    tl = ctx.timeline
    summary = _summary(ctx)
    rows = [r for dev in summary for r in dev.rows]
    small = [r for r in rows if latency * 1000 > LATENCY_SHARE * max(1, tl.end[r] - tl.start[r])]
    small_set = set(small)
    counts = [sum(1 for r in dev.rows if r in small_set) for dev in summary]
    per_device = max(counts, default=0)
    worst = [r for r in summary[counts.index(per_device)].rows if r in small_set] if small else []
    total = per_device * round(latency * 1000)
    if per_device < 4 or not ctx.significant(total, 0.02):
        return []
    sizes = np.array([int(tl.bytes[r]) for r in small])
    durations = np.array([int(tl.end[r] - tl.start[r]) for r in small])
    saving = ctx.what_if_saving("merged-collectives", merge_pairs)
    bus = float(getattr(ctx.preset, "nccl_bus_gbps", 0.0) or 0.0)
    message = (
        f"{plural(per_device, 'collective')} per device (median {fmt_bytes(float(np.median(sizes)))}, "
        f"{fmt_time(float(np.median(durations)))} each) spend more than "
        f"{100 * LATENCY_SHARE:.0f}% of their time on the per-call cost: the preset charges "
        f"{latency:g} us of latency per NCCL call (nccl_latency_us) against a bus bandwidth of "
        f"{bus:g} GB/s (nccl_bus_gbps), so these calls pay {fmt_time(total)} of latency per "
        f"device ({summary[counts.index(per_device)].device}: {ctx.names(worst)})."
    )
    # (a saving under the noise floor or 0.5% of the run reads "2.51 ms instead of 2.51 ms")
    if saving is not None and saving > 0 and ctx.significant(saving, 0.005):
        message += saving_text(ctx, saving, "Merged two by two (buckets twice as large)")
    elif saving is not None:
        saving = 0
        message += (
            " Merged two by two (buckets twice as large) they would not shorten this run in the "
            "model: the latency is hidden behind compute here, and larger buckets start later."
        )
    return [
        Insight(
            rule="small_collectives",
            severity=grade(ctx, total, saving) if saving is not None else "warning",
            title=f"{plural(per_device, 'collective')} per device too small for their per-call cost",
            message=message,
            advice=(
                "Send fewer, larger collectives: a larger bucket (DDP's bucket_cap_mb), or "
                "several small tensors packed into one buffer (or an ncclGroupStart/End "
                "group), so the per-call latency is paid less often."
            ),
            op_indexes=ctx.indexes(small),
            estimated_saving_ns=saving,
        )
    ]
