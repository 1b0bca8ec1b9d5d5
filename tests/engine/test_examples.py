"""Golden tests: the shipped examples simulate to the schedules CUDA semantics give.

Numbers on the ``ideal`` preset are hand-computed (no API costs or latencies, one copy engine
per direction, one queue per stream); on the other presets the tests assert the relationships
each lesson is about.
"""

from __future__ import annotations

import numpy as np
import pytest

from swimlanes.engine import get_preset, preset_names, simulate
from swimlanes.engine.presets import multi_preset_names
from swimlanes.model import Pipeline, load_pipeline
from swimlanes.model.generators import (
    chunked_pipeline,
    default_stream_trap_pipeline,
    pageable_trap_pipeline,
    ping_pong_pipeline,
    priority_pipeline,
    swimming_pipeline,
)
from swimlanes.resources import example_names, example_path
from swimlanes.timeline import Timeline, compute_metrics
from swimlanes.timeline.metrics import overlap_length

US = 1000  # ns
MS = 1_000_000  # ns


def _example(name: str) -> Pipeline:
    return load_pipeline(example_path(name))


def _sim(p: Pipeline, device: str | None = None) -> Timeline:
    return simulate(p, device or p.extra["device"])


def _row(tl: Timeline, label: str) -> int:
    return tl.labels.index(label)


def _span(tl: Timeline, label: str) -> tuple[int, int]:
    r = _row(tl, label)
    return int(tl.start[r]) - tl.t0, int(tl.end[r]) - tl.t0


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return max(a[0], b[0]) < min(a[1], b[1])


def _rows_on(tl: Timeline, stream: str) -> list[int]:
    """Device-work rows of one stream (copies, memsets, kernels) in program order."""
    s = tl.stream_names.index(stream)
    return [r for r in range(len(tl)) if tl.stream[r] == s and tl.engine[r] >= 0]


# -- every example --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", example_names())
def test_every_example_runs_long_enough_to_measure_on_an_h200(name: str) -> None:
    p = _example(name)
    assert p.extra["device"] in preset_names() + multi_preset_names()
    # a multi-GPU example needs its GPUs: it runs on its own preset only
    for device in [p.extra["device"]] if p.is_multi_device else sorted({p.extra["device"], "h200"}):
        tl = _sim(p, device)
        assert tl.device == device
        assert 1 * MS <= tl.makespan_ns <= 200 * MS, (device, tl.makespan_ns)
        assert bool(tl.on_device[tl.engine >= 0].all())


# -- two streams ----------------------------------------------------------------------------------
def test_two_streams_is_four_units_against_six_serial() -> None:
    tl = _sim(_example("two-streams"))
    assert tl.device == "ideal"
    expected = {
        "H2D A": (0, 1), "K A": (1, 2), "D2H A": (2, 3),
        "H2D B": (1, 2), "K B": (2, 3), "D2H B": (3, 4),
    }  # fmt: skip
    for label, (start, end) in expected.items():
        assert _span(tl, label) == (start * MS, end * MS), label
    m = compute_metrics(tl)
    assert (m.makespan_ns, m.serial_ns) == (4 * MS, 6 * MS)
    assert m.speedup == pytest.approx(1.5)


def test_two_streams_on_one_stream_is_serial() -> None:
    p = _example("two-streams")
    for op in p.program:
        if op.stream == "s2":
            op.stream = "s1"
    assert _sim(p).makespan_ns == 6 * MS


# -- chunked overlap ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("n_chunks", "n_streams", "makespan_us"),
    [(4, 1, 80000), (2, 2, 55000), (4, 2, 47500), (4, 4, 42500), (8, 4, 36250)],
)
def test_chunked_overlap_makespans(n_chunks: int, n_streams: int, makespan_us: int) -> None:
    tl = simulate(chunked_pipeline(n_chunks, n_streams), "ideal")
    assert tl.makespan_ns == makespan_us * US
    assert compute_metrics(tl).serial_ns == 80 * MS


def test_chunked_overlap_file_is_four_chunks_on_four_streams() -> None:
    tl = _sim(_example("chunked-overlap"))
    assert tl.makespan_ns == 42500 * US
    assert _span(tl, "H2D chunk 3") == (22500 * US, 30000 * US)
    assert _span(tl, "D2H chunk 3") == (35000 * US, 42500 * US)


