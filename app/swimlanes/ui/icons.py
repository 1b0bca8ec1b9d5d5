"""Op icons drawn with QPainter in each op's category colour, and the application icon.

Drawn rather than shipped so that they follow the category colours in ``style.py`` and stay
sharp at every device pixel ratio.
"""

from __future__ import annotations

from functools import cache

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPainterPath, QPen, QPixmap, QPolygonF

from swimlanes.model.document import COLLECTIVE_OPS, PEER_COPY
from swimlanes.resources import icons_dir
from swimlanes.ui.style import op_colour, text_colour_on

_SIZES = (16, 24, 32, 48)


def _arrow(p: QPainter, x0: float, y0: float, x1: float, y1: float, s: float) -> None:
    p.drawLine(QPointF(x0, y0), QPointF(x1, y1))
    dx, dy = x1 - x0, y1 - y0
    length = max((dx * dx + dy * dy) ** 0.5, 1e-6)
    ux, uy = dx / length, dy / length
    head = 0.22 * s
    left = QPointF(x1 - head * ux + head * 0.6 * uy, y1 - head * uy - head * 0.6 * ux)
    right = QPointF(x1 - head * ux - head * 0.6 * uy, y1 - head * uy + head * 0.6 * ux)
    p.drawPolygon(QPolygonF([QPointF(x1, y1), left, right]))


def _text(p: QPainter, rect: QRectF, text: str, scale: float) -> None:
    font = p.font()
    font.setBold(True)
    font.setPixelSize(max(6, int(rect.height() * scale)))
    p.setFont(font)
    p.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)


def _glyph(p: QPainter, kind: str, s: float) -> None:
    """The small symbol inside the badge, drawn in an s x s box."""
    m = 0.22 * s
    mid = s / 2
    if kind in ("h2d", "d2h", "d2d"):
        # host above, device below: H2D points down, D2H up, D2D sideways
        if kind == "h2d":
            _arrow(p, mid, m, mid, s - m, s)
        elif kind == "d2h":
            _arrow(p, mid, s - m, mid, m, s)
        else:
            _arrow(p, m, mid, s - m, mid, s)
    elif kind == "memset":
        _text(p, QRectF(0, 0, s, s), "0", 0.62)
    elif kind == "kernel":
        _text(p, QRectF(0, 0, s, s), "K", 0.62)
    elif kind == "event_record":
        p.drawEllipse(QPointF(mid, mid), 0.2 * s, 0.2 * s)
    elif kind in ("event_wait", "event_sync"):
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawEllipse(QPointF(mid, mid), 0.22 * s, 0.22 * s)
        if kind == "event_sync":
            p.drawLine(QPointF(m, s - m), QPointF(s - m, s - m))
    elif kind in ("stream_sync", "device_sync"):
        bars = 1 if kind == "stream_sync" else 3
        for i in range(bars):
            x = mid + (i - (bars - 1) / 2) * 0.2 * s
            p.drawLine(QPointF(x, m), QPointF(x, s - m))
    elif kind in ("host", "host_func"):
        path = QPainterPath()
        path.addRect(QRectF(m, m * 1.3, s - 2 * m, s - 2.6 * m))
        p.setBrush(Qt.BrushStyle.NoBrush)
        p.drawPath(path)
        if kind == "host_func":
            _text(p, QRectF(0, 0, s, s), "f", 0.45)
    elif kind in ("malloc", "free"):
        _text(p, QRectF(0, 0, s, s), "+" if kind == "malloc" else "\u2212", 0.7)
    elif kind == PEER_COPY:
        _peer_copy_glyph(p, s)
    elif kind in COLLECTIVE_OPS:
        _collective_glyph(p, s)


def _peer_copy_glyph(p: QPainter, s: float) -> None:
    """Two devices side by side and an arrow from one to the other."""
    w, h, edge = 0.14 * s, 0.36 * s, 0.12 * s
    p.drawRect(QRectF(edge, s / 2 - h / 2, w, h))
    p.drawRect(QRectF(s - edge - w, s / 2 - h / 2, w, h))
    _arrow(p, edge + w + 0.06 * s, s / 2, s - edge - w - 0.08 * s, s / 2, s * 0.8)


def _collective_glyph(p: QPainter, s: float) -> None:
    """A ring through three devices: NCCL's ring."""
    mid, r = s / 2, 0.27 * s
    ink = p.pen().color()
    p.setBrush(Qt.BrushStyle.NoBrush)
    p.drawEllipse(QPointF(mid, mid), r, r)
    p.setBrush(ink)
    for dx, dy in ((0.0, -1.0), (0.866, 0.5), (-0.866, 0.5)):
        p.drawEllipse(QPointF(mid + dx * r, mid + dy * r), 0.09 * s, 0.09 * s)


def op_pixmap(kind: str, size: int, ratio: float = 1.0) -> QPixmap:
    """A rounded badge in the op's colour with its glyph."""
    pm = QPixmap(int(size * ratio), int(size * ratio))
    pm.setDevicePixelRatio(ratio)
    pm.fill(Qt.GlobalColor.transparent)
    p = QPainter(pm)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    fill = op_colour(kind)
    p.setPen(QPen(fill.darker(140), max(1.0, size / 24)))
    p.setBrush(fill)
    p.drawRoundedRect(QRectF(0.5, 0.5, size - 1, size - 1), size * 0.2, size * 0.2)
    ink = text_colour_on(fill)
    p.setPen(QPen(ink, max(1.2, size / 14), Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
    p.setBrush(ink)
    _glyph(p, kind, size)
    p.end()
    return pm


@cache
def op_icon(kind: str) -> QIcon:
    """The icon of an op kind (palette, menus, host program)."""
    icon = QIcon()
    for size in _SIZES:
        icon.addPixmap(op_pixmap(kind, size, 1.0))
        icon.addPixmap(op_pixmap(kind, size, 2.0))
    return icon


def app_icon() -> QIcon:
    """The application icon (resources/icons/swimlanes.svg), or a drawn fallback."""
    path = icons_dir() / "swimlanes.svg"
    icon = QIcon(str(path)) if path.is_file() else QIcon()
    if icon.isNull():
        icon = op_icon("kernel")
    return icon


def swatch(colour: QColor, size: int = 12) -> QIcon:
    """A plain colour square (legends, stream-kind menus)."""
    pm = QPixmap(size, size)
    pm.fill(colour)
    return QIcon(pm)
