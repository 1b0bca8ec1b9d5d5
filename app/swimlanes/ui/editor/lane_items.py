"""Graphics items of the lane editor: lane headers, op blocks, event arrows, the drop line."""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QBrush,
    QColor,
    QFont,
    QFontMetricsF,
    QPainter,
    QPainterPath,
    QPalette,
    QPen,
    QPolygonF,
)
from PySide6.QtWidgets import (
    QApplication,
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QStyleOptionGraphicsItem,
    QWidget,
)

from swimlanes.model.document import COLLECTIVE_OPS, COPY_OPS, PEER_COPY, Op, Stream
from swimlanes.ui.editor.common import format_us
from swimlanes.ui.editor.lane_layout import (  # noqa: E402, F401 - the lanes' geometry
    DEVICE_H,
    HOST_LANE,
    LANE_H,
    TOP,
    device_lane,
    host_lane,
    is_device_lane,
    is_host_lane,
    is_stream_lane,
    lane_device,
    lane_owner,
    lane_thread,
    op_lane,
    thread_lane,
)
from swimlanes.ui.style import OKABE_ITO, op_colour, text_colour_on
from swimlanes.units import format_bytes

HEADER_W = 168.0
COL_W = 104.0
BLOCK_GAP = 8.0

_KIND_TEXT = {
    "legacy_default": "legacy default",
    "per_thread_default": "per-thread default",
    "blocking": "blocking",
    "non_blocking": "non-blocking",
}


def _palette() -> QPalette:
    return QApplication.palette()


def block_label(op: Op) -> str:
    """Short text for a block: its label, or what an event op does with which event."""
    if op.label:
        return op.label
    if op.op in ("event_record", "event_wait", "event_sync") and op.event:
        return f"{op.op.split('_')[1]} {op.event}"
    return op.display_label


def block_detail(op: Op) -> str:
    """The second line of a block: size, duration or grid."""
    if op.op in COPY_OPS or op.op == "memset":
        return format_bytes(op.bytes or 0)
    if op.op == "kernel":
        if op.duration_us is not None:
            return format_us(op.duration_us)
        if op.block_us is not None:
            return f"{format_us(op.block_us)}/blk"
        return f"{op.blocks}x{op.threads}"
    if op.op in ("host", "host_func") and op.duration_us is not None:
        return format_us(op.duration_us)
    if op.op == PEER_COPY:
        size = format_bytes(op.bytes or 0)
        return f"{size} \u2192 {op.dst_device}" if op.dst_device else size
    if op.op in COLLECTIVE_OPS:
        return format_bytes(op.bytes or 0)
    return ""


class HeaderItem(QGraphicsRectItem):
    """A lane's header: stream name, kind and priority. Clicking it selects the stream."""

    def __init__(self, key: str, stream: Stream | None, y: float, selected: bool):
        super().__init__(0, y, HEADER_W, LANE_H)
        self.key = key
        self.stream = stream
        self.selected = selected
        self.device = lane_device(key)
        self.thread = lane_thread(key)
        self.setAcceptHoverEvents(True)
        if stream is None and self.thread is not None:
            self.setToolTip(
                f"Host thread {self.thread}: its host work, the calls that block it (they "
                "block only this thread) and the calls it issues on its streams"
            )
        elif stream is None and self.device is not None:
            self.setToolTip(
                f"The host thread of {self.device}: host work and the calls that block it, "
                "and the calls it issues on its streams"
            )
        elif stream is None:
            self.setToolTip("The host thread: host work and the calls that block it")
        else:
            on = f" on {stream.device}" if stream.device else ""
            self.setToolTip(
                f"Stream {stream.name}{on}: {_KIND_TEXT[stream.kind]}, priority "
                f"{stream.priority} (lower is higher).\nRight-click to rename, retype, reorder "
                "or remove."
            )

    def paint(self, p: QPainter, _o: QStyleOptionGraphicsItem, _w: QWidget | None = None) -> None:
        pal = _palette()
        r = self.rect()
        bg = (
            pal.color(QPalette.ColorRole.Highlight)
            if self.selected
            else pal.color(QPalette.ColorRole.Button)
        )
        fg = pal.color(
            QPalette.ColorRole.HighlightedText if self.selected else QPalette.ColorRole.ButtonText
        )
        p.fillRect(r, bg)
        p.setPen(QPen(pal.color(QPalette.ColorRole.Mid), 1))
        p.drawLine(r.topRight(), r.bottomRight())
        p.drawLine(r.bottomLeft(), r.bottomRight())
        name = "Host thread" if self.stream is None else self.stream.name
        if self.stream is None:
            sub = "CPU: syncs, host work"
            if self.thread is not None:
                name = f"{self.thread} host thread"
            elif self.device is not None:
                name = f"{self.device} host thread"
        else:
            sub = f"{_KIND_TEXT[self.stream.kind]} \u00b7 prio {self.stream.priority}"
        font = QFont(p.font())
        font.setBold(True)
        p.setFont(font)
        p.setPen(fg)
        text_rect = r.adjusted(10, 6, -6, -LANE_H / 2)
        name = QFontMetricsF(font).elidedText(name, Qt.TextElideMode.ElideRight, text_rect.width())
        p.drawText(text_rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, name)
        font.setBold(False)
        font.setPointSizeF(max(6.0, font.pointSizeF() * 0.85))
        p.setFont(font)
        p.drawText(
            r.adjusted(10, LANE_H / 2 - 2, -6, -4),
            Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
            sub,
        )


