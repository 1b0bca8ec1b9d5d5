"""Context menus of the lane editor and the stream commands behind them."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QInputDialog, QMenu

from swimlanes.model.document import DEFAULT_STREAM, STREAM_OPS, Stream
from swimlanes.model.edits import (
    AddStream,
    Edit,
    EditError,
    MoveOps,
    RemoveStream,
    RenameStream,
    SetOpFields,
    SetStreamFields,
    move_stream,
    new_stream_name,
)
from swimlanes.ui.editor.common import PALETTE_KINDS
from swimlanes.ui.editor.lane_layout import is_host_lane, is_stream_lane, lane_device
from swimlanes.ui.editor.thread_menus import ThreadMenus
from swimlanes.ui.icons import op_icon
from swimlanes.ui.style import OP_TITLE

if TYPE_CHECKING:
    from swimlanes.ui.editor.lanes import LaneEditor

STREAM_KIND_TITLES = {
    "blocking": "Blocking (cudaStreamCreate)",
    "non_blocking": "Non-blocking (cudaStreamNonBlocking)",
    "per_thread_default": "Per-thread default stream",
}


class LaneMenus(ThreadMenus):
    """Builds the menus and runs the stream (and host-thread) commands for a
    :class:`LaneEditor`."""

    def __init__(self, view: LaneEditor):
        self.view = view

    @property
    def controller(self):
        return self.view.controller

    # -- questions (tests replace these) --------------------------------------------------
    def ask_text(self, title: str, label: str, value: str) -> str | None:
        text, ok = QInputDialog.getText(self.view, title, label, text=value)
        return text if ok else None

    def ask_int(self, title: str, label: str, value: int) -> int | None:
        number, ok = QInputDialog.getInt(self.view, title, label, value, -64, 64)
        return number if ok else None

    # -- stream commands ------------------------------------------------------------------
    def add_stream(
        self,
        name: str | None = None,
        kind: str = "blocking",
        priority: int = 0,
        device: str | None = None,
    ) -> bool:
        """Declare a new stream (on ``device`` in a pipeline of several devices)."""
        c = self.controller
        name = name or new_stream_name(c.pipeline)
        if not c.pipeline.is_multi_device:
            device = None  # a single-device file keeps its shape
        if not c.push(AddStream(Stream(name, kind, priority, device=device))):
            return False
        c.set_selected_stream(name)
        return True

    def rename_stream(self, name: str) -> bool:
        new = self.ask_text("Rename stream", f"New name for stream {name}:", name)
        return new is not None and new != name and self.controller.push(RenameStream(name, new))

    def set_priority(self, name: str) -> bool:
        stream = self.controller.pipeline.stream(name)
        if stream is None:
            return False
        value = self.ask_int(
            "Stream priority", f"Priority of {name} (lower is higher priority):", stream.priority
        )
        return value is not None and self.controller.push(SetStreamFields(name, priority=value))

    def _push(self, edit_factory: Callable[[], Edit]) -> bool:
        """Push the edit the factory makes; a refusal while making it is reported too."""
        try:
            edit = edit_factory()
        except EditError as err:
            self.controller.error.emit(str(err))
            return False
        return self.controller.push(edit)

    # -- menus ----------------------------------------------------------------------------
    def stream_menu(self, key: str) -> QMenu:
        menu = QMenu(self.view)
        c = self.controller
        device = c.pipeline.stream_device(key) if key else None
        menu.addAction("Add stream", lambda: self.add_stream(device=device))
        if not key:
            return menu
        declared = any(s.name == key for s in c.pipeline.streams)
        editable = declared and key != DEFAULT_STREAM
        menu.addSeparator()
        rename = menu.addAction("Rename\u2026", lambda: self.rename_stream(key))
        kind_menu = menu.addMenu("Kind")
        stream = c.pipeline.stream(key)
        for kind, title in STREAM_KIND_TITLES.items():
            action = kind_menu.addAction(title, lambda k=kind: c.push(SetStreamFields(key, kind=k)))
            action.setCheckable(True)
            action.setChecked(stream is not None and stream.kind == kind)
        priority = menu.addAction("Priority\u2026", lambda: self.set_priority(key))
        up = menu.addAction("Move up", lambda: self._push(lambda: move_stream(c.pipeline, key, -1)))
        down = menu.addAction(
            "Move down", lambda: self._push(lambda: move_stream(c.pipeline, key, 1))
        )
        menu.addSeparator()
        remove = menu.addAction("Remove stream and its ops", lambda: c.push(RemoveStream(key)))
        for action in (rename, kind_menu.menuAction(), priority, remove):
            action.setEnabled(editable)
        names = [s.name for s in c.pipeline.streams]
        position = names.index(key) if editable else -1
        up.setEnabled(position > 0)
        down.setEnabled(0 <= position < len(names) - 1)
        return menu

    def op_menu(self) -> QMenu:
        view = self.view
        c = self.controller
        menu = QMenu(view)
        _action(menu, "Copy", view.copy_selection, QKeySequence.StandardKey.Copy)
        _action(menu, "Paste after", view.paste, QKeySequence.StandardKey.Paste)
        _action(menu, "Duplicate", view.duplicate_selection, QKeySequence("Ctrl+D"))
        _action(menu, "Delete", view.delete_selection, QKeySequence.StandardKey.Delete)
        ops = c.selected_ops()
        stream_ops = [op for op in ops if op.op in STREAM_OPS]
        if stream_ops:
            move = menu.addMenu("Move to stream")
            for s in c.pipeline.all_streams:
                move.addAction(s.name, lambda name=s.name: self._move_to(name))
        if len(ops) == 1:
            retype = menu.addMenu("Change kind")
            for kind in PALETTE_KINDS:
                action = retype.addAction(
                    op_icon(kind),
                    OP_TITLE[kind],
                    lambda k=kind, uid=ops[0].uid: c.push(SetOpFields(uid, {"op": k})),
                )
                action.setEnabled(kind != ops[0].op)
        return menu

    def _move_to(self, stream: str) -> bool:
        c = self.controller
        uids = c.selection()
        if not uids:
            return False
        first = c.selected_indexes()[0]
        return c.push(MoveOps(uids, first, stream))

    def lane_menu(self, lane: str, index: int) -> QMenu:
        """Menu for empty lane space: add an op here, paste here, add a stream."""
        menu = QMenu(self.view)
        add = menu.addMenu("Insert op here")
        stream = lane if is_stream_lane(lane) else self.controller.current_stream()
        device = lane_device(lane)
        for kind in PALETTE_KINDS:
            add.addAction(
                op_icon(kind),
                OP_TITLE[kind],
                lambda k=kind: self.view.insert_new_op(k, index, stream, device),
            )
        if is_stream_lane(lane) and self.controller.pipeline.is_multi_device:
            device = self.controller.pipeline.stream_device(lane)
        menu.addAction("Add stream", lambda: self.add_stream(device=device))
        if is_host_lane(lane):
            home = self.lane_home(lane)
            menu.addAction("Add host thread\u2026", lambda: self.add_thread(home))
        return menu

    def device_menu(self, device: str) -> QMenu:
        """Menu of a device's header: collapse or expand its lanes, add a stream on it."""
        menu = QMenu(self.view)
        collapsed = device in self.view.collapsed_devices
        menu.addAction(
            f"{'Expand' if collapsed else 'Collapse'} {device}",
            lambda: self.view.set_device_collapsed(device, not collapsed),
        )
        menu.addAction(f"Add stream on {device}", lambda: self.add_stream(device=device))
        menu.addAction(f"Add host thread on {device}\u2026", lambda: self.add_thread(device))
        return menu


def _action(menu: QMenu, text: str, slot, shortcut) -> QAction:
    action = menu.addAction(text, slot)
    action.setShortcut(QKeySequence(shortcut))
    return action
