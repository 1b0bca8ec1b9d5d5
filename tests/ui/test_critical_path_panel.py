"""The Critical path tab: steps, least-slack ops, selection, and large timelines off the UI
thread."""

from __future__ import annotations

import sys
from pathlib import Path

from swimlanes.engine import get_preset, simulate
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_path
from swimlanes.ui.critical_path_panel import SYNC_LIMIT, CriticalPathPanel

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def _timeline(name: str = "chunked-overlap"):
    return simulate(load_pipeline(example_path(name)), get_preset("h200"))


def test_the_tab_lists_the_path_and_selects_ops(qtbot) -> None:
    panel = CriticalPathPanel()
    qtbot.addWidget(panel)
    tl = _timeline()
    panel.set_timeline(tl)
    steps = panel.path().steps
    assert panel.steps.rowCount() == len(steps) and panel.slack.rowCount() > 0
    assert "steps over" in panel.summary.text() and "copies" in panel.summary.text()
    assert panel.steps.item(1, 6).text() == "its call"
    with qtbot.waitSignal(panel.ops_selected) as sel:
        panel.steps.selectRow(len(steps) - 1)
    assert sel.args[0] == [int(tl.index[steps[-1].row])]
    with qtbot.waitSignal(panel.ops_selected) as sel:
        panel.select_path.click()
    assert sel.args[0] == panel.path_ops() and len(sel.args[0]) >= 5


def test_the_least_slack_ops_come_first(qtbot) -> None:
    panel = CriticalPathPanel()
    qtbot.addWidget(panel)
    panel.set_timeline(_timeline())
    shown = [panel.slack.item(r, 3).text() for r in range(panel.slack.rowCount())]
    slack = sorted(
        int(v) for v in panel.path().device_slack_ns if v >= 0
    )  # every op's; those shown are the ones off the path, in the same order
    assert shown and len(shown) <= len(slack)


def test_a_large_timeline_is_analysed_off_the_ui_thread(qtbot) -> None:
    from bench_engine import make_pipeline

    tl = simulate(make_pipeline(SYNC_LIMIT * 2), get_preset("h200"))
    panel = CriticalPathPanel()
    qtbot.addWidget(panel)
    panel.set_timeline(tl)
    assert "Finding the critical path" in panel.summary.text() and panel.path() is None
    qtbot.waitUntil(lambda: panel.path() is not None, timeout=30_000)
    assert panel.steps.rowCount() == len(panel.path().steps)
    panel.shutdown()


def test_a_newer_timeline_wins_and_none_clears(qtbot) -> None:
    panel = CriticalPathPanel()
    qtbot.addWidget(panel)
    panel.set_timeline(_timeline("two-streams"))
    panel.set_timeline(None)
    assert panel.steps.rowCount() == 0 and not panel.select_path.isEnabled()
    assert panel.summary.text() == "No timeline yet."


def test_the_window_tab_follows_edits_and_selects_the_path(qtbot, tmp_path) -> None:
    from test_main_window import make_window

    from swimlanes.model.document import Op
    from swimlanes.model.edits import InsertOps
    from swimlanes.ui.app import open_initial

    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    tabs = win.bottom_tabs
    assert win.critical.path() is None  # hidden: not computed
    tabs.setCurrentWidget(win.critical)
    assert win.critical.path() is not None and win.critical.steps.rowCount() > 0
    before = win.critical.path().makespan_ns
    # A long kernel on a stream of its own becomes the path.
    long = Op("kernel", stream="s1", label="K long", blocks=1, threads=32, duration_us=500_000.0)
    assert win.controller.push(InsertOps(len(win.controller.pipeline.program), [long]))
    qtbot.waitUntil(lambda: win.critical.path() is not None
                    and win.critical.path().makespan_ns != before)  # fmt: skip
    labels = [win.critical.steps.item(r, 7).text() for r in range(win.critical.steps.rowCount())]
    assert "K long" in labels
    win.critical.select_path.click()
    assert sorted(win.controller.selected_indexes()) == win.critical.path_ops()


def test_the_tables_stack_in_a_tall_strip_and_sit_side_by_side_in_a_wide_one(qtbot) -> None:
    from PySide6.QtCore import Qt

    panel = CriticalPathPanel()
    qtbot.addWidget(panel)
    panel.resize(300, 700)
    panel.show()
    qtbot.waitUntil(lambda: panel.split.orientation() == Qt.Orientation.Vertical)
    panel.resize(1200, 250)
    qtbot.waitUntil(lambda: panel.split.orientation() == Qt.Orientation.Horizontal)