def test_chunk_two_waits_for_chunk_zeros_d2h_in_stream_order() -> None:
    tl = simulate(chunked_pipeline(4, 2), "ideal")
    assert _span(tl, "D2H chunk 0") == (12500 * US, 20000 * US)
    # The H2D engine is idle from 15 ms: chunk 2 is queued behind D2H chunk 0 on s1.
    assert _span(tl, "H2D chunk 2") == (20000 * US, 27500 * US)


# -- default-stream trap --------------------------------------------------------------------------
def _default_ops(tl: Timeline) -> list[int]:
    return _rows_on(tl, "default")


def test_default_stream_op_waits_for_and_blocks_both_streams() -> None:
    p = _example("default-stream-trap")
    tl = _sim(p)
    others = _rows_on(tl, "s1") + _rows_on(tl, "s2")
    assert len(_default_ops(tl)) == 4
    for d in _default_ops(tl):
        before = [r for r in others if tl.index[r] < tl.index[d]]
        after = [r for r in others if tl.index[r] > tl.index[d]]
        assert before and tl.start[d] >= max(tl.end[r] for r in before)
        assert all(tl.start[r] >= tl.end[d] for r in after)
    m = compute_metrics(tl)
    assert m.speedup < 1.02  # nothing overlaps


def test_default_stream_trap_hand_computed_on_ideal() -> None:
    p = default_stream_trap_pipeline("blocking", n_batches=4)
    copy_ns = (p.program[0].bytes or 0) / get_preset("ideal").h2d_pinned_gbps
    # Fully serial: per batch H2D, the 500 us kernel, D2H and the 5 us default-stream kernel.
    tl = simulate(p, "ideal")
    assert tl.makespan_ns == pytest.approx(4 * (2 * copy_ns + 505 * US), abs=8)
    assert tl.start[_row(tl, "H2D batch 1")] == tl.end[_row(tl, "bookkeeping 0 (default stream)")]


def test_non_blocking_streams_escape_the_default_stream() -> None:
    blocking = simulate(default_stream_trap_pipeline("blocking"), "h200")
    free = simulate(default_stream_trap_pipeline("non_blocking"), "h200")
    assert free.makespan_ns < 0.75 * blocking.makespan_ns
    s1 = [(int(free.start[r]), int(free.end[r])) for r in _rows_on(free, "s1")]
    s2 = [(int(free.start[r]), int(free.end[r])) for r in _rows_on(free, "s2")]
    assert any(_overlaps(a, b) for a in s1 for b in s2)
    # The bookkeeping kernel of batch 0 runs before batch 0's results are back.
    assert free.start[_default_ops(free)[0]] < free.end[_row(free, "D2H batch 0")]


# -- pageable trap --------------------------------------------------------------------------------
def test_pageable_copies_block_the_host_and_serialise_everything() -> None:
    p = _example("pageable-trap")
    tl = _sim(p)
    for r in range(len(tl)):
        kind = tl.op_kind(r)
        if kind == "h2d":
            # The host stages the data: the next call is issued only after most of the copy.
            assert tl.issue_end[r] - tl.issue_start[r] >= 0.8 * (tl.end[r] - tl.start[r])
        elif kind == "d2h":
            assert tl.issue_end[r] >= tl.end[r]  # pageable D2H returns when the data is there
    m = compute_metrics(tl)
    assert m.compute_copy_overlap_ns <= 0.01 * m.makespan_ns
    pinned = simulate(pageable_trap_pipeline("pinned"), "h200")
    assert tl.makespan_ns > 4 * pinned.makespan_ns


def test_pageable_trap_hand_computed_on_ideal() -> None:
    p = _example("pageable-trap")
    chunk_bytes = p.program[0].bytes
    assert chunk_bytes is not None
    ideal = get_preset("ideal")
    copy_ns = chunk_bytes / ideal.h2d_pageable_gbps  # bytes / (GB/s) = ns
    tl = simulate(p, "ideal")
    # The host issues the kernel only once chunk 0 is staged, and chunk 1 once chunk 0's
    # results are back in pageable memory.
    assert tl.issue_start[_row(tl, "K chunk 0")] == pytest.approx(copy_ns, abs=2)
    assert tl.issue_start[_row(tl, "H2D chunk 1")] == tl.end[_row(tl, "D2H chunk 0")]
    # Serial: per chunk the staged H2D, the 1 ms kernel, and the host-blocking D2H.
    assert tl.makespan_ns == pytest.approx(4 * (2 * copy_ns + MS), abs=8)
    # Pinned: uploads back to back, then the last kernel and the last download.
    pinned_ns = chunk_bytes / ideal.h2d_pinned_gbps
    expected = 5 * pinned_ns + MS
    assert simulate(pageable_trap_pipeline("pinned"), "ideal").makespan_ns == pytest.approx(
        expected, abs=8
    )


