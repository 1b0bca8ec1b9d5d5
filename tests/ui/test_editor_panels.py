"""The host program panel and the inspector: code lines, reordering, validated fields, sync."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QMimeData, QPoint, Qt
from PySide6.QtTest import QTest
from test_editor_helpers import MIB, Editor, block_point, sample, send_drop

from swimlanes.model import Pipeline
from swimlanes.model.validate import pipeline_from_dict
from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.editor.code_lines import program_lines
from swimlanes.ui.editor.fields import FieldError, parse_number
from swimlanes.ui.editor.program_panel import ROWS_MIME

LEFT = Qt.MouseButton.LeftButton
NONE = Qt.KeyboardModifier.NoModifier


@pytest.fixture
def editor(qtbot) -> Editor:
    ed = Editor(sample())
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    return ed


def test_program_lines_read_like_cuda() -> None:
    p = pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "streams": [{"name": "s1"}, {"name": "s2"}],
            "program": [
                {"op": "h2d", "stream": "s1", "bytes": 64 * MIB},
                {"op": "kernel", "stream": "s1", "label": "K0", "blocks": 4096, "threads": 256,
                 "duration_us": 370},
                {"op": "d2h", "stream": "s1", "bytes": 64 * MIB, "host_memory": "pageable"},
                {"op": "event_record", "stream": "s1", "event": "e0"},
                {"op": "event_wait", "stream": "s2", "event": "e0"},
                {"op": "h2d", "stream": "s2", "bytes": 1536 * MIB, "async": False},
                {"op": "memset", "bytes": 4096},
                {"op": "stream_sync", "stream": "s1"},
                {"op": "event_sync", "event": "e0"},
                {"op": "device_sync"},
                {"op": "host", "duration_us": 50},
                {"op": "kernel", "stream": "s2", "blocks": 8, "threads": 32, "block_us": 2.5},
                {"op": "host_func", "stream": "s2", "duration_us": 1500},
                {"op": "malloc", "bytes": 1024},
                {"op": "free"},
            ],
        }
    )  # fmt: skip
    assert program_lines(p) == [
        "cudaMemcpyAsync(d_a, h_a, 64 MiB, H2D, s1)",
        "K0<<<4096, 256, 0, s1>>>  // 370 us",
        "cudaMemcpyAsync(h_a, d_a, 64 MiB, D2H, s1)  // pageable",
        "cudaEventRecord(e0, s1)",
        "cudaStreamWaitEvent(s2, e0)",
        "cudaMemcpy(d_b, h_b, 1.5 GiB, H2D)  // after s2",
        "cudaMemsetAsync(d_c, 0, 4 KiB, 0)",
        "cudaStreamSynchronize(s1)",
        "cudaEventSynchronize(e0)",
        "cudaDeviceSynchronize()",
        "host_work()  // 50 us on the CPU",
        "kernel<<<8, 32, 0, s2>>>  // 2.5 us per block",
        "cudaLaunchHostFunc(s2, host_fn, NULL)  // 1.5 ms",
        "cudaMalloc(&d_d, 1 KiB)",
        "cudaFree(d_d)",
    ]


def _row_point(editor: Editor, row: int, below: bool = False) -> QPoint:
    rect = editor.program.list.visualRect(editor.program.model.index(row))
    return QPoint(rect.center().x(), rect.bottom() - 2 if below else rect.top() + 2)


def test_program_panel_drag_reorders_the_program(editor: Editor) -> None:
    c = editor.controller
    mime = editor.program.list.rows_mime([0, 1])
    # drop the H2D and K0 lines below "out": breadth-first becomes depth-last
    assert send_drop(editor.program.list.viewport(), mime, _row_point(editor, 4, below=True))
    assert editor.labels() == ["event record e0", "event wait e0", "out", "in", "K0", "device sync"]
    assert c.undo_stack.undoText() == "Move 2 ops"
    assert editor.program.lines()[3].startswith("  3  cudaMemcpyAsync(d_in, h_in")
    c.undo_stack.undo()
    assert c.pipeline.to_dict() == sample().to_dict()
    # rows dragged from another document are refused
    foreign = QMimeData()
    foreign.setData(ROWS_MIME, json.dumps({"document": 1, "rows": [0]}).encode())
    assert not send_drop(editor.program.list.viewport(), foreign, _row_point(editor, 4))
    assert c.pipeline.to_dict() == sample().to_dict()


def test_alt_up_down_moves_the_selection(editor: Editor) -> None:
    c = editor.controller
    c.set_selection_indexes([4])
    editor.program.list.setFocus()
    QTest.keyClick(editor.program.list, Qt.Key.Key_Up, Qt.KeyboardModifier.AltModifier)
    QTest.keyClick(editor.program.list, Qt.Key.Key_Up, Qt.KeyboardModifier.AltModifier)
    assert editor.labels()[2] == "out"
    assert c.selected_indexes() == [2]
    QTest.keyClick(editor.program.list, Qt.Key.Key_Down, Qt.KeyboardModifier.AltModifier)
    assert editor.labels()[3] == "out"
    assert not editor.program.list.move_selection(+10)


def test_selection_syncs_between_lanes_and_program(editor: Editor) -> None:
    c, lanes, plist = editor.controller, editor.lanes, editor.program.list
    QTest.mouseClick(lanes.viewport(), LEFT, NONE, block_point(lanes, 4, "s2"))
    assert [i.row() for i in plist.selectionModel().selectedRows()] == [4]
    QTest.mouseClick(plist.viewport(), LEFT, NONE, _row_point(editor, 1))
    QTest.mouseClick(
        plist.viewport(), LEFT, Qt.KeyboardModifier.ControlModifier, _row_point(editor, 2)
    )
    assert c.selected_indexes() == [1, 2]
    assert {uid for uid, item in lanes._blocks.items() if item.isSelected()} == set(c.selection())
    assert editor.inspector.title.text() == "2 ops selected"


def test_selecting_in_the_program_brings_the_block_into_view(qtbot) -> None:
    p = sample()
    for _ in range(30):
        p.program.append(p.program[1].copy())
    ed = Editor(p)
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    last = ed.controller.pipeline.program[-1].uid
    ed.program.list.setCurrentIndex(ed.program.model.index(len(p.program) - 1))
    assert ed.controller.selection() == [last]
    centre = ed.lanes.block_center(last)
    assert li.HEADER_W < centre.x() < ed.lanes.viewport().width()


def test_inspector_shows_kind_specific_fields(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    form = insp.op_form

    def visible() -> set[str]:
        return {k for k, f in insp.fields.items() if form.isRowVisible(f)}

    c.set_selection_indexes([0])
    assert insp.size.text() == "64" and insp.unit.currentText() == "MiB"
    assert {"bytes", "host_memory", "is_async", "stream", "time"} <= visible()
    assert "blocks" not in visible()
    c.set_selection_indexes([1])
    assert {"blocks", "threads", "timing", "time"} <= visible() and "host_memory" not in visible()
    assert insp.time.text() == "370"
    c.set_selection_indexes([3])
    assert "event" in visible() and insp.event.currentText() == "e0"
    c.set_selection_indexes([5])
    assert visible() == {"op", "label", "call_us"}  # a device sync: only its call's time


def _type(widget, text: str) -> None:
    widget.selectAll()
    QTest.keyClicks(widget, text)
    QTest.keyClick(widget, Qt.Key.Key_Return)


def test_inspector_refuses_bad_values_with_the_reason(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    before = c.pipeline.to_dict()
    c.set_selection_indexes([1])
    _type(insp.threads, "2048")
    assert "at most 1024" in insp.fields["threads"].error_text()
    _type(insp.blocks, "many")
    assert insp.fields["blocks"].error_text() == "'many' is not a number"
    _type(insp.time, "-3")
    assert insp.fields["time"].error_text() == "must be more than 0"
    c.set_selection_indexes([0])
    _type(insp.size, "0")
    assert "more than 0" in insp.fields["bytes"].error_text()
    assert c.pipeline.to_dict() == before and c.undo_stack.count() == 0
    # an edit the document refuses (retype a wait's event to nothing) says why at the field
    c.set_selection_indexes([3])
    insp.event.setCurrentText(" ")
    insp.event.lineEdit().editingFinished.emit()
    assert "needs an event name" in insp.fields["event"].error_text()
    assert c.pipeline.to_dict() == before


def test_inspector_commits_one_merged_edit_per_field(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([1])
    _type(insp.time, "100")
    _type(insp.time, "250")
    assert c.pipeline.program[1].duration_us == 250.0
    assert c.undo_stack.count() == 1 and c.undo_stack.undoText() == "Set K0 duration"
    _type(insp.threads, "128")
    assert c.undo_stack.count() == 2
    c.set_selection_indexes([0])
    insp.unit.setCurrentText("KiB")
    _type(insp.size, "1.5")
    assert c.pipeline.program[0].bytes == 1536
    insp.host_memory.setCurrentText("pageable")
    insp.host_memory.activated.emit(1)
    insp.is_async.click()
    assert (c.pipeline.program[0].host_memory, c.pipeline.program[0].is_async) == (
        "pageable",
        False,
    )
    while c.undo_stack.canUndo():
        c.undo_stack.undo()
    assert c.pipeline.to_dict() == sample().to_dict()


def test_inspector_kernel_timing_modes_and_retype(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([1])
    insp.timing.setCurrentIndex(1)  # time per block
    insp.timing.activated.emit(1)
    k = c.pipeline.program[1]
    assert (k.block_us, k.duration_us) == (370, None)
    assert insp.op_form.labelForField(insp.fields["time"]).text() == "Block time (us)"
    _type(insp.time, "12.5")
    assert k.block_us == 12.5
    insp.timing.setCurrentIndex(2)
    insp.timing.activated.emit(2)
    assert (k.block_us, k.flops, k.bytes) == (None, 1e9, 64 * MIB)
    insp.kind.setCurrentIndex(insp.kind.findData("d2d"))
    insp.kind.activated.emit(insp.kind.currentIndex())
    assert (k.op, k.bytes, k.flops, k.blocks) == ("d2d", 64 * MIB, None, None)
    assert insp.title.text() == "#1 K0"


def test_inspector_edits_the_selected_stream(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selected_stream("s2")
    assert insp.pages.currentIndex() == 2 and insp.stream_name.text() == "s2"
    _type(insp.priority, "x")
    assert insp.stream_fields["priority"].error_text() == "'x' is not a number"
    _type(insp.priority, "-3")
    assert c.pipeline.stream("s2").priority == -3
    insp.stream_kind.setCurrentIndex(3)
    insp.stream_kind.activated.emit(3)
    assert c.pipeline.stream("s2").kind == "non_blocking"
    _type(insp.stream_name, "s1")
    assert "already a stream named 's1'" in insp.stream_fields["name"].error_text()
    _type(insp.stream_name, "copies")
    assert c.selected_stream() == "copies" and c.pipeline.program[3].stream == "copies"
    c.set_selected_stream("default")
    assert not insp.stream_kind.isEnabled()


def test_parse_number() -> None:
    assert parse_number("4,096", integer=True) == 4096
    assert parse_number("1e6") == 1e6
    assert parse_number("0", strict=False) == 0
    for bad, message in [("", "enter a number"), ("1.5", "whole number"), ("inf", "finite")]:
        with pytest.raises(FieldError, match=message):
            parse_number(bad, integer=True)


def test_double_click_in_palette_appends_to_the_selected_lane(editor: Editor) -> None:
    c = editor.controller
    c.set_selected_stream("s2")
    palette = editor.palette_widget
    rect = palette.list.visualItemRect(palette.item_for("memset"))
    QTest.mouseClick(palette.list.viewport(), LEFT, NONE, rect.center())
    QTest.mouseDClick(palette.list.viewport(), LEFT, NONE, rect.center())
    op = c.pipeline.program[-1]
    assert (op.op, op.stream, op.bytes) == ("memset", "s2", 64 * MIB)
    assert c.selection() == [op.uid]
    assert palette.append_op("kernel")  # then it follows the selected op's lane
    assert c.pipeline.program[-1].stream == "s2"


def test_empty_document_shows_the_drop_hint(qtbot) -> None:
    ed = Editor(Pipeline())
    qtbot.addWidget(ed)
    texts = [i.text() for i in ed.lanes.scene().items() if hasattr(i, "text")]
    assert "Drag operations here from the palette" in texts
    assert ed.inspector.pages.currentIndex() == 0


def test_typing_commits_after_a_pause_as_one_step(editor: Editor, qtbot) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([0])
    insp.unit.setCurrentText("KiB")
    insp.size.setFocus()
    insp.size.selectAll()
    QTest.keyClicks(insp.size, "10")
    qtbot.waitUntil(lambda: c.pipeline.program[0].bytes == 10 * 1024, timeout=3000)
    QTest.keyClicks(insp.size, "24")
    qtbot.waitUntil(lambda: c.pipeline.program[0].bytes == 1024 * 1024, timeout=3000)
    # what is being typed is left alone: not rewritten as "1 MiB" under the cursor
    assert (insp.size.text(), insp.unit.currentText()) == ("1024", "KiB")
    assert c.undo_stack.count() == 1
    c.undo_stack.undo()
    assert c.pipeline.program[0].bytes == 64 * MIB
    assert (insp.size.text(), insp.unit.currentText()) == ("64", "MiB")


def test_a_pending_commit_is_dropped_when_the_selection_changes(editor: Editor, qtbot) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([1])
    insp.blocks.selectAll()
    QTest.keyClicks(insp.blocks, "7")
    c.set_selection([])  # selection moves away before the pause ends
    c.set_selection_indexes([1])
    qtbot.wait(800)
    assert c.pipeline.program[1].blocks == 4096 and c.undo_stack.count() == 0


def test_pasting_deeply_nested_text_is_refused_cleanly() -> None:
    from swimlanes.model.edits import EditError
    from swimlanes.ui.editor.common import ops_from_json

    text = '{"format": "swimlanes-ops", "ops": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(EditError, match="no Swimlanes ops"):
        ops_from_json(text, sample(), None)


def test_a_captured_copy_out_shows_in_its_program_line() -> None:
    """A rebuilt pageable D2H's measured copy-out, which sets when its call returns, is not
    hidden: its program line says it."""
    from swimlanes.model.document import Op, Pipeline

    d2h = Op("d2h", bytes=4 << 20, host_memory="pageable", duration_us=273.2, copy_out_us=91.0)
    [line] = program_lines(Pipeline(name="copy out", program=[d2h]))
    assert "// pageable, 273.2 us, 91 us copying out" in line, line
