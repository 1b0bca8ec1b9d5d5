"""The critical path and per-op slack of simulated and measured timelines."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from swimlanes.analysis.critical_path import critical_path
from swimlanes.engine import get_preset, simulate
from swimlanes.engine.presets import DevicePreset, multi_preset_names
from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.model.io import load_pipeline
from swimlanes.resources import examples_dir, measurements_dir
from swimlanes.timeline.formats.io import load_run
from swimlanes.timeline.timeline import Timeline

EXAMPLES = sorted(p.stem for p in examples_dir().glob("*.json"))


def _preset_for(pipeline: Pipeline) -> DevicePreset:
    """h200, or the example's own multi-GPU preset (a multi-GPU example needs its GPUs)."""
    device = str(pipeline.extra.get("device", ""))
    return get_preset(device if device in multi_preset_names() else "h200")


def _preset_without_repeat_costs(base: DevicePreset | None = None) -> DevicePreset:
    """h200 (or ``base``) with one host cost per call kind: lengthening a kernel then changes
    nothing on the host (a call repeating the one before it is cheaper, and a new duration
    breaks the repeat)."""
    fields = (base or get_preset("h200")).to_dict()
    fields["repeat_issue_cost_us"] = {}
    return DevicePreset.from_dict(fields)


def _two_streams() -> Pipeline:
    return Pipeline(
        name="long and short",
        streams=[Stream("a"), Stream("b")],
        program=[
            Op("kernel", stream="a", label="long", blocks=1, threads=32, duration_us=1000.0),
            Op("kernel", stream="b", label="short", blocks=1, threads=32, duration_us=100.0),
            Op("device_sync"),
        ],
    )


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_path_spans_the_makespan_in_time_order_with_no_slack(name: str) -> None:
    pipeline = load_pipeline(examples_dir() / f"{name}.json")
    tl = simulate(pipeline, _preset_for(pipeline))
    cp = critical_path(tl)
    assert cp.steps, "a timeline with ops has a critical path"
    assert cp.steps[0].start_ns == tl.t0 and cp.steps[-1].end_ns == tl.t_end
    ends = [s.end_ns for s in cp.steps]
    assert ends == sorted(ends)
    on_path = [s.row for s in cp.steps if not s.on_host]
    assert (cp.device_slack_ns[on_path] == 0).all()
    has_span = tl.on_device
    assert (cp.device_slack_ns[has_span] >= 0).all() and (cp.device_slack_ns[~has_span] == -1).all()
    assert sum(cp.share_ns(tl).values()) == pytest.approx(tl.makespan_ns, rel=1e-9)


def test_the_short_kernel_has_the_long_ones_lead_as_slack() -> None:
    tl = simulate(_two_streams(), get_preset("h200"))
    cp = critical_path(tl)
    assert [tl.labels[s.row] for s in cp.steps if not s.on_host][-1] == "long"
    lead = int(tl.end[0] - tl.end[1])
    assert cp.device_slack_ns[1] == lead and cp.device_slack_ns[0] == 0
    assert cp.steps[-1].on_host and cp.steps[-1].via == "host"  # the sync waited for it


# event-dependency is left out: its kernels fill the SMs, and a kernel that runs longer holds
# its SMs longer, which slack does not see (the module says so). So are the DDP examples: their
# all-reduces hold NCCL's SMs beside the backward kernels, the same blind spot. (How a collective
# joins its devices' paths is tested in test_critical_path_devices.py.)
WITHOUT_COLLECTIVES = [n for n in EXAMPLES if not n.startswith("ddp-")]


# per-thread-default-stream is left out too: its two threads' H2D and D2H copies overlap and
# slow each other (bidirectional_slowdown), so a D2H that starts later changes how fast the other
# thread's H2D runs (by 1.8 us for a 95 us later kernel), which slack does not see either.
SLACK_BLIND = ("event-dependency", "per-thread-default-stream")


@pytest.mark.parametrize("name", [n for n in WITHOUT_COLLECTIVES if n not in SLACK_BLIND])
def test_lengthening_a_kernel_within_its_slack_leaves_the_makespan(name: str) -> None:
    pipeline = load_pipeline(examples_dir() / f"{name}.json")
    preset = _preset_without_repeat_costs(_preset_for(pipeline))
    tl = simulate(pipeline, preset)
    slack = critical_path(tl).device_slack_ns
    kernels = [
        r
        for r, op in enumerate(pipeline.program)
        if op.op == "kernel" and op.duration_us is not None and slack[r] > 20_000
    ][:12]
    for r in kernels:
        longer = copy.deepcopy(pipeline)
        longer.program[r].duration_us += 0.9 * slack[r] / 1000.0
        assert simulate(longer, preset).makespan_ns - tl.makespan_ns <= 1000, (name, r)


def test_a_kernel_on_the_path_grows_the_makespan_when_lengthened() -> None:
    preset = _preset_without_repeat_costs()
    pipeline = _two_streams()
    base = simulate(pipeline, preset).makespan_ns
    longer = copy.deepcopy(pipeline)
    longer.program[0].duration_us += 50.0
    assert simulate(longer, preset).makespan_ns == base + 50_000


def test_a_launch_bound_pipeline_is_host_calls_along_its_path() -> None:
    tl = simulate(load_pipeline(examples_dir() / "launch-bound.json"), get_preset("h200"))
    share = critical_path(tl).share_ns(tl)
    assert share["host calls"] > 0.9 * tl.makespan_ns


def test_pageable_copies_put_their_calls_on_the_path() -> None:
    tl = simulate(load_pipeline(examples_dir() / "pageable-trap.json"), get_preset("h200"))
    cp = critical_path(tl)
    vias = {(tl.op_kind(s.row), s.on_host, s.via) for s in cp.steps}
    assert ("d2h", True, "host") in vias  # a pageable D2H's call returns after its copy
    assert cp.share_ns(tl)["host calls"] > 0.4 * tl.makespan_ns


@pytest.mark.parametrize("name", ["event-dependency", "chunked-overlap", "pageable-trap"])
def test_a_measured_run_gets_a_path_ending_in_its_last_sync(name: str) -> None:
    tl, _ = load_run(measurements_dir() / f"{name}.h200.json")
    cp = critical_path(tl)
    last = cp.steps[-1]
    assert last.on_host and tl.op_kind(last.row).endswith("sync")
    assert any(not s.on_host for s in cp.steps)  # the device work it waited for
    assert (cp.device_slack_ns[tl.on_device] >= 0).all()


def test_an_empty_timeline_has_no_path() -> None:
    cp = critical_path(Timeline())
    assert cp.steps == [] and cp.makespan_ns == 0 and len(cp.device_slack_ns) == 0


def test_host_only_programs_are_all_host_calls() -> None:
    pipeline = Pipeline(
        name="host only",
        streams=[],
        program=[Op("host", duration_us=10.0), Op("host", duration_us=5.0)],
    )
    tl = simulate(pipeline, get_preset("h200"))
    cp = critical_path(tl)
    assert [s.on_host for s in cp.steps] == [True, True]
    assert np.array_equal(cp.host_slack_ns, [0, 0])
