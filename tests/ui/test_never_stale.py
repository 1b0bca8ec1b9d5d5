"""Nothing on screen looks current that is not: failed or stopped simulations, the time axis
after a document or a background result arrives, the ruler, and model errors without a match."""

from __future__ import annotations

import threading
import time

import pytest
from loading_helpers import open_measurement_now
from test_main_window import _edit, make_window

from swimlanes.model.generators import random_pipeline
from swimlanes.resources import measurements_dir
from swimlanes.ui.app import open_initial


@pytest.fixture
def window(qtbot, tmp_path):
    win = make_window(qtbot, tmp_path)
    open_initial(win, None)
    return win


def _fail_simulations(win, message: str = "the preset file is broken") -> None:
    def failing(pipeline, device, **kwargs):
        raise ValueError(message)

    win.sim_runner._simulate = failing


def test_a_failed_simulation_fades_the_schedule_and_drops_the_results(qtbot, window) -> None:
    assert window.simulated is not None and window.table.model.rowCount() > 0
    working = window.sim_runner._simulate
    _fail_simulations(window)
    _edit(window)
    assert window.simulated is None
    problem = window.charts.simulation_problem()
    assert "Simulation failed: the preset file is broken" in problem
    assert window.charts.simulated_chart.is_greyed()
    assert window.charts._sim_pane.problem.isVisible() or not window.isVisible()
    assert window.table.model.rowCount() == 0  # no rows that describe another document
    assert window.table.summary.text().startswith("Simulation failed: the preset file is broken")
    assert window.timing_label.text() == ""
    assert all(s == "—" for _, s, _, _ in window.summary.rows)
    assert not window.actions.play.isChecked()

    window.sim_runner._simulate = working  # the next edit simulates again
    _edit(window)
    qtbot.waitUntil(lambda: window.simulated is not None)
    assert window.charts.simulation_problem() == ""
    assert not window.charts.simulated_chart.is_greyed()
    assert window.summary.rows[0][1] != "—"


def test_a_background_result_refits_the_axis_unless_the_user_zoomed(qtbot, tmp_path) -> None:
    win = make_window(qtbot, tmp_path)
    win.open_example("two-streams")
    small = win.simulated.makespan_ns
    win.sim_runner.sync_op_limit = 50  # 300 ops: simulated in the worker
    big = random_pipeline(300, n_streams=4, seed=5)
    win.controller.set_pipeline(big)
    qtbot.waitUntil(lambda: win.simulated is not None and len(win.simulated) == 300, timeout=20000)
    assert win.simulated.makespan_ns > 2 * small
    lo, hi = win.charts.x_range_ns()
    assert lo <= 0 and hi >= win.simulated.makespan_ns  # the whole schedule, not the old axis

    win.charts.simulated_chart.zoom(0.1)  # the user looks closer: a new result keeps the view
    zoomed = win.charts.x_range_ns()
    _edit(win)
    qtbot.waitUntil(lambda: not win.sim_runner.is_busy() and len(win.simulated) == 301)
    assert win.charts.x_range_ns() == zoomed

    win.charts.fit_all()  # Fit follows the results again
    assert win.charts.follows_data()


def test_opening_another_document_clears_the_ruler_and_refits(qtbot, window) -> None:
    chart = window.charts.simulated_chart
    chart.set_ruler_ns(1000, 2000)
    chart.zoom(0.05)
    assert chart.ruler_ns() is not None and not window.charts.follows_data()
    window.open_example("launch-bound")
    assert chart.ruler_ns() is None
    lo, hi = window.charts.x_range_ns()
    assert lo <= 0 and hi >= window.simulated.makespan_ns

    chart.set_ruler_ns(1000, 2000)
    window.new_document()
    assert chart.ruler_ns() is None


def test_recovered_work_is_shown_whole(qtbot, tmp_path, monkeypatch) -> None:
    from swimlanes.ui import dialogs
    from swimlanes.ui.autosave import write_recovery

    big = random_pipeline(120, n_streams=3, seed=2)
    write_recovery(big, None, tmp_path / "recovery.json")
    win = make_window(qtbot, tmp_path)
    win.open_example("two-streams")
    win.charts.simulated_chart.zoom(0.01)
    monkeypatch.setattr(dialogs, "ask_restore_recovery", lambda *a: True)
    assert win.offer_recovery()
    lo, hi = win.charts.x_range_ns()
    assert lo <= 0 and hi >= win.simulated.makespan_ns


def test_no_model_error_for_a_measurement_of_another_pipeline(qtbot, tmp_path, monkeypatch) -> None:
    from swimlanes.ui import dialogs

    monkeypatch.setattr(dialogs, "ask_yes_no", lambda *a: False)  # keep my pipeline
    win = make_window(qtbot, tmp_path)
    win.open_example("two-streams")
    open_measurement_now(qtbot, win, measurements_dir() / "two-streams.h200.json")
    assert win.comparison is not None
    assert win.summary.rows[0][0] == "Makespan" and win.summary.rows[0][3].endswith("%")

    win.open_example("launch-bound")
    open_measurement_now(qtbot, win, measurements_dir() / "two-streams.h200.json")
    assert win.measured is not None and win.controller.pipeline.name != "two-streams"
    assert win.comparison is None
    assert all(err == "" for _, _, _, err in win.summary.rows)  # was "+74.1 %"


def test_a_long_simulation_runs_in_the_worker_and_can_be_stopped(qtbot, tmp_path) -> None:
    win = make_window(qtbot, tmp_path)
    win.open_example("two-streams")
    started, release = threading.Event(), threading.Event()

    def slow(pipeline, device, progress=None, cancel=None):
        started.set()
        deadline = time.monotonic() + 5  # on the UI thread nothing could cancel it
        while not (cancel and cancel()) and time.monotonic() < deadline:
            release.wait(0.01)
        raise type("SimulationCancelled", (Exception,), {})()

    win.sim_runner._simulate = slow
    program = win.controller.pipeline.program
    kernel = next(op for op in program if op.op == "kernel")
    from swimlanes.model.edits import SetOpFields

    # One op, but a billion blocks: far too much work for the UI thread.
    win.controller.push(SetOpFields(kernel.uid, {"blocks": 10**9}))
    assert win.sim_runner.is_busy()  # the edit returned at once: the UI thread is free
    qtbot.waitUntil(started.is_set)
    assert not win.sim_progress.isHidden()
    win.sim_progress.cancel_button.click()
    assert not win.sim_runner.is_busy()
    assert win.sim_progress.isHidden()
    assert "stopped" in win.charts.simulation_problem()
    assert win.simulated is None
    release.set()


def test_an_autosave_that_cannot_be_written_is_shown_in_the_window(qtbot, tmp_path) -> None:
    blocker = tmp_path / "full-disk"
    blocker.write_text("x", encoding="utf-8")
    win = make_window(qtbot, tmp_path)
    win.open_example("two-streams")
    win.autosaver._writer.path = blocker / "recovery.json"  # any OSError: full, read-only...
    win.autosaver._timer.setInterval(10)
    _edit(win)
    qtbot.waitUntil(lambda: not win.autosave_warning.isHidden(), timeout=3000)
    assert "full-disk" in win.autosave_warning.toolTip()
    assert "Autosave failed" in win.statusBar().currentMessage()
