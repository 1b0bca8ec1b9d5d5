"""The lane editor: one lane per stream (plus the host thread), ops as blocks in issue order.

A block's x position is its program index, so columns line up across lanes and the issue
order (depth-first or breadth-first) is visible at a glance. Everything edits through the
document controller; the scene is rebuilt from the document after each change.
"""

from __future__ import annotations

import itertools
from collections import Counter

from PySide6.QtCore import QEvent, QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import (
    QContextMenuEvent,
    QMouseEvent,
    QPainter,
    QPalette,
    QPen,
    QWheelEvent,
)
from PySide6.QtWidgets import (
    QApplication,
    QGraphicsItem,
    QGraphicsLineItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QToolTip,
    QWidget,
)

from swimlanes.model.document import DEFAULT_STREAM, STREAM_OPS, Op, Pipeline
from swimlanes.model.edits import MoveOps
from swimlanes.ui.document_controller import DocumentController
from swimlanes.ui.editor import lane_items as li
from swimlanes.ui.editor.autoscroll import EdgeScroller
from swimlanes.ui.editor.code_lines import program_lines
from swimlanes.ui.editor.lane_commands import LaneCommands
from swimlanes.ui.editor.lane_drops import PaletteDrops
from swimlanes.ui.editor.lane_layout import lane_layout
from swimlanes.ui.editor.lane_menus import LaneMenus

_gestures = itertools.count(1)


