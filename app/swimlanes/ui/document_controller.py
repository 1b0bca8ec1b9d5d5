"""The open document: pipeline, undo stack, file path, dirty state and the shared selection.

Every view edits through :meth:`DocumentController.push` and redraws on :attr:`changed`, so the
lanes, the host program, the inspector and the chart always show the same document.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from swimlanes.model import Op, Pipeline, load_pipeline, save_pipeline
from swimlanes.model.edits import Edit, EditError

# Undo stacks whose C++ object is alive. Holding the Python wrappers here keeps them out of the
# garbage collector's reach: when a controller dies in a reference cycle, the collector would
# otherwise free the stack's wrapper first, shiboken would free the commands it owns, and the
# C++ stack, destroyed afterwards with its parent, would delete them again (a crash in
# QUndoStack::clear). Each entry leaves when its C++ stack is destroyed.
_LIVE_STACKS: dict[int, QUndoStack] = {}


def _keep_until_destroyed(stack: QUndoStack) -> QUndoStack:
    key = id(stack)
    _LIVE_STACKS[key] = stack
    stack.destroyed.connect(functools.partial(_LIVE_STACKS.pop, key, None))
    return stack


def _call_weakly(method: Callable[[Any], None]) -> Callable[[Any], None]:
    """A slot that calls ``method`` while its object lives (Python and C++ sides alike)."""
    ref = weakref.WeakMethod(method)

    def call(value: Any) -> None:
        bound = ref()
        if bound is not None and shiboken6.isValid(bound.__self__):
            bound(value)

    return call


class EditCommand(QUndoCommand):
    """A QUndoCommand wrapping an :class:`Edit` that has already been applied once."""

    def __init__(self, edit: Edit, controller: DocumentController):
        super().__init__(edit.text)
        self.edit = edit
        # A weak reference: the stack (a child of the controller) owns this command, so a
        # strong one would make a cycle that the garbage collector frees in an order that
        # leaves QUndoStack's destructor deleting commands Python has already freed.
        self._controller = weakref.ref(controller)
        self._applied = True

    def id(self) -> int:  # noqa: A003 - Qt's name
        return self.edit.merge_id or -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 - Qt's name
        if not isinstance(other, EditCommand) or not self.edit.merge(other.edit):
            return False
        self.setText(self.edit.text)
        return True

    def redo(self) -> None:
        controller = self._controller()
        if self._applied or controller is None:
            return  # push() applied it already, to catch EditError before it reaches Qt
        try:
            self.edit.apply(controller.pipeline)
        except EditError as err:  # the same state as when it first applied: cannot happen
            controller.error.emit(str(err))
            return
        self._applied = True

    def undo(self) -> None:
        controller = self._controller()
        if controller is None:
            return
        self.edit.revert(controller.pipeline)
        self._applied = False


class DocumentController(QObject):
    """Holds the pipeline being edited and everything the editor views share."""

    changed = Signal()
    selection_changed = Signal()
    error = Signal(str)
    path_changed = Signal()
    #: Another document replaced this one (New, Open, an example, a recovery); emitted
    #: before ``changed`` so views drop what belonged to the old one first.
    replaced = Signal()
    #: The document became clean (saved/loaded) or dirty; connect here, not to the undo stack,
    #: whose destructor emits its own signals while the controller is being destroyed.
    clean_changed = Signal(bool)

    def __init__(self, pipeline: Pipeline | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.pipeline = pipeline if pipeline is not None else Pipeline()
        self.path: Path | None = None
        self.undo_stack = _keep_until_destroyed(QUndoStack(self))
        self._selection: list[int] = []
        self._selected_stream: str | None = None
        # The stack's destructor emits these while its parent (this controller) is being
        # destroyed; weak method references skip a controller whose Python side is gone.
        self.undo_stack.indexChanged.connect(_call_weakly(self._after_stack_change))
        self.undo_stack.cleanChanged.connect(_call_weakly(self._clean_changed))

    # -- document -------------------------------------------------------------------------
    @property
    def is_dirty(self) -> bool:
        """True when the document differs from what was last saved or loaded."""
        return not self.undo_stack.isClean()

    def push(self, edit: Edit) -> bool:
        """Apply ``edit`` as one undo step; on :class:`EditError` emit :attr:`error`, return False."""
        try:
            edit.apply(self.pipeline)
        except EditError as err:
            self.error.emit(str(err))
            return False
        self.undo_stack.push(EditCommand(edit, self))
        return True

    def set_pipeline(self, pipeline: Pipeline, path: str | os.PathLike[str] | None = None) -> None:
        """Replace the document (New, Open, Examples): clears undo history and selection."""
        self.pipeline = pipeline
        self.undo_stack.clear()
        self.undo_stack.setClean()
        self._selection = []
        self._selected_stream = None
        self.path = Path(path) if path is not None else None
        self.replaced.emit()
        self.changed.emit()
        self.selection_changed.emit()
        self.path_changed.emit()

    def new(self) -> None:
        self.set_pipeline(Pipeline())

    def load(self, path: str | os.PathLike[str]) -> None:
        """Open a pipeline file; a :class:`PipelineError` propagates for the caller to show."""
        self.set_pipeline(load_pipeline(path), path)

    def save(self, path: str | os.PathLike[str] | None = None) -> None:
        """Save atomically to ``path`` (or the current path) and mark the document clean."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("the document has no file yet: give a path to save it to")
        save_pipeline(self.pipeline, target)
        self.path = target
        self.undo_stack.setClean()
        self.path_changed.emit()

    @property
    def title(self) -> str:
        """File name (or the pipeline's name) with a * when there are unsaved changes."""
        name = self.path.name if self.path else self.pipeline.name
        return f"{name}{' *' if self.is_dirty else ''}"

    def _clean_changed(self, clean: bool) -> None:
        self.path_changed.emit()  # the title's "*" follows the clean state
        self.clean_changed.emit(clean)

    def _after_stack_change(self, _index: int) -> None:
        # views read the selection while they redraw, so drop vanished ops before `changed`
        present = {op.uid for op in self.pipeline.program}
        kept = [uid for uid in self._selection if uid in present]
        stream_gone = self._selected_stream and self.pipeline.stream(self._selected_stream) is None
        selection_changed = kept != self._selection or bool(stream_gone)
        self._selection = kept
        if stream_gone:
            self._selected_stream = None
        self.changed.emit()
        if selection_changed:
            self.selection_changed.emit()

    # -- selection ------------------------------------------------------------------------
    def selection(self) -> list[int]:
        """Uids of the selected ops, in program order."""
        return list(self._selection)

    def set_selection(self, uids: list[int]) -> None:
        """Select these ops (unknown uids are dropped); clears a selected stream."""
        wanted = set(uids)
        ordered = [op.uid for op in self.pipeline.program if op.uid in wanted]
        if ordered == self._selection and self._selected_stream is None:
            return
        self._selection = ordered
        self._selected_stream = None
        self.selection_changed.emit()

    def selected_indexes(self) -> list[int]:
        """Program indexes of the selected ops, ascending."""
        wanted = set(self._selection)
        return [i for i, op in enumerate(self.pipeline.program) if op.uid in wanted]

    def set_selection_indexes(self, indexes: list[int]) -> None:
        program = self.pipeline.program
        self.set_selection([program[i].uid for i in indexes if 0 <= i < len(program)])

    def selected_ops(self) -> list[Op]:
        """The selected ops, in program order."""
        wanted = set(self._selection)
        return [op for op in self.pipeline.program if op.uid in wanted]

    def selected_stream(self) -> str | None:
        """The stream whose lane header is selected (for the inspector), or None."""
        return self._selected_stream

    def set_selected_stream(self, name: str | None) -> None:
        """Select a stream's lane header; clears the op selection."""
        if name == self._selected_stream and not self._selection:
            return
        self._selected_stream = name
        self._selection = []
        self.selection_changed.emit()

    def current_stream(self) -> str:
        """The lane new ops go to: the selected stream, else the first selected op's stream."""
        if self._selected_stream:
            return self._selected_stream
        for op in self.selected_ops():
            if op.stream_name:
                return op.stream_name
        return "default"
