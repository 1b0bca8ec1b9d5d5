"""Reversible edits of a pipeline's devices and communicators (see
:mod:`swimlanes.model.edits`, which exports them with the other edits).

A document that declares no devices has one, ``gpu0``: the first device edit declares it,
so that a single-device document changes shape only when a device is really added. Each edit
checks the whole document it produces and is refused, leaving the document as it was, when
that would be invalid (a peer copy left without a stream at either end, a collective whose
stream is no longer on a member device ...).
"""

from __future__ import annotations

from typing import Any

from swimlanes.model.document import (
    MAX_COMMUNICATORS,
    MAX_DEVICES,
    MAX_NAME_CHARS,
    Communicator,
    Device,
    Pipeline,
)
from swimlanes.model.edit_base import Edit, plural
from swimlanes.model.op_defaults import DEVICE_FIELDS, EditError

__all__ = [
    "AddCommunicator",
    "AddDevice",
    "RemoveCommunicator",
    "RemoveDevice",
    "RenameDevice",
    "SetCommunicator",
    "SetStreamDevice",
    "device_users",
]


class _Changes:
    """Attribute assignments made by an edit, undone in reverse order."""

    def __init__(self) -> None:
        self._undo: list[tuple[Any, str, Any]] = []

    def set(self, obj: Any, attr: str, value: Any) -> None:
        self._undo.append((obj, attr, getattr(obj, attr)))
        setattr(obj, attr, value)

    def undo(self) -> None:
        for obj, attr, value in reversed(self._undo):
            setattr(obj, attr, value)
        self._undo.clear()


class _ChangesEdit(Edit):
    """An edit made of attribute assignments (undone by restoring them)."""

    def __init__(self) -> None:
        super().__init__()
        self._changes = _Changes()

    def _undo(self, pipeline: Pipeline) -> None:
        self._changes.undo()

    def _declare_devices(self, pipeline: Pipeline) -> list[Device]:
        """The pipeline's device list, declaring the implicit ``gpu0`` first if need be."""
        if not pipeline.devices:
            self._changes.set(pipeline, "devices", [Device(name) for name in pipeline.device_names])
        return pipeline.devices


def _check_name(name: Any, what: str, taken: list[str]) -> None:
    if not isinstance(name, str) or not name.strip():
        raise EditError(f"a {what} needs a name")
    if name != name.strip():
        raise EditError(f"a {what} name cannot start or end with spaces")
    if len(name) > MAX_NAME_CHARS:
        raise EditError(f"a {what} name has at most {MAX_NAME_CHARS} characters")
    if name in taken:
        raise EditError(f"there is already a {what} named {name!r}")


def device_users(pipeline: Pipeline, device: str) -> tuple[list[str], int, list[str]]:
    """What uses ``device``: the declared streams on it, the number of ops it issues or names
    (a peer copy's end, a broadcast's root), and the communicators it is a member of."""
    first = pipeline.device_names[0]
    on = {s.name: s.device or first for s in pipeline.streams}
    streams = [name for name, d in on.items() if d == device]
    ops = 0
    for op in pipeline.program:
        stream = op.stream_name
        issuer = on.get(stream, first) if stream is not None else op.device or first
        ops += issuer == device or device in (op.src_device, op.dst_device, op.root)
    comms = [c.name for c in pipeline.communicators if device in c.devices]
    return streams, ops, comms


class AddDevice(_ChangesEdit):
    """Declare a new device (appended, or at ``index``)."""

    def __init__(self, name: str, index: int | None = None):
        super().__init__()
        self.name = name
        self.index = index
        self._text = f"Add device {name}"

    def _do(self, pipeline: Pipeline) -> None:
        _check_name(self.name, "device", pipeline.device_names)
        if len(pipeline.device_names) >= MAX_DEVICES:
            raise EditError(f"a pipeline has at most {MAX_DEVICES} devices")
        devices = list(self._declare_devices(pipeline))
        devices.insert(len(devices) if self.index is None else self.index, Device(self.name))
        self._changes.set(pipeline, "devices", devices)


