"""A captured program whose CUDA calls came from two host threads (CUPTI's thread_id) rebuilds
as a pipeline of two host threads: each thread's calls, in order, with its own host time
between them; and it replays the threads' overlap. Synthesized CUPTI records, no GPU."""

from __future__ import annotations

import json

from swimlanes.engine import simulate
from swimlanes.model.io import pipeline_from_json, pipeline_to_json
from swimlanes.model.validate import validate
from swimlanes.timeline.formats.cupti_trace import capture_trace
from swimlanes.timeline.formats.trace_import import read_timelines
from swimlanes.timeline.reconstruct import reconstruct

T = 1_795_553_980_000_000_000
MAIN, WORKER = 1001, 2002


def _api(name: str, corr: int, start: int, end: int, tid: int) -> dict:
    return {"domain": "runtime", "name": name, "cbid": 0, "correlation_id": corr,
            "start": T + start, "end": T + end, "thread_id": tid}  # fmt: skip


def _kernel(corr: int, stream: int, start: int, end: int, name: str) -> dict:
    return {"correlation_id": corr, "stream_id": stream, "start": T + start, "end": T + end,
            "name": name, "grid_x": 132, "grid_y": 1, "grid_z": 1, "block_x": 256,
            "block_y": 1, "block_z": 1}  # fmt: skip


def _records(worker_tid: int = WORKER) -> dict:
    """Two threads, each launching on its own stream; the worker waits 50 us of its own host
    work between its launches, and syncs its stream at the end."""
    a, b = 13, 14
    return {
        "api": [
            _api("cudaLaunchKernel", 1, 0, 5_000, MAIN),
            _api("cudaLaunchKernel", 2, 1_000, 6_000, worker_tid),
            _api("cudaLaunchKernel", 3, 7_000, 10_000, MAIN),
            _api("cudaLaunchKernel", 4, 56_000, 59_000, worker_tid),
            _api("cudaStreamSynchronize", 5, 60_000, 300_000, worker_tid),
        ],
        "kernel": [
            _kernel(1, a, 10_000, 110_000, "a0"),
            _kernel(2, b, 11_000, 111_000, "b0"),
            _kernel(3, a, 111_000, 211_000, "a1"),
            _kernel(4, b, 112_000, 212_000, "b1"),
        ],
        "sync": [
            {
                "correlation_id": 5,
                "stream_id": b,
                "start": T + 60_000,
                "end": T + 300_000,
                "cuda_event_id": 4294967295,
                "type": "STREAM_SYNCHRONIZE",
            }
        ],  # fmt: skip
        "stream": [
            {"stream_id": a, "flag": "DEFAULT", "priority": 0},
            {"stream_id": b, "flag": "DEFAULT", "priority": 0},
        ],  # fmt: skip
    }


def _rebuilt(records: dict):
    info = {"legacy_stream": 7, "device": "NVIDIA H200", "argv": ["p.py"]}
    tl = read_timelines([json.dumps(capture_trace(records, info))])[0][0]
    return tl, reconstruct(tl)


def test_two_calling_threads_become_two_host_threads() -> None:
    tl, rebuilt = _rebuilt(_records())
    p = rebuilt.pipeline
    assert not validate(p)
    assert [t.name for t in p.host_threads] == ["thread 0", "thread 1"]
    calls = [(op.op, op.label, p.op_thread(op)) for op in p.program]
    assert calls == [
        ("kernel", "a0", "thread 0"),
        ("kernel", "b0", "thread 1"),
        ("kernel", "a1", "thread 0"),
        ("host", "host work", "thread 1"),  # the worker's own 50 us between its calls
        ("kernel", "b1", "thread 1"),
        ("stream_sync", "Stream Sync", "thread 1"),
    ]
    host = p.program[3]
    assert host.duration_us == 50.0  # 6 us to 56 us on its own thread, not 10 us to 56 us
    # the file keeps the threads
    assert pipeline_from_json(pipeline_to_json(p)).to_dict() == p.to_dict()
    assert rebuilt.notes == []


def test_the_rebuilt_threads_replay_side_by_side() -> None:
    _, rebuilt = _rebuilt(_records())
    sim = simulate(rebuilt.pipeline, "h200")
    assert sim.thread_names == ["thread 0", "thread 1"]
    k = [r for r in range(len(sim)) if sim.op_kind(r) == "kernel"]
    # b0 (thread 1) does not wait for a0 to be issued and run: the threads overlap
    assert sim.start[k[1]] < sim.end[k[0]]


def test_one_calling_thread_stays_one_thread() -> None:
    tl, rebuilt = _rebuilt(_records(worker_tid=MAIN))
    assert "host_threads" not in tl.meta
    p = rebuilt.pipeline
    assert p.host_threads == [] and all(op.host_thread is None for op in p.program)
    assert "host_threads" not in pipeline_to_json(p)
