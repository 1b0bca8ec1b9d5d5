"""Timelines of two-device pipelines for the chart tests, built as the multi-device engine
returns them: device columns, links and per-device SM occupancy."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from swimlanes.timeline.timeline import Timeline, TimelineBuilder

US = 1000
MIB = 1024 * 1024
SMS = 132
DEVICES = ["gpu0", "gpu1"]
STREAMS = ["c0", "comm0", "c1", "comm1"]
ENGINES = ["gpu0 H2D", "gpu0 D2H", "gpu0 Compute", "gpu1 H2D", "gpu1 D2H", "gpu1 Compute"]
LINKS = ["NVLink gpu0→gpu1", "NVLink gpu1→gpu0"]


def with_devices(tl: Timeline, **columns: Any) -> Timeline:
    """``tl`` with its multi-device fields set (as the engine fills them; checked)."""
    return replace(tl, **columns)


def two_device_timeline() -> Timeline:
    """gpu0 and gpu1: a kernel each, then one all-reduce on each comm stream (same start and
    end: one instance), a peer copy from gpu0 to gpu1, host work on gpu1's host thread and a
    device sync on gpu0's."""
    b = TimelineBuilder(list(STREAMS), list(ENGINES))

    def add(index: int, kind: str, stream: str | None, engine: str | None, issue: float,
            start: float | None = None, end: float | None = None, label: str = "",
            nbytes: int = 0) -> int:  # fmt: skip
        kw = {}
        if start is not None and end is not None:
            kw = {"start": round(start * US), "end": round(end * US)}
        return b.add(
            index=index, kind=kind, stream=stream, engine=engine,
            issue_start=round(issue * US), issue_end=round((issue + 2) * US),
            label=label, nbytes=nbytes, **kw,
        )  # fmt: skip

    add(0, "kernel", "c0", "gpu0 Compute", 0, 10, 110, "fwd0")
    add(1, "kernel", "c1", "gpu1 Compute", 0, 12, 130, "fwd1")
    add(2, "all_reduce", "comm0", "gpu0 Compute", 2, 130, 330, "grads", 100 * MIB)
    add(3, "all_reduce", "comm1", "gpu1 Compute", 2, 130, 330, "grads", 100 * MIB)
    add(4, "peer_copy", "c0", "gpu0 D2H", 4, 110, 160, "to_gpu1", 64 * MIB)
    add(5, "host", None, None, 4, label="prep1")
    add(6, "device_sync", None, None, 6)
    tl = b.build(device="2x-h200-nvlink", name="two gpus")
    tl.sm_count = SMS
    tl.occupancy_time = np.array([10, 110, 130, 330, 12, 130, 330], np.int64) * US
    tl.occupancy_sms = np.array([SMS, 0, 16, 0, SMS, 16, 0], np.int32)
    return with_devices(
        tl,
        device_names=list(DEVICES),
        stream_device=np.array([0, 0, 1, 1], np.int16),
        engine_device=np.array([0, 0, 0, 1, 1, 1], np.int16),
        host_device=np.array([0, 1, 0, 1, 0, 1, 0], np.int16),
        link_names=list(LINKS),
        link_op=np.array([2, 3, 4], np.int32),
        link_id=np.array([0, 1, 0], np.int16),
        occupancy_device=np.array([0, 0, 0, 0, 1, 1, 1], np.int16),
    )
