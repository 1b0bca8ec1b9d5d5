"""The editor on a pipeline of two devices: the palette's peer copy and collectives, lanes
grouped per device with each device's host thread, the inspector's device fields with undo,
the host program's NCCL and peer-copy calls, and Pipeline > Devices and communicators."""

from __future__ import annotations

import html

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest
from test_editor_helpers import MIB, Editor, drop_kind, sample

from swimlanes.model.document import COLLECTIVE_OPS, CUDA_CALLS, MULTI_DEVICE_OPS, Stream
from swimlanes.model.edits import AddCommunicator, AddStream
from swimlanes.model.op_kinds import REGISTRY, op_kind, registered_layers
from swimlanes.model.validate import pipeline_from_dict, validate
from swimlanes.ui.device_dialog import DevicesDialog
from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.editor.inspector_fields import INSPECTOR_FIELDS, visible_rows
from swimlanes.ui.icons import op_pixmap
from swimlanes.ui.style import op_colour


def two_devices() -> dict:
    return {
        "format": "swimlanes-pipeline",
        "version": 1,
        "name": "two gpus",
        "devices": [{"name": "gpu0"}, {"name": "gpu1"}],
        "communicators": [{"name": "world", "devices": ["gpu0", "gpu1"]}],
        "streams": [
            {"name": "c0", "device": "gpu0"},
            {"name": "comm0", "device": "gpu0"},
            {"name": "c1", "device": "gpu1"},
        ],
        "program": [
            {"op": "kernel", "stream": "c0", "label": "fwd0", "blocks": 64, "threads": 256,
             "duration_us": 100},
            {"op": "kernel", "stream": "c1", "label": "fwd1", "blocks": 64, "threads": 256,
             "duration_us": 100},
            {"op": "all_reduce", "stream": "comm0", "label": "grads", "bytes": 100 * MIB,
             "communicator": "world"},
            {"op": "all_reduce", "stream": "c1", "label": "grads", "bytes": 100 * MIB,
             "communicator": "world"},
            {"op": "peer_copy", "stream": "c0", "bytes": 64 * MIB, "src_device": "gpu0",
             "dst_device": "gpu1"},
            {"op": "host", "device": "gpu1", "duration_us": 20},
            {"op": "device_sync"},
        ],
    }  # fmt: skip


@pytest.fixture
def editor(qtbot) -> Editor:
    ed = Editor(pipeline_from_dict(two_devices()))
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    return ed


def test_the_palette_has_the_multi_device_kinds_with_icons_and_help(editor) -> None:
    palette = editor.palette_widget
    for kind in MULTI_DEVICE_OPS:
        item = palette.item_for(kind)
        assert item.text() == op_kind(kind).title
        assert CUDA_CALLS[kind] in html.unescape(item.toolTip())
        assert op_kind(kind).help[:40] in html.unescape(item.toolTip())
        image: QImage = item.icon().pixmap(24, 24).toImage()
        assert image.pixelColor(12, 21).name() == op_colour(kind).name()
    # a peer copy reads apart from a device-to-device copy, a collective apart from both
    peer, d2d, ring = (op_pixmap(k, 32).toImage() for k in ("peer_copy", "d2d", "all_reduce"))
    assert peer != d2d and ring != peer


def test_dropping_a_collective_inserts_one_valid_op_per_member(editor) -> None:
    c = editor.controller
    n = len(c.pipeline.program)
    assert drop_kind(editor.lanes, "all_reduce", n, "c0")
    new = c.pipeline.program[n:]
    assert [op.op for op in new] == ["all_reduce", "all_reduce"]
    assert [c.pipeline.op_device(op) for op in new] == ["gpu0", "gpu1"]
    assert all(op.communicator == "world" and op.bytes for op in new)
    assert new[0].stream == "c0"
    assert not validate(c.pipeline)
    assert c.selection() == [op.uid for op in new]
    c.undo_stack.undo()  # one step takes both back
    assert len(c.pipeline.program) == n


