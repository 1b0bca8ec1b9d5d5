"""CUPTI records of a captured program -> a PyTorch-profiler-layout trace -> a timeline and a
pipeline, without a GPU (the records are what swimlanes.gpu.capture copies out of CUPTI)."""

from __future__ import annotations

import json

import pytest

from swimlanes.model.validate import validate
from swimlanes.timeline.formats.cupti_trace import capture_trace
from swimlanes.timeline.formats.trace_import import read_timelines
from swimlanes.timeline.formats.trace_source import TraceError
from swimlanes.timeline.reconstruct import reconstruct

T = 1_795_553_980_000_000_000  # CUPTI timestamps are ns since the epoch: large


def _api(name, corr, start, end, domain="runtime", tid=1):
    return {"domain": domain, "name": name, "cbid": 0, "correlation_id": corr,
            "start": T + start, "end": T + end, "thread_id": tid}  # fmt: skip


def _records() -> dict:
    legacy, side = 7, 13
    return {
        "api": [
            _api("cudaMemcpyAsync", 1, 0, 9_000),
            _api("cuMemcpyHtoDAsync_v2", 99, 1_000, 8_000, domain="driver"),  # inside the call
            _api("cudaLaunchKernel", 2, 20_000, 25_000),
            _api("cudaEventRecord", 3, 26_000, 27_000),
            _api("cudaStreamWaitEvent", 4, 28_000, 29_000),
            _api("cudaLaunchKernel", 5, 30_000, 34_000),
            _api("cudaMemsetAsync", 6, 35_000, 37_000),
            _api("cudaEventSynchronize", 7, 40_000, 120_000),
            _api("cudaDeviceSynchronize", 8, 130_000, 140_123),
        ],
        "memcpy": [
            {
                "correlation_id": 1,
                "stream_id": side,
                "start": T + 5_000,
                "end": T + 30_000,
                "bytes": 1 << 20,
                "copy_kind": "HTOD",
                "src_kind": "PAGEABLE",
                "dst_kind": "DEVICE",
            }
        ],  # fmt: skip
        "kernel": [
            {
                "correlation_id": 2,
                "stream_id": side,
                "start": T + 31_000,
                "end": T + 60_000,
                "name": "producer",
                "grid_x": 132,
                "grid_y": 2,
                "grid_z": 1,
                "block_x": 256,
                "block_y": 1,
                "block_z": 1,
            },
            {
                "correlation_id": 5,
                "stream_id": legacy,
                "start": T + 61_000,
                "end": T + 110_000,
                "name": "consumer",
                "grid_x": 1,
                "grid_y": 1,
                "grid_z": 1,
                "block_x": 1024,
                "block_y": 1,
                "block_z": 1,
            },
        ],  # fmt: skip
        "memset": [
            {
                "correlation_id": 6,
                "stream_id": legacy,
                "start": T + 111_000,
                "end": T + 112_000,
                "bytes": 4096,
            }
        ],  # fmt: skip
        "cuda_event": [{"correlation_id": 3, "event_id": 42, "stream_id": side}],
        "sync": [
            {
                "correlation_id": 4,
                "stream_id": legacy,
                "start": T + 28_000,
                "end": T + 29_000,
                "cuda_event_id": 42,
                "type": "STREAM_WAIT_EVENT",
            },
            {
                "correlation_id": 7,
                "stream_id": 4294967295,
                "start": T + 40_000,
                "end": T + 120_000,
                "cuda_event_id": 42,
                "type": "EVENT_SYNCHRONIZE",
            },
            {
                "correlation_id": 8,
                "stream_id": 4294967295,
                "start": T + 130_000,
                "end": T + 140_123,
                "cuda_event_id": 4294967295,
                "type": "CONTEXT_SYNCHRONIZE",
            },
        ],  # fmt: skip
        "stream": [{"stream_id": side, "flag": "NON_BLOCKING", "priority": -1}],
    }


def _info() -> dict:
    return {"legacy_stream": 7, "device": "NVIDIA H200", "argv": ["prog.py"],
            "host": {"gpu": "NVIDIA H200", "driver": "580", "cpu": "x", "hostname": "h"}}  # fmt: skip


