"""Trace import speed: synthesise a Kineto-like trace and time ``load_trace`` on it.

Prints one JSON line per run: events, rows, file size, load time, events/s, metrics time and
the loading process's peak memory. The load runs in a fresh child process so that its peak
memory is its own.

    python benchmarks/bench_import.py [--events 1000000] [--gzip]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from swimlanes.timeline.synthetic import write_kineto_trace

STREAMS = 8


def synthesise(path: Path, n_events: int, use_gzip: bool) -> int:
    """Write the synthetic trace; returns its event count."""
    return 4 * write_kineto_trace(path, n_events, streams=STREAMS, use_gzip=use_gzip)


def load(path: Path) -> dict[str, object]:
    from swimlanes.timeline.formats.trace_import import load_trace
    from swimlanes.timeline.metrics import compute_metrics

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
