"""Every shipped example can be built from an empty document with the editor alone:
streams from the lane menu and the inspector, ops dropped from the palette, fields typed in."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from test_editor_helpers import Editor, drop_kind

from swimlanes.model import Op, Pipeline
from swimlanes.model.document import COPY_OPS, HOST_COPY_OPS, STREAM_OPS
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_names, example_path
from swimlanes.ui.editor.inspector import Inspector

#: The long examples repeat one pattern; building their first ops shows they can be built.
MAX_OPS = 60


def _type(widget, text: str) -> None:
    widget.selectAll()
    QTest.keyClicks(widget, text)
    QTest.keyClick(widget, Qt.Key.Key_Return)


def _choose(combo, index: int) -> None:
    combo.setCurrentIndex(index)
    combo.activated.emit(index)


def _fill_op(insp: Inspector, want: Op) -> None:
    """Type the example op's fields into the inspector (the op is selected)."""
    if want.label:
        _type(insp.label, want.label)
    if want.event:
        insp.event.setCurrentText(want.event)
        insp.event.lineEdit().editingFinished.emit()
    if want.op == "kernel":
        _type(insp.blocks, str(want.blocks))
        _type(insp.threads, str(want.threads))
        if want.block_us is not None:
            _choose(insp.timing, insp.timing.findData("block_us"))
            _type(insp.time, repr(want.block_us))
    if want.duration_us is not None:
        _type(insp.time, repr(want.duration_us))
    if want.bytes is not None:
        insp.unit.setCurrentText("B")
        _type(insp.size, str(want.bytes))
    if want.host_memory is not None:
        _choose(insp.host_memory, insp.host_memory.findText(want.host_memory))
    if want.is_async is False:
        insp.is_async.click()


def _normalised(p: Pipeline) -> list[dict]:
    """The program with defaults made explicit (the palette writes them, files may not)."""
    out = []
    for op in p.program:
        d = op.to_dict()
        if op.op in STREAM_OPS:
            d["stream"] = op.stream_name  # "default" and no stream are the same stream
        if op.op in COPY_OPS or op.op == "memset":
            d["async"] = op.effective_async
        if op.op in HOST_COPY_OPS:
            d["host_memory"] = op.effective_host_memory
        out.append(d)
    return out


@pytest.mark.parametrize("name", example_names())
def test_build_example_from_an_empty_document(qtbot, name: str) -> None:
    want = load_pipeline(example_path(name))
    want.program = want.program[:MAX_OPS]
    ed = Editor(Pipeline(name=want.name))
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    c, insp, lanes = ed.controller, ed.inspector, ed.lanes
    for stream in want.streams:
        assert lanes.menus.add_stream()
        _type(insp.stream_name, stream.name)
        _choose(insp.stream_kind, insp.stream_kind.findData(stream.kind))
        _type(insp.priority, str(stream.priority))
    for index, op in enumerate(want.program):
        lane = op.stream_name if op.stream_name else ""
        assert drop_kind(lanes, op.op, index, lane), f"drop of #{index} {op.op}"
        assert c.selected_indexes() == [index]
        _fill_op(insp, op)
    errors = [f.error_text() for f in insp.fields.values() if f.error_text()]
    assert errors == []
    assert [s.to_dict() for s in c.pipeline.streams] == [s.to_dict() for s in want.streams]
    assert _normalised(c.pipeline) == _normalised(want)
