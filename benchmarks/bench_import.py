"""Trace import speed: synthesise a Kineto-like trace and time ``load_trace`` on it.

Prints one JSON line per run: events, rows, file size, load time, events/s, metrics time and
the loading process's peak memory. The load runs in a fresh child process so that its peak
memory is its own.

    python benchmarks/bench_import.py [--events 1000000] [--gzip]
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STREAMS = 8


def synthesise(path: Path, n_events: int, use_gzip: bool) -> int:
    """Write a trace of about ``n_events`` events: per op a runtime call, its GPU record and
    an ac2g flow pair; every fourth op is an H2D copy, the rest kernels."""
    ops = n_events // 4
    opener = gzip.open if use_gzip else open
    with opener(path, "wt", encoding="utf-8") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Synthetic"}],\n')
        f.write('"traceEvents": [\n')
        t = 1_000_000.0
        for i in range(ops):
            stream = 7 + i % STREAMS
            call = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                    "tid": 1, "ts": t, "dur": 3.5, "args": {"correlation": i}}  # fmt: skip
            args = {"stream": stream, "correlation": i, "device": 0}
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
    return ops * 4


def load(path: Path) -> dict[str, object]:
    from swimlanes.timeline.metrics import compute_metrics
    from swimlanes.timeline.trace_import import load_trace

    t0 = time.perf_counter()
    tl = load_trace(path, progress=lambda _f: None, cancel=lambda: False)
    load_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    compute_metrics(tl)
    metrics_s = time.perf_counter() - t1
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"rows": len(tl), "load_s": round(load_s, 3), "metrics_s": round(metrics_s, 3),
            "peak_rss_mb": round(peak_kb / 1024, 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--gzip", action="store_true", help="write the trace gzipped")
    parser.add_argument("--load", metavar="TRACE", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.load:
        print(json.dumps(load(Path(args.load))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("trace.json.gz" if args.gzip else "trace.json")
        events = synthesise(path, args.events, args.gzip)
        child = subprocess.run(
            [sys.executable, __file__, "--load", str(path)],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        result = json.loads(child.stdout)
        size = path.stat().st_size
    result = {
        "bench": "import",
        "events": events,
        "gzip": args.gzip,
        "file_mb": round(size / 2**20, 1),
        **result,
        "events_per_s": round(events / result["load_s"]),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
