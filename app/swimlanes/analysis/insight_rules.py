"""The insight rules about how the host program drives the GPU.

Each rule is a small function ``rule(ctx) -> list[Insight]`` over an
:class:`~swimlanes.analysis.insight_context.InsightContext`, which holds the pipeline, its
timeline aligned to the run start, the device preset and figures shared by the rules (metrics,
each op's dependency-ready time). The rules here look at the API
calls themselves: ``pageable_copy``, ``sync_copy``, ``legacy_default_serialises`` and
``launch_bound``. The schedule rules and :func:`swimlanes.analysis.insights.explain` live in
``insights.py``.

Where the device preset is known, rules estimate what a fix saves by simulating the changed
pipeline ("what if the copies were pinned?"): the estimate comes from the same model that drew
the chart, never from a rule of thumb.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from swimlanes.analysis.insight_context import (
    BLOCKING_STREAM_KINDS,
    Insight,
    InsightContext,
    grade,
    saving_text,
)
from swimlanes.model.document import (
    COPY_OPS,
    DEFAULT_STREAM,
    HOST_COPY_OPS,
    OP_KINDS,
    Pipeline,
)
from swimlanes.model.op_defaults import host_memory_changes
from swimlanes.timeline.compare import fmt_bytes, fmt_gbps, fmt_pct, fmt_time, plural
from swimlanes.timeline.timeline import NO_TIME

_KERNEL = OP_KINDS.index("kernel")


# -- rules about the API calls -------------------------------------------------------------------
def pageable_copy(ctx: InsightContext) -> list[Insight]:
    """Copies from or to pageable host memory: staged, slow, and blocking the host thread."""
    rows = ctx.rows_where(
        lambda op: op.op in HOST_COPY_OPS and op.effective_host_memory == "pageable"
    )
    if not rows:
        return []
    tl = ctx.timeline
    nbytes = int(tl.bytes[rows].sum())
    dev_ns = ctx.device_time(rows)
    host_ns = ctx.host_time(rows)

    def pin(p: Pipeline) -> None:
        for op in p.program:
            if op.op in HOST_COPY_OPS and op.effective_host_memory == "pageable":
                # a measured pageable time would otherwise stay: a saving of nothing
                for key, value in host_memory_changes(op, "pinned").items():
                    setattr(op, key, value)

    saving = ctx.what_if_saving("pinned", pin)
    if not ctx.significant(host_ns) and not ctx.significant(dev_ns, 0.05):
        return []
    message = (
        f"{plural(len(rows), 'copy', 'copies')} ({fmt_bytes(nbytes)}) use pageable host "
        f"memory: {ctx.names(rows)}. The driver cannot DMA from pageable pages, so it stages "
        "each copy through a pinned bounce buffer: the copies ran at "
        f"{fmt_gbps(nbytes, dev_ns)} on average, and the host thread was blocked in them for "
        f"{fmt_time(host_ns)} ({fmt_pct(host_ns, ctx.makespan)} of the run), because an async "
        "H2D from pageable memory returns only once its data is staged and a D2H to pageable "
        "memory only when it is done. Nothing after them could be issued meanwhile."
        + saving_text(ctx, saving, "With pinned host buffers")
    )
    return [
        Insight(
            rule="pageable_copy",
            severity=grade(ctx, host_ns, saving),
            title=f"{plural(len(rows), 'copy', 'copies')} use pageable host memory",
            message=message,
            advice=(
                "Allocate these host buffers pinned (cudaMallocHost / cudaHostAlloc; in Numba "
                "cuda.pinned_array, in PyTorch tensor.pin_memory()), or cudaHostRegister the "
                "existing buffers, and keep them for the whole run: pinning is costly, reuse it."
            ),
            op_indexes=ctx.indexes(rows),
            estimated_saving_ns=saving,
        )
    ]


def sync_copy(ctx: InsightContext) -> list[Insight]:
    """Synchronous copies and memsets (async false) that block the host or serialise the device."""
    rows = ctx.rows_where(lambda op: op.op in (*COPY_OPS, "memset") and not op.effective_async)
    # a blocking copy with no device work issued after it (fetching the result) costs nothing
    rows = [r for r in rows if ctx.device_work_after(r)]
    if not rows:
        return []
    host_ns = ctx.host_time(rows)

    def make_async(p: Pipeline) -> None:
        for op in p.program:
            if op.op in (*COPY_OPS, "memset") and not op.effective_async:
                op.is_async = True

    saving = ctx.what_if_saving("async", make_async)
    if not ctx.significant(max(host_ns, saving or 0)):
        return []
    tl = ctx.timeline
    on_default = [r for r in rows if tl.stream_name(r) == DEFAULT_STREAM]
    memsets = sum(tl.op_kind(r) == "memset" for r in rows)
    what, whats = (
        ("copy", "copies")
        if memsets == 0
        else ("memset", "memsets")
        if memsets == len(rows)
        else ("copy or memset", "copies and memsets")
    )
    message = (
        f"{plural(len(rows), 'synchronous ' + what, 'synchronous ' + whats)} "
        f"({ctx.names(rows)}) block the host thread "
        f"until the device has finished them: {fmt_time(host_ns)} "
        f"({fmt_pct(host_ns, ctx.makespan)} of the run) during which no later call could be "
        "issued, so the GPU could not be given the next work ahead of time."
    )
    if on_default:
        message += (
            f" {len(on_default)} of them run on the legacy default stream, which also waits "
            "for, and holds back, every blocking stream."
        )
    message += saving_text(ctx, saving, "Made asynchronous")
    return [
        Insight(
            rule="sync_copy",
            severity=grade(ctx, host_ns, saving),
            title=f"{plural(len(rows), 'synchronous ' + what, 'synchronous ' + whats)} "
            f"{'blocks' if len(rows) == 1 else 'block'} the host",
            message=message,
            advice=(
                "Use cudaMemcpyAsync / cudaMemsetAsync on a created stream with pinned host "
                "buffers (PyTorch: .to(device, non_blocking=True) from pinned memory), and "
                "synchronise once, with an event or stream sync, only where the host needs the "
                "data."
            ),
            op_indexes=ctx.indexes(rows),
            estimated_saving_ns=saving,
        )
    ]


def _blocking_stream_indexes(ctx: InsightContext) -> list[np.ndarray]:
    """Per blocking stream, the program indexes of its device ops (sorted)."""
    tl = ctx.timeline
    out = []
    for s, name in enumerate(tl.stream_names):
        if ctx.stream_kind(name) in BLOCKING_STREAM_KINDS:
            idx = np.sort(tl.index[ctx.on_device & (tl.stream == s)])
            if len(idx):
                out.append(idx)
    return out


def _default_stream_partners(
    ctx: InsightContext, row: int, streams: list[np.ndarray]
) -> tuple[list[int], list[int]]:
    """Blocking-stream ops that a legacy default stream op waited for / that waited for it:
    the last device op of each blocking stream issued before it, the first issued after it."""
    me = int(ctx.timeline.index[row])
    before, after = [], []
    for idx in streams:
        k = int(np.searchsorted(idx, me))
        if k > 0:
            before.append(ctx.row_of_index[int(idx[k - 1])])
        if k < len(idx) and idx[k] == me:
            k += 1
        if k < len(idx):
            after.append(ctx.row_of_index[int(idx[k])])
    return before, after


def legacy_default_serialises(ctx: InsightContext) -> list[Insight]:
    """Device work on the legacy default stream serialising the blocking streams around it."""
    tl = ctx.timeline
    legacy = [
        s for s, name in enumerate(tl.stream_names) if ctx.stream_kind(name) == "legacy_default"
    ]
    rows = np.flatnonzero(ctx.on_device & np.isin(tl.stream, legacy)).tolist()
    waited_for: list[int] = []
    waited_by: list[int] = []
    culprits = []
    streams = _blocking_stream_indexes(ctx)
    for r in rows:
        before, after = _default_stream_partners(ctx, r, streams)
        if before or after:
            culprits.append(r)
            waited_for += before
            waited_by += after
    if not culprits:
        return []

    def unblock(p: Pipeline) -> None:
        for s in p.streams:
            if s.kind in BLOCKING_STREAM_KINDS:
                s.kind = "non_blocking"

    saving = ctx.what_if_saving("non_blocking", unblock)
    if saving is not None and not ctx.significant(saving, 0.01):
        return []  # the barriers are real but cost nothing here
    waited_for = sorted(set(waited_for))
    waited_by = sorted(set(waited_by) - set(culprits))
    message = (
        f"{ctx.names(culprits)} run on the legacy default stream, which is synchronising: "
        "an op there starts only after all previously issued work in every blocking stream, "
        "and work issued later to blocking streams waits for it."
    )
    it, them = ("It", "it") if len(culprits) == 1 else ("They", "them")
    if waited_for:
        message += f" {it} waited for {ctx.names(waited_for)}."
    if waited_by:
        message += f" Then {ctx.names(waited_by)} waited for {them}."
    message += saving_text(ctx, saving, "With non-blocking streams")
    return [
        Insight(
            rule="legacy_default_serialises",
            severity=grade(ctx, 0, saving) if saving is not None else "warning",
            title="The legacy default stream serialises the other streams",
            message=message,
            advice=(
                "Move this work to a created stream, create the other streams with "
                "cudaStreamCreateWithFlags(..., cudaStreamNonBlocking), or build with "
                "--default-stream per-thread (nvcc) / CUDA_API_PER_THREAD_DEFAULT_STREAM so the "
                "default stream stops synchronising; order what must be ordered with events."
            ),
            op_indexes=ctx.indexes([*culprits, *waited_for, *waited_by]),
            estimated_saving_ns=saving,
        )
    ]


def _free_launch_saving(ctx: InsightContext) -> int | None:
    """What the model saves when kernel launches cost the host nothing (an upper bound for
    CUDA Graphs, whose single launch still costs a few microseconds)."""
    if ctx.preset is None:
        return None
    free = dataclasses.replace(
        ctx.preset,
        issue_cost_us={**ctx.preset.issue_cost_us, "kernel": 0.0},
        repeat_issue_cost_us={**ctx.preset.repeat_issue_cost_us, "kernel": 0.0},
    )
    return ctx.what_if_saving("free-launches", None, free)


def launch_bound(ctx: InsightContext) -> list[Insight]:
    """Many short kernels whose launches, not their work, set the pace."""
    tl = ctx.timeline
    kernels = np.flatnonzero((tl.kind == _KERNEL) & ctx.on_device & (tl.issue_end != NO_TIME))
    if len(kernels) < 20:
        return []
    run = tl.end[kernels] - tl.start[kernels]
    cost = tl.issue_end[kernels] - tl.issue_start[kernels]
    host_limited = kernels[(tl.issue_end[kernels] >= ctx.dep_ready[kernels]) & (run < cost)]
    waiting = ctx.metrics.gpu_waiting_on_host_ns
    if len(host_limited) < max(20, len(kernels) // 2) or waiting < 0.2 * ctx.makespan:
        return []
    span = int(tl.issue_end[host_limited].max() - tl.issue_start[host_limited].min())
    rate = len(host_limited) / (span / 1e9) if span > 0 else 0.0
    message = (
        f"{len(host_limited)} kernels ran for {fmt_time(float(np.median(run)))} each (median) "
        f"but each launch cost the host {fmt_time(float(np.median(cost)))}: the host issued "
        f"{rate:,.0f} launches/s and the GPU waited on it for {fmt_time(waiting)} "
        f"({fmt_pct(waiting, ctx.makespan)} of the run). Between "
        f"{fmt_time(int(tl.issue_start[host_limited].min()))} and "
        f"{fmt_time(int(tl.issue_end[host_limited].max()))} the launch rate, not the GPU, sets "
        "the pace."
    )
    saving = _free_launch_saving(ctx)
    if saving is not None and saving > 0:
        message += (
            " If the launches cost the host nothing (one CUDA Graph launch for all of them), "
            f"the model predicts {fmt_time(ctx.makespan - saving)}."
        )
    return [
        Insight(
            rule="launch_bound",
            severity="problem" if waiting >= 0.5 * ctx.makespan else "warning",
            title=f"Launch-bound: {len(host_limited)} short kernels wait on the host",
            message=message,
            advice=(
                "Launch fewer, bigger kernels: fuse the small ones or give each more work, or "
                "capture the sequence once as a CUDA Graph and launch the graph (one call), so "
                "the host issue cost is paid once; keep other host work off the issuing thread."
            ),
            op_indexes=ctx.indexes(host_limited),
            estimated_saving_ns=saving,
        )
    ]
