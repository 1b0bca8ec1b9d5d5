"""Properties every simulated schedule must have, over random valid pipelines and all presets."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import pipelines

from swimlanes.engine import get_preset, preset_names, simulate
from swimlanes.engine.plan import ENQUEUED
from swimlanes.model.document import OP_KINDS, Pipeline
from swimlanes.timeline.timeline import NO_TIME, Timeline

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PRESETS = st.sampled_from(preset_names())


def _enqueued_rows(tl: Timeline) -> list[int]:
    return [r for r in range(len(tl)) if int(tl.kind[r]) in ENQUEUED]


def _by_stream(tl: Timeline) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for r in _enqueued_rows(tl):
        out[int(tl.stream[r])].append(r)
    return out


@SETTINGS
@given(pipelines(), PRESETS)
def test_schedule_invariants(pipeline: Pipeline, device: str) -> None:
    preset = get_preset(device)
    tl = simulate(pipeline, preset)
    n = len(pipeline.program)
    assert len(tl) == n and list(tl.index) == list(range(n))
    enq = _enqueued_rows(tl)
    # Every op is issued, in program order, one call after another.
    assert (tl.issue_start != NO_TIME).all() and (tl.issue_end >= tl.issue_start).all()
    gap = round(preset.host_call_gap_us * 1000.0)
    assert (tl.issue_start[1:] == tl.issue_end[:-1] + gap).all()
    for r in range(n):
        on_device = r in enq
        assert (tl.start[r] != NO_TIME) == on_device
        if not on_device:
            continue
        assert tl.start[r] <= tl.end[r]
        # Nothing runs before its call took effect (a pageable H2D is staged while its call runs;
        # a call repeating the one before it may cost its repeat cost).
        call = _call_cost_ns(preset, pipeline.program, r)
        assert tl.start[r] >= tl.issue_start[r] + call
        if pipeline.program[r].op == "kernel":
            assert tl.start[r] >= tl.issue_end[r] + preset.kernel_launch_latency_us * 1000 - 1
        elif pipeline.program[r].op in ("h2d", "d2h") and not _staged(pipeline.program[r]):
            # (measured from the enqueue: a synchronous copy's call returns only when done)
            took_effect = tl.issue_start[r] + call
            assert tl.start[r] >= took_effect + round(preset.copy_launch_latency_us * 1000)

    # Per-stream order: an op starts only after the previous op of its stream ended.
    for rows in _by_stream(tl).values():
        for a, b in zip(rows, rows[1:], strict=False):
            assert tl.start[b] >= tl.end[a], (a, b)

    _check_waits(pipeline, tl)
    _check_capacity(tl, preset)
    _check_host_waits(pipeline, tl, preset)
    _check_latencies(pipeline, tl, preset)


def _staged(op) -> bool:
    """A pageable H2D copy whose call returns after staging (its DMA may start earlier)."""
    return op.op == "h2d" and op.effective_host_memory == "pageable"


def _engine_class(op, preset) -> int:
    if op.op in ("kernel", "memset", "d2d"):
        return 0
    if op.op == "h2d" or (op.op == "d2h" and preset.shared_copy_engine):
        return 1
    return {"d2h": 2, "host_func": 3}.get(op.op, -1)


def _check_latencies(pipeline: Pipeline, tl: Timeline, preset) -> None:
    """An op waiting for the previous device op of its stream starts the preset's dependency
    latency after it ended; a copy engine rests its gap between copies."""
    program = pipeline.program
    for rows in _by_stream(tl).values():
        device = [r for r in rows if _engine_class(program[r], preset) >= 0]
        for a, b in zip(device, device[1:], strict=False):
            ca, cb = _engine_class(program[a], preset), _engine_class(program[b], preset)
            if ca != cb:
                lag = preset.dependency_latency_us
            elif ca == 0:
                lag = preset.kernel_dependency_latency_us
            else:
                continue
            assert tl.start[b] >= tl.end[a] + round(lag * 1000.0), (a, b)
    compute = tl.engine_names.index("Compute")
    for e in range(compute):
        spans = sorted(
            (int(tl.start[r]), int(tl.end[r])) for r in range(len(tl)) if tl.engine[r] == e
        )
        for x, y in zip(spans, spans[1:], strict=False):
            assert y[0] >= x[1] + round(preset.copy_engine_gap_us * 1000.0), (x, y)


def _check_waits(pipeline: Pipeline, tl: Timeline) -> None:
    """Event waits and the legacy default stream's barriers are honoured."""
    program = pipeline.program
    last_record: dict[str, int] = {}
    blocking = {
        s.name for s in pipeline.all_streams if s.kind in ("blocking", "per_thread_default")
    }
    for r, op in enumerate(program):
        if op.op == "event_record":
            last_record[op.event] = r
        if op.op == "event_wait" and op.event in last_record:
            rec = last_record[op.event]
            later = [x for x in range(r + 1, len(program)) if _same_stream(tl, x, r)]
            for x in later:
                assert tl.start[x] >= tl.end[rec], (rec, x)
        if int(tl.kind[r]) not in ENQUEUED or op.stream_name != "default":
            continue
        for x in range(len(program)):
            if int(tl.kind[x]) not in ENQUEUED or program[x].stream_name not in blocking:
                continue
            if x < r:
                assert tl.start[r] >= tl.end[x], ("default waits for", x, r)
            else:
                assert tl.start[x] >= tl.end[r], ("waits for default", r, x)


