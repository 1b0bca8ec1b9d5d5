"""Running a pipeline of several host threads on one device: one real Python thread per host
thread, each issuing its own ops in program order, a sync blocking only its thread, an error on
one thread stopping the others, and the measured timeline naming each op's thread.

The simulator scenarios (tests/gpu/thread_sim_scenarios.py) run once, in a child process with
NUMBA_ENABLE_CUDASIM=1 (numba reads it at import); the last test needs a real GPU.
"""

from __future__ import annotations

import pytest
from sim_child import run_under_simulator

from swimlanes.model.document import Op
from swimlanes.model.generators_threads import per_thread_streams_pipeline
from swimlanes.timeline.timeline import NO_TIME


@pytest.fixture(scope="module")
def sim() -> dict:
    return run_under_simulator("thread_sim_scenarios.py")


def _row(run: dict, label: str) -> int:
    return run["labels"].index(label)


def test_both_threads_ops_all_run_and_each_is_attributed_to_its_thread(sim: dict) -> None:
    run = sim["lesson"]
    pipeline = per_thread_streams_pipeline(batches=2)
    assert run["rows"] == len(pipeline.program) == 14
    assert run["thread_names"] == ["worker0", "worker1"] and run["thread_device"] == [0, 0]
    names = run["thread_names"]
    assert run["host_thread"] == [names.index(pipeline.op_thread(op)) for op in pipeline.program]
    assert all(s != NO_TIME for s in run["issue_start"]) and all(
        e >= s for s, e in zip(run["issue_start"], run["issue_end"], strict=True)
    )
    for i, op in enumerate(pipeline.program):  # every copy and kernel ran on the device
        if op.op != "stream_sync":
            assert run["start"][i] != NO_TIME and run["end"][i] >= run["start"][i], i
    assert run["live"] == 0  # every buffer, stream and event released


def test_each_thread_issues_its_own_ops_in_program_order_from_a_thread_of_its_own(
    sim: dict,
) -> None:
    run = sim["lesson"]
    pipeline = per_thread_streams_pipeline(batches=2)
    calls = [c for c in run["issued"] if c[0] in ("h2d", "d2h", "kernel", "stream_sync")]
    by_thread: dict[str, list[list]] = {}
    for kind, stream, thread in calls:
        by_thread.setdefault(thread, []).append([kind, stream])
    assert len(by_thread) == 2  # two Python threads made every call
    for worker in ("worker0", "worker1"):
        mine = [[op.op, op.stream] for op in pipeline.program if pipeline.op_thread(op) == worker]
        # one warm-up and two timed repetitions, each in program order, from one thread
        assert [by_thread[t] for t in by_thread if by_thread[t][0][1] == f"{worker} default"] == [
            mine * 3
        ]


def test_per_thread_default_streams_are_measured_with_events(sim: dict) -> None:
    assert sim["lesson"]["backend"] == "events"
    refused = sim["cupti_asked"]
    assert refused["type"] == "GpuError" and "per-thread default streams" in refused["error"]
    assert refused["live"] == 0


def test_threads_sharing_the_legacy_stream_all_run_and_are_measured_with_events(
    sim: dict,
) -> None:
    run = sim["one_stream_of_two_threads"]
    pipeline = per_thread_streams_pipeline(batches=2, legacy=True)
    assert run["rows"] == len(pipeline.program) and run["live"] == 0
    assert {c[1] for c in run["issued"] if c[0] == "kernel"} == {"default"}
    assert len({c[2] for c in run["issued"] if c[0] == "kernel"}) == 2  # from both threads
    refused = run["cupti"]
    assert (
        refused["type"] == "GpuError"
        and "several threads issue on stream default" in (refused["error"])
    )


