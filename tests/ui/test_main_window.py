"""The main window: default example, live re-simulation, undo/redo, files, prompts, recovery."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from loading_helpers import open_measurement_now
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QMessageBox

from swimlanes.model.document import Op
from swimlanes.model.edits import InsertOps
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_path
from swimlanes.timeline.formats.io import save_run
from swimlanes.ui import dialogs
from swimlanes.ui.app import create_application, open_initial
from swimlanes.ui.autosave import has_recovery, write_recovery
from swimlanes.ui.device_controls import NO_GPU_REASON
from swimlanes.ui.main_window import MainWindow
from swimlanes.ui.settings import Settings

Button = QMessageBox.StandardButton


def make_window(qtbot, tmp_path: Path, **kwargs) -> MainWindow:
    create_application()
    settings = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    kwargs.setdefault("gpu_available", False)
    win = MainWindow(settings, autosave_path=tmp_path / "recovery.json", **kwargs)
    # Closing a dirty window asks about unsaved changes: tests answer that themselves.
    qtbot.addWidget(win, before_close_func=lambda w: w.controller.undo_stack.setClean())
    return win


@pytest.fixture
def window(qtbot, tmp_path) -> MainWindow:
    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    return win


def _answer(monkeypatch, button: QMessageBox.StandardButton) -> list[str]:
    """Make every QMessageBox.question answer ``button``; returns the questions asked."""
    asked: list[str] = []

    def question(parent, title, text, *args, **kwargs):
        asked.append(title)
        return button

    monkeypatch.setattr(QMessageBox, "question", staticmethod(question))
    return asked


def _edit(win: MainWindow) -> None:
    op = Op("kernel", stream="default", label="K new", blocks=64, threads=128, duration_us=50.0)
    assert win.controller.push(InsertOps(len(win.controller.pipeline.program), [op]))


def test_opens_the_default_example_with_a_simulated_chart(window) -> None:
    program = window.controller.pipeline.program
    assert program, "the default example has ops"
    sim = window.simulated
    assert sim is not None and len(sim) == len(program)
    assert window.charts.simulated() is sim
    assert window.example_name == "chunked-overlap"
    assert "chunked" in window.windowTitle().lower() and "*" not in window.windowTitle()
    assert window.table.model.rowCount() == len(program)
    assert "makespan" in window.summary.text().lower()
    assert window.statusBar().currentMessage()


def test_an_edit_is_resimulated_and_shown(window, qtbot) -> None:
    n = len(window.controller.pipeline.program)
    with qtbot.waitSignal(window.sim_runner.simulated, timeout=3000) as sig:
        _edit(window)
    assert len(sig.args[0]) == n + 1
    assert window.charts.simulated() is sig.args[0]
    assert window.windowTitle().split(" — ")[0].endswith("*")
    assert "Simulated" in window.statusBar().currentMessage()


def test_undo_and_redo_follow_the_undo_stack(window, qtbot) -> None:
    before = window.controller.pipeline.to_dict()
    _edit(window)
    after = window.controller.pipeline.to_dict()
    assert window.actions.undo.isEnabled() and "Insert" in window.actions.undo.text()
    with qtbot.waitSignal(window.sim_runner.simulated, timeout=3000):
        window.actions.undo.trigger()
    assert window.controller.pipeline.to_dict() == before
    assert len(window.simulated) == len(before["program"])
    assert "*" not in window.windowTitle()
    window.actions.redo.trigger()
    assert window.controller.pipeline.to_dict() == after


def test_save_and_open_round_trip(window, monkeypatch, tmp_path) -> None:
    target = tmp_path / "mine.json"
    monkeypatch.setattr(dialogs, "save_file", lambda *a: str(target))
    _edit(window)
    assert window.save()  # an example has no file yet: Save asks where
    assert target.is_file() and "*" not in window.windowTitle()
    assert "Saved" in window.statusBar().currentMessage()
    saved = window.controller.pipeline.to_dict()
    assert load_pipeline(target).to_dict() == saved
    window.new_document()
    assert window.controller.pipeline.program == []
    assert window.open_document(str(target))
    assert window.controller.pipeline.to_dict() == saved
    assert window.settings.recent_files()[0] == str(target.resolve())
    window.fill_recent_menu()
    assert window.menus.recent.actions()[0].text() == "mine.json"


def test_unsaved_changes_prompt_cancel_keeps_the_document(window, monkeypatch) -> None:
    _edit(window)
    edited = window.controller.pipeline.to_dict()
    asked = _answer(monkeypatch, Button.Cancel)
    window.new_document()
    assert asked == ["Unsaved changes"]
    assert window.controller.pipeline.to_dict() == edited
    assert not window.close()  # closing is refused too


def test_unsaved_changes_prompt_discard_and_save(window, monkeypatch, tmp_path) -> None:
    _edit(window)
    _answer(monkeypatch, Button.Discard)
    window.new_document()
    assert window.controller.pipeline.program == [] and not window.controller.is_dirty
    _edit(window)
    target = tmp_path / "saved-on-prompt.json"
    monkeypatch.setattr(dialogs, "save_file", lambda *a: str(target))
    _answer(monkeypatch, Button.Save)
    assert window.open_example("two-streams")
    assert target.is_file() and len(load_pipeline(target).program) == 1


def test_a_bad_file_lists_its_problems_and_loses_nothing(window, monkeypatch, tmp_path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "format": "swimlanes-pipeline",
                "version": 1,
                "program": [{"op": "h2d", "bytes": -1}, {"op": "kernel"}],
            }
        ),
        encoding="utf-8",
    )
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "exec", lambda box: shown.append(box.informativeText()))
    before = window.controller.pipeline.to_dict()
    assert not window.open_document(str(bad))
    assert "program[0].bytes" in shown[0] and "program[1]" in shown[0]
    assert window.controller.pipeline.to_dict() == before


def test_recovery_is_offered_and_restores_unsaved_work(qtbot, tmp_path, monkeypatch) -> None:
    pipeline = load_pipeline(example_path("two-streams"))
    pipeline.program[0].label = "restored op"
    write_recovery(pipeline, None, tmp_path / "recovery.json")
    asked = _answer(monkeypatch, Button.Yes)
    win = make_window(qtbot, tmp_path)
    assert win.offer_recovery()
    assert asked == ["Restore unsaved work?"]
    assert win.controller.pipeline.program[0].label == "restored op"
    assert win.controller.is_dirty and win.simulated is not None


def test_declined_recovery_is_discarded(qtbot, tmp_path, monkeypatch) -> None:
    write_recovery(load_pipeline(example_path("two-streams")), None, tmp_path / "recovery.json")
    _answer(monkeypatch, Button.No)
    win = make_window(qtbot, tmp_path)
    assert not win.offer_recovery()
    assert not has_recovery(tmp_path / "recovery.json")


def test_run_on_gpu_is_disabled_with_its_reason_without_a_gpu(window) -> None:
    action = window.actions.run_gpu
    assert not action.isEnabled()
    assert action.toolTip() == NO_GPU_REASON and "No CUDA GPU" in NO_GPU_REASON
    assert not window.toolbar.repeat.isEnabled()


def test_repeat_tooltip_says_which_repetition_the_measured_chart_shows(window) -> None:
    from swimlanes.gpu.device_run import median_repetition

    tip = window.toolbar.repeat.toolTip()
    # One real repetition is shown, not per-op medians that no repetition ran.
    assert "shows medians" not in tip
    assert "one whole repetition" in tip and "device span" in tip and "is the median" in tip
    assert "one untimed warm-up" in tip
    # The rule it states is the executors': of spans 5, 1, 9, 3 the shorter middle one, 3.
    assert "the shorter of the two middle ones" in tip
    assert median_repetition([5, 1, 9, 3]) == 3 and median_repetition([4, 8, 6]) == 2


def test_device_combo_has_key_figures_and_resimulates(window, qtbot) -> None:
    combo = window.toolbar.device
    assert combo.findText("h200") >= 0 and combo.findText("c1060") >= 0
    tip = combo.itemData(combo.findText("h200"), 3)  # ToolTipRole
    assert "sm count" in tip
    with qtbot.waitSignal(window.sim_runner.simulated, timeout=3000) as sig:
        combo.setCurrentIndex(combo.findText("c1060"))
    assert sig.args[0].device == "c1060"
    assert window.settings.last_device() == "c1060"


def test_selection_is_shared_by_editor_charts_and_table(window) -> None:
    c = window.controller
    c.set_selection_indexes([2])
    assert window.charts.selection() == [2]
    assert window.table.selected_indexes() == [2]
    window.table.view.selectRow(window.table.model.row_of_program_index(4))
    assert c.selected_indexes() == [4]
    window.charts.selection_changed.emit([1, 3])
    assert c.selected_indexes() == [1, 3]


def test_clicking_an_insight_selects_its_ops(qtbot, tmp_path) -> None:
    win = make_window(qtbot, tmp_path)
    assert win.open_example("pageable-trap")
    win.bottom_tabs.setCurrentWidget(win.insights)
    found = win.insights.insights()
    assert found, "the pageable trap produces insights"
    assert any(i.rule == "pageable_copy" for i in found)
    row = next(r for r, i in enumerate(found) if i.op_indexes)
    win.insights.select_insight(row)
    assert win.controller.selected_indexes() == sorted(found[row].op_indexes)
    assert win.charts.selection() == sorted(found[row].op_indexes)


def test_open_measurement_compares_it_with_the_model(window, qtbot, tmp_path) -> None:
    sim = window.simulated
    measured = sim.copy()
    measured.source = "measured"
    measured.device = "Test GPU"
    row = 1
    measured.end[row] += 3 * (measured.end[row] - measured.start[row])  # one op 4x slower
    run = tmp_path / "run.json"
    save_run(run, measured, window.controller.pipeline)
    open_measurement_now(qtbot, window, str(run))
    assert window.charts.measured() is window.measured
    assert (
        window.comparison is not None and int(sim.index[row]) in window.comparison.flagged_indexes
    )
    assert "flagged" in window.table.summary.text()
    assert window.actions.save_measurement.isEnabled()


def test_shipped_measurement_of_an_example_opens_beside_it(window, qtbot, monkeypatch) -> None:
    found = window.shipped_measurements()
    menu = window.menus.shipped_measurements
    assert menu.isEnabled() == bool(found)
    assert all(p.name.startswith("chunked-overlap.") for p in found)
    if not found:
        pytest.skip("no shipped measurement of chunked-overlap")
    assert "Shipped measurements" in window.statusBar().currentMessage()
    _answer(monkeypatch, Button.No)  # keep the document if the run's pipeline differs
    menu.actions()[0].trigger()
    qtbot.waitUntil(lambda: not window.is_loading_measurement(), timeout=10000)
    assert window.measured is not None and window.measured.source == "measured"
    assert window.charts.measured() is window.measured


def test_examples_menu_shows_lesson_titles(window) -> None:
    texts = [a.text() for a in window.menus.examples.actions()]
    assert any("(two-streams)" in t for t in texts)
    lesson = json.loads(example_path("two-streams").read_text())["lesson"]
    assert any(t.startswith(lesson) for t in texts)


def test_exports_write_files(window, monkeypatch, tmp_path) -> None:
    for name in ("chart.png", "chart.svg", "trace.json", "ops.csv"):
        monkeypatch.setattr(dialogs, "save_file", lambda *a, n=name: str(tmp_path / n))
        if name.startswith("chart"):
            assert window.export_image(visible_range=name.endswith(".svg"))
        elif name.endswith(".json"):
            assert window.export_trace()
        else:
            assert window.export_csv()
        assert (tmp_path / name).stat().st_size > 0
    assert json.loads((tmp_path / "trace.json").read_text())["traceEvents"]
    assert (tmp_path / "chart.png").read_bytes()[:4] == b"\x89PNG"


def test_play_animates_a_cursor_and_stops_at_the_end(window, qtbot, monkeypatch) -> None:
    import swimlanes.ui.main_window as mw

    monkeypatch.setattr(mw, "PLAY_SECONDS", 1.0)
    cursors: list[object] = []
    monkeypatch.setattr(window.charts, "set_cursor", cursors.append)
    window.actions.play.setChecked(True)
    assert window.actions.play.text() == "&Pause"
    qtbot.waitUntil(lambda: not window.actions.play.isChecked(), timeout=8000)
    moving = [c for c in cursors if c is not None]
    assert len(moving) >= 2 and moving == sorted(moving)
    assert cursors[-1] is None and window.actions.play.text() == "&Play"


def test_a_measurement_of_another_program_is_shown_but_not_compared(window, qtbot, tmp_path):
    measured = window.simulated.copy()
    measured.source = "measured"
    run = tmp_path / "run.json"
    save_run(run, measured, window.controller.pipeline)
    open_measurement_now(qtbot, window, str(run))
    assert window.comparison is not None
    with qtbot.waitSignal(window.sim_runner.simulated, timeout=3000):
        _edit(window)  # the program now has one op more than the measurement
    assert window.comparison is None
    assert window.charts.measured() is window.measured
    assert "does not match the pipeline" in window.table.summary.text()
    assert window.charts.simulated_chart.flags() == []


def test_layout_recent_files_and_device_persist(qtbot, tmp_path, monkeypatch) -> None:
    win = make_window(qtbot, tmp_path)
    win.set_device("a100")
    win.toolbar.device.currentIndexChanged.emit(win.toolbar.device.currentIndex())
    # the choice is also the document's device (an unsaved edit): closing asks about it
    assert _answer(monkeypatch, Button.Discard) == [] and win.controller.is_dirty
    for i in range(12):
        f = tmp_path / f"p{i}.json"
        f.write_text("{}", encoding="utf-8")
        win.settings.add_recent_file(str(f))
    win.resize(640, 480)  # inside the offscreen screen, which clamps window geometry
    assert win.close()
    again = make_window(qtbot, tmp_path)
    assert (again.size().width(), again.size().height()) == (640, 480)
    recent = again.settings.recent_files()
    assert len(recent) == 10 and recent[0].endswith("p11.json")
    assert again.device_name() == "a100"


def test_a_profiler_trace_opens_as_a_measurement_without_per_op_comparison(window, qtbot) -> None:
    from conftest import SHARED_TRACES

    trace = SHARED_TRACES / "kineto-simple-add.json.gz"
    if not trace.is_file():
        pytest.skip(f"shared trace {trace.name} is not available")
    before = window.controller.pipeline.to_dict()
    open_measurement_now(qtbot, window, str(trace))
    assert window.measured is not None and len(window.measured) > 0
    assert window.charts.measured() is window.measured
    assert window.comparison is None  # a trace of other code: no op-by-op table
    assert window.controller.pipeline.to_dict() == before


def test_a_preset_file_can_be_chosen_for_simulation(window, qtbot, monkeypatch, tmp_path):
    from dataclasses import replace

    from swimlanes.engine import get_preset

    preset = tmp_path / "my-gpu.json"
    preset.write_text(json.dumps(replace(get_preset("h200"), name="my-gpu").to_dict()), "utf-8")
    monkeypatch.setattr(dialogs, "open_file", lambda *a: str(preset))
    combo = window.toolbar.device
    with qtbot.waitSignal(window.sim_runner.simulated, timeout=3000) as sig:
        combo.setCurrentIndex(combo.count() - 1)  # "Preset file..."
    assert sig.args[0].device == "my-gpu"
    assert combo.currentText() == "my-gpu (file)"
    assert window.settings.last_device() == str(preset)


def test_a_bad_preset_file_is_refused_and_the_device_kept(window, monkeypatch, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "swimlanes-device", "version": 1, "sm_count": -3}', "utf-8")
    monkeypatch.setattr(dialogs, "open_file", lambda *a: str(bad))
    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(lambda p, t, m, *a: shown.append(m)))
    combo = window.toolbar.device
    before = combo.currentText()
    combo.setCurrentIndex(combo.count() - 1)
    assert shown and "bad.json" in shown[0]
    assert combo.currentText() == before


def test_starting_with_a_saved_run_opens_its_pipeline_and_measurement(qtbot, tmp_path) -> None:
    pipeline = load_pipeline(example_path("two-streams"))
    from swimlanes.engine import simulate

    measured = simulate(pipeline, "ideal")
    measured.source = "measured"
    run = tmp_path / "two.run.json"
    save_run(run, measured, pipeline)
    win = make_window(qtbot, tmp_path)
    open_initial(win, str(run))
    qtbot.waitUntil(lambda: not win.is_loading_measurement(), timeout=10000)
    assert win.controller.pipeline.to_dict() == pipeline.to_dict()
    assert win.measured is not None and win.comparison is not None
    assert win.comparison.flagged_indexes == []  # the same model on both sides


def test_opening_a_document_removes_a_killed_saves_temp_file(window, tmp_path) -> None:
    import os
    import time

    doc = tmp_path / "work.json"
    doc.write_bytes(example_path("two-streams").read_bytes())
    left = tmp_path / ".work.json.abcd1234.tmp"  # what a Save killed mid-write leaves
    left.write_text("half a pipeline", encoding="utf-8")
    old = time.time() - 3600
    os.utime(left, (old, old))
    assert window.open_document(str(doc))
    assert not left.exists() and doc.exists()
