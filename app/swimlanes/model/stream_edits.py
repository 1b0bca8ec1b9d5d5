"""Reversible edits of a pipeline's streams (see :mod:`swimlanes.model.edits`, which exports
them with the op edits)."""

from __future__ import annotations

from typing import Any

from swimlanes.model.document import DEFAULT_STREAM, STREAM_KINDS, Op, Pipeline, Stream
from swimlanes.model.edit_base import Edit, remove_uids, restore_ops
from swimlanes.model.op_defaults import EditError, takes_stream


def _check_stream_name(pipeline: Pipeline, name: str) -> None:
    if not isinstance(name, str) or not name.strip():
        raise EditError("a stream needs a name")
    if name != name.strip():
        raise EditError("a stream name cannot start or end with spaces")
    if name == DEFAULT_STREAM:
        raise EditError("'default' is the legacy default stream's name")
    if pipeline.stream(name) is not None:
        raise EditError(f"there is already a stream named {name!r}")


def _declared_index(pipeline: Pipeline, name: str) -> int:
    for i, s in enumerate(pipeline.streams):
        if s.name == name:
            return i
    if name == DEFAULT_STREAM:
        raise EditError("the legacy default stream is always there and cannot be changed")
    raise EditError(f"there is no stream named {name!r}")


class AddStream(Edit):
    """Declare a new stream (appended, or at ``index`` among the declared streams)."""

    def __init__(self, stream: Stream, index: int | None = None):
        super().__init__()
        self.stream = stream
        self.index = index
        self._text = f"Add stream {stream.name}"

    def _do(self, pipeline: Pipeline) -> None:
        _check_stream_name(pipeline, self.stream.name)
        if self.stream.kind not in STREAM_KINDS:
            raise EditError(f"stream kind must be one of {', '.join(STREAM_KINDS)}")
        index = len(pipeline.streams) if self.index is None else self.index
        pipeline.streams.insert(index, self.stream)

    def _undo(self, pipeline: Pipeline) -> None:
        pipeline.streams.remove(self.stream)


class RemoveStream(Edit):
    """Remove a stream and every op on it (all restored on revert)."""

    def __init__(self, name: str):
        super().__init__()
        self.name = name
        self._index = -1
        self._stream: Stream | None = None
        self._removed: list[tuple[int, Op]] = []
        self._text = f"Remove stream {name}"

    def _do(self, pipeline: Pipeline) -> None:
        if self.name == DEFAULT_STREAM:
            raise EditError("the legacy default stream is always there and cannot be removed")
        self._index = _declared_index(pipeline, self.name)
        self._stream = pipeline.streams.pop(self._index)
        self._removed = [
            (i, op)
            for i, op in enumerate(pipeline.program)
            if takes_stream(op.op) and op.stream == self.name
        ]
        remove_uids(pipeline, {op.uid for _, op in self._removed})

    def _undo(self, pipeline: Pipeline) -> None:
        assert self._stream is not None
        pipeline.streams.insert(self._index, self._stream)
        restore_ops(pipeline, self._removed)


class RenameStream(Edit):
    """Rename a stream and every op's reference to it."""

    def __init__(self, old: str, new: str):
        super().__init__()
        self.old = old
        self.new = new
        self._renamed: list[Op] = []
        self._text = f"Rename stream {old} to {new}"

    def _do(self, pipeline: Pipeline) -> None:
        index = _declared_index(pipeline, self.old)
        if self.new == self.old:
            raise EditError("the stream already has that name")
        _check_stream_name(pipeline, self.new)
        pipeline.streams[index].name = self.new
        self._renamed = [op for op in pipeline.program if op.stream == self.old]
        for op in self._renamed:
            op.stream = self.new

    def _undo(self, pipeline: Pipeline) -> None:
        pipeline.streams[_declared_index(pipeline, self.new)].name = self.old
        for op in self._renamed:
            op.stream = self.old


class SetStreamFields(Edit):
    """Change a declared stream's ``kind`` and/or ``priority``."""

    merge_id = 3

    def __init__(self, name: str, kind: str | None = None, priority: int | None = None):
        super().__init__()
        self.name = name
        self.changes: dict[str, Any] = {}
        if kind is not None:
            self.changes["kind"] = kind
        if priority is not None:
            self.changes["priority"] = priority
        if not self.changes:
            raise EditError("nothing to change")
        self._before: dict[str, Any] = {}
        what = " and ".join(self.changes)
        self._text = f"Set stream {name} {what}"

    def _do(self, pipeline: Pipeline) -> None:
        stream = pipeline.streams[_declared_index(pipeline, self.name)]
        kind = self.changes.get("kind")
        if kind is not None and kind not in STREAM_KINDS:
            raise EditError(f"stream kind must be one of {', '.join(STREAM_KINDS)}")
        if kind == "legacy_default":
            raise EditError("only the stream named 'default' is the legacy default stream")
        priority = self.changes.get("priority")
        if priority is not None and (not isinstance(priority, int) or isinstance(priority, bool)):
            raise EditError("priority must be an integer (lower is higher priority)")
        self._before = {k: getattr(stream, k) for k in self.changes}
        for k, v in self.changes.items():
            setattr(stream, k, v)

    def _undo(self, pipeline: Pipeline) -> None:
        stream = pipeline.streams[_declared_index(pipeline, self.name)]
        for k, v in self._before.items():
            setattr(stream, k, v)

    def merge(self, other: Edit) -> bool:
        if not (
            isinstance(other, SetStreamFields)
            and other.name == self.name
            and set(other.changes) == set(self.changes)
        ):
            return False
        self.changes = dict(other.changes)
        return True


class ReorderStreams(Edit):
    """Put the declared streams in the order of ``names`` (a permutation of them)."""

    def __init__(self, names: list[str]):
        super().__init__()
        self.names = list(names)
        self._before: list[Stream] = []
        self._text = "Reorder streams"

    def _do(self, pipeline: Pipeline) -> None:
        current = [s.name for s in pipeline.streams]
        if sorted(current) != sorted(self.names):
            raise EditError("a new stream order must name every declared stream once")
        self._before = list(pipeline.streams)
        by_name = {s.name: s for s in pipeline.streams}
        pipeline.streams[:] = [by_name[n] for n in self.names]

    def _undo(self, pipeline: Pipeline) -> None:
        pipeline.streams[:] = self._before


def move_stream(pipeline: Pipeline, name: str, offset: int) -> ReorderStreams:
    """The edit that moves a declared stream ``offset`` places up (-1) or down (+1)."""
    names = [s.name for s in pipeline.streams]
    if name not in names:
        raise EditError(f"{name!r} is not a declared stream and cannot move")
    i = names.index(name)
    j = i + offset
    if not 0 <= j < len(names):
        raise EditError(f"stream {name} is already {'first' if offset < 0 else 'last'}")
    names[i], names[j] = names[j], names[i]
    edit = ReorderStreams(names)
    edit._text = f"Move stream {name} {'up' if offset < 0 else 'down'}"
    return edit
