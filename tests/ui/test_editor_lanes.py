"""The lane editor and the palette, driven the way a user drives them (drops, mouse, keys)."""

from __future__ import annotations

import html
import json
import tempfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QGuiApplication, QImage, QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from test_editor_helpers import (
    MIB,
    Editor,
    block_point,
    drop_kind,
    drop_point,
    sample,
    send_drop,
)

from swimlanes.model import Pipeline
from swimlanes.model.document import CUDA_CALLS
from swimlanes.model.io import load_pipeline
from swimlanes.resources import example_path, icons_dir
from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.editor.common import OP_MIME, OPS_MIME, PALETTE_KINDS
from swimlanes.ui.icons import app_icon
from swimlanes.ui.style import op_colour

SCREENSHOT = Path(tempfile.gettempdir()) / "editor.png"
CTRL = Qt.KeyboardModifier.ControlModifier
LEFT = Qt.MouseButton.LeftButton


@pytest.fixture
def editor(qtbot) -> Editor:
    ed = Editor(sample())
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    return ed


@pytest.fixture
def empty(qtbot) -> Editor:
    ed = Editor(Pipeline())
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    return ed


def test_palette_lists_every_kind_with_icon_tooltip_and_drag_data(editor: Editor) -> None:
    palette = editor.palette_widget
    assert palette.kinds() == list(PALETTE_KINDS)
    for kind in PALETTE_KINDS:
        item = palette.item_for(kind)
        assert not item.icon().isNull()
        assert CUDA_CALLS[kind] in html.unescape(item.toolTip())
        assert len(item.toolTip()) > len(CUDA_CALLS[kind]) + 30  # and says what it does
    assert "cudaStreamWaitEvent" in palette.item_for("event_wait").toolTip()
    mime = palette.list.mimeData([palette.item_for("kernel")])
    assert bytes(mime.data(OP_MIME).data()) == b"kernel"
    # the icon is drawn in the op's category colour
    image: QImage = palette.item_for("kernel").icon().pixmap(24, 24).toImage()
    assert image.pixelColor(3, 12).name() == op_colour("kernel").name()


def test_drop_from_palette_inserts_at_the_drop_point_with_defaults(editor: Editor) -> None:
    lanes, c = editor.lanes, editor.controller
    mime = QMimeData()
    mime.setData(OP_MIME, b"h2d")
    assert send_drop(lanes.viewport(), mime, drop_point(lanes, 2, "s2"), hover_only=True)
    indicator = lanes.drop_indicator()
    assert indicator is not None and indicator.isVisible()
    assert indicator.line().x1() == lanes.column_x(2)
    assert lanes.lane_y("s2") < indicator.line().y1() < lanes.lane_y("s2") + li.LANE_H
    assert drop_kind(lanes, "h2d", 2, "s2")
    op = c.pipeline.program[2]
    assert (op.op, op.stream, op.bytes, op.host_memory, op.is_async) == (
        "h2d", "s2", 64 * MIB, "pinned", True,
    )  # fmt: skip
    assert not indicator.isVisible() if lanes.drop_indicator() is indicator else True
    assert c.selection() == [op.uid]
    assert drop_kind(lanes, "kernel", 0, "default")
    k = c.pipeline.program[0]
    assert (k.stream, k.blocks, k.threads, k.duration_us) == (None, 1024, 256, 100.0)
    assert drop_kind(lanes, "event_record", 8, "s1")
    assert c.pipeline.program[8].event == "e1"
    assert drop_kind(lanes, "event_wait", 9, "s2")
    assert c.pipeline.program[9].event == "e1"  # the most recent record
    assert drop_kind(lanes, "device_sync", 3, "s2")  # host ops go to the host lane
    assert c.pipeline.program[3].stream is None
    assert lanes.block(c.pipeline.program[3].uid).rect().top() < lanes.lane_y("default")


def test_drop_of_unknown_data_is_refused(editor: Editor) -> None:
    before = editor.controller.pipeline.to_dict()
    mime = QMimeData()
    mime.setText("not an op")
    assert not send_drop(editor.lanes.viewport(), mime, drop_point(editor.lanes, 1, "s1"))
    mime = QMimeData()
    mime.setData(OP_MIME, b"warp_drive")
    errors: list[str] = []
    editor.controller.error.connect(errors.append)
    assert not send_drop(editor.lanes.viewport(), mime, drop_point(editor.lanes, 1, "s1"))
    assert editor.controller.pipeline.to_dict() == before
    assert errors and "unknown op kind" in errors[0]


