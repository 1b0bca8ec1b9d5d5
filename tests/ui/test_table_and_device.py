"""The comparison table's units, indices and flag reasons; the device saved with the document."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QMessageBox

from swimlanes.model.generators import random_pipeline
from swimlanes.resources import example_path
from swimlanes.timeline import TimelineBuilder
from swimlanes.timeline.compare import compare_timelines
from swimlanes.ui.app import create_application
from swimlanes.ui.autosave import write_recovery
from swimlanes.ui.comparison_table import COLUMNS, ComparisonTable
from swimlanes.ui.main_window import MainWindow
from swimlanes.ui.settings import Settings

US = 1000
H = Qt.Orientation.Horizontal


def _timeline(starts_us: list[float], durations_us: list[float], source: str):
    b = TimelineBuilder(["s1"], ["Compute"])
    for i, (start, dur) in enumerate(zip(starts_us, durations_us, strict=True)):
        b.add(index=i, kind="kernel", stream="s1", engine="Compute",
              issue_start=0, issue_end=US, start=int(start * US), end=int((start + dur) * US),
              label=f"K{i}")  # fmt: skip
    return b.build(source=source, device="test")


def _header(table: ComparisonTable, column: int, role=Qt.ItemDataRole.DisplayRole) -> str:
    return table.model.headerData(column, H, role)


def test_headers_carry_units_and_tooltips(qtbot) -> None:
    table = ComparisonTable()
    qtbot.addWidget(table)
    table.set_timeline(_timeline([0, 100], [100, 50], "simulated"))  # a 150 us run: us
    headers = [_header(table, c) for c in range(len(COLUMNS))]
    assert "Sim start (us)" in headers and "Start err (us)" in headers and "Dur err (%)" in headers
    for column in range(len(COLUMNS)):
        assert _header(table, column, Qt.ItemDataRole.ToolTipRole), headers[column]
    table.set_timeline(_timeline([0, 10_000], [10_000, 5_000], "simulated"))  # 15 ms: ms
    headers = [_header(table, c) for c in range(len(COLUMNS))]
    assert "Sim start (ms)" in headers and "Meas dur (ms)" in headers
    start = headers.index("Sim start (ms)")
    assert table.model.index(1, start).data() == "10.000"


def test_every_index_shows_in_full(qtbot) -> None:
    from swimlanes.engine import simulate

    table = ComparisonTable()
    qtbot.addWidget(table)
    table.show()
    table.set_timeline(simulate(random_pipeline(12_000, seed=2)))
    table.view.sortByColumn(0, Qt.SortOrder.DescendingOrder)
    widest = table.model.index(0, 0).data()
    assert len(widest) == 5  # 11999
    needed = table.view.fontMetrics().horizontalAdvance(widest)
    assert table.view.columnWidth(0) >= needed + 8  # room for the cell's margins: no "1…"


def test_the_flag_says_whether_start_or_duration_is_off_and_by_how_much(qtbot) -> None:
    table = ComparisonTable()
    qtbot.addWidget(table)
    # K1 runs 3x longer than modelled; K2 then starts 200 us later on the GPU than in the model
    sim = _timeline([0, 100, 200], [100, 100, 100], "simulated")
    meas = _timeline([0, 100, 400], [100, 300, 100], "measured")
    comparison = compare_timelines(sim, meas)
    table.set_comparison(comparison)
    flag = [_header(table, c) for c in range(len(COLUMNS))].index("Flag: what is off")
    model = table.model
    assert model.index(0, flag).data() == ""
    assert model.index(1, flag).data() == "⚑ duration -67%"
    assert model.index(2, flag).data() == "⚑ start -200.000 us"
    tip = model.index(2, flag).data(Qt.ItemDataRole.ToolTipRole)
    assert "starts it 200.000 us earlier than measured" in tip
    assert "300.000 us measured" in model.index(1, flag).data(Qt.ItemDataRole.ToolTipRole)
    assert np.count_nonzero(comparison.flagged) == 2


def _window(qtbot, tmp_path: Path, name: str = "settings.ini") -> MainWindow:
    create_application()
    settings = Settings(QSettings(str(tmp_path / name), QSettings.Format.IniFormat))
    win = MainWindow(settings, gpu_available=False, autosave_path=tmp_path / "recovery.json")
    qtbot.addWidget(win, before_close_func=lambda w: w.controller.undo_stack.setClean())
    return win


def _choose(win: MainWindow, device: str) -> None:
    combo = win.toolbar.device
    combo.setCurrentIndex(combo.findData(device))  # as the user picks it from the list


def test_the_chosen_device_is_saved_in_the_file_and_restored_on_open(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    win.open_document(str(example_path("two-streams")))
    _choose(win, "a100")
    assert win.controller.is_dirty  # a document edit, undoable
    assert "a100" in win.controller.undo_stack.undoText()
    path = tmp_path / "mine.json"
    win.controller.save(path)
    assert json.loads(path.read_text())["device"] == "a100"
    # undo puts the list back, redo chooses again
    win.controller.undo_stack.undo()
    assert win.device_name() == "ideal" == win.controller.pipeline.extra["device"]  # the example's
    win.controller.undo_stack.redo()
    assert win.device_name() == "a100"

    other = _window(qtbot, tmp_path, "other.ini")  # another session, whose last device differs
    _choose(other, "rtx4090")
    other.controller.undo_stack.setClean()
    assert other.open_document(str(path))
    assert other.device_name() == "a100"
    qtbot.waitUntil(
        lambda: other.simulated is not None and "A100" in other.simulated.device.upper()
    )


def test_the_chosen_device_comes_back_after_a_crash(qtbot, tmp_path, monkeypatch) -> None:
    win = _window(qtbot, tmp_path)
    win.open_document(str(example_path("two-streams")))
    _choose(win, "rtx4090")
    write_recovery(win.controller.pipeline, None, tmp_path / "recovery.json")
    again = _window(qtbot, tmp_path, "after-crash.ini")
    monkeypatch.setattr(
        QMessageBox, "question", staticmethod(lambda *a, **k: QMessageBox.StandardButton.Yes)
    )
    assert again.device_name() != "rtx4090"
    assert again.offer_recovery()
    assert again.device_name() == "rtx4090"
    assert again.controller.pipeline.extra["device"] == "rtx4090"
