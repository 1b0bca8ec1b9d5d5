"""The main window with a pipeline of two GPUs: its preset is listed and chosen, the schedule
shows the devices' rows, a single-GPU preset is refused with a clear message (no traceback),
and Pipeline > Devices and communicators opens on the document."""

from __future__ import annotations

import json
from pathlib import Path

from test_main_window import make_window
from test_multi_device_editor import two_devices

from swimlanes.ui.app import open_initial
from swimlanes.ui.gantt.row_keys import link_row


def _open_two_gpus(qtbot, tmp_path: Path):
    path = tmp_path / "two.json"
    path.write_text(json.dumps({**two_devices(), "device": "2x-h200-nvlink"}), encoding="utf-8")
    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    assert win.open_document(str(path))
    win.sim_runner.simulate_now()
    qtbot.waitUntil(
        lambda: win.simulated is not None and win.simulated.is_multi_device, timeout=5000
    )
    return win


def test_a_two_gpu_document_simulates_on_its_preset_with_device_rows(qtbot, tmp_path) -> None:
    win = _open_two_gpus(qtbot, tmp_path)
    combo = win.toolbar.device
    assert combo.findData("2x-h200-nvlink") >= 0 and combo.findData("h200") >= 0
    assert combo.currentData() == "2x-h200-nvlink"
    chart = win.charts.simulated_chart
    groups = [s.group for s in chart.row_arrangement.spans]
    assert groups[:2] == ["device:gpu0", "device:gpu1"]
    assert any(k.startswith("link:") for k in chart.rows())
    assert link_row("NVLink gpu0→gpu1") in chart.rows()
    assert len(chart.rows_model.collectives) == 1  # the two all-reduces, joined


def test_a_single_gpu_preset_is_refused_with_a_clear_message(qtbot, tmp_path) -> None:
    win = _open_two_gpus(qtbot, tmp_path)
    win.set_device("h200")
    qtbot.waitUntil(lambda: bool(win.simulation_problem), timeout=5000)
    assert "2 devices" in win.simulation_problem and "GPU" in win.simulation_problem
    assert "Traceback" not in win.simulation_problem
    assert win.charts.simulated_chart.is_greyed()


def test_the_pipeline_menu_opens_the_devices_dialog(qtbot, tmp_path) -> None:
    win = _open_two_gpus(qtbot, tmp_path)
    assert win.actions.devices in win.menuBar().actions()[2].menu().actions()
    win.actions.devices.trigger()
    dialog = win.devices_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.devices.count() == 2 and dialog.communicators.count() == 1
    assert dialog.add_device()
    assert win.controller.pipeline.device_names == ["gpu0", "gpu1", "gpu2"]
    win.actions.undo.trigger()
    assert win.controller.pipeline.device_names == ["gpu0", "gpu1"]
    assert dialog.devices.count() == 2
    dialog.close()


def test_the_summary_strip_of_eight_gpus_scrolls_instead_of_widening_the_window(qtbot) -> None:
    from types import SimpleNamespace

    from swimlanes.ui.gantt.summary import SummaryStrip

    engines = {f"gpu{d} {e}": 50.0 for d in range(8) for e in ("H2D", "D2H", "Compute")}
    metrics = SimpleNamespace(makespan_ns=1_000_000, speedup=2.0, engine_busy_pct=engines)
    strip = SummaryStrip()
    qtbot.addWidget(strip)
    strip.set_metrics(metrics, None)
    strip.resize(800, strip.sizeHint().height())
    strip.show()
    qtbot.waitExposed(strip)
    assert strip.sizeHint().width() > 1500  # 26 columns
    assert strip.minimumSizeHint().width() < 100  # the window may stay narrower than them
    assert "gpu7 Compute busy" in [name for name, *_ in strip.rows]
    assert strip._scroll.horizontalScrollBar().maximum() > 0
    assert strip.height() >= strip.sizeHint().height()


def test_multi_device_pipelines_leave_the_ui_thread_sooner() -> None:
    from test_editor_helpers import sample

    from swimlanes.model.validate import pipeline_from_dict
    from swimlanes.ui.workers import MULTI_DEVICE_STEP_COST, SYNC_OP_LIMIT, simulation_steps

    single, multi = sample(), pipeline_from_dict(two_devices())
    assert simulation_steps(single) == len(single.program) + 4  # K0: 4 waves of 1024 blocks
    assert simulation_steps(multi) == len(multi.program) * MULTI_DEVICE_STEP_COST
    # a few hundred ops of the multi-device engine take as long as 2,000 of the fast one
    multi.program *= 30
    assert simulation_steps(multi) >= SYNC_OP_LIMIT > len(multi.program)
