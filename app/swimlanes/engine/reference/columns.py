"""The per-op columns of a reference run's :class:`Timeline`, for one device and several."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from swimlanes.engine.reference.program import OpFacts
from swimlanes.engine.reference.run_state import OpState
from swimlanes.model.document import OP_KINDS
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME


def _time(value: int) -> int:
    return NO_TIME if value < 0 else value


def op_columns(
    ops: Sequence[OpFacts], state: Sequence[OpState], edges: Sequence[tuple[int, int, str]]
) -> tuple[dict[str, Any], int]:
    """The Timeline's keyword arguments every reference run fills the same way (all but the
    host calls' starts, the engines' names and the SM occupancy), and the serial time: the
    sum of the device ops' times alone."""
    n = len(ops)

    def column(values: list[int], dtype: type = np.int64) -> np.ndarray:
        return np.asarray(values, dtype=dtype).reshape(n)

    enqueued = [op.engine is not None for op in ops]
    solo = [op.solo_ns if q else NO_TIME for op, q in zip(ops, enqueued, strict=True)]
    src, dst, kind = zip(*edges, strict=True) if edges else ((), (), ())
    columns = {
        "index": np.arange(n, dtype=np.int64),
        "kind": column([OP_KINDS.index(op.kind) for op in ops], np.int8),
        "stream": column([op.stream for op in ops], np.int16),
        "engine": column([s.engine for s in state], np.int16),
        "issue_end": column([_time(s.issue_end) for s in state]),
        "start": column([_time(s.start) for s in state]),
        "end": column([_time(s.end) for s in state]),
        "solo_ns": column(solo),
        "bytes": column([op.nbytes for op in ops]),
        "labels": [op.label for op in ops],
        "dep_src": np.asarray(src, dtype=np.int32),
        "dep_dst": np.asarray(dst, dtype=np.int32),
        "dep_kind": np.asarray([DEP_KINDS.index(k) for k in kind], dtype=np.int8),
    }
    serial = sum(s for s, q in zip(solo, enqueued, strict=True) if q)
    return columns, serial
