"""Reversible edits of a pipeline: the only way the editor changes a document.

Each edit checks the document it would produce with the file format's validation (the ops it
touched, or the whole document when it changes streams) and raises :class:`EditError`, leaving
the pipeline exactly as it was, when the result would be invalid: an open document is always
one that can be saved, simulated and run. ``apply``/``revert`` pairs restore ``to_dict()``
exactly, which is what undo relies on.
"""

from __future__ import annotations

from typing import Any

# The stream and device edits live in stream_edits and device_edits, the base in edit_base;
# the editor imports all the edits from here.
from swimlanes.model.device_edits import (
    AddCommunicator,
    AddDevice,
    RemoveCommunicator,
    RemoveDevice,
    RenameDevice,
    SetCommunicator,
    SetStreamDevice,
)
from swimlanes.model.document import DEFAULT_STREAM, Op, Pipeline
from swimlanes.model.edit_base import (
    FIELD_TITLE,
    Edit,
    find_ops,
    op_name,
    plural,
    remove_uids,
    restore_ops,
)

# new_op and friends are re-exported: the editor imports them from here.
from swimlanes.model.op_defaults import (
    OP_FIELDS,
    EditError,
    converted_fields,
    new_event_name,
    new_op,
    new_ops,
    new_stream_name,
    takes_stream,
)
from swimlanes.model.stream_edits import (
    AddStream,
    RemoveStream,
    RenameStream,
    ReorderStreams,
    SetStreamFields,
    move_stream,
)
from swimlanes.model.thread_edits import (
    AddHostThread,
    RemoveHostThread,
    RenameHostThread,
    SetOpHostThread,
    SetStreamHostThread,
    issue_on_thread,
)
from swimlanes.model.validate import MAX_THREADS_PER_BLOCK


# -- ops ------------------------------------------------------------------------------------
class InsertOps(Edit):
    """Insert ``ops`` at program ``index`` (0 = first), in the given order."""

    def __init__(self, index: int, ops: list[Op]):
        super().__init__()
        if not ops:
            raise EditError("nothing to insert")
        self.index = index
        self.ops = list(ops)
        what = op_name(ops[0]) if len(ops) == 1 else plural(len(ops), "op")
        self._text = f"Insert {what}"

    def _do(self, pipeline: Pipeline) -> None:
        if not 0 <= self.index <= len(pipeline.program):
            raise EditError(
                f"cannot insert at #{self.index}: the program has {len(pipeline.program)} ops"
            )
        existing = {op.uid for op in pipeline.program}
        if any(op.uid in existing for op in self.ops):
            raise EditError("these ops are already in the program")
        pipeline.program[self.index : self.index] = self.ops

    def _undo(self, pipeline: Pipeline) -> None:
        remove_uids(pipeline, {op.uid for op in self.ops})

    def _touched(self) -> list[Op] | None:
        return self.ops


class RemoveOps(Edit):
    """Remove the ops with these uids."""

    def __init__(self, uids: list[int]):
        super().__init__()
        if not uids:
            raise EditError("nothing selected to delete")
        self.uids = list(dict.fromkeys(uids))
        self._removed: list[tuple[int, Op]] = []
        self._text = f"Delete {plural(len(self.uids), 'op')}"

    def _do(self, pipeline: Pipeline) -> None:
        self._removed = find_ops(pipeline, self.uids)
        if len(self._removed) == 1:
            self._text = f"Delete {op_name(self._removed[0][1])}"
        remove_uids(pipeline, set(self.uids))

    def _undo(self, pipeline: Pipeline) -> None:
        restore_ops(pipeline, self._removed)

    def _touched(self) -> list[Op] | None:
        return []  # what remains was valid and does not depend on what went


class MoveOps(Edit):
    """Move ops so that they stand together, in program order, from program ``index`` on.

    ``index`` is the new program index of the first moved op (0 .. len(program) - len(uids)).
    With ``stream`` the stream ops among them move to that lane too (host ops stay on the host);
    with ``device`` (several devices: the host thread's lane they were dropped on) the host-only
    ops among them move to that device's host thread; with ``thread`` (a declared host thread's
    lane) every moved op is issued by that thread (host-only ops move to its lane; the check
    refuses a stream op on another thread's per-thread default stream, saying so).
    Moves of the same ops within one ``gesture`` (a drag) merge into one undo step.
    """

    merge_id = 1

    def __init__(
        self,
        uids: list[int],
        index: int,
        stream: str | None = None,
        gesture: Any = None,
        device: str | None = None,
        thread: str | None = None,
    ):
        super().__init__()
        if not uids:
            raise EditError("nothing selected to move")
        self.uids = list(dict.fromkeys(uids))
        self.index = index
        self.stream = stream
        self.device = device
        self.thread = thread
        self.gesture = gesture
        self._before: list[tuple[int, Op]] = []
        self._streams_before: list[str | None] = []
        self._devices_before: list[tuple[str | None, str | None]] = []
        self._text = f"Move {plural(len(self.uids), 'op')}"

    def _do(self, pipeline: Pipeline) -> None:
        moved = find_ops(pipeline, self.uids)
        rest = len(pipeline.program) - len(moved)
        if not 0 <= self.index <= rest:
            raise EditError(
                f"cannot move to #{self.index}: the program has {len(pipeline.program)} ops"
            )
        if self.stream is not None and pipeline.stream(self.stream) is None:
            raise EditError(f"there is no stream named {self.stream!r}")
        if self.device is not None and self.device not in pipeline.device_names:
            raise EditError(f"there is no device named {self.device!r}")
        if self.thread is not None and self.thread not in dict(pipeline.thread_list()):
            raise EditError(f"there is no host thread named {self.thread!r}")
        self._before = moved
        self._streams_before = [op.stream for _, op in moved]
        self._devices_before = [(op.device, op.host_thread) for _, op in moved]
        if len(moved) == 1:
            self._text = f"Move {op_name(moved[0][1])}"
        remove_uids(pipeline, set(self.uids))
        pipeline.program[self.index : self.index] = [op for _, op in moved]
        if self.stream is not None:
            for _, op in moved:
                if takes_stream(op.op) and op.stream_name != self.stream:
                    # ops on the legacy default stream name none, as new ops do
                    op.stream = None if self.stream == DEFAULT_STREAM else self.stream
        if self.device is not None:
            for _, op in moved:
                if not takes_stream(op.op):
                    op.device, op.host_thread = self.device, None
        if self.thread is not None:
            for _, op in moved:
                issue_on_thread(pipeline, op, self.thread)

    def _undo(self, pipeline: Pipeline) -> None:
        before = zip(self._before, self._streams_before, self._devices_before, strict=True)
        for (_, op), stream, (device, thread) in before:
            op.stream, op.device, op.host_thread = stream, device, thread
        remove_uids(pipeline, set(self.uids))
        restore_ops(pipeline, self._before)

    def _touched(self) -> list[Op] | None:
        return [op for _, op in self._before]

    def merge(self, other: Edit) -> bool:
        if not (
            isinstance(other, MoveOps)
            and self.gesture is not None
            and other.gesture == self.gesture
            and other.uids == self.uids
        ):
            return False
        self.index = other.index
        if other.stream is not None:
            self.stream = other.stream
        # the lane the drag ends on says whose the host work is (a device's or a thread's)
        if other.device is not None or other.thread is not None:
            self.device, self.thread = other.device, other.thread
        return True


