"""The inspector's heading: the selected op's number and label, or the stream's name.

A captured program's kernels keep their mangled names (``sm80_xmma_gemm_f32f32_..._cublas``,
120 characters without a space): wrapped at spaces only, such a name set the inspector's
minimum width, so the form scrolled sideways and its fields were cut off at the dock's edge.
The heading wraps at spaces and elides a word wider than itself, the whole text in its tooltip
(the Label field holds it whole too).
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QLabel, QWidget


class InspectorTitle(QLabel):
    """A bold, word-wrapped heading that never widens its parent: :meth:`full_text` is what
    was set, :meth:`text` what is shown."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._full = ""
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(True)
        font = self.font()
        font.setBold(True)
        self.setFont(font)

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        self._full = text
        self._fit()

    def full_text(self) -> str:
        return self._full

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        return QSize(0, super().minimumSizeHint().height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        width = self.contentsRect().width()
        fm = self.fontMetrics()
        words = self._full.split(" ")
        if width > 0 and any(fm.horizontalAdvance(w) > width for w in words):
            elide = Qt.TextElideMode.ElideRight
            shown = " ".join(
                fm.elidedText(w, elide, width) if fm.horizontalAdvance(w) > width else w
                for w in words
            )
        else:
            shown = self._full
        if shown != super().text():
            super().setText(shown)
        self.setToolTip(self._full if shown != self._full else "")
