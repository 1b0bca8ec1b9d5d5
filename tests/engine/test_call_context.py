"""A call's host cost by its place in the program (a preset's ``call_cost_factors``, which
calibrate writes): the first calls of a host thread, calls right after a blocking call, and
memset, D2D, host-function and FLOP-and-memory kernel calls cost more than the calibrated
issue cost; timed kernel launches and blocking calls do not. Fast engine and reference alike;
a preset without the factors charges as before."""

from __future__ import annotations

import dataclasses

import pytest
from test_reference import assert_same

from swimlanes.engine import DevicePreset, get_preset, simulate
from swimlanes.engine.preset_model import FITTED_CALL_COSTS
from swimlanes.model.document import Op, Pipeline, Stream

FACTORS = FITTED_CALL_COSTS["call_cost_factors"]


def _pipeline() -> Pipeline:
    spin = dict(stream="s", blocks=1, threads=32, duration_us=20.0)
    return Pipeline(
        name="places",
        streams=[Stream("s"), Stream("t")],
        program=[
            Op("h2d", stream="s", bytes=1 << 20),  # 0: a first call
            Op("kernel", label="k0", **spin),  # 1: a first call, but a timed kernel
            Op("event_record", stream="s", event="e"),  # 2: a first call
            Op("event_wait", stream="t", event="e"),  # 3: among other calls
            Op("stream_sync", stream="s"),  # 4: blocks the host
            Op("d2h", stream="t", bytes=1 << 20),  # 5: right after a blocking call
            Op("memset", stream="t", bytes=1 << 20),  # 6: a memset
            Op(
                "kernel", label="roof", stream="t", blocks=64, threads=256, flops=1e6, bytes=1 << 20
            ),
            Op("kernel", label="k1", **spin),  # 8: a timed kernel among other calls
            Op("h2d", stream="s", bytes=1 << 20, host_memory="pageable"),  # 9: blocks
            Op("kernel", label="k2", **spin),  # 10: a timed kernel after a blocking call
            Op("event_record", stream="s", event="f", call_us=3.0),  # 11: measured
            Op("device_sync"),
        ],
    )


def _preset(on: bool) -> DevicePreset:
    preset = get_preset("h200")
    return dataclasses.replace(preset, call_cost_factors=dict(FACTORS) if on else {})


def _costs(preset: DevicePreset) -> list[int]:
    timeline = simulate(_pipeline(), preset)
    rows = {int(timeline.index[r]): r for r in range(len(timeline))}
    return [int(timeline.issue_end[rows[i]] - timeline.issue_start[rows[i]]) for i in range(12)]


def test_calls_cost_more_by_their_place_in_the_program() -> None:
    on, off = _preset(True), _preset(False)
    cost = _costs(on)
    issue = on.issue_cost_ns
    assert cost[0] == round(issue("h2d") * FACTORS["first_calls"])
    assert cost[1] == issue("kernel")  # timed kernel launches keep the preset's cost
    assert cost[2] == round(issue("event_record") * FACTORS["first_calls"])
    assert cost[3] == issue("event_wait")
    assert cost[5] == round(issue("d2h") * FACTORS["after_blocking"])
    assert cost[6] == round(issue("memset") * FACTORS["memset"])
    assert cost[7] == round(issue("kernel") * FACTORS["roofline_kernel"])
    assert cost[8] == issue("kernel")
    assert cost[10] == issue("kernel")
    assert cost[11] == 3000  # a measured call time still replaces the model's
    # Without the factors every call costs its issue cost, as before.
    assert _costs(off)[:4] == [
        issue("h2d"),
        issue("kernel"),
        issue("event_record"),
        issue("event_wait"),
    ]


def test_calibrate_and_the_fidelity_benchmark_set_the_factors() -> None:
    assert set(FACTORS) == {
        "first_calls",
        "after_blocking",
        "roofline_kernel",
        "memset",
        "d2d",
        "host_func",
    }
    assert all(f > 1 for f in FACTORS.values())
    # The shipped h200 preset carries them, as calibrate writes them; the classic presets,
    # built from published figures, charge every call its issue cost.
    assert get_preset("h200").call_cost_factors == FACTORS
    assert get_preset("a100").call_cost_factors == {} == get_preset("c2050").call_cost_factors


@pytest.mark.parametrize("on", [True, False])
def test_the_reference_agrees(on: bool) -> None:
    assert_same(_pipeline(), _preset(on))


def test_bad_factors_are_refused_by_name() -> None:
    data = get_preset("h200").to_dict()
    for bad, match in (
        ({"warm": 1.2}, "call_cost_factors.warm"),
        ({"memset": 0}, "call_cost_factors.memset"),
        ({"d2d": 50}, "call_cost_factors.d2d"),
    ):
        data["call_cost_factors"] = bad
        with pytest.raises(ValueError, match=match):
            DevicePreset.from_dict(data)
    data["call_cost_factors"] = dict(FACTORS)
    assert DevicePreset.from_dict(data).call_cost_factors == FACTORS