# -- ping-pong ------------------------------------------------------------------------------------
def test_ping_pong_events_guard_each_buffer() -> None:
    p = _example("ping-pong")
    tl = _sim(p)
    frames = sum(1 for op in p.program if op.op == "h2d")
    for f in range(frames):
        buf = "AB"[f % 2]
        upload = _span(tl, f"H2D frame {f} -> {buf}")
        kernel = _span(tl, f"K frame {f} ({buf})")
        assert kernel[0] >= upload[1], f  # never reads a half-filled buffer
        if f >= 2:
            reader = _span(tl, f"K frame {f - 2} ({buf})")
            assert upload[0] >= reader[1], f  # never overwrites a buffer still being read
    kernels = [_span(tl, f"K frame {f} ({'AB'[f % 2]})") for f in range(frames)]
    uploads = [_span(tl, f"H2D frame {f} -> {'AB'[f % 2]}") for f in range(frames)]
    overlapping = [f for f in range(frames - 1) if _overlaps(kernels[f], uploads[f + 1])]
    assert len(overlapping) >= frames - 2
    assert compute_metrics(tl).speedup > 1.3


def test_ping_pong_hand_computed_on_ideal() -> None:
    # Kernels (2 ms) longer than uploads, so the "free" events decide when uploads start.
    p = ping_pong_pipeline(n_frames=4, kernel_us=2000.0)
    ideal = get_preset("ideal")
    upload = 32 * 2**20 / ideal.h2d_pinned_gbps
    result = 8 * 2**20 / ideal.d2h_pinned_gbps
    tl = simulate(p, "ideal")
    k0, k1 = _span(tl, "K frame 0 (A)"), _span(tl, "K frame 1 (B)")
    assert _span(tl, "H2D frame 2 -> A")[0] == k0[1]
    assert _span(tl, "H2D frame 3 -> B")[0] == k1[1]
    assert k0[0] == pytest.approx(upload, abs=2)
    assert tl.makespan_ns == pytest.approx(upload + 4 * (2 * MS + result), abs=8)


# -- breadth vs depth -----------------------------------------------------------------------------
def _orders(device: str) -> tuple[int, int]:
    def run(order: str) -> int:
        p = chunked_pipeline(4, 4, 4800.0, 4800.0, 4800.0, order=order)
        return simulate(p, device).makespan_ns

    return run("depth"), run("breadth")


def test_breadth_first_is_slower_on_fermi() -> None:
    depth, breadth = _orders("c2050")
    # Back-to-back kernels from different streams hold their completion signals until the
    # last one ends, so no D2H starts before all kernels are done (NVIDIA's C2050 result).
    assert breadth > 1.2 * depth


def test_breadth_first_is_faster_with_one_copy_engine() -> None:
    depth, breadth = _orders("c1060")
    # One engine for both directions: depth-first queues each D2H ahead of the next H2D.
    assert breadth < 0.9 * depth


@pytest.mark.parametrize("device", ["k20c", "h200"])
def test_issue_order_hardly_matters_with_hyper_q(device: str) -> None:
    depth, breadth = _orders(device)
    assert abs(breadth - depth) <= 0.05 * depth


def test_breadth_vs_depth_file_is_breadth_first() -> None:
    p = _example("breadth-vs-depth")
    kinds = [op.op for op in p.program if op.op in ("h2d", "kernel", "d2h")]
    assert kinds == ["h2d"] * 4 + ["kernel"] * 4 + ["d2h"] * 4
    assert _sim(p, "c2050").makespan_ns == _orders("c2050")[1]


# -- events ---------------------------------------------------------------------------------------
_WORK = ("h2d", "kernel", "d2h")


def _last_record(p: Pipeline, wait: int) -> int:
    event = p.program[wait].event
    return max(
        i for i in range(wait) if p.program[i].op == "event_record" and p.program[i].event == event
    )


def _work_before(p: Pipeline, stream: str | None, index: int) -> list[int]:
    return [i for i in range(index) if p.program[i].stream == stream and p.program[i].op in _WORK]


def _next_work(p: Pipeline, stream: str | None, index: int) -> int:
    return next(
        i
        for i in range(index + 1, len(p.program))
        if p.program[i].stream == stream and p.program[i].op in _WORK
    )


def _end_of(tl: Timeline, index: int) -> int:
    row = tl.row_of_index(index)
    assert row is not None
    return int(tl.end[row])


