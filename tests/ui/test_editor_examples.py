"""Every shipped example can be built from an empty document with the editor alone:
devices and communicators from Pipeline > Devices and communicators, host threads from a host
lane's menu, streams from the lane menu and the inspector, ops dropped from the palette, fields
typed in. A collective dropped
on one device's lane comes with its part on every other member device (NCCL needs them all);
those parts stand beside it, and the program without them is the example's."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from test_editor_helpers import Editor, drop_kind

from swimlanes.model import Op, Pipeline
from swimlanes.model.document import COLLECTIVE_OPS, COPY_OPS, HOST_COPY_OPS, STREAM_OPS
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_names, example_path
from swimlanes.ui.device_dialog import DevicesDialog
from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.editor.inspector import Inspector

#: The long examples repeat one pattern; building their first ops shows they can be built.
MAX_OPS = 60
#: Keys the inspector has no field for (kept by the document as unknown keys): a kernel's
#: residency override.
UNEDITABLE = ("blocks_per_sm",)


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
    # Size and memory before the duration: a new size or memory drops a copy's duration.
    if want.bytes is not None:
        insp.unit.setCurrentText("B")
        _type(insp.size, str(want.bytes))
    if want.host_memory is not None:
        _choose(insp.host_memory, insp.host_memory.findText(want.host_memory))
    if want.is_async is False:
        insp.is_async.click()
    if want.duration_us is not None:
        _type(insp.time, repr(want.duration_us))
    # the destination first: a peer copy's stream must stay on one of its ends meanwhile
    for key in ("dst_device", "src_device", "communicator", "root"):
        value = getattr(want, key)
        if value is not None:
            combo = insp.device_combos[key]
            _choose(combo, combo.findText(value))
    if want.host_thread is not None:
        _choose(insp.op_thread, insp.op_thread.findData(want.host_thread))


def _declare_threads(ed: Editor, want: Pipeline) -> None:
    """Host threads as a user adds them from a host lane's menu: the first added beside a
    device's own thread declares that one too (as "main"), which is then renamed."""
    menus, c = ed.lanes.menus, ed.controller
    for device in want.device_names:
        names = [t.name for t in want.host_threads if (t.device or want.device_names[0]) == device]
        if not names:
            continue
        on = device if want.is_multi_device else None
        assert menus.add_thread(on, name=names[-1] if len(names) == 1 else names[1])
        main = c.pipeline.host_threads[-2].name
        if len(names) == 1:
            assert menus.remove_thread(main)
            continue
        assert menus.rename_thread(main, names[0])
        for name in names[2:]:
            assert menus.add_thread(on, name=name)


def _declare_devices(ed: Editor, want: Pipeline, qtbot) -> None:
    """Devices and communicators as a user declares them, in the dialog."""
    if not want.devices and not want.communicators:
        return
    dialog = DevicesDialog(ed.controller)
    qtbot.addWidget(dialog)
    for name in want.device_names[1:]:
        assert dialog.add_device(name)
    for comm in want.communicators:
        assert dialog.add_communicator(comm.name)
        if comm.devices != want.device_names:
            assert dialog.set_members(comm.devices)


def _normalised(p: Pipeline, program: list[Op] | None = None) -> list[dict]:
    """The program with defaults made explicit (the palette writes them, files may not)."""
    out = []
    for op in p.program if program is None else program:
        d = op.to_dict()
        if op.op in STREAM_OPS:
            d["stream"] = op.stream_name  # "default" and no stream are the same stream
        if op.op in COPY_OPS or op.op == "memset":
            d["async"] = op.effective_async
        if op.op in HOST_COPY_OPS:
            d["host_memory"] = op.effective_host_memory
        if p.is_multi_device and op.op not in STREAM_OPS:
            d["device"] = p.op_device(op)  # the first device's host calls may name none
        for key in UNEDITABLE:
            d.pop(key, None)
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
    _declare_devices(ed, want, qtbot)
    _declare_threads(ed, want)
    for stream in want.streams:
        assert lanes.menus.add_stream(device=stream.device)
        _type(insp.stream_name, stream.name)
        if stream.host_thread is not None:  # before the kind: a thread has one own stream
            _choose(insp.stream_thread, insp.stream_thread.findData(stream.host_thread))
        _choose(insp.stream_kind, insp.stream_kind.findData(stream.kind))
        _type(insp.priority, str(stream.priority))
    others: list[Op] = []  # the other members' parts of the collectives dropped
    for op in want.program:
        host = li.host_lane(want.op_device(op)) if want.is_multi_device else ""
        if want.is_multi_thread:
            host = li.thread_lane(want.op_thread(op), want.op_device(op))
        lane = op.stream_name or host
        at = len(c.pipeline.program)  # the example's ops, in order, and the parts beside them
        assert drop_kind(lanes, op.op, at, lane), f"drop of {op.op} at #{at}"
        new = c.selected_ops()
        if op.op in COLLECTIVE_OPS:
            mine = next(o for o in new if c.pipeline.op_device(o) == want.op_device(op))
            others += [o for o in new if o is not mine]
            c.set_selection([mine.uid])
        assert len(c.selected_ops()) == 1
        _fill_op(insp, op)
    errors = [f.error_text() for f in insp.fields.values() if f.error_text()]
    assert errors == []
    assert [s.to_dict() for s in c.pipeline.streams] == [s.to_dict() for s in want.streams]
    assert [d.to_dict() for d in c.pipeline.devices] == [d.to_dict() for d in want.devices]
    assert [t.to_dict() for t in c.pipeline.host_threads] == [
        t.to_dict() for t in want.host_threads
    ]
    assert [m.to_dict() for m in c.pipeline.communicators] == [
        m.to_dict() for m in want.communicators
    ]
    theirs = {o.uid for o in others}
    mine_only = [o for o in c.pipeline.program if o.uid not in theirs]
    assert _normalised(c.pipeline, mine_only) == _normalised(want)
    # each dropped collective's parts on the other members make the same call
    for part in others:
        assert part.op in COLLECTIVE_OPS and part.communicator and part.bytes
