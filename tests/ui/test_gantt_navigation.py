"""Navigating the charts from the keyboard wherever the focus is, zoom to selection and to the
ruler, and the zoom history (back and forward)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QCursor, QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLineEdit
from test_gantt_chart import US, small_timeline
from test_gantt_side_by_side import measured_timeline
from test_main_window import make_window

from swimlanes.ui.app import open_initial
from swimlanes.ui.gantt.chart import PAN_STEP, ZOOM_STEP
from swimlanes.ui.gantt.navigation import ZoomHistory
from swimlanes.ui.gantt.side_by_side import ComparisonCharts
from swimlanes.ui.main_window import MainWindow

ALT = Qt.KeyboardModifier.AltModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier


@pytest.fixture
def charts(qtbot) -> ComparisonCharts:
    c = ComparisonCharts()
    qtbot.addWidget(c)
    c.resize(1100, 800)
    c.show()
    qtbot.waitExposed(c)
    c.set_simulated(small_timeline())
    c.set_measured(measured_timeline())
    c.set_x_range_ns(0, 300 * US)
    c.activateWindow()
    c.simulated_chart.plot_widget.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is c.simulated_chart.plot_widget)
    QCursor.setPos(c.mapToGlobal(QPoint(-50, -50)))  # not over a chart
    return c


@pytest.fixture
def window(qtbot, tmp_path: Path) -> MainWindow:
    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    win.show()
    qtbot.waitExposed(win)
    win.activateWindow()
    qtbot.waitUntil(lambda: win.simulated is not None)
    QCursor.setPos(win.mapToGlobal(QPoint(-50, -50)))
    return win


def _width(charts: ComparisonCharts) -> int:
    lo, hi = charts.x_range_ns()
    return hi - lo


def _hover(charts: ComparisonCharts, t_ns: int, measured: bool = False) -> None:
    chart = charts.measured_chart if measured else charts.simulated_chart
    pos = chart.viewport_pos_of(t_ns, 1).toPoint()
    QCursor.setPos(chart.plot_widget.viewport().mapToGlobal(pos))


def _focus(qtbot, widget) -> None:
    widget.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is widget)


def test_w_and_s_zoom_around_the_mouse_over_a_chart(charts, qtbot) -> None:
    plot = charts.simulated_chart.plot_widget  # the focus; the mouse is over the other chart
    _hover(charts, 200 * US, measured=True)
    assert charts.navigation.mouse_time_us() == pytest.approx(200, abs=1)
    QTest.keyClick(plot, Qt.Key.Key_W)
    lo, hi = charts.x_range_ns()
    assert hi - lo == pytest.approx(300 * US * ZOOM_STEP, rel=1e-3)
    # the time under the mouse stays under the mouse
    assert (200 * US - lo) / (hi - lo) == pytest.approx(200 / 300, abs=1e-3)
    assert charts.measured_chart.x_range_ns() == pytest.approx((lo, hi), abs=2)
    QTest.keyClick(plot, Qt.Key.Key_S)
    assert charts.x_range_ns() == pytest.approx((0, 300 * US), abs=5)


def test_without_the_mouse_over_a_chart_keys_zoom_around_the_centre_and_pan(charts) -> None:
    plot = charts.simulated_chart.plot_widget
    assert charts.navigation.mouse_time_us() is None
    QTest.keyClick(plot, Qt.Key.Key_Plus)
    lo, hi = charts.x_range_ns()
    assert (lo + hi) / 2 == pytest.approx(150 * US, abs=5)
    width = hi - lo
    QTest.keyClick(plot, Qt.Key.Key_D)
    assert charts.x_range_ns()[0] == pytest.approx(lo + PAN_STEP * width, abs=5)
    QTest.keyClick(plot, Qt.Key.Key_A)
    QTest.keyClick(plot, Qt.Key.Key_A)
    assert charts.x_range_ns()[0] == pytest.approx(lo - PAN_STEP * width, abs=5)
    QTest.keyClick(plot, Qt.Key.Key_Right)  # arrows still pan with the focus in a chart
    assert charts.x_range_ns()[0] == pytest.approx(lo, abs=5)
    QTest.keyClick(plot, Qt.Key.Key_Minus)
    assert _width(charts) == pytest.approx(300 * US, rel=1e-3)


def test_keys_reach_the_charts_from_the_lane_editor_which_keeps_its_own(window, qtbot) -> None:
    charts, lanes = window.charts, window.lanes
    view = lanes.view if hasattr(lanes, "view") else lanes
    _focus(qtbot, view)
    window.controller.set_selection_indexes([0])
    before = _width(charts)
    QTest.keyClick(view, Qt.Key.Key_W)
    assert _width(charts) == pytest.approx(before * ZOOM_STEP, rel=1e-3)
    x0 = charts.x_range_ns()[0]
    QTest.keyClick(view, Qt.Key.Key_D)
    assert charts.x_range_ns()[0] > x0
    # the arrows keep selecting ops in the editor, they do not pan
    view_now = charts.x_range_ns()
    QTest.keyClick(view, Qt.Key.Key_Right)
    assert window.controller.selected_indexes() == [1]
    assert charts.x_range_ns() == view_now
    QTest.keyClick(view, Qt.Key.Key_Backspace)  # the editor's delete, not zoom back
    assert charts.x_range_ns() == view_now
    assert len(window.controller.pipeline.program) >= 1


def test_keys_typed_into_a_text_field_stay_text(window, qtbot) -> None:
    window.controller.set_selection_indexes([0])
    fields = [
        w for w in window.inspector.findChildren(QLineEdit) if w.isVisible() and w.isEnabled()
    ]
    assert fields
    field = fields[0]
    _focus(qtbot, field)
    field.clear()
    before = window.charts.x_range_ns()
    QTest.keyClicks(field, "wasdf")
    assert field.text() == "wasdf"
    assert window.charts.x_range_ns() == before


def test_f_fits_the_selected_ops_in_both_charts(charts) -> None:
    charts.set_selection([1])  # the kernel: 60..160 us simulated, 72..192 us measured
    QTest.keyClick(charts.simulated_chart.plot_widget, Qt.Key.Key_F)
    lo, hi = charts.x_range_ns()
    assert lo < 60 * US and hi > 192 * US
    assert lo > 50 * US and hi < 205 * US  # a small margin, not the whole run
    charts.set_selection([])
    QTest.keyClick(charts.simulated_chart.plot_widget, Qt.Key.Key_F)  # nothing selected: all
    lo, hi = charts.x_range_ns()
    assert lo <= 0 and hi >= 324 * US


def test_z_zooms_to_the_ruler_range(charts) -> None:
    charts.measured_chart.set_ruler_ns(20 * US, 70 * US)
    QTest.keyClick(charts.simulated_chart.plot_widget, Qt.Key.Key_Z)
    lo, hi = charts.x_range_ns()
    assert lo == pytest.approx(19 * US, abs=0.5 * US)
    assert hi == pytest.approx(71 * US, abs=0.5 * US)
    assert not charts.follows_data()


def test_back_and_forward_walk_the_zoom_history(charts) -> None:
    plot = charts.simulated_chart.plot_widget
    start = charts.x_range_ns()
    charts.set_selection([4])
    QTest.keyClick(plot, Qt.Key.Key_F)
    at_selection = charts.x_range_ns()
    charts.measured_chart.set_ruler_ns(100 * US, 120 * US)
    QTest.keyClick(plot, Qt.Key.Key_Z)
    at_ruler = charts.x_range_ns()
    QTest.keyClick(plot, Qt.Key.Key_Backspace)
    assert charts.x_range_ns() == pytest.approx(at_selection, abs=2)
    QTest.keyClick(plot, Qt.Key.Key_Left, ALT)
    assert charts.x_range_ns() == pytest.approx(start, abs=2)
    assert not charts.navigation.back()  # nothing before
    QTest.keyClick(plot, Qt.Key.Key_Backspace, SHIFT)
    assert charts.x_range_ns() == pytest.approx(at_selection, abs=2)
    QTest.keyClick(plot, Qt.Key.Key_Right, ALT)
    assert charts.x_range_ns() == pytest.approx(at_ruler, abs=2)


def test_keys_pressed_in_a_row_are_one_entry_but_f_is_its_own(charts) -> None:
    plot = charts.simulated_chart.plot_widget
    start = charts.x_range_ns()
    for key in (Qt.Key.Key_W, Qt.Key.Key_W, Qt.Key.Key_D):
        QTest.keyClick(plot, key)
    after_keys = charts.x_range_ns()
    charts.set_selection([0])
    QTest.keyClick(plot, Qt.Key.Key_F)  # at once, no pause: still an entry of its own
    QTest.keyClick(plot, Qt.Key.Key_S)  # and the next key starts another
    QTest.keyClick(plot, Qt.Key.Key_Backspace)
    QTest.keyClick(plot, Qt.Key.Key_Backspace)
    assert charts.x_range_ns() == pytest.approx(after_keys, abs=2)
    QTest.keyClick(plot, Qt.Key.Key_Backspace)
    assert charts.x_range_ns() == pytest.approx(start, abs=2)


def test_a_burst_of_wheel_steps_is_one_history_entry(charts, qtbot) -> None:
    vp = charts.simulated_chart.plot_widget.viewport()
    pos = QPointF(charts.simulated_chart.viewport_pos_of(150 * US, 1))
    start = charts.x_range_ns()
    for _ in range(5):
        event = QWheelEvent(
            pos,
            vp.mapToGlobal(pos),
            QPoint(0, 0),
            QPoint(0, 120),
            Qt.MouseButton.NoButton,
            Qt.KeyboardModifier.ControlModifier,
            Qt.ScrollPhase.NoScrollPhase,
            False,
        )
        QApplication.sendEvent(vp, event)
    assert _width(charts) < 0.6 * (start[1] - start[0])
    assert charts.navigation.back()
    assert charts.x_range_ns() == pytest.approx(start, abs=2)
    assert not charts.navigation.history.can_go_back()


def test_shift_wheel_pans_instead_of_zooming(charts) -> None:
    vp = charts.simulated_chart.plot_widget.viewport()
    pos = QPointF(charts.simulated_chart.viewport_pos_of(150 * US, 1))
    start = charts.x_range_ns()
    event = QWheelEvent(
        pos,
        vp.mapToGlobal(pos),
        QPoint(0, 0),
        QPoint(0, -120),
        Qt.MouseButton.NoButton,
        SHIFT,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(vp, event)
    lo, hi = charts.x_range_ns()
    assert hi - lo == pytest.approx(start[1] - start[0], rel=1e-3)
    assert lo > start[0]


def test_ctrl_0_fits_all_and_back_returns(window, qtbot) -> None:
    charts = window.charts
    _focus(qtbot, charts.simulated_chart.plot_widget)
    charts.set_x_range_ns(10 * 1000, 20 * 1000)
    zoomed = charts.x_range_ns()
    QTest.keyClick(
        charts.simulated_chart.plot_widget, Qt.Key.Key_0, Qt.KeyboardModifier.ControlModifier
    )
    assert _width(charts) > zoomed[1] - zoomed[0]
    assert charts.follows_data()
    QTest.keyClick(charts.simulated_chart.plot_widget, Qt.Key.Key_Backspace)
    assert charts.x_range_ns() == pytest.approx(zoomed, abs=2)


def test_zoom_history_is_a_browser_history() -> None:
    h = ZoomHistory(limit=3)
    for view in [(0, 10), (2, 8), (3, 5), (4, 5)]:
        h.record(view)
    assert h.back((9, 9)) == (4, 5)
    assert h.forward((4, 5)) == (9, 9)
    assert h.back((9, 9)) == (4, 5)
    assert h.back((4, 5)) == (3, 5)
    assert h.back((3, 5)) == (2, 8)
    assert h.back((2, 8)) is None  # (0, 10) fell off the limit
    h.record((1, 2))
    assert not h.can_go_forward()


def test_keys_reach_the_charts_when_the_schedule_dock_floats(window, qtbot) -> None:
    window.schedule_dock.setFloating(True)
    qtbot.waitExposed(window.schedule_dock)
    window.activateWindow()
    _focus(qtbot, window.lanes)
    before = _width(window.charts)
    QTest.keyClick(window.lanes, Qt.Key.Key_W)
    assert _width(window.charts) == pytest.approx(before * ZOOM_STEP, rel=1e-3)
