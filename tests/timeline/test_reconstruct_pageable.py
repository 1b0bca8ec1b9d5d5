"""A rebuilt pipeline's pageable copies that the host waited for keep their measured device
time: how long a copy through pageable memory takes is the host's memory state, which no
preset knows. Pinned copies, and async pageable H2D copies (whose duration the simulator would
also take as the host's staging time), stay modelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from swimlanes.model.validate import validate
from swimlanes.timeline import TimelineBuilder
from swimlanes.timeline.formats.io import load_timeline_any
from swimlanes.timeline.reconstruct import reconstruct

CAPTURES = Path(__file__).resolve().parents[1] / "gpu" / "captures"
MIB = 1 << 20


def _copies(calls_and_memory: list[tuple[str, str, str]]):
    """One copy per (kind, call, memory), each 400 us after the last, its device span 123.457
    us plus 1 us per row."""
    b = TimelineBuilder(["s"], ["H2D", "D2H"])
    calls, pageable = [], []
    for row, (kind, call, memory) in enumerate(calls_and_memory):
        t = row * 400_000
        b.add(index=row, kind=kind, stream="s", engine=kind.upper(), issue_start=t,
              issue_end=t + 5_000, start=t + 10_000, end=t + 133_457 + row * 1000,
              nbytes=4 * MIB, label=f"{kind} {row}")  # fmt: skip
        calls.append(call)
        if memory == "pageable":
            pageable.append(row)
    return b.build(source="measured", meta={"calls": calls, "pageable_rows": pageable})


def test_waited_for_pageable_copies_keep_their_measured_device_time() -> None:
    tl = _copies(
        [
            ("d2h", "cudaMemcpyAsync", "pageable"),  # returns once copied out: waited for
            ("h2d", "cudaMemcpy", "pageable"),  # synchronous: waited for
            ("h2d", "cudaMemcpyAsync", "pageable"),  # returns once staged: modelled
            ("d2h", "cudaMemcpyAsync", "pinned"),
            ("h2d", "cudaMemcpy", "pinned"),
        ]
    )
    rebuilt = reconstruct(tl)
    validate(rebuilt.pipeline)
    copies = [op for op in rebuilt.pipeline.program if op.op in ("h2d", "d2h")]
    assert [op.duration_us for op in copies] == [123.457, 124.457, None, None, None]
    assert [op.host_memory for op in copies] == ["pageable"] * 3 + ["pinned"] * 2
    # the calls that wait for the device keep the preset's cost: no measured call time
    assert [op.call_us for op in copies] == [None, None, None, 5.0, None]
    assert "pageable copies the host waited for keep" in rebuilt.pipeline.extra["description"]
    untimed = _copies([("h2d", "cudaMemcpyAsync", "pageable"), ("d2h", "cudaMemcpy", "pinned")])
    description = reconstruct(untimed).pipeline.extra["description"]
    assert ": kernels keep their measured time," in description


def _timed_copies(capture: str) -> int:
    """How many copies of the rebuilt capture got a measured time, after checking that those
    are its pageable D2H copies, each with its measured device span to the nanosecond."""
    tl, _ = load_timeline_any(CAPTURES / f"swimming_in_streams-{capture}.capture.json.gz")
    rebuilt = reconstruct(tl)
    program, measured = rebuilt.pipeline.program, rebuilt.measured
    timed = 0
    for row in range(len(measured)):
        if measured.op_kind(row) not in ("h2d", "d2h"):
            continue
        op = program[int(measured.index[row])]
        span_us = int(measured.end[row] - measured.start[row]) / 1000.0
        if op.op == "d2h" and op.host_memory == "pageable":
            assert op.duration_us == pytest.approx(span_us, abs=5e-4), row
            timed += 1
        else:
            assert op.duration_us is None, (row, op.op, op.host_memory)
    return timed


def test_a_pytorch_capture_replays_its_pageable_d2h_times() -> None:
    """``.cpu()`` into a fresh tensor each time: 30 pageable D2H copies, which keep their
    measured time; PyTorch's non_blocking D2H goes to pinned memory and stays modelled, as do
    the async H2D copies from pageable CPU tensors (30 in each program)."""
    timed = {c: _timed_copies(c) for c in ("blocking", "non_blocking")}
    assert timed == {"blocking": 30, "non_blocking": 0}
