"""Prediction bands: seeded Monte Carlo over the preset's spread figures."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from swimlanes.engine import SimulationCancelled, get_preset, simulate
from swimlanes.engine import bands as bands_mod
from swimlanes.engine.bands import BandRefused, simulate_band
from swimlanes.engine.presets import DevicePreset
from swimlanes.model.document import Op, Pipeline, Stream
from swimlanes.timeline.timeline import NO_TIME

MB = 1 << 20


def pipeline() -> Pipeline:
    """Copies (pinned and pageable), kernels and host calls on two streams."""
    program = []
    for k in range(6):
        s = f"s{k % 2 + 1}"
        memory = "pageable" if k % 3 == 0 else "pinned"
        program += [
            Op("h2d", stream=s, bytes=4 * MB, host_memory=memory),
            Op("kernel", stream=s, blocks=264, threads=256, duration_us=80),
            Op("d2h", stream=s, bytes=2 * MB),
        ]
    program.append(Op("device_sync"))
    return Pipeline(name="mixed", streams=[Stream("s1"), Stream("s2")], program=program)


def with_spread(**spread: float) -> DevicePreset:
    return dataclasses.replace(get_preset("h200"), spread=spread)


def test_same_seed_same_band_other_seed_other_band() -> None:
    p = pipeline()
    a = simulate_band(p, "h200", samples=32, seed=7)
    b = simulate_band(p, "h200", samples=32, seed=7)
    c = simulate_band(p, "h200", samples=32, seed=8)
    assert (a.makespan_low, a.makespan_p50, a.makespan_high) == (
        b.makespan_low,
        b.makespan_p50,
        b.makespan_high,
    )
    assert np.array_equal(a.end_low, b.end_low) and np.array_equal(a.end_high, b.end_high)
    assert (a.makespan_low, a.makespan_high) != (c.makespan_low, c.makespan_high)


def unfitted() -> DevicePreset:
    """The shipped h200 preset's run-to-run spread without its model-error term."""
    h200 = get_preset("h200")
    spread = {k: v for k, v in h200.spread.items() if not k.startswith("model_error")}
    return dataclasses.replace(h200, spread=spread)


def test_band_brackets_its_median_and_the_plain_simulation() -> None:
    p = pipeline()
    band = simulate_band(p, unfitted(), samples=64, seed=0)
    plain = simulate(p, "h200")
    assert band.makespan_low < band.makespan_p50 < band.makespan_high
    assert band.contains(plain.makespan_ns)
    assert band.span_low <= band.span_p50 <= band.span_high
    has = band.end_low != NO_TIME
    assert np.array_equal(has, plain.on_device)
    assert (band.end_low[has] <= band.end_high[has]).all()
    assert band.level_pct == 80 and not band.model_error
    # The shipped preset carries the model-error term fitted on the fidelity benchmark.
    assert simulate_band(p, "h200", samples=16).level_pct == 90


def test_band_widens_with_spread_and_vanishes_without() -> None:
    p = pipeline()
    zero = dict.fromkeys(("host_cost", "host_scale", "copy", "pageable_gbps", "kernel"), 0.0)
    with pytest.raises(BandRefused, match="models no run-to-run variation"):
        simulate_band(p, with_spread(**zero), samples=16)
    with pytest.raises(BandRefused, match="the ideal preset models no run-to-run variation"):
        simulate_band(p, "ideal", samples=16)  # the textbook GPU's schedule is exact
    small = simulate_band(p, with_spread(copy=0.02, kernel=0.02, pageable_gbps=0.02), samples=64)
    large = simulate_band(p, with_spread(copy=0.2, kernel=0.2, pageable_gbps=0.2), samples=64)
    width = lambda b: b.makespan_high - b.makespan_low  # noqa: E731
    assert 0 < width(small) < width(large)


def test_model_error_stretches_the_band_and_claims_ninety_percent() -> None:
    p = pipeline()
    base = simulate_band(p, with_spread(), samples=32)
    fitted = simulate_band(p, with_spread(model_error_low=-0.1, model_error_high=0.2), samples=32)
    assert fitted.level_pct == 90 and fitted.model_error
    assert fitted.makespan_low == pytest.approx(base.makespan_low * 0.9, abs=1)
    assert fitted.makespan_high == pytest.approx(base.makespan_high * 1.2, abs=1)
    assert fitted.makespan_p50 == base.makespan_p50


def test_large_pipelines_are_refused_with_a_reason(monkeypatch) -> None:
    monkeypatch.setattr(bands_mod, "MAX_BAND_OPS", 10)
    with pytest.raises(BandRefused, match="no prediction band for 19 ops"):
        simulate_band(pipeline(), "h200")
    with pytest.raises(ValueError, match="samples must be from"):
        simulate_band(Pipeline(name="x"), "h200", samples=2)


def test_cancel_and_progress() -> None:
    seen: list[float] = []
    simulate_band(pipeline(), "h200", samples=16, progress=seen.append)
    assert seen[-1] == 1.0 and seen == sorted(seen)
    with pytest.raises(SimulationCancelled):
        simulate_band(pipeline(), "h200", samples=16, cancel=lambda: True)


def test_spread_round_trips_through_a_preset_file_and_is_checked() -> None:
    data = with_spread(host_cost=0.1, model_error_low=-0.2).to_dict()
    assert DevicePreset.from_dict(data).spread == {"host_cost": 0.1, "model_error_low": -0.2}
    for bad, message in [
        ({"jitter": 0.1}, "spread.jitter: must be one of"),
        ({"copy": -0.1}, "spread.copy: must be a number from 0"),
        ({"model_error_low": 0.1}, "spread.model_error_low: must be a number from -0.99 to 0"),
        ({"kernel": "a lot"}, "spread.kernel: must be a number"),
    ]:
        with pytest.raises(ValueError, match=message):
            DevicePreset.from_dict({**data, "spread": bad})


def test_a_band_is_refused_naming_what_the_pipeline_has_that_bands_do_not_handle() -> None:
    from swimlanes.model.io import load_pipeline
    from swimlanes.resources import example_path

    threads = load_pipeline(example_path("per-thread-default-stream"))
    with pytest.raises(BandRefused, match="several host threads"):
        simulate_band(threads, get_preset("h200"), samples=16)
    gpus = load_pipeline(example_path("peer-copy-split"))
    with pytest.raises(BandRefused, match="several GPUs"):
        simulate_band(gpus, get_preset("h200"), samples=16)
