"""Gantt rows and bars that read like a profiler's: labels in the visible part of a bar,
coverage shading at overview, kernels coloured by name, collapsible groups and pinned rows,
and the ruler's range table."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QColor, QGuiApplication
from PySide6.QtTest import QTest
from test_gantt_chart import US, small_timeline
from test_gantt_side_by_side import measured_timeline

from swimlanes.timeline.timeline import Timeline, TimelineBuilder
from swimlanes.ui.gantt import ComparisonCharts, GanttChart
from swimlanes.ui.gantt.bars import KERNEL_BY_NAME, KERNEL_PALETTE
from swimlanes.ui.gantt.coverage import SHADE_LEVELS, BarLod, cull_bars_shaded, label_spans
from swimlanes.ui.gantt.row_groups import RowGrouping, arrange_rows
from swimlanes.ui.style import CATEGORY_COLOUR, op_colour


@pytest.fixture
def chart(qtbot) -> GanttChart:
    c = GanttChart()
    qtbot.addWidget(c)
    c.resize(1000, 420)
    c.show()
    qtbot.waitExposed(c)
    c.set_timeline(small_timeline())
    c.set_x_range_ns(0, 300 * US)
    qtbot.wait(10)
    return c


def _pixel(chart: GanttChart, t_ns: int, row_key: str) -> QColor:
    image = chart.plot_widget.grab().toImage()
    p = chart.viewport_pos_of(t_ns, chart.rows().index(row_key)).toPoint()
    return image.pixelColor(p.x(), p.y())


# -- labels kept in the visible part of a bar -----------------------------------------------------


def test_label_spans_keep_labels_in_the_visible_part() -> None:
    p0 = np.array([-500.0, 100.0, 150.0, 990.0, 300.0])
    p1 = np.array([80.0, 140.0, 2000.0, 1200.0, 301.0])
    op = np.array([0, 1, 2, 3, -1])
    idx, lx0, lx1 = label_spans(p0, p1, op, (0.0, 1000.0), 28.0)
    # bar 0 starts far left: its label sits in 0-80; bar 2 runs past the right edge: 150-1000;
    # bar 3 shows 10 px only, too little; a merged run (op -1) never gets a label
    assert idx.tolist() == [0, 1, 2]
    assert lx0.tolist() == [0.0, 100.0, 150.0]
    assert lx1.tolist() == [80.0, 140.0, 1000.0]


def test_a_kernel_that_starts_left_of_the_view_keeps_its_label_on_screen(chart, qtbot) -> None:
    tl = chart.timeline
    square = tl.labels.index("square")  # on s1 from 60 to 160 µs
    chart.set_x_range_ns(120 * US, 300 * US)
    qtbot.wait(10)
    chart.plot_widget.grab()
    labels = {op: (x0, x1) for op, x0, x1 in chart._bars.last_labels}
    assert square in labels
    left_edge = chart.scene_x_of_ns(120 * US)
    x0, x1 = labels[square]
    assert x0 == pytest.approx(left_edge, abs=1.5)  # not at the bar's start, off screen
    assert x1 == pytest.approx(chart.scene_x_of_ns(160 * US), abs=1.5)
    # zoomed so that only a sliver of it shows, it has no label
    chart.set_x_range_ns(159 * US, 300 * US)
    qtbot.wait(10)
    chart.plot_widget.grab()
    assert square not in {op for op, _, _ in chart._bars.last_labels}


# -- coverage shading -------------------------------------------------------------------------------


def _busy_row(fraction: float, n: int = 5000, period: float = 1.0) -> tuple[np.ndarray, ...]:
    x0 = np.arange(n) * period
    x1 = x0 + fraction * period
    return x0, x1, np.zeros(n, np.int32), np.arange(n, dtype=np.int32)


def test_merged_sub_pixel_bars_are_shaded_by_the_time_they_cover() -> None:
    x0, x1, row, op = _busy_row(0.39)
    view = (0.0, 5000.0)
    sx = 1000.0 / 5000.0  # five bars per pixel
    p0, p1, r, o, shade = cull_bars_shaded(x0, x1, row, op, 0.39, view, sx, 0.0, 1)
    assert (o == -1).all()  # all merged
    # one run across the row, 39 % covered: 3 of 8 shades (alpha 0.375), not solid
    assert shade.tolist() == [round(0.39 * SHADE_LEVELS)]
    assert p0[0] == 0.0 and p1[0] == pytest.approx(1000.0, abs=1)
    # a row that is busy all the time stays solid
    x0, x1, row, op = _busy_row(1.0)
    *_, shade = cull_bars_shaded(x0, x1, row, op, 1.0, view, sx, 0.0, 1)
    assert set(shade.tolist()) == {SHADE_LEVELS}


def test_the_zoomed_out_level_of_detail_is_shaded_the_same_way() -> None:
    x0, x1, row, _ = _busy_row(0.39, n=100_000)
    x0 = np.concatenate([x0, x0])  # a second row, 10 % busy
    x1 = np.concatenate([x1, x0[:100_000] + 0.1])
    row = np.concatenate([row, np.ones(100_000, np.int32)])
    order = np.argsort(x0, kind="stable")
    lod = BarLod(x0[order], x1[order], row[order], 2)
    runs = lod.shaded_runs((0.0, 100_000.0), 1600 / 100_000, 0.0)
    assert runs is not None
    p0, p1, r, shade = runs
    by_row = {int(k): set(shade[r == k].tolist()) for k in (0, 1)}
    assert by_row[0] == {3}  # 39 % of 8 shades
    assert by_row[1] == {1}  # 10 %: faint, but still there
    assert p1[r == 0].max() - p0[r == 0].min() == pytest.approx(1600, abs=2)


def test_shaded_strips_take_their_alpha_from_the_covered_fraction() -> None:
    from swimlanes.ui.gantt.shading import MIN_ALPHA, coverage_alpha, coverage_pixels

    frac = np.array([[0.0, 0.39, 1.0, 1.7, 0.001]])
    assert coverage_alpha(frac).tolist() == [[0, 99, 255, 255, MIN_ALPHA]]
    argb = coverage_pixels(frac, QColor("#FF0000"))
    assert (argb[0, 1] >> 24) == 99 and ((argb[0, 1] >> 16) & 0xFF) == 99  # premultiplied
    assert argb[0, 0] == 0


def _dense_timeline(fraction: float) -> Timeline:
    """4000 copies of 100 ns on s1, one every 100 ns / ``fraction``: busy ``fraction``."""
    b = TimelineBuilder(["s1"], ["H2D"])
    period = round(100 / fraction)
    for i in range(4000):
        b.add(index=i, kind="h2d", stream="s1", engine="H2D", issue_start=i * period,
              issue_end=i * period + 1, start=i * period, end=i * period + 100)  # fmt: skip
    return b.build(source="measured", device="x", name="dense")


def test_a_39_percent_busy_row_looks_39_percent_busy_at_overview(qtbot) -> None:
    c = GanttChart()
    qtbot.addWidget(c)
    c.resize(900, 300)
    c.show()
    qtbot.waitExposed(c)
    tl = _dense_timeline(0.39)
    c.set_timeline(tl)
    span = tl.makespan_ns
    c.set_x_range_ns(0, span * 2)  # the right half is empty: the background to compare with
    qtbot.wait(10)
    busy = _pixel(c, span // 2, "stream:s1")
    empty = _pixel(c, span * 3 // 2, "stream:s1")
    solid = op_colour("h2d")
    alphas = [
        (b - e) / (s - e)
        for b, e, s in zip(busy.getRgb()[:3], empty.getRgb()[:3], solid.getRgb()[:3], strict=True)
        if abs(s - e) > 40
    ]
    assert alphas and all(0.3 < a < 0.5 for a in alphas), (busy.name(), alphas)


# -- kernels coloured by name ------------------------------------------------------------------------


def test_kernels_coloured_by_name_get_a_stable_palette_colour(chart) -> None:
    tl = chart.timeline
    assert _pixel(chart, 110 * US, "stream:s1").rgb() == op_colour("kernel").rgb()
    chart.set_kernels_by_name(True)

    def expected(name: str) -> int:
        return QColor(KERNEL_PALETTE[zlib.crc32(name.encode()) % len(KERNEL_PALETTE)]).rgb()

    assert "square" in tl.labels and "cube" in tl.labels
    assert _pixel(chart, 110 * US, "stream:s1").rgb() == expected("square")
    assert _pixel(chart, 200 * US, "stream:s2").rgb() == expected("cube")
    assert _pixel(chart, 30 * US, "stream:s1").rgb() == op_colour("h2d").rgb()  # copies stay
    assert KERNEL_BY_NAME in chart.legend.entries and "Kernel" not in chart.legend.entries
    chart.set_kernels_by_name(False)
    assert _pixel(chart, 110 * US, "stream:s1").rgb() == op_colour("kernel").rgb()
    assert "Kernel" in chart.legend.entries


def test_the_kernel_palette_never_reads_as_another_category() -> None:
    others = {c.lower() for cat, c in CATEGORY_COLOUR.items() if cat != "Kernel"}
    assert len(set(KERNEL_PALETTE)) == len(KERNEL_PALETTE)
    assert not others & {c.lower() for c in KERNEL_PALETTE}
    for c in KERNEL_PALETTE:  # greens, teals, purples, olive: never blue, orange or yellow
        hue = QColor(c).hsvHue()
        assert not (190 <= hue <= 215 or 25 <= hue <= 58), c


# -- collapsible groups and pinned rows ------------------------------------------------------------

KEYS = ["host", "stream:s1", "stream:s2", "engine:H2D", "engine:D2H", "compute"]


def test_collapsed_groups_show_one_summary_row_and_pins_go_first() -> None:
    assert arrange_rows(KEYS).keys == KEYS
    g = RowGrouping(collapsed={"streams"})
    a = arrange_rows(KEYS, g)
    assert a.keys == ["host", "group:streams", "engine:H2D", "engine:D2H", "compute"]
    assert a.merge == {"stream:s1": "group:streams", "stream:s2": "group:streams"}
    assert a.titles["group:streams"] == "Streams (2)"
    g.pin("engine:D2H")
    g.pin("stream:s2")
    a = arrange_rows(KEYS, g)
    # pinned in pin order; a pinned row leaves its group, which then has one row: no summary
    assert a.keys == ["engine:D2H", "stream:s2", "host", "stream:s1", "engine:H2D", "compute"]
    assert a.merge == {}
    g.pin("stream:s2", False)
    g.toggle("streams")
    assert arrange_rows(KEYS, g).keys == ["engine:D2H", *KEYS[:4], "compute"]


def _gutter_point(chart: GanttChart, row: int) -> QPoint:
    axis = chart._row_axis
    rect = axis.sceneBoundingRect()
    y = chart.viewport_pos_of(0, row).y()
    return QPoint(round(rect.left() + 6), round(y))


def test_clicking_a_group_collapses_it_into_a_summary_row_and_back(chart, qtbot) -> None:
    before = chart.rows()
    bars_on_streams = np.isin(
        chart.rows_model.bar_row, [before.index("stream:s1"), before.index("stream:s2")]
    ).sum()
    QTest.mouseClick(
        chart.plot_widget.viewport(), Qt.MouseButton.LeftButton, pos=_gutter_point(chart, 1)
    )
    rows = chart.rows()
    assert rows == ["host", "group:streams", "engine:H2D", "engine:D2H", "compute"]
    assert chart.row_titles()[1] == "Streams (2)"
    summary = rows.index("group:streams")
    assert (chart.rows_model.bar_row == summary).sum() == bars_on_streams  # the union
    # the summary row shows the copy on s1 at 30 µs and the kernel on s1 at 130 µs
    assert _pixel(chart, 30 * US, "group:streams").rgb() == op_colour("h2d").rgb()
    assert _pixel(chart, 130 * US, "group:streams").rgb() == op_colour("kernel").rgb()
    QTest.mouseClick(
        chart.plot_widget.viewport(), Qt.MouseButton.LeftButton, pos=_gutter_point(chart, 1)
    )
    assert chart.rows() == before


def test_collapsing_the_engines_keeps_the_kernels_as_bars(chart) -> None:
    chart.set_group_collapsed("engines", True)
    rows = chart.rows()
    assert rows[-1] == "group:engines" and "compute" not in rows
    assert chart.rows_model.compute_row is None
    assert _pixel(chart, 130 * US, "group:engines").rgb() == op_colour("kernel").rgb()


def test_the_row_menu_pins_a_row_to_the_top_and_unpins_it(chart) -> None:
    row = chart.rows().index("engine:D2H")
    chart._on_row_menu(row, 0, 0)
    menu = chart._last_row_menu
    names = [a.objectName() for a in menu.actions()]
    assert "pin" in names and "toggle_group" in names
    next(a for a in menu.actions() if a.objectName() == "pin").trigger()
    assert chart.rows()[0] == "engine:D2H"
    chart._on_row_menu(0, 0, 0)
    menu = chart._last_row_menu
    next(a for a in menu.actions() if a.objectName() == "unpin").trigger()
    assert chart.rows() == KEYS


def test_both_charts_of_a_comparison_share_groups_and_pins(qtbot) -> None:
    charts = ComparisonCharts()
    qtbot.addWidget(charts)
    charts.resize(1000, 700)
    charts.show()
    charts.set_simulated(small_timeline())
    charts.set_measured(measured_timeline())
    sim, meas = charts.simulated_chart, charts.measured_chart
    assert sim.rows() == meas.rows()
    meas.set_group_collapsed("streams", True)
    assert "group:streams" in sim.rows()
    assert sim.rows() == meas.rows()
    sim.pin_row("engine:D2H")
    assert sim.rows()[0] == meas.rows()[0] == "engine:D2H"
    assert sim.rows() == meas.rows()
    # a new result keeps the choice
    charts.set_simulated(small_timeline(stretch=1.1))
    assert sim.rows() == meas.rows() and sim.rows()[0] == "engine:D2H"


# -- the ruler's range table ------------------------------------------------------------------------


def test_the_ruler_shows_a_copyable_table_of_the_range(chart, qtbot) -> None:
    panel = chart.range_panel
    assert not panel.isVisible()
    chart.set_ruler_ns(100 * US, 220 * US)
    assert panel.isVisible()
    text = panel.text()
    lines = dict(line.split("\t", 1) for line in text.splitlines())
    assert lines["Range"] == "120 µs"
    assert lines["stream s1 busy"] == "100 µs\t83.3 %"  # kernel from 100, D2H to 200
    assert lines["engine H2D busy"] == "10 µs\t8.3 %"  # copy in 2 ends at 110 µs
    assert lines["Compute busy"] == "120 µs\t100.0 %"
    assert lines["Copy and compute overlap"] == "50 µs\t41.7 %"
    assert lines["    Kernel"] == "2"
    panel.copy()
    assert QGuiApplication.clipboard().text() == text
    QTest.keyClick(chart.plot_widget, Qt.Key.Key_Escape)
    assert not panel.isVisible()


def test_coverage_grid_matches_a_fine_raster() -> None:
    from swimlanes.ui.gantt.coverage import coverage_grid

    rng = np.random.default_rng(7)
    n, n_rows, n_cols, fine = 400, 3, 40, 200  # 200 sub-steps per column
    u0 = rng.uniform(-2, n_cols + 2, n)
    u1 = u0 + rng.exponential(0.7, n)  # most within a column, some across several
    row = rng.integers(0, n_rows, n)
    got = coverage_grid(u0, u1, row, n_rows, n_cols)
    t = (np.arange(n_cols * fine) + 0.5) / fine
    want = np.zeros((n_rows, n_cols))
    for a, b, r in zip(u0, u1, row, strict=True):
        inside = (t >= a) & (t < b)
        want[r] += inside.reshape(n_cols, fine).sum(axis=1) / fine
    assert np.allclose(got, want, atol=5.0 / fine)  # each span edge is off by < 1/(2 fine)


def test_a_captured_stream_sync_is_drawn_on_the_host_row_only() -> None:
    """A captured trace gives a stream sync its wait as a span on its stream (Kineto's "Stream
    Sync"); drawn there it covered the copy it waited for. It stays on the host row, as a
    simulated sync is drawn."""
    from swimlanes.ui.gantt.rows import build_rows

    b = TimelineBuilder(["s1"], ["H2D"])
    b.add(index=0, kind="h2d", stream="s1", engine="H2D", issue_start=0, issue_end=10 * US,
          start=20 * US, end=1000 * US)  # fmt: skip
    b.add(index=1, kind="stream_sync", stream="s1", engine=None, issue_start=15 * US,
          issue_end=1005 * US, start=20 * US, end=1000 * US)  # fmt: skip
    rows = build_rows(b.build(source="measured", device="x", name="captured"))
    stream = rows.keys.index("stream:s1")
    on_stream = rows.bar_op[rows.bar_row == stream].tolist()
    assert on_stream == [0]  # the copy alone
    host = rows.keys.index("host")
    assert sorted(rows.bar_op[rows.bar_row == host].tolist()) == [0, 1]
