"""Profiler traces and measured timelines rebuilt as editable pipelines."""

from __future__ import annotations

import pytest

from conftest import SHARED_TRACES
from swimlanes.engine import get_preset, simulate
from swimlanes.model.validate import validate
from swimlanes.services.trace_pipeline import rebuild
from swimlanes.timeline import TimelineBuilder
from swimlanes.timeline.compare import compare_timelines
from swimlanes.timeline.formats.io import load_timeline_any
from swimlanes.timeline.reconstruct import reconstruct

EVENT_SYNC = SHARED_TRACES / "kineto-a100-event-sync.json.gz"
SIMPLE_ADD = SHARED_TRACES / "kineto-simple-add.json.gz"
needs_traces = pytest.mark.skipif(
    not EVENT_SYNC.exists(), reason=f"shared traces not found in {SHARED_TRACES}"
)


@needs_traces
def test_the_kineto_import_keeps_calls_shapes_and_record_streams() -> None:
    tl, _ = load_timeline_any(EVENT_SYNC)
    assert tl.meta["calls"][0] == "cudaLaunchKernel" and len(tl.meta["calls"]) == len(tl)
    kernels = [r for r in range(len(tl)) if tl.op_kind(r) == "kernel"]
    assert all(str(r) in tl.meta["kernel_shapes"] for r in kernels)
    assert set(tl.meta["record_streams"].values()) == {"stream 7"}


@needs_traces
def test_a_pytorch_trace_becomes_a_valid_pipeline_that_replays_it() -> None:
    tl, _ = load_timeline_any(EVENT_SYNC)
    preset = get_preset("a100")
    rebuilt = reconstruct(tl)
    validate(rebuilt.pipeline)
    program = rebuilt.pipeline.program
    kernels = [op for op in program if op.op == "kernel"]
    assert [k.duration_us for k in kernels] == [1.0, 11.0, 1.0, 36.0]  # as measured
    assert (kernels[0].blocks, kernels[0].threads) == tuple(tl.meta["kernel_shapes"]["0"])
    # PyTorch's stream 7 is its default stream: the legacy default stream.
    assert {op.stream for op in kernels} == {"default"} and rebuilt.pipeline.streams == []
    records = {op.event for op in program if op.op == "event_record"}
    syncs = [op for op in program if op.op == "event_sync"]
    assert syncs and all(op.event in records for op in syncs)
    assert rebuilt.notes == []

    simulated = simulate(rebuilt.pipeline, preset)
    cmp = compare_timelines(simulated, rebuilt.measured)
    assert len(cmp) == len(tl) and cmp.only_measured == ()  # every measured op has its op
    # Calls that do not wait for the device return when they did: the host ops took the rest.
    measured = rebuilt.measured
    for row in range(len(measured)):
        if measured.op_kind(row) != "kernel" or row > 3:
            continue
        op = int(measured.index[row])
        sim_end = int(simulated.issue_end[op] - simulated.t0)
        assert sim_end == pytest.approx(int(measured.issue_end[row] - measured.t0), abs=1000)


@needs_traces
def test_a_long_trace_replays_within_a_percent_and_says_what_it_left_out() -> None:
    tl, _ = load_timeline_any(SIMPLE_ADD)
    result = rebuild(tl, "a100")
    assert abs(result.replay_error) < 0.01
    assert any("event wait on an unknown event" in n for n in result.rebuilt.notes)
    labels = [op.label or "" for op in result.rebuilt.pipeline.program]
    assert max(map(len, labels)) <= 256  # C++ kernel names are cut to the format's limit
    assert any(label.endswith("\u2026") for label in labels)


def _timeline_with_an_orphan_wait():
    b = TimelineBuilder(["s"], ["Compute"])
    b.add(index=0, kind="kernel", stream="s", engine="Compute", issue_start=0,
          issue_end=5_000, start=6_000, end=20_000, label="k")  # fmt: skip
    b.add(index=1, kind="event_wait", stream="s", engine=None, issue_start=50_000,
          issue_end=52_000, label="wait")  # fmt: skip
    b.add(index=2, kind="stream_sync", stream="s", engine=None, issue_start=52_500,
          issue_end=60_000)  # fmt: skip
    return b.build(source="measured", name="orphan")


def test_what_cannot_be_replayed_is_named_and_the_rest_is_kept() -> None:
    rebuilt = reconstruct(_timeline_with_an_orphan_wait())
    kinds = [op.op for op in rebuilt.pipeline.program]
    assert kinds == ["kernel", "host", "stream_sync"]
    assert rebuilt.pipeline.program[1].duration_us == pytest.approx(47.5)  # 5 us to 52.5 us
    assert rebuilt.notes == ["an event wait on an unknown event (rows 1)"]
    assert list(rebuilt.measured.index) == [0, 3, 2]  # the left-out row goes past the program
    validate(rebuilt.pipeline)


@needs_traces
def test_a_pytorch_traces_record_function_ranges_label_the_rebuilt_ops() -> None:
    """Kineto's user_annotation ranges (record_function, ProfilerStep#N) prefix the label of
    each rebuilt op whose call was made inside them; the measured labels stay as they were."""
    tl, _ = load_timeline_any(EVENT_SYNC)
    assert [r[0] for r in tl.meta["ranges"]] == ["ProfilerStep#100"]
    calls = [op for op in reconstruct(tl).pipeline.program if op.op != "host"]
    assert calls and all((op.label or "").startswith("ProfilerStep#100: ") for op in calls)
    assert not any(label.startswith("ProfilerStep") for label in tl.labels)
