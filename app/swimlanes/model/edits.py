"""Reversible edits of a pipeline: the only way the editor changes a document.

Each edit checks the document it would produce with the file format's validation (the ops it
touched, or the whole document when it changes streams) and raises :class:`EditError`, leaving
the pipeline exactly as it was, when the result would be invalid: an open document is always
one that can be saved, simulated and run. ``apply``/``revert`` pairs restore ``to_dict()``
exactly, which is what undo relies on.
"""

from __future__ import annotations

import re
from typing import Any

from swimlanes.model.document import (
    DEFAULT_STREAM,
    FORMAT_NAME,
    FORMAT_VERSION,
    STREAM_KINDS,
    Op,
    Pipeline,
    Stream,
)

# new_op and friends are re-exported: the editor imports them from here.
from swimlanes.model.op_defaults import (
    OP_FIELDS,
    EditError,
    converted_fields,
    new_event_name,
    new_op,
    new_stream_name,
    takes_stream,
)
from swimlanes.model.validate import (
    MAX_THREADS_PER_BLOCK,
    PipelineError,
    Problem,
    pipeline_from_dict,
    validate,
)

#: How field names read in refusal messages.
_FIELD_TITLE = {
    "op": "kind",
    "bytes": "size",
    "host_memory": "host memory",
    "is_async": "async",
    "duration_us": "duration",
    "block_us": "block time",
    "flops": "FLOPs",
}
_PROBLEM_PATH = re.compile(r"^program\[(\d+)\](?:\.(\w+))?$")


def _check_ops(pipeline: Pipeline, ops: list[Op]) -> list[Problem]:
    """Problems of ``ops`` alone (with the pipeline's streams), at their program paths."""
    if not ops:
        return []
    doc = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "streams": [s.to_dict() for s in pipeline.streams],
        "program": [op.to_dict() for op in ops],
    }
    try:
        pipeline_from_dict(doc)
    except PipelineError as err:
        out = []
        for p in err.problems:
            m = _PROBLEM_PATH.match(p.path.split(".")[0])
            if m is None:
                out.append(p)
                continue
            index = pipeline.op_index(ops[int(m.group(1))].uid)
            out.append(Problem(re.sub(r"^program\[\d+\]", f"program[{index}]", p.path), p.message))
        return out
    return []


def _op_name(op: Op) -> str:
    return op.display_label


def _explain(problems: list[Problem], pipeline: Pipeline) -> str:
    """Problem paths such as ``program[3].bytes`` rewritten as ``K0 (#3): bytes ...``."""
    lines = []
    for p in problems:
        m = _PROBLEM_PATH.match(p.path)
        if m and int(m.group(1)) < len(pipeline.program):
            index = int(m.group(1))
            key = m.group(2)
            where = f"{_op_name(pipeline.program[index])} (#{index})"
            lines.append(f"{where}: {key} {p.message}" if key else f"{where}: {p.message}")
        else:
            lines.append(str(p))
    return "\n".join(lines)


class Edit:
    """Base of all edits. Subclasses implement ``_do`` and ``_undo``; ``apply`` validates."""

    #: Edits with the same non-zero merge_id may merge (used as QUndoCommand.id()).
    merge_id = 0

    def __init__(self) -> None:
        self._text = ""

    @property
    def text(self) -> str:
        """What the edit does, for the Undo menu ("Move 2 ops", "Set K0 duration")."""
        return self._text

    def apply(self, pipeline: Pipeline) -> None:
        """Make the change, or raise :class:`EditError` and leave ``pipeline`` unchanged."""
        self._do(pipeline)
        touched = self._touched()
        problems = validate(pipeline) if touched is None else _check_ops(pipeline, touched)
        if problems:
            message = _explain(problems, pipeline)
            self._undo(pipeline)
            raise EditError(message)

    def revert(self, pipeline: Pipeline) -> None:
        """Undo a successful :meth:`apply`."""
        self._undo(pipeline)

    def merge(self, other: Edit) -> bool:
        """Absorb ``other`` (applied right after this one); True if merged."""
        return False

    def _touched(self) -> list[Op] | None:
        """The ops this edit changed, when only they need checking; None checks everything.

        An op's validity depends only on its own fields and the declared stream names, so
        edits that leave the streams alone check just the ops they touched: an edit of a
        large program stays cheap.
        """
        return None

    def _do(self, pipeline: Pipeline) -> None:
        raise NotImplementedError

    def _undo(self, pipeline: Pipeline) -> None:
        raise NotImplementedError


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _find_ops(pipeline: Pipeline, uids: list[int]) -> list[tuple[int, Op]]:
    """(index, op) of each uid in program order; EditError if one is missing."""
    wanted = set(uids)
    found = [(i, op) for i, op in enumerate(pipeline.program) if op.uid in wanted]
    if len(found) != len(wanted):
        raise EditError("the op is no longer in the program")
    return found


