"""Editing one collective as a whole: every member device's op of one instance changes alike.

NCCL needs every member of a communicator to make the same calls (kind, size, root), so the
validator refuses a change to one member's op alone. The inspector therefore applies such a
change to all the ops of the instance, as one undo step: the k-th collective on a communicator
of each member device.
"""

from __future__ import annotations

from typing import Any

from swimlanes.model.document import COLLECTIVE_OPS, Op, Pipeline
from swimlanes.model.edits import Edit, EditError, SetOpFields

#: The fields every member's op of one collective instance must share.
INSTANCE_FIELDS = frozenset({"op", "bytes", "communicator", "root"})


def collective_instance(pipeline: Pipeline, op: Op) -> list[Op]:
    """The ops of ``op``'s collective instance in member (rank) order, ``op`` among them;
    ``[op]`` for an op that is not a collective on a declared communicator."""
    comm = pipeline.communicator(op.communicator)
    if op.op not in COLLECTIVE_OPS or comm is None:
        return [op]
    calls: dict[str, list[Op]] = {d: [] for d in comm.devices}
    for other in pipeline.program:
        if other.op in COLLECTIVE_OPS and other.communicator == comm.name:
            calls.setdefault(pipeline.op_device(other), []).append(other)
    mine = calls.get(pipeline.op_device(op), [])
    k = next((i for i, o in enumerate(mine) if o.uid == op.uid), None)
    if k is None:
        return [op]
    return [calls[d][k] for d in comm.devices if k < len(calls[d])]


def shared_change(op: Op, changes: dict[str, Any]) -> bool:
    """Whether ``changes`` to collective ``op`` must apply to its whole instance."""
    if op.op not in COLLECTIVE_OPS or not set(changes) & INSTANCE_FIELDS:
        return False
    # retyped into something that is not a collective: that op alone (the others stay)
    return changes.get("op", op.op) in COLLECTIVE_OPS


class SetInstanceFields(Edit):
    """The same field changes on several ops (one collective instance), checked together and
    undone together; consecutive changes of the same fields merge like :class:`SetOpFields`."""

    merge_id = 4

    def __init__(self, uids: list[int], changes: dict[str, Any], what: str = ""):
        super().__init__()
        if not uids:
            raise EditError("nothing to change")
        self.uids = list(uids)
        self.changes = dict(changes)
        self.parts = [SetOpFields(uid, changes) for uid in self.uids]
        self._what = what
        self._text = f"Set {what or 'collective'} on {len(self.uids)} devices"

    def _do(self, pipeline: Pipeline) -> None:
        done: list[SetOpFields] = []
        try:
            for part in self.parts:
                part._do(pipeline)
                done.append(part)
        except EditError:
            for part in reversed(done):
                part._undo(pipeline)
            raise
        fields = ", ".join(sorted(self.changes))
        self._text = f"Set {self._what} {fields} on {len(self.uids)} devices".replace("  ", " ")

    def _undo(self, pipeline: Pipeline) -> None:
        for part in reversed(self.parts):
            part._undo(pipeline)

    def _touched(self) -> list[Op] | None:
        touched: list[Op] = []
        for part in self.parts:
            ops = part._touched()
            if ops is None:
                return None
            touched += ops
        return touched

    def merge(self, other: Edit) -> bool:
        if not (
            isinstance(other, SetInstanceFields)
            and other.uids == self.uids
            and set(other.changes) == set(self.changes)
            and "op" not in self.changes
        ):
            return False
        # each part keeps what it changed first (undo goes back to before the first change)
        for mine, theirs in zip(self.parts, other.parts, strict=True):
            mine.merge(theirs)
        self.changes = dict(other.changes)
        return True
