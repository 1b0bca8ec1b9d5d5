"""The document controller: undo stack, dirty state, files and the shared selection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_editor_helpers import sample

from swimlanes.model import Op, PipelineError
from swimlanes.model.edits import InsertOps, MoveOps, RemoveOps, SetOpFields
from swimlanes.ui.document_controller import DocumentController


@pytest.fixture
def controller(qtbot) -> DocumentController:
    return DocumentController(sample())


def test_push_undo_redo_and_dirty_state(controller: DocumentController, qtbot) -> None:
    c = controller
    original = c.pipeline.to_dict()
    assert not c.is_dirty
    with qtbot.waitSignal(c.changed):
        assert c.push(SetOpFields(c.pipeline.program[1].uid, {"duration_us": 5.0}))
    assert c.is_dirty and c.title == "sample *"
    edited = c.pipeline.to_dict()
    c.undo_stack.undo()
    assert c.pipeline.to_dict() == original and not c.is_dirty
    c.undo_stack.redo()
    assert c.pipeline.to_dict() == edited


def test_refused_edit_emits_error_and_changes_nothing(
    controller: DocumentController, qtbot
) -> None:
    c = controller
    before = c.pipeline.to_dict()
    with qtbot.waitSignal(c.error) as blocker:
        assert not c.push(SetOpFields(c.pipeline.program[1].uid, {"threads": 0}))
    assert blocker.args == ["K0 (#1): threads must be a positive integer"]
    assert c.pipeline.to_dict() == before and c.undo_stack.count() == 0


def test_drag_moves_merge_but_separate_drags_do_not(controller: DocumentController) -> None:
    c = controller
    uid = c.pipeline.program[0].uid
    for index in (1, 2, 3):
        assert c.push(MoveOps([uid], index, gesture="drag-1"))
    assert c.undo_stack.count() == 1 and c.undo_stack.undoText() == "Move in"
    assert c.push(MoveOps([uid], 0, gesture="drag-2"))
    assert c.undo_stack.count() == 2
    c.undo_stack.undo()
    assert c.pipeline.op_index(uid) == 3
    c.undo_stack.undo()
    assert c.pipeline.to_dict() == sample().to_dict()


def test_merging_stops_at_the_saved_state(controller: DocumentController, tmp_path: Path) -> None:
    c = controller
    uid = c.pipeline.program[1].uid
    c.push(SetOpFields(uid, {"duration_us": 1.0}))
    c.save(tmp_path / "a.json")
    c.push(SetOpFields(uid, {"duration_us": 2.0}))
    assert c.undo_stack.count() == 2  # undo returns to exactly what was saved
    c.undo_stack.undo()
    assert not c.is_dirty


def test_save_load_round_trip_and_path(
    controller: DocumentController, qtbot, tmp_path: Path
) -> None:
    c = controller
    with pytest.raises(ValueError, match="no file yet"):
        c.save()
    c.push(InsertOps(0, [Op("host", duration_us=7.0)]))
    path = tmp_path / "p.json"
    with qtbot.waitSignal(c.path_changed):
        c.save(path)
    assert c.path == path and not c.is_dirty and c.title == "p.json"
    assert json.loads(path.read_text())["program"][0] == {"op": "host", "duration_us": 7.0}
    saved = c.pipeline.to_dict()
    other = DocumentController()
    other.load(path)
    assert other.pipeline.to_dict() == saved and other.path == path
    assert other.undo_stack.count() == 0 and not other.is_dirty
    c.push(RemoveOps([c.pipeline.program[0].uid]))
    c.save()  # to the same path
    assert len(json.loads(path.read_text())["program"]) == 6


def test_load_of_a_bad_file_raises_and_keeps_the_document(
    controller: DocumentController, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "swimlanes-pipeline", "version": 1, "program": [{"op": "h2d"}]}')
    with pytest.raises(PipelineError, match=r"program\[0\].bytes"):
        controller.load(bad)
    assert controller.pipeline.to_dict() == sample().to_dict()


def test_new_and_set_pipeline_reset_history_and_selection(
    controller: DocumentController, qtbot
) -> None:
    c = controller
    c.push(RemoveOps([c.pipeline.program[0].uid]))
    c.set_selection_indexes([0])
    with qtbot.waitSignals([c.changed, c.selection_changed, c.path_changed]):
        c.new()
    assert c.pipeline.program == [] and c.undo_stack.count() == 0 and not c.is_dirty
    assert c.selection() == [] and c.path is None


def test_selection_by_uid_and_index(controller: DocumentController, qtbot) -> None:
    c = controller
    program = c.pipeline.program
    with qtbot.waitSignal(c.selection_changed):
        c.set_selection([program[4].uid, program[1].uid, 12345])
    assert c.selection() == [program[1].uid, program[4].uid]  # program order, unknown dropped
    assert c.selected_indexes() == [1, 4]
    c.set_selection_indexes([5, 0, 99])
    assert c.selection() == [program[0].uid, program[5].uid]
    with qtbot.assertNotEmitted(c.selection_changed):
        c.set_selection_indexes([0, 5])
    assert c.current_stream() == "s1"
    c.set_selected_stream("s2")
    assert c.selection() == [] and c.selected_stream() == "s2" and c.current_stream() == "s2"
    c.set_selection_indexes([3])
    assert c.selected_stream() is None


def test_undo_drops_deleted_ops_from_the_selection(controller: DocumentController, qtbot) -> None:
    c = controller
    op = Op("host", duration_us=1.0)
    c.push(InsertOps(6, [op]))
    c.set_selection([op.uid, c.pipeline.program[0].uid])
    with qtbot.waitSignal(c.selection_changed):
        c.undo_stack.undo()
    assert c.selection() == [c.pipeline.program[0].uid]
