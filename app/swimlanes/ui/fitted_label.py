"""A one-box status line that is never clipped: it shows the longest of its forms that fits.

The forms go from the fullest wording to the most compact. The first that fits the label's
width and height on its own lines is shown; when none does, the first that fits once wrapped
at word boundaries (a number stays with its unit); when even the last does not fit, its lines
are elided with "…". With ``reflow_full`` the full form, wrapped, comes before all that. The
full form is always in the tooltip, so a shortened line loses nothing. Until the label has a
size of its own (not shown yet) it shows the full form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontMetrics, QResizeEvent, QShowEvent
from PySide6.QtWidgets import QLabel, QWidget

#: A space where a line may break: not the one between a number and its unit.
_BREAK = re.compile(r" (?!(?:ns|us|µs|ms|s)\b)")


def wrap(text: str, width: int, fm: QFontMetrics) -> list[str] | None:
    """``text``'s lines (its own line breaks kept) wrapped into ``width`` pixels; None when
    one word is wider than that."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in _BREAK.split(paragraph):
            if fm.horizontalAdvance(word) > width:
                return None
            candidate = f"{line} {word}" if line else word
            if line and fm.horizontalAdvance(candidate) > width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return lines


def lines_that_fit(height: int, fm: QFontMetrics) -> int:
    """How many lines of text ``height`` pixels hold (at least one)."""
    return max(1, 1 + (height - fm.height()) // fm.lineSpacing())


class FittedLabel(QLabel):
    """A QLabel given several forms of one text (:meth:`set_forms`); shows the fullest that
    fits its box, with the full form and ``tip`` in the tooltip."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setWordWrap(False)  # wrapping is this class's, so that it knows the line count
        self._forms: list[str] = []
        self._tip = ""
        self._reflow_full = False

    def set_forms(self, forms: Sequence[str], tip: str = "", *, reflow_full: bool = False) -> None:
        """Show the first of ``forms`` (fullest first) that fits; the tooltip is the first form
        and then ``tip``. ``reflow_full``: the first form says what the others leave out (a
        reason), so it is shown wrapped before a shorter form is shown on its own lines."""
        self._forms = [f for f in forms if f]
        self._tip = tip
        self._reflow_full = reflow_full
        full = self.full_text()
        self.setToolTip("\n\n".join(t for t in (full, tip) if t))
        self._fit()
        self.updateGeometry()

    def full_text(self) -> str:
        """The fullest form, as :meth:`set_forms` was given it ("" when none)."""
        return self._forms[0] if self._forms else ""

    def _fit(self) -> None:
        if not self._forms:
            self.setText("")
            return
        box = self.contentsRect()
        if not self.isVisible() or box.width() <= 0 or box.height() <= 0:
            self.setText(self._forms[0])  # no size to fit yet: the next resize fits it
            return
        fm = self.fontMetrics()
        room = lines_that_fit(box.height(), fm)
        # A shorter form on its own lines reads better than a longer one broken mid-phrase:
        # wrapping is for when no form fits unbroken.
        passes = [(self._forms[:1], True)] if self._reflow_full else []
        for forms, wrapped in [*passes, (self._forms, False), (self._forms, True)]:
            for form in forms:
                lines = wrap(form, box.width(), fm)
                if lines is None or len(lines) > room:
                    continue
                if wrapped or len(lines) == form.count("\n") + 1:
                    self.setText("\n".join(lines))
                    return
        lines = self._forms[-1].split("\n")
        if len(lines) > room:
            lines = [", ".join(lines[: len(lines) - room + 1]), *lines[len(lines) - room + 1 :]]
        elide = Qt.TextElideMode.ElideRight
        self.setText("\n".join(fm.elidedText(line, elide, box.width()) for line in lines))

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        """Room for the full form on its own lines, so the layout gives it that when it can."""
        fm = self.fontMetrics()
        lines = self.full_text().split("\n")
        width = max((fm.horizontalAdvance(line) for line in lines), default=0)
        m = self.contentsMargins()
        height = fm.height() + (len(lines) - 1) * fm.lineSpacing()
        return QSize(width + m.left() + m.right() + 2, height + m.top() + m.bottom())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 - Qt's name
        """Room for the most compact form's widest line: narrower, it would only be elided."""
        fm = self.fontMetrics()
        last = self._forms[-1].split("\n") if self._forms else [""]
        width = max(fm.horizontalAdvance(line) for line in last)
        m = self.contentsMargins()
        return QSize(width + m.left() + m.right() + 2, fm.height())

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        self._fit()
