"""The op palette: every op kind with its icon; drag one onto a lane, or double-click it."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QSize, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from swimlanes.model.edits import EditError, InsertOps, new_ops
from swimlanes.model.op_kinds import op_kind
from swimlanes.ui.document_controller import DocumentController
from swimlanes.ui.editor.common import OP_MIME, PALETTE_KINDS, new_op_refusal, op_tooltip
from swimlanes.ui.icons import op_icon

_KIND_ROLE = Qt.ItemDataRole.UserRole


class _KindList(QListWidget):
    """A list whose drags carry the op kind as :data:`OP_MIME`."""

    def mimeTypes(self) -> list[str]:  # noqa: N802 - Qt's name
        return [OP_MIME]

    def supportedDropActions(self) -> Qt.DropAction:  # noqa: N802 - Qt's name
        return Qt.DropAction.CopyAction  # drags copy a kind; the palette never loses one

    def mimeData(self, items: list[QListWidgetItem]) -> QMimeData:  # noqa: N802 - Qt's name
        mime = QMimeData()
        if items:
            mime.setData(OP_MIME, items[0].data(_KIND_ROLE).encode("ascii"))
            mime.setText(items[0].data(_KIND_ROLE))
        return mime


class OpPalette(QWidget):
    """Op kinds to drag onto the lane editor; double-click appends to the current lane."""

    op_added = Signal(int)  # uid of an op appended by double-click

    def __init__(self, controller: DocumentController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.list = _KindList(self)
        self.list.setIconSize(QSize(24, 24))
        self.list.setDragEnabled(True)
        self.list.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        self.list.setDefaultDropAction(Qt.DropAction.CopyAction)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.list.setUniformItemSizes(True)
        self.list.setSpacing(1)
        for kind in PALETTE_KINDS:
            item = QListWidgetItem(op_icon(kind), op_kind(kind).title)
            item.setData(_KIND_ROLE, kind)
            item.setToolTip(op_tooltip(kind))
            item.setStatusTip("Drag onto a lane, or double-click to add to the current lane")
            self.list.addItem(item)
        self.list.itemDoubleClicked.connect(self._append)
        layout.addWidget(self.list)
        hint = QLabel("Drag onto a lane.\nDouble-click: append to the selected lane.")
        hint.setWordWrap(True)
        hint.setEnabled(False)
        layout.addWidget(hint)

    def kinds(self) -> list[str]:
        return [self.list.item(i).data(_KIND_ROLE) for i in range(self.list.count())]

    def item_for(self, kind: str) -> QListWidgetItem:
        return self.list.item(PALETTE_KINDS.index(kind))

    def append_op(self, kind: str) -> bool:
        """Append a new ``kind`` op to the end of the program, on the current lane (a
        collective: one op per member device of its communicator, as NCCL needs)."""
        c = self.controller
        reason = new_op_refusal(kind, c.pipeline)
        if reason:
            c.error.emit(reason)
            return False
        try:
            ops = new_ops(kind, c.pipeline, c.current_stream())
        except EditError as err:
            c.error.emit(str(err))
            return False
        if not c.push(InsertOps(len(c.pipeline.program), ops)):
            return False
        c.set_selection([op.uid for op in ops])
        self.op_added.emit(ops[0].uid)
        return True

    def _append(self, item: QListWidgetItem) -> None:
        self.append_op(item.data(_KIND_ROLE))
