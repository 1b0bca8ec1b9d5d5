"""Synthetic profiler traces for benchmarks and tests of trace import."""

from __future__ import annotations

import gzip
import json
from pathlib import Path


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
