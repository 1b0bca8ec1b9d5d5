"""Pipeline > Devices and communicators: add, rename and remove devices; define communicators.

Every change is one undoable edit of the document (``model.device_edits`` through the
controller), so Edit > Undo takes it back; a refused change says why under the lists. The
dialog is not modal: the lanes and the charts follow each change while it is open.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from swimlanes.model.device_edits import device_users
from swimlanes.model.edit_base import plural
from swimlanes.model.edits import (
    AddCommunicator,
    AddDevice,
    Edit,
    RemoveCommunicator,
    RemoveDevice,
    RenameDevice,
    SetCommunicator,
)
from swimlanes.ui.document_controller import DocumentController
from swimlanes.ui.editor.fields import ERROR_COLOUR


def _free_name(prefix: str, used: list[str]) -> str:
    n = 0
    while f"{prefix}{n}" in used:
        n += 1
    return f"{prefix}{n}"


class DevicesDialog(QDialog):
    """The document's devices (in order: the first one is where undeclared streams go) and
    its communicators with their member devices (in rank order)."""

    def __init__(self, controller: DocumentController, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("devices_dialog")
        self.setWindowTitle("Devices and communicators")
        self.controller = controller
        self._refreshing = False
        self._last_error = ""
        layout = QVBoxLayout(self)
        intro = QLabel(
            "Each device has its own copy engines, SMs and host thread. Streams and host calls "
            "belong to a device (the first one unless they say otherwise); a communicator is "
            "the set of devices a collective runs across."
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        row = QHBoxLayout()
        row.addWidget(self._build_devices())
        row.addWidget(self._build_communicators())
        layout.addLayout(row)
        self.error = QLabel()
        self.error.setObjectName("devices_error")
        self.error.setWordWrap(True)
        self.error.setStyleSheet(f"color: {ERROR_COLOUR}")
        layout.addWidget(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)
        controller.changed.connect(self.refresh)
        controller.error.connect(self._remember_error)
        self.refresh()

    # -- building -------------------------------------------------------------------------
    def _build_devices(self) -> QGroupBox:
        box = QGroupBox("Devices")
        grid = QGridLayout(box)
        self.devices = QListWidget()
        self.devices.setObjectName("device_list")
        grid.addWidget(self.devices, 0, 0, 1, 3)
        self.add_device_button = QPushButton("Add")
        self.rename_device_button = QPushButton("Rename…")
        self.remove_device_button = QPushButton("Remove")
        self.add_device_button.clicked.connect(lambda: self.add_device())
        self.rename_device_button.clicked.connect(lambda: self.rename_device())
        self.remove_device_button.clicked.connect(lambda: self.remove_device())
        for i, b in enumerate(
            (self.add_device_button, self.rename_device_button, self.remove_device_button)
        ):
            grid.addWidget(b, 1, i)
        self.devices.currentRowChanged.connect(lambda _r: self._update_buttons())
        return box

    def _build_communicators(self) -> QGroupBox:
        box = QGroupBox("Communicators")
        grid = QGridLayout(box)
        self.communicators = QListWidget()
        self.communicators.setObjectName("communicator_list")
        grid.addWidget(self.communicators, 0, 0, 1, 3)
        grid.addWidget(QLabel("Members (rank order):"), 1, 0, 1, 3)
        self.members = QListWidget()
        self.members.setObjectName("member_list")
        self.members.setToolTip("Tick the devices this communicator's collectives run across")
        grid.addWidget(self.members, 2, 0, 1, 3)
        self.add_comm_button = QPushButton("Add")
        self.rename_comm_button = QPushButton("Rename…")
        self.remove_comm_button = QPushButton("Remove")
        self.add_comm_button.clicked.connect(lambda: self.add_communicator())
        self.rename_comm_button.clicked.connect(lambda: self.rename_communicator())
        self.remove_comm_button.clicked.connect(lambda: self.remove_communicator())
        for i, b in enumerate(
            (self.add_comm_button, self.rename_comm_button, self.remove_comm_button)
        ):
            grid.addWidget(b, 3, i)
        self.communicators.currentRowChanged.connect(lambda _r: self._show_members())
        self.members.itemChanged.connect(self._member_toggled)
        return box

    # -- questions (tests replace this) ---------------------------------------------------
    def ask_text(self, title: str, label: str, value: str) -> str | None:
        text, ok = QInputDialog.getText(self, title, label, text=value)
        return text.strip() if ok else None

    # -- showing --------------------------------------------------------------------------
    def refresh(self) -> None:
        """Show the document's devices and communicators, keeping the selected ones."""
        self._refreshing = True
        try:
            p = self.controller.pipeline
            _set_items(self.devices, p.device_names)
            _set_items(self.communicators, [f"{c.name}" for c in p.communicators])
            for i, name in enumerate(p.device_names):
                streams, ops, comms = device_users(p, name)
                tip = f"{name}: {plural(len(streams), 'stream')}, {plural(ops, 'op')}"
                if comms:
                    tip += f"; in {', '.join(comms)}"
                self.devices.item(i).setToolTip(tip)
        finally:
            self._refreshing = False
        self._show_members()
        self._update_buttons()

    def _show_members(self) -> None:
        comm = self.current_communicator()
        self._refreshing = True
        try:
            self.members.clear()
            p = self.controller.pipeline
            if comm is not None:
                # members in rank order first, then the other devices unticked
                names = list(comm.devices) + [d for d in p.device_names if d not in comm.devices]
                for name in names:
                    item = QListWidgetItem(name)
                    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                    ticked = name in comm.devices
                    item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
                    self.members.addItem(item)
        finally:
            self._refreshing = False
        self._update_buttons()

    def _update_buttons(self) -> None:
        has_device = self.current_device() is not None
        self.rename_device_button.setEnabled(has_device)
        self.remove_device_button.setEnabled(
            has_device and len(self.controller.pipeline.device_names) > 1
        )
        has_comm = self.current_communicator() is not None
        self.rename_comm_button.setEnabled(has_comm)
        self.remove_comm_button.setEnabled(has_comm)
        self.members.setEnabled(has_comm)

    def current_device(self) -> str | None:
        item = self.devices.currentItem()
        return item.text() if item is not None else None

    def current_communicator(self):  # noqa: ANN201 - a model Communicator or None
        item = self.communicators.currentItem()
        return self.controller.pipeline.communicator(item.text()) if item is not None else None

    # -- commands -------------------------------------------------------------------------
    def _remember_error(self, message: str) -> None:
        self._last_error = message

    def _push(self, edit: Edit) -> bool:
        self._last_error = ""
        ok = self.controller.push(edit)
        self.error.setText("" if ok else self._last_error or "refused")
        return ok

    def add_device(self, name: str | None = None) -> bool:
        """Add a device (named gpu1, gpu2 ... unless ``name`` is given)."""
        name = name or _free_name("gpu", self.controller.pipeline.device_names)
        if not self._push(AddDevice(name)):
            return False
        _select(self.devices, name)
        return True

    def rename_device(self, new: str | None = None) -> bool:
        old = self.current_device()
        if old is None:
            return False
        new = (
            new if new is not None else self.ask_text("Rename device", f"New name for {old}:", old)
        )
        if not new or new == old:
            return False
        if not self._push(RenameDevice(old, new)):
            return False
        _select(self.devices, new)
        return True

    def remove_device(self) -> bool:
        name = self.current_device()
        return name is not None and self._push(RemoveDevice(name))

    def add_communicator(self, name: str | None = None) -> bool:
        """Add a communicator over every device (untick the ones it leaves out)."""
        p = self.controller.pipeline
        used = [c.name for c in p.communicators]
        name = name or ("world" if "world" not in used else _free_name("comm", used))
        if not self._push(AddCommunicator(name, list(p.device_names))):
            return False
        _select(self.communicators, name)
        return True

    def rename_communicator(self, new: str | None = None) -> bool:
        comm = self.current_communicator()
        if comm is None:
            return False
        old = comm.name
        if new is None:
            new = self.ask_text("Rename communicator", f"New name for {old}:", old)
        if not new or new == old:
            return False
        if not self._push(SetCommunicator(old, new_name=new)):
            return False
        _select(self.communicators, new)
        return True

    def remove_communicator(self) -> bool:
        comm = self.current_communicator()
        return comm is not None and self._push(RemoveCommunicator(comm.name))

    def set_members(self, devices: list[str]) -> bool:
        """Make ``devices`` (in rank order) the selected communicator's members."""
        comm = self.current_communicator()
        if comm is None:
            return False
        name = comm.name
        ok = self._push(SetCommunicator(name, devices=devices))
        _select(self.communicators, name)
        return ok

    def _member_toggled(self, _item: QListWidgetItem) -> None:
        if self._refreshing:
            return
        ticked = [
            self.members.item(i).text()
            for i in range(self.members.count())
            if self.members.item(i).checkState() == Qt.CheckState.Checked
        ]
        if not self.set_members(ticked):
            self._show_members()  # refused: show the members as they are


def _set_items(widget: QListWidget, names: list[str]) -> None:
    """Show ``names``, keeping the current row's name selected when it is still there."""
    if [widget.item(i).text() for i in range(widget.count())] == names:
        return
    current = widget.currentItem().text() if widget.currentItem() is not None else None
    widget.clear()
    widget.addItems(names)
    if current in names:
        widget.setCurrentRow(names.index(current))
    elif names:
        widget.setCurrentRow(0)


def _select(widget: QListWidget, name: str) -> None:
    for i in range(widget.count()):
        if widget.item(i).text() == name:
            widget.setCurrentRow(i)
            return
