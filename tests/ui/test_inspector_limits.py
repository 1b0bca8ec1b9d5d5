"""The inspector refuses values past the file format's limits (the validator's constants), so
that Save never writes a file that does not load, or one the simulator cannot represent."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from test_editor_helpers import Editor, sample

from swimlanes.engine import simulate
from swimlanes.model import load_pipeline
from swimlanes.model.document import (
    MAX_BLOCKS,
    MAX_BYTES,
    MAX_DURATION_US,
    MAX_NAME_CHARS,
    MAX_PRIORITY,
)


@pytest.fixture
def editor(qtbot) -> Editor:
    ed = Editor(sample())
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    return ed


def _type(widget, text: str) -> None:
    widget.selectAll()
    QTest.keyClicks(widget, text)
    QTest.keyClick(widget, Qt.Key.Key_Return)


def _saved_and_loaded(editor: Editor, tmp_path: Path):
    path = tmp_path / "saved.json"
    editor.controller.save(path)
    loaded = load_pipeline(path)
    simulate(loaded, "h200")  # and it simulates
    return loaded


@pytest.mark.parametrize("text", ["1e16", "1e300", str(MAX_DURATION_US * 1.001)])
def test_durations_past_the_limit_are_refused(editor: Editor, text: str) -> None:
    c, insp = editor.controller, editor.inspector
    before = c.pipeline.to_dict()
    c.set_selection_indexes([1])  # K0, duration_us 370
    _type(insp.time, text)
    assert insp.fields["time"].error_text() == "must be at most 1e+09 us (1,000 s)"
    c.set_selection_indexes([0])  # a copy's duration override
    _type(insp.time, text)
    assert "at most 1e+09 us" in insp.fields["time"].error_text()
    assert c.pipeline.to_dict() == before and c.undo_stack.count() == 0


def test_the_longest_duration_is_accepted_and_saves(editor: Editor, tmp_path: Path) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([1])
    _type(insp.time, f"{MAX_DURATION_US:g}")
    assert insp.fields["time"].error_text() == ""
    assert c.pipeline.program[1].duration_us == MAX_DURATION_US
    assert _saved_and_loaded(editor, tmp_path).program[1].duration_us == MAX_DURATION_US


@pytest.mark.parametrize(("value", "unit"), [("1e15", "MiB"), ("1e300", "GiB"), ("1.01", "TiB")])
def test_sizes_past_the_limit_are_refused(editor: Editor, value: str, unit: str) -> None:
    c, insp = editor.controller, editor.inspector
    before = c.pipeline.to_dict()
    c.set_selection_indexes([0])
    insp.unit.setCurrentText(unit)
    _type(insp.size, value)
    assert insp.fields["bytes"].error_text() == "must be at most 1 TiB"
    assert c.pipeline.to_dict() == before


def test_one_tib_is_accepted_and_saves(editor: Editor, tmp_path: Path) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([0])
    insp.unit.setCurrentText("TiB")
    _type(insp.size, "1")
    assert c.pipeline.program[0].bytes == MAX_BYTES
    assert _saved_and_loaded(editor, tmp_path).program[0].bytes == MAX_BYTES


def test_blocks_flops_and_block_time_are_bounded(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    before = c.pipeline.to_dict()
    c.set_selection_indexes([1])
    for text in (str(MAX_BLOCKS + 1), "9007199254740993", "1e300"):
        _type(insp.blocks, text)
        assert "at most 2147483647 blocks" in insp.fields["blocks"].error_text()
    assert c.pipeline.to_dict() == before
    insp.timing.setCurrentIndex(1)  # time per block: 370 us for 4096 blocks is fine
    insp.timing.activated.emit(1)
    assert c.pipeline.program[1].block_us == 370
    _type(insp.time, "1e6")  # 4096 blocks of 1 s: past the kernel's limit
    assert "at most 1e+09 us in one kernel" in insp.fields["time"].error_text()
    _type(insp.blocks, "1000000000")  # 1e9 blocks of 370 us: the same limit
    assert "at most 1e+09 us in one kernel" in insp.fields["blocks"].error_text()
    assert c.pipeline.program[1].blocks == 4096
    insp.timing.setCurrentIndex(2)  # roofline
    insp.timing.activated.emit(2)
    _type(insp.flops, "1e16")
    assert insp.fields["flops"].error_text() == "must be at most 1e+15 FLOPs"


def test_priority_and_names_are_bounded(editor: Editor) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selected_stream("s2")
    _type(insp.priority, str(MAX_PRIORITY + 1))
    assert "a C int" in insp.stream_fields["priority"].error_text()
    assert c.pipeline.stream("s2").priority == 0
    assert insp.stream_name.maxLength() == MAX_NAME_CHARS
    c.set_selection_indexes([1])
    assert insp.label.maxLength() == MAX_NAME_CHARS
    _type(insp.label, "L" * (MAX_NAME_CHARS + 50))
    assert c.pipeline.program[1].label == "L" * MAX_NAME_CHARS


def test_every_accepted_edit_saves_a_file_that_loads(editor: Editor, tmp_path: Path) -> None:
    """Type hostile values into every numeric field: what the inspector takes, Save writes and
    load_pipeline reads back, and the simulator runs."""
    c, insp = editor.controller, editor.inspector
    values = ["1e16", "1e300", "-1", "0", "nan", "inf", "1e9", "999999999", "2147483647",
              "1e-300", "4,096", "1e15"]  # fmt: skip
    for row, fields in ((0, ("size", "time")), (1, ("blocks", "threads", "time"))):
        for name in fields:
            for value in values:
                c.set_selection_indexes([row])
                _type(getattr(insp, name), value)
    loaded = _saved_and_loaded(editor, tmp_path)
    assert len(loaded.program) == len(sample().program)


def test_a_default_streams_priority_cannot_be_edited(editor: Editor) -> None:
    """CUDA creates a default stream without a priority (the simulator runs it at 0): its field
    is read-only and says why; a created stream's stays editable."""
    c, insp = editor.controller, editor.inspector
    kinds = {"per_thread_default": False, "legacy_default": False, "blocking": True}
    for kind, editable in kinds.items():
        c.pipeline.stream("s2").kind = kind
        c.set_selected_stream("s1")
        c.set_selected_stream("s2")
        assert insp.priority.isEnabled() is editable, kind
        assert ("default priority (0)" in insp.priority.toolTip()) is not editable, kind
