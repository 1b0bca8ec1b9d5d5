"""The measured :class:`Timeline` of a multi-device run, with the multi-device fields.

Rows are in program order; a program that declares host threads also gets the thread columns
(each thread's name and device, and the thread that issued each op), as a simulated one does. Engines are named per device ("gpu0 H2D", "gpu0 D2H",
"gpu0 Compute", ...); a peer copy runs on its source device's D2H engine (on its device's
compute engine when source and destination are one device) and uses the link source ->
destination; a collective runs on its device's compute engine and uses the ring's links
(member i -> member i+1 of its communicator). Times are one real repetition's, the one whose
device span over all devices is the median, on the host clock of the first call any device
issued.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from swimlanes.gpu.device_run import median_repetition, spread
from swimlanes.gpu.multi_plan import MultiOp
from swimlanes.gpu.probes import NvtxRanges
from swimlanes.model.document import COLLECTIVE_OPS, PEER_COPY
from swimlanes.timeline.thread_columns import check_thread_columns
from swimlanes.timeline.timeline import NO_TIME, Timeline, TimelineBuilder, device_span_ns

if TYPE_CHECKING:
    from swimlanes.gpu.multi_executor import _MultiRun

ENGINE_OF = {"h2d": "H2D", "d2h": "D2H", "d2d": "Compute", "memset": "Compute",
             "kernel": "Compute"}  # fmt: skip
ENGINE_KINDS = ("H2D", "D2H", "Compute")


def expected_value(op: MultiOp) -> list[float]:
    """The first and last float32 of an op's output after the run (see the executor's fill:
    a peer copy's source holds its device position + 1, a collective's send buffer rank + 1)."""
    n = op.nranks
    if op.kind == PEER_COPY:
        return [float(op.src + 1)] * 2
    if op.kind in ("all_reduce", "reduce_scatter"):
        return [float(n * (n + 1) // 2)] * 2
    if op.kind == "all_gather":
        return [1.0, float(n)]
    return [float(op.root + 1)] * 2  # broadcast


def engine_of(op: MultiOp, names: list[str]) -> str | None:
    """The engine a multi-device op's row is drawn on (None: no engine)."""
    if op.kind == PEER_COPY:
        if op.src == op.dst:
            return f"{names[op.src]} Compute"
        return f"{names[op.src]} D2H"
    if op.kind in COLLECTIVE_OPS:
        return f"{names[op.device]} Compute"
    kind = ENGINE_OF.get(op.kind)
    return f"{names[op.device]} {kind}" if kind else None


def links_of(op: MultiOp, run_plan: Any) -> list[tuple[int, int]]:
    """The (src, dst) device pairs an op moves data over."""
    if op.kind == PEER_COPY:
        return [(op.src, op.dst)] if op.src != op.dst else []
    if op.kind in COLLECTIVE_OPS and op.nranks > 1:
        members = run_plan.communicators[op.comm]
        return [(members[i], members[(i + 1) % op.nranks]) for i in range(op.nranks)]
    return []