def test_blocks_sit_in_program_columns_and_show_label_and_index(editor: Editor) -> None:
    lanes, c = editor.lanes, editor.controller
    for index, op in enumerate(c.pipeline.program):
        item = lanes.block(op.uid)
        assert item.index == index
        assert item.rect().left() == pytest.approx(lanes.column_x(index) + li.BLOCK_GAP / 2)
        lane = lanes.lane_of(op)
        assert lanes.lane_y(lane) <= item.rect().top() < lanes.lane_y(lane) + li.LANE_H
        assert lanes.block_tooltip(op.uid).startswith(f"#{index}  ")
    assert lanes.lanes() == ["", "default", "s1", "s2"]
    # the wait is drawn as an arrow from its record
    arrows = [i for i in lanes.scene().items() if i.__class__.__name__ == "QGraphicsPathItem"]
    assert len(arrows) == 1
    path = arrows[0].path()
    record, wait = lanes.block(c.pipeline.program[2].uid), lanes.block(c.pipeline.program[3].uid)
    assert path.pointAtPercent(0).x() == pytest.approx(record.rect().right())
    assert path.pointAtPercent(1).y() == pytest.approx(wait.rect().center().y(), abs=5)


def _drag(lanes, start: QPoint, end: QPoint, mods=Qt.KeyboardModifier.NoModifier) -> None:
    vp = lanes.viewport()
    QTest.mousePress(vp, LEFT, mods, start)
    QTest.mouseMove(vp, QPoint(start.x() + 10, start.y()))
    mid = QPoint((start.x() + end.x()) // 2, (start.y() + end.y()) // 2)
    QTest.mouseMove(vp, mid)
    QTest.mouseMove(vp, end)
    QTest.mouseRelease(vp, LEFT, mods, end)


def test_drag_block_within_and_between_lanes_is_one_undo_step(editor: Editor) -> None:
    lanes, c = editor.lanes, editor.controller
    original = c.pipeline.to_dict()
    _drag(lanes, block_point(lanes, 1, "s1"), block_point(lanes, 4, "s2"))
    assert editor.labels() == ["in", "event record e0", "event wait e0", "out", "K0", "device sync"]
    assert c.pipeline.program[4].stream == "s2"
    assert c.undo_stack.count() == 1  # the moves during the drag merged
    assert c.undo_stack.undoText() == "Move K0"
    c.undo_stack.undo()
    assert c.pipeline.to_dict() == original
    _drag(lanes, block_point(lanes, 0, "s1"), block_point(lanes, 1, "s1"))
    assert editor.labels()[:2] == ["K0", "in"]
    assert c.undo_stack.count() == 1  # a new drag is a new step; the undone one is gone


def test_click_ctrl_click_and_rubber_band_select(editor: Editor) -> None:
    lanes, c = editor.lanes, editor.controller
    program = c.pipeline.program
    vp = lanes.viewport()
    QTest.mouseClick(vp, LEFT, Qt.KeyboardModifier.NoModifier, block_point(lanes, 1, "s1"))
    assert c.selection() == [program[1].uid]
    QTest.mouseClick(vp, LEFT, CTRL, block_point(lanes, 4, "s2"))
    assert c.selection() == [program[1].uid, program[4].uid]
    QTest.mouseClick(vp, LEFT, CTRL, block_point(lanes, 1, "s1"))
    assert c.selection() == [program[4].uid]
    # rubber band from empty space over columns 0..2 of s1
    start = lanes.mapFromScene(lanes.column_x(0) + 2, lanes.lane_y("s1") + 2)
    end = lanes.mapFromScene(lanes.column_x(2) + 50, lanes.lane_y("s1") + li.LANE_H - 3)
    QTest.mousePress(vp, LEFT, Qt.KeyboardModifier.NoModifier, start)
    QTest.mouseMove(vp, QPoint(start.x() + 30, start.y() + 20))
    QTest.mouseMove(vp, end)
    QTest.mouseRelease(vp, LEFT, Qt.KeyboardModifier.NoModifier, end)
    assert c.selection() == [program[0].uid, program[1].uid, program[2].uid]
    # clicking a header selects the stream for the inspector
    QTest.mouseClick(
        vp, LEFT, Qt.KeyboardModifier.NoModifier, lanes.mapFromScene(20, lanes.lane_y("s2") + 10)
    )
    assert c.selected_stream() == "s2" and c.selection() == []


def test_delete_duplicate_copy_paste_with_keys(editor: Editor) -> None:
    lanes, c = editor.lanes, editor.controller
    original = c.pipeline.to_dict()
    lanes.setFocus()
    c.set_selection_indexes([0, 1])
    QTest.keyClick(lanes, Qt.Key.Key_D, CTRL)
    assert editor.labels()[:4] == ["in", "K0", "in", "K0"]
    assert c.selected_indexes() == [2, 3]
    assert c.pipeline.program[2].uid != c.pipeline.program[0].uid
    QTest.keyClick(lanes, Qt.Key.Key_Delete)
    assert c.pipeline.to_dict() == original
    c.set_selection_indexes([1])
    QTest.keyClick(lanes, Qt.Key.Key_C, CTRL)
    payload = json.loads(bytes(QGuiApplication.clipboard().mimeData().data(OPS_MIME).data()))
    assert payload["ops"][0]["label"] == "K0"
    c.set_selection_indexes([4])  # paste after "out", on its stream
    QTest.keyClick(lanes, Qt.Key.Key_V, CTRL)
    pasted = c.pipeline.program[5]
    assert (pasted.label, pasted.stream, pasted.duration_us) == ("K0", "s1", 370)
    assert c.selection() == [pasted.uid]
    for _ in range(3):
        c.undo_stack.undo()
    assert c.pipeline.to_dict() == original
    for _ in range(3):
        c.undo_stack.redo()
    assert [op.display_label for op in c.pipeline.program][5] == "K0"


def test_paste_of_foreign_text_says_why(editor: Editor) -> None:
    errors: list[str] = []
    editor.controller.error.connect(errors.append)
    QGuiApplication.clipboard().setText("hello")
    assert not editor.lanes.paste()
    assert errors == ["the clipboard holds no Swimlanes ops"]
    QGuiApplication.clipboard().setText(
        json.dumps({"format": "swimlanes-ops", "ops": [{"op": "kernel"}]})
    )
    assert not editor.lanes.paste()
    assert "blocks" in errors[-1]


def test_stream_commands_from_the_lane_menus(editor: Editor, monkeypatch) -> None:
    lanes, c = editor.lanes, editor.controller
    menus = lanes.menus
    titles = [a.text() for a in menus.stream_menu("s1").actions()]
    assert titles[:2] == ["Add stream", ""] and "Remove stream and its ops" in titles
    default_menu = menus.stream_menu("default")
    assert not next(a for a in default_menu.actions() if a.text() == "Rename\u2026").isEnabled()
    assert menus.add_stream()
    assert lanes.lanes()[-1] == "s3" and c.selected_stream() == "s3"
    monkeypatch.setattr(menus, "ask_text", lambda *a: "copy")
    assert menus.rename_stream("s1")
    assert "copy" in lanes.lanes() and c.pipeline.program[0].stream == "copy"
    monkeypatch.setattr(menus, "ask_int", lambda *a: -2)
    assert menus.set_priority("s2")
    assert c.pipeline.stream("s2").priority == -2
    move_down = next(a for a in menus.stream_menu("copy").actions() if a.text() == "Move down")
    move_down.trigger()
    assert lanes.lanes() == ["", "default", "s2", "copy", "s3"]
    kind_menu = next(a for a in menus.stream_menu("s2").actions() if a.text() == "Kind").menu()
    next(a for a in kind_menu.actions() if a.text().startswith("Non-blocking")).trigger()
    assert c.pipeline.stream("s2").kind == "non_blocking"
    remove = next(a for a in menus.stream_menu("copy").actions() if a.text().startswith("Remove"))
    remove.trigger()
    assert editor.labels() == ["event wait e0", "out", "device sync"]
    while c.undo_stack.canUndo():
        c.undo_stack.undo()
    assert c.pipeline.to_dict() == sample().to_dict()


def test_op_menu_moves_and_retypes(editor: Editor) -> None:
    lanes, c = editor.lanes, editor.controller
    c.set_selection_indexes([1])
    menu = lanes.menus.op_menu()
    move = next(a for a in menu.actions() if a.text() == "Move to stream").menu()
    next(a for a in move.actions() if a.text() == "s2").trigger()
    assert c.pipeline.program[1].stream == "s2"
    retype = next(a for a in lanes.menus.op_menu().actions() if a.text() == "Change kind").menu()
    next(a for a in retype.actions() if a.text() == "Memset").trigger()
    op = c.pipeline.program[1]
    assert (op.op, op.bytes, op.blocks, op.label) == ("memset", 64 * MIB, None, "K0")


def test_build_two_streams_example_from_an_empty_document_with_drops(empty: Editor) -> None:
    """The shipped two-streams example, built with the mouse: add lanes, drop ops, set fields."""
    lanes, c, insp = empty.lanes, empty.controller, empty.inspector
    assert lanes.menus.add_stream() and lanes.menus.add_stream()
    plan = [("h2d", "s1"), ("kernel", "s1"), ("d2h", "s1"), ("h2d", "s2"), ("kernel", "s2"),
            ("d2h", "s2"), ("device_sync", "default")]  # fmt: skip
    for index, (kind, lane) in enumerate(plan):
        assert drop_kind(lanes, kind, index, lane)
    expected = load_pipeline(example_path("two-streams"))
    # fill in the example's labels and textbook durations through the inspector
    for index, want in enumerate(expected.program):
        c.set_selection_indexes([index])
        insp.label.setText(want.label or "")
        insp.label.editingFinished.emit()
        if want.bytes is not None:  # (before the duration: a new size drops a copy's)
            insp.size.setText(str(want.bytes))
            insp.unit.setCurrentText("B")
            insp.size.editingFinished.emit()
        if want.duration_us is not None:
            insp.time.setText(f"{want.duration_us:g}")
            insp.time.editingFinished.emit()
    built = c.pipeline.to_dict()
    want = expected.to_dict()
    assert built["streams"] == want["streams"]
    strip = ("async",)  # the palette's copies say async explicitly; the file leaves the default

    def norm(op: dict) -> dict:
        return {k: v for k, v in op.items() if k not in strip}

    assert [norm(o) for o in built["program"]] == [norm(o) for o in want["program"]]
    assert all(o.get("async", True) for o in built["program"])


def test_screenshot_of_a_four_stream_pipeline(editor: Editor) -> None:
    lanes, c = editor.lanes, editor.controller
    for name in ("s3", "s4"):
        lanes.menus.add_stream(name)
    for index, lane in enumerate(["s3", "s4", "s3", "s4"]):
        assert drop_kind(lanes, "kernel", 6 + index, lane)
    c.set_selection_indexes([1])
    kernel = c.pipeline.program[7].uid
    lanes.centerOn(lanes.block(kernel))
    image = lanes.viewport().grab().toImage()
    centre = lanes.block_center(kernel)
    assert image.pixelColor(centre.x() - 30, centre.y()).name() == op_colour("kernel").name()
    # headers stay pinned at the left edge when the lanes scroll sideways
    assert lanes.horizontalScrollBar().value() > 0
    header = lanes.mapFromScene(lanes.header("s3").sceneBoundingRect().topLeft())
    assert abs(header.x()) <= 1
    editor.grab().save(str(SCREENSHOT))


def test_arrow_keys_select_and_alt_arrows_move(editor: Editor) -> None:
    lanes, c = editor.lanes, editor.controller
    lanes.setFocus()
    QTest.keyClick(lanes, Qt.Key.Key_Right)
    assert c.selected_indexes() == [0]
    QTest.keyClick(lanes, Qt.Key.Key_Right)
    assert c.selected_indexes() == [1]
    alt = Qt.KeyboardModifier.AltModifier
    QTest.keyClick(lanes, Qt.Key.Key_Right, alt)
    assert editor.labels()[2] == "K0" and c.selected_indexes() == [2]
    QTest.keyClick(lanes, Qt.Key.Key_Down, alt)
    assert c.pipeline.program[2].stream == "s2"
    QTest.keyClick(lanes, Qt.Key.Key_Down, alt)  # s2 is the last lane: stays
    assert c.pipeline.program[2].stream == "s2"
    QTest.keyClick(lanes, Qt.Key.Key_Up, alt)
    QTest.keyClick(lanes, Qt.Key.Key_Up, alt)
    assert c.pipeline.program[2].stream is None  # the default lane
    QTest.keyClick(lanes, Qt.Key.Key_Left)
    assert c.selected_indexes() == [1]


def test_ctrl_wheel_zooms_the_lanes(editor: Editor) -> None:
    lanes = editor.lanes
    centre = lanes.viewport().rect().center()
    event = QWheelEvent(
        QPointF(centre), QPointF(lanes.viewport().mapToGlobal(centre)), QPoint(0, 0),
        QPoint(0, 120), Qt.MouseButton.NoButton, CTRL, Qt.ScrollPhase.NoScrollPhase, False,
    )  # fmt: skip
    QApplication.sendEvent(lanes.viewport(), event)
    assert lanes.transform().m11() == pytest.approx(1.15)


def test_application_icon_is_a_shipped_svg() -> None:
    path = icons_dir() / "swimlanes.svg"
    assert ElementTree.parse(path).getroot().tag.endswith("svg")
    icon = app_icon()
    assert not icon.isNull()
    image = icon.pixmap(64, 64).toImage()
    assert image.pixelColor(32, 32).alpha() == 255  # it rendered, not an empty pixmap


def test_dragging_a_multi_selection_moves_it_together(editor: Editor) -> None:
    lanes, c = editor.lanes, editor.controller
    c.set_selection_indexes([0, 1, 5])  # in, K0 and the device sync (a host op)
    _drag(lanes, block_point(lanes, 1, "s1"), block_point(lanes, 2, "s2"))
    assert editor.labels() == ["event record e0", "in", "K0", "device sync", "event wait e0", "out"]
    streams = [op.stream for op in c.pipeline.program]
    assert streams == ["s1", "s2", "s2", None, "s2", "s2"]  # the host op stays on the host
    assert c.undo_stack.count() == 1 and c.undo_stack.undoText() == "Move 3 ops"


def test_a_palette_drop_is_always_a_copy(editor: Editor) -> None:
    lanes = editor.lanes
    mime = QMimeData()
    mime.setData(OP_MIME, b"kernel")
    pos = drop_point(lanes, 1, "s1")
    move = Qt.DropAction.MoveAction | Qt.DropAction.CopyAction  # shift proposes a move
    mods = Qt.KeyboardModifier.ShiftModifier
    QApplication.sendEvent(lanes.viewport(), QDragEnterEvent(pos, move, mime, LEFT, mods))
    drop = QDropEvent(QPointF(pos), move, mime, LEFT, mods)
    QApplication.sendEvent(lanes.viewport(), drop)
    assert drop.isAccepted() and drop.dropAction() == Qt.DropAction.CopyAction
    assert editor.palette_widget.list.count() == len(PALETTE_KINDS)


def test_double_click_a_lane_header_renames_the_stream(editor: Editor, monkeypatch) -> None:
    lanes, c = editor.lanes, editor.controller
    asked: list[str] = []
    monkeypatch.setattr(lanes.menus, "ask_text", lambda *a: asked.append(a[2]) or "loads")
    header = QPoint(20, lanes.mapFromScene(0, lanes.lane_y("s1") + 10).y())
    QTest.mouseDClick(lanes.viewport(), LEFT, Qt.KeyboardModifier.NoModifier, header)
    assert asked == ["s1"]
    assert c.pipeline.streams[0].name == "loads" and c.pipeline.program[0].stream == "loads"
    default = QPoint(20, lanes.mapFromScene(0, lanes.lane_y("default") + 10).y())
    QTest.mouseDClick(lanes.viewport(), LEFT, Qt.KeyboardModifier.NoModifier, default)
    assert asked == ["s1"]  # the legacy default stream cannot be renamed: not even asked


def test_a_drag_resting_at_the_edge_scrolls_and_carries_the_block(qtbot) -> None:
    p = sample()
    for _ in range(40):
        p.program.append(p.program[1].copy())
    ed = Editor(p)
    qtbot.addWidget(ed)
    ed.show()
    qtbot.waitExposed(ed)
    lanes, c = ed.lanes, ed.controller
    uid = c.pipeline.program[0].uid
    vp = lanes.viewport()
    start = block_point(lanes, 0, "s1")
    edge = QPoint(vp.width() - 5, start.y())
    QTest.mousePress(vp, LEFT, Qt.KeyboardModifier.NoModifier, start)
    QTest.mouseMove(vp, QPoint(start.x() + 20, start.y()))
    QTest.mouseMove(vp, edge)
    index_at_edge = c.pipeline.op_index(uid)
    qtbot.waitUntil(lambda: lanes.horizontalScrollBar().value() > 100, timeout=3000)
    QTest.mouseRelease(vp, LEFT, Qt.KeyboardModifier.NoModifier, edge)
    assert c.pipeline.op_index(uid) > index_at_edge  # it went on moving with the view
    assert c.undo_stack.count() == 1
    assert not lanes.edge_scroller.timer.isActive()