class DeviceHeaderItem(QGraphicsRectItem):
    """A device's header row: a triangle, the device's name and what it holds. Clicking it
    collapses the device's lanes (its host thread and streams) into it, or expands them."""

    def __init__(self, device: str, y: float, collapsed: bool, summary: str):
        super().__init__(0, y, HEADER_W, DEVICE_H)
        self.device = device
        self.key = device_lane(device)
        self.collapsed = collapsed
        self.summary = summary
        self.setToolTip(
            f"{device}: {summary}. Click to {'expand' if collapsed else 'collapse'} its lanes; "
            "right-click for the device's commands."
        )

    def set_width(self, width: float) -> None:
        r = self.rect()
        if r.width() != width:
            self.setRect(QRectF(r.left(), r.top(), width, r.height()))

    def paint(self, p: QPainter, _o: QStyleOptionGraphicsItem, _w: QWidget | None = None) -> None:
        pal = _palette()
        r = self.rect()
        p.fillRect(r, pal.color(QPalette.ColorRole.Mid))
        ink = text_colour_on(pal.color(QPalette.ColorRole.Mid))
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(ink)
        x, mid = 8.0, r.center().y()
        if self.collapsed:  # ▸
            tri = [QPointF(x, mid - 5), QPointF(x + 7, mid), QPointF(x, mid + 5)]
        else:  # ▾
            tri = [QPointF(x - 1, mid - 3), QPointF(x + 8, mid - 3), QPointF(x + 3.5, mid + 4)]
        p.drawPolygon(QPolygonF(tri))
        font = QFont(p.font())
        font.setBold(True)
        p.setFont(font)
        p.setPen(ink)
        text = f"{self.device}  \u00b7  {self.summary}"
        inner = r.adjusted(x + 14, 0, -6, 0)
        text = QFontMetricsF(font).elidedText(text, Qt.TextElideMode.ElideRight, inner.width())
        p.drawText(inner, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, text)


def paint_corner(p: QPainter, r: QRectF) -> None:
    """The box above the lane headers, left of the ruler of program indexes."""
    pal = _palette()
    p.fillRect(r, pal.color(QPalette.ColorRole.Button))
    p.setPen(QPen(pal.color(QPalette.ColorRole.Mid), 1))
    p.drawLine(r.topRight(), r.bottomRight())
    p.setPen(pal.color(QPalette.ColorRole.PlaceholderText))
    inner = r.adjusted(10, 0, -8, 0)
    p.drawText(inner, Qt.AlignmentFlag.AlignVCenter, "Lane")
    p.drawText(
        inner, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, "issue order \u2192"
    )