def _timeline(records=None):
    doc = capture_trace(records or _records(), _info())
    timelines, _ = read_timelines([json.dumps(doc)])
    return doc, timelines[0]


def test_the_trace_is_in_pytorch_profiler_layout_with_exact_times() -> None:
    doc, tl = _timeline()
    cats = {e["cat"] for e in doc["traceEvents"]}
    assert cats == {"cuda_runtime", "gpu_memcpy", "kernel", "gpu_memset", "cuda_sync"}
    assert not any(e["name"].startswith("cuMemcpy") for e in doc["traceEvents"])  # nested call
    assert tl.meta["trace_format"] == "kineto" and tl.device == "NVIDIA H200"
    sync = next(r for r in range(len(tl)) if tl.op_kind(r) == "device_sync")
    assert int(tl.issue_end[sync] - tl.issue_start[sync]) == 10_123  # to the nanosecond
    copy = next(r for r in range(len(tl)) if tl.op_kind(r) == "h2d")
    assert tl.labels[copy] == "Memcpy HtoD (Pageable -> Device)"
    assert copy in tl.meta["pageable_rows"]


def test_streams_events_and_the_host_come_through() -> None:
    _, tl = _timeline()
    assert tl.meta["legacy_stream"] == "stream 7"
    assert tl.meta["stream_flags"] == {"stream 13": {"flag": "NON_BLOCKING", "priority": -1}}
    assert tl.meta["host"]["hostname"] == "h"
    record = next(r for r in range(len(tl)) if tl.op_kind(r) == "event_record")
    assert tl.stream_name(record) == "stream 13"  # from the CUDA_EVENT record
    kinds = {tl.op_kind(int(d)) for s, d, k in zip(tl.dep_src, tl.dep_dst, tl.dep_kind, strict=True)
             if int(s) == record and int(k) == 1}  # fmt: skip
    assert kinds == {"event_wait", "event_sync"}


def test_the_capture_rebuilds_as_a_pipeline() -> None:
    _, tl = _timeline()
    rebuilt = reconstruct(tl)
    validate(rebuilt.pipeline)
    ops: dict = {}
    for op in rebuilt.pipeline.program:
        ops.setdefault(op.op, op)  # the first of each kind
    assert [(s.name, s.kind, s.priority) for s in rebuilt.pipeline.streams] == [
        ("stream 13", "non_blocking", -1)
    ]
    assert ops["h2d"].host_memory == "pageable" and ops["h2d"].stream == "stream 13"
    assert (ops["kernel"].blocks, ops["kernel"].threads) == (264, 256)
    assert ops["event_wait"].stream == "default" and ops["event_record"].stream == "stream 13"
    assert ops["event_wait"].event == ops["event_record"].event == ops["event_sync"].event
    assert rebuilt.notes == []


def test_a_capture_without_gpu_work_is_refused_clearly() -> None:
    records = {"api": [_api("cudaGetDevice", 1, 0, 100)]}
    with pytest.raises(TraceError, match="no GPU activity"):
        _timeline(records)


def test_rebuilt_ops_are_labelled_by_the_nvtx_range_their_call_was_made_in() -> None:
    """NVTX ranges the capture recorded (absolute CUPTI ns) label the rebuilt ops: the
    innermost range around each call, "forward: <label>"; calls outside any keep theirs."""
    info = {**_info(), "nvtx_ranges": [["step", T + 15_000, T + 38_000],
                                       ["forward", T + 19_000, T + 26_500]]}  # fmt: skip
    doc = capture_trace(_records(), info)
    tl = read_timelines([json.dumps(doc)])[0][0]
    labels = {op.op: op.label for op in reconstruct(tl).pipeline.program if op.op != "host"}
    assert labels["kernel"] == "step: consumer"  # the second kernel, in step only
    assert labels["event_record"] == "forward: cudaEventRecord"  # inside forward, in step
    assert labels["memset"] == "step: Memset (Device)"
    assert labels["h2d"] == "Memcpy HtoD (Pageable -> Device)"  # before the step
    assert labels["device_sync"] == "Context Sync"  # after it
    first = next(op for op in reconstruct(tl).pipeline.program if op.op == "kernel")
    assert first.label == "forward: producer"
