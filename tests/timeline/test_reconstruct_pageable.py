"""A rebuilt pipeline's H2D and D2H copies keep their measured device time: how long the
program's own copies take (pageable memory's page faults, its own buffers) is the host's, which
no preset knows. A pinned copy that a copy of the other direction overlapped keeps the time
it would have taken alone by the slowdown of the preset it is rebuilt for (without a preset it
stays modelled: its measured time holds the slowdown the simulator applies again). An async pageable H2D's
call is its staging: it keeps its measured call as ``call_us``, which the simulator spends as
the call's cost and then staging."""

from __future__ import annotations

from pathlib import Path

import pytest

from swimlanes.engine import get_preset, simulate
from swimlanes.engine.plan import plan_ops
from swimlanes.model.op_defaults import async_changes, host_memory_changes
from swimlanes.model.validate import validate
from swimlanes.services.trace_pipeline import copy_contention, rebuild
from swimlanes.timeline import TimelineBuilder
from swimlanes.timeline.formats.io import load_timeline_any
from swimlanes.timeline.reconstruct import CopyContention, reconstruct

CAPTURES = Path(__file__).resolve().parents[1] / "gpu" / "captures"
MIB = 1 << 20


def _copies(calls_and_memory: list[tuple[str, str, str]], *, apart_ns: int = 400_000,
            call_ns: int = 5_000):  # fmt: skip
    """One copy per (kind, call, memory), each ``apart_ns`` after the last, its call
    ``call_ns`` long, its device span 123.457 us plus 1 us per row."""
    b = TimelineBuilder(["s", "t"], ["H2D", "D2H"])
    calls, pageable = [], []
    for row, (kind, call, memory) in enumerate(calls_and_memory):
        t = row * apart_ns
        b.add(index=row, kind=kind, stream="st"[row % 2], engine=kind.upper(), issue_start=t,
              issue_end=t + call_ns, start=t + 10_000, end=t + 133_457 + row * 1000,
              nbytes=4 * MIB, label=f"{kind} {row}")  # fmt: skip
        calls.append(call)
        if memory == "pageable":
            pageable.append(row)
    return b.build(source="measured", meta={"calls": calls, "pageable_rows": pageable})


def _rebuilt_copies(tl):
    rebuilt = reconstruct(tl)
    validate(rebuilt.pipeline)
    return rebuilt, [op for op in rebuilt.pipeline.program if op.op in ("h2d", "d2h")]


def test_copies_that_ran_alone_keep_their_measured_device_time() -> None:
    tl = _copies(
        [
            ("d2h", "cudaMemcpyAsync", "pageable"),  # returns once copied out: waited for
            ("h2d", "cudaMemcpy", "pageable"),  # synchronous: waited for
            ("h2d", "cudaMemcpyAsync", "pageable"),  # returns once staged
            ("d2h", "cudaMemcpyAsync", "pinned"),
            ("h2d", "cudaMemcpy", "pinned"),
        ],
        call_ns=200_000,
    )
    rebuilt, copies = _rebuilt_copies(tl)
    assert [op.duration_us for op in copies] == [123.457, 124.457, 125.457, 126.457, 127.457]
    # The pageable D2H's host time after its DMA (copying out, returning): its call ended
    # 200 us after it began, its DMA 133.457 us after.
    assert [op.copy_out_us for op in copies] == [66.543, None, None, None, None]
    sim = simulate(rebuilt.pipeline, "h200")
    d2h = rebuilt.pipeline.program.index(copies[0])
    assert sim.issue_end[d2h] - sim.end[d2h] == 66_543
    assert [op.host_memory for op in copies] == ["pageable"] * 3 + ["pinned"] * 2
    # Calls that wait for the device keep the preset's cost; the async pageable H2D's call
    # staged its data: it keeps the call's measured time, staging included.
    assert [op.call_us for op in copies] == [None, None, 200.0, 200.0, None]
    assert "kernels and copies (pinned ones where no copy" in rebuilt.pipeline.extra["description"]
    # Replayed: the staging call lasts its 200 us, and its DMA its measured time, starting
    # once the first of its four 1 MiB chunks is staged.
    pipeline = rebuilt.pipeline
    row = pipeline.program.index(copies[2])
    preset = get_preset("h200")
    assert preset.pageable_h2d_chunk_bytes == MIB
    sim = simulate(pipeline, preset)
    assert sim.issue_end[row] - sim.issue_start[row] == 200_000
    assert sim.end[row] - sim.start[row] == 125_457
    cost = preset.issue_cost_ns("h2d")
    assert sim.start[row] - sim.issue_start[row] >= cost + (200_000 - cost) // 4
    untimed = _copies([("h2d", "cudaMemcpyAsync", "pinned"), ("d2h", "cudaMemcpyAsync", "pinned")],
                      apart_ns=100_000)  # fmt: skip
    description = reconstruct(untimed).pipeline.extra["description"]
    assert ": kernels keep their measured time," in description


