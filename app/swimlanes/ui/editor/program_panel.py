"""The host program panel: the ops in issue order as CUDA-like code lines, reorderable.

Issue order matters (depth-first vs breadth-first), so it is shown and changed directly:
drag lines to reorder, or Alt+Up / Alt+Down. Selection is shared with the lane editor.
"""

from __future__ import annotations

import json

from PySide6.QtCore import (
    QAbstractListModel,
    QItemSelectionModel,
    QMimeData,
    QModelIndex,
    QPersistentModelIndex,
    QSize,
    Qt,
)
from PySide6.QtGui import QDropEvent, QFont, QFontDatabase, QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLabel,
    QListView,
    QVBoxLayout,
    QWidget,
)

from swimlanes.model.edits import MoveOps, RemoveOps, move_index_for_insertion
from swimlanes.ui.document_controller import DocumentController
from swimlanes.ui.editor.code_lines import program_lines
from swimlanes.ui.icons import op_icon
from swimlanes.ui.selection_ranges import rows_selection

#: Icon size of a program line: compact rows, so the panel shows more of the program.
PROGRAM_ICON_PX = 18
ROWS_MIME = "application/x-swimlanes-program-rows"
_Index = QModelIndex | QPersistentModelIndex


class ProgramModel(QAbstractListModel):
    """One row per op: "#3  cudaMemcpyAsync(...)" with the op's icon."""

    def __init__(self, controller: DocumentController):
        super().__init__()
        self.controller = controller
        self._lines: list[str] = []
        self.refresh()

    def refresh(self) -> None:
        """Re-read the program: changed rows only when the row count is the same."""
        lines = program_lines(self.controller.pipeline)
        if len(lines) != len(self._lines):
            self.beginResetModel()
            self._lines = lines
            self.endResetModel()
            return
        changed = [i for i, (a, b) in enumerate(zip(lines, self._lines, strict=True)) if a != b]
        self._lines = lines
        if changed:
            # icons change with the lines (a retype); row order may too (a move)
            self.dataChanged.emit(self.index(changed[0]), self.index(changed[-1]))

    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self._lines)

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or index.row() >= len(self._lines):
            return None
        op = self.controller.pipeline.program[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{index.row():>3}  {self._lines[index.row()]}"
        if role == Qt.ItemDataRole.DecorationRole:
            return op_icon(op.op)
        if role == Qt.ItemDataRole.ToolTipRole:
            return f"#{index.row()} {op.display_label}: drag or Alt+Up/Down to change issue order"
        if role == Qt.ItemDataRole.UserRole:
            return op.uid
        return None

    def flags(self, index: _Index) -> Qt.ItemFlag:
        base = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.isValid():
            return base | Qt.ItemFlag.ItemIsDragEnabled
        return Qt.ItemFlag.ItemIsDropEnabled

    def supportedDropActions(self) -> Qt.DropAction:  # noqa: N802 - Qt's name
        return Qt.DropAction.MoveAction

    def mimeTypes(self) -> list[str]:  # noqa: N802 - Qt's name
        return [ROWS_MIME]

    def mimeData(self, indexes: list[QModelIndex]) -> QMimeData:  # noqa: N802 - Qt's name
        mime = QMimeData()
        rows = sorted({i.row() for i in indexes})
        payload = {"document": id(self.controller), "rows": rows}
        mime.setData(ROWS_MIME, json.dumps(payload).encode())
        return mime

    def canDropMimeData(self, data, action, row, column, parent) -> bool:  # noqa: N802
        return data.hasFormat(ROWS_MIME)


class ProgramList(QListView):
    """The list; drops are turned into one MoveOps edit instead of Qt's row moves."""

    def __init__(self, controller: DocumentController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller

    def rows_mime(self, rows: list[int]) -> QMimeData:
        """What dragging these rows carries (tests build drops from it)."""
        return self.model().mimeData([self.model().index(r) for r in rows])

    def _dragged_rows(self, mime: QMimeData) -> list[int] | None:
        """Rows of this document's program that ``mime`` carries, else None."""
        if not mime.hasFormat(ROWS_MIME):
            return None
        try:
            payload = json.loads(bytes(mime.data(ROWS_MIME).data()).decode())
            rows = [int(r) for r in payload["rows"]]
        except (ValueError, TypeError, KeyError):
            return None
        count = len(self.controller.pipeline.program)
        if payload.get("document") != id(self.controller) or not rows:
            return None
        return rows if all(0 <= r < count for r in rows) else None

    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().dragEnterEvent(event)
        if self._dragged_rows(event.mimeData()) is not None:
            event.setDropAction(Qt.DropAction.MoveAction)
            event.accept()

    def dragMoveEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().dragMoveEvent(event)  # draws the drop indicator
        if self._dragged_rows(event.mimeData()) is not None:
            event.setDropAction(Qt.DropAction.MoveAction)
            event.accept()

    def drop_row(self, event: QDropEvent) -> int:
        """The row a drop at the event's position inserts before (0 .. row count)."""
        pos = event.position().toPoint()
        index = self.indexAt(pos)
        if not index.isValid():
            return self.model().rowCount()
        rect = self.visualRect(index)
        return index.row() + (1 if pos.y() > rect.center().y() else 0)

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt's name
        mime = event.mimeData()
        self.setState(QAbstractItemView.State.NoState)
        self.viewport().update()
        rows = self._dragged_rows(mime)
        if rows is None:
            event.ignore()
            return
        program = self.controller.pipeline.program
        uids = [program[r].uid for r in sorted(set(rows))]
        target = move_index_for_insertion(self.controller.pipeline, uids, self.drop_row(event))
        event.setDropAction(Qt.DropAction.CopyAction)  # the view must not remove rows itself
        event.accept()
        if self.controller.pipeline.op_index(uids[0]) != target or not _contiguous(program, uids):
            self.controller.push(MoveOps(uids, target))
            self.controller.set_selection(uids)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        alt = event.modifiers() & Qt.KeyboardModifier.AltModifier
        if alt and event.key() in (Qt.Key.Key_Up, Qt.Key.Key_Down):
            self.move_selection(-1 if event.key() == Qt.Key.Key_Up else 1)
            event.accept()
            return
        if event.key() == Qt.Key.Key_Delete and self.controller.selection():
            self.controller.push(RemoveOps(self.controller.selection()))
            event.accept()
            return
        super().keyPressEvent(event)

    def move_selection(self, step: int) -> bool:
        """Move the selected ops one place earlier (-1) or later (+1) in issue order."""
        c = self.controller
        uids = c.selection()
        if not uids:
            return False
        first = c.selected_indexes()[0]
        target = first + step
        if not 0 <= target <= len(c.pipeline.program) - len(uids):
            return False
        return c.push(MoveOps(uids, target))


def _contiguous(program: list, uids: list[int]) -> bool:
    indexes = sorted(i for i, op in enumerate(program) if op.uid in set(uids))
    return indexes == list(range(indexes[0], indexes[0] + len(indexes)))


class HostProgramPanel(QWidget):
    """The host program in issue order, as code; reorder by drag or Alt+Up/Down."""

    def __init__(self, controller: DocumentController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        title = QLabel("Host program (issue order)")
        title.setStyleSheet("font-weight: bold")
        layout.addWidget(title)
        self.model = ProgramModel(controller)
        self.list = ProgramList(controller, self)
        self.list.setModel(self.model)
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.list.setFont(font)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.list.setDragDropMode(QAbstractItemView.DragDropMode.InternalMove)
        self.list.setDefaultDropAction(Qt.DropAction.MoveAction)
        self.list.setDropIndicatorShown(True)
        self.list.setUniformItemSizes(True)
        self.list.setIconSize(QSize(PROGRAM_ICON_PX, PROGRAM_ICON_PX))
        self.list.setAlternatingRowColors(True)
        self.list.setTextElideMode(Qt.TextElideMode.ElideNone)  # code is read whole: scroll
        layout.addWidget(self.list)
        self._syncing = False
        self.list.selectionModel().selectionChanged.connect(self._list_selection_changed)
        controller.changed.connect(self._refresh)
        controller.selection_changed.connect(self._apply_selection)
        self._apply_selection()

    def _refresh(self) -> None:
        self._syncing = True
        try:
            self.model.refresh()
        finally:
            self._syncing = False
        self._apply_selection()

    def _apply_selection(self) -> None:
        self._syncing = True
        try:
            rows = self.controller.selected_indexes()
            selection = rows_selection(rows, lambda row, _column: self.model.index(row))
            flags = QItemSelectionModel.SelectionFlag.ClearAndSelect
            self.list.selectionModel().select(selection, flags)
            if rows:
                current = self.model.index(rows[0])
                self.list.selectionModel().setCurrentIndex(
                    current, QItemSelectionModel.SelectionFlag.NoUpdate
                )
                self.list.scrollTo(current)
        finally:
            self._syncing = False

    def _list_selection_changed(self, *_args) -> None:
        if self._syncing:
            return
        rows = sorted(i.row() for i in self.list.selectionModel().selectedIndexes())
        self.controller.set_selection_indexes(rows)

    def height_for_lines(self, count: int) -> int:
        """Panel height that shows ``count`` lines of the program (layout defaults)."""
        # an empty program has no row to measure: an icon (with its margins) or a line of text
        icon = PROGRAM_ICON_PX + 4
        row = max(self.list.sizeHintForRow(0), icon, self.list.fontMetrics().height() + 4)
        chrome = self.height() - self.list.viewport().height() if self.isVisible() else 0
        if chrome <= 0:  # not laid out yet: title, margins, frame and scroll bar
            m = self.layout().contentsMargins()
            chrome = (
                m.top()
                + m.bottom()
                + self.layout().spacing()
                + self.fontMetrics().height()
                + 2 * self.list.frameWidth()
                + self.list.horizontalScrollBar().sizeHint().height()
            )
        return int(count * row + chrome + 2)

    def visible_lines(self) -> float:
        """How many program lines fit in the list now."""
        row = max(self.list.sizeHintForRow(0), 1)
        return self.list.viewport().height() / row

    def lines(self) -> list[str]:
        """The displayed lines (for tests and export)."""
        return [self.model.data(self.model.index(r)) for r in range(self.model.rowCount())]
