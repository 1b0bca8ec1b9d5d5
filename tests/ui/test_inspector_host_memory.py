"""The inspector's Host memory choice: a copy's time (measured, as a rebuilt pipeline's pageable
copies keep it, or typed in) was taken with the memory the copy had, so changing the memory
drops it, in the same undo step."""

from __future__ import annotations

import pytest
from test_editor_helpers import MIB, Editor

from swimlanes.model.validate import pipeline_from_dict


def _timed_copies():
    """A pageable D2H with its measured time, as rebuilt from a PyTorch ``.cpu()``."""
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": "timed copies",
            "program": [
                {"op": "kernel", "label": "K0", "blocks": 132, "threads": 256,
                 "duration_us": 50},
                {"op": "d2h", "bytes": 4 * MIB, "host_memory": "pageable", "label": "out",
                 "duration_us": 363.582},
            ],
        }
    )  # fmt: skip


def _shown_editor(qtbot, pipeline) -> Editor:
    ed = Editor(pipeline)
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    return ed


def _one_op(name: str, op: dict):
    doc = {"format": "swimlanes-pipeline", "version": 1, "name": name, "program": [op]}
    return pipeline_from_dict(doc)


@pytest.fixture
def editor(qtbot) -> Editor:
    return _shown_editor(qtbot, _timed_copies())


def _choose_memory(editor: Editor, memory: str) -> None:
    combo = editor.inspector.host_memory
    combo.setCurrentText(memory)
    combo.activated.emit(combo.currentIndex())


def test_pinning_a_timed_copy_drops_its_time_in_one_undo_step(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    before = c.pipeline.to_dict()
    c.set_selection_indexes([1])
    assert insp.time.text() == "363.582"
    _choose_memory(editor, "pageable")  # the memory it has: nothing changes
    assert c.pipeline.to_dict() == before and c.undo_stack.count() == 0
    _choose_memory(editor, "pinned")
    op = c.pipeline.program[1]
    assert (op.host_memory, op.duration_us) == ("pinned", None)
    assert insp.time.text() == ""  # the model times it now
    assert c.undo_stack.count() == 1
    assert c.undo_stack.undoText() == "Set out host memory, duration"
    c.undo_stack.undo()
    assert c.pipeline.to_dict() == before
    c.undo_stack.redo()
    assert c.pipeline.program[1].duration_us is None


def test_making_a_staging_copy_synchronous_drops_its_measured_call(qtbot) -> None:
    """A rebuilt async pageable H2D's call_us was its whole call, staging included: a
    synchronous copy's call waits for the copy instead, so the call's measured time goes, in
    the same undo step; its device time stays (still pageable memory)."""
    staging = {"op": "h2d", "bytes": 4 * MIB, "host_memory": "pageable", "label": "in",
               "duration_us": 382.5, "call_us": 487.5}  # fmt: skip
    ed = _shown_editor(qtbot, _one_op("staging copy", staging))
    c, insp = ed.controller, ed.inspector
    before = c.pipeline.to_dict()
    c.set_selection_indexes([0])
    assert insp.is_async.isChecked()
    insp.is_async.click()
    op = c.pipeline.program[0]
    assert (op.is_async, op.call_us, op.duration_us) == (False, None, 382.5)
    assert c.undo_stack.count() == 1
    c.undo_stack.undo()
    assert c.pipeline.to_dict() == before


def _type_size(editor: Editor, text: str, unit: str = "MiB") -> None:
    insp = editor.inspector
    insp.unit.setCurrentText(unit)
    insp.size.setText(text)
    insp.size.editingFinished.emit()


def test_resizing_a_timed_copy_drops_its_measured_times_in_one_undo_step(qtbot) -> None:
    """A captured pageable D2H's device time and copy-out were measured at 4 MiB: at 2 MiB the
    model times it (before, the measured times stayed and halving the copy changed nothing)."""
    timed = {"op": "d2h", "bytes": 4 * MIB, "host_memory": "pageable", "label": "out",
             "duration_us": 363.582, "call_us": 5.5, "copy_out_us": 91.125}  # fmt: skip
    ed = _shown_editor(qtbot, _one_op("timed copy", timed))
    c, insp = ed.controller, ed.inspector
    before = c.pipeline.to_dict()
    c.set_selection_indexes([0])
    _type_size(ed, "4")  # the size it has: nothing changes
    assert c.pipeline.to_dict() == before and c.undo_stack.count() == 0
    _type_size(ed, "2")
    op = c.pipeline.program[0]
    assert (op.bytes, op.duration_us, op.copy_out_us) == (2 * MIB, None, None)
    assert op.call_us == 5.5  # its call did not stage: its measured call time still holds
    assert insp.time.text() == ""  # the model times it now
    assert c.undo_stack.count() == 1
    c.undo_stack.undo()
    assert c.pipeline.to_dict() == before


def test_resizing_a_staging_copy_drops_its_measured_call() -> None:
    """An async pageable H2D's measured call is its staging, which follows its size."""
    from swimlanes.model.document import Op
    from swimlanes.model.op_defaults import size_changes

    staging = Op("h2d", bytes=4 * MIB, host_memory="pageable", duration_us=382.5, call_us=487.5)
    assert size_changes(staging, 8 * MIB) == {
        "bytes": 8 * MIB, "duration_us": None, "call_us": None
    }  # fmt: skip
    pinned = Op("h2d", bytes=4 * MIB, duration_us=120.0, call_us=6.0)
    assert size_changes(pinned, 8 * MIB) == {"bytes": 8 * MIB, "duration_us": None}
    kernel = Op("kernel", bytes=4 * MIB, flops=1e9, call_us=30.0)
    assert size_changes(kernel, 8 * MIB) == {"bytes": 8 * MIB}


def test_changing_a_timed_copys_direction_drops_its_time() -> None:
    """A time measured for an H2D does not describe the D2H it is changed into."""
    from swimlanes.model.document import Op, Pipeline
    from swimlanes.model.op_defaults import converted_fields

    h2d = Op("h2d", bytes=4 * MIB, duration_us=120.0)
    pipeline = Pipeline(name="p", program=[h2d])
    fields = converted_fields(h2d, "d2h", pipeline)
    assert (fields["op"], fields["bytes"], fields["duration_us"]) == ("d2h", 4 * MIB, None)