def test_a_pinned_copy_overlapped_by_the_other_direction_stays_modelled() -> None:
    # 100 us apart, each about 125 us long: each copy overlaps its neighbours, which go the
    # other way (h2d, d2h, h2d), except the pageable one, whose time is the host's.
    tl = _copies(
        [
            ("h2d", "cudaMemcpyAsync", "pinned"),
            ("d2h", "cudaMemcpyAsync", "pageable"),
            ("h2d", "cudaMemcpyAsync", "pinned"),
            ("h2d", "cudaMemcpyAsync", "pinned"),  # starts after the D2H ended: alone
        ],
        apart_ns=100_000,
    )
    _, copies = _rebuilt_copies(tl)
    assert [op.duration_us for op in copies] == [None, 124.457, None, 126.457]


def test_an_overlapped_copy_keeps_its_time_alone_by_the_presets_slowdown() -> None:
    # H2D [10, 133.457] us against D2H [110, 234.457] us: each ran 23.457 us against the other.
    tl = _copies(
        [("h2d", "cudaMemcpyAsync", "pinned"), ("d2h", "cudaMemcpyAsync", "pinned")],
        apart_ns=100_000,
    )
    contention = CopyContention(slowdown=(0.25, 0.5), overhead_us=(2.0, 0.0))
    program = reconstruct(tl, contention=contention).pipeline.program
    h2d, d2h = (op for op in program if op.op in ("h2d", "d2h"))
    # Alone: 100 us, then the overlapped 23.457 us less the fixed 2 us, slowed by 1.25.
    assert h2d.duration_us == pytest.approx(100 + (23.457 - 2) / 1.25, abs=1e-3)
    # The D2H ran from 110 to 234.457 us, the H2D until 133.457: 23.457 us against it.
    assert d2h.duration_us == pytest.approx(124.457 - 23.457 + 23.457 / 1.5, abs=1e-3)
    assert contention.alone_ns("h2d", 50_000, 0) == 50_000  # never overlapped: as measured


def test_a_rebuilt_overlapped_pair_replays_its_measured_copies() -> None:
    """Rebuilt for a preset and simulated on it, two copies that overlapped each other take
    the time they were measured with, however much that preset slows them."""
    tl = _copies(
        [("h2d", "cudaMemcpyAsync", "pinned"), ("d2h", "cudaMemcpyAsync", "pinned")],
        apart_ns=60_000,
    )
    h100 = str(CAPTURES / "h100-2026-11-25-0437" / "h100-calibrated.json")
    for device in ("h200", "a100", h100):
        assert copy_contention(get_preset(device)).slowdown[0] > 0, device
        result = rebuild(tl, device)
        measured, simulated = result.rebuilt.measured, result.simulated
        for row in range(len(measured)):
            if measured.op_kind(row) in ("h2d", "d2h"):
                index = int(measured.index[row])
                took = int(measured.end[row] - measured.start[row])
                sim_row = list(simulated.index).index(index)
                sim_took = int(simulated.end[sim_row] - simulated.start[sim_row])
                assert abs(sim_took - took) < 0.01 * took, (device, row, sim_took, took)