def test_a_sync_on_one_thread_blocks_only_that_thread(sim: dict) -> None:
    run = sim["sync_blocks_only_its_thread"]
    start, end = run["issue_start"], run["issue_end"]
    waits, works, ready = _row(run, "a waits"), _row(run, "b works"), _row(run, "b ready")
    assert run["host_thread"][waits] == 0 and run["host_thread"][works] == 1
    # a's event sync was called first and returned only after b recorded the event ...
    assert start[waits] < start[works] + 5_000_000 and end[waits] >= end[ready]
    assert end[waits] - start[waits] > 25_000_000
    # ... while b went on: its 30 ms of host work began while a was waiting
    assert start[works] < end[waits] - 25_000_000
    # and a's kernel comes after its sync, on its own thread
    assert start[_row(run, "a k")] >= end[waits]


def test_host_work_on_one_thread_does_not_hold_up_the_others_calls(sim: dict) -> None:
    run = sim["threads_issue_together"]
    start, end = run["issue_start"], run["issue_end"]
    works, syncs = _row(run, "a works"), _row(run, "b syncs")
    assert end[works] - start[works] >= 30_000_000
    # b's kernels and its stream sync were all issued while a was busy on the host
    for label in ("b k1", "b k2", "b syncs"):
        assert end[works] > end[_row(run, label)], label
    assert end[syncs] < end[works]
    assert start[_row(run, "a k")] >= end[works]


def test_an_error_on_one_thread_stops_the_others_and_names_the_thread(sim: dict) -> None:
    failed = sim["error_on_one_thread"]
    assert failed["type"] == "GpuError"
    assert failed["error"].startswith("host thread worker1: CUDA error at op 4 (worker1 k0)")
    assert "CUDA_ERROR_LAUNCH_FAILED" in failed["error"]
    assert failed["live"] == 0  # nothing leaked, no thread left waiting


def _overlap_us(tl, a: int, b: int) -> float:
    return (min(int(tl.end[a]), int(tl.end[b])) - max(int(tl.start[a]), int(tl.start[b]))) / 1e3


@pytest.mark.gpu
def test_on_a_gpu_the_threads_kernels_overlap_on_their_per_thread_streams() -> None:
    from swimlanes.gpu.executor import execute

    pipeline = per_thread_streams_pipeline()
    tl = execute(pipeline, repeat=5, warmup=1)
    assert tl.thread_names == ["worker0", "worker1"] and tl.meta["backend"] == "events"
    kernels = {label: i for i, label in enumerate(tl.labels) if " k" in label}
    overlaps = [_overlap_us(tl, kernels[f"worker0 k{b}"], kernels[f"worker1 k{b}"])
                for b in range(4)]  # fmt: skip
    # Two 600 us kernels of 132 blocks of 1024 threads fit on the GPU together; each thread's
    # copies put them about half a kernel apart (an H200, 2026-11-25: 272 to 296 us of overlap
    # per batch; 289 us simulated). On one stream they would not overlap at all.
    assert sum(o > 200 for o in overlaps) >= 2, overlaps
    legacy = execute(per_thread_streams_pipeline(legacy=True), repeat=5, warmup=1)
    assert tl.makespan_ns < 0.85 * legacy.makespan_ns, (tl.makespan_ns, legacy.makespan_ns)


def test_the_plan_gives_each_thread_its_ops_and_orders_waits_across_threads() -> None:
    from swimlanes.gpu.device_threads import cross_device_waits
    from swimlanes.gpu.multi_plan import make_multi_plan, needs_multi
    from swimlanes.gpu.plan import DeviceInfo

    pipeline = per_thread_streams_pipeline(batches=2)
    assert needs_multi(pipeline)
    info = DeviceInfo("gpu", 132, 2048, 32, free_bytes=8 << 30, total_bytes=8 << 30)
    plan = make_multi_plan(pipeline, [info])
    assert plan.threads == ["worker0", "worker1"] and plan.thread_device == [0, 0]
    assert plan.thread_order(0) == [0, 1, 2, 6, 7, 8, 12]  # local indexes on the one device
    assert plan.thread_order(1) == [3, 4, 5, 9, 10, 11, 13]
    # a wait on an event another thread of the same device records waits for its record
    pipeline.program[4:4] = [
        Op("event_record", stream="worker0 default", event="e"),
        Op("event_wait", stream="worker1 default", event="e"),
    ]
    plan = make_multi_plan(pipeline, [info])
    assert cross_device_waits(pipeline, plan) == {5: 4}
