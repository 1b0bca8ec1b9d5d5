"""Run on GPU from the window, with fake executors in the child process (no GPU needed)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QMessageBox
from test_main_window import make_window  # tests/ui is on sys.path (no package)

from swimlanes.ui.gpu_runner import GpuRunner, child_env_with_path
from swimlanes.ui.main_window import MainWindow

HERE = str(Path(__file__).resolve().parent)


def _gpu_window(qtbot, tmp_path, executor: str) -> MainWindow:
    runner = GpuRunner(executor=f"fake_executor:{executor}", env=child_env_with_path(HERE))
    win = make_window(qtbot, tmp_path, gpu_available=True, gpu_runner=runner)
    assert win.open_example("two-streams")
    return win


def test_gpu_run_fills_the_measured_chart_live_and_compares(qtbot, tmp_path) -> None:
    win = _gpu_window(qtbot, tmp_path, "execute")
    assert win.actions.run_gpu.isEnabled() and not win.actions.cancel_gpu.isEnabled()
    win.toolbar.repeat.setValue(3)
    live: list[object] = []
    win.gpu_runner.partial.connect(lambda _tl: live.append(win.charts.measured()))
    assert not win.actions.compare_layout.isChecked()
    with qtbot.waitSignal(win.gpu_runner.finished, timeout=30000):
        win.actions.run_gpu.trigger()
        assert win.progress_bar.isVisibleTo(win) and win.actions.cancel_gpu.isEnabled()
    assert len(live) == 3 and all(tl is not None for tl in live)
    assert win.measured is not None and win.measured.device == "Fake GPU"
    assert win.charts.measured() is win.measured
    assert win.comparison is not None and len(win.comparison) == len(win.measured)
    assert "Measured" in win.statusBar().currentMessage()
    assert win.actions.compare_layout.isChecked()  # room for both charts, from the first result
    qtbot.waitUntil(lambda: win.actions.run_gpu.isEnabled(), timeout=5000)
    assert not win.progress_bar.isVisibleTo(win)


def test_gpu_crash_is_reported_and_the_document_survives(qtbot, tmp_path, monkeypatch) -> None:
    win = _gpu_window(qtbot, tmp_path, "execute_crash")
    win.controller.pipeline.program[0].label = "unsaved label"
    before = win.controller.pipeline.to_dict()
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(lambda p, t, m, *a: shown.append(m)))
    with qtbot.waitSignal(win.gpu_runner.failed, timeout=30000):
        win.run_on_gpu()
    assert "crashed" in shown[0] and "your document is safe" in shown[0]
    assert win.controller.pipeline.to_dict() == before
    assert win.measured is None
    qtbot.waitUntil(lambda: win.actions.run_gpu.isEnabled(), timeout=5000)


def test_gpu_run_can_be_cancelled_from_the_window(qtbot, tmp_path) -> None:
    win = _gpu_window(qtbot, tmp_path, "execute_slow")
    with qtbot.waitSignal(win.gpu_runner.partial, timeout=30000):
        win.run_on_gpu()
    with qtbot.waitSignal(win.gpu_runner.cancelled, timeout=10000):
        win.actions.cancel_gpu.trigger()
    assert "cancelled" in win.statusBar().currentMessage()
    assert win.actions.run_gpu.isEnabled() and not win.actions.cancel_gpu.isEnabled()
