"""Run a pipeline on the GPU and return its measured :class:`Timeline`.

Order of work: validate; plan (buffers sized from the ops' bytes, pooled per stream); check that
the plan fits in free device and host memory, before allocating anything; allocate, create
streams (flags and priority) and events, compile and configure the synthetic kernels and
prepare one issue step per op; then warm-up and timed repetitions of the host program, with
the device idle between them. Each timed repetition records the host issue span of every call
(``perf_counter_ns`` before and after) and, through the measurement back end, every op's device
span. The times are those of the repetition whose device span (first device start to last
device end) is the median, relative to its first call, so that they form a schedule the GPU
really ran; the spread columns hold p90 - p10 over all repetitions. Whatever happens (error,
cancel), every allocation, stream and event is released before this returns.

Named events: each ``event_record`` op records its own CUDA event, and a wait or sync uses the
event of the latest record of that name issued before it (or one never recorded), which is what
re-recording one event does in CUDA, and lets each record be timed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from swimlanes.gpu.backend import make_backend
from swimlanes.gpu.backend_api import CudaBackend
from swimlanes.gpu.device_run import (
    Cancel,
    DeviceRun,
    Progress,
    median_repetition,
)
from swimlanes.gpu.device_run import spread as _spread
from swimlanes.gpu.errors import ExecutionCancelled, GpuError
from swimlanes.gpu.plan import ResourcePlan, check_memory, make_plan
from swimlanes.gpu.probes import NvtxRanges
from swimlanes.model.document import Pipeline
from swimlanes.model.validate import validate
from swimlanes.timeline.timeline import NO_TIME, Timeline, TimelineBuilder, device_span_ns

ENGINES = {"h2d": "H2D", "d2h": "D2H", "d2d": "Compute", "memset": "Compute", "kernel": "Compute"}

__all__ = ["Cancel", "Progress", "execute", "median_repetition"]


def execute(
    pipeline: Pipeline,
    *,
    repeat: int = 5,
    warmup: int = 1,
    backend: str = "auto",
    progress: Progress = None,
    cancel: Cancel = None,
    on_partial: Callable[[Timeline], None] | None = None,
    cuda_backend: CudaBackend | None = None,
    nvtx: bool | None = None,
) -> Timeline:
    """Run ``pipeline`` ``warmup`` + ``repeat`` times and return the measured timeline.

    ``backend`` picks the measurement back end: ``auto`` (CUPTI where it loads, else events),
    ``cupti`` or ``events``. ``progress(fraction)`` and ``cancel()`` are called between
    repetitions and ops; ``on_partial(timeline)`` gets the medians so far after each timed
    repetition. ``cuda_backend`` replaces the real GPU (tests pass the simulator backend).
    Raises :class:`GpuError` with a clear message, or :class:`ExecutionCancelled`.
    """
    from swimlanes.gpu.multi_plan import needs_multi

    if needs_multi(pipeline):  # several devices or host threads, peer copies or collectives
        from swimlanes.gpu.multi_executor import execute_multi

        return execute_multi(
            pipeline, repeat=repeat, warmup=warmup, backend=backend, progress=progress,
            cancel=cancel, on_partial=on_partial, cuda_backend=cuda_backend, nvtx=nvtx,
        )  # fmt: skip
    if repeat < 1 or warmup < 0:
        raise GpuError("repeat must be at least 1 and warmup at least 0")
    problems = validate(pipeline)
    if problems:
        raise GpuError("the pipeline is not valid: " + "; ".join(str(p) for p in problems))
    be = cuda_backend if cuda_backend is not None else make_backend()
    info = be.device_info()
    plan = make_plan(pipeline, info)
    check_memory(plan, info, be.host_available_bytes())
    run = DeviceRun(be, plan, info.sm_count)
    ranges = NvtxRanges(nvtx)
    reps: list[dict[str, np.ndarray]] = []
    try:
        run.setup(backend, ranges)
        total = warmup + repeat
        for r in range(total):
            if cancel is not None and cancel():
                raise ExecutionCancelled(f"cancelled before repetition {r + 1}")
            data = run.repetition(cancel)
            if r >= warmup:
                reps.append(data)
                if on_partial is not None:
                    on_partial(_timeline(pipeline, plan, reps, info.name, run, ranges))
            if progress is not None:
                progress((r + 1) / total)
        return _timeline(pipeline, plan, reps, info.name, run, ranges)
    except (GpuError, ExecutionCancelled):
        raise
    except Exception as err:  # noqa: BLE001 - numba/driver errors become one clear message
        raise GpuError(f"the GPU run failed: {type(err).__name__}: {err}") from err
    finally:
        run.release()


def _timeline(
    pipeline: Pipeline,
    plan: ResourcePlan,
    reps: list[dict[str, np.ndarray]],
    device: str,
    run: DeviceRun,
    ranges: NvtxRanges,
) -> Timeline:
    stacked = {k: np.stack([r[k] for r in reps]) for k in reps[0]}
    # The times shown are one real repetition's, the one whose device span is the median:
    # per-op medians taken column by column can mix repetitions in which a copy engine took
    # ready copies in different orders into a schedule no repetition had (two copies of one
    # direction overlapping, say). The spread columns still describe every repetition.
    spans = [device_span_ns(r["start"], r["end"]) for r in reps]
    med = reps[median_repetition(spans)]
    spread = {k: _spread(stacked[k]) for k in ("start", "end")}
    names = [s.name for s in plan.streams]
    b = TimelineBuilder(names, ["H2D", "D2H", "Compute"])
    last_in_stream: dict[str, int] = {}
    for op in plan.ops:
        i = op.index
        s, e = int(med["start"][i]), int(med["end"][i])
        row = b.add(
            index=i,
            kind=op.kind,
            stream=op.stream,
            engine=ENGINES.get(op.kind),
            issue_start=int(med["issue_start"][i]),
            issue_end=int(med["issue_end"][i]),
            start=s,
            end=e,
            solo_ns=e - s if s != NO_TIME and e != NO_TIME else NO_TIME,
            nbytes=op.nbytes,
            label=op.label,
            start_spread=int(spread["start"][i]),
            end_spread=int(spread["end"][i]),
        )
        if op.stream is not None and s != NO_TIME:
            if op.stream in last_in_stream:
                b.add_dep(last_in_stream[op.stream], row, "stream")
            last_in_stream[op.stream] = row
    meta = _meta(run, ranges, len(reps))
    meta["repetition_spans_us"] = [round(x / 1000.0, 3) for x in spans]
    meta.update(_stall_check(med["issue_start"], med["issue_end"], plan))
    return b.build(
        with_spread=True, source="measured", device=device, name=pipeline.name, meta=meta
    )


def _meta(run: DeviceRun, ranges: NvtxRanges, repeat: int) -> dict[str, Any]:
    """How the run was measured: back end and what its spans mean, repetitions, memory."""
    probe = run.probe
    meta: dict[str, Any] = {
        "backend": probe.name if probe else "none",
        "note": probe.note if probe else "",
        "repeat": repeat,
        "nvtx": ranges.status,
        "device_bytes": run.plan.device_bytes,
        "pinned_bytes": run.plan.pinned_bytes,
        "priorities": {s.name: s.priority for s in run.streams.values()},
        "host": dict(run.host),
    }
    unmatched = getattr(probe, "unmatched", None)
    if unmatched:
        # Spans of these streams are missing: CUPTI gave a different number of records.
        meta["cupti_unmatched"] = sorted(set(unmatched))
    return meta


def _stall_check(t_s: np.ndarray, t_e: np.ndarray, plan: ResourcePlan) -> dict[str, float]:
    """Issue cost of the first op vs. the median of its kind: shows a stall at the start."""
    if not len(t_s):
        return {}
    cost = (t_e - t_s) / 1000.0
    kind = plan.ops[0].kind
    same = [cost[i] for i, op in enumerate(plan.ops) if op.kind == kind]
    return {
        "first_issue_us": round(float(cost[0]), 3),
        "median_issue_us": round(float(np.median(same)), 3),
    }
