"""An example's lesson, shown the first time that example opens (and on Help > Lesson).

Which examples have shown their lesson, and whether lessons show on opening at all, are kept
in the app settings (QSettings), so each lesson greets a user once. The dialog is not modal:
the example is there to be looked at while reading.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from swimlanes.ui.settings import Settings

SHOWN_KEY = "lessons/shown"
ENABLED_KEY = "lessons/show_on_first_open"


def lessons_on_open(settings: Settings) -> bool:
    """Whether an example's lesson shows the first time it opens."""
    return str(settings.q.value(ENABLED_KEY, "true")).lower() in ("true", "1")


def set_lessons_on_open(settings: Settings, on: bool) -> None:
    settings.q.setValue(ENABLED_KEY, "true" if on else "false")


def shown_lessons(settings: Settings) -> list[str]:
    """Examples whose lesson has been shown on opening them."""
    value = settings.q.value(SHOWN_KEY, [])
    if isinstance(value, str):  # QSettings' INI files give one string for a one-item list
        value = [value] if value else []
    return [str(v) for v in value or []]


def mark_lesson_shown(settings: Settings, example: str) -> None:
    shown = shown_lessons(settings)
    if example not in shown:
        settings.q.setValue(SHOWN_KEY, [*shown, example])


class LessonDialog(QDialog):
    """An example's lesson: its title and description, a "show lessons" choice, and a way
    into the tutorial."""

    def __init__(
        self,
        parent: QWidget,
        title: str,
        description: str,
        settings: Settings,
        open_tutorial: Callable[[], object] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("lesson_dialog")
        self.setWindowTitle(f"Lesson: {title}" if title else "Lesson")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        # beside the window, which keeps the keyboard: the example is there to be tried
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        self.settings = settings
        text = QLabel(f"<h3>{html.escape(title)}</h3><p>{html.escape(description)}</p>", self)
        text.setWordWrap(True)
        text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        text.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.show_on_open = QCheckBox("Show an example's lesson the first time it opens", self)
        self.show_on_open.setChecked(lessons_on_open(settings))
        self.show_on_open.toggled.connect(lambda on: set_lessons_on_open(settings, on))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        if open_tutorial is not None:
            tutorial = buttons.addButton("Open the tutorial", QDialogButtonBox.ButtonRole.HelpRole)
            tutorial.clicked.connect(open_tutorial)
        layout = QVBoxLayout(self)
        layout.addWidget(text, 1)
        layout.addWidget(self.show_on_open)
        layout.addWidget(buttons)
        self.resize(520, 300)


def show_lesson_dialog(window: QWidget, settings: Settings, extra: dict, name: str) -> LessonDialog:
    """Show the lesson of a document whose extra keys are ``extra`` (one dialog per window)."""
    from swimlanes.ui.help_viewer import open_guide

    old = window.findChild(LessonDialog, "lesson_dialog")
    if old is not None:
        old.close()
    title = str(extra.get("lesson") or name)
    description = str(extra.get("description") or "This pipeline carries no lesson text.")
    dialog = LessonDialog(
        window, title, description, settings, lambda: open_guide(window, "tutorial.md")
    )
    dialog.show()
    return dialog


def offer_first_lesson(window: QWidget, settings: Settings, example: str, extra: dict) -> bool:
    """Show an example's lesson if it has one, the window is on screen, lessons on opening
    are wanted and this example has not shown it before; True if shown."""
    wanted = lessons_on_open(settings) and example not in shown_lessons(settings)
    if not (wanted and extra.get("description") and window.isVisible()):
        return False
    mark_lesson_shown(settings, example)
    show_lesson_dialog(window, settings, extra, example)
    # the window keeps the keyboard (the lesson stays above it, as its dialog): what was
    # being typed or clicked goes on undisturbed
    window.activateWindow()
    return True