def _restore_ops(pipeline: Pipeline, removed: list[tuple[int, Op]]) -> None:
    for index, op in sorted(removed, key=lambda item: item[0]):
        pipeline.program.insert(index, op)


def _remove_uids(pipeline: Pipeline, uids: set[int]) -> None:
    pipeline.program[:] = [op for op in pipeline.program if op.uid not in uids]


# -- ops ------------------------------------------------------------------------------------
class InsertOps(Edit):
    """Insert ``ops`` at program ``index`` (0 = first), in the given order."""

    def __init__(self, index: int, ops: list[Op]):
        super().__init__()
        if not ops:
            raise EditError("nothing to insert")
        self.index = index
        self.ops = list(ops)
        what = _op_name(ops[0]) if len(ops) == 1 else _count(len(ops), "op")
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
        _remove_uids(pipeline, {op.uid for op in self.ops})

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
        self._text = f"Delete {_count(len(self.uids), 'op')}"

    def _do(self, pipeline: Pipeline) -> None:
        self._removed = _find_ops(pipeline, self.uids)
        if len(self._removed) == 1:
            self._text = f"Delete {_op_name(self._removed[0][1])}"
        _remove_uids(pipeline, set(self.uids))

    def _undo(self, pipeline: Pipeline) -> None:
        _restore_ops(pipeline, self._removed)

    def _touched(self) -> list[Op] | None:
        return []  # what remains was valid and does not depend on what went


class MoveOps(Edit):
    """Move ops so that they stand together, in program order, from program ``index`` on.

    ``index`` is the new program index of the first moved op (0 .. len(program) - len(uids)).
    With ``stream`` the stream ops among them move to that lane too (host ops stay on the host).
    Moves of the same ops within one ``gesture`` (a drag) merge into one undo step.
    """

    merge_id = 1

    def __init__(self, uids: list[int], index: int, stream: str | None = None, gesture: Any = None):
        super().__init__()
        if not uids:
            raise EditError("nothing selected to move")
        self.uids = list(dict.fromkeys(uids))
        self.index = index
        self.stream = stream
        self.gesture = gesture
        self._before: list[tuple[int, Op]] = []
        self._streams_before: list[str | None] = []
        self._text = f"Move {_count(len(self.uids), 'op')}"

    def _do(self, pipeline: Pipeline) -> None:
        moved = _find_ops(pipeline, self.uids)
        rest = len(pipeline.program) - len(moved)
        if not 0 <= self.index <= rest:
            raise EditError(
                f"cannot move to #{self.index}: the program has {len(pipeline.program)} ops"
            )
        if self.stream is not None and pipeline.stream(self.stream) is None:
            raise EditError(f"there is no stream named {self.stream!r}")
        self._before = moved
        self._streams_before = [op.stream for _, op in moved]
        if len(moved) == 1:
            self._text = f"Move {_op_name(moved[0][1])}"
        _remove_uids(pipeline, set(self.uids))
        pipeline.program[self.index : self.index] = [op for _, op in moved]
        if self.stream is not None:
            for _, op in moved:
                if takes_stream(op.op) and op.stream_name != self.stream:
                    # ops on the legacy default stream name none, as new ops do
                    op.stream = None if self.stream == DEFAULT_STREAM else self.stream

    def _undo(self, pipeline: Pipeline) -> None:
        for (_, op), stream in zip(self._before, self._streams_before, strict=True):
            op.stream = stream
        _remove_uids(pipeline, set(self.uids))
        _restore_ops(pipeline, self._before)

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
        return _find_ops(pipeline, [self.uid])[0][1]

    def _do(self, pipeline: Pipeline) -> None:
        op = self._target(pipeline)
        self._op = op
        self._before = _op_state(op)
        name = _op_name(op)
        changes = dict(self.changes)
        kind = changes.pop("op", op.op)
        if kind != op.op:
            new = converted_fields(op, kind, pipeline)
            new.update(changes)
            _set_state(op, new)
            self._text = f"Change {name} to {kind.replace('_', ' ')}"
        else:
            _set_state(op, changes)
            titles = ", ".join(_FIELD_TITLE.get(k, k) for k in changes) or "kind"
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


# -- streams --------------------------------------------------------------------------------
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
        _remove_uids(pipeline, {op.uid for _, op in self._removed})

    def _undo(self, pipeline: Pipeline) -> None:
        assert self._stream is not None
        pipeline.streams.insert(self._index, self._stream)
        _restore_ops(pipeline, self._removed)


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


# -- new ops --------------------------------------------------------------------------------

__all__ = [
    "MAX_THREADS_PER_BLOCK",
    "OP_FIELDS",
    "AddStream",
    "Edit",
    "EditError",
    "InsertOps",
    "MoveOps",
    "RemoveOps",
    "RemoveStream",
    "RenameStream",
    "ReorderStreams",
    "SetOpFields",
    "SetStreamFields",
    "converted_fields",
    "move_index_for_insertion",
    "move_stream",
    "new_event_name",
    "new_op",
    "new_stream_name",
]
