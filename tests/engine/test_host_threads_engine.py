"""Several host threads on one device, simulated by the reference system model: each thread
issues its own ops, a thread's sync blocks only it, per-thread default streams overlap and the
legacy default stream serialises. Hand-worked on the ``ideal`` preset (free calls, no
latencies): a kernel of 128 blocks of 1024 threads fills half of every SM, so two run at once."""

from __future__ import annotations

from typing import Any

import numpy as np

from swimlanes.engine import simulate
from swimlanes.engine.multi import needs_multi_device, simulate_multi_device
from swimlanes.model import pipeline_from_dict
from swimlanes.model.document import Pipeline
from swimlanes.timeline.timeline import NO_TIME, Timeline


def _kernel(us: float, **keys: Any) -> dict[str, Any]:
    return {"op": "kernel", "blocks": 128, "threads": 1024, "duration_us": us, **keys}


def _pipeline(program: list[dict[str, Any]], threads: bool = True) -> Pipeline:
    doc: dict[str, Any] = {
        "format": "swimlanes-pipeline",
        "version": 1,
        "streams": [
            {"name": "a ptds", "kind": "per_thread_default", "host_thread": "a"},
            {"name": "b ptds", "kind": "per_thread_default", "host_thread": "b"},
        ],
        "program": program,
    }
    if threads:
        doc["host_threads"] = [{"name": "a"}, {"name": "b"}]
    else:  # the same calls, all from one thread
        for s in doc["streams"]:
            del s["host_thread"]
        doc["program"] = [{k: v for k, v in op.items() if k != "host_thread"} for op in program]
    return pipeline_from_dict(doc)


def _spans(tl: Timeline) -> list[tuple[float, float] | None]:
    return [
        None if s == NO_TIME else (s / 1000.0, e / 1000.0)
        for s, e in zip(tl.start.tolist(), tl.end.tolist(), strict=True)
    ]


def test_two_threads_on_their_per_thread_default_streams_overlap() -> None:
    p = _pipeline([_kernel(100, stream="a ptds"), _kernel(100, stream="b ptds")])
    assert needs_multi_device(p)
    tl = simulate(p, "ideal")
    assert _spans(tl) == [(0.0, 100.0), (0.0, 100.0)]
    assert tl.thread_names == ["a", "b"] and tl.host_thread.tolist() == [0, 1]


def test_two_threads_on_the_legacy_default_stream_serialise() -> None:
    p = _pipeline([_kernel(100, host_thread="a"), _kernel(100, host_thread="b")])
    tl = simulate(p, "ideal")
    assert _spans(tl) == [(0.0, 100.0), (100.0, 200.0)]


def test_the_legacy_stream_still_waits_for_every_threads_per_thread_stream() -> None:
    # A per-thread default stream is not non-blocking: b's legacy-stream kernel waits for a's.
    p = _pipeline([_kernel(300, stream="a ptds"), _kernel(100, host_thread="b")])
    assert _spans(simulate(p, "ideal")) == [(0.0, 300.0), (300.0, 400.0)]


def test_a_sync_on_one_thread_does_not_block_the_other() -> None:
    program = [
        _kernel(1000, stream="a ptds"),
        {"op": "stream_sync", "stream": "a ptds"},
        {"op": "host", "duration_us": 10, "host_thread": "a"},
        {"op": "host", "duration_us": 10, "host_thread": "b"},
        _kernel(100, stream="b ptds"),
    ]
    tl = simulate(_pipeline(program), "ideal")
    assert _spans(tl)[4] == (10.0, 110.0)  # b launches after its own host work only
    assert (tl.issue_start[2], tl.issue_end[2]) == (1_000_000, 1_010_000)  # a waited
    assert tl.issue_end[1] == 1_000_000
    # The same calls from one thread: its kernel waits for the sync before it.
    one = simulate(_pipeline(program, threads=False), "ideal")
    assert _spans(one)[4] == (1020.0, 1120.0)


def test_a_device_sync_waits_for_every_threads_work_but_blocks_only_its_thread() -> None:
    program = [
        _kernel(500, stream="a ptds"),
        {"op": "device_sync", "host_thread": "b"},
        {"op": "host", "duration_us": 50, "host_thread": "a"},
    ]
    tl = simulate(_pipeline(program), "ideal")
    assert tl.issue_end[1] == 500_000  # b waited for a's kernel
    assert (tl.issue_start[2], tl.issue_end[2]) == (0, 50_000)  # a did not wait


def test_threads_that_all_use_one_thread_schedule_as_one_thread() -> None:
    program = [
        {"op": "h2d", "stream": "a ptds", "bytes": 1 << 24},
        _kernel(100, stream="a ptds"),
        _kernel(100, stream="b ptds"),
        {"op": "d2h", "stream": "b ptds", "bytes": 1 << 24, "host_memory": "pageable"},
        {"op": "device_sync"},
        {"op": "host", "duration_us": 5},
    ]
    threaded = _pipeline(program)
    for op in threaded.program:
        op.host_thread = None
    for s in threaded.streams:
        s.host_thread = None
    threaded.streams[1].host_thread = "a"  # b's stream issued by a: still one thread
    threaded.host_threads = threaded.host_threads[:1]
    plain = _pipeline(program, threads=False)
    assert not threaded.is_multi_thread
    for preset in ("h200", "a100"):
        a = simulate_multi_device(threaded, preset)
        b = simulate_multi_device(plain, preset)
        for col in ("issue_start", "issue_end", "start", "end", "engine"):
            assert np.array_equal(getattr(a, col), getattr(b, col)), (preset, col)
        assert simulate(threaded, preset).to_dict() == simulate(plain, preset).to_dict()


def test_warm_repeat_costs_count_per_thread() -> None:
    # On h200 a launch that repeats the call before it costs less. Interleaved across two
    # threads, each thread's second launch repeats its own first one.
    program = [_kernel(10, stream="a ptds"), _kernel(10, stream="b ptds")] * 2
    tl = simulate(_pipeline(program), "h200")
    calls = (tl.issue_end - tl.issue_start).tolist()
    assert calls[2] < calls[0] and calls[3] < calls[1]


def test_a_captured_staging_call_lasts_its_measured_time_on_any_thread() -> None:
    """A rebuilt async pageable H2D's ``call_us`` is its whole call, staging included, as in
    a one-thread program: 487.5 us on h200 whichever thread issues it (not its call_us and
    then the staging again)."""
    copy = {"op": "h2d", "bytes": 4 << 20, "host_memory": "pageable", "call_us": 487.5,
            "duration_us": 382.5}  # fmt: skip
    threaded = _pipeline([{**copy, "stream": "a ptds"}, {**copy, "stream": "b ptds"}])
    one = _pipeline([{**copy, "stream": "a ptds"}], threads=False)
    for tl in (simulate(threaded, "h200"), simulate(one, "h200")):
        calls = (tl.issue_end - tl.issue_start).tolist()
        assert calls == [487_500] * len(calls)
