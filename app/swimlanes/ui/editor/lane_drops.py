"""Dropping ops onto the lanes: kinds dragged from the palette and ops dragged as JSON, with
a drop line showing where they will land."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPoint, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent, QPalette, QPen
from PySide6.QtWidgets import QGraphicsLineItem

from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.editor.common import OP_MIME, OPS_MIME


class PaletteDrops:
    """Mixin of LaneEditor (which provides the geometry, the controller, insert_new_op,
    insert_json, edge_scroller and the ``_indicator`` line)."""

    def _drop_target(self, pos: QPoint) -> tuple[int, str]:
        scene_pos = self.mapToScene(pos)
        return self.insertion_at(scene_pos.x()), self.lane_at(scene_pos.y())

    def _show_indicator(self, index: int, lane: str) -> None:
        if self._indicator is None:
            pen = QPen(self.palette().color(QPalette.ColorRole.Highlight), 3)
            self._indicator = self.scene().addLine(0, 0, 0, 0, pen)
            self._indicator.setZValue(20)
        x = self.column_x(index)
        y = self.lane_y(lane)
        self._indicator.setLine(x, y + 2, x, y + li.LANE_H - 2)
        self._indicator.show()

    def drop_indicator(self) -> QGraphicsLineItem | None:
        """The drop line while a drag hovers (None or hidden otherwise)."""
        return self._indicator

    def _hide_indicator(self) -> None:
        if self._indicator is not None:
            self._indicator.hide()

    @staticmethod
    def _accepts(mime: QMimeData) -> bool:
        return mime.hasFormat(OP_MIME) or mime.hasFormat(OPS_MIME)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt's name
        if self._accepts(event.mimeData()):
            event.acceptProposedAction()
            self._show_indicator(*self._drop_target(event.position().toPoint()))
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:  # noqa: N802 - Qt's name
        if not self._accepts(event.mimeData()):
            event.ignore()
            return
        self._show_indicator(*self._drop_target(event.position().toPoint()))
        self.edge_scroller.update(event.position().toPoint())
        event.acceptProposedAction()

    def dragLeaveEvent(self, event) -> None:  # noqa: N802 - Qt's name
        self.edge_scroller.stop()
        self._hide_indicator()
        event.accept()

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt's name
        self.edge_scroller.stop()
        self._hide_indicator()
        mime = event.mimeData()
        if not self._accepts(mime):
            event.ignore()
            return
        index, lane = self._drop_target(event.position().toPoint())
        stream = lane or self.controller.current_stream()
        if mime.hasFormat(OP_MIME):
            kind = bytes(mime.data(OP_MIME).data()).decode("ascii", "replace")
            ok = self.insert_new_op(kind, index, stream)
        else:
            ok = self.insert_json(bytes(mime.data(OPS_MIME).data()).decode(), index, stream)
        if ok:
            # a copy, always: a "move" would make the palette remove the dragged kind
            event.setDropAction(Qt.DropAction.CopyAction)
            event.accept()
        else:
            event.ignore()