class BlockItem(QGraphicsRectItem):
    """One op: a coloured block at its program index, showing label, "#index" and size."""

    def __init__(self, op: Op, index: int, x: float, y: float):
        super().__init__(x, y + 6, COL_W - BLOCK_GAP, LANE_H - 12)
        self.uid = op.uid
        self.op = op
        self.index = index
        self._shown = self._look()
        self._top_left = (x, y + 6)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, True)
        self.setZValue(2)
        # Room for the selection ring: an invisible pen 8 px wide widens the bounding rect by
        # 4 px, in C++ (a boundingRect override in Python was called twice per block on every
        # selection change: 20,000 calls on Select All of 10,000 ops). paint draws its own.
        self.setPen(QPen(Qt.GlobalColor.transparent, 8))

    def shape(self) -> QPainterPath:
        """Hits and rubber bands: the block itself, not the selection ring's room."""
        path = QPainterPath()
        path.addRect(self.rect())
        return path

    def place(self, op: Op, index: int, x: float, y: float) -> None:
        """Show the op's current state at its current column and lane."""
        self.op = op
        self.index = index
        if (x, y + 6) != self._top_left:
            self._top_left = (x, y + 6)
            self.setRect(QRectF(x, y + 6, COL_W - BLOCK_GAP, LANE_H - 12))
        look = self._look()
        if look != self._shown:
            # only changed blocks repaint: every edit places all of a large program's blocks
            self._shown = look
            self.update()

    def _look(self) -> tuple:
        """What paint draws (besides position and selection)."""
        return (self.op.op, self.index, block_label(self.op), block_detail(self.op))

    def paint(self, p: QPainter, _o: QStyleOptionGraphicsItem, _w: QWidget | None = None) -> None:
        r = self.rect()
        fill = op_colour(self.op.op)
        ink = text_colour_on(fill)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        if self.isSelected():
            # a ring outside the block in the theme's text colour reads on every category fill
            p.setPen(QPen(_palette().color(QPalette.ColorRole.Text), 2.5))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawRoundedRect(r.adjusted(-2, -2, 2, 2), 6, 6)
        p.setPen(QPen(fill.darker(150), 1))
        p.setBrush(fill)
        p.drawRoundedRect(r.adjusted(1, 1, -1, -1), 4, 4)
        font = QFont(p.font())
        font.setBold(True)
        p.setFont(font)
        p.setPen(ink)
        inner = r.adjusted(6, 2, -5, -2)
        metrics = QFontMetricsF(font)
        label = metrics.elidedText(block_label(self.op), Qt.TextElideMode.ElideRight, inner.width())
        top = QRectF(inner.left(), inner.top(), inner.width(), inner.height() / 2)
        p.drawText(top, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, label)
        font.setBold(False)
        font.setPointSizeF(max(6.0, font.pointSizeF() * 0.85))
        p.setFont(font)
        bottom = QRectF(inner.left(), top.bottom(), inner.width(), inner.height() / 2)
        p.drawText(
            bottom, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, f"#{self.index}"
        )
        p.drawText(
            bottom,
            Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
            block_detail(self.op),
        )


def event_arrow(start: QPointF, end: QPointF) -> QGraphicsPathItem:
    """A curved arrow from an event record's block to a block that waits for it."""
    path = QPainterPath(start)
    dx = max(abs(end.x() - start.x()) * 0.5, 30.0)
    path.cubicTo(QPointF(start.x() + dx, start.y()), QPointF(end.x() - dx, end.y()), end)
    angle = math.atan2(
        end.y() - path.pointAtPercent(0.97).y(), end.x() - path.pointAtPercent(0.97).x()
    )
    size = 8.0
    left = QPointF(end.x() - size * math.cos(angle - 0.45), end.y() - size * math.sin(angle - 0.45))
    right = QPointF(
        end.x() - size * math.cos(angle + 0.45), end.y() - size * math.sin(angle + 0.45)
    )
    path.addPolygon(QPolygonF([end, left, right, end]))
    item = QGraphicsPathItem(path)
    colour = QColor(OKABE_ITO["reddish_purple"]).darker(120)
    item.setPen(QPen(colour, 1.8))
    item.setBrush(QBrush(Qt.BrushStyle.NoBrush))
    item.setZValue(3)
    item.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
    return item


def lane_colour(odd: bool, highlighted: bool) -> QColor:
    """A lane's background: alternating stripes, darker (lighter when dark) if selected."""
    pal = _palette()
    colour = QColor(pal.color(QPalette.ColorRole.AlternateBase if odd else QPalette.ColorRole.Base))
    if highlighted:
        colour = colour.darker(110) if colour.lightness() > 128 else colour.lighter(135)
    return colour