class LaneEditor(LaneCommands, PaletteDrops, QGraphicsView):
    """Edit the host program as blocks on stream lanes (drops, drags, keys, context menus)."""

    def __init__(self, controller: DocumentController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self.setScene(QGraphicsScene(self))
        # blocks move on every edit: a BSP index would be rebuilt each time for nothing
        self.scene().setItemIndexMethod(QGraphicsScene.ItemIndexMethod.NoIndex)
        self.setAcceptDrops(True)
        self.setDragMode(QGraphicsView.DragMode.RubberBandDrag)
        self.setRubberBandSelectionMode(Qt.ItemSelectionMode.IntersectsItemShape)
        self.setAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop)
        self.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.FullViewportUpdate)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.menus = LaneMenus(self)
        self.edge_scroller = EdgeScroller(
            self,
            self._dragged_to,
            lambda: li.HEADER_W * self.transform().m11(),
            lambda: li.TOP * self.transform().m22(),
        )
        self._lanes: list[str] = []
        self._layout = lane_layout(controller.pipeline)
        #: Devices whose lanes are collapsed under their header (several-device pipelines).
        self.collapsed_devices: set[str] = set()
        self._device_headers: list[li.DeviceHeaderItem] = []
        self._blocks: dict[int, li.BlockItem] = {}
        self._headers: list[li.HeaderItem] = []  # pinned to the left edge
        self._arrows: list[QGraphicsItem] = []
        self._arrow_ends: list[tuple[QPointF, QPointF]] = []
        self._hint: QGraphicsSimpleTextItem | None = None
        self._lane_signature: tuple | None = None
        self._syncing = False
        self._press: tuple[QPoint, int, list[int]] | None = None  # pos, grabbed uid, moving
        self._gesture: int | None = None
        self._mouse_selecting = False
        self._indicator: QGraphicsLineItem | None = None
        self.scene().selectionChanged.connect(self._scene_selection_changed)
        controller.changed.connect(self.rebuild)
        controller.selection_changed.connect(self._on_selection_changed)
        self.rebuild()

    # -- geometry -------------------------------------------------------------------------
    def lanes(self) -> list[str]:
        """Lane keys top to bottom: HOST_LANE, then every stream name; with several devices,
        per device its header (``li.device_lane``), host thread (``li.host_lane``) and
        streams."""
        return list(self._lanes)

    def lane_of(self, op: Op) -> str:
        return li.op_lane(self.controller.pipeline, op)

    def lane_y(self, key: str) -> float:
        """Scene y of the top of a lane."""
        return self._layout.y(key)

    def lane_height(self, key: str) -> float:
        return self._layout.height(key)

    def set_device_collapsed(self, device: str, on: bool) -> None:
        """Show a device's lanes (host thread and streams) or only its header."""
        if (device in self.collapsed_devices) != on:
            self.collapsed_devices ^= {device}
            self.rebuild()

    def device_header(self, device: str) -> li.DeviceHeaderItem:
        return next(h for h in self._device_headers if h.device == device)

    def height_for_lanes(self, count: int) -> int:
        """Widget height that shows the ruler and ``count`` whole lanes (layout defaults)."""
        bar = self.horizontalScrollBar().sizeHint().height()
        return int(li.TOP + count * li.LANE_H) + 2 * self.frameWidth() + bar + 2

    def visible_lanes(self) -> float:
        """How many lanes fit in the viewport now."""
        return (self.viewport().height() - li.TOP) / li.LANE_H

    @staticmethod
    def column_x(index: int) -> float:
        """Scene x of the left edge of program index ``index``'s column."""
        return li.HEADER_W + index * li.COL_W

    def lane_at(self, scene_y: float) -> str:
        return self._layout.at(scene_y)

    def lanes_bottom(self) -> float:
        """Scene y of the bottom of the last lane."""
        return self._layout.bottom

    def insertion_at(self, scene_x: float) -> int:
        """Program index a drop at ``scene_x`` inserts at (between the nearest columns)."""
        index = round((scene_x - li.HEADER_W) / li.COL_W)
        return max(0, min(index, len(self.controller.pipeline.program)))

    def column_at(self, scene_x: float) -> int:
        return int((scene_x - li.HEADER_W) // li.COL_W)

    def block(self, uid: int) -> li.BlockItem:
        return self._blocks[uid]

    def block_center(self, uid: int) -> QPoint:
        """Viewport position of a block's centre (for tests and tooltips)."""
        return self.mapFromScene(self._blocks[uid].rect().center())

    def block_tooltip(self, uid: int) -> str:
        """What hovering a block shows: its index and CUDA call (made on demand)."""
        pipeline = self.controller.pipeline
        index = pipeline.op_index(uid)
        op = pipeline.program[index]
        where = f"stream {op.stream_name}" if op.op in STREAM_OPS else "host thread"
        return f"#{index}  {op.display_label} ({where})\n{program_lines(pipeline)[index]}"

    def header(self, key: str) -> li.HeaderItem:
        return next(h for h in self._headers if h.key == key)

    def block_visible(self, uid: int) -> bool:
        """Whether an op's block shows (not under a collapsed device's header)."""
        return self._blocks[uid].isVisible()

    # -- building -------------------------------------------------------------------------
    def rebuild(self) -> None:
        """Bring the scene up to date with the document (after every change).

        Blocks are kept per op and only moved, so an edit of a large program costs little;
        lanes, the column grid and numbers are drawn by :meth:`drawBackground`.
        """
        self._syncing = True
        try:
            self._update_lanes()
            self._update_blocks()
            self._update_arrows()
        finally:
            self._syncing = False
        self._apply_selection()
        self.viewport().update()

    def _update_lanes(self) -> None:
        pipeline = self.controller.pipeline
        selected = self.controller.selected_stream()
        multi = pipeline.is_multi_device or pipeline.is_multi_thread
        self.collapsed_devices &= set(pipeline.device_names) if multi else set()
        layout = lane_layout(pipeline, self.collapsed_devices)
        summaries = _device_summaries(pipeline)
        signature = (
            tuple(layout.keys),
            tuple((s.name, s.kind, s.priority) for s in layout.streams.values()),
            tuple(summaries.items()),
            layout.collapsed,
        )
        n = len(pipeline.program)
        width = self.column_x(max(n + 3, 8))
        self.scene().setSceneRect(QRectF(0, 0, width, layout.bottom))
        if signature == self._lane_signature and self._headers:
            self._set_hint(n == 0)
            return
        self._lane_signature = signature
        self._layout = layout
        self._lanes = list(layout.keys)
        for item in [*self._headers, *self._device_headers]:
            self.scene().removeItem(item)
        self._headers = []
        self._device_headers = []
        for key, top in zip(layout.keys, layout.tops, strict=True):
            if li.is_device_lane(key):
                device = li.lane_device(key) or ""
                item = li.DeviceHeaderItem(
                    device, top, device in layout.collapsed, summaries.get(device, "")
                )
                self._device_headers.append(item)
            else:
                item = li.HeaderItem(key, layout.streams.get(key), top, key == selected)
                self._headers.append(item)
            item.setZValue(10)
            self.scene().addItem(item)
        self._set_hint(n == 0)
        self._pin_headers()

    def _set_hint(self, show: bool) -> None:
        if show and self._hint is None:
            self._hint = QGraphicsSimpleTextItem("Drag operations here from the palette")
            self._hint.setBrush(self.palette().color(QPalette.ColorRole.PlaceholderText))
            self.scene().addItem(self._hint)
        if self._hint is not None:
            self._hint.setVisible(show)
            # on the first stream's lane
            lane = next((k for k in self._lanes if li.is_stream_lane(k)), self._lanes[-1])
            self._hint.setPos(li.HEADER_W + 16, self.lane_y(lane) + li.LANE_H / 2 - 8)

    def _update_blocks(self) -> None:
        program = self.controller.pipeline.program
        present = {op.uid for op in program}
        for uid in [uid for uid in self._blocks if uid not in present]:
            self.scene().removeItem(self._blocks.pop(uid))
        layout = self._layout
        lane_top = dict(zip(layout.keys, layout.tops, strict=True))
        pipeline = self.controller.pipeline
        hidden_y = layout.bottom  # ops of a collapsed device: hidden, kept below the lanes
        for index, op in enumerate(program):
            x = self.column_x(index) + li.BLOCK_GAP / 2
            y = lane_top.get(li.op_lane(pipeline, op))
            item = self._blocks.get(op.uid)
            if item is None:
                item = li.BlockItem(op, index, x, hidden_y if y is None else y)
                self.scene().addItem(item)
                self._blocks[op.uid] = item
            else:
                item.place(op, index, x, hidden_y if y is None else y)
            if item.isVisible() != (y is not None):
                item.setVisible(y is not None)

    def _update_arrows(self) -> None:
        ends: list[tuple[QPointF, QPointF]] = []
        recorded: dict[str, li.BlockItem] = {}
        for op in self.controller.pipeline.program:
            if op.op not in ("event_record", "event_wait", "event_sync") or not op.event:
                continue
            item = self._blocks[op.uid]
            if not item.isVisible():
                continue  # under a collapsed device
            if op.op == "event_record":
                recorded[op.event] = item
            elif op.event in recorded:
                src, dst = recorded[op.event].rect(), item.rect()
                ends.append(
                    (
                        QPointF(src.right(), src.center().y()),
                        QPointF(dst.left(), dst.center().y()),
                    )
                )
        if ends == self._arrow_ends:
            return  # most edits move no event op: keep the arrows
        self._arrow_ends = ends
        for arrow in self._arrows:
            self.scene().removeItem(arrow)
        self._arrows = []
        for start, end in ends:
            arrow = li.event_arrow(start, end)
            self.scene().addItem(arrow)
            self._arrows.append(arrow)

    def drawBackground(self, painter: QPainter, rect: QRectF) -> None:  # noqa: N802 - Qt's name
        """Lane stripes, the selected stream's lane, and the program-index columns."""
        pal = self.palette()
        painter.fillRect(rect, pal.color(QPalette.ColorRole.Window))
        selected = self.controller.selected_stream()
        width = self.sceneRect().width()
        layout = self._layout
        for row, (key, y, h) in enumerate(
            zip(layout.keys, layout.tops, layout.heights, strict=True)
        ):
            if y > rect.bottom() or y + h < rect.top():
                continue
            if li.is_device_lane(key):  # a device's band, under its pinned header
                colour = pal.color(QPalette.ColorRole.Mid)
                colour.setAlpha(90)
            else:
                colour = li.lane_colour(row % 2 == 1, key == selected)
            painter.fillRect(QRectF(0, y, width, h), colour)
        bottom = layout.bottom
        painter.setPen(QPen(pal.color(QPalette.ColorRole.Midlight), 1))
        for y in [*layout.tops, bottom]:
            painter.drawLine(QPointF(rect.left(), y), QPointF(rect.right(), y))
        first = max(0, self.column_at(rect.left()))
        last = min(len(self.controller.pipeline.program), self.column_at(rect.right()) + 1)
        painter.setPen(QPen(pal.color(QPalette.ColorRole.Mid), 1, Qt.PenStyle.DotLine))
        for index in range(first, last + 1):
            x = self.column_x(index)
            painter.drawLine(QPointF(x, li.TOP), QPointF(x, bottom))

    def drawForeground(self, painter: QPainter, rect: QRectF) -> None:  # noqa: N802 - Qt's name
        """The ruler of program indexes, frozen at the top like the headers are at the left."""
        pal = self.palette()
        top_left = self.mapToScene(0, 0)
        top = max(0.0, top_left.y())
        painter.fillRect(
            QRectF(rect.left(), top, rect.width(), li.TOP), pal.color(QPalette.ColorRole.Window)
        )
        n = len(self.controller.pipeline.program)
        first = max(0, self.column_at(rect.left()))
        last = min(n, self.column_at(rect.right()) + 1)
        step = 1 if li.COL_W * self.transform().m11() >= 28 else 5
        painter.setPen(pal.color(QPalette.ColorRole.PlaceholderText))
        for index in range(first, last):
            if index % step == 0:
                label = QRectF(self.column_x(index), top, li.COL_W, li.TOP)
                painter.drawText(label, Qt.AlignmentFlag.AlignCenter, str(index))
        li.paint_corner(painter, QRectF(max(0.0, top_left.x()), top, li.HEADER_W, li.TOP))

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.ToolTip:
            item = self._item_at(event.pos())
            if isinstance(item, li.BlockItem):
                QToolTip.showText(event.globalPos(), self.block_tooltip(item.uid), self)
                return True
        return super().viewportEvent(event)

    def _pin_headers(self) -> None:
        """Keep lane headers at the view's left edge while the lanes scroll sideways."""
        left = self.mapToScene(0, 0).x()
        for header in self._headers:
            header.setX(max(0.0, left))
        # a device's header row holds no ops: its name and summary may use the whole width
        width = self.mapToScene(self.viewport().rect()).boundingRect().width()
        for device_header in self._device_headers:
            device_header.setX(max(0.0, left))
            device_header.set_width(max(li.HEADER_W, width))

    def scrollContentsBy(self, dx: int, dy: int) -> None:  # noqa: N802 - Qt's name
        super().scrollContentsBy(dx, dy)
        self._pin_headers()

    def resizeEvent(self, event) -> None:  # noqa: ANN001, N802 - Qt's name
        super().resizeEvent(event)
        self._pin_headers()

    # -- selection ------------------------------------------------------------------------
    def _apply_selection(self) -> None:
        self._syncing = True
        # one selectionChanged per block would call back into Python 10,000 times on Select All
        signals_were_blocked = self.scene().blockSignals(True)
        try:
            wanted = set(self.controller.selection())
            for uid, item in self._blocks.items():
                if item.isSelected() != (uid in wanted):
                    item.setSelected(uid in wanted)
            selected = self.controller.selected_stream()
            self.viewport().update()  # the selected stream's lane is drawn highlighted
            for header in self._headers:
                if header.selected != (header.key == selected):
                    header.selected = header.key == selected
                    header.update()
        finally:
            self.scene().blockSignals(signals_were_blocked)
            self._syncing = False

    def _on_selection_changed(self) -> None:
        self._apply_selection()
        if not self._mouse_selecting and self._press is None:
            # a selection made elsewhere (program panel, chart, keys) is brought into view,
            # clear of the pinned headers on the left
            uids = self.controller.selection()
            if uids and uids[0] in self._blocks:
                self._expand_device_of(uids[0])
                rect = self._blocks[uids[0]].rect().adjusted(-li.HEADER_W, 0, 0, 0)
                self.ensureVisible(rect, 12, 10)

    def _expand_device_of(self, uid: int) -> None:
        """An op selected elsewhere under a collapsed device: show that device's lanes."""
        if self._blocks[uid].isVisible() or not self.collapsed_devices:
            return
        pipeline = self.controller.pipeline
        op = pipeline.program[pipeline.op_index(uid)]
        self.set_device_collapsed(pipeline.op_device(op), False)

    def _scene_selection_changed(self) -> None:
        if self._syncing:
            return
        uids = [i.uid for i in self.scene().selectedItems() if isinstance(i, li.BlockItem)]
        # Only for this call: the controller emits nothing when the selection is unchanged, and a
        # flag left set would stop the next selection made elsewhere from scrolling into view.
        self._mouse_selecting = True
        try:
            self.controller.set_selection(uids)
        finally:
            self._mouse_selecting = False

    def _item_at(self, pos: QPoint) -> QGraphicsItem | None:
        for item in self.items(pos):
            if isinstance(item, li.HeaderItem | li.BlockItem | li.DeviceHeaderItem):
                return item
        return None

    # -- mouse ----------------------------------------------------------------------------
    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        self.setFocus()
        item = self._item_at(event.position().toPoint())
        self._mouse_selecting = True  # what the user clicks is in view: do not scroll
        if event.button() != Qt.MouseButton.LeftButton or item is None:
            if event.button() == Qt.MouseButton.LeftButton:
                super().mousePressEvent(event)  # rubber band on empty space
            return
        if isinstance(item, li.DeviceHeaderItem):
            self.set_device_collapsed(item.device, not item.collapsed)
            return
        if isinstance(item, li.HeaderItem):
            stream = item.key if li.is_stream_lane(item.key) else None
            self.controller.set_selected_stream(stream)
            return
        selection = self.controller.selection()
        if event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            if item.uid in selection:
                selection.remove(item.uid)
            else:
                selection.append(item.uid)
            self.controller.set_selection(selection)
            return
        if item.uid not in selection:
            self.controller.set_selection([item.uid])
            selection = [item.uid]
        self._press = (event.position().toPoint(), item.uid, selection)
        self._gesture = None

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        item = self._item_at(event.position().toPoint())
        if (
            isinstance(item, li.HeaderItem)
            and li.is_stream_lane(item.key)
            and item.key != DEFAULT_STREAM
        ):
            self.menus.rename_stream(item.key)  # double-click a lane's name to rename it
            return
        super().mouseDoubleClickEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        if self._press is None:
            super().mouseMoveEvent(event)
            return
        start, grabbed, moving = self._press
        pos = event.position().toPoint()
        if self._gesture is None:
            if (pos - start).manhattanLength() < QApplication.startDragDistance():
                return
            self._gesture = next(_gestures)
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
        self.drag_blocks_to(moving, grabbed, self.mapToScene(pos))
        self.edge_scroller.update(pos)

    def _dragged_to(self, pos: QPoint) -> None:
        """The view scrolled under a resting drag: follow it with the blocks or drop line."""
        if self._press is not None and self._gesture is not None:
            _, grabbed, moving = self._press
            self.drag_blocks_to(moving, grabbed, self.mapToScene(pos))
        elif self._indicator is not None and self._indicator.isVisible():
            self._show_indicator(*self._drop_target(pos))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt's name
        if self._press is not None:
            _, grabbed, moving = self._press
            if self._gesture is None and len(moving) > 1:
                self.controller.set_selection([grabbed])  # a plain click on a multi-selection
            self._press = None
            self._gesture = None
            self.edge_scroller.stop()
            self.viewport().unsetCursor()
        else:
            super().mouseReleaseEvent(event)
        self._mouse_selecting = False

    def drag_blocks_to(self, uids: list[int], grabbed: int, scene_pos: QPointF) -> None:
        """Move ``uids`` so that ``grabbed`` lands at the column and lane under ``scene_pos``."""
        pipeline = self.controller.pipeline
        present = {op.uid for op in pipeline.program}
        uids = [uid for uid in uids if uid in present]
        if grabbed not in uids:
            return
        ordered = [op.uid for op in pipeline.program if op.uid in set(uids)]
        offset = ordered.index(grabbed)
        last = len(pipeline.program) - len(ordered)
        index = max(0, min(self.column_at(scene_pos.x()) - offset, last))
        lane = self.lane_at(scene_pos.y())
        stream = lane if li.is_stream_lane(lane) else None
        # a host-thread lane: host calls dropped there move to that device's or thread's lane
        device, thread = li.lane_owner(pipeline, lane)
        first = pipeline.op_index(ordered[0])
        contiguous = pipeline.op_index(ordered[-1]) - first == len(ordered) - 1
        op = pipeline.program[pipeline.op_index(grabbed)]
        same_lane = stream is None or op.op not in STREAM_OPS or op.stream_name == stream
        same_thread = device is None or op.op in STREAM_OPS or pipeline.op_device(op) == device
        same_thread &= thread is None or pipeline.op_thread(op) == thread
        if contiguous and first == index and same_lane and same_thread:
            return
        if self._gesture is None:
            self._gesture = next(_gestures)
        move = MoveOps(ordered, index, stream, self._gesture, device=device, thread=thread)
        self.controller.push(move)

    def wheelEvent(self, event: QWheelEvent) -> None:  # noqa: N802 - Qt's name
        """Ctrl+wheel zooms (0.3x to 3x); the wheel alone scrolls."""
        if not event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            super().wheelEvent(event)
            return
        factor = 1.15 if event.angleDelta().y() > 0 else 1 / 1.15
        if 0.3 <= self.transform().m11() * factor <= 3.0:
            self.scale(factor, factor)
            self._pin_headers()
        event.accept()

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:  # noqa: N802 - Qt's name
        item = self._item_at(event.pos())
        scene_pos = self.mapToScene(event.pos())
        if isinstance(item, li.DeviceHeaderItem):
            menu = self.menus.device_menu(item.device)
        elif isinstance(item, li.HeaderItem) and li.is_host_lane(item.key):
            menu = self.menus.thread_menu(item.key)
        elif isinstance(item, li.HeaderItem):
            menu = self.menus.stream_menu(item.key)
        elif isinstance(item, li.BlockItem):
            if item.uid not in self.controller.selection():
                self.controller.set_selection([item.uid])
            menu = self.menus.op_menu()
        else:
            menu = self.menus.lane_menu(
                self.lane_at(scene_pos.y()), self.insertion_at(scene_pos.x())
            )
        menu.exec(event.globalPos())


def _device_summaries(pipeline: Pipeline) -> dict[str, str]:
    """What each device's header says it holds: "3 streams, 12 ops" (one pass over the
    program: it runs after every edit)."""
    if not pipeline.is_multi_device:
        return {}
    first = pipeline.device_names[0]
    home = {s.name: pipeline.stream_device(s.name) for s in pipeline.all_streams}
    ops = Counter(
        home.get(op.stream_name or "", first) if op.op in STREAM_OPS else op.device or first
        for op in pipeline.program
    )
    streams = Counter(home.values())
    return {
        d: f"{_count(streams[d], 'stream')}, {_count(ops[d], 'op')}" for d in pipeline.device_names
    }


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"
