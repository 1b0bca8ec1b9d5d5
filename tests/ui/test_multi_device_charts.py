"""Charts of multi-device timelines: rows grouped per device (collapsible like the host, stream
and engine groups), SM occupancy per device, link rows with the ops that used each link, and
connectors that join the bars of one collective across the devices' rows."""

from __future__ import annotations

import numpy as np
import pytest
from multi_device_timelines import LINKS, US, two_device_timeline
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from test_gantt_chart import small_timeline

from swimlanes.ui.gantt import ComparisonCharts, GanttChart
from swimlanes.ui.gantt.device_items import COLLECTIVE_LEGEND
from swimlanes.ui.gantt.row_keys import link_row
from swimlanes.ui.style import op_colour

GPU0_ROWS = ["host:gpu0", "stream:c0", "stream:comm0", "engine:gpu0 D2H", "compute:gpu0"]
GPU1_ROWS = ["host:gpu1", "stream:c1", "stream:comm1", "compute:gpu1"]
LINK_ROWS = [link_row(name) for name in LINKS]


@pytest.fixture
def chart(qtbot) -> GanttChart:
    c = GanttChart()
    qtbot.addWidget(c)
    c.resize(1000, 520)
    c.show()
    qtbot.waitExposed(c)
    c.set_timeline(two_device_timeline())
    c.set_x_range_ns(0, 340 * US)
    qtbot.wait(10)
    return c


def _ops_on(chart: GanttChart, key: str) -> set[int]:
    rows = chart.rows_model
    return set(rows.bar_op[rows.bar_row == chart.rows().index(key)].tolist())


def _pixel(chart: GanttChart, t_ns: int, row: float) -> QColor:
    """The colour at time ``t_ns`` and height ``row`` (row i's centre is i + 0.5)."""
    image = chart.plot_widget.grab().toImage()
    top = chart.viewport_pos_of(t_ns, 0)
    y = top.y() + (row - 0.5) * chart.row_height_px()
    scale = image.width() / chart.plot_widget.width()
    return image.pixelColor(round(top.x() * scale), round(y * scale))


def test_rows_are_grouped_per_device_then_the_links(chart) -> None:
    assert chart.rows() == GPU0_ROWS + GPU1_ROWS + LINK_ROWS
    spans = chart.row_arrangement.spans
    assert [(s.group, s.title, s.count) for s in spans] == [
        ("device:gpu0", "gpu0", 5),
        ("device:gpu1", "gpu1", 4),
        ("links", "Links", 2),
    ]
    titles = chart.row_titles()
    assert titles[0] == "gpu0 host thread" and titles[4] == "gpu0 SMs"
    assert titles[-2:] == LINKS
    # each device's host thread shows the calls that device's thread issued
    assert _ops_on(chart, "host:gpu1") == {1, 3, 5}
    assert _ops_on(chart, "host:gpu0") == {0, 2, 4, 6}


def test_each_device_has_its_own_sm_occupancy(chart, qtbot) -> None:
    tracks = {chart.rows()[t.row]: t for t in chart.rows_model.occupancy}
    assert set(tracks) == {"compute:gpu0", "compute:gpu1"}
    assert tracks["compute:gpu1"].x.tolist() == [12.0, 130.0, 330.0]
    # kernels and collectives are occupancy, not bars, on the SM rows
    assert not _ops_on(chart, "compute:gpu0") and not _ops_on(chart, "compute:gpu1")
    row = chart.rows().index("compute:gpu1")
    QTest.mouseMove(chart.plot_widget.viewport(), chart.viewport_pos_of(200 * US, row).toPoint())
    qtbot.waitUntil(lambda: bool(chart.hover_text), timeout=1000)
    assert chart.hover_text.startswith("16 of 132 SMs busy (12 %) at ")


