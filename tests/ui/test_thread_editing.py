"""Editing host threads in the editor: the inspector's "Issued by" and stream "Host thread"
fields, dragging work onto another thread's host lane, and adding, renaming and removing
threads from a host lane's menu; every change one undo step, every refusal said."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF
from test_editor_helpers import Editor, drop_kind

from swimlanes.model.validate import pipeline_from_dict, validate
from swimlanes.ui.editor import lane_items as li


def threads_doc() -> dict:
    kernel = {"op": "kernel", "blocks": 128, "threads": 1024, "duration_us": 100}
    return {
        "format": "swimlanes-pipeline",
        "version": 1,
        "name": "threads",
        "host_threads": [{"name": "main"}, {"name": "worker"}],
        "streams": [
            {"name": "main ptds", "kind": "per_thread_default", "host_thread": "main"},
            {"name": "worker ptds", "kind": "per_thread_default", "host_thread": "worker"},
            {"name": "shared"},
        ],
        "program": [
            {**kernel, "stream": "main ptds", "label": "A"},
            {**kernel, "stream": "worker ptds", "label": "B"},
            {**kernel, "stream": "shared", "label": "C"},
            {"op": "host", "duration_us": 20, "host_thread": "worker", "label": "prep"},
            {"op": "device_sync"},
        ],
    }


def _editor(qtbot, doc: dict) -> Editor:
    ed = Editor(pipeline_from_dict(doc))
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    return ed


@pytest.fixture
def editor(qtbot) -> Editor:
    return _editor(qtbot, threads_doc())


def _said(ed: Editor) -> list[str]:
    out: list[str] = []
    ed.controller.error.connect(out.append)
    return out


def _choose(combo, data) -> None:
    index = combo.findData(data)
    assert index >= 0, data
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


def test_the_inspector_chooses_the_thread_that_issues_an_op_with_undo(editor) -> None:
    c, insp = editor.controller, editor.inspector
    kernel = c.pipeline.program[2]  # C on the shared stream: main's by default
    c.set_selection([kernel.uid])
    assert insp.op_form.isRowVisible(insp.fields["host_thread"])
    items = [insp.op_thread.itemText(i) for i in range(insp.op_thread.count())]
    assert items == ["default (main)", "main", "worker"]
    assert insp.op_thread.currentIndex() == 0
    _choose(insp.op_thread, "worker")
    assert kernel.host_thread == "worker" and c.pipeline.op_thread(kernel) == "worker"
    assert insp.op_thread.currentData() == "worker"
    c.undo_stack.undo()
    assert kernel.host_thread is None and insp.op_thread.currentIndex() == 0


def test_the_inspector_refuses_another_threads_per_thread_stream_and_says_why(editor) -> None:
    c, insp = editor.controller, editor.inspector
    a = c.pipeline.program[0]
    c.set_selection([a.uid])
    before = c.pipeline.to_dict()
    _choose(insp.op_thread, "worker")
    assert c.pipeline.to_dict() == before and c.undo_stack.count() == 0
    error = insp.fields["host_thread"].error_text()
    assert "per-thread default stream" in error and "'worker' cannot issue on it" in error
    assert insp.op_thread.currentIndex() == 0  # the field shows what the op still has


def test_the_thread_field_shows_only_once_threads_are_declared(qtbot) -> None:
    doc = threads_doc()
    del doc["host_threads"]
    doc["streams"] = [{"name": "shared"}]
    doc["program"] = [doc["program"][2], {"op": "device_sync"}]
    ed = _editor(qtbot, doc)
    c, insp = ed.controller, ed.inspector
    c.set_selection([c.pipeline.program[0].uid])
    assert not insp.op_form.isRowVisible(insp.fields["host_thread"])
    c.set_selected_stream("shared")
    assert not insp.stream_form.isRowVisible(insp.stream_fields["host_thread"])


def test_the_stream_page_gives_a_stream_to_a_thread_with_undo(editor) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selected_stream("shared")
    assert insp.stream_form.isRowVisible(insp.stream_fields["host_thread"])
    _choose(insp.stream_thread, "worker")
    kernel = c.pipeline.program[2]
    assert c.pipeline.stream("shared").host_thread == "worker"
    assert c.pipeline.op_thread(kernel) == "worker"
    c.undo_stack.undo()
    assert c.pipeline.stream("shared").host_thread is None
    # the legacy default stream is every thread's: its field is not editable
    c.set_selected_stream("default")
    assert not insp.stream_thread.isEnabled()


def _to_lane(ed: Editor, index: int, lane: str) -> QPointF:
    return QPointF(ed.lanes.column_x(index) + 5, ed.lanes.lane_y(lane) + 20)


def test_dragging_host_work_onto_another_threads_lane_moves_it_there(editor) -> None:
    c, lanes = editor.controller, editor.lanes
    prep = c.pipeline.program[3]
    main, worker = li.thread_lane("main", "gpu0"), li.thread_lane("worker", "gpu0")
    assert lanes.lane_of(prep) == worker
    lanes.drag_blocks_to([prep.uid], prep.uid, _to_lane(editor, 3, main))
    # main is the default thread: the op names none, as a file written by hand would
    assert prep.host_thread is None and c.pipeline.op_thread(prep) == "main"
    assert lanes.lane_of(prep) == main and not validate(c.pipeline)
    c.undo_stack.undo()
    assert prep.host_thread == "worker" and lanes.lane_of(prep) == worker


def test_dragging_a_kernel_onto_a_threads_lane_lets_that_thread_issue_it(editor) -> None:
    c, lanes = editor.controller, editor.lanes
    kernel = c.pipeline.program[2]
    lanes.drag_blocks_to(
        [kernel.uid], kernel.uid, _to_lane(editor, 2, li.thread_lane("worker", "gpu0"))
    )
    assert kernel.host_thread == "worker" and kernel.stream == "shared"
    c.undo_stack.undo()
    assert kernel.host_thread is None


def test_a_drop_another_thread_cannot_issue_is_refused_with_a_message(editor) -> None:
    c, lanes = editor.controller, editor.lanes
    said = _said(editor)
    a = c.pipeline.program[0]
    before = c.pipeline.to_dict()
    lanes.drag_blocks_to([a.uid], a.uid, _to_lane(editor, 0, li.thread_lane("worker", "gpu0")))
    assert c.pipeline.to_dict() == before and c.undo_stack.count() == 0
    assert said and "per-thread default stream" in said[-1] and "'worker'" in said[-1]


def test_a_host_op_dropped_from_the_palette_on_a_threads_lane_is_issued_by_it(editor) -> None:
    c, lanes = editor.controller, editor.lanes
    assert drop_kind(lanes, "host", 1, li.thread_lane("worker", "gpu0"))
    new = c.selected_ops()[0]
    assert new.op == "host" and c.pipeline.op_thread(new) == "worker"
    assert lanes.lane_of(new) == li.thread_lane("worker", "gpu0")


def test_adding_a_thread_to_a_one_thread_program_adds_a_lane_beside_its_own(qtbot) -> None:
    doc = threads_doc()
    del doc["host_threads"]
    doc["streams"] = [{"name": "shared"}]
    doc["program"] = [doc["program"][2], {"op": "device_sync"}]
    ed = _editor(qtbot, doc)
    c, menus = ed.controller, ed.lanes.menus
    before = c.pipeline.to_dict()
    assert menus.add_thread(name="loader")
    assert [t.name for t in c.pipeline.host_threads] == ["main", "loader"]
    assert ed.lanes.lanes()[1:3] == [
        li.thread_lane("main", "gpu0"),
        li.thread_lane("loader", "gpu0"),
    ]
    assert c.pipeline.op_thread(c.pipeline.program[1]) == "main"  # the old thread's work stays
    c.undo_stack.undo()  # one step
    assert c.pipeline.to_dict() == before and ed.lanes.lanes()[0] == li.HOST_LANE


def test_a_host_lanes_menu_adds_renames_and_removes_threads(editor) -> None:
    c, menus = editor.controller, editor.lanes.menus
    said = _said(editor)
    worker = li.thread_lane("worker", "gpu0")
    menu = menus.thread_menu(worker)
    titles = [a.text() for a in menu.actions() if a.text()]
    assert titles == ["Add host thread\u2026", "Rename host thread\u2026", "Remove host thread",
                      "Add stream"]  # fmt: skip
    assert menus.add_thread(name="io")
    assert [t.name for t in c.pipeline.host_threads] == ["main", "worker", "io"]
    assert not menus.add_thread(name="worker")
    assert "already a host thread" in said[-1]
    menus.ask_text = lambda *_a: "bg"  # what the user types in the dialog
    assert menus.rename_thread("worker")
    assert c.pipeline.stream("worker ptds").host_thread == "bg"
    assert c.pipeline.program[3].host_thread == "bg"
    assert not menus.remove_thread("bg")
    assert "used by stream worker ptds and 1 op" in said[-1]
    assert menus.remove_thread("io")
    assert [t.name for t in c.pipeline.host_threads] == ["main", "bg"]
    for _ in range(3):
        c.undo_stack.undo()
    assert [t.name for t in c.pipeline.host_threads] == ["main", "worker"]


def test_the_menu_of_a_devices_own_thread_cannot_rename_it(qtbot) -> None:
    doc = threads_doc()
    del doc["host_threads"]
    doc["streams"] = [{"name": "shared"}]
    doc["program"] = [doc["program"][2]]
    ed = _editor(qtbot, doc)
    menu = ed.lanes.menus.thread_menu(li.HOST_LANE)
    actions = {a.text(): a for a in menu.actions() if a.text()}
    assert actions["Add host thread\u2026"].isEnabled()
    assert not actions["Rename host thread\u2026"].isEnabled()
    assert not actions["Remove host thread"].isEnabled()