class RemoveDevice(_ChangesEdit):
    """Remove a device that nothing uses (refused, saying what uses it, otherwise)."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name
        self._text = f"Remove device {name}"

    def _do(self, pipeline: Pipeline) -> None:
        if self.name not in pipeline.device_names:
            raise EditError(f"there is no device named {self.name!r}")
        if len(pipeline.device_names) == 1:
            raise EditError("a pipeline has at least one device")
        streams, ops, comms = device_users(pipeline, self.name)
        if streams or ops or comms:
            used = [f"{plural(len(streams), 'stream')} ({', '.join(streams[:3])}"
                    f"{', ...' if len(streams) > 3 else ''})" if streams else "",
                    plural(ops, "op") if ops else "",
                    f"communicator {', '.join(comms)}" if comms else ""]  # fmt: skip
            raise EditError(
                f"{self.name} is used by {', '.join(u for u in used if u)}: move or remove "
                "them first"
            )
        devices = [d for d in pipeline.devices if d.name != self.name]
        self._changes.set(pipeline, "devices", devices)


class RenameDevice(_ChangesEdit):
    """Rename a device everywhere: its streams, the ops that name it, its communicators."""

    def __init__(self, old: str, new: str):
        super().__init__()
        self.old = old
        self.new = new
        self._text = f"Rename device {old} to {new}"

    def _do(self, pipeline: Pipeline) -> None:
        if self.old not in pipeline.device_names:
            raise EditError(f"there is no device named {self.old!r}")
        _check_name(self.new, "device", pipeline.device_names)
        ch = self._changes
        for device in self._declare_devices(pipeline):
            if device.name == self.old:
                ch.set(device, "name", self.new)
        for stream in pipeline.streams:
            if stream.device == self.old:
                ch.set(stream, "device", self.new)
        for thread in pipeline.host_threads:
            if thread.device == self.old:
                ch.set(thread, "device", self.new)
        for op in pipeline.program:
            for key in DEVICE_FIELDS:
                if key != "communicator" and getattr(op, key) == self.old:
                    ch.set(op, key, self.new)
        for comm in pipeline.communicators:
            if self.old in comm.devices:
                members = [self.new if d == self.old else d for d in comm.devices]
                ch.set(comm, "devices", members)


class SetStreamDevice(_ChangesEdit):
    """Move a declared stream, with its ops, to another device (None: the first device)."""

    def __init__(self, stream: str, device: str | None):
        super().__init__()
        self.stream = stream
        self.device = device
        self._text = f"Move stream {stream} to {device or 'the first device'}"

    def _do(self, pipeline: Pipeline) -> None:
        stream = next((s for s in pipeline.streams if s.name == self.stream), None)
        if stream is None:
            raise EditError(f"there is no declared stream named {self.stream!r}")
        if self.device is not None and self.device not in pipeline.device_names:
            raise EditError(f"there is no device named {self.device!r}")
        if self.device is not None and not pipeline.devices:
            self._declare_devices(pipeline)
        self._changes.set(stream, "device", self.device)


def _communicator(pipeline: Pipeline, name: str) -> Communicator:
    comm = pipeline.communicator(name)
    if comm is None:
        raise EditError(f"there is no communicator named {name!r}")
    return comm


def _check_members(pipeline: Pipeline, devices: list[str]) -> None:
    if not devices:
        raise EditError("a communicator needs at least one device")
    unknown = [d for d in devices if d not in pipeline.device_names]
    if unknown:
        raise EditError(f"there is no device named {unknown[0]!r}")
    if len(set(devices)) != len(devices):
        raise EditError("a device is a member of a communicator once")


class AddCommunicator(_ChangesEdit):
    """Declare a communicator over ``devices`` (in rank order)."""

    def __init__(self, name: str, devices: list[str], index: int | None = None):
        super().__init__()
        self.name = name
        self.devices = list(devices)
        self.index = index
        self._text = f"Add communicator {name}"

    def _do(self, pipeline: Pipeline) -> None:
        _check_name(self.name, "communicator", [c.name for c in pipeline.communicators])
        if len(pipeline.communicators) >= MAX_COMMUNICATORS:
            raise EditError(f"a pipeline has at most {MAX_COMMUNICATORS} communicators")
        _check_members(pipeline, self.devices)
        comms = list(pipeline.communicators)
        index = len(comms) if self.index is None else self.index
        comms.insert(index, Communicator(self.name, list(self.devices)))
        self._changes.set(pipeline, "communicators", comms)


class SetCommunicator(_ChangesEdit):
    """Rename a communicator (its collectives follow) and/or change its devices."""

    def __init__(self, name: str, new_name: str | None = None, devices: list[str] | None = None):
        super().__init__()
        if new_name is None and devices is None:
            raise EditError("nothing to change")
        self.name = name
        self.new_name = new_name
        self.devices = None if devices is None else list(devices)
        self._text = f"Edit communicator {name}"

    def _do(self, pipeline: Pipeline) -> None:
        comm = _communicator(pipeline, self.name)
        if self.devices is not None:
            _check_members(pipeline, self.devices)
            self._changes.set(comm, "devices", list(self.devices))
        if self.new_name is not None and self.new_name != self.name:
            _check_name(self.new_name, "communicator", [c.name for c in pipeline.communicators])
            self._changes.set(comm, "name", self.new_name)
            for op in pipeline.program:
                if op.communicator == self.name:
                    self._changes.set(op, "communicator", self.new_name)


class RemoveCommunicator(_ChangesEdit):
    """Remove a communicator that no collective uses."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name
        self._text = f"Remove communicator {name}"

    def _do(self, pipeline: Pipeline) -> None:
        _communicator(pipeline, self.name)
        used = sum(1 for op in pipeline.program if op.communicator == self.name)
        if used:
            raise EditError(
                f"communicator {self.name!r} is used by {plural(used, 'collective')}: remove "
                "them or move them to another communicator first"
            )
        comms = [c for c in pipeline.communicators if c.name != self.name]
        self._changes.set(pipeline, "communicators", comms)
