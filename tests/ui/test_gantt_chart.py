"""The Gantt chart: rows, pixels where the bars should be, selection, hover, marks, keys."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtTest import QTest

from swimlanes.timeline.timeline import Timeline, TimelineBuilder
from swimlanes.ui.gantt import GanttChart
from swimlanes.ui.gantt.bars import FLAG_COLOUR
from swimlanes.ui.style import op_colour

US = 1000
MIB = 1 << 20


def small_timeline(t0: int = 0, stretch: float = 1.0) -> Timeline:
    """Two streams: copy-kernel-copy on s1, copy-kernel on s2, then a device sync on the host."""
    b = TimelineBuilder(["s1", "s2"], ["H2D", "compute", "D2H"])

    def t(us: float) -> int:
        return t0 + round(us * stretch * US)

    rows = [
        b.add(
            index=0,
            kind="h2d",
            stream="s1",
            engine="H2D",
            issue_start=t(0),
            issue_end=t(2),
            start=t(10),
            end=t(60),
            nbytes=64 * MIB,
            label="copy in",
        ),
        b.add(
            index=1,
            kind="kernel",
            stream="s1",
            engine="compute",
            issue_start=t(2),
            issue_end=t(4),
            start=t(60),
            end=t(160),
            label="square",
        ),
        b.add(
            index=2,
            kind="d2h",
            stream="s1",
            engine="D2H",
            issue_start=t(4),
            issue_end=t(6),
            start=t(160),
            end=t(200),
            nbytes=32 * MIB,
            label="copy out",
        ),
        b.add(
            index=3,
            kind="h2d",
            stream="s2",
            engine="H2D",
            issue_start=t(6),
            issue_end=t(8),
            start=t(60),
            end=t(110),
            nbytes=64 * MIB,
            label="copy in 2",
        ),
        b.add(
            index=4,
            kind="kernel",
            stream="s2",
            engine="compute",
            issue_start=t(8),
            issue_end=t(10),
            start=t(160),
            end=t(260),
            label="cube",
        ),
        b.add(
            index=5,
            kind="device_sync",
            stream=None,
            engine=None,
            issue_start=t(10),
            issue_end=t(270),
            label="wait",
        ),
    ]
    b.add_dep(rows[0], rows[1], "stream")
    b.add_dep(rows[1], rows[2], "stream")
    b.add_dep(rows[1], rows[4], "event")
    tl = b.build(source="simulated", device="H200", name="small")
    tl.occupancy_time = np.array([t(60), t(160), t(260)], np.int64)
    tl.occupancy_sms = np.array([66, 66, 0], np.int32)
    tl.sm_count = 132
    return tl


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


def _viewport_point(chart: GanttChart, t_ns: int, row_key: str) -> QPoint:
    return chart.viewport_pos_of(t_ns, chart.rows().index(row_key)).toPoint()


def _pixel(chart: GanttChart, image: QImage, t_ns: int, row_key: str, dy: int = 0) -> QColor:
    p = _viewport_point(chart, t_ns, row_key)
    p = chart.plot_widget.viewport().mapTo(chart, p)
    return image.pixelColor(p.x(), p.y() + dy)


def test_rows_are_host_streams_engines_then_sm_occupancy(chart) -> None:
    assert chart.rows() == ["host", "stream:s1", "stream:s2", "engine:H2D", "engine:D2H", "compute"]
    assert chart.row_titles() == ["Host", "s1", "s2", "H2D", "D2H", "Compute (SMs)"]


def test_a_kernel_bar_is_drawn_in_the_kernel_colour_on_its_stream_row(chart) -> None:
    image = chart.grab().toImage()
    kernel = op_colour("kernel").rgb()
    assert _pixel(chart, image, 110 * US, "stream:s1").rgb() == kernel
    assert _pixel(chart, image, 30 * US, "stream:s1").rgb() == op_colour("h2d").rgb()
    # s2 is idle between its copy (ends 110 us) and its kernel (starts 160 us)
    assert _pixel(chart, image, 135 * US, "stream:s2").rgb() != kernel
    # kernels go to the SM occupancy row, not to an engine row of bars
    assert (
        _pixel(chart, image, 110 * US, "compute", dy=6).rgb()
        != chart.palette().color(QPalette.ColorRole.Base).rgb()
    )


def test_click_selects_ctrl_click_extends_and_click_on_empty_clears(chart, qtbot) -> None:
    vp = chart.plot_widget.viewport()
    with qtbot.waitSignal(chart.selection_changed) as sig:
        QTest.mouseClick(
            vp, Qt.MouseButton.LeftButton, pos=_viewport_point(chart, 110 * US, "stream:s1")
        )
    assert sig.args == [[1]]
    with qtbot.waitSignal(chart.selection_changed) as sig:
        QTest.mouseClick(
            vp,
            Qt.MouseButton.LeftButton,
            Qt.KeyboardModifier.ControlModifier,
            _viewport_point(chart, 200 * US, "stream:s2"),
        )
    assert sig.args == [[1, 4]]
    with qtbot.waitSignal(chart.selection_changed) as sig:
        QTest.mouseClick(
            vp, Qt.MouseButton.LeftButton, pos=_viewport_point(chart, 135 * US, "stream:s2")
        )
    assert sig.args == [[]]


def test_hover_shows_op_stream_times_bytes_and_bandwidth(chart, qtbot) -> None:
    QTest.mouseMove(chart.plot_widget.viewport(), _viewport_point(chart, 30 * US, "stream:s1"))
    qtbot.waitUntil(lambda: bool(chart.hover_text), timeout=1000)
    text = chart.hover_text
    assert "copy in" in text and "stream s1" in text
    assert "start 10 µs" in text and "end 60 µs" in text and "duration 50 µs" in text
    assert "64 MiB" in text and f"{64 * MIB / 50_000:.1f} GB/s" in text


def test_selection_draws_an_outline_and_dependency_arrows(chart, qtbot) -> None:
    before = chart.grab().toImage()
    chart.set_selection([1])
    qtbot.wait(10)
    after = chart.grab().toImage()
    kinds = sorted({seg[4] for seg in chart._arrows.segments})
    assert len(chart._arrows.segments) == 3  # 0 -> 1, 1 -> 2 (stream), 1 -> 4 (event)
    assert kinds == [0, 1]
    # the outline sits just above the kernel bar
    bar_top = _viewport_point(chart, 110 * US, "stream:s1")
    x = chart.plot_widget.viewport().mapTo(chart, bar_top).x()
    column_before = [before.pixelColor(x, y).rgb() for y in range(before.height())]
    column_after = [after.pixelColor(x, y).rgb() for y in range(after.height())]
    assert column_before != column_after
    text = chart.palette().color(QPalette.ColorRole.Text).rgb()
    assert text in column_after and column_before.count(text) < column_after.count(text)


def test_flagged_ops_get_a_red_outline(chart, qtbot) -> None:
    def red_pixels(image: QImage) -> int:
        red = QColor(FLAG_COLOUR).rgb()
        return sum(
            image.pixelColor(x, y).rgb() == red
            for x in range(0, image.width(), 2)
            for y in range(image.height())
        )

    assert red_pixels(chart.grab().toImage()) == 0
    chart.set_flags([4])
    qtbot.wait(10)
    assert red_pixels(chart.grab().toImage()) > 50
    assert "far from the model" in chart.legend.entries


def test_overlay_draws_the_other_timeline_as_outlines_on_matching_rows(chart, qtbot) -> None:
    other = small_timeline(stretch=1.1)
    chart.set_overlay(other)
    overlay = chart._overlay.rows
    # five device spans on stream rows, three copies on engine rows; no host calls, no kernels on compute
    assert overlay is not None and len(overlay.bar_x0) == 8
    assert set(overlay.bar_row.tolist()) <= {1, 2, 3, 4}  # streams and copy engines only
    before = chart.grab().toImage()
    chart.set_overlay(None)
    qtbot.wait(10)
    assert chart.grab().toImage() != before


def test_cursor_and_ruler(chart, qtbot) -> None:
    chart.set_cursor(100 * US)
    qtbot.wait(10)
    image = chart.grab().toImage()
    p = _viewport_point(chart, 100 * US, "stream:s2")
    p = chart.plot_widget.viewport().mapTo(chart, p)
    colours = {image.pixelColor(p.x() + dx, p.y()).rgb() for dx in (-1, 0, 1)}
    assert QColor("#D55E00").rgb() in colours
    chart.set_ruler_ns(10 * US, 60 * US)
    assert chart.ruler_text() == "Δ 50 µs"
    assert chart.ruler_ns() == (10 * US, 60 * US)


def test_keyboard_zoom_pan_and_fit(chart) -> None:
    vp = chart.plot_widget
    lo, hi = chart.x_range_ns()
    QTest.keyClick(vp, Qt.Key.Key_Plus)
    lo2, hi2 = chart.x_range_ns()
    assert hi2 - lo2 < hi - lo
    QTest.keyClick(vp, Qt.Key.Key_Right)
    lo3, hi3 = chart.x_range_ns()
    assert lo3 > lo2 and hi3 - lo3 == pytest.approx(hi2 - lo2, rel=1e-6)
    QTest.keyClick(vp, Qt.Key.Key_F)
    lo4, hi4 = chart.x_range_ns()
    assert lo4 <= 0 and hi4 >= 270 * US


def test_wheel_zooms_time_only(chart, qtbot) -> None:
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    vp = chart.plot_widget.viewport()
    pos = QPointF(_viewport_point(chart, 150 * US, "stream:s1"))
    event = QWheelEvent(
        pos,
        vp.mapToGlobal(pos),
        QPoint(0, 0),
        QPoint(0, 120),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    y_before = chart.plot_item.getViewBox().viewRange()[1]
    lo, hi = chart.x_range_ns()
    QApplication.sendEvent(vp, event)
    lo2, hi2 = chart.x_range_ns()
    assert hi2 - lo2 < hi - lo
    assert chart.plot_item.getViewBox().viewRange()[1] == pytest.approx(y_before)


def test_forced_row_layout_keeps_absent_rows_empty(chart) -> None:
    chart.set_row_layout(["host", "stream:s9", "stream:s2", "stream:s1"])
    assert chart.rows()[:4] == ["host", "stream:s9", "stream:s2", "stream:s1"]
    assert "compute" in chart.rows()
    rows = chart.rows_model
    assert 1 not in rows.bar_row.tolist()  # nothing on s9


def test_empty_and_missing_timelines(chart) -> None:
    chart.set_timeline(None)
    assert chart.rows() == []
    chart.grab()
    empty = TimelineBuilder([], []).build()
    chart.set_timeline(empty)
    assert chart.rows() == ["host"]
    chart.fit_all()
    chart.grab()


def test_dark_palette_gives_a_dark_background(chart, qtbot) -> None:
    pal = chart.palette()
    pal.setColor(QPalette.ColorRole.Base, QColor("#1e1e1e"))
    pal.setColor(QPalette.ColorRole.Text, QColor("#f0f0f0"))
    chart.setPalette(pal)
    qtbot.wait(10)
    image = chart.grab().toImage()
    assert _pixel(chart, image, 280 * US, "stream:s1").lightness() < 60


def test_shift_drag_measures_a_range_and_a_plain_drag_pans(chart, qtbot) -> None:
    from PySide6.QtGui import QMouseEvent
    from PySide6.QtWidgets import QApplication

    vp = chart.plot_widget.viewport()
    row = chart.rows().index("stream:s2")

    def drag(t_from: int, t_to: int, modifiers: Qt.KeyboardModifier) -> None:
        a = QPointF(chart.viewport_pos_of(t_from, row))
        b = QPointF(chart.viewport_pos_of(t_to, row))
        left, none = Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton
        steps = [a + (b - a) * (i / 5) for i in range(1, 6)]
        events = [
            QMouseEvent(
                QMouseEvent.Type.MouseButtonPress, a, vp.mapToGlobal(a), left, left, modifiers
            )
        ]
        events += [
            QMouseEvent(QMouseEvent.Type.MouseMove, p, vp.mapToGlobal(p), none, left, modifiers)
            for p in steps
        ]
        events.append(
            QMouseEvent(
                QMouseEvent.Type.MouseButtonRelease, b, vp.mapToGlobal(b), left, none, modifiers
            )
        )
        for ev in events:
            QApplication.sendEvent(vp, ev)
            qtbot.wait(20)  # pyqtgraph drops mouse moves that come faster than its frame rate

    before = chart.x_range_ns()
    drag(100 * US, 200 * US, Qt.KeyboardModifier.ShiftModifier)
    assert chart.x_range_ns() == before  # measuring does not pan
    lo, hi = chart.ruler_ns()
    assert lo == pytest.approx(100 * US, abs=2 * US) and hi == pytest.approx(200 * US, abs=2 * US)
    assert chart.ruler_text().startswith("Δ 10")  # about 100 µs
    QTest.keyClick(chart.plot_widget, Qt.Key.Key_Escape)
    assert chart.ruler_ns() is None
    drag(200 * US, 100 * US, Qt.KeyboardModifier.NoModifier)
    lo2, hi2 = chart.x_range_ns()
    assert lo2 == pytest.approx(before[0] + 100 * US, abs=3 * US)
    assert hi2 - lo2 == pytest.approx(before[1] - before[0], rel=1e-3)


def test_hover_on_the_compute_row_shows_sms_busy(chart, qtbot) -> None:
    QTest.mouseMove(chart.plot_widget.viewport(), _viewport_point(chart, 100 * US, "compute"))
    qtbot.waitUntil(lambda: bool(chart.hover_text), timeout=1000)
    assert chart.hover_text == "66 of 132 SMs busy (50 %) at 100 µs"


def test_zoomed_out_level_of_detail_covers_the_same_pixels_as_the_bars() -> None:
    from swimlanes.ui.gantt.rows import BarLod, build_rows, cull_bars
    from swimlanes.ui.gantt.synthetic import synthetic_timeline

    rows = build_rows(synthetic_timeline(60_000, n_streams=3, labels=False))
    n = len(rows.keys)
    lod = BarLod(rows.bar_x0, rows.bar_x1, rows.bar_row, n)
    width_px = 1200.0
    for view in ((0.0, rows.span_us), (rows.span_us * 0.2, rows.span_us * 0.6)):
        sx = width_px / (view[1] - view[0])
        dx = -view[0] * sx
        runs = lod.runs(view, sx, dx)
        assert runs is not None  # zoomed out far enough to use it
        width = rows.bar_x1 - rows.bar_x0
        exact = cull_bars(
            rows.bar_x0, rows.bar_x1, rows.bar_row, rows.bar_op, width.max(), view, sx, dx, n, 0.0
        )

        def raster(p0: np.ndarray, p1: np.ndarray, r: np.ndarray) -> np.ndarray:
            img = np.zeros((n, int(width_px) + 2), bool)
            for a, b, row in zip(p0, p1, r, strict=True):
                lo, hi = max(int(np.floor(a)), 0), min(int(np.ceil(max(b, a + 1))), img.shape[1])
                img[row, lo:hi] = True
            return img

        want = raster(*exact[:3])
        got = raster(*runs)
        grown = want.copy()  # a pixel of slack at the edges of each run
        grown[:, 1:] |= want[:, :-1]
        grown[:, :-1] |= want[:, 1:]
        assert not (got & ~grown).any()
        assert (want & got).sum() >= 0.98 * want.sum()