def move_index_for_insertion(pipeline: Pipeline, uids: list[int], insert_before: int) -> int:
    """The :class:`MoveOps` index that puts ``uids`` just before program row ``insert_before``.

    For list-style drops ("insert between rows 4 and 5"), where the row counts the ops that
    are being moved too.
    """
    moving = set(uids)
    return sum(1 for op in pipeline.program[:insert_before] if op.uid not in moving)


# -- op fields ------------------------------------------------------------------------------
def _op_state(op: Op) -> dict[str, Any]:
    state = {name: getattr(op, name) for name in OP_FIELDS}
    state["extra"] = dict(op.extra)
    return state


def _set_state(op: Op, state: dict[str, Any]) -> None:
    for name, value in state.items():
        setattr(op, name, dict(value) if name == "extra" else value)


class SetOpFields(Edit):
    """Change fields of one op (attribute names of :class:`Op`: ``bytes``, ``is_async`` ...).

    Changing ``op`` retypes it: fields are converted by :func:`converted_fields` first, then
    the other given changes apply on top. Consecutive edits of the same fields of the same op
    merge (typing in one field is one undo step).
    """

    merge_id = 2

    def __init__(self, uid: int, changes: dict[str, Any]):
        super().__init__()
        unknown = sorted(set(changes) - set(OP_FIELDS))
        if unknown:
            raise EditError(f"ops have no field {', '.join(unknown)}")
        if not changes:
            raise EditError("nothing to change")
        self.uid = uid
        self.changes = dict(changes)
        self._op: Op | None = None
        self._before: dict[str, Any] = {}
        self._text = "Edit op"

    def _target(self, pipeline: Pipeline) -> Op:
        return find_ops(pipeline, [self.uid])[0][1]

    def _do(self, pipeline: Pipeline) -> None:
        op = self._target(pipeline)
        self._op = op
        self._before = _op_state(op)
        name = op_name(op)
        changes = dict(self.changes)
        kind = changes.pop("op", op.op)
        if kind != op.op:
            new = converted_fields(op, kind, pipeline)
            new.update(changes)
            _set_state(op, new)
            self._text = f"Change {name} to {kind.replace('_', ' ')}"
        else:
            _set_state(op, changes)
            titles = ", ".join(FIELD_TITLE.get(k, k) for k in changes) or "kind"
            self._text = f"Set {name} {titles}"

    def _undo(self, pipeline: Pipeline) -> None:
        _set_state(self._target(pipeline), self._before)

    def _touched(self) -> list[Op] | None:
        return [self._op] if self._op is not None else None

    def merge(self, other: Edit) -> bool:
        if not (
            isinstance(other, SetOpFields)
            and other.uid == self.uid
            and set(other.changes) == set(self.changes)
            and "op" not in self.changes
        ):
            return False
        self.changes = dict(other.changes)
        return True


# -- new ops --------------------------------------------------------------------------------

__all__ = [
    "MAX_THREADS_PER_BLOCK",
    "OP_FIELDS",
    "AddCommunicator",
    "AddDevice",
    "AddHostThread",
    "AddStream",
    "Edit",
    "EditError",
    "InsertOps",
    "MoveOps",
    "RemoveCommunicator",
    "RemoveDevice",
    "RemoveHostThread",
    "RemoveOps",
    "RemoveStream",
    "RenameDevice",
    "RenameHostThread",
    "RenameStream",
    "ReorderStreams",
    "SetCommunicator",
    "SetOpHostThread",
    "SetOpFields",
    "SetStreamDevice",
    "SetStreamFields",
    "SetStreamHostThread",
    "converted_fields",
    "issue_on_thread",
    "move_index_for_insertion",
    "move_stream",
    "new_event_name",
    "new_op",
    "new_ops",
    "new_stream_name",
]
