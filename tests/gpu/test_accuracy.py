"""The model against the shipped H200 measurements (no GPU needed): the accuracy targets."""

from __future__ import annotations

import pytest

from swimlanes.engine import get_preset, simulate
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_names, example_path, measurements_dir, presets_dir
from swimlanes.timeline.compare import accuracy_table
from swimlanes.timeline.formats.io import load_run


def _single_gpu_examples() -> list[str]:
    """The examples one H200 runs (the multi-GPU lessons need a machine of several)."""
    return [n for n in example_names() if not load_pipeline(example_path(n)).is_multi_device]


def test_every_shipped_example_has_a_shipped_h200_measurement() -> None:
    missing = [
        n for n in _single_gpu_examples() if not (measurements_dir() / f"{n}.h200.json").is_file()
    ]
    assert missing == []


def test_the_calibrated_h200_preset_meets_the_accuracy_targets() -> None:
    preset_file = presets_dir() / "h200.json"
    if not preset_file.is_file():
        pytest.skip("no calibrated h200 preset in this checkout")
    preset = get_preset(str(preset_file))
    rows = []
    for name in _single_gpu_examples():
        measured, _ = load_run(measurements_dir() / f"{name}.h200.json")
        assert measured.source == "measured" and "H200" in measured.device
        simulated = simulate(load_pipeline(example_path(name)), preset)
        rows.append((name, simulated.makespan_ns / 1e6, measured.makespan_ns / 1e6))
    table = accuracy_table(rows)
    assert table.median_abs_error_pct <= 5.0, table.to_markdown()
    assert table.worst_abs_error_pct <= 10.0, table.to_markdown()


def test_calibration_timing_program_lets_the_fit_recover_every_timing_figure() -> None:
    """`swimlanes calibrate` fits its timing pipeline with engine.fit; run on a model GPU with
    known figures, that pipeline must show each of them cleanly enough to recover it."""
    from dataclasses import replace

    from swimlanes.engine.fit import fit_timing
    from swimlanes.gpu.calibration_probes import _pipeline
    from swimlanes.gpu.calibration_programs import timing_program

    truth = replace(
        get_preset("h200"),
        host_call_gap_us=0.15,
        copy_launch_latency_us=2.0,
        dependency_latency_us=7.0,
        kernel_dependency_latency_us=1.2,
        copy_engine_gap_us=1.9,
        bidirectional_slowdown=0.05,
        bidirectional_slowdown_d2h=0.085,
        bidirectional_overhead_us=0.5,
        bidirectional_overhead_d2h_us=3.0,
        bidirectional_rest_us=0.0,
        bidirectional_rest_d2h_us=5.5,
    )
    streams = [{"name": "a", "kind": "non_blocking"}, {"name": "b", "kind": "non_blocking"}]
    for quick in (False, True):
        pipeline = _pipeline("timing", streams, timing_program(quick))
        fitted = fit_timing([(pipeline, simulate(pipeline, truth))], truth)
        assert set(fitted) == {
            "host_call_gap_us", "copy_launch_latency_us", "dependency_latency_us",
            "kernel_dependency_latency_us", "copy_engine_gap_us", "bidirectional_rest_us",
            "bidirectional_rest_d2h_us", "bidirectional_slowdown", "bidirectional_slowdown_d2h",
            "bidirectional_overhead_us", "bidirectional_overhead_d2h_us",
        }  # fmt: skip
        for key, value in fitted.items():
            assert value == pytest.approx(getattr(truth, key), abs=0.002), (quick, key)


def test_the_shipped_h200_figures_are_its_calibration_never_fitted_to_the_examples() -> None:
    """The shipped preset is what `swimlanes calibrate` made of the shipped raw calibration,
    measured in the same device run as the example runs but not fitted to them: the examples are
    a check it was not tuned on."""
    import json

    from swimlanes.engine.bands import FITTED_MODEL_ERROR

    preset_file = presets_dir() / "h200.json"
    if not preset_file.is_file():
        pytest.skip("no calibrated h200 preset in this checkout")
    preset = get_preset(str(preset_file))
    raw = json.loads((measurements_dir() / "h200-calibration.json").read_text("utf-8"))
    assert preset.issue_cost_us == {**preset.issue_cost_us, **raw["issue_cost_us"]}
    assert preset.repeat_issue_cost_us == {
        k: v for k, v in raw["repeat_issue_cost_us"].items() if k in preset.repeat_issue_cost_us
    }
    assert preset.host_func_latency_us == max(0.0, raw["host_func_latency_us"])
    assert preset.sync_return_us == {k: max(0.0, v) for k, v in raw["sync_return_us"].items()}
    assert {k: getattr(preset, k) for k in raw["timing"]} == raw["timing"]
    for kind in ("h2d", "d2h"):  # the host's side of pageable copies: bytes over the call
        calls = raw[f"copy_{kind}_pageable"]
        expected = [
            [float(c["bytes"]), round(c["bytes"] / round(c["issue_us"] * 1000), 3)] for c in calls
        ]
        assert preset.bandwidth_table[f"{kind}_pageable_host"] == expected
    assert {k: preset.spread[k] for k in FITTED_MODEL_ERROR} == FITTED_MODEL_ERROR