def multi_timeline(
    run: _MultiRun, infos: list[Any], reps: list[list[dict[str, np.ndarray]]], ranges: NvtxRanges
) -> Timeline:
    plan, names = run.plan, run.plan.devices
    # Per repetition, global columns in program order from each device's local ones.
    glob = [_global(plan.ops, rep) for rep in reps]
    spans = [device_span_ns(g["start"], g["end"]) for g in glob]
    med = glob[median_repetition(spans)]
    stacked = {k: np.stack([g[k] for g in glob]) for k in ("start", "end")}
    spreads = {k: spread(v) for k, v in stacked.items()}
    t0 = int(med["issue_start"].min()) if len(med["issue_start"]) else 0
    streams = [(s.name, d) for d, p in enumerate(plan.plans) for s in p.streams]
    engines = [f"{name} {e}" for name in names for e in ENGINE_KINDS]
    b = TimelineBuilder([s for s, _ in streams], engines)
    link_pairs: list[tuple[int, int]] = sorted(plan.pairs())
    link_op: list[int] = []
    link_id: list[int] = []
    last_in_stream: dict[str, int] = {}
    calls: dict[tuple[Any, int], list[int]] = {}  # (communicator, k): its ranks' rows
    made: dict[tuple[Any, int], int] = {}  # (communicator, device): its calls so far
    for op in plan.ops:
        local = plan.plans[op.device].ops[op.local]
        i = op.index
        s, e = int(med["start"][i]), int(med["end"][i])
        shift = lambda t: t - t0 if t != NO_TIME else NO_TIME  # noqa: E731
        row = b.add(
            index=i, kind=op.kind, stream=local.stream, engine=engine_of(op, names),
            issue_start=int(med["issue_start"][i]) - t0, issue_end=int(med["issue_end"][i]) - t0,
            start=shift(s), end=shift(e),
            solo_ns=e - s if s != NO_TIME and e != NO_TIME else NO_TIME,
            nbytes=local.nbytes, label=local.label,
            start_spread=int(spreads["start"][i]), end_spread=int(spreads["end"][i]),
        )  # fmt: skip
        if local.stream is not None and s != NO_TIME:
            if local.stream in last_in_stream:
                b.add_dep(last_in_stream[local.stream], row, "stream")
            last_in_stream[local.stream] = row
        for pair in links_of(op, plan):
            link_op.append(row)
            link_id.append(link_pairs.index(pair))
        if op.kind in COLLECTIVE_OPS and op.nranks > 1:  # the k-th call of each member
            k = made.get((op.comm, op.device), 0)
            made[(op.comm, op.device)] = k + 1
            calls.setdefault((op.comm, k), []).append(row)
    for rows in calls.values():  # one call: its ranks start together (as the simulator says)
        for r in rows[1:]:
            b.add_dep(rows[0], r, "collective")
    meta = _meta(run, ranges, len(reps))
    meta["repetition_spans_us"] = [round(x / 1000.0, 3) for x in spans]
    kind = getattr(run, "link_kinds", {})
    tl = b.build(
        with_spread=True, source="measured", device=" + ".join(i.name for i in infos),
        name=run.pipeline.name, meta=meta, device_names=list(names),
        stream_device=np.asarray([d for _, d in streams], dtype=np.int16),
        engine_device=np.asarray([d for d in range(len(names)) for _ in ENGINE_KINDS],
                                 dtype=np.int16),
        host_device=np.asarray([op.device for op in plan.ops], dtype=np.int16),
        link_names=[f"{kind.get(p, 'Link')} {names[p[0]]}→{names[p[1]]}" for p in link_pairs],
        link_op=np.asarray(link_op, dtype=np.int32),
        link_id=np.asarray(link_id, dtype=np.int16),
    )  # fmt: skip
    if run.pipeline.host_threads:  # one host row per thread, as the simulated chart has
        tl.thread_names = list(plan.threads)
        tl.thread_device = np.asarray(plan.thread_device, dtype=np.int16)
        tl.host_thread = np.asarray([op.thread for op in plan.ops], dtype=np.int16)
        check_thread_columns(tl)
    return tl


def _global(ops: list[MultiOp], per_device: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    n = len(ops)
    out = {k: np.full(n, NO_TIME, dtype=np.int64) for k in ("issue_start", "issue_end", "start",
                                                            "end")}  # fmt: skip
    for op in ops:
        for k in out:
            out[k][op.index] = per_device[op.device][k][op.local]
    return out


def _meta(run: _MultiRun, ranges: NvtxRanges, repeat: int) -> dict[str, Any]:
    probes = [r.probe for r in run.runs]
    first = probes[0] if probes else None
    meta: dict[str, Any] = {
        "backend": first.name if first else "none",
        "note": first.note if first else "",
        "repeat": repeat,
        "nvtx": ranges.status,
        "devices": list(run.plan.devices),
        "device_bytes": sum(run.plan.device_bytes(d) for d in range(len(run.plan.devices))),
        "device_bytes_per_device": {
            name: run.plan.device_bytes(d) for d, name in enumerate(run.plan.devices)
        },
        "pinned_bytes": sum(p.pinned_bytes for p in run.plan.plans),
        "peer_access": dict(run.peer),
        "host": dict(run.runs[0].host) if run.runs else {},
    }
    if run.collectives is not None:
        meta["nccl"] = getattr(run.collectives, "version", "simulated")
    unmatched = [u for p in probes for u in (getattr(p, "unmatched", None) or [])]
    if unmatched:
        meta["cupti_unmatched"] = sorted(set(unmatched))
    if run.session is not None:
        from swimlanes.gpu.multi_probe import describe_devices, describe_kernels

        meta["cupti_devices"] = describe_devices(run.session, run.plan.devices)
        meta["collective_kernels"] = describe_kernels(run.session)
    return meta
