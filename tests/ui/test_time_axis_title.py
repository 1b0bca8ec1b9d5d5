"""The time axis title stays inside the chart at the chart's minimum height."""

from __future__ import annotations

from swimlanes.engine import get_preset, simulate
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_path
from swimlanes.ui.gantt.chart import MIN_ROW_PX, GanttChart


def test_the_time_axis_title_is_not_cut_at_the_minimum_height(qtbot) -> None:
    chart = GanttChart()
    qtbot.addWidget(chart)
    tl = simulate(load_pipeline(example_path("chunked-overlap")), get_preset("ideal"))
    chart.set_timeline(tl)
    widget = chart.plot_widget
    chart.resize(1400, widget.minimumHeight())
    chart.show()
    qtbot.waitExposed(chart)
    qtbot.waitUntil(lambda: widget.height() == widget.minimumHeight())
    axis = chart.plot_item.getAxis("bottom")
    assert axis.label.isVisible()
    bottom = axis.label.mapRectToScene(axis.label.boundingRect()).bottom()
    assert widget.mapFromScene(0, bottom).y() <= widget.height()
    assert chart.row_height_px() >= MIN_ROW_PX - 0.5  # and the rows keep their height
