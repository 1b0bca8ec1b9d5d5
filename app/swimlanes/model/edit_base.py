"""The base of the pipeline's reversible edits (see :mod:`swimlanes.model.edits`): checking the
document an edit produces and explaining what is wrong with it."""

from __future__ import annotations

import re

from swimlanes.model.document import FORMAT_NAME, FORMAT_VERSION, Op, Pipeline
from swimlanes.model.op_defaults import EditError
from swimlanes.model.validate import PipelineError, Problem, pipeline_from_dict, validate
from swimlanes.model.validate_devices import collective_problems

#: How field names read in refusal messages.
FIELD_TITLE = {
    "op": "kind",
    "bytes": "size",
    "host_memory": "host memory",
    "is_async": "async",
    "duration_us": "duration",
    "block_us": "block time",
    "flops": "FLOPs",
    "call_us": "call time",
    "copy_out_us": "copy-out time",
}
_PROBLEM_PATH = re.compile(r"^program\[(\d+)\](?:\.(\w+))?$")


def check_ops(pipeline: Pipeline, ops: list[Op]) -> list[Problem]:
    """Problems of ``ops`` alone (with the pipeline's streams), at their program paths."""
    if not ops:
        return []
    doc = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "streams": [s.to_dict() for s in pipeline.streams],
        "program": [op.to_dict() for op in ops],
    }
    if pipeline.devices:
        doc["devices"] = [d.to_dict() for d in pipeline.devices]
    if pipeline.communicators:
        doc["communicators"] = [c.to_dict() for c in pipeline.communicators]
    if pipeline.host_threads:
        doc["host_threads"] = [t.to_dict() for t in pipeline.host_threads]
    try:
        # Collectives are matched across the whole program, by Edit.apply, not among these.
        pipeline_from_dict(doc, match_collectives=False)
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


def op_name(op: Op) -> str:
    return op.display_label


def explain(problems: list[Problem], pipeline: Pipeline) -> str:
    """Problem paths such as ``program[3].bytes`` rewritten as ``K0 (#3): bytes ...``."""
    lines = []
    for p in problems:
        m = _PROBLEM_PATH.match(p.path)
        if m and int(m.group(1)) < len(pipeline.program):
            index = int(m.group(1))
            key = m.group(2)
            where = f"{op_name(pipeline.program[index])} (#{index})"
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
        problems = validate(pipeline) if touched is None else check_ops(pipeline, touched)
        if not problems and touched is not None:
            # Each member of a communicator must still make the same collective calls (a
            # linear pass, and only in documents that declare communicators).
            problems = collective_problems(pipeline)
        if problems:
            message = explain(problems, pipeline)
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

        An op's validity depends only on its own fields and the declared streams, devices and
        communicators, so edits that leave those alone check just the ops they touched: an
        edit of a large program stays cheap. (Collective calls, which must match across
        devices, are then checked over the program: see :meth:`apply`.)
        """
        return None

    def _do(self, pipeline: Pipeline) -> None:
        raise NotImplementedError

    def _undo(self, pipeline: Pipeline) -> None:
        raise NotImplementedError


def plural(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def find_ops(pipeline: Pipeline, uids: list[int]) -> list[tuple[int, Op]]:
    """(index, op) of each uid in program order; EditError if one is missing."""
    wanted = set(uids)
    found = [(i, op) for i, op in enumerate(pipeline.program) if op.uid in wanted]
    if len(found) != len(wanted):
        raise EditError("the op is no longer in the program")
    return found


def restore_ops(pipeline: Pipeline, removed: list[tuple[int, Op]]) -> None:
    for index, op in sorted(removed, key=lambda item: item[0]):
        pipeline.program.insert(index, op)


def remove_uids(pipeline: Pipeline, uids: set[int]) -> None:
    pipeline.program[:] = [op for op in pipeline.program if op.uid not in uids]
