"""A measurement is compared with a simulation of the same GPU, not the example's preset."""

from __future__ import annotations

from pathlib import Path

from test_main_window import make_window

from swimlanes.resources import example_path, measurements_dir
from swimlanes.timeline.formats.io import load_run


def test_opening_an_h200_run_switches_the_simulation_to_h200(qtbot, tmp_path: Path) -> None:
    win = make_window(qtbot, tmp_path)
    win.open_example("chunked-overlap")  # prefers the textbook `ideal` preset
    assert win.sim_runner.device == "ideal"
    assert example_path("chunked-overlap").is_file()
    measured, pipeline = load_run(measurements_dir() / "chunked-overlap.h200.json")
    win.set_measured(measured, pipeline)
    assert win.sim_runner.device == "h200"
    assert win.toolbar.device.currentData() == "h200"
    qtbot.waitUntil(lambda: win.simulated is not None and win.simulated.device == "h200")
