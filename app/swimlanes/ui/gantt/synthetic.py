"""Synthetic timelines of any size: copy-compute-copy chunks pipelined over several streams.

Used by the render benchmark and the chart tests, where a realistic shape (host calls, three
engines, concurrent kernels, SM occupancy, stream-order dependencies) matters more than the
exact numbers. Built column-wise, so a million ops take well under a second.
"""

from __future__ import annotations

import numpy as np

from swimlanes.model.document import OP_KINDS
from swimlanes.timeline.timeline import DEP_KINDS, Timeline

H2D_NS, KERNEL_NS, D2H_NS = 10_000, 20_000, 8_000
CALL_NS = 2_000
SMS_PER_KERNEL, SM_COUNT = 48, 132


def synthetic_timeline(n_ops: int, n_streams: int = 4, labels: bool = True) -> Timeline:
    """About ``n_ops`` ops (a multiple of 3): chunk k on stream k % n_streams does H2D, kernel, D2H.

    H2D copies are back to back on the copy engine; each kernel starts when its copy ends and
    overlaps the next chunk's; D2H follows the kernel. Host calls are issued 2 µs apart.
    """
    chunks = max(n_ops // 3, 1)
    n_streams = max(n_streams, 1)
    period = max(H2D_NS, (H2D_NS + KERNEL_NS + D2H_NS + n_streams - 1) // n_streams)
    k = np.arange(chunks, dtype=np.int64)
    h2d0 = k * period
    starts = np.stack([h2d0, h2d0 + H2D_NS, h2d0 + H2D_NS + KERNEL_NS], axis=1).ravel()
    ends = starts + np.tile(np.array([H2D_NS, KERNEL_NS, D2H_NS], np.int64), chunks)
    n = 3 * chunks
    index = np.arange(n, dtype=np.int64)
    issue = np.minimum(index * CALL_NS, starts)  # a call is never after the work it starts
    kinds = np.tile(
        np.array([OP_KINDS.index(x) for x in ("h2d", "kernel", "d2h")], np.int8), chunks
    )
    stream = np.repeat((k % n_streams).astype(np.int16), 3)
    engine = np.tile(np.array([0, 2, 1], np.int16), chunks)
    nbytes = np.tile(np.array([8 << 20, 0, 4 << 20], np.int64), chunks)
    if labels:
        names = ("H2D", "kernel", "D2H")
        text = [f"{names[i % 3]} {i // 3}" for i in range(n)]
    else:
        text = [""] * n
    # stream order: each op waits for the previous op on its stream
    src = np.concatenate([index[0::3], index[1::3]])
    dst = src + 1
    later = np.flatnonzero(k >= n_streams)
    src = np.concatenate([src, 3 * (later - n_streams) + 2]).astype(np.int32)
    dst = np.concatenate([dst, 3 * later]).astype(np.int32)
    kstart, kend = starts[1::3], ends[1::3]
    occ_t = np.concatenate([kstart, kend])
    occ_d = np.concatenate([np.full(chunks, SMS_PER_KERNEL), np.full(chunks, -SMS_PER_KERNEL)])
    order = np.lexsort((occ_d, occ_t))
    sms = np.minimum(np.cumsum(occ_d[order]), SM_COUNT).astype(np.int32)
    return Timeline(
        index=index,
        kind=kinds,
        stream=stream,
        engine=engine,
        issue_start=issue,
        issue_end=issue + CALL_NS // 2,
        start=starts,
        end=ends,
        solo_ns=ends - starts,
        bytes=nbytes,
        labels=text,
        stream_names=[f"s{i}" for i in range(n_streams)],
        engine_names=["H2D", "D2H", "compute"],
        dep_src=src,
        dep_dst=dst,
        dep_kind=np.full(len(src), DEP_KINDS.index("stream"), np.int8),
        occupancy_time=occ_t[order],
        occupancy_sms=sms,
        sm_count=SM_COUNT,
        source="simulated",
        device="synthetic",
        name=f"synthetic {n} ops",
    )