def _same_stream(tl: Timeline, a: int, b: int) -> bool:
    return int(tl.kind[a]) in ENQUEUED and tl.stream[a] == tl.stream[b]


def _check_capacity(tl: Timeline, preset) -> None:
    """No copy engine runs two copies at once; SMs and resident kernels within limits; the
    makespan covers the busiest copy engine's work and the host thread."""
    compute = tl.engine_names.index("Compute")
    for e in range(len(tl.engine_names)):
        rows = [r for r in range(len(tl)) if tl.engine[r] == e]
        if e == compute:
            kernels = [r for r in rows if tl.op_kind(r) == "kernel"]
            _check_resident(tl, kernels, preset.max_resident_kernels)
            continue
        spans = sorted((int(tl.start[r]), int(tl.end[r])) for r in rows)
        for a, b in zip(spans, spans[1:], strict=False):
            assert a[1] <= b[0], f"{tl.engine_names[e]} overlaps: {a} {b}"
        assert tl.makespan_ns >= sum(int(tl.solo_ns[r]) for r in rows) - len(rows)
    assert (tl.occupancy_sms <= tl.sm_count).all() and (tl.occupancy_sms >= 0).all()
    assert (np.diff(tl.occupancy_time) > 0).all()
    assert tl.makespan_ns >= int((tl.issue_end - tl.issue_start).sum())


def _check_resident(tl: Timeline, kernels: list[int], limit: int) -> None:
    edges = sorted(
        [(int(tl.start[r]), 1) for r in kernels if tl.end[r] > tl.start[r]]
        + [(int(tl.end[r]), -1) for r in kernels if tl.end[r] > tl.start[r]]
    )
    running = 0
    for _, delta in edges:  # ends sort before starts at the same time
        running += delta
        assert running <= limit


def _check_host_waits(pipeline: Pipeline, tl: Timeline, preset) -> None:
    """Host syncs return only the preset's sync return lag after the work they wait for."""
    for r, op in enumerate(pipeline.program):
        earlier = [x for x in range(r) if int(tl.kind[x]) in ENQUEUED]
        if op.op in ("device_sync", "free"):
            lag = preset.sync_return_ns("device_sync")
            assert all(tl.issue_end[r] >= tl.end[x] + lag for x in earlier)
        elif op.op == "stream_sync":
            lag = preset.sync_return_ns("stream_sync")
            same = [x for x in earlier if pipeline.program[x].stream_name == op.stream_name]
            assert all(tl.issue_end[r] >= tl.end[x] + lag for x in same)


@settings(max_examples=40, deadline=None)
@given(pipelines(), PRESETS)
def test_same_input_gives_same_output(pipeline: Pipeline, device: str) -> None:
    a = simulate(pipeline, device).to_dict()
    b = simulate(pipeline.copy(), device).to_dict()
    assert a == b


@settings(max_examples=40, deadline=None)
@given(pipelines())
def test_serial_time_is_the_sum_of_solo_times(pipeline: Pipeline) -> None:
    tl = simulate(pipeline, "ideal")
    device_rows = tl.solo_ns != NO_TIME
    kinds = {OP_KINDS[k] for k in tl.kind[device_rows]}
    assert kinds <= {OP_KINDS[k] for k in ENQUEUED}
    assert tl.meta["serial_ns"] == int(tl.solo_ns[device_rows].sum())


def _call_cost_ns(preset, program: list, r: int) -> int:
    """The host cost of op ``r``'s call: its repeat cost when it repeats the call before it
    (the same call on any stream), else its issue cost."""
    op = program[r]
    cost = preset.issue_cost_ns(op.op)
    if r == 0:
        return cost
    before = program[r - 1]
    same = before.op == op.op and all(
        getattr(before, f) == getattr(op, f)
        for f in ("bytes", "host_memory", "is_async", "duration_us", "blocks", "threads",
                  "block_us", "flops", "extra")
    )  # fmt: skip
    return preset.repeat_issue_cost_ns(op.op) if same else cost
