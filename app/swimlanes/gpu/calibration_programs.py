"""The pipelines ``swimlanes calibrate`` runs to measure a GPU and its host, and the analysis
of the kernel-rate probe. Pure Python (no numba): the programs are lists of op dicts that
:mod:`swimlanes.gpu.calibrate` turns into pipelines and runs through the executor.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

KB, MB = 1 << 10, 1 << 20
#: Calls of each kind in an issue-cost loop.
ISSUE_SAMPLES = 40


def roofline_overlap(rates: list[dict[str, Any]]) -> float:
    """Per grid of the rate probe: how much of the shorter of its compute-only and memory-only
    kernels' times the kernel doing both hid ((compute + memory - both) / shorter), median."""
    by_grid: dict[tuple[int, int], dict[str, float]] = {}
    for r in rates:
        part = (
            "both"
            if "flops_per_ns" in r and "bytes_per_ns" in r
            else ("compute" if "flops_per_ns" in r else "memory")
        )
        by_grid.setdefault((r["blocks"], r["threads"]), {})[part] = r["us"]
    hidden = [
        (t["compute"] + t["memory"] - t["both"]) / min(t["compute"], t["memory"])
        for t in by_grid.values()
        if len(t) == 3
    ]
    return round(min(1.0, max(0.0, float(np.median(hidden)))), 3) if hidden else 1.0


#: The copy orders, the one the H100 and H200 hosts measured most often first: a tie of the
#: copy-order probe's trials goes to the first.
ORDERS_BY_PREFERENCE = ("stream_fifo", "fifo", "measured")


def copy_order_of(probe: dict[str, Any]) -> str:
    """The copy engine's order (``DevicePreset.copy_order``) from the copy-order probe's record
    (``three_streams_issued_s1_s2_s3_ran``, ``issued_s1_s2_s1_ran``; see engine.copies), or
    the most common order of its ``trials`` (each such a record; a tie goes to the order
    listed first in ORDERS_BY_PREFERENCE)."""
    trials = probe.get("trials")
    if isinstance(trials, list) and trials:
        votes = Counter(copy_order_of(t) for t in trials if isinstance(t, dict))
        return max(ORDERS_BY_PREFERENCE, key=lambda order: votes[order])  # first of the most
    ran = probe.get("three_streams_issued_s1_s2_s3_ran")
    second = [str(name).split("#")[0] for name in probe.get("issued_s1_s2_s1_ran", [])]
    if ran != ["s1", "s2", "s3"]:
        return "measured"  # copies readied at once did not run in issue order
    # The engine serves the longest waiting, after the stream it just served if s1's second
    # copy overtook s2's earlier one.
    return "stream_fifo" if second == ["s1", "s1", "s2"] else "fifo"


#: Calls that wait for the device: their cost is measured on an idle device, one kind at a time.
BLOCKING_CALLS = ("stream_sync", "event_sync", "device_sync")
SMALL = 4 * KB
#: One call per kind, each repeated in a loop (the repeat costs; blocking calls' costs).
ISSUE_LOOPS: dict[str, dict] = {
    "kernel": {"op": "kernel", "stream": "s", "blocks": 1, "threads": 32, "block_us": 1},
    "event_record": {"op": "event_record", "stream": "s", "event": "e"},
    "event_wait": {"op": "event_wait", "stream": "t", "event": "e"},
    "memset": {"op": "memset", "stream": "s", "bytes": SMALL},
    "h2d": {"op": "h2d", "stream": "s", "bytes": SMALL},
    "d2h": {"op": "d2h", "stream": "s", "bytes": SMALL},
    "d2d": {"op": "d2d", "stream": "s", "bytes": SMALL},
    "host_func": {"op": "host_func", "stream": "s", "duration_us": 1},
    "stream_sync": {"op": "stream_sync", "stream": "s"},
    "event_sync": {"op": "event_sync", "event": "e"},
    "device_sync": {"op": "device_sync"},
}
MIXED_STREAMS = ("m0", "m1", "m2", "m3")


