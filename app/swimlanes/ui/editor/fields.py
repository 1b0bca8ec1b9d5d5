"""Form fields that refuse bad values with a reason shown under them, and number parsing."""

from __future__ import annotations

import math

from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from swimlanes.ui.style import OKABE_ITO

ERROR_COLOUR = OKABE_ITO["vermillion"]


class FieldError(ValueError):
    """A value typed into a field that cannot be used; the message is shown under it."""


def parse_number(
    text: str, *, integer: bool = False, minimum: float | None = 0.0, strict: bool = True
) -> float:
    """Parse a number typed by a user ("1e6", "4,096"); FieldError says what is wrong."""
    cleaned = text.strip().replace(",", "").replace("_", "")
    if not cleaned:
        raise FieldError("enter a number")
    try:
        value = float(cleaned)
    except ValueError:
        raise FieldError(f"{text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise FieldError("must be a finite number")
    if integer and value != int(value):
        raise FieldError("must be a whole number")
    if minimum is not None and (value <= minimum if strict else value < minimum):
        raise FieldError(f"must be {'more than' if strict else 'at least'} {minimum:g}")
    return int(value) if integer else value


class Field(QWidget):
    """An editor widget (plus extras such as a unit combo) with a red error line under it."""

    def __init__(self, *widgets: QWidget):
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(1)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        for w in widgets:
            row.addWidget(w, 1 if w is widgets[0] else 0)
        layout.addLayout(row)
        self.error = QLabel()
        self.error.setWordWrap(True)
        self.error.setStyleSheet(f"color: {ERROR_COLOUR}")
        self.error.hide()
        layout.addWidget(self.error)

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.show()

    def clear_error(self) -> None:
        self.error.clear()
        self.error.hide()

    def error_text(self) -> str:
        return self.error.text() if not self.error.isHidden() else ""


def line_edit(placeholder: str = "") -> QLineEdit:
    w = QLineEdit()
    w.setPlaceholderText(placeholder)
    return w
