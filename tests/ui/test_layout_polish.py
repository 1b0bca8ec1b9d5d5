"""Window layout and drawing details a user sees at once: readable rows, the first-start
layout, one legend, separated bars, no repeated headings, and one chart repaint per edit."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QSettings
from PySide6.QtWidgets import QApplication, QLabel
from test_gantt_chart import US, small_timeline
from test_gantt_side_by_side import measured_timeline

from swimlanes.model.edits import SetOpFields
from swimlanes.model.generators import random_pipeline
from swimlanes.timeline.timeline import TimelineBuilder
from swimlanes.ui.app import create_application
from swimlanes.ui.gantt import GanttChart
from swimlanes.ui.gantt.chart import MIN_ROW_PX
from swimlanes.ui.gantt.side_by_side import ComparisonCharts
from swimlanes.ui.main_window import MainWindow
from swimlanes.ui.settings import Settings
from swimlanes.ui.style import op_colour


def _charts(qtbot, width: int, height: int) -> ComparisonCharts:
    c = ComparisonCharts()
    qtbot.addWidget(c)
    c.resize(width, height)
    c.show()
    qtbot.waitExposed(c)
    c.set_simulated(small_timeline())
    return c


def test_rows_keep_their_minimum_height_and_the_charts_scroll_instead(qtbot) -> None:
    charts = _charts(qtbot, 1000, 260)  # far too short for both charts' rows
    charts.set_measured(measured_timeline())
    qtbot.wait(20)
    for chart in (charts.simulated_chart, charts.measured_chart):
        assert chart.row_height_px() >= MIN_ROW_PX - 0.5
        # the row titles are at least a text line apart: they cannot overlap
        assert chart.row_height_px() >= chart.fontMetrics().height()
    assert charts.scroll_area.verticalScrollBar().maximum() > 0
    # still linked: the same time at the same pixel column in both charts
    sim, meas = charts.simulated_chart, charts.measured_chart
    assert abs(sim.scene_x_of_ns(150 * US) - meas.scene_x_of_ns(150 * US)) <= 1


def test_without_a_measurement_the_simulated_chart_gets_the_whole_height(qtbot) -> None:
    charts = _charts(qtbot, 1000, 500)
    qtbot.wait(20)
    assert not charts.measured_chart.isVisible()
    assert charts.scroll_area.verticalScrollBar().maximum() == 0
    sim = charts.simulated_chart
    assert sim.height() > 0.8 * charts.scroll_area.viewport().height()
    assert sim.row_height_px() > MIN_ROW_PX


def test_one_shared_legend_lists_each_entry_once(qtbot) -> None:
    charts = _charts(qtbot, 1000, 600)
    charts.set_measured(measured_timeline())
    assert not charts.simulated_chart.legend.isVisible()
    assert not charts.measured_chart.legend.isVisible()
    assert charts.legend.isVisible()
    entries = charts.legend.entries
    assert len(entries) == len(set(entries))
    # the measurement's extra memset is in the legend, the model's categories too
    assert {"H2D copy", "Kernel", "Memset"} <= set(entries)
    charts.set_measured(None)
    assert "Memset" not in charts.legend.entries


def test_back_to_back_bars_of_one_colour_show_a_darker_edge_between_them(qtbot) -> None:
    b = TimelineBuilder(["s1"], ["H2D"])
    for i in range(4):  # four 50 µs copies with no gap on the H2D engine
        t = i * 50 * US
        b.add(
            index=i,
            kind="h2d",
            stream="s1",
            engine="H2D",
            issue_start=0,
            issue_end=1,
            start=t,
            end=t + 50 * US,
        )
    chart = GanttChart()
    qtbot.addWidget(chart)
    chart.resize(900, 300)
    chart.show()
    qtbot.waitExposed(chart)
    chart.set_timeline(b.build(source="simulated"))
    chart.set_x_range_ns(0, 200 * US)
    qtbot.wait(10)
    image = chart.grab().toImage()
    fill = op_colour("h2d")
    row = chart.rows().index("engine:H2D")
    y = round(chart.viewport_pos_of(0, row).y())
    for boundary in (50, 100, 150):
        x = round(chart.scene_x_of_ns(boundary * US))
        colours = [
            image.pixelColor(chart.plot_widget.viewport().mapTo(chart, _pt(x + dx, y)))
            for dx in range(-2, 3)
        ]
        assert any(c.lightness() < fill.lightness() - 20 for c in colours), boundary
    # inside a bar it is the plain fill
    x = round(chart.scene_x_of_ns(25 * US))
    inside = image.pixelColor(chart.plot_widget.viewport().mapTo(chart, _pt(x, y)))
    assert inside.rgb() == fill.rgb()


def _pt(x: int, y: int):  # noqa: ANN202 - a QPoint
    from PySide6.QtCore import QPoint

    return QPoint(x, y)


class _Paints(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def _window(qtbot, tmp_path: Path) -> MainWindow:
    create_application()
    settings = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    win = MainWindow(settings, gpu_available=False, autosave_path=tmp_path / "recovery.json")
    qtbot.addWidget(win, before_close_func=lambda w: w.controller.undo_stack.setClean())
    win.resize(1600, 1000)
    win.show()
    qtbot.waitExposed(win)
    return win


def test_first_start_layout_shows_five_lanes_six_program_lines_and_readable_charts(
    qtbot, tmp_path
) -> None:
    win = _window(qtbot, tmp_path)
    win.open_example("chunked-overlap")  # 6 lanes, 13 ops
    qtbot.wait(50)
    assert win.lanes.visible_lanes() >= 5
    assert win.program_panel.visible_lines() >= 6
    assert win.charts.simulated_chart.row_height_px() >= MIN_ROW_PX - 0.5


def test_the_inspector_does_not_repeat_its_dock_title(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    win.open_example("two-streams")
    win.controller.set_selection([])
    shown = [
        w.text() for w in win.inspector.findChildren(QLabel) if w.isVisible() and w.text().strip()
    ]
    assert "Inspector" not in shown
    win.controller.set_selection([win.controller.pipeline.program[0].uid])
    assert win.inspector.title.isVisible() and win.inspector.title.text().startswith("#0")


def test_an_edit_repaints_the_chart_once_and_reuses_the_summary_labels(qtbot, tmp_path) -> None:
    win = _window(qtbot, tmp_path)
    pipeline = random_pipeline(300, n_streams=4, seed=3)
    win.controller.set_pipeline(pipeline)
    win.sim_runner.simulate_now()
    qtbot.wait(20)
    paints = _Paints()
    win.charts.simulated_chart.plot_widget.viewport().installEventFilter(paints)
    labels = set(win.summary.findChildren(QLabel))
    kernel = next(op for op in pipeline.program if op.op == "kernel" and op.duration_us)
    for factor in (1.5, 2.0):
        # past the re-simulation throttle, the event loop idle, as between a user's clicks
        qtbot.wait(win.sim_runner._timer.interval() + 20)
        before, makespan = paints.count, win.simulated.makespan_ns
        win.controller.push(SetOpFields(kernel.uid, {"duration_us": kernel.duration_us * factor}))
        QApplication.processEvents()
        assert win.simulated.makespan_ns > makespan  # re-simulated
        assert paints.count - before == 1
    assert set(win.summary.findChildren(QLabel)) == labels
    assert win.summary.text().startswith("Makespan")


def test_lane_blocks_and_event_arrows_follow_edits_that_skip_unchanged_items(qtbot) -> None:
    from test_editor_helpers import Editor, sample

    from swimlanes.model.edits import MoveOps

    ed = Editor(sample())
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    lanes, c = ed.lanes, ed.controller

    def arrow_ends() -> list[tuple[float, float]]:
        items = [i for i in lanes.scene().items() if i.__class__.__name__ == "QGraphicsPathItem"]
        assert len(items) == 1
        path = items[0].path()
        return [(path.pointAtPercent(0).x(), path.pointAtPercent(1).x())]

    record, wait = c.pipeline.program[2], c.pipeline.program[3]
    before = arrow_ends()
    # the record moves one column left: the arrow must start at its new right edge
    assert c.push(MoveOps([record.uid], 1))
    assert arrow_ends() != before
    assert arrow_ends()[0][0] == lanes.block(record.uid).rect().right()
    assert arrow_ends()[0][1] == lanes.block(wait.uid).rect().left()
    # a field edit changes what the block shows
    kernel = c.pipeline.program[2]
    assert kernel.op == "kernel"
    assert c.push(SetOpFields(kernel.uid, {"label": "K renamed"}))
    assert lanes.block(kernel.uid)._look()[2] == "K renamed"
    assert lanes.block(kernel.uid)._shown == lanes.block(kernel.uid)._look()


def test_first_start_window_is_most_of_the_screen_but_not_huge(qtbot, tmp_path) -> None:
    from swimlanes.ui.window_layout import DEFAULT_MAX_SIZE

    create_application()
    settings = Settings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    win = MainWindow(settings, gpu_available=False, autosave_path=tmp_path / "recovery.json")
    qtbot.addWidget(win)
    screen = win.screen().availableGeometry()
    assert win.width() == min(DEFAULT_MAX_SIZE[0], int(0.9 * screen.width()))
    assert win.height() == min(DEFAULT_MAX_SIZE[1], int(0.9 * screen.height()))


def test_a_chart_with_very_many_rows_scrolls_rather_than_demanding_the_screen(qtbot) -> None:
    from swimlanes.ui.gantt.side_by_side import UNSCROLLED_ROWS

    b = TimelineBuilder([f"s{i}" for i in range(40)], ["compute"])
    for i in range(40):
        b.add(
            index=i,
            kind="kernel",
            stream=f"s{i}",
            engine="compute",
            issue_start=0,
            issue_end=1,
            start=i * US,
            end=(i + 5) * US,
        )
    charts = ComparisonCharts()
    qtbot.addWidget(charts)
    charts.resize(1000, 400)
    charts.show()
    charts.set_simulated(b.build(source="simulated"))
    qtbot.wait(20)
    assert len(charts.simulated_chart.rows()) > UNSCROLLED_ROWS
    assert charts.minimumSizeHint().height() < (UNSCROLLED_ROWS + 6) * MIN_ROW_PX + 120
    assert charts.simulated_chart.row_height_px() >= MIN_ROW_PX - 0.5
    assert charts.scroll_area.verticalScrollBar().maximum() > 0
