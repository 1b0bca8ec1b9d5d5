"""Finding ops in the charts: the query matcher (Qt-free) and the search bar over the charts
(Ctrl+F, stepping with Enter/F3, highlights, the filter)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QCursor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from test_gantt_chart import US, small_timeline
from test_gantt_side_by_side import measured_timeline
from test_main_window import make_window

from swimlanes.timeline.timeline import TimelineBuilder
from swimlanes.ui.app import open_initial
from swimlanes.ui.gantt.search import (
    extent_ns,
    framed_range,
    match_ops,
    ordered_matches,
    parse_query,
)
from swimlanes.ui.gantt.side_by_side import ComparisonCharts
from swimlanes.ui.gantt.synthetic import synthetic_timeline
from swimlanes.ui.main_window import MainWindow
from swimlanes.ui.style import OP_TITLE

SHIFT = Qt.KeyboardModifier.ShiftModifier


# -- the matcher (no Qt) ---------------------------------------------------------------------
def _found(query: str, tl=None) -> list[int]:
    tl = tl or small_timeline()
    return tl.index[match_ops(tl, query, OP_TITLE)].tolist()


def test_the_text_is_found_in_labels_case_insensitively() -> None:
    assert _found("COPY") == [0, 2, 3]
    assert _found("copy  in") == [0, 3]
    assert _found("in 2") == [3]
    assert _found("copy 2") == []  # the words as typed, not each anywhere
    assert _found("nothing like it") == []
    assert _found("") == [] and _found("   ") == []


def test_kind_and_stream_terms_narrow_the_search() -> None:
    assert _found("kind:kernel") == [1, 4]
    assert _found("kind:Kernel stream:s2") == [4]
    assert _found("kind:h2d copy") == [0, 3]
    assert _found("kind:copy") == [0, 2, 3]  # the kind's title: "H2D copy", "D2H copy"
    assert _found("kind:kernel kind:d2h") == [1, 2, 4]  # alternatives on one field
    assert _found("stream:s1 kind:kernel square") == [1]
    assert _found("engine:h2d") == [0, 3]
    assert _found("kind:") == []  # an unfinished term finds nothing yet


def test_an_exact_stream_name_wins_over_names_containing_it() -> None:
    b = TimelineBuilder(["s1", "s10"], ["compute"])
    for i, stream in enumerate(["s1", "s10", "s1"]):
        b.add(
            index=i,
            kind="kernel",
            stream=stream,
            engine="compute",
            issue_start=i,
            issue_end=i,
            start=i,
            end=i + 1,
        )
    tl = b.build()
    assert _found("stream:s1", tl) == [0, 2]
    assert _found("stream:S1", tl) == [0, 2]
    assert _found("stream:s", tl) == [0, 1, 2]


def test_unlabelled_ops_match_the_kind_title_their_bars_show() -> None:
    b = TimelineBuilder(["s1"], ["compute"])
    b.add(
        index=0,
        kind="kernel",
        stream="s1",
        engine="compute",
        issue_start=0,
        issue_end=0,
        start=0,
        end=5,
        label="",
    )
    b.add(
        index=1,
        kind="memset",
        stream="s1",
        engine="compute",
        issue_start=0,
        issue_end=0,
        start=5,
        end=9,
        label="",
    )
    b.add(
        index=2,
        kind="kernel",
        stream="s1",
        engine="compute",
        issue_start=0,
        issue_end=0,
        start=9,
        end=12,
        label="gemm",
    )
    tl = b.build()
    assert _found("kernel", tl) == [0]
    assert _found("memset", tl) == [1]
    assert _found("gemm", tl) == [2]


def test_parse_query_reads_fields_and_an_unfinished_quote() -> None:
    q = parse_query('kind:kernel stream:s1 "gemm big')
    assert q.kinds == ["kernel"] and q.streams == ["s1"] and q.text == "gemm big"
    assert parse_query('kind:"H2D copy"').kinds == ["h2d copy"]
    assert parse_query("kinds:x").words == ["kinds:x"]  # not a field: a word


def test_matches_come_in_time_order_and_frame_with_a_margin() -> None:
    tl = small_timeline()
    rows = ordered_matches(tl, match_ops(tl, "copy"))
    assert tl.index[rows].tolist() == [0, 3, 2]  # 10, 60 and 160 us
    assert extent_ns(tl, rows) == (10 * US, 200 * US)
    assert extent_ns(tl, np.flatnonzero(tl.index == 5)) == (10 * US, 270 * US)  # host only
    assert framed_range(100, 200, margin=0.1, min_width=1) == (90, 210)
    assert framed_range(5000, 5000, min_width=1000) == (4450, 5550)


@pytest.mark.benchmark
def test_a_million_ops_are_searched_in_a_few_tens_of_milliseconds() -> None:
    """A speed target: run with ``pytest -m benchmark``, not by make test."""
    tl = synthetic_timeline(1_000_000)
    match_ops(tl, "warm up")  # the distinct labels are indexed once per timeline
    timings = []
    for query in ("kernel 12", "kind:kernel stream:s1 gemm", "stream:s2 H2D 9"):
        t = time.perf_counter()
        mask = match_ops(tl, query, OP_TITLE)
        ordered_matches(tl, mask)
        timings.append(time.perf_counter() - t)
    assert mask.sum() > 0
    assert max(timings) < 0.25, timings  # about 30 ms each on a laptop core


def test_a_million_op_timeline_is_searched_by_label_kind_and_stream() -> None:
    tl = synthetic_timeline(1_000_000)
    for query in ("kernel 12", "stream:s2 H2D 9"):
        mask = match_ops(tl, query, OP_TITLE)
        rows = ordered_matches(tl, mask)
        assert len(rows) == int(mask.sum()) > 0, query
        assert all(query.split()[-2] in tl.labels[r] for r in rows[:50]), query


# -- the search bar over the charts ----------------------------------------------------------
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
    QCursor.setPos(c.mapToGlobal(QPoint(-50, -50)))
    return c


def _search(qtbot, charts: ComparisonCharts, text: str) -> None:
    charts.search.open()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is charts.search.bar.field)
    charts.search.bar.field.clear()
    QTest.keyClicks(charts.search.bar.field, text)
    qtbot.waitUntil(lambda: charts.search.bar.count_label.text() != "", timeout=2000)


def test_typing_counts_matches_after_a_pause_and_outlines_them(charts, qtbot) -> None:
    bar = charts.search.bar
    charts.search.open()
    QTest.keyClicks(bar.field, "copy")
    assert charts.search.match_count() == 0  # debounced: not searched per keystroke
    qtbot.waitUntil(lambda: bar.count_label.text() == "3 matches", timeout=2000)
    sim, meas = charts.simulated_chart, charts.measured_chart
    # each op's bars: on its stream, on its engine, and its call on the host row
    assert sim.search_marks().match_bar_count() == 9
    assert meas.search_marks().match_bar_count() == 9
    assert charts.search.matched_indexes(meas) == [0, 2, 3]


def test_enter_steps_through_matches_centring_and_selecting_each(charts, qtbot) -> None:
    _search(qtbot, charts, "kind:kernel")
    field = charts.search.bar.field
    charts.set_x_range_ns(0, 50 * US)  # before both kernels: the first step finds the first
    with qtbot.waitSignal(charts.selection_changed) as sig:
        QTest.keyClick(field, Qt.Key.Key_Return)
    assert sig.args == [[1]]
    assert charts.search.bar.count_label.text() == "1 of 2"
    lo, hi = charts.x_range_ns()
    assert (lo + hi) / 2 == pytest.approx(110 * US, abs=US)  # kernel 1: 60..160 us
    assert charts.simulated_chart.selection() == charts.measured_chart.selection() == [1]
    QTest.keyClick(field, Qt.Key.Key_Return)
    assert charts.selection() == [4]
    assert charts.search.bar.count_label.text() == "2 of 2"
    QTest.keyClick(field, Qt.Key.Key_Return)  # wraps round
    assert charts.selection() == [1]
    QTest.keyClick(field, Qt.Key.Key_Return, SHIFT)
    assert charts.selection() == [4]
    QTest.keyClick(field, Qt.Key.Key_F3, SHIFT)
    assert charts.selection() == [1]
    assert charts.search.bar.count_label.text() == "1 of 2"


def test_filter_dims_the_bars_that_do_not_match(charts, qtbot) -> None:
    _search(qtbot, charts, "cube")
    sim = charts.simulated_chart
    row = sim.rows().index("stream:s1")
    probe = sim.viewport_pos_of(110 * US, row).toPoint()  # the kernel "square": no match

    def colour_at() -> tuple[int, int, int]:
        sim.plot_widget.viewport().repaint()
        image = sim.plot_widget.viewport().grab().toImage()
        c = image.pixelColor(probe)
        return c.red(), c.green(), c.blue()

    before = colour_at()
    charts.search.bar.filter_button.click()
    assert sim.search_marks().is_dimming()
    after = colour_at()
    assert sum(after) > sum(before) + 150  # veiled towards the white background
    charts.search.bar.filter_button.click()
    assert colour_at() == before


def test_esc_closes_the_search_and_clears_the_highlights(charts, qtbot) -> None:
    _search(qtbot, charts, "copy")
    assert charts.simulated_chart.search_marks().match_bar_count() > 0
    QTest.keyClick(charts.search.bar.field, Qt.Key.Key_Escape)
    assert not charts.search.is_open()
    assert charts.simulated_chart.search_marks().match_bar_count() == 0
    assert QApplication.focusWidget() is charts.simulated_chart.plot_widget


def test_a_new_result_keeps_the_search_and_the_current_match(charts, qtbot) -> None:
    _search(qtbot, charts, "kind:kernel")
    QTest.keyClick(charts.search.bar.field, Qt.Key.Key_Return)
    QTest.keyClick(charts.search.bar.field, Qt.Key.Key_Return)
    assert charts.selection() == [4]
    charts.set_simulated(small_timeline(stretch=1.5))  # an edit's new schedule
    assert charts.search.match_count() == 2
    assert charts.search.bar.count_label.text() == "2 of 2"


@pytest.fixture
def window(qtbot, tmp_path: Path) -> MainWindow:
    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    win.show()
    qtbot.waitExposed(win)
    win.activateWindow()
    qtbot.waitUntil(lambda: win.simulated is not None)
    return win


def test_ctrl_f_from_the_editor_finds_ops_and_selects_them_in_the_editor(window, qtbot) -> None:
    window.lanes.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.lanes)
    QTest.keyClick(window.lanes, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    search = window.charts.search
    assert search.is_open()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is search.bar.field)
    QTest.keyClicks(search.bar.field, "kind:kernel")
    QTest.keyClick(search.bar.field, Qt.Key.Key_Return)
    tl = window.simulated
    kernels = sorted(tl.index[match_ops(tl, "kind:kernel", OP_TITLE)].tolist())
    assert search.match_count() == len(kernels) > 0
    chosen = window.controller.selected_indexes()
    assert len(chosen) == 1 and chosen[0] in kernels
    assert window.charts.selection() == chosen
    QTest.keyClick(window, Qt.Key.Key_F3)
    assert window.controller.selected_indexes() != chosen
    assert search.bar.count_label.text() == f"2 of {len(kernels)}"


def test_collapsing_a_row_group_keeps_the_matches_and_the_filter(charts, qtbot) -> None:
    _search(qtbot, charts, "copy")
    charts.search.set_filter(True)
    sim = charts.simulated_chart
    assert sim.search_marks().match_bar_count() == 9
    sim.set_group_collapsed("streams", True)  # one summary row for s1 and s2
    assert len(sim.rows()) < 7
    marks = sim.search_marks()
    assert marks.match_bar_count() == 9 and marks.is_dimming()
    assert charts.search.bar.count_label.text() == "3 matches"


def test_the_filter_keeps_kernels_in_their_colours_by_name(charts, qtbot) -> None:
    sim = charts.simulated_chart
    sim.set_kernels_by_name(True)
    _search(qtbot, charts, "kind:kernel")
    probe = sim.viewport_pos_of(110 * US, sim.rows().index("stream:s1")).toPoint()  # "square"

    def colour_at() -> tuple[int, int, int]:
        sim.plot_widget.viewport().repaint()
        c = sim.plot_widget.viewport().grab().toImage().pixelColor(probe)
        return c.red(), c.green(), c.blue()

    before = colour_at()
    charts.search.set_filter(True)
    assert colour_at() == before
