"""Synthetic profiler traces for benchmarks and tests of trace import, and a small
multi-device timeline for views and tests."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from swimlanes.timeline.timeline import Timeline, TimelineBuilder


def write_kineto_trace(
    path: Path, n_events: int, *, streams: int = 8, use_gzip: bool = False
) -> int:
    """Write a Kineto-like trace of about ``n_events`` events; returns the op count.

    Per op: a ``cudaLaunchKernel`` runtime call, its GPU record and an ``ac2g`` flow pair. Every
    fourth op is a 1 MiB pinned H2D copy, the rest are kernels, spread over ``streams`` streams.
    """
    ops = n_events // 4
    opener = gzip.open if use_gzip else open
    with opener(path, "wt", encoding="utf-8") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Synthetic"}],\n')
        f.write('"traceEvents": [\n')
        t = 1_000_000.0
        for i in range(ops):
            stream = 7 + i % streams
            call = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                    "tid": 1, "ts": t, "dur": 3.5, "args": {"correlation": i}}  # fmt: skip
            args = {"stream": stream, "correlation": i, "device": 0}
            gpu: dict[str, object]
            if i % 4 == 0:
                gpu = {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)",
                       "args": {**args, "bytes": 1 << 20}}  # fmt: skip
            else:
                gpu = {"ph": "X", "cat": "kernel", "name": f"kernel_{i % 50}", "args": args}
            gpu.update(pid=0, tid=stream, ts=t + 5.0, dur=20.0 + i % 7)
            flow = {"cat": "ac2g", "name": "ac2g", "id": i}
            s = {**flow, "ph": "s", "pid": 1, "tid": 1, "ts": t}
            e = {**flow, "ph": "f", "bp": "e", "pid": 0, "tid": stream, "ts": t + 5.0}
            sep = ",\n" if i + 1 < ops else "\n"
            f.write(",\n".join(json.dumps(x) for x in (call, s, gpu, e)) + sep)
            t += 4.0
        f.write("]}\n")
    return ops


def multi_device_timeline(devices: int = 2, steps: int = 3) -> Timeline:
    """A small hand-made multi-device timeline (views and tests can use it without running
    the simulator): per device a host thread, a compute stream running ``steps`` kernels, a
    comm stream with an all-reduce after each kernel (same start and end on every device, on
    the ring links), and a peer copy from each device to the next on the comm stream."""
    names = [f"gpu{d}" for d in range(devices)]
    b = TimelineBuilder([], [])
    host: list[int] = []
    links: list[str] = [f"NVLink gpu{d}→gpu{(d + 1) % devices}" for d in range(devices)]
    link_op: list[int] = []
    link_id: list[int] = []
    index = 0
    for step in range(steps):
        t = step * 100_000
        for d, dev in enumerate(names):
            b.add(index=index, kind="kernel", stream=f"{dev} compute", engine=f"{dev} Compute",
                  issue_start=t + d * 1_000, issue_end=t + d * 1_000 + 5_000,
                  start=t + 10_000 + d * 2_000, end=t + 60_000 + d * 2_000,
                  label=f"backward {step}")  # fmt: skip
            host.append(d)
            index += 1
        start, end = t + 62_000 + devices * 2_000, t + 90_000 + devices * 2_000
        for d, dev in enumerate(names):
            row = b.add(index=index, kind="all_reduce", stream=f"{dev} comm",
                        engine=f"{dev} Compute", issue_start=t + 6_000 + d * 1_000,
                        issue_end=t + 8_000 + d * 1_000, start=start, end=end,
                        nbytes=25 << 20, label=f"all_reduce {step}")  # fmt: skip
            host.append(d)
            link_op.append(row)
            link_id.append(d)
            index += 1
    for d, dev in enumerate(names):
        t = steps * 100_000
        row = b.add(index=index, kind="peer_copy", stream=f"{dev} comm", engine=f"{dev} D2H",
                    issue_start=t, issue_end=t + 3_000, start=t + 5_000, end=t + 25_000,
                    nbytes=8 << 20, label=f"{dev} → gpu{(d + 1) % devices}")  # fmt: skip
        host.append(d)
        link_op.append(row)
        link_id.append(d)
        index += 1
    tl = b.build(source="simulated", device=f"{devices}x-h200-nvlink", name="synthetic")
    device_of = {n: i for i, n in enumerate(names)}
    tl.device_names = names
    tl.stream_device = np.asarray([device_of[s.split()[0]] for s in tl.stream_names], np.int16)
    tl.engine_device = np.asarray([device_of[e.split()[0]] for e in tl.engine_names], np.int16)
    tl.host_device = np.asarray(host, dtype=np.int16)
    tl.link_names = links
    tl.link_op = np.asarray(link_op, dtype=np.int32)
    tl.link_id = np.asarray(link_id, dtype=np.int16)
    tl.__post_init__()
    return tl
