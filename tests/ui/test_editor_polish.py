"""Editor polish a user relies on: undo from any focus, visible refusals of drops that have no
lane, and Select All on a large pipeline in well under a second."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt
from PySide6.QtTest import QTest
from test_editor_helpers import MIB, drop_point, sample, send_drop

from swimlanes.model.generators import random_pipeline
from swimlanes.ui.app import create_application
from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.editor.common import OP_MIME
from swimlanes.ui.main_window import MainWindow
from swimlanes.ui.settings import Settings

CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier


def _window(qtbot, tmp_path: Path, pipeline=None) -> MainWindow:
    create_application()
    settings = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    win = MainWindow(settings, gpu_available=False, autosave_path=tmp_path / "recovery.json")
    qtbot.addWidget(win, before_close_func=lambda w: w.controller.undo_stack.setClean())
    win.controller.set_pipeline(pipeline if pipeline is not None else sample())
    win.show()
    qtbot.waitExposed(win)
    return win


def test_ctrl_z_in_an_inspector_field_commits_then_undoes_it(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    c, insp = win.controller, win.inspector
    c.set_selection_indexes([1])  # K0, 4096 blocks
    insp.blocks.setFocus()
    qtbot.waitUntil(insp.blocks.hasFocus)
    insp.blocks.selectAll()
    QTest.keyClicks(insp.blocks, "77")
    QTest.keyClick(insp.blocks, Qt.Key.Key_Z, CTRL)  # before the pause-commit fires
    # the typed value became one document edit, and that edit was undone
    assert c.pipeline.program[1].blocks == 4096
    assert insp.blocks.text() == "4096"
    assert c.undo_stack.canRedo() and c.undo_stack.count() == 1
    QTest.keyClick(insp.blocks, Qt.Key.Key_Z, CTRL | SHIFT)
    assert c.pipeline.program[1].blocks == 77
    QTest.keyClick(insp.blocks, Qt.Key.Key_Z, CTRL)
    QTest.keyClick(insp.blocks, Qt.Key.Key_Y, CTRL)  # Ctrl+Y redoes too
    assert c.pipeline.program[1].blocks == 77
    assert insp.blocks.text() == "77"


def test_ctrl_z_in_a_field_undoes_an_earlier_document_edit(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    c, insp = win.controller, win.inspector
    c.set_selection_indexes([0])
    win.lanes.delete_selection()  # an edit made elsewhere
    assert len(c.pipeline.program) == 5
    c.set_selection_indexes([0])
    insp.label.setFocus()
    qtbot.waitUntil(insp.label.hasFocus)
    QTest.keyClick(insp.label, Qt.Key.Key_Z, CTRL)  # nothing typed: the deletion is undone
    assert len(c.pipeline.program) == 6 and c.pipeline.program[0].bytes == 64 * MIB


def _drop(win: MainWindow, kind: str, pos) -> bool:
    mime = QMimeData()
    mime.setData(OP_MIME, kind.encode())
    return send_drop(win.lanes.viewport(), mime, pos)


def test_a_stream_op_dropped_on_the_host_row_is_refused_with_the_reason(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    lanes, c = win.lanes, win.controller
    before = [op.to_dict() for op in c.pipeline.program]
    assert not _drop(win, "kernel", drop_point(lanes, 2, li.HOST_LANE))
    assert [op.to_dict() for op in c.pipeline.program] == before  # not moved to another lane
    assert "host row" in win.statusBar().currentMessage()
    # a host call is welcome there
    assert _drop(win, "device_sync", drop_point(lanes, 2, li.HOST_LANE))
    assert c.pipeline.program[2].op == "device_sync"


def test_a_drop_below_the_last_lane_is_refused_with_the_reason(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    lanes, c = win.lanes, win.controller
    last = lanes.lanes()[-1]
    below = lanes.mapFromScene(
        QPointF(lanes.column_x(1) + 6, lanes.lane_y(last) + li.LANE_H + li.LANE_H / 2)
    )
    count = len(c.pipeline.program)
    mime = QMimeData()
    mime.setData(OP_MIME, b"h2d")
    assert not send_drop(lanes.viewport(), mime, below, hover_only=True)  # no-drop cursor
    assert not _drop(win, "h2d", below)
    assert len(c.pipeline.program) == count
    assert "below the last lane" in win.statusBar().currentMessage()
    assert _drop(win, "h2d", drop_point(lanes, 1, last))  # on the lane itself it lands
    assert c.pipeline.program[1].stream_name == last


def _select_all_best_of_three(qtbot, tmp_path):
    win = _window(qtbot, tmp_path, random_pipeline(10_000, seed=3))
    qtbot.waitUntil(
        lambda: win.simulated is not None and len(win.simulated) == 10_000, timeout=60000
    )
    qtbot.wait(500)  # the insights, computed once edits pause
    app = create_application()
    best = float("inf")
    for _ in range(3):  # the best of three: the machine is shared
        win.controller.set_selection([])
        app.processEvents()
        started = time.perf_counter()
        win.actions.select_all.trigger()
        app.processEvents()  # the repaints it caused (the tables' selection painting)
        best = min(best, time.perf_counter() - started)
    return win, best


def test_select_all_on_ten_thousand_ops_selects_them_everywhere(qtbot, tmp_path) -> None:
    win, _best = _select_all_best_of_three(qtbot, tmp_path)
    assert len(win.controller.selection()) == 10_000
    assert len(win.table.selected_indexes()) == 10_000
    assert len(win.program_panel.list.selectionModel().selectedRows()) == 10_000


@pytest.mark.benchmark
def test_select_all_on_ten_thousand_ops_is_quick(qtbot, tmp_path) -> None:
    """A speed target (under 0.3 s): run with ``pytest -m benchmark``, not by make test."""
    _win, best = _select_all_best_of_three(qtbot, tmp_path)
    assert best < 0.3, f"Select All took {best:.2f} s"
