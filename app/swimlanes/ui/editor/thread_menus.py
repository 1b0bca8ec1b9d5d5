"""The host-thread commands of the lane editor's menus: add, rename and remove a host thread
(a mixin of :class:`~swimlanes.ui.editor.lane_menus.LaneMenus`).

Each command is one undo step; a refusal (a name that is taken, a thread that streams or ops
still name) is said through the controller's error signal, which the main window shows in its
status bar.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMenu

from swimlanes.model.document import Pipeline
from swimlanes.model.edits import AddHostThread, EditError, RemoveHostThread, RenameHostThread
from swimlanes.ui.editor.lane_layout import lane_owner

if TYPE_CHECKING:
    from swimlanes.ui.document_controller import DocumentController
    from swimlanes.ui.editor.lanes import LaneEditor


def free_thread_name(pipeline: Pipeline, base: str = "thread", also: tuple[str, ...] = ()) -> str:
    """A host thread name no thread or device has (nor one of ``also``): ``base``, else
    ``base2``, ``base3`` ..."""
    taken = {name for name, _ in pipeline.thread_list()} | set(pipeline.device_names)
    taken |= {t.name for t in pipeline.host_threads} | set(also)
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}{n}"
    return name


class ThreadMenus:
    """Expects LaneMenus' ``view``, ``controller``, ``ask_text`` and ``add_stream``."""

    view: LaneEditor

    @property
    def controller(self) -> DocumentController:
        raise NotImplementedError

    def ask_text(self, title: str, label: str, value: str) -> str | None:
        raise NotImplementedError

    def add_stream(self, name: str | None = None, kind: str = "blocking", priority: int = 0,
                   device: str | None = None) -> bool:  # fmt: skip
        raise NotImplementedError

    # -- commands -------------------------------------------------------------------------
    def add_thread(self, device: str | None = None, name: str | None = None) -> bool:
        """Declare a new host thread on ``device`` (the first device by default), asking its
        name unless given. A device whose one thread is its implicit one first gets that
        thread declared (as ``main``), so that the new thread comes beside it: one undo step."""
        c = self.controller
        pipeline = c.pipeline
        device = device if device in pipeline.device_names else pipeline.device_names[0]
        if name is None:
            name = self.ask_text(
                "Add host thread", f"Name of the new host thread on {device}:",
                free_thread_name(pipeline),
            )  # fmt: skip
            if name is None:
                return False
        name = name.strip()
        # a single-device file names no device for its threads, keeping its shape
        on = device if pipeline.is_multi_device else None
        if pipeline.device_thread(device) != device:  # the device's threads are declared
            return c.push(AddHostThread(name, on))
        first = device == pipeline.device_names[0]
        main = free_thread_name(pipeline, "main" if first else f"{device} main", also=(name,))
        trial = pipeline.copy()
        try:
            for edit in (AddHostThread(main, on), AddHostThread(name, on)):
                edit.apply(trial)  # both or neither
        except EditError as err:
            c.error.emit(str(err))
            return False
        c.undo_stack.beginMacro(f"Add host thread {name}")
        try:
            c.push(AddHostThread(main, on))
            c.push(AddHostThread(name, on))
        finally:
            c.undo_stack.endMacro()
        return True

    def rename_thread(self, name: str, new: str | None = None) -> bool:
        """Rename declared host thread ``name`` (asking the new name unless given)."""
        if new is None:
            new = self.ask_text("Rename host thread", f"New name for host thread {name}:", name)
        if new is None or new.strip() == name:
            return False
        return self.controller.push(RenameHostThread(name, new.strip()))

    def remove_thread(self, name: str) -> bool:
        """Remove declared host thread ``name``; refused, saying why, while streams or ops name
        it."""
        return self.controller.push(RemoveHostThread(name))

    # -- the menu -------------------------------------------------------------------------
    def lane_home(self, key: str) -> str | None:
        """The device of a host lane's thread (None: the one host lane of a program of one
        device)."""
        pipeline = self.controller.pipeline
        device, thread = lane_owner(pipeline, key)
        return pipeline.thread_device(thread) if thread is not None else device

    def thread_menu(self, key: str) -> QMenu:
        """Menu of a host lane's header: add a host thread beside it, rename or remove it (a
        declared thread), add a stream."""
        menu = QMenu(self.view)
        pipeline = self.controller.pipeline
        thread = lane_owner(pipeline, key)[1]
        device = self.lane_home(key)
        menu.addAction("Add host thread\u2026", lambda: self.add_thread(device))
        declared = thread is not None and any(t.name == thread for t in pipeline.host_threads)
        rename = menu.addAction(
            "Rename host thread\u2026", lambda: self.rename_thread(thread or "")
        )
        remove = menu.addAction("Remove host thread", lambda: self.remove_thread(thread or ""))
        for action in (rename, remove):
            action.setEnabled(declared)
            if not declared:
                action.setToolTip("Only a declared host thread can be renamed or removed")
        menu.addSeparator()
        menu.addAction("Add stream", lambda: self.add_stream(device=device))
        return menu
