"""Several host threads in the app: one host row per thread (named) in the chart, with the
calls each thread issued, and one host lane per thread in the editor."""

from __future__ import annotations

import pytest
from test_editor_helpers import Editor

from swimlanes.engine import simulate
from swimlanes.model.edits import SetOpHostThread
from swimlanes.model.validate import pipeline_from_dict
from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.gantt import GanttChart
from swimlanes.ui.gantt.rows import build_rows, op_tooltip


def two_threads() -> dict:
    kernel = {"op": "kernel", "blocks": 128, "threads": 1024, "duration_us": 100}
    return {
        "format": "swimlanes-pipeline",
        "version": 1,
        "name": "two threads",
        "host_threads": [{"name": "main"}, {"name": "worker"}],
        "streams": [
            {"name": "main ptds", "kind": "per_thread_default", "host_thread": "main"},
            {"name": "worker ptds", "kind": "per_thread_default", "host_thread": "worker"},
        ],
        "program": [
            {**kernel, "stream": "main ptds", "label": "A"},
            {**kernel, "stream": "worker ptds", "label": "B"},
            {"op": "device_sync"},
            {"op": "host", "duration_us": 20, "host_thread": "worker"},
        ],
    }


MAIN, WORKER = "host:gpu0#thread:main", "host:gpu0#thread:worker"


@pytest.fixture
def chart(qtbot) -> GanttChart:
    c = GanttChart()
    qtbot.addWidget(c)
    c.resize(1000, 400)
    c.show()
    qtbot.waitExposed(c)
    c.set_timeline(simulate(pipeline_from_dict(two_threads()), "ideal"))
    qtbot.wait(10)
    return c


def _ops_on(chart: GanttChart, key: str) -> set[int]:
    rows = chart.rows_model
    return set(rows.bar_op[rows.bar_row == chart.rows().index(key)].tolist())


def test_each_host_thread_has_a_named_row_with_its_calls(chart) -> None:
    rows = chart.rows()
    assert rows[:2] == [MAIN, WORKER]
    assert chart.row_titles()[:2] == ["main host thread", "worker host thread"]
    assert _ops_on(chart, MAIN) == {0, 2}
    assert _ops_on(chart, WORKER) == {1, 3}
    # both threads' kernels overlap on the device: their per-thread streams do not wait
    tl = chart.rows_model.timeline
    assert tl is not None and tl.start[0] == tl.start[1] == 0


def test_a_tooltip_names_the_thread() -> None:
    tl = simulate(pipeline_from_dict(two_threads()), "ideal")
    assert "host thread worker" in op_tooltip(tl, 3)
    # the rows are the same whichever chart draws them (the comparison charts too)
    assert build_rows(tl).keys[:2] == [MAIN, WORKER]


def test_the_editor_has_a_host_lane_per_thread(qtbot) -> None:
    ed = Editor(pipeline_from_dict(two_threads()))
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    lanes = ed.lanes.lanes()
    main, worker = li.thread_lane("main", "gpu0"), li.thread_lane("worker", "gpu0")
    assert lanes[1:3] == [main, worker]
    c = ed.controller
    sync, host = c.pipeline.program[2], c.pipeline.program[3]
    assert ed.lanes.lane_of(sync) == main and ed.lanes.lane_of(host) == worker
    # moving the host work to the main thread moves its block to main's lane, undoably
    c.push(SetOpHostThread([host.uid], "main"))
    assert ed.lanes.lane_of(host) == main
    centre = ed.lanes._blocks[host.uid].sceneBoundingRect().center().y()
    assert ed.lanes.lane_y(main) <= centre < ed.lanes.lane_y(main) + li.LANE_H
    c.undo_stack.undo()
    assert ed.lanes.lane_of(host) == worker and host.host_thread == "worker"


def test_a_pipeline_without_threads_keeps_its_one_host_lane(qtbot) -> None:
    doc = two_threads()
    del doc["host_threads"]
    for s in doc["streams"]:
        del s["host_thread"]
    doc["program"][3].pop("host_thread")
    ed = Editor(pipeline_from_dict(doc))
    qtbot.addWidget(ed)
    assert ed.lanes.lanes()[0] == li.HOST_LANE
    assert build_rows(simulate(pipeline_from_dict(doc), "ideal")).keys[0] == "host"
