"""A copy's given or measured time belongs to the host memory it was taken with: pinning a
pageable copy drops it, so that "pin these copies" estimates what pinned memory saves (a
rebuilt pipeline's pageable copies keep their measured time)."""

from __future__ import annotations

from pathlib import Path

from swimlanes.analysis.insights import explain
from swimlanes.engine import get_preset, simulate
from swimlanes.model.document import Op, Pipeline
from swimlanes.model.op_defaults import host_memory_changes
from swimlanes.services.trace_pipeline import rebuild
from swimlanes.timeline.formats.io import load_timeline_any

CAPTURES = Path(__file__).resolve().parents[1] / "gpu" / "captures"
MIB = 1 << 20


def test_changing_a_copys_memory_drops_its_time_and_nothing_else_does() -> None:
    timed = Op("d2h", bytes=4 * MIB, host_memory="pageable", duration_us=363.5, call_us=2.0)
    assert host_memory_changes(timed, "pinned") == {"host_memory": "pinned", "duration_us": None}
    assert host_memory_changes(timed, "pageable") == {"host_memory": "pageable"}
    pinned = Op("h2d", bytes=4 * MIB, duration_us=80.0)  # no host_memory: pinned
    assert host_memory_changes(pinned, "pinned") == {"host_memory": "pinned"}
    assert host_memory_changes(pinned, "pageable") == {
        "host_memory": "pageable",
        "duration_us": None,
    }
    untimed = Op("h2d", bytes=4 * MIB, host_memory="pageable")
    assert host_memory_changes(untimed, "pinned") == {"host_memory": "pinned"}


def _pageable_insight(pipeline: Pipeline, preset: str = "h200"):
    timeline = simulate(pipeline, get_preset(preset))
    found = [i for i in explain(pipeline, timeline, preset) if i.rule == "pageable_copy"]
    assert len(found) == 1, [i.rule for i in explain(pipeline, timeline, preset)]
    return found[0]


def test_pinning_a_timed_synchronous_copy_saves_what_pinned_memory_saves() -> None:
    """A cudaMemcpy from pageable memory that took 12 ms: pinned with its time kept, it
    would still take 12 ms (a saving of nothing); modelled pinned, 64 MiB take about 1.2 ms."""
    pipeline = Pipeline(
        name="timed pageable copy",
        program=[
            Op("h2d", bytes=64 * MIB, host_memory="pageable", is_async=False, duration_us=12_000),
            Op("kernel", blocks=1024, threads=256, duration_us=500.0),
            Op("device_sync"),
        ],
    )
    insight = _pageable_insight(pipeline)
    assert insight.estimated_saving_ns is not None
    assert insight.estimated_saving_ns > 8_000_000


def test_the_pin_insight_on_a_rebuilt_capture_estimates_modelled_pinned_copies() -> None:
    """PyTorch's ``.cpu()`` copies (pageable D2H) and its copies from pageable CPU tensors
    (async pageable H2D, whose measured call was their staging), rebuilt with their measured
    times: the what-if pins every pageable copy and lets the model time it."""
    timeline, _ = load_timeline_any(CAPTURES / "swimming_in_streams-blocking.capture.json.gz")
    result = rebuild(timeline, str(CAPTURES / "h200-calibrated.json"))
    pipeline = result.rebuilt.pipeline
    pageable = [op for op in pipeline.program if op.effective_host_memory == "pageable"]
    assert sum(op.duration_us is not None for op in pageable if op.op == "d2h") == 30
    found = explain(pipeline, result.simulated, result.preset)
    insight = next(i for i in found if i.rule == "pageable_copy")

    pinned = pipeline.copy()
    for op in pinned.program:
        if op.op in ("h2d", "d2h") and op.effective_host_memory == "pageable":
            if op.stages_on_call:  # its measured call was its staging: a pinned one is not
                assert op.call_us is not None
                op.call_us = None
            op.host_memory, op.duration_us = "pinned", None
    expected = result.simulated.makespan_ns - simulate(pinned, result.preset).makespan_ns
    assert expected > 0
    assert insight.estimated_saving_ns == expected
