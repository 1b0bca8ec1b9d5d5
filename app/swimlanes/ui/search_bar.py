"""The search bar over the charts: a query field, "3 of 17", previous/next, filter, close.

It only edits and reports; :class:`swimlanes.ui.gantt.chart_search.ChartSearch` finds the ops.
Typing is debounced, so a million-op chart is searched once per pause, not once per key.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QToolButton, QWidget

#: Typing pauses this long before the charts are searched.
DEBOUNCE_MS = 150

SEARCH_HELP = (
    "Find ops by the text on their bars (case-insensitive).<br>"
    "<b>kind:</b>kernel, <b>stream:</b>s1, <b>engine:</b>h2d, <b>device:</b>gpu1 narrow the "
    "search "
    "(exact name if one matches, else names containing it); "
    "e.g. <tt>kind:kernel stream:s1 gemm</tt>.<br>"
    "Enter / F3: next match, Shift+Enter / Shift+F3: previous, Esc: close."
)


class SearchBar(QWidget):
    """Query field with match count, stepping buttons, a filter toggle and a close button."""

    #: The query after typing paused (or at once on Enter).
    query_changed = Signal(str)
    #: +1: next match, -1: previous.
    step_requested = Signal(int)
    filter_toggled = Signal(bool)
    close_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chart_search_bar")
        self.field = QLineEdit()
        self.field.setObjectName("chart_search_field")
        self.field.setPlaceholderText("Find ops: label words, kind:kernel, stream:s1")
        self.field.setToolTip(SEARCH_HELP)
        self.field.setClearButtonEnabled(True)
        self.field.installEventFilter(self)
        self.count_label = QLabel()
        self.count_label.setObjectName("chart_search_count")
        self.count_label.setMinimumWidth(self.fontMetrics().horizontalAdvance("888888 of 888888"))
        self.previous_button = self._button("▲", "Previous match (Shift+Enter, Shift+F3)")
        self.next_button = self._button("▼", "Next match (Enter, F3)")
        self.filter_button = self._button("Filter", "Dim the ops that do not match")
        self.filter_button.setCheckable(True)
        self.close_button = self._button("✕", "Close the search (Esc)")
        self.previous_button.clicked.connect(lambda: self.request_step(-1))
        self.next_button.clicked.connect(lambda: self.request_step(1))
        self.filter_button.toggled.connect(self.filter_toggled)
        self.close_button.clicked.connect(self.close_requested)
        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self.flush)
        self.field.textChanged.connect(lambda _text: self._debounce.start())
        box = QHBoxLayout(self)
        box.setContentsMargins(4, 2, 4, 2)
        box.setSpacing(4)
        box.addWidget(QLabel("Find:"))
        box.addWidget(self.field, 3)
        box.addWidget(self.count_label)
        for button in (self.previous_button, self.next_button, self.filter_button):
            box.addWidget(button)
        box.addStretch(1)
        box.addWidget(self.close_button)

    def _button(self, text: str, tip: str) -> QToolButton:
        button = QToolButton()
        button.setText(text)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # Enter keeps stepping in the field
        return button

    def text(self) -> str:
        return self.field.text()

    def set_count(self, current: int | None, total: int) -> None:
        """Show "3 of 17" (``current`` from 0; None: not stepped yet), or that none match."""
        if not self.field.text().strip():
            text = ""
        elif total == 0:
            text = "no match"
        elif current is None:
            text = f"{total} match" + ("" if total == 1 else "es")
        else:
            text = f"{current + 1} of {total}"
        self.count_label.setText(text)

    def flush(self) -> None:
        """Report the query now (a pending debounce is dropped)."""
        self._debounce.stop()
        self.query_changed.emit(self.field.text())

    def request_step(self, direction: int) -> None:
        """Ask for the next (+1) or previous (-1) match, the typed query applied first."""
        if self._debounce.isActive():
            self.flush()
        self.step_requested.emit(direction)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt override
        if obj is self.field and event.type() == QEvent.Type.KeyPress:
            return self._field_key(event)  # type: ignore[arg-type]
        return super().eventFilter(obj, event)

    def _field_key(self, event: QKeyEvent) -> bool:
        back = bool(event.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter, Qt.Key.Key_F3):
            self.request_step(-1 if back else 1)
        elif event.key() == Qt.Key.Key_Escape:
            self.close_requested.emit()
        else:
            return False
        return True
