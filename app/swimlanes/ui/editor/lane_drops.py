"""Dropping ops onto the lanes: kinds dragged from the palette and ops dragged as JSON, with
a drop line showing where they will land."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPoint, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent, QPalette, QPen
from PySide6.QtWidgets import QGraphicsLineItem

from swimlanes.model.document import DEFAULT_STREAM, STREAM_OPS
from swimlanes.model.io import parse_json
from swimlanes.model.validate import PipelineError
from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.editor.common import OP_MIME, OPS_MIME, new_op_refusal

#: Below the last lane there is no stream to drop on.
BELOW_LANES = "\0below"


class PaletteDrops:
    """Mixin of LaneEditor (which provides the geometry, the controller, insert_new_op,
    insert_json, edge_scroller and the ``_indicator`` line).

    A drop lands on the lane under the pointer or nowhere: a stream op on the host row and
    anything below the last lane are refused (the no-drop cursor while hovering, and the reason
    through the controller's error signal, which the main window shows in its status bar).
    """

    _refused_reason = ""

    def _drop_target(self, pos: QPoint) -> tuple[int, str]:
        """Program index and lane key of a drop at ``pos``; BELOW_LANES below the last lane."""
        scene_pos = self.mapToScene(pos)
        below = scene_pos.y() >= self.lanes_bottom()
        lane = BELOW_LANES if below else self.lane_at(scene_pos.y())
        return self.insertion_at(scene_pos.x()), lane

    def _refusal(self, mime: QMimeData, lane: str) -> str:
        """Why a drop of ``mime`` on ``lane`` is refused ("" when it is not). A drop never goes
        to another lane than the one under the pointer."""
        if lane == BELOW_LANES:
            return "below the last lane there is no stream: drop on a stream's lane"
        if mime.hasFormat(OP_MIME):
            kind = bytes(mime.data(OP_MIME).data()).decode("ascii", "replace")
            reason = new_op_refusal(kind, self.controller.pipeline)
            if reason:
                return reason
        if li.is_device_lane(lane):
            return "a device's header holds no ops: drop on its host thread or a stream's lane"
        if not li.is_host_lane(lane):
            return ""
        if mime.hasFormat(OP_MIME):
            kind = bytes(mime.data(OP_MIME).data()).decode("ascii", "replace")
            if kind in STREAM_OPS:
                return f"a {kind} op runs on a stream: the host row takes host calls only"
            return ""
        if self._has_op_without_lane(bytes(mime.data(OPS_MIME).data()).decode()):
            return "the host row has no stream for these ops: drop them on a stream's lane"
        return ""

    def _has_op_without_lane(self, text: str) -> bool:
        """Whether copied ops include a stream op whose stream this document lacks (it would
        take the lane dropped on)."""
        try:
            data = parse_json(text)
        except (PipelineError, TypeError):
            return False  # insert_json refuses it with its own reason
        names = {s.name for s in self.controller.pipeline.all_streams}
        ops = data.get("ops") if isinstance(data, dict) else None
        return any(
            isinstance(raw, dict)
            and raw.get("op") in STREAM_OPS
            and raw.get("stream", DEFAULT_STREAM) not in names
            for raw in (ops if isinstance(ops, list) else [])
        )

    def _refuse(self, reason: str) -> None:
        """Say why once per hover spot: the main window shows it in the status bar."""
        if reason != self._refused_reason:
            self._refused_reason = reason
            if reason:
                self.controller.error.emit(f"drop refused: {reason}")

    def _show_indicator(self, index: int, lane: str) -> None:
        if self._indicator is None:
            pen = QPen(self.palette().color(QPalette.ColorRole.Highlight), 3)
            self._indicator = self.scene().addLine(0, 0, 0, 0, pen)
            self._indicator.setZValue(20)
        if lane == BELOW_LANES:
            self._hide_indicator()
            return
        x = self.column_x(index)
        y = self.lane_y(lane)
        self._indicator.setLine(x, y + 2, x, y + self.lane_height(lane) - 2)
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
            self._refused_reason = ""
            event.acceptProposedAction()  # a refused spot is told apart by dragMoveEvent
            self._hover(event)
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:  # noqa: N802 - Qt's name
        if not self._accepts(event.mimeData()):
            event.ignore()
            return
        self.edge_scroller.update(event.position().toPoint())
        self._hover(event)

    def _hover(self, event: QDragMoveEvent) -> None:
        """Show where the drop lands, or the no-drop cursor and the reason."""
        index, lane = self._drop_target(event.position().toPoint())
        reason = self._refusal(event.mimeData(), lane)
        self._refuse(reason)
        if reason:
            self._hide_indicator()
            event.ignore()
        else:
            self._show_indicator(index, lane)
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
        reason = self._refusal(mime, lane)
        if reason:
            self._refused_reason = ""
            self._refuse(reason)
            event.ignore()
            return
        # the host row: host calls (which ignore the stream), or copied ops that keep theirs
        stream = lane if li.is_stream_lane(lane) else DEFAULT_STREAM
        if mime.hasFormat(OP_MIME):
            kind = bytes(mime.data(OP_MIME).data()).decode("ascii", "replace")
            device, thread = li.lane_owner(self.controller.pipeline, lane)
            ok = self.insert_new_op(kind, index, stream, device, thread)
        else:
            ok = self.insert_json(bytes(mime.data(OPS_MIME).data()).decode(), index, stream)
        if ok:
            # a copy, always: a "move" would make the palette remove the dragged kind
            event.setDropAction(Qt.DropAction.CopyAction)
            event.accept()
        else:
            event.ignore()
