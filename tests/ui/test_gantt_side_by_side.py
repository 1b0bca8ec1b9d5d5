"""Simulated above measured: same rows, same pixel column for the same time, shared selection."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from test_gantt_chart import US, small_timeline

from swimlanes.timeline.metrics import compute_metrics
from swimlanes.timeline.timeline import Timeline, TimelineBuilder
from swimlanes.ui.gantt.side_by_side import ComparisonCharts
from swimlanes.ui.gantt.summary import SummaryStrip


def measured_timeline() -> Timeline:
    """The small pipeline as measured: later clock, 20 % slower, plus a stream the model lacks."""
    tl = small_timeline(t0=1_700_000_000_000_000_000, stretch=1.2)
    b = TimelineBuilder(list(tl.stream_names), list(tl.engine_names))
    t = tl.t0
    b.add(
        index=6,
        kind="memset",
        stream="side",
        engine="compute",
        issue_start=t,
        issue_end=t + 1,
        start=t + 5 * US,
        end=t + 9 * US,
    )
    extra = b.build(source="measured")
    out = Timeline(
        **{
            c: np.concatenate([getattr(tl, c), getattr(extra, c)])
            for c in (
                "index",
                "kind",
                "stream",
                "engine",
                "issue_start",
                "issue_end",
                "start",
                "end",
                "solo_ns",
                "bytes",
            )
        },
        labels=tl.labels + extra.labels,
        stream_names=extra.stream_names,
        engine_names=extra.engine_names,
        source="measured",
        device="H200",
        meta={"backend": "cupti"},
    )
    return out


@pytest.fixture
def charts(qtbot) -> ComparisonCharts:
    c = ComparisonCharts()
    qtbot.addWidget(c)
    c.resize(1100, 800)
    c.show()
    qtbot.waitExposed(c)
    c.set_simulated(small_timeline())
    c.set_measured(measured_timeline())
    qtbot.wait(20)
    return c


def test_both_charts_have_the_same_rows_in_the_same_order(charts) -> None:
    sim, meas = charts.simulated_chart, charts.measured_chart
    assert sim.rows() == meas.rows()
    assert "stream:side" in sim.rows()  # only the measurement has it; the model row stays empty
    assert sim.rows()[-1] == "compute"
    assert sim.left_axis_width == meas.left_axis_width


def test_the_same_time_is_at_the_same_pixel_column_in_both(charts, qtbot) -> None:
    sim, meas = charts.simulated_chart, charts.measured_chart

    def aligned() -> None:
        for t in (0, 37 * US, 150 * US, 300 * US):
            sx = sim.plot_widget.mapTo(charts, sim.viewport_pos_of(t, 0).toPoint()).x()
            mx = meas.plot_widget.mapTo(charts, meas.viewport_pos_of(t, 0).toPoint()).x()
            assert abs(sx - mx) <= 1, (t, sx, mx)

    aligned()
    meas.set_x_range_ns(40 * US, 90 * US)  # zooming either chart moves both
    qtbot.wait(10)
    assert sim.x_range_ns() == pytest.approx(meas.x_range_ns(), abs=2)
    aligned()
    QTest.keyClick(sim.plot_widget, Qt.Key.Key_Right)
    qtbot.wait(10)
    aligned()


def test_selection_in_one_chart_selects_in_both(charts, qtbot) -> None:
    sim, meas = charts.simulated_chart, charts.measured_chart
    charts.set_x_range_ns(0, 350 * US)
    qtbot.wait(10)
    row = meas.rows().index("stream:s1")
    pos = meas.viewport_pos_of(130 * US, row).toPoint()  # measured kernel: 72..192 us
    with qtbot.waitSignal(charts.selection_changed) as sig:
        QTest.mouseClick(meas.plot_widget.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert sig.args == [[1]]
    assert sim.selection() == [1] and meas.selection() == [1]
    charts.set_selection([2, 4])
    assert sim.selection() == meas.selection() == [2, 4]


def test_titles_name_device_and_backend(charts) -> None:
    assert charts._sim_pane.title.text() == "Simulated — H200"
    assert charts._meas_pane.title.text() == "Measured — H200 (cupti)"


def test_without_a_measurement_the_simulated_chart_works_alone(charts, qtbot) -> None:
    charts.set_measured(None)
    qtbot.wait(10)
    assert not charts.measured_chart.isVisible()
    assert "stream:side" not in charts.simulated_chart.rows()
    charts.fit_all()
    lo, hi = charts.x_range_ns()
    assert lo <= 0 and hi >= 270 * US
    charts.set_selection([1])
    assert charts.simulated_chart.selection() == [1]


def test_overlay_flags_and_cursor_apply_to_the_measured_chart(charts) -> None:
    charts.set_overlay_enabled(True)
    assert charts.measured_chart._overlay.rows is not None
    charts.set_overlay_enabled(False)
    assert charts.measured_chart._overlay.rows is None
    charts.set_flags([4])
    assert charts.simulated_chart.flags() == charts.measured_chart.flags() == [4]
    charts.set_cursor(50 * US)
    assert charts.measured_chart._cursor.isVisible()


def test_summary_strip_shows_both_runs_and_the_model_error(qtbot) -> None:
    strip = SummaryStrip()
    qtbot.addWidget(strip)
    sim, meas = compute_metrics(small_timeline()), compute_metrics(measured_timeline())
    strip.set_metrics(sim, None)
    names = [r[0] for r in strip.rows]
    assert names[:3] == ["Makespan", "Serial time", "Speedup"]
    assert strip.rows[0][1] == "270 µs"
    assert any(n.endswith(" busy") for n in names)
    strip.set_metrics(sim, meas)
    makespan = strip.rows[0]
    assert makespan[2] == "324 µs"
    assert makespan[3] == f"{(270 - 324) / 324 * 100:+.1f} %"
    strip.set_metrics(None, None)
    assert strip.rows == []
