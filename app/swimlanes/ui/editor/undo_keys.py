"""Undo and redo keys mean the document's undo and redo wherever the focus is in the window.

A line edit (an inspector field, say) takes Ctrl+Z for its own text undo, so without this the
keys did nothing a user could see while a field had the focus. What a user expects is the
document's undo: the field being typed in commits first (one document edit, as Enter would),
and then that edit is undone like any other, so the field shows its previous value again.
Dialogs, which are windows of their own, keep the usual text undo.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QLineEdit,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

#: Widgets that take the undo keys for themselves when they have the focus.
TEXT_INPUTS = (QLineEdit, QAbstractSpinBox, QComboBox, QPlainTextEdit, QTextEdit)


class DocumentUndoKeys(QObject):
    """Watches the focus in ``window``: a text input that gets it leaves the keys of
    ``actions`` (undo, redo) to those actions, committing its own edit first."""

    def __init__(self, window: QWidget, actions: list[QAction]) -> None:
        super().__init__(window)
        self.window = window
        self.actions = actions
        app = QApplication.instance()
        assert isinstance(app, QApplication)
        app.focusChanged.connect(self._on_focus_changed)

    def _on_focus_changed(self, _old: QWidget | None, new: QWidget | None) -> None:
        if new is None or not isinstance(new, TEXT_INPUTS) or new.window() is not self.window:
            return
        new.installEventFilter(self)  # Qt keeps one entry per filter: installing again is a no-op

    def _is_undo_key(self, event: QKeyEvent) -> bool:
        pressed = QKeySequence(event.keyCombination())
        return any(
            pressed.matches(seq) == QKeySequence.SequenceMatch.ExactMatch
            for action in self.actions
            for seq in action.shortcuts()
        )

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() != QEvent.Type.ShortcutOverride or not isinstance(event, QKeyEvent):
            return False
        if not self._is_undo_key(event):
            return False
        line = obj.lineEdit() if isinstance(obj, QComboBox) else obj
        if isinstance(line, QLineEdit) and line.isModified():
            # commit what is typed (as Enter would), so that the undo takes it back
            line.editingFinished.emit()
            line.setModified(False)
        event.ignore()  # not the widget's: the window's shortcut (the action) gets the key
        return True