def test_link_rows_show_the_ops_that_used_each_link(chart) -> None:
    # the peer copy (op 4) and gpu0's part of the ring (op 2) went from gpu0 to gpu1
    assert _ops_on(chart, LINK_ROWS[0]) == {2, 4}
    assert _ops_on(chart, LINK_ROWS[1]) == {3}
    rows = chart.rows_model
    on_link = rows.bar_row == chart.rows().index(LINK_ROWS[0])
    spans = sorted(zip(rows.bar_x0[on_link].tolist(), rows.bar_x1[on_link].tolist(), strict=True))
    assert spans == [(110.0, 160.0), (130.0, 330.0)]
    assert _pixel(chart, 140 * US, chart.rows().index(LINK_ROWS[0]) + 0.5).rgb() in (
        op_colour("peer_copy").rgb(),
        op_colour("all_reduce").rgb(),
    )
    assert "gpu0, stream c0, engine gpu0 D2H, link NVLink gpu0→gpu1" in chart_tooltip(chart, 4)


def chart_tooltip(chart: GanttChart, op: int) -> str:
    from swimlanes.ui.gantt.rows import op_tooltip

    return op_tooltip(chart.timeline, op)


def test_one_collective_is_joined_across_the_devices_rows(chart, qtbot) -> None:
    rows = chart.rows()
    connectors = chart.rows_model.collectives
    assert connectors.tolist() == [
        [130.0, 330.0, rows.index("stream:comm0"), rows.index("stream:comm1")]
    ]
    chart.plot_widget.grab()
    assert chart._collectives.last_drawn == 1
    # the connector is drawn from one bar to the other, over the rows in between
    between = rows.index("host:gpu1") + 0.95  # below the host calls' bars
    colours = {_pixel(chart, 130 * US + dx * 100, between).rgb() for dx in range(0, 8)}
    assert chart._collectives.colour.rgb() in colours
    assert COLLECTIVE_LEGEND in [e[0] for e in chart.legend_items]
    assert {"Peer copy", "Collective"} <= {e[0] for e in chart.legend_items}


def test_collapsing_a_device_keeps_its_bars_on_one_row_and_the_connector(chart) -> None:
    chart.set_group_collapsed("device:gpu1", True)
    rows = chart.rows()
    assert rows == GPU0_ROWS + ["group:device:gpu1"] + LINK_ROWS
    assert chart.row_titles()[5] == "gpu1 (4)"
    # its host calls, stream ops and (as bars now) its kernel and all-reduce
    assert _ops_on(chart, "group:device:gpu1") == {1, 3, 5}
    assert chart.rows_model.collectives.tolist() == [
        [130.0, 330.0, rows.index("stream:comm0"), rows.index("group:device:gpu1")]
    ]
    chart.set_group_collapsed("device:gpu1", False)
    assert chart.rows() == GPU0_ROWS + GPU1_ROWS + LINK_ROWS


def test_clicking_a_device_group_and_its_row_menu(chart, qtbot) -> None:
    def click_gutter(key: str) -> None:
        y = chart.viewport_pos_of(0, chart.rows().index(key)).y()
        gutter = QPoint(round(chart._row_axis.sceneBoundingRect().left() + 6), round(y))
        QTest.mouseClick(chart.plot_widget.viewport(), Qt.MouseButton.LeftButton, pos=gutter)

    click_gutter("stream:c1")
    assert chart.rows() == GPU0_ROWS + ["group:device:gpu1"] + LINK_ROWS
    click_gutter("group:device:gpu1")
    assert chart.rows() == GPU0_ROWS + GPU1_ROWS + LINK_ROWS
    chart._on_row_menu(chart.rows().index("stream:c0"), 0, 0)
    texts = [a.text() for a in chart._last_row_menu.actions()]
    assert "Collapse gpu0" in texts
    next(a for a in chart._last_row_menu.actions() if a.objectName() == "pin").trigger()
    assert chart.rows()[0] == "stream:c0"
    assert chart.row_arrangement.spans[0].group == "pinned"


def test_a_single_device_timeline_has_no_device_groups(qtbot) -> None:
    chart = GanttChart()
    qtbot.addWidget(chart)
    chart.set_timeline(small_timeline())
    assert [s.group for s in chart.row_arrangement.spans] == ["host", "streams", "engines"]
    assert chart.rows()[0] == "host"
    assert chart.rows_model.devices == [] and not len(chart.rows_model.collectives)
    assert len(chart.rows_model.occupancy) == 1
    assert COLLECTIVE_LEGEND not in [e[0] for e in chart.legend_items]