def test_editing_a_rebuilt_copy_drops_the_time_it_was_measured_with() -> None:
    tl = _copies(
        [
            ("d2h", "cudaMemcpyAsync", "pageable"),
            ("h2d", "cudaMemcpyAsync", "pinned"),
            ("h2d", "cudaMemcpyAsync", "pageable"),
        ],
        call_ns=200_000,
    )
    rebuilt, (pageable, pinned, staged) = _rebuilt_copies(tl)
    pipeline = rebuilt.pipeline
    # Another memory: its device time was the old memory's.
    assert host_memory_changes(pageable, "pinned") == {
        "host_memory": "pinned", "duration_us": None, "copy_out_us": None,
    }  # fmt: skip
    assert host_memory_changes(pinned, "pinned") == {"host_memory": "pinned"}
    # An H2D that starts or stops staging on its call: its call's time was that call's.
    assert host_memory_changes(pinned, "pageable") == {
        "host_memory": "pageable", "duration_us": None, "call_us": None,
    }  # fmt: skip
    assert host_memory_changes(staged, "pinned") == {
        "host_memory": "pinned", "duration_us": None, "call_us": None,
    }  # fmt: skip
    assert async_changes(staged, False) == {"is_async": False, "call_us": None}
    assert async_changes(staged, True) == {"is_async": True}
    assert async_changes(pageable, False) == {"is_async": False}  # a D2H: it never stages
    # Pinning the staging copy in the pipeline: its call costs the preset's pinned call again.
    row = pipeline.program.index(staged)
    before = simulate(pipeline, "h200")
    for key, value in host_memory_changes(staged, "pinned").items():
        setattr(staged, key, value)
    after = simulate(pipeline, "h200")
    assert before.issue_end[row] - before.issue_start[row] == 200_000  # as measured
    # (the preset's cost of a pinned H2D call at its place in the program: call_cost_factors)
    h200 = get_preset("h200")
    planned = plan_ops(pipeline, h200).cost[row] - round(h200.host_call_gap_us * 1000.0)
    issue = h200.issue_cost_ns("h2d")
    assert after.issue_end[row] - after.issue_start[row] == planned
    assert issue <= planned <= 2 * issue


def _timed_copies(capture: str) -> int:
    """How many copies of the rebuilt capture got a measured time (each checked to have its
    measured device span to the nanosecond), and how many stayed modelled (each checked to be
    a pinned one that the other direction overlapped)."""
    tl, _ = load_timeline_any(CAPTURES / f"swimming_in_streams-{capture}.capture.json.gz")
    rebuilt = reconstruct(tl)
    program, measured = rebuilt.pipeline.program, rebuilt.measured
    timed, modelled = 0, 0
    for row in range(len(measured)):
        if measured.op_kind(row) not in ("h2d", "d2h"):
            continue
        op = program[int(measured.index[row])]
        span_us = int(measured.end[row] - measured.start[row]) / 1000.0
        if op.duration_us is not None:
            assert op.duration_us == pytest.approx(span_us, abs=5e-4), row
            timed += 1
        else:
            assert op.host_memory == "pinned", row
            assert row in overlapped(measured), row
            modelled += 1
    return timed, modelled


def overlapped(tl) -> set[int]:
    """Rows of copies that a copy of the other direction overlapped (spelled out: pairs)."""
    rows = [r for r in range(len(tl)) if tl.op_kind(r) in ("h2d", "d2h")]
    return {
        a
        for a in rows
        for b in rows
        if tl.op_kind(a) != tl.op_kind(b) and tl.start[a] < tl.end[b] and tl.start[b] < tl.end[a]
    }


def test_a_pytorch_capture_replays_its_copy_times() -> None:
    """``.cpu()`` into a fresh tensor each time (30 pageable D2H), PyTorch's non_blocking D2H
    into pinned memory (30) and the async H2D copies from pageable CPU tensors (30 in each)
    keep their measured time: no pinned D2H overlapped an H2D in these runs."""
    counts = {c: _timed_copies(c) for c in ("blocking", "non_blocking")}
    assert counts == {"blocking": (60, 0), "non_blocking": (60, 0)}
