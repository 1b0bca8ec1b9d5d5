"""The model against the shipped H200 measurements (no GPU needed): the accuracy targets."""

from __future__ import annotations

import pytest

from swimlanes.engine import get_preset, simulate
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_names, example_path, measurements_dir, presets_dir
from swimlanes.timeline.compare import accuracy_table
from swimlanes.timeline.io import load_run


def test_every_shipped_example_has_a_shipped_h200_measurement() -> None:
    missing = [n for n in example_names() if not (measurements_dir() / f"{n}.h200.json").is_file()]
    assert missing == []


def test_the_calibrated_h200_preset_meets_the_accuracy_targets() -> None:
    preset_file = presets_dir() / "h200.json"
    if not preset_file.is_file():
        pytest.skip("no calibrated h200 preset in this checkout")
    preset = get_preset(str(preset_file))
    rows = []
    for name in example_names():
        measured, _ = load_run(measurements_dir() / f"{name}.h200.json")
        assert measured.source == "measured" and "H200" in measured.device
        simulated = simulate(load_pipeline(example_path(name)), preset)
        rows.append((name, simulated.makespan_ns / 1e6, measured.makespan_ns / 1e6))
    table = accuracy_table(rows)
    assert table.median_abs_error_pct <= 5.0, table.to_markdown()
    assert table.worst_abs_error_pct <= 10.0, table.to_markdown()
