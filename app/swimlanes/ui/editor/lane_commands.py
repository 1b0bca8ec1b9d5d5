"""Keyboard, clipboard and insert commands of the lane editor (a mixin of LaneEditor)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QMimeData, Qt
from PySide6.QtGui import QGuiApplication, QKeyEvent, QKeySequence

from swimlanes.model.edits import (
    EditError,
    InsertOps,
    MoveOps,
    RemoveOps,
    issue_on_thread,
    new_ops,
    takes_stream,
)
from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.editor.common import OPS_MIME, new_op_refusal, ops_from_json, ops_to_json

if TYPE_CHECKING:
    from swimlanes.ui.document_controller import DocumentController


class LaneCommands:
    """Edits the lane editor makes from keys, the clipboard and drops.

    Expects ``controller``, ``lane_of`` and ``_lanes`` from :class:`LaneEditor`.
    """

    controller: DocumentController
    _lanes: list[str]

    def insert_new_op(
        self,
        kind: str,
        index: int,
        stream: str,
        device: str | None = None,
        thread: str | None = None,
    ) -> bool:
        """Insert a new ``kind`` op with default fields at program ``index`` on ``stream``;
        a host-only op dropped on ``device``'s host thread, or on host thread ``thread``'s lane,
        is issued by that thread, and a collective is inserted once per member device of its
        communicator."""
        pipeline = self.controller.pipeline
        reason = new_op_refusal(kind, pipeline)
        if reason:
            self.controller.error.emit(reason)
            return False
        try:
            ops = new_ops(kind, pipeline, stream, index)
        except EditError as err:
            self.controller.error.emit(str(err))
            return False
        if device is not None and not takes_stream(kind):
            # the first device's host ops name none, as files written by hand do
            ops[0].device = None if device == pipeline.device_names[0] else device
        if thread is not None and not takes_stream(kind):
            issue_on_thread(pipeline, ops[0], thread)
        if not self.controller.push(InsertOps(index, ops)):
            return False
        self.controller.set_selection([op.uid for op in ops])
        return True

    def insert_json(self, text: str, index: int, stream: str) -> bool:
        try:
            ops = ops_from_json(text, self.controller.pipeline, stream)
        except EditError as err:
            self.controller.error.emit(str(err))
            return False
        if not self.controller.push(InsertOps(index, ops)):
            return False
        self.controller.set_selection([op.uid for op in ops])
        return True

    # -- keyboard and clipboard -----------------------------------------------------------
    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        ctrl = event.modifiers() & Qt.KeyboardModifier.ControlModifier
        if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace):
            self.delete_selection()
        elif ctrl and event.key() == Qt.Key.Key_D:
            self.duplicate_selection()
        elif event.matches(QKeySequence.StandardKey.Copy):
            self.copy_selection()
        elif event.matches(QKeySequence.StandardKey.Cut):
            if self.copy_selection():
                self.delete_selection()
        elif event.matches(QKeySequence.StandardKey.Paste):
            self.paste()
        elif event.matches(QKeySequence.StandardKey.SelectAll):
            self.controller.set_selection([op.uid for op in self.controller.pipeline.program])
        elif event.key() == Qt.Key.Key_Escape:
            self.controller.set_selection([])
        elif not self._navigate(event):
            super().keyPressEvent(event)
            return
        event.accept()

    def _navigate(self, event: QKeyEvent) -> bool:
        """Left/Right select the previous/next op; with Alt they move the selection in issue
        order, and Alt+Up/Down move it to the stream lane above/below."""
        c = self.controller
        key = event.key()
        alt = bool(event.modifiers() & Qt.KeyboardModifier.AltModifier)
        if key not in (Qt.Key.Key_Left, Qt.Key.Key_Right, Qt.Key.Key_Up, Qt.Key.Key_Down):
            return False
        indexes = c.selected_indexes()
        n = len(c.pipeline.program)
        if not indexes:
            if n and key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
                c.set_selection_indexes([0 if key == Qt.Key.Key_Right else n - 1])
            return True
        step = -1 if key in (Qt.Key.Key_Left, Qt.Key.Key_Up) else 1
        if not alt:
            if key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
                target = indexes[0] - 1 if step < 0 else indexes[-1] + 1
                c.set_selection_indexes([max(0, min(target, n - 1))])
            return True
        uids = c.selection()
        if key in (Qt.Key.Key_Left, Qt.Key.Key_Right):
            target = indexes[0] + step
            if 0 <= target <= n - len(uids):
                c.push(MoveOps(uids, target))
            return True
        lane = self.lane_of(c.pipeline.program[indexes[0]])
        if not li.is_stream_lane(lane) or lane not in self._lanes:
            return True
        # the next stream lane up or down, past host threads and device headers
        row = self._lanes.index(lane) + step
        while 0 <= row < len(self._lanes) and not li.is_stream_lane(self._lanes[row]):
            row += step
        if 0 <= row < len(self._lanes):
            c.push(MoveOps(uids, indexes[0], self._lanes[row]))
        return True

    def delete_selection(self) -> bool:
        uids = self.controller.selection()
        return bool(uids) and self.controller.push(RemoveOps(uids))

    def duplicate_selection(self) -> bool:
        """Insert copies of the selected ops right after the last of them, and select them."""
        ops = self.controller.selected_ops()
        if not ops:
            return False
        copies = [op.copy() for op in ops]
        after = self.controller.selected_indexes()[-1] + 1
        if not self.controller.push(InsertOps(after, copies)):
            return False
        self.controller.set_selection([op.uid for op in copies])
        return True

    def copy_selection(self) -> bool:
        ops = self.controller.selected_ops()
        if not ops:
            return False
        mime = QMimeData()
        text = ops_to_json(ops)
        mime.setData(OPS_MIME, text.encode())
        mime.setText(text)
        QGuiApplication.clipboard().setMimeData(mime)
        return True

    def paste(self) -> bool:
        """Insert the clipboard's ops after the selection (or at the end) on the current lane."""
        mime = QGuiApplication.clipboard().mimeData()
        if mime is None:
            return False
        text = (
            bytes(mime.data(OPS_MIME).data()).decode() if mime.hasFormat(OPS_MIME) else mime.text()
        )
        indexes = self.controller.selected_indexes()
        index = indexes[-1] + 1 if indexes else len(self.controller.pipeline.program)
        return self.insert_json(text, index, self.controller.current_stream())