def test_the_comparison_groups_both_charts_per_device(qtbot) -> None:
    charts = ComparisonCharts()
    qtbot.addWidget(charts)
    charts.resize(1000, 800)
    charts.show()
    charts.set_simulated(two_device_timeline())
    charts.set_measured(two_device_timeline())
    sim, meas = charts.simulated_chart, charts.measured_chart
    assert sim.rows() == meas.rows() == GPU0_ROWS + GPU1_ROWS + LINK_ROWS
    meas.set_group_collapsed("device:gpu0", True)
    assert sim.rows() == meas.rows() and sim.rows()[0] == "group:device:gpu0"
    assert np.isin(sim.rows_model.bar_op, [4]).any()


def _connector_pixels(path) -> int:
    from PySide6.QtGui import QImage

    from swimlanes.ui.style import CATEGORY_COLOUR

    image = QImage(str(path))
    want = QColor(CATEGORY_COLOUR["Collective"]).darker(130).rgb()
    return sum(
        image.pixel(x, y) == want for x in range(0, image.width(), 2) for y in range(image.height())
    )


def test_exported_images_join_a_collective_across_the_devices_rows(qtbot, tmp_path) -> None:
    from swimlanes.ui.export_image import export_image

    joined = export_image(tmp_path / "joined.png", two_device_timeline(), None, width=900)
    apart = two_device_timeline()
    apart.end[3] += 5 * US  # gpu1's part ends later: not one instance any more
    split = export_image(tmp_path / "split.png", apart, None, width=900)
    assert _connector_pixels(joined) > _connector_pixels(split) + 20


def test_search_finds_the_ops_of_one_device() -> None:
    from swimlanes.ui.gantt.search import match_ops

    tl = two_device_timeline()
    assert np.flatnonzero(match_ops(tl, "device:gpu1")).tolist() == [1, 3, 5]
    assert np.flatnonzero(match_ops(tl, "device:gpu1 kind:all_reduce")).tolist() == [3]
    assert not match_ops(small_timeline(), "device:gpu0").any()


def test_a_diff_of_two_multi_device_schedules_groups_both_per_device(qtbot) -> None:
    from swimlanes.ui.diff_view import DiffWindow

    a, b = two_device_timeline(), two_device_timeline()
    b.end[[2, 3]] += 20 * US  # the all-reduce took longer on B
    win = DiffWindow(a, b)
    qtbot.addWidget(win)
    assert win.chart_a.rows() == win.chart_b.rows() == GPU0_ROWS + GPU1_ROWS + LINK_ROWS
    assert [s.group for s in win.chart_b.row_arrangement.spans][:2] == [
        "device:gpu0",
        "device:gpu1",
    ]
    assert len(win.chart_b.rows_model.collectives) == 1


def test_a_collective_calls_edge_joins_its_ranks_starts() -> None:
    """The 'collective' edge is drawn start to start (the ranks start together), not from the
    first rank's end as a wait would be."""
    from swimlanes.engine import get_preset, simulate
    from swimlanes.model.io import load_pipeline
    from swimlanes.resources import examples_dir
    from swimlanes.timeline.timeline import DEP_KINDS
    from swimlanes.ui.gantt.rows import build_rows, dependency_segments

    tl = simulate(
        load_pipeline(examples_dir() / "ddp-buckets-50mb.json"), get_preset("8x-h200-nvlink")
    )
    first = int(tl.dep_src[tl.dep_kind == DEP_KINDS.index("collective")][0])
    rows = build_rows(tl)
    segments = [
        s
        for s in dependency_segments(rows, np.asarray([first]))
        if s[4] == DEP_KINDS.index("collective")
    ]
    assert len(segments) == 7  # to the seven other ranks
    start_us = (int(tl.start[first]) - rows.t0) / 1000.0
    assert all(s[0] == start_us == s[2] for s in segments)