def test_dropping_a_peer_copy_and_a_host_op_on_gpu1(editor) -> None:
    c, lanes = editor.controller, editor.lanes
    assert drop_kind(lanes, "peer_copy", 0, "c1")
    op = c.pipeline.program[0]
    assert op.op == "peer_copy" and op.stream == "c1" and op.bytes
    assert op.dst_device == "gpu0"  # from the stream's device to the next one
    assert drop_kind(lanes, "host", 0, li.host_lane("gpu1"))
    host = c.pipeline.program[0]
    assert host.op == "host" and c.pipeline.op_device(host) == "gpu1"
    assert lanes.lane_of(host) == li.host_lane("gpu1")
    assert not validate(c.pipeline)


def test_lanes_are_grouped_per_device_with_their_host_threads(editor, qtbot) -> None:
    lanes = editor.lanes
    assert lanes.lanes() == [
        li.device_lane("gpu0"),
        li.host_lane("gpu0"),
        "default",
        "c0",
        "comm0",
        li.device_lane("gpu1"),
        li.host_lane("gpu1"),
        "c1",
    ]
    header = lanes.device_header("gpu1")
    assert "1 stream" in header.summary and "3 ops" in header.summary
    program = editor.controller.pipeline.program
    # each op's block sits on its lane: gpu1's host work on gpu1's host thread
    assert lanes.block(program[5].uid).rect().top() == lanes.lane_y(li.host_lane("gpu1")) + 6
    assert lanes.block(program[3].uid).rect().top() == lanes.lane_y("c1") + 6
    # clicking a device's header collapses its lanes into it, and back
    pos = lanes.mapFromScene(QPointF(20, lanes.lane_y(li.device_lane("gpu1")) + 8))
    QTest.mouseClick(lanes.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert lanes.lanes()[-1] == li.device_lane("gpu1") and "c1" not in lanes.lanes()
    assert not lanes.block_visible(program[3].uid) and lanes.block_visible(program[2].uid)
    QTest.mouseClick(lanes.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert lanes.lanes()[-1] == "c1" and lanes.block_visible(program[3].uid)
    # an op of a collapsed device selected elsewhere (the program panel, a chart) shows it
    lanes.set_device_collapsed("gpu1", True)
    editor.controller.set_selection_indexes([3])
    assert "c1" in lanes.lanes() and lanes.block_visible(program[3].uid)


def test_a_single_device_pipeline_has_no_device_lanes(qtbot) -> None:
    ed = Editor(sample())
    qtbot.addWidget(ed)
    assert ed.lanes.lanes() == [li.HOST_LANE, "default", "s1", "s2"]
    assert not any(line.startswith("[") for line in ed.program.lines())


def test_program_lines_name_the_calls_and_their_host_thread(editor) -> None:
    lines = editor.program.lines()
    assert "[gpu0] ncclAllReduce(d_grads, d_grads, 100 MiB, ncclSum, world, comm0)" in lines[2]
    assert "[gpu1] ncclAllReduce(" in lines[3] and lines[3].endswith("world, c1)")
    assert "[gpu0] cudaMemcpyPeerAsync(d_a_gpu1, gpu1, d_a, gpu0, 64 MiB, c0)" in lines[4]
    assert lines[5].split()[1] == "[gpu1]"


def _visible(editor) -> set[str]:
    insp = editor.inspector
    return {k for k, f in insp.fields.items() if insp.op_form.isRowVisible(f)}


def test_the_inspector_edits_a_peer_copys_devices_with_undo(editor) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([4])
    assert {"src_device", "dst_device", "bytes", "stream"} <= _visible(editor)
    assert "communicator" not in _visible(editor)
    dst = insp.device_combos["dst_device"]
    assert [dst.itemText(i) for i in range(dst.count())] == ["gpu0", "gpu1"]
    assert dst.currentText() == "gpu1"
    dst.setCurrentText("gpu0")
    dst.activated.emit(dst.currentIndex())
    op = c.pipeline.program[4]
    assert op.dst_device == "gpu0"
    assert c.undo_stack.undoText() == f"Set {op.display_label} dst_device"
    c.undo_stack.undo()
    assert c.pipeline.program[4].dst_device == "gpu1"
    assert insp.device_combos["dst_device"].currentText() == "gpu1"


def _choose(combo, text: str) -> None:
    """Pick ``text`` in a combo as a user does (activated fires)."""
    combo.setCurrentText(text)
    combo.activated.emit(combo.currentIndex())


def test_the_inspector_edits_a_collectives_communicator_with_undo(editor) -> None:
    c, insp = editor.controller, editor.inspector
    assert c.push(AddCommunicator("pair", ["gpu0", "gpu1"]))
    c.set_selection_indexes([2])
    assert {"communicator", "bytes", "stream"} <= _visible(editor)
    assert "root" not in _visible(editor)
    comm = insp.device_combos["communicator"]
    assert [comm.itemText(i) for i in range(comm.count())] == ["world", "pair"]
    _choose(comm, "pair")
    # both devices' ops of this all-reduce move: each member must make the same call
    program = c.pipeline.program
    assert [program[2].communicator, program[3].communicator] == ["pair", "pair"]
    assert insp.fields["communicator"].error_text() == ""
    assert c.undo_stack.undoText() == "Set grads communicator on 2 devices"
    c.undo_stack.undo()
    assert [program[2].communicator, program[3].communicator] == ["world", "world"]
    c.set_selection_indexes([5])
    assert "device" in _visible(editor)  # a host op's thread, in a two-device pipeline
    assert insp.device_combos["device"].currentText() == "gpu1"
    _choose(insp.device_combos["device"], "gpu0")
    assert c.pipeline.op_device(c.pipeline.program[5]) == "gpu0"
    c.undo_stack.undo()
    assert c.pipeline.op_device(c.pipeline.program[5]) == "gpu1"
    assert "root" in visible_rows("broadcast", "duration_us", True)


def test_typing_a_collectives_size_changes_every_members_op_in_one_step(editor, qtbot) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([3])  # gpu1's part of the all-reduce
    insp.unit.setCurrentText("MiB")
    for text in ("5", "50"):
        insp.size.selectAll()
        QTest.keyClicks(insp.size, text)
        QTest.keyClick(insp.size, Qt.Key.Key_Return)
    program = c.pipeline.program
    assert [program[2].bytes, program[3].bytes] == [50 * MIB, 50 * MIB]
    assert insp.fields["bytes"].error_text() == ""
    c.undo_stack.undo()  # the two commits merged: one step back to the start
    assert [program[2].bytes, program[3].bytes] == [100 * MIB, 100 * MIB]
    # a peer copy's size is its own
    c.set_selection_indexes([4])
    insp.size.selectAll()
    QTest.keyClicks(insp.size, "8")
    QTest.keyClick(insp.size, Qt.Key.Key_Return)
    assert program[4].bytes == 8 * MIB and program[2].bytes == 100 * MIB


def test_the_stream_page_moves_a_stream_to_another_device(editor) -> None:
    c, insp = editor.controller, editor.inspector
    assert c.push(AddStream(Stream("idle", device="gpu0")))
    c.set_selected_stream("idle")
    assert insp.stream_form.isRowVisible(insp.stream_fields["device"])
    combo = insp.stream_device
    combo.setCurrentText("gpu1")
    combo.activated.emit(combo.currentIndex())
    assert c.pipeline.stream_device("idle") == "gpu1"
    assert editor.lanes.lanes()[-1] == "idle"  # under gpu1 now
    c.undo_stack.undo()
    assert c.pipeline.stream_device("idle") == "gpu0"


def test_the_inspector_covers_every_kind() -> None:
    assert set(INSPECTOR_FIELDS) == {k.name for k in REGISTRY}
    assert registered_layers()["inspector"] == frozenset(INSPECTOR_FIELDS)
    assert all("communicator" in INSPECTOR_FIELDS[k] for k in COLLECTIVE_OPS)


def test_the_devices_dialog_adds_renames_and_removes_with_undo(editor, qtbot) -> None:
    c = editor.controller
    dialog = DevicesDialog(c)
    qtbot.addWidget(dialog)
    assert [dialog.devices.item(i).text() for i in range(dialog.devices.count())] == [
        "gpu0",
        "gpu1",
    ]
    assert dialog.add_device()
    assert c.pipeline.device_names == ["gpu0", "gpu1", "gpu2"]
    assert li.device_lane("gpu2") in editor.lanes.lanes()
    assert dialog.rename_device("spare")
    assert c.pipeline.device_names[-1] == "spare"
    assert dialog.remove_device()
    assert c.pipeline.device_names == ["gpu0", "gpu1"]
    # gpu1 is in use: refused, with the reason shown
    dialog.devices.setCurrentRow(1)
    assert not dialog.remove_device()
    assert "gpu1" in dialog.error.text() and "used by" in dialog.error.text()
    c.undo_stack.undo()  # the removal
    c.undo_stack.undo()  # the rename
    assert c.pipeline.device_names == ["gpu0", "gpu1", "gpu2"]
    assert dialog.devices.count() == 3


def test_the_devices_dialog_defines_communicators(editor, qtbot) -> None:
    c = editor.controller
    dialog = DevicesDialog(c)
    qtbot.addWidget(dialog)
    assert dialog.add_device()
    assert dialog.add_communicator()
    name = c.pipeline.communicators[-1].name
    assert c.pipeline.communicator(name).devices == ["gpu0", "gpu1", "gpu2"]
    # untick gpu2 in the members list
    item = dialog.members.item(2)
    assert item.text() == "gpu2"
    item.setCheckState(Qt.CheckState.Unchecked)
    assert c.pipeline.communicator(name).devices == ["gpu0", "gpu1"]
    assert dialog.rename_communicator("pair")
    assert c.pipeline.communicator("pair") is not None
    dialog.communicators.setCurrentRow(0)  # world: used by the all-reduces
    assert not dialog.remove_communicator()
    assert "world" in dialog.error.text()
    c.undo_stack.undo()
    assert c.pipeline.communicator(name) is not None


def test_the_devices_dialog_says_what_uses_each_device(editor, qtbot) -> None:
    dialog = DevicesDialog(editor.controller)
    qtbot.addWidget(dialog)
    # its kernel, all-reduce and host work, and the peer copy that writes to it
    assert dialog.devices.item(1).toolTip() == "gpu1: 1 stream, 4 ops; in world"


def test_choosing_a_peer_copys_destination_as_its_source_reverses_it(editor) -> None:
    c, insp = editor.controller, editor.inspector
    c.set_selection_indexes([4])  # gpu0 -> gpu1 on c0 (a gpu0 stream)
    _choose(insp.device_combos["src_device"], "gpu1")
    op = c.pipeline.program[4]
    assert (op.src_device, op.dst_device) == ("gpu1", "gpu0")  # the other way round
    assert insp.fields["src_device"].error_text() == ""
    c.undo_stack.undo()
    assert (op.src_device, op.dst_device) == ("gpu0", "gpu1")
    # on the destination itself: a copy inside gpu0, allowed on its stream
    _choose(insp.device_combos["dst_device"], "gpu0")
    assert (op.src_device, op.dst_device) == ("gpu0", "gpu0")


def test_a_collective_without_a_communicator_is_refused_with_what_to_do(qtbot) -> None:
    doc = two_devices()
    doc["communicators"] = []
    doc["program"] = [op for op in doc["program"] if op["op"] != "all_reduce"]
    ed = Editor(pipeline_from_dict(doc))
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    said: list[str] = []
    ed.controller.error.connect(said.append)
    n = len(ed.controller.pipeline.program)
    assert not drop_kind(ed.lanes, "all_reduce", 0, "c0")
    assert not ed.palette_widget.append_op("broadcast")
    assert len(ed.controller.pipeline.program) == n
    assert said[0] == (
        "drop refused: an all-reduce runs across the devices of a communicator: declare one "
        "in Pipeline > Devices and communicators first"
    )
    assert said[-1].startswith("a broadcast runs")


def test_dragging_host_work_to_another_devices_host_thread_moves_it_there(editor) -> None:
    c, lanes = editor.controller, editor.lanes
    host = c.pipeline.program[5]
    assert c.pipeline.op_device(host) == "gpu1"
    target = QPointF(lanes.column_x(5) + 5, lanes.lane_y(li.host_lane("gpu0")) + 20)
    lanes.drag_blocks_to([host.uid], host.uid, target)
    assert c.pipeline.op_device(host) == "gpu0" and lanes.lane_of(host) == li.host_lane("gpu0")
    assert not validate(c.pipeline)
    c.undo_stack.undo()
    assert c.pipeline.op_device(host) == "gpu1" and lanes.lane_of(host) == li.host_lane("gpu1")
