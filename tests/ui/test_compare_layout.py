"""The compare layout: with a measurement shown, both Gantt charts fit the window whole."""

from __future__ import annotations

from pathlib import Path

from loading_helpers import open_measurement_now
from PySide6.QtCore import QPoint, QRect, QSettings, Qt

from swimlanes.resources import measurements_dir
from swimlanes.ui.app import create_application
from swimlanes.ui.gantt import GanttChart
from swimlanes.ui.gantt.chart import MIN_ROW_PX
from swimlanes.ui.main_window import MainWindow
from swimlanes.ui.settings import Settings

MEASUREMENT = "default-stream-trap.h200.json"


def _window(qtbot, tmp_path: Path) -> MainWindow:
    create_application()
    settings = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    win = MainWindow(settings, gpu_available=False, autosave_path=tmp_path / "recovery.json")
    qtbot.addWidget(win, before_close_func=lambda w: w.controller.undo_stack.setClean())
    win.resize(1600, 1000)
    win.show()
    qtbot.waitExposed(win)
    qtbot.wait(30)  # the first-start layout
    return win


def _plot_rect_in_viewport(win: MainWindow, chart: GanttChart) -> QRect:
    """The chart's plot area (rows and time axis) in the charts' scroll-area viewport."""
    plot = chart.plot_widget
    viewport = win.charts.scroll_area.viewport()
    return QRect(plot.mapTo(viewport, QPoint(0, 0)), plot.size())


def _assert_both_charts_show_whole(win: MainWindow) -> None:
    viewport = win.charts.scroll_area.viewport()
    visible = QRect(QPoint(0, 0), viewport.size())
    assert win.charts.scroll_area.verticalScrollBar().maximum() == 0
    for chart in (win.charts.simulated_chart, win.charts.measured_chart):
        assert chart.isVisible()
        assert visible.contains(_plot_rect_in_viewport(win, chart)), chart
        assert chart.row_height_px() >= MIN_ROW_PX - 0.5
        # the time axis is drawn inside the plot widget, below the last row
        axis = chart.plot_item.getAxis("bottom")
        assert axis.isVisible() and axis.height() > 10
    # the schedule dock is inside the window, not cut off at the bottom
    dock = win.schedule_dock
    assert dock.geometry().bottom() <= win.statusBar().geometry().top()


def test_opening_a_measurement_switches_to_the_compare_layout_and_back(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    assert not win.actions.compare_layout.isChecked()
    open_measurement_now(qtbot, win, str(measurements_dir() / MEASUREMENT))
    assert win.measured is not None and win.comparison is not None
    qtbot.wait(50)
    assert win.actions.compare_layout.isChecked()
    qtbot.waitUntil(lambda: _assert_both_charts_show_whole(win), timeout=5000)
    sim, meas = win.charts.simulated_chart, win.charts.measured_chart
    # still aligned: the same rows, the same axis width, a time at the same pixel column
    assert sim.rows() == meas.rows() and len(sim.rows()) >= 7
    assert sim.left_axis_width == meas.left_axis_width
    assert abs(sim.scene_x_of_ns(1_000_000) - meas.scene_x_of_ns(1_000_000)) <= 1
    assert abs(sim.row_height_px() - meas.row_height_px()) <= 1
    # one time-axis title, under the lower chart; both axes tick in the same unit (ms)
    sim_axis, meas_axis = sim.plot_item.getAxis("bottom"), meas.plot_item.getAxis("bottom")
    assert not sim_axis.label.isVisible() and meas_axis.label.isVisible()
    assert sim_axis.labelUnitPrefix == meas_axis.labelUnitPrefix == "m"
    assert sim_axis.autoSIPrefixScale == meas_axis.autoSIPrefixScale
    # the editor stays usable: a couple of lanes and some program lines
    assert win.lanes.visible_lanes() >= 2
    assert win.program_panel.visible_lines() >= 2
    assert win.bottom_tabs.isVisible() and win.bottom_tabs.height() >= 80

    win.actions.compare_layout.trigger()  # the user switches back to editing
    assert not win.actions.compare_layout.isChecked()
    # the arrangement settles from the event loop (later on a busy machine)
    qtbot.waitUntil(lambda: win.lanes.visible_lanes() >= 5, timeout=5000)
    assert win.program_panel.visible_lines() >= 6
    assert win.measured is not None  # the layout changed, the measurement stays


def test_the_compare_layout_is_a_view_menu_toggle_with_a_shortcut(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    action = win.actions.compare_layout
    assert action.isCheckable()
    assert action.shortcut().toString() == "Ctrl+Shift+C"
    assert action in win.menus.view.actions()
    open_measurement_now(qtbot, win, str(measurements_dir() / MEASUREMENT))
    qtbot.wait(50)
    lanes_in_compare = win.lanes.visible_lanes()
    action.trigger()
    qtbot.wait(50)
    action.trigger()  # and on again, by hand
    # the arrangement settles from the event loop (later on a busy machine)
    qtbot.waitUntil(lambda: _assert_both_charts_show_whole(win), timeout=5000)
    assert abs(win.lanes.visible_lanes() - lanes_in_compare) < 0.5


def test_a_new_document_drops_the_measurement_and_the_compare_layout(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    open_measurement_now(qtbot, win, str(measurements_dir() / MEASUREMENT))
    qtbot.wait(50)
    assert win.actions.compare_layout.isChecked()
    win.open_example("two-streams")
    qtbot.wait(50)
    assert win.measured is None
    assert not win.actions.compare_layout.isChecked()
    assert win.lanes.visible_lanes() >= 5


def test_closing_in_the_compare_layout_saves_the_editing_arrangement(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    open_measurement_now(qtbot, win, str(measurements_dir() / MEASUREMENT))
    qtbot.wait(50)
    assert win.lanes.visible_lanes() < 5  # compare layout
    win.controller.undo_stack.setClean()
    assert win.close()
    again = _window(qtbot, tmp_path)  # the same settings file: the saved window state
    again.open_example("default-stream-trap")
    qtbot.wait(50)
    assert not again.actions.compare_layout.isChecked()
    # the dock heights come back; the lanes/program split is not saved, so about five lanes
    assert again.lanes.visible_lanes() >= 4.5


def test_at_1728x972_the_table_and_insights_get_room_beside_the_charts(qtbot, tmp_path) -> None:
    """The first-start window on a 1728x972 screen (90 %: 1555x875): below the charts the
    table had one to three rows; beside them it has the dock's height."""
    win = _window(qtbot, tmp_path)
    win.resize(1555, 875)
    qtbot.wait(30)
    open_measurement_now(qtbot, win, str(measurements_dir() / "ping-pong.h200.json"))
    qtbot.waitUntil(lambda: _assert_both_charts_show_whole(win), timeout=5000)
    assert win.size().width() <= 1555  # the layout did not widen the window off the screen
    view = win.table.view
    rows_shown = view.viewport().height() / view.verticalHeader().defaultSectionSize()
    assert rows_shown >= 10, rows_shown
    assert win.bottom_tabs.width() >= 300
    win.bottom_tabs.setCurrentWidget(win.insights)
    lines = win.insights.height() / win.insights.fontMetrics().lineSpacing()
    assert lines >= 10, lines
    win.actions.compare_layout.trigger()  # editing again: the table goes back below the charts
    qtbot.wait(50)
    assert win.schedule_splitter.orientation() == Qt.Orientation.Vertical
