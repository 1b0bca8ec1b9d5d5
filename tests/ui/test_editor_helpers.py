"""Shared set-up for the editor tests: documents, a shown editor, and synthetic drops."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QHBoxLayout, QWidget

from swimlanes.model import Pipeline
from swimlanes.model.validate import pipeline_from_dict
from swimlanes.ui.document_controller import DocumentController
from swimlanes.ui.editor import HostProgramPanel, Inspector, LaneEditor, OpPalette
from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.editor.common import OP_MIME

MIB = 1024 * 1024


def sample() -> Pipeline:
    """s1: h2d, K0, record e0; s2: wait e0, d2h; then a device sync."""
    return pipeline_from_dict(
        {
            "format": "swimlanes-pipeline",
            "version": 1,
            "name": "sample",
            "streams": [{"name": "s1"}, {"name": "s2"}],
            "program": [
                {"op": "h2d", "stream": "s1", "bytes": 64 * MIB, "label": "in"},
                {"op": "kernel", "stream": "s1", "label": "K0", "blocks": 4096, "threads": 256,
                 "duration_us": 370},
                {"op": "event_record", "stream": "s1", "event": "e0"},
                {"op": "event_wait", "stream": "s2", "event": "e0"},
                {"op": "d2h", "stream": "s2", "bytes": 64 * MIB, "label": "out"},
                {"op": "device_sync"},
            ],
        }
    )  # fmt: skip


class Editor(QWidget):
    """The four editor widgets on one controller, as the main window lays them out."""

    def __init__(self, pipeline: Pipeline | None = None):
        super().__init__()
        self.controller = DocumentController(pipeline, parent=self)
        self.palette_widget = OpPalette(self.controller)
        self.lanes = LaneEditor(self.controller)
        self.program = HostProgramPanel(self.controller)
        self.inspector = Inspector(self.controller)
        layout = QHBoxLayout(self)
        for w, stretch in ((self.palette_widget, 0), (self.lanes, 3), (self.program, 2)):
            layout.addWidget(w, stretch)
        layout.addWidget(self.inspector, 1)
        self.resize(1600, 600)

    def labels(self) -> list[str]:
        return [op.display_label for op in self.controller.pipeline.program]


def drop_point(lanes: LaneEditor, index: int, lane: str) -> QPoint:
    """Viewport point whose drop inserts at program ``index`` on ``lane``."""
    scene = QPointF(lanes.column_x(index) + 6, lanes.lane_y(lane) + li.LANE_H / 2)
    return lanes.mapFromScene(scene)


def block_point(lanes: LaneEditor, index: int, lane: str) -> QPoint:
    """Viewport point in the middle of column ``index`` of ``lane``."""
    scene = QPointF(lanes.column_x(index) + li.COL_W / 2, lanes.lane_y(lane) + li.LANE_H / 2)
    return lanes.mapFromScene(scene)


def send_drop(target: QWidget, mime: QMimeData, pos: QPoint, *, hover_only: bool = False) -> bool:
    """Drag enter, move, then drop ``mime`` at ``pos`` (QTest cannot drive QDrag.exec)."""
    buttons, mods = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    action = Qt.DropAction.CopyAction | Qt.DropAction.MoveAction
    enter = QDragEnterEvent(pos, action, mime, buttons, mods)
    QApplication.sendEvent(target, enter)
    move = QDragMoveEvent(pos, action, mime, buttons, mods)
    QApplication.sendEvent(target, move)
    if hover_only:
        return move.isAccepted()
    drop = QDropEvent(QPointF(pos), action, mime, buttons, mods)
    QApplication.sendEvent(target, drop)
    return drop.isAccepted()


def drop_kind(lanes: LaneEditor, kind: str, index: int, lane: str) -> bool:
    mime = QMimeData()
    mime.setData(OP_MIME, kind.encode())
    return send_drop(lanes.viewport(), mime, drop_point(lanes, index, lane))
