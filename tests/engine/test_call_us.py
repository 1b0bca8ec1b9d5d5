"""An op's measured call time (``call_us``, as rebuilt from a captured program) replaces the
preset's cost of that call, in the fast engine and the reference alike, and round-trips."""

from __future__ import annotations

import json

import pytest
from test_reference import assert_same

from swimlanes.engine import get_preset, preset_names, simulate
from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.model.io import pipeline_to_json
from swimlanes.model.validate import PipelineError, pipeline_from_dict


def _pipeline(call_us: float | None) -> Pipeline:
    k = dict(stream="s", blocks=1, threads=32, duration_us=20.0)
    return Pipeline(
        name="calls",
        streams=[Stream("s")],
        program=[
            Op("kernel", label="a", **k),
            Op("kernel", label="b", call_us=call_us, **k),  # repeats the call before it
            Op("h2d", stream="s", bytes=1 << 20, call_us=call_us),
            Op("stream_sync", stream="s"),
        ],
    )


@pytest.mark.parametrize("device", ["h200", "ideal", "a100"])
def test_a_measured_call_time_replaces_the_presets_cost(device: str) -> None:
    preset = get_preset(device)
    gap = round(preset.host_call_gap_us * 1000)
    plain, measured = simulate(_pipeline(None), preset), simulate(_pipeline(3.25), preset)
    for row in (1, 2):
        took = int(measured.issue_end[row] - measured.issue_start[row])
        assert took == 3250, (device, row)
        assert int(measured.issue_start[row] - measured.issue_end[row - 1]) == gap
    assert int(plain.issue_end[0]) == int(measured.issue_end[0])  # the first call is the preset's


@pytest.mark.parametrize("device", preset_names())
def test_the_reference_agrees(device: str) -> None:
    for call_us in (0.0, 3.25, 500.0):
        assert_same(_pipeline(call_us), device)


def test_it_round_trips_and_bad_values_are_refused() -> None:
    text = pipeline_to_json(_pipeline(3.25))
    assert json.loads(text)["program"][1]["call_us"] == 3.25
    data = json.loads(text)
    assert pipeline_from_dict(data).program[1].call_us == 3.25
    for bad in (-1, "fast", 2e9, float("nan")):
        data["program"][1]["call_us"] = bad
        with pytest.raises(PipelineError, match=r"program\[1\]\.call_us"):
            pipeline_from_dict(data)
