"""Reversible edits of a program's host threads (see :mod:`swimlanes.model.edits`).

A document that declares no host threads has one per device, named after it; the first thread
edit leaves those implicit threads as they are and declares only what it adds. Each edit
checks the whole document it produces and is refused, leaving the document as it was, when that
would be invalid (a per-thread default stream issued on by another thread, a thread on a device
that is not there ...).
"""

from __future__ import annotations

from typing import Any

from swimlanes.model.document import (
    DEFAULT_STREAM,
    MAX_HOST_THREADS,
    MAX_NAME_CHARS,
    HostThread,
    Op,
    Pipeline,
)
from swimlanes.model.edit_base import Edit, find_ops, plural
from swimlanes.model.op_defaults import EditError, takes_stream

__all__ = [
    "AddHostThread",
    "RemoveHostThread",
    "RenameHostThread",
    "SetOpHostThread",
    "SetStreamHostThread",
    "issue_on_thread",
    "thread_users",
]


class _ThreadEdit(Edit):
    """An edit made of attribute assignments, undone in reverse order."""

    def __init__(self) -> None:
        super().__init__()
        self._undo_list: list[tuple[Any, str, Any]] = []

    def _set(self, obj: Any, attr: str, value: Any) -> None:
        self._undo_list.append((obj, attr, getattr(obj, attr)))
        setattr(obj, attr, value)

    def _undo(self, pipeline: Pipeline) -> None:
        for obj, attr, value in reversed(self._undo_list):
            setattr(obj, attr, value)
        self._undo_list.clear()


def _declared(pipeline: Pipeline, name: str) -> HostThread:
    thread = next((t for t in pipeline.host_threads if t.name == name), None)
    if thread is None:
        raise EditError(f"there is no declared host thread named {name!r}")
    return thread


def thread_users(pipeline: Pipeline, name: str) -> tuple[list[str], int]:
    """The declared streams that name host thread ``name`` and the ops that name it."""
    streams = [s.name for s in pipeline.streams if s.host_thread == name]
    return streams, sum(op.host_thread == name for op in pipeline.program)


def issue_on_thread(pipeline: Pipeline, op: Op, thread: str) -> None:
    """Let host thread ``thread`` issue ``op``, naming it only where the op would not default
    to it (a host-only op follows its thread to the thread's device)."""
    if takes_stream(op.op):
        default = pipeline.stream_thread(op.stream_name or DEFAULT_STREAM)
        op.host_thread = None if default == thread else thread
        return
    device = pipeline.thread_device(thread)
    # the first device's host calls name none, as files written by hand do
    op.device = None if device == pipeline.device_names[0] else device
    op.host_thread = None if pipeline.device_thread(device) == thread else thread


class AddHostThread(_ThreadEdit):
    """Declare a host thread on ``device`` (None: the first device)."""

    def __init__(self, name: str, device: str | None = None):
        super().__init__()
        self.name, self.device = name, device
        self._text = f"Add host thread {name}"

    def _do(self, pipeline: Pipeline) -> None:
        taken = [t.name for t in pipeline.host_threads] + pipeline.device_names
        if (
            not isinstance(self.name, str)
            or not self.name.strip()
            or self.name != self.name.strip()
        ):
            raise EditError("a host thread needs a name without spaces at its ends")
        if len(self.name) > MAX_NAME_CHARS:
            raise EditError(f"a host thread name has at most {MAX_NAME_CHARS} characters")
        if self.name in taken:
            raise EditError(f"there is already a host thread or device named {self.name!r}")
        if self.device is not None and self.device not in pipeline.device_names:
            raise EditError(f"there is no device named {self.device!r}")
        if len(pipeline.host_threads) >= MAX_HOST_THREADS:
            raise EditError(f"a pipeline has at most {MAX_HOST_THREADS} host threads")
        threads = [*pipeline.host_threads, HostThread(self.name, self.device)]
        self._set(pipeline, "host_threads", threads)


class RemoveHostThread(_ThreadEdit):
    """Remove a declared host thread that no stream or op names."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name
        self._text = f"Remove host thread {name}"

    def _do(self, pipeline: Pipeline) -> None:
        _declared(pipeline, self.name)
        streams, ops = thread_users(pipeline, self.name)
        if streams or ops:
            used = [f"stream {', '.join(streams)}" if streams else "",
                    plural(ops, "op") if ops else ""]  # fmt: skip
            raise EditError(
                f"{self.name} is used by {' and '.join(u for u in used if u)}: move them to "
                "another thread first"
            )
        threads = [t for t in pipeline.host_threads if t.name != self.name]
        self._set(pipeline, "host_threads", threads)


class RenameHostThread(_ThreadEdit):
    """Rename a declared host thread, and every stream and op that names it."""

    def __init__(self, old: str, new: str):
        super().__init__()
        self.old, self.new = old, new
        self._text = f"Rename host thread {old} to {new}"

    def _do(self, pipeline: Pipeline) -> None:
        thread = _declared(pipeline, self.old)
        taken = [t.name for t in pipeline.host_threads] + pipeline.device_names
        if not isinstance(self.new, str) or not self.new.strip() or self.new in taken:
            raise EditError(f"{self.new!r} is not a free host thread name")
        self._set(thread, "name", self.new)
        for stream in pipeline.streams:
            if stream.host_thread == self.old:
                self._set(stream, "host_thread", self.new)
        for op in pipeline.program:
            if op.host_thread == self.old:
                self._set(op, "host_thread", self.new)


class SetOpHostThread(_ThreadEdit):
    """Let host thread ``thread`` issue the ops ``uids`` (None: their default thread)."""

    def __init__(self, uids: list[int], thread: str | None):
        super().__init__()
        self.uids, self.thread = list(uids), thread
        self._text = f"Issue {plural(len(uids), 'op')} on {thread or 'the default thread'}"

    def _do(self, pipeline: Pipeline) -> None:
        for _, op in find_ops(pipeline, self.uids):
            self._set(op, "host_thread", self.thread)


class SetStreamHostThread(_ThreadEdit):
    """Give a declared stream to host thread ``thread`` (None: its device's first)."""

    def __init__(self, stream: str, thread: str | None):
        super().__init__()
        self.stream, self.thread = stream, thread
        self._text = f"Give stream {stream} to {thread or 'the default thread'}"

    def _do(self, pipeline: Pipeline) -> None:
        stream = next((s for s in pipeline.streams if s.name == self.stream), None)
        if stream is None:
            raise EditError(f"there is no declared stream named {self.stream!r}")
        self._set(stream, "host_thread", self.thread)
