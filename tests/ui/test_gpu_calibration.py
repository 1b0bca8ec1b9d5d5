"""Per-host calibration in the app: the first GPU run on a host calibrates it first (progress,
Cancel), and a measurement is compared with the preset of its host, with a visible warning
when that is another host's. Fake executors and calibrators run in the child (no GPU)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_main_window import make_window  # tests/ui is on sys.path (no package)

from swimlanes.gpu.preset_cache import list_cached
from swimlanes.resources import measurements_dir
from swimlanes.timeline.formats.io import load_run
from swimlanes.ui.gpu_runner import GpuRunner, child_env_with_path
from swimlanes.ui.main_window import MainWindow

HERE = str(Path(__file__).resolve().parent)


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config"
    monkeypatch.setenv("SWIMLANES_CONFIG_DIR", str(folder))
    return folder


def _window(qtbot, tmp_path: Path, config: Path, calibrator: str) -> MainWindow:
    runner = GpuRunner(
        executor="fake_executor:execute",
        calibrate=True,
        calibrator=f"fake_executor:{calibrator}",
        env={**child_env_with_path(HERE), "SWIMLANES_CONFIG_DIR": str(config)},
    )
    win = make_window(qtbot, tmp_path, gpu_available=True, gpu_runner=runner)
    assert win.open_example("two-streams")
    return win


def test_first_gpu_run_calibrates_the_host_then_runs_and_compares_on_its_preset(
    qtbot, tmp_path, config
) -> None:
    win = _window(qtbot, tmp_path, config, "calibrate_quickly")
    formats: list[str] = []
    win.gpu_runner.calibrating.connect(lambda _f: formats.append(win.progress_bar.format()))
    with qtbot.waitSignal(win.gpu_runner.finished, timeout=30000):
        win.actions.run_gpu.trigger()
    assert formats and all(f.startswith("Calibrating this GPU") for f in formats)
    entries, problems = list_cached()
    assert problems == []
    assert len(entries) == 1 and entries[0].host.hostname == "fake-host"
    assert win.measured is not None
    assert win.measured.meta["calibration"]["id"] == entries[0].id
    # Compared on the host's own preset, with no warning.
    assert win.sim_runner.device == str(entries[0].path)
    qtbot.wait(50)
    assert not win.preset_warning.isVisibleTo(win)
    assert entries[0].date in win.toolbar.device.toolTip()  # where and when, on hover
    qtbot.waitUntil(lambda: win.actions.run_gpu.isEnabled(), timeout=5000)
    assert win.progress_bar.format() == "GPU run %p%"


def test_cancel_during_calibration_caches_nothing_and_keeps_the_document(
    qtbot, tmp_path, config
) -> None:
    win = _window(qtbot, tmp_path, config, "calibrate_slow")
    win.controller.pipeline.program[0].label = "unsaved label"
    before = win.controller.pipeline.to_dict()
    with qtbot.waitSignal(win.gpu_runner.calibrating, timeout=30000):
        win.run_on_gpu()
    assert win.progress_bar.isVisibleTo(win) and win.actions.cancel_gpu.isEnabled()
    assert "calibrating" in win.statusBar().currentMessage()
    with qtbot.waitSignal(win.gpu_runner.cancelled, timeout=10000):
        win.actions.cancel_gpu.trigger()
    assert list_cached() == ([], [])
    assert win.controller.pipeline.to_dict() == before
    assert win.actions.run_gpu.isEnabled() and win.measured is None


def test_a_measurement_from_another_host_shows_the_preset_warning(qtbot, tmp_path, config) -> None:
    win = make_window(qtbot, tmp_path)
    win.open_example("two-streams")
    measured, pipeline = load_run(measurements_dir() / "two-streams.h200.json")
    measured.meta["host"] = {**measured.meta["host"], "hostname": "another-host"}
    win.set_measured(measured, pipeline)  # a host this machine has no calibration of
    assert win.sim_runner.device == "h200"
    qtbot.waitUntil(lambda: win.preset_warning.isVisibleTo(win), timeout=2000)
    assert win.preset_warning.text() == "Preset is not the measured host's"
    assert "shipped h200 preset" in win.preset_warning.toolTip()
    win.set_measured(measured, pipeline)
    win.set_measured(None)  # at once, before the warning's queued show
    qtbot.wait(50)
    assert not win.preset_warning.isVisibleTo(win)