def mixed_issue_program() -> list[dict]:
    """Enqueueing calls as real programs make them: kinds, streams, sizes and kernel shapes
    change from one call to the next. A call costs the host more there than in a loop of
    identical calls (on H100 and H200 hosts a kernel launch 1.3 times, a memset 5 times as
    much): caches and the driver's per-stream state are cold for it. Sizes stay small and
    kernels short, so that no call waits for the device."""
    program: list[dict] = []
    sizes = (4 * KB, 64 * KB, 16 * KB, 256 * KB)
    for k in range(ISSUE_SAMPLES):
        s, t = MIXED_STREAMS[k % 4], MIXED_STREAMS[(k + 1) % 4]
        n = sizes[k % 4]
        event = f"m{k % 8}"
        calls: list[dict] = [
            {"op": "h2d", "stream": s, "bytes": n},
            {"op": "kernel", "stream": s, "blocks": (1, 132, 8, 264)[k % 4],
             "threads": (32, 256, 1024, 128)[k % 4], "block_us": 1},
            {"op": "event_record", "stream": s, "event": event},
            {"op": "memset", "stream": t, "bytes": n},
            {"op": "event_wait", "stream": t, "event": event},
            {"op": "d2d", "stream": t, "bytes": n},
            {"op": "d2h", "stream": s, "bytes": n},
            {"op": "host_func", "stream": t, "duration_us": 1},
        ]  # fmt: skip
        program += calls[k % 8 :] + calls[: k % 8]  # a different order each round
        if k % 4 == 3:
            program += [{"op": "malloc", "bytes": (1, 4, 16, 32)[k // 4 % 4] * MB}, {"op": "free"}]
    return program


def grid_rate_program(sm: int) -> list[dict]:
    """FLOP and memory kernels on grids too small to fill the GPU: how their rate follows the
    warps they have (kept raw, ``kernel_rates``)."""
    program = []
    for blocks, threads in ((1, 32), (1, 256), (1, 1024), (sm, 32), (sm, 256)):
        program.append({"op": "kernel", "stream": "s", "blocks": blocks, "threads": threads,
                        "flops": 2e7 * blocks * threads / 32})  # fmt: skip
        program.append({"op": "kernel", "stream": "s", "blocks": blocks, "threads": threads,
                        "bytes": 256 * KB * blocks * threads // 32})  # fmt: skip
        program.append({"op": "kernel", "stream": "s", "blocks": blocks, "threads": threads,
                        "flops": 2e7 * blocks * threads / 32,
                        "bytes": 256 * KB * blocks * threads // 32})  # fmt: skip
    return program


def timing_program(quick: bool = False) -> list[dict]:
    """Calibration's timing pipeline (streams ``a`` and ``b``): copies alone (their launch
    latency), H2D -> kernel -> kernel -> D2H chains issued ahead of the device (dependency
    latencies), copies queued on one engine (its rest), then many copies each way at once at
    two sizes (bidirectional costs)."""
    kernel = {"op": "kernel", "stream": "a", "blocks": 132, "threads": 256, "block_us": 50}
    chunk = 4 * MB
    program: list[dict] = []
    for kind in ("h2d", "d2h"):  # each copy alone on an idle engine
        for _ in range(4):
            program += [{"op": kind, "stream": "b", "bytes": chunk}]
            program += [{"op": "stream_sync", "stream": "b"}]
    for _ in range(4 if quick else 8):
        program += [{"op": "h2d", "stream": "a", "bytes": chunk}, dict(kernel), dict(kernel)]
        program += [{"op": "d2h", "stream": "a", "bytes": chunk}]
        program += [{"op": "stream_sync", "stream": "a"}]
    program += [{"op": "h2d", "stream": "a", "bytes": chunk} for _ in range(6)]
    program += [{"op": "device_sync"}]
    for size in (chunk, 64 * MB):
        n = 4 if quick else 8
        program += [{"op": "h2d", "stream": "a", "bytes": size} for _ in range(n)]
        program += [{"op": "d2h", "stream": "b", "bytes": size} for _ in range(n)]
        program.append({"op": "device_sync"})
    return program
