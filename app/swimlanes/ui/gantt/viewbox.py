"""The chart's view box: x-only zoom and pan; clicks and ruler drags become signals.

The wheel zooms time around the mouse (with or without Ctrl, as profilers do); Shift+wheel
and a sideways wheel or touchpad swipe pan it instead.
"""

from __future__ import annotations

import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal

#: A wheel notch with Shift pans this fraction of the visible time.
WHEEL_PAN_STEP = 0.1


class ChartViewBox(pg.ViewBox):
    """X-only wheel zoom and drag pan; clicks and shift-drags (the ruler) become signals."""

    clicked = Signal(float, float, object)
    ruler_dragged = Signal(float, float, bool)

    def __init__(self) -> None:
        super().__init__(enableMenu=False)
        self.setMouseEnabled(x=True, y=False)
        self.invertY(True)
        self.ruler_mode = False

    def mouseClickEvent(self, ev) -> None:  # noqa: ANN001, N802 - Qt override
        if ev.button() == Qt.MouseButton.LeftButton:
            ev.accept()
            p = self.mapSceneToView(ev.scenePos())
            self.clicked.emit(p.x(), p.y(), ev.modifiers())
        else:
            super().mouseClickEvent(ev)

    def mouseDragEvent(self, ev, axis=None) -> None:  # noqa: ANN001, N802 - Qt override
        shift = bool(ev.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if ev.button() == Qt.MouseButton.LeftButton and (self.ruler_mode or shift):
            ev.accept()
            a = self.mapSceneToView(ev.buttonDownScenePos()).x()
            b = self.mapSceneToView(ev.scenePos()).x()
            self.ruler_dragged.emit(a, b, ev.isFinish())
        else:
            super().mouseDragEvent(ev, axis)

    def wheelEvent(self, ev, axis=None) -> None:  # noqa: ANN001, N802 - Qt override
        sideways = ev.orientation() == Qt.Orientation.Horizontal
        if not (sideways or ev.modifiers() & Qt.KeyboardModifier.ShiftModifier):
            super().wheelEvent(ev, axis)
            return
        ev.accept()
        lo, hi = self.viewRange()[0]
        # wheel down (or a swipe to the left) moves on in time
        self.translateBy(x=-ev.delta() / 120.0 * WHEEL_PAN_STEP * (hi - lo))
        self.sigRangeChangedManually.emit([True, False])