def test_every_waited_op_starts_after_its_recorded_work() -> None:
    p = _example("event-dependency")
    tl = _sim(p)
    waits = [w for w, op in enumerate(p.program) if op.op == "event_wait"]
    assert len(waits) == 8
    for w in waits:
        rec = _last_record(p, w)
        done = max(_end_of(tl, i) for i in _work_before(p, p.program[rec].stream, rec))
        waiting = tl.row_of_index(_next_work(p, p.program[w].stream, w))
        assert waiting is not None
        assert tl.start[waiting] >= done, (p.program[w].event, w)
    # Stages of different batches run at the same time.
    assert _overlaps(_span(tl, "H2D images 1"), _span(tl, "encoder 0"))


# -- priority -------------------------------------------------------------------------------------
def _request_latency_ns(tl: Timeline) -> np.ndarray:
    rows = [r for r in range(len(tl)) if tl.labels[r].startswith("request ")]
    return np.array([int(tl.end[r]) - int(tl.issue_end[r]) for r in rows])


def test_high_priority_blocks_jump_the_queue() -> None:
    p = _example("priority")
    tl = _sim(p)
    long_end = int(tl.end[_row(tl, "long simulation step")])
    latency = _request_latency_ns(tl)
    # Each request waits at most for one wave of the long kernel's 500 us blocks to finish.
    assert latency.max() <= 500 * US + 50 * US + 20 * US
    requests = [r for r in range(len(tl)) if tl.labels[r].startswith("request ")]
    assert all(int(tl.end[r]) < long_end for r in requests[:-1])


def test_equal_priority_requests_wait_behind_the_long_kernel() -> None:
    urgent = simulate(priority_pipeline(urgent_priority=-5), "h200")
    equal = simulate(priority_pipeline(urgent_priority=0), "h200")
    assert _request_latency_ns(equal).mean() > 5 * _request_latency_ns(urgent).mean()


# -- launch bound ---------------------------------------------------------------------------------
def test_launch_bound_pipeline_is_paced_by_the_host() -> None:
    p = _example("launch-bound")
    tl = _sim(p)
    h200 = get_preset("h200")
    # 400 identical launches: each after the first repeats the call before it.
    launch_ns = round(h200.repeat_issue_cost_us.get("kernel", h200.issue_cost_us["kernel"]) * 1e3)
    kernels = sum(1 for op in p.program if op.op == "kernel")
    assert kernels == 400
    m = compute_metrics(tl)
    assert tl.makespan_ns >= kernels * launch_ns
    assert m.engine_busy_ns["Compute"] <= 0.25 * m.makespan_ns
    assert m.host_busy_ns >= 0.95 * m.makespan_ns
    # The same kernels without launch costs would take 0.8 ms.
    assert _sim(p, "ideal").makespan_ns == 800 * US


# -- swimming in streams --------------------------------------------------------------------------
def _engine_spans(tl: Timeline, engine: str) -> tuple[np.ndarray, np.ndarray]:
    mask = tl.engine == tl.engine_names.index(engine)
    return tl.start[mask], tl.end[mask]


def test_async_copies_overlap_kernels_and_each_other() -> None:
    fast = _sim(_example("swimming-in-streams"))
    slow = _sim(_example("swimming-in-streams-sync"))
    assert fast.makespan_ns < 0.75 * slow.makespan_ns
    m = compute_metrics(fast)
    copies = m.engine_busy_ns["H2D"] + m.engine_busy_ns["D2H"]
    # How much depends on the host's call costs: measured 73% of the compute time on the H200
    # host of 2026-11-21, 44% on the one of 2026-11-24 (whose calibration ships).
    assert m.compute_copy_overlap_ns >= 0.4 * m.engine_busy_ns["Compute"]
    assert overlap_length(_engine_spans(fast, "H2D"), _engine_spans(fast, "D2H")) > 0.5 * copies / 2


def test_sync_copies_block_the_host_so_directions_never_overlap() -> None:
    slow = simulate(swimming_pipeline(sync_copies=True), "h200")
    assert overlap_length(_engine_spans(slow, "H2D"), _engine_spans(slow, "D2H")) == 0
    for r in range(len(slow)):
        if slow.op_kind(r) in ("h2d", "d2h"):
            assert slow.issue_end[r] >= slow.end[r]
    # The matmuls were all issued first, so the copies still run beside them.
    assert compute_metrics(slow).compute_copy_overlap_ns > 0
