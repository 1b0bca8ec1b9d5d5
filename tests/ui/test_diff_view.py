"""Diff with another timeline: two schedules on one axis, their delta and per-op table."""

from __future__ import annotations

from test_main_window import make_window

from swimlanes.engine import get_preset, simulate
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_path, measurements_dir
from swimlanes.ui.app import open_initial
from swimlanes.ui.diff_view import DiffWindow


def _sim(name: str, device: str):
    return simulate(load_pipeline(example_path(name)), get_preset(device))


def test_two_devices_side_by_side_with_their_deltas(qtbot) -> None:
    a, b = _sim("chunked-overlap", "h200"), _sim("chunked-overlap", "ideal")
    win = DiffWindow(a, b)
    qtbot.addWidget(win)
    assert "B - A: -" in win.summary.text() and "matched by index" in win.summary.text()
    assert win.table.rowCount() == len(a)
    assert win.chart_a.left_axis_width == win.chart_b.left_axis_width
    assert win.chart_a.rows() == win.chart_b.rows()
    # biggest start change first: the last chunk's D2H moved most
    assert win.table.item(0, 10).text() == "D2H chunk 3"
    win.table.selectRow(0)
    assert win.chart_a.selection() == [11] and win.chart_b.selection() == [11]
    win.chart_a.set_x_range_ns(0, 1_000_000)
    qtbot.waitUntil(lambda: abs(win.chart_b.x_range_ns()[1] - 1_000_000) < 10_000)


def test_the_window_diffs_its_schedule_with_a_file(qtbot, tmp_path) -> None:
    win = make_window(qtbot, tmp_path)
    open_initial(win, None)  # chunked-overlap
    run = measurements_dir() / "chunked-overlap.h200.json"
    assert win.diff_with(str(run))
    qtbot.waitUntil(lambda: bool(getattr(win, "diff_windows", [])), timeout=20_000)
    diff = win.diff_windows[-1]
    qtbot.addWidget(diff)
    assert diff.diff.b.source == "measured" and diff.diff.matched_by == "index"
    assert "B - A" in win.statusBar().currentMessage()
