"""Turn a finished simulation's columns into a :class:`Timeline`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from swimlanes.engine.plan import COLUMNS
from swimlanes.timeline.timeline import DEP_KINDS, NO_TIME, Timeline

if TYPE_CHECKING:
    from swimlanes.engine.state import RunState

_STREAM_DEP = DEP_KINDS.index("stream")


def dep_columns(stream: np.ndarray, prev: np.ndarray, deps: tuple) -> dict[str, np.ndarray]:
    """All dependency edges. "stream" edges (previous enqueued op of the same stream, ``prev``
    as from :func:`~swimlanes.engine.plan.chain_links`), stream by stream, are
    derived here in bulk rather than recorded op by op in the event loop."""
    dst = np.flatnonzero(prev >= 0)
    dst = dst[np.argsort(stream[dst], kind="stable")]
    src = np.concatenate([prev[dst], np.asarray(deps[0], dtype=np.int64)])
    dst = np.concatenate([dst, np.asarray(deps[1], dtype=np.int64)])
    kind = np.concatenate(
        [np.full(len(src) - len(deps[0]), _STREAM_DEP), np.asarray(deps[2], dtype=np.int64)]
    )
    return {
        "dep_src": src.astype(np.int32),
        "dep_dst": dst.astype(np.int32),
        "dep_kind": kind.astype(np.int8),
    }


def build_timeline(run: RunState, name: str) -> Timeline:
    """The simulated Timeline: one row per program op, row == program index."""
    plan, preset, n = run.plan, run.preset, run.n
    cols = plan.arrays or {c: np.zeros(0, np.int64) for c in COLUMNS}
    solo = cols["solo"].astype(np.int64)  # a copy: host-only ops' solo_ns is set below
    columns = run.columns
    issue_end = columns["issue_end"]
    enqueued = cols["run"] >= 0
    solo[~enqueued] = NO_TIME
    deps: dict[str, Any] = dep_columns(cols["stream"], run.prev_array, run.deps)
    return Timeline(
        index=np.arange(n, dtype=np.int64),
        kind=cols["kind"].astype(np.int8),
        stream=cols["stream"].astype(np.int16),
        engine=columns["engine"],
        issue_start=np.concatenate([np.zeros(min(n, 1), np.int64), issue_end[:-1] + run.call_gap]),
        issue_end=issue_end,
        start=columns["start"],
        end=columns["end"],
        solo_ns=solo,
        bytes=cols["nbytes"],
        labels=plan.labels,
        stream_names=list(plan.stream_names),
        engine_names=[*run.copies.names, "Compute"],
        **deps,
        occupancy_time=np.asarray(run.blocks.occupancy_time, dtype=np.int64),
        occupancy_sms=np.asarray(run.blocks.occupancy_sms, dtype=np.int32),
        sm_count=preset.sm_count,
        source="simulated",
        device=preset.name,
        name=name,
        meta={
            "preset": preset.name,
            "serial_ns": int(solo[enqueued].sum()),
            "connections": preset.connections or len(plan.stream_names),
        },
    )
