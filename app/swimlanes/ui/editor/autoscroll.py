"""Scrolling a view while a drag rests near its edge, so far columns and lanes can be reached."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QPoint, QTimer
from PySide6.QtWidgets import QAbstractScrollArea

#: How close to an edge (pixels) the pointer must be, and how far each step scrolls.
EDGE = 28
STEP = 24
INTERVAL_MS = 40


class EdgeScroller(QObject):
    """Scrolls ``view`` every few ms while the drag position is near an edge of its viewport.

    ``left_margin``/``top_margin`` count pinned headers and rulers as edges; ``on_scroll``
    gets the (unchanged) viewport position after each step, to move what is being dragged.
    """

    def __init__(
        self,
        view: QAbstractScrollArea,
        on_scroll: Callable[[QPoint], None],
        left_margin: Callable[[], float],
        top_margin: Callable[[], float],
    ):
        super().__init__(view)
        self.view = view
        self._on_scroll = on_scroll
        self._left = left_margin
        self._top = top_margin
        self._pos: QPoint | None = None
        self.timer = QTimer(self)
        self.timer.setInterval(INTERVAL_MS)
        self.timer.timeout.connect(self._step)

    def direction(self, pos: QPoint) -> tuple[int, int]:
        """(-1, 0, 1) per axis: which way a drag at ``pos`` scrolls."""
        size = self.view.viewport().size()
        dx = -1 if pos.x() < self._left() + EDGE else 1 if pos.x() > size.width() - EDGE else 0
        dy = -1 if pos.y() < self._top() + EDGE else 1 if pos.y() > size.height() - EDGE else 0
        return dx, dy

    def update(self, pos: QPoint) -> None:
        """The drag is at ``pos`` now: scroll while it stays near an edge."""
        self._pos = QPoint(pos)
        if self.direction(pos) != (0, 0):
            if not self.timer.isActive():
                self.timer.start()
        else:
            self.timer.stop()

    def stop(self) -> None:
        self.timer.stop()
        self._pos = None

    def _step(self) -> None:
        if self._pos is None:
            self.timer.stop()
            return
        dx, dy = self.direction(self._pos)
        h, v = self.view.horizontalScrollBar(), self.view.verticalScrollBar()
        before = (h.value(), v.value())
        h.setValue(h.value() + dx * STEP)
        v.setValue(v.value() + dy * STEP)
        if (h.value(), v.value()) == before:
            self.timer.stop()  # at the end: nothing more to reach
            return
        self._on_scroll(self._pos)
